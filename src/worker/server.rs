//! The worker side: `dyno worker` reads one plan from stdin, loads the model
//! once, runs the jobs and reports events on stdout.

use std::io::{BufRead, Write};
use std::time::Instant;

use super::fault;
use super::protocol::{Event, WorkerPlan};
use crate::engine::{self, llama, measure, EngineError};

fn emit(ev: &Event) {
    let mut out = std::io::stdout().lock();
    // A closed stdout means the parent is gone; nothing left to report to.
    if serde_json::to_writer(&mut out, ev).is_err()
        || out.write_all(b"\n").is_err()
        || out.flush().is_err()
    {
        std::process::exit(3);
    }
}

fn peak_rss_bytes() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    // ru_maxrss is in KiB on Linux and bytes on macOS.
    let v = ru.ru_maxrss.max(0) as u64;
    if cfg!(target_os = "macos") {
        v
    } else {
        v * 1024
    }
}

/// Initialise llama.cpp and report what it is and sees.
fn ready() -> (Vec<crate::worker::protocol::Device>, bool) {
    engine::init();
    let devices = llama::devices();
    let gpu_offload = llama::supports_gpu_offload();
    emit(&Event::Ready {
        pid: std::process::id(),
        llama_cpp_build: engine::llama_cpp_build(),
        backend: engine::backend_name(&devices),
        gpu_offload,
        system_info: llama::system_info(),
        devices: devices.clone(),
    });
    (devices, gpu_offload)
}

/// `dyno worker --probe`: report llama.cpp's build and devices, load
/// nothing, exit. The hardware inventory uses it so that llama.cpp still
/// runs only in worker processes.
pub fn probe() -> i32 {
    ready();
    0
}

/// Entry point of the hidden `worker` subcommand. Returns the exit code.
pub fn main() -> i32 {
    let stdin = std::io::stdin();
    let mut line = String::new();
    if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
        eprintln!("dyno worker: no plan on stdin; this command is started by dyno itself");
        return 2;
    }
    let plan: WorkerPlan = match serde_json::from_str(&line) {
        Ok(p) => p,
        Err(e) => {
            emit(&Event::Fatal {
                code: "bad_plan".into(),
                message: e.to_string(),
            });
            return 2;
        }
    };
    // The parent keeps stdin open for our whole life; EOF means it died or
    // gave up on us, and a benchmark nobody reads is wasted machine time.
    std::thread::spawn(|| {
        let mut sink = String::new();
        while std::io::stdin()
            .lock()
            .read_line(&mut sink)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            sink.clear();
        }
        std::process::exit(3);
    });

    let (devices, gpu_offload) = ready();

    fault::point("load");
    emit(&Event::Phase {
        phase: "load".into(),
        job: None,
    });
    let has_gpu = gpu_offload && devices.iter().any(|d| d.kind == "gpu" || d.kind == "igpu");
    let ngl = plan
        .model
        .n_gpu_layers
        .unwrap_or(if has_gpu { 999 } else { 0 });
    let t0 = Instant::now();
    let model = match llama::Model::load(&plan.model_path, ngl, plan.model.use_mmap) {
        Ok(m) => m,
        Err(e) => {
            let code = match e {
                EngineError::UnsupportedArch(_) => "unsupported_architecture",
                _ => "load_failed",
            };
            emit(&Event::Fatal {
                code: code.into(),
                message: e.to_string(),
            });
            return 1;
        }
    };
    let load_time_ms = t0.elapsed().as_secs_f64() * 1e3;
    let n_layer = model.n_layer();
    emit(&Event::Loaded {
        load_time_ms,
        model_desc: model.desc(),
        model_size_bytes: model.size_bytes(),
        n_params: model.n_params(),
        n_layer,
        // llama.cpp offloads the layers plus the output layer; report what
        // was asked, capped at what exists.
        n_gpu_layers: if has_gpu { ngl.min(n_layer + 1) } else { 0 },
    });

    let mut cache = measure::DepthCache::default();
    let mut rng = measure::Rng::new(0x5EED_D1A0);
    for (i, job) in plan.jobs.iter().enumerate() {
        emit(&Event::Phase {
            phase: "warmup".into(),
            job: Some(i),
        });
        // After the phase event, so an injected crash hits a test in flight
        // as a real llama.cpp abort would.
        fault::point(&format!("job:{i}"));
        let r = measure::run_job(
            &model,
            job,
            plan.reps,
            plan.warmup,
            &mut cache,
            &mut rng,
            || {
                emit(&Event::Phase {
                    phase: "timed".into(),
                    job: Some(i),
                })
            },
            |rep, sample| {
                emit(&Event::Sample {
                    job: i,
                    rep,
                    sample,
                })
            },
        );
        match r {
            Ok(()) => emit(&Event::JobDone { job: i }),
            Err(e) => emit(&Event::JobFailed {
                job: i,
                error: e.to_string(),
            }),
        }
    }
    drop(model);
    emit(&Event::Done {
        peak_rss_bytes: peak_rss_bytes(),
    });
    0
}
