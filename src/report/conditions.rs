//! The conditions line: the settings a figure was measured under (threads,
//! GPU layers, batch, flash attention, KV cache type, repetitions), which
//! Dyno prints under every figure so that no number travels without them.
//!
//! `dyno show`, `dyno sweep`, the result card and the Markdown export each
//! wrote this line by hand, and in slightly different words. They now all
//! come here, so a new condition is added once. Each keeps the words it
//! printed before ([`Wording`]), because people and scripts read them.

use super::ConfigJson;

/// The words a conditions line is written in, one per place that prints it.
/// They differ only in labels and in how much they include; the order of the
/// conditions is the same in all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wording {
    /// `dyno show`: the settings under their field names (`n_batch`,
    /// `flash_attn`), including mmap and warm-up, as a reference for
    /// someone who will set them again.
    Fields,
    /// The result card: words a reader of a picture knows ("GPU layers",
    /// "flash attention"), kept short for one line at 1200 px.
    Card,
    /// The Markdown export: as the card, but llama-bench's "ngl" and
    /// "repetitions" spelled out, as in a forum post next to llama-bench's
    /// table.
    Prose,
    /// Under a sweep's table: only what a level's figures share with the
    /// others beside them (threads, GPU layers, batch, repetitions).
    Brief,
}

/// The conditions of `c` joined by " · ", in `wording`.
pub fn conditions(c: &ConfigJson, wording: Wording) -> String {
    use Wording::{Brief, Card, Fields, Prose};
    let ngl = c
        .n_gpu_layers
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-".into());
    let mut parts = vec![
        match wording {
            Brief => format!("{} threads", c.n_threads),
            _ => format!("threads {}", c.n_threads),
        },
        match wording {
            Card => format!("GPU layers {ngl}"),
            _ => format!("ngl {ngl}"),
        },
        match wording {
            Fields => format!("n_batch {} · n_ubatch {}", c.n_batch, c.n_ubatch),
            _ => format!("batch {}/{}", c.n_batch, c.n_ubatch),
        },
    ];
    match wording {
        Fields => parts.extend([
            format!("flash_attn {}", c.flash_attn),
            format!("kv {}", c.cache_type),
            format!(
                "mmap {}",
                c.use_mmap
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "auto".into())
            ),
        ]),
        Card | Prose => parts.extend([
            format!("flash attention {}", c.flash_attn),
            format!("KV {}", c.cache_type),
        ]),
        Brief => {}
    }
    // A sustained decode repeats for a time, not a count.
    parts.push(match (c.sustain_s, wording) {
        (Some(s), Fields) => format!("sustain {s} s"),
        (Some(s), _) => format!("sustained {}", crate::units::human_duration(f64::from(s))),
        (None, Fields) => format!("reps {}", c.reps),
        (None, Prose) => format!("{} repetitions", c.reps),
        (None, Card | Brief) => format!("{} reps", c.reps),
    });
    // Other machines' devices took part: the figure is theirs too.
    if let Some(r) = c.rpc.as_ref().filter(|r| !r.is_empty()) {
        parts.push(match wording {
            Fields => format!("rpc {}", r.join(",")),
            _ => format!("RPC servers {}", r.join(", ")),
        });
    }
    if wording == Fields {
        parts.push(format!("warm-up {}", c.warmup));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ConfigJson {
        ConfigJson {
            n_threads: 4,
            n_gpu_layers: Some(99),
            n_gpu_layers_requested: None,
            n_batch: 2048,
            n_ubatch: 512,
            flash_attn: "auto".into(),
            cache_type: "f16".into(),
            use_mmap: None,
            reps: 5,
            warmup: true,
            split_mode: "layer".into(),
            main_gpu: 0,
            devices: None,
            no_kv_offload: false,
            fit_margin_mib: None,
            sustain_s: None,
            n_cpu_moe: None,
            tensor_overrides: None,
            rpc: None,
        }
    }

    #[test]
    fn rpc_servers_are_a_condition_in_every_wording() {
        let c = ConfigJson {
            rpc: Some(vec!["10.0.0.2:50052".into(), "10.0.0.3:50052".into()]),
            ..config()
        };
        assert!(conditions(&c, Wording::Fields)
            .ends_with("rpc 10.0.0.2:50052,10.0.0.3:50052 · warm-up true"));
        for w in [Wording::Card, Wording::Prose, Wording::Brief] {
            assert!(
                conditions(&c, w).ends_with("RPC servers 10.0.0.2:50052, 10.0.0.3:50052"),
                "{w:?}: {}",
                conditions(&c, w)
            );
        }
    }

    #[test]
    fn each_wording_reads_as_it_always_has() {
        let c = config();
        assert_eq!(
            conditions(&c, Wording::Fields),
            "threads 4 · ngl 99 · n_batch 2048 · n_ubatch 512 · flash_attn auto · kv f16 · mmap auto · reps 5 · warm-up true"
        );
        assert_eq!(
            conditions(&c, Wording::Card),
            "threads 4 · GPU layers 99 · batch 2048/512 · flash attention auto · KV f16 · 5 reps"
        );
        assert_eq!(
            conditions(&c, Wording::Prose),
            "threads 4 · ngl 99 · batch 2048/512 · flash attention auto · KV f16 · 5 repetitions"
        );
        assert_eq!(
            conditions(&c, Wording::Brief),
            "4 threads · ngl 99 · batch 2048/512 · 5 reps"
        );
    }

    #[test]
    fn unknown_gpu_layers_read_as_a_dash() {
        let c = ConfigJson {
            n_gpu_layers: None,
            use_mmap: Some(false),
            ..config()
        };
        let line = conditions(&c, Wording::Fields);
        assert!(
            line.contains("ngl - ·") && line.contains("mmap false"),
            "{line}"
        );
    }
}
