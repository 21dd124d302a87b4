//! Benchmarks of a running server: any OpenAI-compatible endpoint
//! (llama-server, Ollama, LM Studio, vLLM, …), measured from the client
//! with the same care as the in-process benchmark, and stored beside it.
//!
//! A plan is a grid of tests: prompt length × generation length × context
//! depth × concurrency. Each test sends its requests (`concurrency` at a
//! time), streams every reply, and times it ([`request`]); the test's row
//! is committed when its requests end, so a killed Dyno keeps every test
//! it finished. A request that fails (HTTP error, malformed stream, a
//! stall, a cut) is recorded with its reason and the test goes on; a test
//! whose requests all failed is a failed test, and the run goes on to the
//! next.
//!
//! Chat against Ollama takes Ollama's native `/api/chat` rather than its
//! OpenAI translation of it, since only the native route reports Ollama's
//! own prefill and decode timings ([`ollama`]).
//!
//! Layer: a task beside `bench`. It uses the store, the bundled text and
//! the vocabulary, and nothing of the engine: the server is measured
//! through HTTP only.

pub mod connect;
pub mod detect;
pub mod endpoint;
pub mod ollama;
pub mod prompt;
pub mod report;
pub mod request;
pub mod sample;
pub mod sse;
pub mod stats;
pub mod summary;
pub mod tokens;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use detect::{ServerInfo, ServerKind};
pub use endpoint::Endpoint;
pub use request::{Api, RequestSample, TokenSource};
pub use summary::{Slo, TestSummary};

use crate::error::Result;
use crate::store::{NewServerResult, NewServerRun, Store};
use crate::vocab::failure::FailureCode;
pub use crate::vocab::serve::ServePlan;
use crate::vocab::status::{ResultStatus, RunStatus};
use prompt::Prompts;
use request::RequestSpec;

/// One test of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServeTest {
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub concurrency: u32,
}

impl ServeTest {
    /// `pp512+tg128 @d0 c1`, in llama-bench's words where they exist.
    pub fn name(&self) -> String {
        format!(
            "pp{}+tg{} @d{} c{}",
            self.n_prompt, self.n_gen, self.n_depth, self.concurrency
        )
    }
}

/// The longest `--stall` or `--timeout` a plan may set: a day.
pub const MAX_WAIT_S: u32 = 86_400;

impl ServePlan {
    /// Check the plan before anything is sent.
    pub fn validate(&self) -> Result<()> {
        use crate::error::DynoError;
        let zero = |v: &[u32]| v.is_empty() || v.contains(&0);
        if zero(&self.n_prompt) || zero(&self.n_gen) || zero(&self.concurrency) {
            return Err(DynoError::BadInput(
                "prompt lengths (-p), generation lengths (-n) and concurrencies (-c) must be at least 1".into(),
            ));
        }
        if self.depths.is_empty() || self.requests == 0 {
            return Err(DynoError::BadInput(
                "give at least one depth (-d) and one request per test (-r)".into(),
            ));
        }
        // Bounded, not only positive: a clock cannot hold "inf", and a
        // deadline past the end of time panics when it is set, after the
        // run's row exists.
        let secs = |v: f64| v > 0.0 && v <= f64::from(MAX_WAIT_S);
        if !(secs(self.stall_s) && secs(self.timeout_s)) {
            return Err(DynoError::BadInput(format!(
                "--stall and --timeout are seconds from above 0 to {MAX_WAIT_S} (a day); got {} and {}",
                self.stall_s, self.timeout_s
            )));
        }
        Ok(())
    }

    /// Every test, depth by depth, then prompt and generation lengths, then
    /// concurrency (so a concurrency sweep sits together).
    pub fn tests(&self) -> Vec<ServeTest> {
        let mut out = Vec::new();
        for &n_depth in &self.depths {
            for &n_prompt in &self.n_prompt {
                for &n_gen in &self.n_gen {
                    for &concurrency in &self.concurrency {
                        out.push(ServeTest {
                            n_prompt,
                            n_gen,
                            n_depth,
                            concurrency,
                        });
                    }
                }
            }
        }
        out
    }
}

/// A test as measured: its figures, and every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServeResult {
    pub test: String,
    #[serde(flatten)]
    pub spec: ServeTest,
    pub status: ResultStatus,
    pub error: Option<String>,
    pub summary: TestSummary,
    pub samples: Vec<RequestSample>,
}

/// Progress, for the CLI's lines and the app's events.
pub enum ServeEvent<'a> {
    Detected(&'a ServerInfo),
    Warning(&'a str),
    TestStarted {
        test: &'a ServeTest,
        index: usize,
        total: usize,
    },
    Request {
        done: usize,
        total: usize,
    },
    TestFinished(&'a ServeResult),
}

/// What a caller needs to run a plan.
pub struct ServeTarget<'a> {
    pub endpoint: &'a Endpoint,
    pub model: Option<&'a str>,
    /// From `--api-key` or the environment; sent, never stored.
    pub api_key: Option<&'a str>,
    /// A GGUF whose tokenizer counts the tokens of requests the server
    /// reports no counts for (`--tokenizer`, else `--engine`'s file).
    pub tokenizer: Option<&'a std::path::Path>,
    /// PEM certificates of authorities to trust besides the public ones
    /// (`--ca-cert`, read by [`connect::read_ca`]).
    pub ca_pem: Option<&'a [u8]>,
}

/// Run the plan against the server and store it. Returns the run id and
/// its tests. Cancelling (`cancel`) ends the test in flight as cancelled
/// and keeps what was stored.
pub async fn run(
    store: &Store,
    machine_id: i64,
    target: &ServeTarget<'_>,
    plan: &ServePlan,
    cancel: &crate::worker::client::Cancel,
    on_event: &mut dyn FnMut(ServeEvent<'_>),
) -> Result<(i64, Vec<ServeResult>)> {
    plan.validate()?;
    // No idle connections are kept: llama-server closes a streamed
    // request's connection, and a pooled one reused after that fails. Every
    // request opens its own, so each TTFT holds the same connection set-up
    // (on loopback, well under a millisecond), as a fresh client's would;
    // `connect::probe` measures that set-up and the report states it.
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0);
    if let Some(pem) = target.ca_pem {
        for c in reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
            crate::error::DynoError::BadInput(format!("--ca-cert: not a PEM certificate: {e}"))
        })? {
            builder = builder.add_root_certificate(c);
        }
    }
    let client = builder
        .build()
        .map_err(|e| crate::error::DynoError::Network(format!("cannot set up HTTP: {e}")))?;
    if let Some(w) = target.endpoint.warning() {
        on_event(ServeEvent::Warning(&w));
    }
    let mut info = detect::detect(&client, target.endpoint, target.api_key, target.model).await?;
    // Each request opens its own connection (above), so each TTFT holds
    // its set-up: measured apart, so the report can say how much.
    info.connect = connect::probe(target.endpoint, target.ca_pem, 5).await;
    on_event(ServeEvent::Detected(&info));
    let run_id = store
        .create_server_run(&NewServerRun {
            machine_id,
            endpoint: target.endpoint.as_str(),
            server_kind: info.kind.label(),
            server_version: info.version.as_deref(),
            model: &info.model,
            server: &info,
            plan,
        })
        .await?;
    let mut ctx = Session {
        client,
        target,
        info: &info,
        plan,
        run_id,
        prompts: Prompts::default(),
        tokenizer_failed: false,
    };
    let out = ctx.run_tests(store, cancel, on_event).await;
    let (status, failure) = match &out {
        Err(e) => (
            RunStatus::Failed,
            Some((FailureCode::Failed, e.to_string())),
        ),
        Ok(_) if cancel.is_cancelled() => (
            RunStatus::Cancelled,
            Some((FailureCode::Cancelled, "cancelled".to_string())),
        ),
        Ok(rs) if rs.iter().all(|r| r.status == ResultStatus::Ok) => (RunStatus::Ok, None),
        Ok(rs) => {
            let first = rs.iter().find(|r| r.status != ResultStatus::Ok);
            let code = first
                .and_then(|r| r.samples.iter().find_map(|s| s.error_code.clone()))
                .unwrap_or(FailureCode::TestFailed);
            let why = first
                .and_then(|r| r.error.clone())
                .unwrap_or_else(|| "a test failed".into());
            (RunStatus::Failed, Some((code, why)))
        }
    };
    store
        .finish_server_run(
            run_id,
            status,
            failure.as_ref().map(|f| (&f.0, f.1.as_str())),
        )
        .await?;
    out.map(|r| (run_id, r))
}

struct Session<'a> {
    client: reqwest::Client,
    target: &'a ServeTarget<'a>,
    info: &'a ServerInfo,
    plan: &'a ServePlan,
    run_id: i64,
    prompts: Prompts,
    /// The tokenizer failed once; it is not tried again.
    tokenizer_failed: bool,
}

impl Session<'_> {
    async fn run_tests(
        &mut self,
        store: &Store,
        cancel: &crate::worker::client::Cancel,
        on_event: &mut dyn FnMut(ServeEvent<'_>),
    ) -> Result<Vec<ServeResult>> {
        self.calibrate().await;
        let tests = self.plan.tests();
        let mut out = Vec::new();
        for (i, t) in tests.iter().enumerate() {
            if cancel.is_cancelled() {
                break;
            }
            on_event(ServeEvent::TestStarted {
                test: t,
                index: i,
                total: tests.len(),
            });
            let (mut samples, prompts) = self.run_test(i, t, cancel, on_event).await;
            self.count_with_tokenizer(&mut samples, &prompts, cancel, on_event)
                .await;
            // From the first send to the last request's end.
            let wall_ms = samples
                .iter()
                .map(|s| s.start_ms + s.e2e_ms)
                .fold(0.0, f64::max);
            let summary = summary::summarize(&samples, wall_ms, &self.plan.slo);
            let (status, error) = if cancel.is_cancelled() && summary.ok < samples.len() {
                (ResultStatus::Cancelled, Some("cancelled".to_string()))
            } else if summary.ok == 0 {
                let why = summary
                    .errors
                    .first()
                    .map(|e| e.0.clone())
                    .unwrap_or_else(|| "no request was sent".into());
                (ResultStatus::Failed, Some(why))
            } else {
                let why = (summary.failed > 0).then(|| {
                    format!(
                        "{} of {} requests failed: {}",
                        summary.failed, summary.requests, summary.errors[0].0
                    )
                });
                (ResultStatus::Ok, why)
            };
            let r = ServeResult {
                test: t.name(),
                spec: *t,
                status,
                error,
                summary,
                samples,
            };
            store
                .add_server_result(&NewServerResult {
                    run_id: self.run_id,
                    test: &r.test,
                    n_prompt: t.n_prompt,
                    n_gen: t.n_gen,
                    n_depth: t.n_depth,
                    concurrency: t.concurrency,
                    prefix_cache: self.plan.prefix_cache,
                    status: r.status,
                    error: r.error.as_deref(),
                    wall_ms,
                    requests: &r.samples,
                })
                .await?;
            on_event(ServeEvent::TestFinished(&r));
            out.push(r);
        }
        Ok(out)
    }

    fn spec(&self, prompt: String, max_tokens: u32, cache_prompt: bool) -> RequestSpec {
        RequestSpec {
            url: self
                .target
                .endpoint
                .join(self.plan.api.path_for(self.info.kind)),
            api: self.plan.api,
            kind: self.info.kind,
            model: self.info.model.clone(),
            prompt,
            max_tokens,
            cache_prompt,
            api_key: self.target.api_key.map(str::to_string),
            stall: Duration::from_secs_f64(self.plan.stall_s),
            deadline: Duration::from_secs_f64(self.plan.timeout_s),
        }
    }

    /// Two short requests first: they warm the server (a first request
    /// pays for lazy allocations), and their prompt counts teach the prompt
    /// cutter this model's tokens per word and its template's overhead.
    async fn calibrate(&mut self) {
        let mut points = Vec::new();
        for tokens in [64, 256] {
            let tag = format!("dyno {} warm-up {tokens}", self.run_id);
            let prompt = self.prompts.tagged(&tag, tokens);
            let words = prompt.split_whitespace().count();
            let s = request::send(&self.client, &self.spec(prompt, 2, false), Instant::now()).await;
            if let Some(n) = s.prompt_tokens {
                points.push((words, n));
            }
        }
        if let Some(&a) = points.first() {
            self.prompts.calibrate(a, points.get(1).copied());
        }
    }

    /// Send a test's requests, `concurrency` at a time, and return them in
    /// the order they were sent.
    async fn run_test(
        &self,
        index: usize,
        t: &ServeTest,
        cancel: &crate::worker::client::Cancel,
        on_event: &mut dyn FnMut(ServeEvent<'_>),
    ) -> (Vec<RequestSample>, Vec<String>) {
        let n = self.plan.requests.max(t.concurrency) as usize;
        let tag = |q: usize| format!("dyno {} t{index} q{q}", self.run_id);
        // Cached-prefix mode: one shared context, sent once so the server
        // holds it, then each request adds its own prompt after it.
        let context = (self.plan.prefix_cache && t.n_depth > 0).then(|| {
            self.prompts
                .unique(&format!("dyno {} t{index} context", self.run_id), t.n_depth)
        });
        if let Some(c) = &context {
            let _ =
                request::send(&self.client, &self.spec(c.clone(), 1, true), Instant::now()).await;
        }
        let specs: Vec<RequestSpec> = (0..n)
            .map(|q| match &context {
                Some(c) => format!("{c}\n\n{}", self.prompts.tagged(&tag(q), t.n_prompt)),
                None => self.prompts.unique(&tag(q), t.n_depth + t.n_prompt),
            })
            .map(|p| self.spec(p, t.n_gen, self.plan.prefix_cache))
            .collect();
        let batch_t0 = Instant::now();
        let mut next = 0usize;
        let mut done: Vec<(usize, RequestSample)> = Vec::with_capacity(n);
        let mut in_flight = tokio::task::JoinSet::new();
        let client = self.client.clone();
        let launch = |set: &mut tokio::task::JoinSet<(usize, RequestSample)>, i: usize| {
            let spec = specs[i].clone();
            let client = client.clone();
            set.spawn(async move {
                let s = request::send(&client, &spec, batch_t0).await;
                (i, s)
            });
        };
        while next < n && in_flight.len() < t.concurrency as usize {
            launch(&mut in_flight, next);
            next += 1;
        }
        loop {
            let joined = tokio::select! {
                j = in_flight.join_next() => j,
                _ = cancel.cancelled() => {
                    in_flight.abort_all();
                    break;
                }
            };
            let Some(j) = joined else { break };
            if let Ok(r) = j {
                done.push(r);
                on_event(ServeEvent::Request {
                    done: done.len(),
                    total: n,
                });
            }
            if next < n && !cancel.is_cancelled() {
                launch(&mut in_flight, next);
                next += 1;
            }
        }
        done.sort_by_key(|d| d.0);
        if context.is_some() {
            for (_, s) in &mut done {
                s.shared_prefix_tokens = Some(u64::from(t.n_depth));
            }
        }
        let prompts = done.iter().map(|d| specs[d.0].prompt.clone()).collect();
        (done.into_iter().map(|d| d.1).collect(), prompts)
    }

    /// Count the tokens of the requests the server gave no counts for
    /// (prompts[i] is what samples[i] sent) with the model's tokenizer, when
    /// one is at hand. A tokenizer that fails is named in a warning once and
    /// the chunk counts stand. The generated text is dropped either way: it
    /// is never stored.
    async fn count_with_tokenizer(
        &mut self,
        samples: &mut [RequestSample],
        prompts: &[String],
        cancel: &crate::worker::client::Cancel,
        on_event: &mut dyn FnMut(ServeEvent<'_>),
    ) {
        let uncounted: Vec<usize> = (0..samples.len())
            .filter(|&i| samples[i].ok() && samples[i].completion_tokens.is_none())
            .collect();
        if let (Some(model), false, false) = (
            self.target.tokenizer,
            uncounted.is_empty(),
            self.tokenizer_failed,
        ) {
            let texts = uncounted
                .iter()
                .flat_map(|&i| [prompts[i].clone(), std::mem::take(&mut samples[i].text)])
                .collect();
            match tokens::count(model, texts, cancel).await {
                Ok(counts) => {
                    for (k, &i) in uncounted.iter().enumerate() {
                        let s = &mut samples[i];
                        s.prompt_tokens = s.prompt_tokens.or(Some(counts[2 * k]));
                        s.completion_tokens = Some(counts[2 * k + 1]);
                        s.token_source = Some(TokenSource::Tokenizer);
                    }
                }
                Err(e) => {
                    self.tokenizer_failed = true;
                    on_event(ServeEvent::Warning(&format!(
                        "{e}; the server gave no token counts, so tokens are counted as content chunks"
                    )));
                }
            }
        }
        for s in samples.iter_mut() {
            s.text = String::new();
        }
    }
}
