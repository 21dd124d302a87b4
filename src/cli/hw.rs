//! `dyno hw`: the hardware inventory (`app::hw`) as a table or as JSON.

use std::path::Path;

use crate::app::hw::inventory;
use crate::error::Result;
use crate::units::human_bytes;
use crate::vocab::BackendModules;

pub async fn hw(db: &Path, json: bool, remeasure: bool) -> Result<i32> {
    let hw = inventory(db, remeasure).await?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&hw).expect("inventory serialises")
        );
        return Ok(0);
    }
    println!(
        "cpu: {} ({} logical cores, {} physical)",
        hw.cpu,
        hw.cores,
        hw.cores_physical.map_or("?".into(), |c| c.to_string())
    );
    println!("memory: {}", human_bytes(hw.memory_bytes));
    println!(
        "memory bandwidth: {:.1} GB/s read, {} threads (measured {}; --remeasure to refresh)",
        hw.memory_bandwidth_bytes_per_s.unwrap_or_default() as f64 / 1e9,
        hw.bandwidth_threads.unwrap_or_default(),
        hw.bandwidth_measured_at.as_deref().unwrap_or("?")
    );
    println!(
        "os: {} · kernel {}",
        hw.os.as_deref().unwrap_or("?"),
        hw.kernel.as_deref().unwrap_or("?")
    );
    if hw.gpus.is_empty() {
        println!("gpus: none found through NVML");
    }
    for g in &hw.gpus {
        println!(
            "gpu: {} · {} · driver {} · {} GB/s theoretical",
            g.name,
            g.memory_total_bytes.map_or("?".into(), human_bytes),
            g.driver.as_deref().unwrap_or("?"),
            g.theoretical_bandwidth_bytes_per_s
                .map_or("?".into(), |b| format!("{:.0}", b as f64 / 1e9))
        );
    }
    println!(
        "llama.cpp: {} · backend {}",
        hw.llama_cpp
            .build
            .as_deref()
            .unwrap_or("unknown (the worker did not start)"),
        hw.llama_cpp.backend.as_deref().unwrap_or("?"),
    );
    // The names are what --device takes.
    for d in &hw.llama_cpp.devices {
        let memory = if d.memory_total_bytes > 0 {
            format!(
                "{} free of {}",
                human_bytes(d.memory_free_bytes),
                human_bytes(d.memory_total_bytes)
            )
        } else {
            "memory not reported".into()
        };
        println!(
            "  device {} · {} · {} · {memory}",
            d.name, d.kind, d.description
        );
    }
    if let Some(m) = &hw.llama_cpp.modules {
        print!("{}", modules_text(m));
    }
    let missing = hw.telemetry.missing();
    if !missing.is_empty() {
        println!("telemetry not available here: {}", missing.join("; "));
    }
    Ok(0)
}

/// The backend modules as `dyno hw` prints them: the folder and where it
/// was found, then a line per module, loaded or with the reason it was not.
fn modules_text(m: &BackendModules) -> String {
    let mut out = String::new();
    let Some(dir) = &m.dir else {
        out.push_str(&format!(
            "backend modules: none found (looked in {})\n",
            m.searched.join(", ")
        ));
        return out;
    };
    out.push_str(&format!(
        "backend modules: {dir} ({}; {})\n",
        m.source.as_deref().unwrap_or("?"),
        m.build.as_deref().unwrap_or("no build named")
    ));
    for x in &m.modules {
        let hash = x.sha256.as_deref().map_or("-", |h| &h[..h.len().min(12)]);
        let state = match (x.loaded, &x.reason) {
            (true, None) => format!("loaded, {} device(s)", x.devices.len()),
            (true, Some(r)) => format!("loaded: {r}"),
            (false, r) => format!("not loaded: {}", r.as_deref().unwrap_or("?")),
        };
        out.push_str(&format!(
            "  {} · {} · {} · {hash} · {state}\n",
            x.file,
            x.backend,
            human_bytes(x.size_bytes)
        ));
        if let Some(rt) = &x.runtime {
            out.push_str(&format!("    runtime: {rt}\n"));
        }
        for d in &x.devices {
            out.push_str(&format!(
                "    device {} · {} · {} free of {}\n",
                d.name,
                d.description,
                human_bytes(d.memory_free_bytes),
                human_bytes(d.memory_total_bytes)
            ));
        }
    }
    out
}
