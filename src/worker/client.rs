//! The parent side of a worker: spawn `dyno worker`, feed it a plan, read its
//! events, and survive however it ends.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::{mpsc, watch};

use super::protocol::{Event, WorkerRequest};
use crate::vocab::failure::FailureCode;

/// How a worker ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// Sent `Done` and exited cleanly.
    Done,
    /// Reported a fatal error (`code` from the worker, e.g.
    /// "unsupported_architecture") and exited.
    Fatal { code: FailureCode, message: String },
    /// Died without finishing: a signal, an abort, an unexpected exit.
    Crashed(String),
    /// Sent nothing for longer than the idle timeout and was killed.
    TimedOut(Duration),
    /// Killed because the user cancelled.
    Cancelled,
}

/// Why a worker's task failed: the code stored with the run or level, and
/// the message shown to the user.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerFailure {
    pub code: FailureCode,
    pub message: String,
}

impl WorkerFailure {
    pub fn new(code: FailureCode, message: impl Into<String>) -> Self {
        WorkerFailure {
            code,
            message: message.into(),
        }
    }

    /// The user cancelled: callers stop rather than go on to the next item.
    pub fn is_cancelled(&self) -> bool {
        self.code == FailureCode::Cancelled
    }
}

impl Ended {
    /// The failure this end means, or `None` for a clean `Done`. `what`
    /// names the worker's task in the timeout message ("worker",
    /// "quantizer", "quality pass"), so every supervisor words the same end
    /// the same way.
    pub fn failure(self, what: &str) -> Option<WorkerFailure> {
        let (code, message) = match self {
            Ended::Done => return None,
            Ended::Fatal { code, message } => (code, message),
            Ended::Crashed(why) => (FailureCode::Crashed, why),
            Ended::TimedOut(d) => (
                FailureCode::TimedOut,
                format!(
                    "the {what} reported nothing for {} s and was killed",
                    d.as_secs()
                ),
            ),
            Ended::Cancelled => (FailureCode::Cancelled, "cancelled by the user".to_string()),
        };
        Some(WorkerFailure { code, message })
    }
}

/// Settings for spawning workers.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The executable that has the `worker` subcommand (normally this one).
    pub exe: PathBuf,
    /// Longest silence allowed between two events. Every repetition sends an
    /// event, so this bounds one repetition, not the whole run.
    pub idle_timeout: Duration,
}

/// What a benchmark, a sweep's quality pass and the quantizer start their
/// work in: a worker that takes one request and sends events until it ends.
/// The real one is a process of Dyno's own executable ([`WorkerOptions`]);
/// unit tests give a scripted one, so the supervisor, the recorder and the
/// sweep's runner are driven through events, a crash, a stall or a cancel
/// without llama.cpp.
pub trait Launch: Send + Sync {
    /// Start the work; the future ends when the worker has, saying how.
    fn launch(
        &self,
        request: WorkerRequest,
        cancel: Cancel,
        events: mpsc::UnboundedSender<Event>,
    ) -> Pin<Box<dyn Future<Output = Ended> + Send + 'static>>;
}

impl Launch for WorkerOptions {
    fn launch(
        &self,
        request: WorkerRequest,
        cancel: Cancel,
        events: mpsc::UnboundedSender<Event>,
    ) -> Pin<Box<dyn Future<Output = Ended> + Send + 'static>> {
        Box::pin(run(request, self.clone(), cancel, events))
    }
}

impl WorkerOptions {
    pub fn current(idle_timeout: Duration) -> std::io::Result<Self> {
        Ok(WorkerOptions {
            exe: std::env::current_exe()?,
            idle_timeout,
        })
    }
}

/// A cancel switch shared by everything a command runs.
#[derive(Clone)]
pub struct Cancel(Arc<watch::Sender<bool>>);

impl Default for Cancel {
    fn default() -> Self {
        Cancel(Arc::new(watch::channel(false).0))
    }
}

impl Cancel {
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }
    pub async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                libc::SIGABRT => "SIGABRT, an abort such as a failed GGML_ASSERT",
                libc::SIGSEGV => "SIGSEGV, a segmentation fault",
                libc::SIGKILL => "SIGKILL, killed, possibly by the out-of-memory killer",
                libc::SIGBUS => {
                    "SIGBUS, a bus error (the model file may have changed while mapped)"
                }
                libc::SIGILL => "SIGILL, an illegal instruction (a build for another CPU?)",
                libc::SIGFPE => "SIGFPE, an arithmetic fault",
                _ => "a signal",
            };
            return format!("the worker was killed by signal {sig} ({name})");
        }
    }
    match status.code() {
        Some(c) => format!("the worker exited with code {c} before finishing"),
        None => "the worker ended before finishing".to_string(),
    }
}

/// Run one worker to its end, sending each event to `events` as it arrives.
///
/// Events go through a channel rather than a callback so the consumer can
/// await database writes while this future keeps watching the worker's
/// silence, the cancel switch and its exit.
pub async fn run(
    plan: WorkerRequest,
    opts: WorkerOptions,
    cancel: Cancel,
    events: mpsc::UnboundedSender<Event>,
) -> Ended {
    let mut cmd = worker_command(&opts.exe);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ended::Crashed(format!(
                "could not start the worker {}: {e}",
                opts.exe.display()
            ))
        }
    };
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");

    // Keep the worker's last log lines: llama.cpp explains its aborts there.
    let (tail, stderr_task) = keep_tail(stderr);

    let mut line = serde_json::to_string(&plan).expect("plan serialises");
    line.push('\n');
    if let Err(e) = stdin.write_all(line.as_bytes()).await {
        let _ = child.kill().await;
        return Ended::Crashed(format!("could not send the plan to the worker: {e}"));
    }
    // stdin stays open: closing it tells the worker to exit.

    let mut lines = BufReader::new(stdout).lines();
    let mut done = false;
    let mut fatal = None;
    let ended = loop {
        tokio::select! {
            next = lines.next_line() => match next {
                Ok(Some(l)) => match serde_json::from_str::<Event>(&l) {
                    Ok(ev) => {
                        match &ev {
                            Event::Done { .. } => done = true,
                            Event::Fatal { code, message } => fatal = Some((code.clone(), message.clone())),
                            _ => {}
                        }
                        // A dropped receiver means nobody records events any more;
                        // the worker is then stopped by the cancel switch.
                        let _ = events.send(ev);
                    }
                    Err(_) => tracing::warn!("worker wrote a line that is not an event: {l}"),
                },
                _ => break None,
            },
            _ = tokio::time::sleep(opts.idle_timeout) => break Some(Ended::TimedOut(opts.idle_timeout)),
            _ = cancel.cancelled() => break Some(Ended::Cancelled),
        }
    };
    if let Some(e) = ended {
        let _ = child.kill().await;
        stderr_task.abort();
        return e;
    }
    drop(stdin);
    let status = match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
        Ok(Ok(s)) => Some(s),
        _ => {
            let _ = child.kill().await;
            None
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), stderr_task).await;
    if let Some((code, message)) = fatal {
        return Ended::Fatal { code, message };
    }
    match status {
        Some(s) if s.success() && done => Ended::Done,
        Some(s) => Ended::Crashed(crash_message(s, &tail)),
        None => Ended::Crashed("the worker did not exit after finishing".into()),
    }
}

/// The command that starts a worker: its pipes, and on Linux its death with
/// the parent and its own process group.
fn worker_command(exe: &std::path::Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are allowed: it makes two system calls
    // (prctl, setpgid), allocates nothing and takes no lock.
    #[cfg(target_os = "linux")]
    unsafe {
        cmd.pre_exec(|| {
            // Die with the parent, whichever way it goes.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // Own process group: a terminal's Ctrl-C reaches only the parent,
            // which then records a cancel rather than a crash.
            libc::setpgid(0, 0);
            Ok(())
        });
    }
    cmd
}

/// The worker's last log lines.
type Tail = Arc<Mutex<VecDeque<String>>>;

/// Logs the worker's stderr and keeps its last 20 lines.
fn keep_tail(stderr: tokio::process::ChildStderr) -> (Tail, tokio::task::JoinHandle<()>) {
    let tail: Tail = Arc::default();
    let tail_w = tail.clone();
    let task = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            tracing::debug!(target: "dyno::worker", "{l}");
            let mut t = tail_w.lock().unwrap_or_else(|e| e.into_inner());
            if t.len() >= 20 {
                t.pop_front();
            }
            t.push_back(l);
        }
    });
    (tail, task)
}

/// How a worker that exited unfinished ended, with its last three log lines.
fn crash_message(s: std::process::ExitStatus, tail: &Tail) -> String {
    let last: Vec<String> = tail
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .rev()
        .take(3)
        .rev()
        .cloned()
        .collect();
    let mut msg = describe_status(s);
    // ggml's RPC client aborts when a server goes away mid-test; say which
    // machine to look at before the raw lines.
    if last.iter().any(|l| l.contains("Remote RPC server crashed")) {
        msg.push_str(
            ": an RPC server stopped answering (it was stopped or died, or the network \
             dropped); restart it and measure again",
        );
    }
    if !last.is_empty() {
        msg.push_str(&format!("; last log lines: {}", last.join(" | ")));
    }
    msg
}

/// Start `dyno worker --probe` and return its `Ready` event: llama.cpp's
/// build, backend and devices, without loading a model. `None` when the
/// worker cannot start or says nothing within `timeout`.
pub async fn probe(exe: &std::path::Path, timeout: Duration) -> Option<Event> {
    let mut cmd = Command::new(exe);
    cmd.args(["worker", "--probe"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().ok()?;
    let stdout = child.stdout.take()?;
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(timeout, lines.next_line())
        .await
        .ok()?
        .ok()??;
    let _ = tokio::time::timeout(timeout, child.wait()).await;
    serde_json::from_str(&line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_is_one_failure_worded_for_its_task() {
        assert_eq!(Ended::Done.failure("worker"), None);
        let f = Ended::TimedOut(Duration::from_secs(30))
            .failure("quantizer")
            .unwrap();
        assert_eq!(f.code, FailureCode::TimedOut);
        assert_eq!(
            f.message,
            "the quantizer reported nothing for 30 s and was killed"
        );
        let f = Ended::Cancelled.failure("worker").unwrap();
        assert!(f.is_cancelled());
        assert_eq!(f.message, "cancelled by the user");
        let f = Ended::Crashed("signal 6".into()).failure("worker").unwrap();
        assert_eq!(
            (f.code, f.message.as_str()),
            (FailureCode::Crashed, "signal 6")
        );
        let f = Ended::Fatal {
            code: FailureCode::from("load_failed"),
            message: "no".into(),
        }
        .failure("worker")
        .unwrap();
        assert_eq!(f.code, FailureCode::LoadFailed);
        assert!(!f.is_cancelled());
    }
}
