//! clap definitions. Option names follow llama-bench where it has one, so a
//! llama-bench command line translates by eye.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use super::options::{named, BenchOptions, SweepArgs};

#[derive(Debug, Parser)]
#[command(
    name = "dyno",
    version,
    about = "Measure how fast local language models run on this machine"
)]
pub struct Cli {
    /// SQLite database to use (default: the platform data directory).
    #[arg(long, global = true, env = "DYNO_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark GGUF models: prefill (pp), decode (tg), pp+tg with time to
    /// first token, decode at depth, and parallel decode.
    Bench(Box<BenchArgs>),
    /// List stored runs, newest first.
    Runs {
        #[arg(long)]
        json: bool,
        /// How many runs to list.
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Show one stored run with its conditions and every sample.
    Show {
        /// A run id from `dyno runs` (with `--db postgres://…`, a team
        /// run's id or its first characters).
        run_id: String,
        #[arg(long)]
        json: bool,
        /// Print the run's stored telemetry over time instead (JSON, thinned
        /// to at most 400 readings), as the app's timeline draws it.
        #[arg(long)]
        timeline: bool,
    },
    /// Sweep one model's quantisation levels: speed (pp, tg, TTFT) and
    /// quality (perplexity, KL divergence, top-1 agreement) per level.
    Sweep(Box<SweepArgs>),
    /// List quantisation sweeps, newest first.
    Sweeps {
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Show one sweep: its table, levels and recommendation.
    ShowSweep {
        sweep_id: i64,
        #[arg(long)]
        json: bool,
    },
    /// Benchmark a running server (llama-server, Ollama, LM Studio, vLLM or
    /// any OpenAI-compatible endpoint): TTFT, inter-token latency, prefill
    /// and decode per request, and total throughput across concurrent
    /// requests, with p50/p90/p99.
    ServeBench(Box<ServeBenchArgs>),
    /// List stored server benchmarks, newest first.
    ServeRuns {
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Show one stored server benchmark.
    ServeShow {
        run_id: i64,
        #[arg(long)]
        json: bool,
        /// Show the server's host instead of `<host>` (it is hidden by
        /// default, since these documents are made to be shared).
        #[arg(long)]
        show_host: bool,
    },
    /// Hugging Face: search GGUF repos, list a repo's levels, download one.
    Hub {
        /// Hub address, for a mirror (also HF_ENDPOINT).
        #[arg(long, global = true, value_name = "URL")]
        endpoint: Option<String>,
        #[command(subcommand)]
        command: HubCommand,
    },
    /// GGUF models already on disk: the Hugging Face cache, LM Studio,
    /// Ollama, and the folders and files added with `dyno models add PATH`.
    Models {
        #[command(subcommand)]
        command: Option<ModelsCommand>,
        #[arg(long, global = true)]
        json: bool,
    },
    /// Export a run or a sweep to share: Markdown, CSV, the JSON document,
    /// or llama-bench's JSON. Paths, user and host names are left out.
    Export {
        /// A run id (`12` or `run:12`) or a sweep id (`sweep:3`).
        id: String,
        #[arg(long, value_parser = named::<ExportFormat>(), default_value = "md")]
        format: ExportFormat,
        /// Write here instead of stdout (png and svg: default
        /// `dyno-run-N.png` or `dyno-sweep-N.svg` in the current folder).
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Keep file paths, the user name and the host name.
        #[arg(long)]
        include_host: bool,
        /// Replace the output file if it exists.
        #[arg(long)]
        force: bool,
        /// Set the run against the team's median for its model and level
        /// (on the card and in the JSON): from the team store URL given,
        /// else DYNO_TEAM_URL or the saved team.url.
        #[arg(long, value_name = "URL", num_args = 0..=1)]
        vs_team: Option<Option<String>>,
    },
    /// Compare two runs, two sweeps or two server runs, even from different
    /// machines: per matched test, B÷A, the change, and a Welch t-test on the
    /// samples (a server run's requests).
    Compare {
        /// A run id (`12`, `run:12`), a sweep id (`sweep:3`) or a server run
        /// (`serve:2`).
        a: String,
        b: String,
        #[arg(long)]
        json: bool,
    },
    /// Push this database's runs to a team's PostgreSQL store and pull the
    /// other machines' runs back for reading. Repeat it freely: nothing is
    /// sent or stored twice, and a cut sync resumes where it stopped.
    Sync(SyncArgs),
    /// Rank the machines in a team store by decode and prefill of one model
    /// and level.
    Machines(MachinesArgs),
    /// Store the runs of a shared result file (`dyno export --format json`)
    /// as runs of the machine that measured them. Importing twice adds nothing.
    Import { file: PathBuf },
    /// The presets (Quick, Standard, Thorough): what each measures and how
    /// long it should take on MODEL, from this machine's stored runs.
    Presets {
        #[arg(value_name = "MODEL")]
        model: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Dyno's settings: the Hugging Face endpoint and whether a token is
    /// saved (the app's Settings page shows the same).
    Settings {
        #[command(subcommand)]
        command: Option<SettingsCommand>,
        #[arg(long, global = true)]
        json: bool,
    },
    /// Describe GGUF files from their headers without loading them.
    Inspect {
        #[arg(required = true)]
        models: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Predict prefill and decode speed, memory fit and quality loss of a
    /// GGUF file or of a hub repo's levels before downloading them, from
    /// this machine's own stored runs (priors while there are none).
    Predict(Box<PredictArgs>),
    /// Write a model file with another file's header and synthetic weights
    /// of each tensor's own type, to measure its shape's speed (not its
    /// quality: the weights are made up).
    Synth(Box<SynthArgs>),
    /// The hardware: CPU, memory and its measured bandwidth, GPUs, and the
    /// llama.cpp build and devices.
    Hw {
        #[arg(long)]
        json: bool,
        /// Measure the memory bandwidth again instead of using the stored figure.
        #[arg(long)]
        remeasure: bool,
    },
    /// Lend this machine's devices to other machines' benchmarks through
    /// llama.cpp's RPC backend, until stopped (Ctrl-C). On the machine that
    /// measures, `dyno bench --rpc HOST:PORT` (or llama-bench's `--rpc`)
    /// then splits the model's layers over its own devices and this one's.
    /// The protocol has no authentication: serve on a trusted network only.
    RpcServer(RpcServerArgs),
    /// Internal: the measuring process `dyno` starts for each model load.
    #[command(hide = true)]
    Worker {
        /// Report llama.cpp's build and devices, then exit.
        #[arg(long)]
        probe: bool,
    },
}

/// `dyno rpc-server`.
#[derive(Debug, clap::Args)]
pub struct RpcServerArgs {
    /// The address to listen on: 127.0.0.1 (this machine only) by default;
    /// 0.0.0.0 or this machine's LAN address to serve other machines.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(short, long, default_value_t = 50052)]
    pub port: u16,
    /// CPU threads for a CPU device (default: one per physical core).
    #[arg(short = 't', long)]
    pub threads: Option<u32>,
    /// The devices to lend, by name from `dyno hw` (CUDA0, Vulkan0, CPU),
    /// comma-separated; default: every GPU, else the CPU.
    #[arg(
        long = "device",
        visible_alias = "dev",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub device: Option<Vec<String>>,
    /// Print the served devices as one JSON line.
    #[arg(long)]
    pub json: bool,
}

/// `dyno synth`.
#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// The GGUF file whose header, tensor shapes and types the output keeps,
    /// or OWNER/NAME:LEVEL on the hub (only its header is fetched: measure a
    /// model before downloading it). Without it, --shape names a llama shape
    /// written from Dyno's built-in llama header: no model or network needed.
    #[arg(long, value_name = "FILE.gguf|OWNER/NAME:LEVEL")]
    pub like: Option<String>,
    /// Hub address, for a mirror (also HF_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Resize FILE's header to another shape of the same architecture: a
    /// named shape (llama-3.1-8b, llama-3.2-1b, llama-2-7b, mixtral-8x7b,
    /// gemma-3-1b, ...), key=value pairs (layers=8,embd=1024,ff=2816,heads=16,
    /// heads_kv=4,head_dim=64,vocab=128256,context=8192,tied=false, and
    /// experts=8,experts_used=2 for a mixture of experts), or both.
    /// Without --like, a llama shape from Dyno's built-in llama header.
    #[arg(long, value_name = "SHAPE")]
    pub shape: Option<String>,
    /// Write the matrices as llama-quantize writes this level (the output
    /// layer Q6_K below Q8_0; the K levels give some tensors more bits by
    /// role and depth, as it does): F32, F16, BF16, Q8_0, Q6_K, Q5_K_M,
    /// Q5_K_S, Q5_1, Q5_0, Q4_K_M, Q4_K_S, Q4_1, Q4_0, Q3_K_L, Q3_K_M,
    /// Q3_K_S or Q2_K.
    #[arg(long = "type", value_name = "TYPE")]
    pub ggml_type: Option<String>,
    /// Check and describe the file (parameters, size) without writing it.
    #[arg(long)]
    pub dry_run: bool,
    /// The file to write (default: beside FILE, named after it, the shape
    /// and the level: FILE.SHAPE-TYPE.synth.gguf; a hub level's in the
    /// current folder).
    #[arg(short = 'o', long, value_name = "OUT.gguf")]
    pub out: Option<PathBuf>,
    /// Seed of the values: the same seed writes the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
    #[arg(long)]
    pub json: bool,
    /// Print FILE's per-tensor value statistics instead of writing anything
    /// (JSON): how the synthetic values were calibrated.
    #[arg(long, hide = true)]
    pub stats: bool,
    /// Decode this many random tokens with FILE (a mixture of experts) and
    /// print how its routers spread them over the experts, instead of
    /// writing anything: the count `synth` makes of its own mixtures, for
    /// setting a twin beside its real file.
    #[arg(long, hide = true, value_name = "TOKENS", num_args = 0..=1, default_missing_value = "256")]
    pub routing: Option<u32>,
}

/// `dyno predict`.
#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// A GGUF file, or OWNER/NAME (every level) or OWNER/NAME:LEVEL on the
    /// hub; only the headers are fetched.
    #[arg(
        value_name = "FILE|OWNER/NAME[:LEVEL]",
        required_unless_present = "accuracy"
    )]
    pub target: Option<String>,
    /// Context (tokens) the memory fit is judged at.
    #[arg(long, default_value_t = 4096)]
    pub ctx: u64,
    /// Threads to predict for (default: this machine's, as `dyno bench`).
    #[arg(short = 't', long)]
    pub threads: Option<u32>,
    /// Prompt length of the prefill prediction.
    #[arg(short = 'p', long = "n-prompt", default_value_t = 512)]
    pub n_prompt: u64,
    /// Generated tokens of the decode prediction.
    #[arg(short = 'n', long = "n-gen", default_value_t = 128)]
    pub n_gen: u64,
    /// Layers on the GPU (default: all where the build has a GPU backend).
    #[arg(long = "ngl")]
    pub gpu_layers: Option<u32>,
    /// The decode rate (t/s) the advised level must reach.
    #[arg(long, value_name = "T/S", default_value_t = 10.0)]
    pub min_tps: f64,
    /// Instead: how good past predictions were, over every stored run that
    /// kept one (median and p90 of |predicted ÷ measured − 1| per phase).
    #[arg(long, conflicts_with = "target")]
    pub accuracy: bool,
    /// With --accuracy: count figures that other programs disturbed too
    /// (left out by default: they measure the disturbance, not the
    /// prediction).
    #[arg(long, requires = "accuracy")]
    pub include_disturbed: bool,
    #[arg(long)]
    pub json: bool,
    /// Hub address, for a mirror (also HF_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// GGUF repos matching a query, most downloaded first.
    Search {
        query: String,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// A repo's GGUF files grouped by level, with size and whether each fits.
    Ls {
        #[arg(value_name = "OWNER/NAME")]
        repo: String,
        #[arg(long)]
        json: bool,
        /// Skip the predicted decode rate per level (it reads each level's
        /// header with ranged requests, cached by sha256).
        #[arg(long)]
        no_predict: bool,
    },
    /// Download one level (all parts of a split model) into the HF cache,
    /// resuming an interrupted download and verifying its sha256.
    Pull {
        #[arg(value_name = "OWNER/NAME")]
        repo: String,
        /// The level to download, e.g. Q4_K_M.
        #[arg(long, conflicts_with = "file")]
        quant: Option<String>,
        /// One file by its path in the repo.
        #[arg(long)]
        file: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Save a Hugging Face token for gated and private repos. It is read
    /// from standard input (so it stays out of the shell's history) and
    /// saved where huggingface_hub keeps it ($HF_TOKEN_PATH, else
    /// $HF_HOME/token), never in Dyno's database.
    Login,
    /// Delete the saved token file.
    Logout,
    /// Delete what a cancelled or interrupted download of FILE left in the
    /// cache (a pull resumes it otherwise).
    Discard {
        #[arg(value_name = "OWNER/NAME")]
        repo: String,
        /// The file's path in the repo.
        #[arg(long)]
        file: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SettingsCommand {
    /// Save a setting. Keys: hub.endpoint (a Hugging Face hub or mirror
    /// URL), team.url (the team store for `dyno sync`, saved without a password).
    Set { key: String, value: String },
    /// Go back to a setting's default.
    Unset { key: String },
    /// Reach the hub with the settings in force, and check the token.
    Check,
}

pub use crate::report::export::Format as ExportFormat;

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The team store: postgres://USER@HOST:PORT/DATABASE (the password
    /// from PGPASSWORD or ~/.pgpass, or in the URL for this sync only).
    /// Default: DYNO_TEAM_URL, else the saved team.url.
    pub url: Option<String>,
    /// Also push each run's telemetry series (every 100 ms reading).
    #[arg(long)]
    pub with_telemetry: bool,
    /// Push only; do not pull other machines' runs.
    #[arg(long)]
    pub push_only: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MachinesArgs {
    /// The team store (default: --db when it is one, else DYNO_TEAM_URL or
    /// the saved team.url).
    #[arg(long, value_name = "URL")]
    pub team: Option<String>,
    /// The model: its sha256 (or first characters), file name or name.
    /// Default: the model and level most machines measured.
    #[arg(long)]
    pub model: Option<String>,
    /// The level (Q4_K_M, Q8_0, ...).
    #[arg(long)]
    pub quant: Option<String>,
    /// Only runs on this llama.cpp backend (CPU, CUDA, Vulkan, Metal).
    #[arg(long)]
    pub backend: Option<String>,
    /// Only runs measured by this Dyno version.
    #[arg(long)]
    pub dyno_version: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Also search this folder (and its subfolders) for GGUF files, or list
    /// this one .gguf file.
    Add {
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
    /// Stop searching a folder or listing a file added with `add`.
    Remove {
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
    /// The folders and files added with `add`.
    Added,
}

#[derive(Debug, Args)]
pub struct ServeBenchArgs {
    /// The server's address, e.g. http://127.0.0.1:8080 (a trailing /v1 is
    /// fine).
    #[arg(value_name = "URL")]
    pub url: String,
    /// The model the requests name; without it, the server's only model.
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// The API key, sent as a bearer token and never stored. Prefer the
    /// environment, which stays out of shell history.
    #[arg(long, env = "DYNO_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// chat (/v1/chat/completions, through the model's chat template) or
    /// completions (/v1/completions, the raw prompt).
    #[arg(long, value_enum, default_value = "chat")]
    pub api: ServeApi,
    /// Prompt lengths in tokens (about: prompts are cut from real text).
    #[arg(
        short = 'p',
        long = "n-prompt",
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "512"
    )]
    pub n_prompt: Vec<u32>,
    /// Tokens to generate per request.
    #[arg(
        short = 'n',
        long = "n-gen",
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "128"
    )]
    pub n_gen: Vec<u32>,
    /// Context depths: tokens of conversation before the prompt.
    #[arg(
        short = 'd',
        long = "n-depth",
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "0"
    )]
    pub n_depth: Vec<u32>,
    /// Requests in flight at once; a list sweeps them (1,2,4,8).
    #[arg(
        short = 'c',
        long,
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "1"
    )]
    pub concurrency: Vec<u32>,
    /// Requests per test (at least its concurrency).
    #[arg(short = 'r', long, default_value_t = 5)]
    pub requests: u32,
    /// Let the server reuse its prompt cache: each depth's context is sent
    /// once, then requests add their prompt after it (prefill over cached
    /// context). Without it every prompt is unique, so the cache cannot
    /// inflate prefill.
    #[arg(long)]
    pub prefix_cache: bool,
    /// Goodput: a request is good when its time to first token is at most
    /// this many milliseconds (and its ITL within --slo-itl-ms, if set).
    #[arg(long, value_name = "MS")]
    pub slo_ttft_ms: Option<f64>,
    /// Goodput: bound on a request's mean inter-token latency.
    #[arg(long, value_name = "MS")]
    pub slo_itl_ms: Option<f64>,
    /// A request that receives nothing for this many seconds fails as stalled.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub stall: f64,
    /// No request may take longer than this many seconds.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    pub timeout: f64,
    #[arg(long)]
    pub json: bool,
    /// Show the server's host in the output instead of `<host>`.
    #[arg(long)]
    pub show_host: bool,
    /// The GGUF file the server runs: after the server, measure it
    /// in-process with the same lengths, depths and request count (as pp+tg
    /// tests, llama-bench's method) and report what the server costs: its
    /// prefill, decode and TTFT against the engine's.
    #[arg(long, value_name = "MODEL.gguf")]
    pub engine: Option<std::path::PathBuf>,
    /// Threads for the in-process run of --engine (default: this machine's
    /// default, as `dyno bench`); set it to the server's own thread count.
    #[arg(long, requires = "engine")]
    pub engine_threads: Option<u32>,
    /// A GGUF with the server's model: where the server reports no token
    /// counts, its tokenizer counts the prompt and the generated text
    /// (default: the --engine file). Without either, content chunks are
    /// counted, an estimate.
    #[arg(long, value_name = "MODEL.gguf")]
    pub tokenizer: Option<std::path::PathBuf>,
    /// Trust the certificate authorities in this PEM file too, besides the
    /// public ones: for an https server whose certificate a private
    /// authority signed (a company's, or a proxy's own).
    #[arg(long, value_name = "CA.pem")]
    pub ca_cert: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ServeApi {
    Chat,
    Completions,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// GGUF model files (hub levels OWNER/NAME:LEVEL, or named shapes such
    /// as llama-3.1-8b:Q4_K_M, with --shape-only).
    #[arg(required_unless_present = "again", value_name = "MODEL")]
    pub models: Vec<PathBuf>,
    /// Measure again the tests of run RUN_ID that were flagged as disturbed,
    /// with its file, setup and repetitions, as a run of its own (the first
    /// is kept). The app's "Measure these again" does the same.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = [
        "models", "retry_disturbed", "preset", "n_prompt", "n_gen", "pg", "n_depth", "npl", "npp",
        "ntg", "reps", "no_warmup", "threads", "ngl", "fit", "device", "split_mode", "main_gpu",
        "no_kv_offload", "n_cpu_moe", "override_tensor", "batch", "ubatch", "fa", "cache_type",
        "mmap", "sustain",
    ])]
    pub again: Option<i64>,
    /// Measure a test flagged as disturbed (other programs busy, steal time,
    /// or repetitions spread past a quiet machine's) again, up to N times;
    /// each attempt is a run of its own, and the disturbed one is kept.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub retry_disturbed: u32,
    /// Each MODEL is a hub level (OWNER/NAME:LEVEL): read only its header,
    /// write it here with synthetic weights, and measure that. The level's
    /// speed on this machine before a download, never its quality; the
    /// figures are labelled as synthetic. The files are deleted afterwards.
    /// A named llama shape at a level (llama-3.1-8b:Q4_K_M, see `dyno synth
    /// --shape`) is written from Dyno's built-in header: no network needed.
    #[arg(long, conflicts_with = "again")]
    pub shape_only: bool,
    /// With --shape-only: keep the synthetic files (in Dyno's cache).
    #[arg(long, requires = "shape_only")]
    pub keep: bool,
    /// Hub address for --shape-only, for a mirror (also HF_ENDPOINT).
    #[arg(long, value_name = "URL", requires = "shape_only")]
    pub endpoint: Option<String>,
    #[command(flatten)]
    pub opts: BenchOptions,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::SplitMode;

    fn bench(args: &[&str]) -> BenchArgs {
        let mut v = vec!["dyno", "bench"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().command {
            Command::Bench(b) => *b,
            _ => unreachable!(),
        }
    }

    #[test]
    fn lists_parse_like_llama_bench() {
        let b = bench(&[
            "m.gguf",
            "-p",
            "128,512",
            "-t",
            "1,2",
            "--ngl",
            "0,99,auto",
            "--pg",
            "16,4",
            "--mmap",
            "0,1",
        ]);
        let r = b.opts.request(8);
        assert_eq!(r.n_prompt, [128, 512]);
        assert_eq!(r.n_threads, [1, 2]);
        assert_eq!(r.n_gpu_layers, [Some(0), Some(99), None]);
        assert_eq!(r.prompt_gen, [(16, 4)]);
        assert_eq!(r.use_mmap, [Some(false), Some(true)]);
        assert_eq!(r.n_gen, [128], "unset options keep llama-bench's defaults");
    }

    #[test]
    fn offload_options_parse_ranges_devices_and_fit() {
        let r = bench(&[
            "m.gguf",
            "--ngl",
            "0-32+8,99",
            "--dev",
            "Vulkan0/Vulkan1,none,auto",
        ])
        .opts
        .request(2);
        assert_eq!(
            r.n_gpu_layers,
            [Some(0), Some(8), Some(16), Some(24), Some(32), Some(99)]
        );
        assert_eq!(
            r.devices,
            [
                Some(vec!["Vulkan0".to_string(), "Vulkan1".into()]),
                Some(vec![]),
                None
            ]
        );
        let r = bench(&[
            "m.gguf", "--ngl", "1-8*2", "--nkvo", "0,1", "--sm", "none,row",
        ])
        .opts
        .request(2);
        assert_eq!(r.n_gpu_layers, [Some(1), Some(2), Some(4), Some(8)]);
        assert_eq!(r.no_kv_offload, [false, true]);
        assert_eq!(r.split_mode, [SplitMode::None, SplitMode::Row]);
        assert_eq!(r.groups().len(), 8, "ngl x split mode are loads");
        assert_eq!(
            r.groups()[0].runs.len(),
            2,
            "KV offload is a context setting"
        );
        let r = bench(&["--fit", "m.gguf"]).opts.request(2);
        assert_eq!(r.fit_margin_mib, Some(1024));
        assert_eq!(bench(&["--fit=256", "m.gguf"]).opts.fit, Some(256));
        let r = bench(&["m.gguf", "--ngl", "0-16+8,16,99"]).opts.request(2);
        assert_eq!(
            r.n_gpu_layers,
            [Some(0), Some(8), Some(16), Some(99)],
            "each once"
        );
        let top = format!("{}-{}", u32::MAX - 1, u32::MAX);
        let r = bench(&["m.gguf", "--ngl", &top]).opts.request(2);
        assert_eq!(
            r.n_gpu_layers.len(),
            2,
            "no overflow at the top of the range"
        );
        for bad in ["8-0", "0-8+0", "0-8*2", "x", "1-x", "0-100000"] {
            assert!(
                Cli::try_parse_from(["dyno", "bench", "m.gguf", "--ngl", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(Cli::try_parse_from(["dyno", "bench", "m.gguf", "--dev", "Vulkan0/"]).is_err());
        assert!(
            Cli::try_parse_from(["dyno", "bench", "m.gguf", "--fit", "--ngl", "9"]).is_err(),
            "--fit chooses the layers itself"
        );
    }

    #[test]
    fn malformed_values_are_rejected_by_the_parser() {
        let v = ["dyno", "bench", "m.gguf", "--pg", "512"];
        assert!(Cli::try_parse_from(v).is_err());
        assert!(Cli::try_parse_from(["dyno", "bench", "m.gguf", "-p", "x"]).is_err());
        assert!(Cli::try_parse_from(["dyno", "bench", "m.gguf", "--fa", "maybe"]).is_err());
    }
}
