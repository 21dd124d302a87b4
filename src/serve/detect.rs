//! Which server is behind a URL, and what it says about itself.
//!
//! Each kind has an endpoint only it answers the way it does: llama-server
//! `/props` (with its build and slots), Ollama `/api/version`, LM Studio
//! `/api/v0/models`, vLLM `/version`. Anything else that lists models at
//! `/v1/models` is a generic OpenAI-compatible server. The kind decides
//! which extra request fields are safe to send, and which native timings
//! exist.

use std::time::Duration;

use serde_json::Value;

use super::endpoint::Endpoint;
use crate::error::{DynoError, Result};
pub use crate::vocab::serve::{ServerInfo, ServerKind};

impl ServerKind {
    pub fn label(self) -> &'static str {
        match self {
            ServerKind::LlamaServer => "llama-server",
            ServerKind::Ollama => "Ollama",
            ServerKind::LmStudio => "LM Studio",
            ServerKind::Vllm => "vLLM",
            ServerKind::OpenAi => "OpenAI-compatible",
        }
    }
}

impl ServerInfo {
    /// "llama-server b6000", or the kind alone when it gave no version.
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => format!("{} {v}", self.kind.label()),
            None => self.kind.label().to_string(),
        }
    }
}

/// GET `path` as JSON; `None` for anything but a 2xx JSON answer.
async fn get_json(
    client: &reqwest::Client,
    ep: &Endpoint,
    path: &str,
    key: Option<&str>,
) -> Option<Value> {
    let mut req = client.get(ep.join(path)).timeout(Duration::from_secs(10));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.json().await.ok()
}

/// Ask the server what it is and which model to use. `model` is what the
/// user asked for; without it the server's only (or first) model is used.
pub async fn detect(
    client: &reqwest::Client,
    ep: &Endpoint,
    key: Option<&str>,
    model: Option<&str>,
) -> Result<ServerInfo> {
    // One plain request first, so an unreachable server gets one clear
    // error rather than five.
    let mut probe = client
        .get(ep.join("v1/models"))
        .timeout(Duration::from_secs(10));
    if let Some(k) = key {
        probe = probe.bearer_auth(k);
    }
    let listed = match probe.send().await {
        Err(e) => return Err(unreachable(ep, e)),
        Ok(r) if r.status().as_u16() == 401 || r.status().as_u16() == 403 => {
            return Err(DynoError::BadInput(format!(
                "{} refused the request (HTTP {}); give its API key with --api-key or DYNO_API_KEY",
                ep.as_str(),
                r.status()
            )))
        }
        Ok(r) if r.status().is_success() => r.json::<Value>().await.ok(),
        Ok(_) => None,
    };
    let models: Vec<String> = listed
        .as_ref()
        .and_then(|v| v.get("data"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();

    let mut info = ServerInfo {
        kind: ServerKind::OpenAi,
        version: None,
        model: String::new(),
        models: models.clone(),
        model_path: None,
        n_ctx: None,
        slots: None,
        connect: None,
    };
    if let Some(p) = get_json(client, ep, "props", key).await.filter(|p| {
        p.get("default_generation_settings").is_some() || p.get("total_slots").is_some()
    }) {
        info.kind = ServerKind::LlamaServer;
        info.version = p
            .get("build_info")
            .and_then(Value::as_str)
            // A server built outside a git checkout says "b0-unknown":
            // no build at all, so none is shown rather than that phrase.
            .filter(|v| *v != "b0-unknown")
            .map(str::to_string);
        info.model_path = p
            .get("model_path")
            .and_then(Value::as_str)
            .map(str::to_string);
        info.slots = p.get("total_slots").and_then(Value::as_u64);
        info.n_ctx = p
            .get("default_generation_settings")
            .and_then(|g| g.get("n_ctx"))
            .and_then(Value::as_u64);
    } else if let Some(v) = get_json(client, ep, "api/version", key).await {
        info.kind = ServerKind::Ollama;
        info.version = v.get("version").and_then(Value::as_str).map(str::to_string);
    } else if get_json(client, ep, "api/v0/models", key).await.is_some() {
        info.kind = ServerKind::LmStudio;
    } else if let Some(v) = get_json(client, ep, "version", key)
        .await
        .filter(|_| listed_owner(&listed) == Some("vllm"))
    {
        info.kind = ServerKind::Vllm;
        info.version = v.get("version").and_then(Value::as_str).map(str::to_string);
    } else if listed.is_none() {
        return Err(DynoError::Network(format!(
            "{} answers, but not as an OpenAI-compatible server (no /v1/models); check the URL and port",
            ep.as_str()
        )));
    }
    info.model = choose_model(ep, model, &models, info.kind)?;
    Ok(info)
}

/// The error for a server that cannot be reached. reqwest's own text stops
/// at "error sending request"; the reason (a refused port, a certificate) is
/// in its sources, and a certificate gets the option that fixes it.
fn unreachable(ep: &Endpoint, e: reqwest::Error) -> DynoError {
    let mut chain = String::new();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        chain.push_str(&format!(": {s}"));
        source = s.source();
    }
    let why = format!("{}{chain}", e.without_url());
    let hint = if why.to_ascii_lowercase().contains("certificate") {
        "its TLS certificate was not accepted: for a server whose certificate a private authority signed, give that authority's certificate with --ca-cert FILE (in the app: Trust a certificate…)"
    } else {
        "is it running, and is the URL right?"
    };
    DynoError::Network(format!(
        "cannot reach a server at {}: {why}; {hint}",
        ep.as_str()
    ))
}

/// The model to measure: the one asked for, else the server's only one (or
/// llama-server's first, which is the one it serves).
fn choose_model(
    ep: &Endpoint,
    model: Option<&str>,
    models: &[String],
    kind: ServerKind,
) -> Result<String> {
    Ok(match model {
        Some(m) => m.to_string(),
        None => match models {
            [only] => only.clone(),
            [] => {
                return Err(DynoError::BadInput(format!(
                    "{} lists no models; name one with --model",
                    ep.as_str()
                )))
            }
            [first, ..] if kind == ServerKind::LlamaServer => first.clone(),
            many => {
                return Err(DynoError::BadInput(format!(
                    "{} serves {} models; pick one with --model ({})",
                    ep.as_str(),
                    many.len(),
                    many.join(", ")
                )))
            }
        },
    })
}

fn listed_owner(listed: &Option<Value>) -> Option<&str> {
    listed
        .as_ref()?
        .get("data")?
        .get(0)?
        .get("owned_by")?
        .as_str()
}
