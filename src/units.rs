//! Numbers as a person reads them: sizes, parameter counts and waits.
//!
//! A leaf: every layer prints sizes (the planner's refusals, the quantizer's
//! progress, the download list, the tables), so the formatting sits below
//! all of them rather than in `report`, where it once made the lower layers
//! import upward.

/// Human-readable byte size as llama-bench prints model sizes.
pub fn human_bytes(b: u64) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    let b = b as f64;
    if b >= GIB {
        format!("{:.2} GiB", b / GIB)
    } else {
        format!("{:.2} MiB", b / (1024.0 * 1024.0))
    }
}

/// Parameter count as llama-bench prints it ("134.52 M", "6.74 B").
pub fn human_params(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} B", n / 1e9)
    } else {
        format!("{:.2} M", n / 1e6)
    }
}

/// A wait as a person reads it: "45 s", "3 min", "1 h 20 min".
/// A rate with about three significant figures ("1234", "73.5", "4.21"):
/// what a chart label or a prediction's interval can support.
pub fn three_figures(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub fn human_duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s < 90 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", (s + 30) / 60)
    } else {
        let m = (s + 30) / 60;
        format!("{} h {} min", m / 60, m % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_waits() {
        assert_eq!(human_duration(44.6), "45 s");
        assert_eq!(human_duration(-1.0), "0 s");
        assert_eq!(human_duration(200.0), "3 min");
        assert_eq!(human_duration(4800.0), "1 h 20 min");
    }

    #[test]
    fn sizes_print_like_llama_bench() {
        assert_eq!(human_bytes(73_100_000), "69.71 MiB");
        assert_eq!(human_bytes(4 * 1024 * 1024 * 1024), "4.00 GiB");
        assert_eq!(human_params(134_515_008), "134.52 M");
        assert_eq!(human_params(6_738_415_616), "6.74 B");
    }
}
