//! Lend this machine's devices to other machines' benchmarks from the app:
//! the Settings page's RPC server, which is `dyno rpc-server` run as a child
//! of the app (its executable takes the CLI's `rpc-server`, as it takes
//! `worker`). A child process, not a thread, because llama.cpp's server
//! never returns and aborts on a client's malformed request: either would
//! take the app with it.
//!
//! One server per app. It dies with the app (Linux: the parent-death
//! signal), and the page can stop it.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::error::{DynoError, Result};
use crate::vocab::{check_rpc_endpoint, Device};

/// How long the server may take to load its backends and say what it
/// serves.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What the running server serves, as it said when it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RpcServing {
    /// HOST:PORT, what other machines give to `--rpc` (with this machine's
    /// address in place of 0.0.0.0).
    pub endpoint: String,
    pub llama_cpp_build: String,
    pub threads: u32,
    pub devices: Vec<Device>,
    pub pid: u32,
}

/// The app's server: the child and what it said.
static SERVER: Mutex<Option<(Child, RpcServing)>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<(Child, RpcServing)>> {
    SERVER.lock().unwrap_or_else(|e| e.into_inner())
}

/// The server, when one is running; a server that has exited is forgotten.
pub fn status() -> Option<RpcServing> {
    let mut g = lock();
    if let Some((child, _)) = g.as_mut() {
        if !matches!(child.try_wait(), Ok(None)) {
            *g = None;
        }
    }
    g.as_ref().map(|(_, s)| s.clone())
}

/// Start serving at HOST:PORT with `threads` CPU threads (the machine's
/// default when `None`), every GPU or else the CPU; the one already running
/// is returned as it is when it serves the same endpoint, and must be
/// stopped first otherwise.
pub async fn start(host: &str, port: u16, threads: Option<u32>) -> Result<RpcServing> {
    let endpoint = format!("{}:{port}", host.trim());
    check_rpc_endpoint(&endpoint).map_err(DynoError::BadInput)?;
    if let Some(s) = status() {
        if s.endpoint == endpoint {
            return Ok(s);
        }
        return Err(DynoError::BadInput(format!(
            "an RPC server is already serving at {}; stop it first",
            s.endpoint
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| DynoError::io("cannot find Dyno's executable to start the RPC server", e))?;
    let mut cmd = Command::new(exe);
    cmd.args(["rpc-server", "--json", "--host", host.trim(), "--port"])
        .arg(port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(t) = threads {
        cmd.arg("--threads").arg(t.max(1).to_string());
    }
    // SAFETY: runs in the forked child before exec, where only
    // async-signal-safe calls are allowed: one prctl, no allocation, no lock.
    #[cfg(target_os = "linux")]
    unsafe {
        cmd.pre_exec(|| {
            // Serve no longer than the app lives.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| DynoError::io("cannot start the RPC server", e))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let mut line = String::new();
    let said =
        tokio::time::timeout(START_TIMEOUT, BufReader::new(stdout).read_line(&mut line)).await;
    let hello = match said {
        Ok(Ok(n)) if n > 0 => serde_json::from_str::<serde_json::Value>(&line).ok(),
        _ => None,
    };
    let Some(hello) = hello else {
        let _ = child.kill().await;
        let mut why = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), stderr.read_to_string(&mut why)).await;
        let why = why
            .lines()
            .rev()
            .find(|l| l.starts_with("dyno rpc-server:") || l.starts_with("error:"))
            .map(|l| l.trim_start_matches("dyno rpc-server: ").to_string())
            .unwrap_or_else(|| "it exited without saying why".into());
        return Err(DynoError::Worker(format!(
            "the RPC server did not start at {endpoint}: {why}"
        )));
    };
    // Its warnings (a listening address other than this machine's own) and
    // llama.cpp's lines go to the app's log rather than a full pipe.
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            tracing::info!(target: "dyno::rpc_server", "{l}");
        }
    });
    let serving = RpcServing {
        endpoint,
        llama_cpp_build: hello["llama_cpp_build"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        threads: hello["threads"].as_u64().unwrap_or(0) as u32,
        devices: serde_json::from_value(hello["devices"].clone()).unwrap_or_default(),
        pid: child.id().unwrap_or(0),
    };
    *lock() = Some((child, serving.clone()));
    Ok(serving)
}

/// Stop the server, if one runs; true when one was stopped.
pub async fn stop() -> bool {
    let taken = lock().take();
    match taken {
        Some((mut child, _)) => {
            let _ = child.kill().await;
            true
        }
        None => false,
    }
}
