//! The worker side: `dyno worker` reads one plan from stdin, loads the model
//! once, runs the jobs and reports events on stdout.

use std::io::{BufRead, Write};
use std::time::Instant;

use super::fault;
use super::protocol::{
    Event, QualityMode, QualityPlan, QuantizePlan, SynthPlan, TokenizePlan, WorkerPlan,
    WorkerRequest,
};
use crate::engine::{self, llama, measure, EngineError};
use crate::vocab::failure::FailureCode;
use crate::vocab::{CacheType, ContextParams, FlashAttn, Offload};

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
    // SAFETY: rusage is a C struct of integers and timevals, for which
    // all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into `ru`, a local of that type.
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
fn ready() -> (Vec<crate::vocab::Device>, bool) {
    // Without a backend, nothing of llama.cpp is called: with an empty
    // registry it would load unchecked modules by itself (`engine::init`).
    let up = engine::init();
    let devices = if up { llama::devices() } else { Vec::new() };
    // llama.cpp says it can offload whenever its RPC module is loaded,
    // which every Dyno now has: offload is claimed only with a device that
    // takes layers here (RPC servers are added per run, see `bench`).
    let gpu_offload = up && llama::supports_gpu_offload() && has_gpu(&devices, true);
    emit(&Event::Ready {
        pid: std::process::id(),
        llama_cpp_build: engine::llama_cpp_build(),
        backend: engine::backend_name(&devices),
        gpu_offload,
        system_info: if up {
            llama::system_info()
        } else {
            String::new()
        },
        devices: devices.clone(),
        modules: engine::modules(),
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

/// `dyno rpc-server`: lend this machine's devices to RPC clients at
/// `endpoint` until killed. It runs llama.cpp, so it is a worker of its own
/// kind: started by the user, not by a parent. Prints the devices it serves
/// (one JSON line with `json`) once it is about to listen.
pub fn rpc_server(endpoint: &str, n_threads: usize, devices: Option<&[String]>, json: bool) -> i32 {
    if !engine::init() {
        eprintln!(
            "dyno rpc-server: {}",
            engine::modules::none_loaded(engine::modules().as_ref())
        );
        return 1;
    }
    let r = engine::rpc::serve(endpoint, n_threads, devices, |devs| {
        if json {
            let line = serde_json::json!({
                "endpoint": endpoint,
                "llama_cpp_build": engine::llama_cpp_build(),
                "threads": n_threads,
                "devices": devs,
            });
            println!("{line}");
        } else {
            println!(
                "dyno rpc-server: serving at {endpoint} ({})",
                engine::llama_cpp_build()
            );
            for d in devs {
                println!(
                    "  {}: {} ({} free of {})",
                    d.name,
                    d.description,
                    crate::units::human_bytes(d.memory_free_bytes),
                    crate::units::human_bytes(d.memory_total_bytes)
                );
            }
            println!("  clients: dyno bench --rpc {endpoint} … (Ctrl-C stops it)");
        }
        let _ = std::io::Write::flush(&mut std::io::stdout());
    });
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("dyno rpc-server: {e}");
            match e {
                EngineError::Device(_) => 2,
                _ => 1,
            }
        }
    }
}

/// No backend module loaded, so nothing can run: say where Dyno looked and
/// why each module it found was not loaded.
fn no_backend(devices: &[crate::vocab::Device]) -> bool {
    if !devices.is_empty() {
        return false;
    }
    emit(&Event::Fatal {
        code: FailureCode::NoBackend,
        message: engine::modules::none_loaded(engine::modules().as_ref()),
    });
    true
}

fn has_gpu(devices: &[crate::vocab::Device], gpu_offload: bool) -> bool {
    gpu_offload && devices.iter().any(|d| d.kind == "gpu" || d.kind == "igpu")
}

/// Load the plan's model with its GPU layers ("all" when a GPU is there and
/// none was asked for), its devices, split and fit, collecting llama.cpp's
/// own report of where the layers went. `fit_for` is the largest context
/// of the plan, which `--fit` must leave room for. On failure, report it as
/// the fatal event with its code and return `None`; the caller exits.
fn load(
    path: &std::path::Path,
    params: &crate::vocab::ModelParams,
    has_gpu: bool,
    fit_for: Option<(&crate::vocab::ContextParams, u32, u32)>,
) -> Option<(llama::Model, u32, Offload)> {
    let ngl = params.n_gpu_layers.unwrap_or(if has_gpu { 999 } else { 0 });
    let fit = params
        .fit_margin_mib
        .zip(fit_for)
        .map(|(margin_mib, (ctx, n_ctx, n_seq))| llama::FitRequest {
            margin_mib,
            ctx,
            n_ctx,
            n_seq,
        });
    let opts = llama::LoadOptions {
        n_gpu_layers: ngl,
        use_mmap: params.use_mmap,
        split_mode: params.split_mode,
        main_gpu: params.main_gpu,
        devices: params.devices.as_deref(),
        fit,
        n_cpu_moe: params.n_cpu_moe,
        overrides: &params.tensor_overrides,
    };
    engine::start_load_report();
    let loaded = llama::Model::load(path, &opts);
    let mut report = engine::take_load_report();
    match loaded {
        Ok((m, fit)) => {
            report.devices = params.devices.clone();
            // llama.cpp's "offloaded N/M layers" counts what was asked even
            // when no device took them (`--device none`); the weight buffers
            // say where the layers really are.
            if !report.buffers.iter().any(|b| b.on_device() && b.bytes > 0) {
                report.layers_offloaded = report.layers_offloaded.map(|_| 0);
            }
            let ngl = match &fit {
                Some(f) if f.n_gpu_layers >= 0 => f.n_gpu_layers as u32,
                Some(_) => 999,
                None => ngl,
            };
            report.fit = fit;
            Some((m, ngl, report))
        }
        Err(e) => {
            let code = match e {
                EngineError::UnsupportedArch(_) => FailureCode::UnsupportedArchitecture,
                EngineError::Device(_) => FailureCode::UnknownDevice,
                EngineError::Override(_) => FailureCode::BadOverride,
                _ => FailureCode::LoadFailed,
            };
            emit(&Event::Fatal {
                code,
                message: e.to_string(),
            });
            None
        }
    }
}

/// Entry point of the hidden `worker` subcommand. Returns the exit code.
pub fn main() -> i32 {
    let stdin = std::io::stdin();
    let mut line = String::new();
    if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
        eprintln!("dyno worker: no plan on stdin; this command is started by dyno itself");
        return 2;
    }
    let request: WorkerRequest = match serde_json::from_str(&line) {
        Ok(p) => p,
        Err(e) => {
            emit(&Event::Fatal {
                code: FailureCode::BadPlan,
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

    match request {
        WorkerRequest::Bench(plan) => bench(plan),
        WorkerRequest::Quantize(plan) => quantize(plan),
        WorkerRequest::Quality(plan) => quality(plan),
        WorkerRequest::Tokenize(plan) => tokenize(plan),
        WorkerRequest::Synth(plan) => synth(plan),
        WorkerRequest::TensorStats { path } => tensor_stats(&path),
        WorkerRequest::Routing { path, tokens } => routing(&path, tokens),
    }
}

/// Write a synthetic model file. The parent has checked the request with
/// the same `prepare` and owns the output path (a `.partial` name it renames
/// or deletes); progress goes out at most four times a second.
fn synth(plan: SynthPlan) -> i32 {
    use crate::model::synth::{self, PrepareError};
    fault::point("synth");
    let fatal = |code: FailureCode, message: String| {
        emit(&Event::Fatal { code, message });
        1
    };
    let origin = crate::model::reshape::Origin {
        seed: plan.seed,
        source: plan.source.clone(),
    };
    let p = match synth::prepare(&plan.like, plan.like_size, plan.shape.as_ref(), &origin) {
        Ok(p) => p,
        Err(PrepareError::Read(e)) => {
            return fatal(
                FailureCode::BadFile,
                format!("{}: {e}", plan.like.display()),
            )
        }
        Err(PrepareError::Refused(why)) => return fatal(FailureCode::BadFile, why),
    };
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&plan.output)
    {
        Ok(f) => f,
        Err(e) => {
            return fatal(
                FailureCode::BadOutput,
                format!("{}: {e}", plan.output.display()),
            )
        }
    };
    if let Err((code, why)) = accepted(&mut f, &plan.output, &p) {
        return fatal(code, why);
    }
    let mut last = Instant::now();
    let written = synth::write(
        &p.header_bytes,
        &p.header,
        &mut f,
        plan.seed,
        &llama::Ggml,
        |done, total| {
            if last.elapsed().as_millis() >= 250 || done == total {
                last = Instant::now();
                emit(&Event::Progress { done, total });
            }
        },
    );
    let mut stats = match written {
        Ok(s) => s,
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
            return fatal(FailureCode::DiskFull, e.to_string())
        }
        Err(e) => return fatal(FailureCode::BadOutput, e.to_string()),
    };
    if plan.check_routing {
        match routed(
            &plan.output,
            &p.header,
            64,
            std::time::Duration::from_secs(20),
        ) {
            Ok(r) => stats.routing = r,
            Err(why) => return fatal(FailureCode::LoadFailed, why),
        }
    }
    evict(&f);
    emit(&Event::Synthesised { stats });
    emit(&Event::Done {
        peak_rss_bytes: peak_rss_bytes(),
    });
    0
}

/// Whether llama.cpp would load the file about to be written: its header
/// alone, in `f` sparsely grown to the file's full size (so the loader's
/// bounds checks pass and no disk is spent), loaded vocab-only. An
/// architecture this build does not know is refused here, in a fraction of
/// a second, rather than after every weight is written. `f` is left at its
/// start for the real write, which covers the same bytes.
fn accepted(
    f: &mut std::fs::File,
    path: &std::path::Path,
    p: &crate::model::synth::Prepared,
) -> Result<(), (FailureCode, String)> {
    use std::io::{Seek, SeekFrom};
    let io = |e: std::io::Error| {
        let code = match e.raw_os_error() {
            Some(libc::ENOSPC) => FailureCode::DiskFull,
            _ => FailureCode::BadOutput,
        };
        (code, format!("{}: {e}", path.display()))
    };
    if !engine::init() {
        // No backend at all: the benchmark says so in its own words.
        return Ok(());
    }
    let arch = p.header.get_str("general.architecture").unwrap_or("none");
    f.write_all(&p.header_bytes)
        .and_then(|_| f.set_len(p.header.file_size))
        .and_then(|_| f.flush())
        .map_err(io)?;
    let checked = llama::Model::check_header(path).map_err(|e| match e {
        EngineError::UnsupportedArch(_) => (
            FailureCode::UnsupportedArchitecture,
            format!(
                "this llama.cpp build ({}) does not know the architecture '{arch}', so a model of it cannot be measured here (a newer Dyno may support it)",
                engine::llama_cpp_build()
            ),
        ),
        e => (
            FailureCode::BadFile,
            format!("llama.cpp would not load this header: {e}"),
        ),
    });
    f.seek(SeekFrom::Start(0)).map_err(io)?;
    checked
}

/// How a mixture-of-experts file spreads a decode of `tokens` random
/// tokens over its experts (on the CPU, stopping after `budget`); `None`
/// for a dense model. A file that llama.cpp cannot load is an error: it
/// would fail every benchmark.
fn routed(
    path: &std::path::Path,
    h: &crate::model::gguf::Header,
    tokens: u32,
    budget: std::time::Duration,
) -> Result<Option<crate::model::synth::Routing>, String> {
    let arch = h.get_str("general.architecture").unwrap_or_default();
    let key = |k: &str| h.get_u64(&format!("{arch}.{k}")).unwrap_or(0) as u32;
    let (n_expert, n_used) = (key("expert_count"), key("expert_used_count"));
    if n_expert == 0 || n_used == 0 || !engine::init() {
        return Ok(None);
    }
    let opts = llama::LoadOptions {
        n_gpu_layers: 0,
        use_mmap: Some(true),
        split_mode: Default::default(),
        main_gpu: 0,
        devices: None,
        fit: None,
        n_cpu_moe: 0,
        overrides: &[],
    };
    let (model, _) = llama::Model::load(path, &opts)
        .map_err(|e| format!("llama.cpp could not load the file just written: {e}"))?;
    let ctx = ContextParams {
        n_threads: std::thread::available_parallelism().map_or(4, |n| n.get() as u32),
        n_batch: 512,
        n_ubatch: 512,
        flash_attn: FlashAttn::Auto,
        cache_type: "f16".into(),
        no_kv_offload: false,
    };
    llama::routing(&model, &ctx, n_expert, n_used, tokens, 1, budget)
        .map(Some)
        .map_err(|e| format!("decoding the file to count its routing: {e}"))
}

/// How any mixture-of-experts file spreads a decode (`dyno synth
/// --routing`): the same count the synthesiser makes of its own files, so a
/// twin and its real file can be set side by side.
fn routing(path: &std::path::Path, tokens: u32) -> i32 {
    let fail = |code, message: String| {
        emit(&Event::Fatal {
            code,
            message: format!("{}: {message}", path.display()),
        });
        1
    };
    let h = match crate::model::gguf::read_header(path) {
        Ok(h) => h,
        Err(e) => return fail(FailureCode::BadFile, e.to_string()),
    };
    match routed(path, &h, tokens, std::time::Duration::from_secs(120)) {
        Ok(Some(routing)) => {
            emit(&Event::Routed { routing });
            emit(&Event::Done {
                peak_rss_bytes: peak_rss_bytes(),
            });
            0
        }
        Ok(None) => fail(
            FailureCode::BadPlan,
            "not a mixture of experts (its header names no experts), so it has no routers to count"
                .into(),
        ),
        Err(why) => fail(FailureCode::LoadFailed, why),
    }
}

/// Drop a file just written from the page cache. A file written moments ago
/// is mapped with huge pages where one read back from disk is not, and
/// decodes up to a fifth faster for it (docs/method.md, "Synthetic
/// weights"): evicted, the synthetic file is first read as a downloaded
/// one is.
fn evict(f: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: advice on an open descriptor we own; it changes no memory
        // of ours, and a failure only leaves the pages cached.
        unsafe {
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = f;
}

/// Every tensor's value statistics (`dyno synth --stats`).
fn tensor_stats(path: &std::path::Path) -> i32 {
    let measured = crate::model::gguf::read_header(path)
        .map_err(|e| e.to_string())
        .and_then(|h| {
            crate::model::synth::measure(path, &h, &llama::Ggml).map_err(|e| e.to_string())
        });
    match measured {
        Ok(stats) => {
            emit(&Event::TensorStats { stats });
            emit(&Event::Done {
                peak_rss_bytes: peak_rss_bytes(),
            });
            0
        }
        Err(e) => {
            emit(&Event::Fatal {
                code: FailureCode::BadFile,
                message: format!("{}: {e}", path.display()),
            });
            1
        }
    }
}

/// Count tokens with the model's tokenizer. The model loads on the CPU
/// (memory-mapped, so its weights are not read): only its vocabulary is used.
fn tokenize(plan: TokenizePlan) -> i32 {
    ready();
    let params = crate::vocab::ModelParams {
        n_gpu_layers: Some(0),
        ..Default::default()
    };
    let Some((model, _, _)) = load(&plan.model_path, &params, false, None) else {
        return 1;
    };
    let mut counts = Vec::with_capacity(plan.texts.len());
    for t in &plan.texts {
        match model.count_tokens(t) {
            Ok(n) => counts.push(n as u64),
            Err(e) => {
                emit(&Event::Fatal {
                    code: FailureCode::LoadFailed,
                    message: format!("could not tokenize: {e}"),
                });
                return 1;
            }
        }
    }
    emit(&Event::Tokens { counts });
    drop(model);
    emit(&Event::Done {
        peak_rss_bytes: peak_rss_bytes(),
    });
    0
}

/// The context `--fit` must leave room for: the most memory any job of the
/// plan asks for, combined (the longest context, the largest batches and
/// parallel sequences, the widest KV type, the KV cache on the device,
/// flash attention off if any job has it off). Every job then fits in what
/// the fit left free.
fn worst_context(plan: &WorkerPlan) -> Option<(ContextParams, u32, u32)> {
    // Bytes per element of a KV cache type; the plan refused unknown ones.
    let width = |t: &str| CacheType::parse(t).map_or(0.0, CacheType::bytes_per_element);
    let first = plan.jobs.first()?;
    let mut c = first.ctx.clone();
    let (mut n_ctx, mut n_seq) = (1, 1);
    for j in &plan.jobs {
        // A job too big for llama.cpp fails on its own when it runs; it must
        // not size the fit for every other job.
        if let Ok(n) = j.test.llama_n_ctx() {
            n_ctx = n_ctx.max(n);
        }
        n_seq = n_seq.max(j.test.n_parallel);
        c.n_batch = c.n_batch.max(j.ctx.n_batch);
        c.n_ubatch = c.n_ubatch.max(j.ctx.n_ubatch);
        if width(&j.ctx.cache_type) > width(&c.cache_type) {
            c.cache_type = j.ctx.cache_type.clone();
        }
        if j.ctx.flash_attn == FlashAttn::Off {
            c.flash_attn = FlashAttn::Off;
        }
    }
    c.no_kv_offload = false;
    Some((c, n_ctx, n_seq))
}

/// Tokens per word of the quality text, for saying what a rate means in
/// words (the model's own tokenizer).
fn tokens_per_word(model: &llama::Model) -> Option<f64> {
    let words = crate::quality::TEXT.split_whitespace().count();
    model
        .tokenize(crate::quality::TEXT)
        .ok()
        .filter(|t| !t.is_empty() && words > 0)
        .map(|t| t.len() as f64 / words as f64)
}

/// Measures the plan's tests in order, each reporting its phases, samples
/// and end; a test refused for memory, or failing, lets the next run.
fn measure_jobs(plan: &WorkerPlan, model: &llama::Model) {
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
        if let Some(why) = plan
            .memory
            .as_ref()
            .and_then(|m| m.profile.refuse_context(&job.test, &job.ctx, m.left))
        {
            emit(&Event::JobFailed { job: i, error: why });
            continue;
        }
        let r = measure::run_job(
            model,
            job,
            match plan.sustain_ms {
                Some(ms) => measure::Reps::For(std::time::Duration::from_millis(ms)),
                None => measure::Reps::Count(plan.reps),
            },
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
                });
                // After the sample is sent: a test can kill the parent while
                // it holds some repetitions of a test that has not ended.
                fault::point(&format!("sample:{i}:{rep}"));
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
}

fn bench(plan: WorkerPlan) -> i32 {
    let (devices, gpu_offload) = ready();
    if no_backend(&devices) {
        return 1;
    }

    fault::point("load");
    if let Some(name) = plan.model_path.file_name() {
        fault::point(&format!("load:{}", name.to_string_lossy()));
    }
    emit(&Event::Phase {
        phase: "load".into(),
        job: None,
    });
    // RPC servers' devices join before the load, as llama-bench's `--rpc`
    // registers them; they take layers as GPUs do.
    let rpc = if plan.model.rpc.is_empty() {
        Vec::new()
    } else {
        match engine::rpc::add_servers(&plan.model.rpc) {
            Ok(servers) => servers,
            Err(e) => {
                emit(&Event::Fatal {
                    code: FailureCode::RpcFailed,
                    message: e.to_string(),
                });
                return 1;
            }
        }
    };
    let has_gpu = has_gpu(&devices, gpu_offload) || rpc.iter().any(|s| !s.devices.is_empty());
    let t0 = Instant::now();
    let worst = worst_context(&plan);
    let fit_for = worst.as_ref().map(|(c, n_ctx, n_seq)| (c, *n_ctx, *n_seq));
    let Some((model, ngl, mut offload)) = load(&plan.model_path, &plan.model, has_gpu, fit_for)
    else {
        return 1;
    };
    offload.rpc = rpc;
    let load_time_ms = t0.elapsed().as_secs_f64() * 1e3;
    let n_layer = model.n_layer();
    let tokens_per_word = tokens_per_word(&model);
    emit(&Event::Loaded {
        load_time_ms,
        model_desc: model.desc(),
        model_size_bytes: model.size_bytes(),
        n_params: model.n_params(),
        n_layer,
        // llama.cpp offloads the layers plus the output layer; its own count
        // is the truth, else what was asked, capped at what exists.
        n_gpu_layers: match offload.layers_offloaded {
            Some(n) => n,
            None if has_gpu => ngl.min(n_layer + 1),
            None => 0,
        },
        offload: Some(offload),
        tokens_per_word,
    });

    measure_jobs(&plan, &model);
    drop(model);
    emit(&Event::Done {
        peak_rss_bytes: peak_rss_bytes(),
    });
    0
}

/// Quantize with llama.cpp's quantizer. The parent owns the output path (a
/// `.partial` name it renames or deletes); a thread reports the bytes written
/// every half second, which is the progress bar and the proof of life.
fn quantize(plan: QuantizePlan) -> i32 {
    ready();
    fault::point("quantize");
    let out = plan.output.clone();
    let total = plan.expected_bytes;
    let watcher = std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let done = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        emit(&Event::Progress { done, total });
    });
    drop(watcher);
    let t0 = Instant::now();
    if let Err(e) = llama::quantize(
        &plan.input,
        &plan.output,
        plan.ftype,
        plan.n_threads,
        plan.allow_requantize,
    ) {
        emit(&Event::Fatal {
            code: FailureCode::QuantizeFailed,
            message: e.to_string(),
        });
        return 1;
    }
    // After the file is written and before it is reported: a test can leave
    // a partial output behind exactly as a kill at the end would.
    fault::point("quantized");
    emit(&Event::Quantized {
        output_bytes: std::fs::metadata(&plan.output)
            .map(|m| m.len())
            .unwrap_or(0),
        elapsed_ms: t0.elapsed().as_secs_f64() * 1e3,
    });
    emit(&Event::Done {
        peak_rss_bytes: peak_rss_bytes(),
    });
    0
}

/// A quality pass: as the reference, write its top-k log-probabilities; as a
/// level, fold its divergence from the reference into running sums.
fn quality(plan: QualityPlan) -> i32 {
    let (devices, gpu_offload) = ready();
    if no_backend(&devices) {
        return 1;
    }
    fault::point("load");
    // `--fit` holds for the quality pass too, sized for its chunks.
    let ctx = crate::engine::quality::chunk_context(plan.n_threads, plan.chunk_tokens);
    let Some((model, _, _)) = load(
        &plan.model_path,
        &plan.model,
        has_gpu(&devices, gpu_offload),
        Some((&ctx, plan.chunk_tokens, 1)),
    ) else {
        return 1;
    };
    match run_quality(&model, &plan) {
        Ok(figures) => {
            emit(&Event::Quality { figures });
            drop(model);
            emit(&Event::Done {
                peak_rss_bytes: peak_rss_bytes(),
            });
            0
        }
        Err(message) => {
            emit(&Event::Fatal {
                code: FailureCode::QualityFailed,
                message,
            });
            1
        }
    }
}

fn run_quality(
    model: &llama::Model,
    plan: &QualityPlan,
) -> Result<crate::vocab::QualityFigures, String> {
    use crate::quality::{hash_tokens, RefHeader, Tally};
    let tokens = engine::quality::tokens(model, plan.chunk_tokens, plan.n_chunks)
        .map_err(|e| e.to_string())?;
    // What a reference holds for this text and model; its top-k is the
    // reference's own choice.
    let text = RefHeader {
        n_vocab: model.n_vocab() as u32,
        topk: 0,
        n_positions: engine::quality::scored_per_chunk(plan.chunk_tokens) * plan.n_chunks,
        tokens_hash: hash_tokens(&tokens),
    };
    let mut tally = Tally::default();
    match &plan.mode {
        QualityMode::Reference { output, topk } => {
            write_reference(model, plan, &tokens, text, output, *topk, &mut tally)?
        }
        QualityMode::Compare { reference } => {
            compare_reference(model, plan, &tokens, text, reference, &mut tally)?
        }
    }
    Ok(tally.figures())
}

/// The quality run of the reference level: its perplexity, and its top-k
/// log-probabilities at every scored position written to `output` for the
/// other levels to be compared with.
fn write_reference(
    model: &llama::Model,
    plan: &QualityPlan,
    tokens: &[llama::Token],
    text: crate::quality::RefHeader,
    output: &std::path::Path,
    topk: u32,
    tally: &mut crate::quality::Tally,
) -> Result<(), String> {
    use crate::quality::{log_softmax, RefHeader, RefRow, RefWriter};
    let k = if topk == 0 {
        text.n_vocab
    } else {
        topk.min(text.n_vocab)
    };
    let header = RefHeader { topk: k, ..text };
    let io = |err: std::io::Error| format!("cannot write {}: {err}", output.display());
    let mut w = RefWriter::create(output, header).map_err(io)?;
    let mut logp = Vec::with_capacity(text.n_vocab as usize);
    let mut scratch = Vec::new();
    let mut werr = None;
    let total = u64::from(plan.n_chunks);
    engine::quality::evaluate(
        model,
        plan.n_threads,
        tokens,
        plan.chunk_tokens,
        |logits, next| {
            log_softmax(logits, &mut logp);
            tally.add(logp[next as usize], None);
            let row = RefRow::from_logprobs(&logp, k, &mut scratch);
            if let Err(err) = w.push(&row) {
                werr = Some(err);
                return Err(EngineError::Context("write failed".into()));
            }
            Ok(())
        },
        |done| emit(&Event::Progress { done, total }),
    )
    .map_err(|err| werr.take().map(io).unwrap_or_else(|| err.to_string()))?;
    w.finish().map_err(io)
}

/// The quality run of another level: its perplexity, and its divergence
/// from and agreement with the reference at every scored position.
fn compare_reference(
    model: &llama::Model,
    plan: &QualityPlan,
    tokens: &[llama::Token],
    text: crate::quality::RefHeader,
    reference: &std::path::Path,
    tally: &mut crate::quality::Tally,
) -> Result<(), String> {
    use crate::quality::{log_softmax, RefReader, RefRow};
    let mut r = RefReader::open(reference).map_err(|err| err.to_string())?;
    let h = r.header;
    if h.n_vocab != text.n_vocab
        || h.tokens_hash != text.tokens_hash
        || h.n_positions != text.n_positions
    {
        return Err(format!(
            "this model tokenizes the quality text differently from the reference ({} vs {} vocabulary entries); quality compares levels of one model only",
            text.n_vocab, h.n_vocab
        ));
    }
    let mut logp = Vec::with_capacity(text.n_vocab as usize);
    let mut row = RefRow {
        top: Vec::new(),
        rest_logp: 0.0,
    };
    let mut rerr = None;
    let total = u64::from(plan.n_chunks);
    engine::quality::evaluate(
        model,
        plan.n_threads,
        tokens,
        plan.chunk_tokens,
        |logits, next| {
            log_softmax(logits, &mut logp);
            match r.next_row(&mut row) {
                Ok(true) => {}
                Ok(false) => {
                    rerr = Some("the reference ended early".to_string());
                    return Err(EngineError::Context("short reference".into()));
                }
                Err(err) => {
                    rerr = Some(format!("cannot read the reference: {err}"));
                    return Err(EngineError::Context("reference read failed".into()));
                }
            }
            let argmax = logp
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(i, _)| i as i32)
                .unwrap_or(-1);
            tally.add(
                logp[next as usize],
                Some((row.kld(&logp), argmax == row.argmax())),
            );
            Ok(())
        },
        |done| emit(&Event::Progress { done, total }),
    )
    .map_err(|err| rerr.take().unwrap_or_else(|| err.to_string()))?;
    Ok(())
}
