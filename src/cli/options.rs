//! The clap definitions of the plan options `dyno bench` and `dyno sweep`
//! share, and of `dyno sweep`: each becomes the core's own types here
//! ([`BenchOptions::request`], [`SweepArgs::order`]), so nothing below the
//! CLI knows the command line. The value parsers are the core's
//! (`app::options`), which the app's forms use too.

use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::Args;

use crate::app::options::{
    merge_ngl, parse_bool01, parse_count, parse_devices, parse_minutes, parse_mmap, parse_ngl,
    parse_override_group, parse_pg, CountItem, NglItem, OverrideGroup,
};
use crate::app::presets::Preset;
use crate::app::sweep::{SweepOrder, SweepWhat};
use crate::bench::plan::BenchRequest;
use crate::bench::sweep::{QualitySettings, Source};
use crate::error::Result;
use crate::vocab::{FlashAttn, Named, SplitMode};

/// A parser for the values of a [`Named`] type: its names as clap's
/// possible values (listed in `--help` with their help), taken in any case.
pub fn named<T: Named + Send + Sync>() -> NamedParser<T> {
    NamedParser(std::marker::PhantomData)
}

/// See [`named`].
#[derive(Clone)]
pub struct NamedParser<T>(std::marker::PhantomData<T>);

impl<T: Named + Send + Sync> TypedValueParser for NamedParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<T, clap::Error> {
        use clap::error::{ContextKind, ContextValue, ErrorKind};
        let text = value.to_string_lossy();
        T::from_name(&text).ok_or_else(|| {
            let mut e = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
            if let Some(arg) = arg {
                e.insert(
                    ContextKind::InvalidArg,
                    ContextValue::String(arg.to_string()),
                );
            }
            e.insert(
                ContextKind::InvalidValue,
                ContextValue::String(text.into_owned()),
            );
            let names = T::VALUES.iter().map(|v| v.name().to_string()).collect();
            e.insert(ContextKind::ValidValue, ContextValue::Strings(names));
            e
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(T::VALUES.iter().map(|v| {
            let p = PossibleValue::new(v.name());
            match v.help() {
                Some(h) => p.help(h),
                None => p,
            }
        })))
    }
}

/// A quantisation sweep of one model.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["files", "dir", "from", "repo", "shape", "resume"])))]
pub struct SweepArgs {
    /// GGUF files of one model, one per level.
    #[arg(long, num_args = 1.., value_name = "GGUF")]
    pub files: Vec<PathBuf>,
    /// A folder of GGUF files of one model.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// One high-precision GGUF (F16, BF16, F32) to quantise locally into the
    /// levels with llama.cpp's quantizer (cached; DYNO_CACHE_DIR moves the cache).
    #[arg(long, value_name = "GGUF")]
    pub from: Option<PathBuf>,
    /// A Hugging Face repo OWNER/NAME: missing levels are downloaded (verified), then swept.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// A named model shape (llama-3.1-8b, llama-3.2-1b, mixtral-8x7b, ...;
    /// `dyno synth --help` lists them): each level is written from Dyno's
    /// built-in llama header with synthetic weights and measured. Nothing
    /// is downloaded and no model is needed: the speed of that model's
    /// levels on this machine, labelled as synthetic, without quality.
    #[arg(long, value_name = "NAME")]
    pub shape: Option<String>,
    /// Hub address for --repo, for a mirror (also HF_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// With --repo: download nothing. Read each level's header, write it
    /// here with synthetic weights and measure that: the levels' speed on
    /// this machine before a download, labelled as synthetic. Quality needs
    /// the real weights and is not measured. The files are deleted after.
    #[arg(long, requires = "repo")]
    pub shape_only: bool,
    /// With --shape-only or --shape: keep the synthetic files (in Dyno's
    /// cache).
    #[arg(long)]
    pub keep: bool,
    /// Resume sweep ID with the plan stored with it.
    #[arg(long, value_name = "ID")]
    pub resume: Option<i64>,
    /// Levels, any case (default: F16,Q8_0,Q6_K,Q5_K_M,Q4_K_M,Q3_K_M,Q2_K for
    /// --from and --repo, those of them Dyno can write for --shape; every
    /// file for --files and --dir).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub levels: Vec<String>,
    /// Tokens of the bundled text scored for quality (whole chunks of 512).
    #[arg(long, default_value_t = crate::quality::DEFAULT_TOKENS, value_name = "N")]
    pub quality_tokens: u32,
    /// Measure speed only: no perplexity or KL divergence.
    #[arg(long)]
    pub no_quality: bool,
    /// Reference log-probabilities kept per position; 0 keeps the whole
    /// vocabulary (exact KL divergence, much more memory and disk).
    #[arg(long, default_value_t = crate::quality::DEFAULT_TOPK, value_name = "K", hide = true)]
    pub quality_topk: u32,
    /// Measure every level again, even those already measured.
    #[arg(long)]
    pub fresh: bool,
    #[command(flatten)]
    pub opts: BenchOptions,
}

/// The plan options `dyno bench` and `dyno sweep` share.
#[derive(Debug, Args)]
pub struct BenchOptions {
    /// A preset plan instead of -p, -n and -r: quick (pp128, tg32, 3
    /// repetitions), standard (llama-bench's defaults) or thorough (pp512
    /// and pp2048, tg128, 10 repetitions); each adds pp+tg for time to first
    /// token. `dyno presets MODEL` says how long each takes.
    #[arg(long, value_parser = named::<Preset>(), conflicts_with_all = ["n_prompt", "n_gen", "reps", "pg"])]
    pub preset: Option<Preset>,
    /// Prompt lengths for prefill tests (pp); 0 skips them.
    #[arg(
        short = 'p',
        long = "n-prompt",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub n_prompt: Option<Vec<u32>>,
    /// Generation lengths for decode tests (tg); 0 skips them.
    #[arg(
        short = 'n',
        long = "n-gen",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub n_gen: Option<Vec<u32>>,
    /// Prefill then decode, timed per phase with time to first token: PROMPT,GEN
    /// (repeat the option for more pairs).
    #[arg(long = "pg", value_parser = parse_pg, value_name = "P,N")]
    pub pg: Vec<(u32, u32)>,
    /// Context depths: tokens already in the KV cache before each test.
    #[arg(
        short = 'd',
        long = "n-depth",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub n_depth: Option<Vec<u32>>,
    /// Parallel sequences decoded at once (as llama-batched-bench's -npl).
    #[arg(long = "npl", value_delimiter = ',', value_name = "LIST")]
    pub npl: Vec<u32>,
    /// Prompt length of each parallel sequence.
    #[arg(
        long = "npp",
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "128"
    )]
    pub npp: Vec<u32>,
    /// Tokens each parallel sequence generates.
    #[arg(
        long = "ntg",
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "128"
    )]
    pub ntg: Vec<u32>,
    /// Timed repetitions of each test.
    #[arg(short = 'r', long = "repetitions", default_value_t = 5)]
    pub reps: u32,
    /// Skip the untimed warm-up (one pp and one decoded token) before each test.
    #[arg(long)]
    pub no_warmup: bool,
    /// CPU threads (default: one per physical core).
    #[arg(
        short = 't',
        long = "threads",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub threads: Option<Vec<u32>>,
    /// Layers offloaded to the GPU, or 'auto' (all when a GPU is present).
    /// A list or a range is an offload sweep: 0,8,16,99 or 0-32+8.
    #[arg(long = "ngl", visible_alias = "n-gpu-layers", value_delimiter = ',', value_parser = parse_ngl, value_name = "LIST")]
    pub ngl: Option<Vec<NglItem>>,
    /// Let llama.cpp fit the model to free device memory, leaving MIB free
    /// on each device (default 1024); the layers it chose are recorded.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "1024", value_name = "MIB", conflicts_with = "ngl")]
    pub fit: Option<u32>,
    /// Backend devices to use: names from `dyno hw` joined by '/', 'auto'
    /// (all) or 'none' (CPU only); a list sweeps device sets.
    #[arg(long = "device", visible_alias = "dev", value_delimiter = ',', value_parser = parse_devices, value_name = "LIST")]
    pub device: Option<Vec<Option<Vec<String>>>>,
    /// How to spread the model over several GPUs.
    #[arg(
        long = "split-mode",
        visible_alias = "sm",
        value_parser = named::<SplitMode>(),
        value_delimiter = ',',
        value_name = "none|layer|row"
    )]
    pub split_mode: Option<Vec<SplitMode>>,
    /// The GPU for the whole model with --split-mode none (index among the devices in use).
    #[arg(
        long = "main-gpu",
        visible_alias = "mg",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub main_gpu: Option<Vec<u32>>,
    /// Keep the KV cache and attention on the CPU (1) or with the layers (0); 0,1 sweeps both.
    #[arg(long = "no-kv-offload", visible_alias = "nkvo", value_delimiter = ',', value_parser = parse_bool01, value_name = "0,1")]
    pub no_kv_offload: Option<Vec<bool>>,
    /// RPC servers whose devices take layers too, as llama-bench's --rpc:
    /// HOST:PORT of each `dyno rpc-server` (or llama.cpp rpc-server),
    /// comma-separated. The servers and their devices are recorded.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT,...")]
    pub rpc: Option<Vec<String>>,
    /// Keep the expert tensors of the first N layers on the CPU (a mixture
    /// of experts larger than the GPU); a list or range sweeps: 0,8,16.
    #[arg(long = "n-cpu-moe", visible_alias = "ncmoe", value_delimiter = ',', value_parser = parse_count, value_name = "LIST")]
    pub n_cpu_moe: Option<Vec<CountItem>>,
    /// Place tensors whose names match PATTERN (a regular expression) in
    /// BUFFER (CPU, CUDA0, Vulkan0 …): PATTERN=BUFFER, several joined by
    /// ';'; ',' separates settings to sweep, e.g. "exps=CPU,".
    #[arg(long = "override-tensor", visible_alias = "ot", value_delimiter = ',', value_parser = parse_override_group, value_name = "PATTERN=BUFFER;...")]
    pub override_tensor: Option<Vec<OverrideGroup>>,
    /// Logical batch size (tokens per llama_decode call).
    #[arg(
        short = 'b',
        long = "batch-size",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub batch: Option<Vec<u32>>,
    /// Physical batch size.
    #[arg(
        long = "ub",
        visible_alias = "ubatch-size",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub ubatch: Option<Vec<u32>>,
    /// Flash attention.
    #[arg(
        long = "fa",
        visible_alias = "flash-attn",
        value_parser = named::<FlashAttn>(),
        value_delimiter = ',',
        value_name = "on|off|auto"
    )]
    pub fa: Option<Vec<FlashAttn>>,
    /// KV cache type for K and V (f16, q8_0, q4_0, ...).
    #[arg(
        long = "ctk",
        visible_alias = "cache-type",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub cache_type: Option<Vec<String>>,
    /// Memory-map the model (1), read it into memory (0), or let llama.cpp
    /// choose (auto, Dyno's default; llama-bench's is mmap).
    #[arg(long = "mmap", value_delimiter = ',', value_parser = parse_mmap, value_name = "0,1,auto")]
    pub mmap: Option<Vec<Option<bool>>>,
    /// Decode back to back for MINUTES (tg32 repeated, the cache cleared
    /// between repetitions) and report the burst rate, the sustained rate
    /// (the last third), when it dropped and why: throttling (clocks,
    /// temperatures, GPU limits) or other programs. Replaces the tests.
    #[arg(long, value_name = "MINUTES", value_parser = parse_minutes,
          conflicts_with_all = ["preset", "n_prompt", "n_gen", "pg", "npl", "n_depth"])]
    pub sustain: Option<u32>,
    /// Before each model load after the first (each level of a sweep), wait
    /// until CPU and GPU temperatures and clocks are back near their idle
    /// values, read before the first load; at most SECONDS (default 120).
    /// The wait is recorded with the run.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "120", value_name = "SECONDS")]
    pub cooldown: Option<u32>,
    /// Longest a worker may stay silent (one repetition) before it is killed.
    // From 1 second to a day: a longer one would overflow the clock.
    #[arg(long = "timeout", default_value_t = crate::app::bench::DEFAULT_TIMEOUT_S, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout_s: u64,
    /// Do not sample CPU, memory, energy and GPU while measuring.
    #[arg(long)]
    pub no_telemetry: bool,
    /// Load models and make contexts even when Dyno estimates they will not
    /// fit in free memory (or in DYNO_MEMORY_LIMIT).
    #[arg(long)]
    pub no_memory_check: bool,
    /// Print one JSON document on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// A list option as given, or its default when absent or empty.
fn pick<T: Clone>(given: &Option<Vec<T>>, default: Vec<T>) -> Vec<T> {
    given.clone().filter(|v| !v.is_empty()).unwrap_or(default)
}

impl BenchOptions {
    /// The request, with llama-bench's defaults for anything not given.
    pub fn request(&self, default_threads: u32) -> BenchRequest {
        let d = BenchRequest::defaults(default_threads);
        let mut request = BenchRequest {
            n_prompt: pick(&self.n_prompt, d.n_prompt),
            n_gen: pick(&self.n_gen, d.n_gen),
            prompt_gen: self.pg.clone(),
            n_depth: pick(&self.n_depth, d.n_depth),
            n_parallel: self.npl.clone(),
            parallel_prompt: self.npp.clone(),
            parallel_gen: self.ntg.clone(),
            reps: self.reps,
            warmup: !self.no_warmup,
            n_threads: pick(&self.threads, d.n_threads),
            // Each layer count once, in the order given (`0-32+8,32`).
            n_gpu_layers: pick(&self.ngl.as_deref().map(merge_ngl), d.n_gpu_layers),
            n_batch: pick(&self.batch, d.n_batch),
            n_ubatch: pick(&self.ubatch, d.n_ubatch),
            flash_attn: pick(&self.fa, d.flash_attn),
            cache_type: pick(&self.cache_type, d.cache_type),
            use_mmap: pick(&self.mmap, d.use_mmap),
            split_mode: pick(&self.split_mode, d.split_mode),
            main_gpu: pick(&self.main_gpu, d.main_gpu),
            devices: pick(&self.device, d.devices),
            no_kv_offload: pick(&self.no_kv_offload, d.no_kv_offload),
            n_cpu_moe: pick(
                &self
                    .n_cpu_moe
                    .as_ref()
                    .map(|v| v.iter().flat_map(|i| i.0.iter().copied()).collect()),
                d.n_cpu_moe,
            ),
            tensor_overrides: pick(
                &self
                    .override_tensor
                    .as_ref()
                    .map(|v| v.iter().map(|g| g.0.clone()).collect()),
                d.tensor_overrides,
            ),
            fit_margin_mib: self.fit,
            sustain_s: self.sustain,
            rpc: self
                .rpc
                .iter()
                .flatten()
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
        };
        // A preset conflicts with the lengths and repetitions, so it
        // replaces only defaults.
        if let Some(p) = self.preset {
            p.apply(&mut request);
        }
        request
    }

    /// How the figures are taken.
    pub fn measuring(&self) -> crate::app::bench::Measuring {
        crate::app::bench::Measuring {
            telemetry: !self.no_telemetry,
            memory_check: !self.no_memory_check,
            cooldown_s: self.cooldown,
        }
    }
}

impl SweepArgs {
    /// The sweep these options ask for, in the core's types.
    pub fn order(&self, default_threads: u32) -> Result<SweepOrder> {
        if self.keep && !self.shape_only && self.shape.is_none() {
            return Err(crate::error::DynoError::BadInput(
                "--keep keeps synthetic files: it goes with --shape-only or --shape".into(),
            ));
        }
        let what = match self.resume {
            Some(id) => SweepWhat::Resume(id),
            None => {
                let source = if !self.files.is_empty() {
                    Source::Files(self.files.clone())
                } else if let Some(d) = &self.dir {
                    Source::Dir(d.clone())
                } else if let Some(b) = &self.from {
                    Source::From(b.clone())
                } else if let Some(r) = &self.repo {
                    Source::Repo(r.clone())
                } else if let Some(s) = &self.shape {
                    Source::Shape(s.clone())
                } else {
                    unreachable!("clap requires one source")
                };
                let quality = (!self.no_quality).then_some(QualitySettings {
                    tokens: self.quality_tokens,
                    topk: self.quality_topk,
                });
                SweepWhat::New(Box::new(crate::app::sweep::spec(
                    source,
                    &self.levels,
                    self.opts.request(default_threads),
                    quality,
                    self.shape_only,
                )?))
            }
        };
        Ok(SweepOrder {
            what,
            endpoint: self.endpoint.clone(),
            keep: self.keep,
            fresh: self.fresh,
            measuring: self.opts.measuring(),
            timeout_s: self.opts.timeout_s,
        })
    }
}
