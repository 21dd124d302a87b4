//! The notes that say how quiet, cool and powered the machine was: a
//! figure taken while another program ran, on battery, or from a chip
//! still hot from the last level is not the same figure as a clean one, and
//! the export must not travel without saying so. Shared by the table, the
//! Markdown export and the sweep report.

use super::Report;

/// One line per disturbed result with its reasons, and what to do.
pub(crate) fn disturbed_notes(report: &Report) -> String {
    let mut lines = Vec::new();
    for run in &report.runs {
        for r in run.results.iter().filter(|r| r.disturbed) {
            let why = r
                .disturbance
                .as_ref()
                .map(|d| d.reasons.join("; "))
                .unwrap_or_default();
            lines.push(format!("- run {} {}: {why}", run.run_id, r.test));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nDisturbed (the machine was not quiet while these were timed; close the programs named, or re-measure with --retry-disturbed N):\n{}\n",
        lines.join("\n")
    )
}

/// Which seconds the burst is of: runs stored before the window was fixed
/// took the first fifth.
pub(crate) fn burst_window(s: &crate::telemetry::sustain::Sustained) -> String {
    if s.burst_window_s > 0.0 {
        format!("first {:.0} s", s.burst_window_s)
    } else {
        "first fifth".to_string()
    }
}

/// A sustained decode's burst and sustained rates, the drop and its cause.
pub(crate) fn sustained_notes(report: &Report) -> String {
    let mut out = String::new();
    for run in &report.runs {
        for r in &run.results {
            let Some(s) = &r.sustained else { continue };
            out.push_str(&format!(
                "\nSustained decode, run {} {} over {}: burst {:.1} t/s ({}), sustained {:.1} t/s (last third), {}\n",
                run.run_id,
                r.test,
                crate::units::human_duration(s.duration_s),
                s.burst_tokens_per_s,
                burst_window(s),
                s.sustained_tokens_per_s,
                match s.time_to_drop_s {
                    Some(t) => format!("down {:.0}% from {t:.0} s", s.drop_pct),
                    None if s.drop_pct <= -crate::telemetry::sustain::DROP_PCT => {
                        format!("rose {:.0}%: no drop", -s.drop_pct)
                    }
                    None => format!(
                        "no drop (within {:.0}%)",
                        crate::telemetry::sustain::DROP_PCT
                    ),
                },
            ));
            if let Some(c) = s.cause {
                let word = match c {
                    crate::telemetry::sustain::DropCause::Throttling => "throttling",
                    crate::telemetry::sustain::DropCause::Contention => "other programs",
                    crate::telemetry::sustain::DropCause::Both => "throttling and other programs",
                    crate::telemetry::sustain::DropCause::Unexplained => "unexplained",
                };
                out.push_str(&format!("cause: {word}: {}\n", s.reasons.join("; ")));
            }
        }
    }
    out
}

/// The power source and the cool-down waits, each distinct one named once:
/// they differ between runs of one report when a laptop was unplugged part
/// way, or when a sweep cooled down before some levels and not others.
pub(crate) fn machine_state_notes(report: &Report) -> String {
    let mut out = String::new();
    let mut power: Vec<String> = Vec::new();
    for p in report
        .runs
        .iter()
        .filter_map(|r| r.power.as_ref()?.describe())
    {
        if !power.contains(&p) {
            power.push(p);
        }
    }
    if !power.is_empty() {
        out.push_str(&format!("power: {}\n", power.join("; ")));
    }
    for run in &report.runs {
        if let Some(c) = &run.cooldown {
            out.push_str(&format!("run {}: {}\n", run.run_id, c.describe()));
        }
    }
    out
}
