//! Hugging Face: search, list a repo's GGUF files by level, download into
//! the standard cache with resume and sha256 verification, and find models
//! already on disk.
//!
//! The crate `hf-hub` supplies the HTTP client (with the token and user
//! agent set), the repo URLs and the cache layout
//! (`models--owner--name/{blobs,snapshots,refs}`), so Python tools and Dyno
//! share files. What it lacks, Dyno adds here: `HF_TOKEN`, `HF_HUB_CACHE`
//! and `HF_TOKEN_PATH` as the Python client reads them, the tree listing
//! with LFS sha256s and sizes, search, resumable ranged downloads in the
//! Python client's `.incomplete` format, and verification against the hub's
//! sha256 before a file counts as present.

pub mod discover;
pub mod download;
pub mod files;
pub mod header;
pub mod token;

use std::path::{Path, PathBuf};

use hf_hub::api::tokio::{Api, ApiBuilder};
use reqwest::{Response, StatusCode};
use serde::{Deserialize, Serialize};

use crate::error::{DynoError, Result};

pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Where and how to reach the hub, from flags and the ecosystem's variables.
#[derive(Clone)]
pub struct HubConfig {
    pub endpoint: String,
    /// Never printed, stored or logged (see the Debug impl).
    pub token: Option<String>,
    /// `$HF_HUB_CACHE`, else `$HF_HOME/hub`.
    pub cache_dir: PathBuf,
}

impl std::fmt::Debug for HubConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubConfig")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("cache_dir", &self.cache_dir)
            .finish()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `$HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`.
pub fn hf_home() -> PathBuf {
    if let Some(h) = env("HF_HOME") {
        return PathBuf::from(h);
    }
    if let Some(x) = env("XDG_CACHE_HOME") {
        return Path::new(&x).join("huggingface");
    }
    directories::BaseDirs::new()
        .map(|d| d.home_dir().join(".cache").join("huggingface"))
        .unwrap_or_else(|| PathBuf::from(".cache/huggingface"))
}

/// The hub cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`.
pub fn hub_cache() -> PathBuf {
    env("HF_HUB_CACHE")
        .or_else(|| env("HUGGINGFACE_HUB_CACHE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| hf_home().join("hub"))
}

impl HubConfig {
    /// As the Python client resolves them: endpoint from the flag or
    /// `HF_ENDPOINT`; token from `HF_TOKEN`, else the file at
    /// `HF_TOKEN_PATH`, else `$HF_HOME/token`.
    pub fn from_env(endpoint: Option<&str>) -> HubConfig {
        HubConfig::resolve(endpoint, None)
    }

    /// [`HubConfig::from_env`] with the endpoint saved in Dyno's settings
    /// (`saved`) between the environment and the default: a flag or
    /// `HF_ENDPOINT` set for one session still wins over what was saved.
    pub fn resolve(flag: Option<&str>, saved: Option<&str>) -> HubConfig {
        HubConfig {
            endpoint: endpoint_in_force(flag, saved).0,
            token: token::token_in_force().map(|(t, _)| t),
            cache_dir: hub_cache(),
        }
    }
}

/// Where a hub setting in force came from, so a person can tell why a
/// value they saved is not the one used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum SettingSource {
    /// `--endpoint` on the command line.
    Flag,
    /// An environment variable (`HF_ENDPOINT`, `HF_TOKEN`).
    Env,
    /// Dyno's settings (the Settings page, `dyno settings set`).
    Saved,
    /// The token file huggingface_hub keeps (`$HF_HOME/token`).
    File,
    Default,
}

/// The endpoint used and where it came from: the flag, `HF_ENDPOINT`, the
/// saved setting, else huggingface.co.
pub fn endpoint_in_force(flag: Option<&str>, saved: Option<&str>) -> (String, SettingSource) {
    let nonempty = |v: Option<&str>| {
        v.map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let (url, source) = if let Some(f) = nonempty(flag) {
        (f, SettingSource::Flag)
    } else if let Some(e) = env("HF_ENDPOINT") {
        (e, SettingSource::Env)
    } else if let Some(s) = nonempty(saved) {
        (s, SettingSource::Saved)
    } else {
        (DEFAULT_ENDPOINT.to_string(), SettingSource::Default)
    };
    (url.trim_end_matches('/').to_string(), source)
}

/// Check an endpoint a person typed: an http(s) address with a host and
/// nothing after the path, returned without its trailing slash.
pub fn normalize_endpoint(typed: &str) -> Result<String> {
    let t = typed.trim();
    let bad = |why: &str| {
        DynoError::BadInput(format!(
            "'{}' is not a hub address ({why}); type one such as {DEFAULT_ENDPOINT} or \
             http://127.0.0.1:8080 for a mirror",
            t.escape_default()
        ))
    };
    let url = reqwest::Url::parse(t).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("it must start with http:// or https://"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("it must not have a ? or # part"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "a user or password in the address would be sent in the clear; save a token instead",
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

/// A repo as the search lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "HubRepo"))]
pub struct RepoSummary {
    pub id: String,
    #[serde(default)]
    pub downloads: u64,
    #[serde(default)]
    pub likes: u64,
    #[serde(default, rename = "lastModified")]
    pub last_modified: Option<String>,
}

/// `/api/models/{repo}/revision/{rev}`: what Dyno needs of it.
#[derive(Debug, Clone, Deserialize)]
pub struct RepoInfo {
    pub id: String,
    /// The commit the revision points at.
    pub sha: String,
    /// `false`, or "auto"/"manual" for a gated repo.
    #[serde(default)]
    pub gated: serde_json::Value,
}

impl RepoInfo {
    pub fn is_gated(&self) -> bool {
        !matches!(
            self.gated,
            serde_json::Value::Bool(false) | serde_json::Value::Null
        )
    }
}

/// One file of a repo's tree, with its LFS sha256 (the integrity check).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "HubFile"))]
pub struct TreeFile {
    pub path: String,
    pub size: u64,
    /// sha256 of the content, from the LFS pointer; `None` for a plain git
    /// file (GGUFs are always LFS on the hub).
    pub sha256: Option<String>,
}

#[derive(Deserialize)]
struct RawTreeEntry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    lfs: Option<RawLfs>,
}

#[derive(Deserialize)]
struct RawLfs {
    oid: String,
    size: u64,
}

/// The hub client.
pub struct Hub {
    pub config: HubConfig,
    api: Api,
}

impl Hub {
    pub fn new(config: HubConfig) -> Result<Hub> {
        let api = ApiBuilder::new()
            .with_endpoint(config.endpoint.clone())
            .with_token(config.token.clone())
            .with_cache_dir(config.cache_dir.clone())
            .with_progress(false)
            .with_user_agent("dyno", env!("CARGO_PKG_VERSION"))
            .build()
            .map_err(|e| DynoError::BadInput(format!("cannot set up the hub client: {e}")))?;
        Ok(Hub { config, api })
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        self.api.client()
    }

    /// The URL of a file at a commit. Each segment of the path is
    /// percent-encoded (hf-hub pastes it in raw, so a `#` or `?` in a file
    /// name would end the path), as the Python client's `hf_hub_url` does.
    pub fn file_url(&self, repo: &str, commit: &str, path: &str) -> String {
        self.api
            .repo(hf_hub::Repo::with_revision(
                repo.to_string(),
                hf_hub::RepoType::Model,
                commit.to_string(),
            ))
            .url(&encode_path(path))
    }

    /// The cache of one repo (layout shared with the Python client).
    pub fn cache_repo(&self, repo: &str) -> hf_hub::CacheRepo {
        hf_hub::Cache::new(self.config.cache_dir.clone()).repo(hf_hub::Repo::model(repo.into()))
    }

    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> Result<Response> {
        let resp = req
            .send()
            .await
            .map_err(|e| network_error(&self.config.endpoint, &e))?;
        check(resp, what, self.config.token.is_some()).await
    }

    /// GGUF repos matching `query`, most downloaded first.
    pub async fn search(&self, query: &str, limit: u32) -> Result<Vec<RepoSummary>> {
        let url = format!("{}/api/models", self.config.endpoint);
        let limit = limit.to_string();
        let req = self.client().get(url).query(&[
            ("search", query),
            ("filter", "gguf"),
            ("sort", "downloads"),
            ("direction", "-1"),
            ("limit", limit.as_str()),
        ]);
        let resp = self.send(req, "the model search").await?;
        resp.json()
            .await
            .map_err(|e| DynoError::Network(format!("the hub's search answer is unreadable: {e}")))
    }

    /// The account the token belongs to (`/api/whoami-v2`), or `None`
    /// without a token, so Settings can say whether a saved token works
    /// before a gated download finds out.
    pub async fn whoami(&self) -> Result<Option<String>> {
        if self.config.token.is_none() {
            return Ok(None);
        }
        #[derive(Deserialize)]
        struct Who {
            name: String,
        }
        let url = format!("{}/api/whoami-v2", self.config.endpoint);
        let resp = self.send(self.client().get(url), "the token check").await?;
        let who: Who = resp.json().await.map_err(|e| {
            DynoError::Network(format!(
                "the hub's answer about the token is unreadable: {e}"
            ))
        })?;
        Ok(Some(who.name))
    }

    /// A repo's commit at `revision` (e.g. "main").
    pub async fn info(&self, repo: &str, revision: &str) -> Result<RepoInfo> {
        check_repo_id(repo)?;
        let req = self
            .api
            .repo(hf_hub::Repo::with_revision(
                repo.to_string(),
                hf_hub::RepoType::Model,
                revision.to_string(),
            ))
            .info_request();
        let resp = self.send(req, &format!("repo {repo}")).await?;
        let mut info: RepoInfo = resp.json().await.map_err(|e| {
            DynoError::Network(format!("the hub's answer about {repo} is unreadable: {e}"))
        })?;
        // The commit names a cache folder and goes into URLs: a server (or a
        // mirror) must not be able to steer either.
        if info.sha.len() != 40 || !info.sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(DynoError::Network(format!(
                "the hub's commit id for {repo} is malformed ('{}'); is HF_ENDPOINT a Hugging Face hub?",
                info.sha.escape_default()
            )));
        }
        // The cache folder is named after what the user asked for, checked.
        info.id = repo.to_string();
        Ok(info)
    }

    /// Every file of the repo at `commit`, with sizes and sha256s.
    ///
    /// The client sends the token with every request, so a next page on
    /// another origin (scheme, host and port) than the endpoint is refused
    /// rather than followed: a listing that leads elsewhere is not the hub's,
    /// and refusing is simpler to trust than a second, token-less client.
    pub async fn tree(&self, repo: &str, commit: &str) -> Result<Vec<TreeFile>> {
        let url = format!("{}/api/models/{repo}/tree/{commit}", self.config.endpoint);
        let mut req = self.client().get(url).query(&[("recursive", "true")]);
        let mut raw: Vec<RawTreeEntry> = Vec::new();
        // The listing is paginated through `Link: <…>; rel="next"`; a
        // partial list would silently drop parts of split models.
        for _page in 0..1000 {
            let resp = self.send(req, &format!("repo {repo}")).await?;
            let next = next_link(resp.headers())
                .map(|u| same_origin_next(&self.config.endpoint, repo, resp.url(), &u))
                .transpose()?;
            let page: Vec<RawTreeEntry> = resp.json().await.map_err(|e| {
                DynoError::Network(format!("the hub's file list of {repo} is unreadable: {e}"))
            })?;
            raw.extend(page);
            match next {
                Some(u) => req = self.client().get(u),
                None => break,
            }
        }
        let mut out = Vec::new();
        for e in raw.into_iter().filter(|e| e.kind == "file") {
            if !safe_repo_path(&e.path) {
                return Err(DynoError::Network(format!(
                    "the hub listed a file of {repo} with an unsafe path ('{}': it would land outside \
                     the cache, or Windows cannot store it); refusing the listing; ask the repo's \
                     owner to rename the file",
                    e.path.escape_default()
                )));
            }
            out.push(TreeFile {
                size: e.lfs.as_ref().map(|l| l.size).unwrap_or(e.size),
                sha256: e
                    .lfs
                    .map(|l| l.oid.trim_start_matches("sha256:").to_ascii_lowercase()),
                path: e.path,
            });
        }
        Ok(out)
    }
}

/// The absolute URL of a listing's next page (`next` as its `Link` header
/// gives it, relative to `page`), or an error if it leaves the endpoint's
/// origin.
fn same_origin_next(
    endpoint: &str,
    repo: &str,
    page: &reqwest::Url,
    next: &str,
) -> Result<reqwest::Url> {
    let url = page.join(next).map_err(|e| {
        DynoError::Network(format!(
            "the hub's file list of {repo} names an unreadable next page ('{}': {e}); \
             is HF_ENDPOINT a Hugging Face hub?",
            next.escape_default()
        ))
    })?;
    let home = reqwest::Url::parse(endpoint).map(|u| u.origin());
    if home.as_ref().ok() != Some(&url.origin()) {
        return Err(DynoError::Network(format!(
            "the hub's file list of {repo} continues on another server ({}), but Dyno sends \
             requests and the token only to {endpoint}, so it refused the listing; point \
             HF_ENDPOINT (or --endpoint) at the server that serves the whole listing",
            url.origin().ascii_serialization()
        )));
    }
    Ok(url)
}

/// A path inside a repo that stays inside the folder it is joined to, on
/// every OS: relative, no `.` or `..` parts, and no part that Windows would
/// read as something else. There `C:x` is relative to drive C's current
/// folder, `a\b` is two parts, `NUL` is a device, and a trailing dot or
/// space is dropped; the cache is the same on every OS, so such names are
/// refused everywhere.
pub fn safe_repo_path(p: &str) -> bool {
    !p.is_empty() && p.split('/').all(safe_path_part)
}

fn safe_path_part(part: &str) -> bool {
    // Windows reserves a device name with any extension ("nul.gguf").
    let stem = part.split('.').next().unwrap_or(part).trim_end();
    let device = match stem.to_ascii_uppercase().as_bytes() {
        b"CON" | b"PRN" | b"AUX" | b"NUL" => true,
        [b'C', b'O', b'M', d] | [b'L', b'P', b'T', d] => d.is_ascii_digit(),
        _ => false,
    };
    !part.is_empty()
        && part != "."
        && part != ".."
        && !part.ends_with(['.', ' '])
        && !part.chars().any(|c| {
            c.is_ascii_control() || matches!(c, '<' | '>' | ':' | '"' | '\\' | '|' | '?' | '*')
        })
        && !device
}

/// Percent-encodes each `/`-separated part of a repo path, keeping the `/`
/// between them. Everything but RFC 3986's unreserved characters is
/// encoded, so no name can add a query, a fragment or a path part.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(char::from(b))
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The `rel="next"` URL of a `Link` header, if any.
fn next_link(h: &reqwest::header::HeaderMap) -> Option<String> {
    let link = h.get(reqwest::header::LINK)?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

/// "owner/name", nothing else: it goes into URLs and cache folder names.
pub fn check_repo_id(repo: &str) -> Result<()> {
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match repo.split_once('/') {
        Some((o, n)) if ok(o) && ok(n) => Ok(()),
        _ => Err(DynoError::BadInput(format!(
            "'{repo}' is not a Hugging Face repo id; write OWNER/NAME, e.g. bartowski/Llama-3.2-1B-Instruct-GGUF"
        ))),
    }
}

pub(crate) fn network_error(endpoint: &str, e: &reqwest::Error) -> DynoError {
    // The URL can carry nothing secret (the token travels in a header), but
    // keep the message to the host and the cause.
    let mut cause = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        cause = format!("{cause}: {s}");
        src = s.source();
    }
    DynoError::Network(format!(
        "could not reach {endpoint} ({cause}); check the connection, or set HF_ENDPOINT (or --endpoint) for a mirror"
    ))
}

/// Turn a hub error status into a message that says what to do.
pub(crate) async fn check(resp: Response, what: &str, have_token: bool) -> Result<Response> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let code = resp
        .headers()
        .get("x-error-code")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let server = resp
        .headers()
        .get("x-error-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| format!(" (the hub says: {m})"))
        .unwrap_or_default();
    Err(match (status, code.as_str()) {
        (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, "GatedRepo") if have_token => {
            DynoError::BadInput(format!(
                "{what} is gated and this token has no access{server}; accept its terms on the repo's page on huggingface.co with the account of the token, then run again"
            ))
        }
        (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, "GatedRepo") => DynoError::BadInput(format!(
            "{what} is gated{server}; accept its terms on huggingface.co, then give a token with HF_TOKEN=hf_… or save one in $HF_HOME/token (`hf auth login`)"
        )),
        (StatusCode::UNAUTHORIZED, _) if !have_token => DynoError::BadInput(format!(
            "{what} needs a login (private, gated or not there){server}; give a token with HF_TOKEN=hf_… or $HF_HOME/token"
        )),
        (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, _) => DynoError::BadInput(format!(
            "the hub refused the token for {what}{server}; check that HF_TOKEN (or $HF_HOME/token) is valid and has read access"
        )),
        (StatusCode::NOT_FOUND, "RevisionNotFound") => {
            DynoError::NotFound(format!("{what}: no such revision{server}"))
        }
        (StatusCode::NOT_FOUND, "EntryNotFound") => {
            DynoError::NotFound(format!("{what} is not in the repo{server}; `dyno hub ls` lists its files"))
        }
        (StatusCode::NOT_FOUND, _) => DynoError::NotFound(format!(
            "{what} was not found on the hub{server}; check the name (`dyno hub search` finds repos)"
        )),
        (s, _) if s.is_server_error() => DynoError::Network(format!(
            "the hub answered {s} for {what}{server}; try again later"
        )),
        (s, _) => DynoError::Network(format!("the hub answered {s} for {what}{server}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_must_be_owner_slash_name() {
        assert!(check_repo_id("bartowski/Llama-3.2-1B-Instruct-GGUF").is_ok());
        for bad in ["noslash", "a/b/c", "../x", "a/..", "a b/c", "/x", "x/"] {
            assert!(check_repo_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hub_paths_cannot_leave_their_folder() {
        for ok in ["a.gguf", "Q4_K_M/a-00001-of-00002.gguf", "x..y.gguf"] {
            assert!(safe_repo_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a\\b",
            "a\0b",
        ] {
            assert!(!safe_repo_path(bad), "{bad:?}");
        }
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(
            reqwest::header::LINK,
            "<https://hf.co/api/x?cursor=abc>; rel=\"next\""
                .parse()
                .unwrap(),
        );
        assert_eq!(
            next_link(&h).as_deref(),
            Some("https://hf.co/api/x?cursor=abc")
        );
    }

    #[test]
    fn file_names_are_percent_encoded_in_urls() {
        let hub = Hub::new(HubConfig {
            endpoint: "http://127.0.0.1:9".into(),
            token: None,
            cache_dir: "/c".into(),
        })
        .unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            hub.file_url("o/r", commit, "a b#c?.gguf"),
            format!("http://127.0.0.1:9/o/r/resolve/{commit}/a%20b%23c%3F.gguf")
        );
        // Folders keep their '/'; '%' and non-ASCII are encoded too.
        assert_eq!(
            hub.file_url("o/r", commit, "Q4 K/100%-ü.gguf"),
            format!("http://127.0.0.1:9/o/r/resolve/{commit}/Q4%20K/100%25-%C3%BC.gguf")
        );
        assert_eq!(
            hub.file_url("o/r", commit, "Q4_K_M/a-00001-of-00002.gguf"),
            format!("http://127.0.0.1:9/o/r/resolve/{commit}/Q4_K_M/a-00001-of-00002.gguf")
        );
    }

    #[test]
    fn names_windows_cannot_hold_are_refused() {
        for bad in [
            "C:x.gguf",
            "a/C:x.gguf",
            "..",
            "a\\b",
            "a\\b.gguf",
            "a?.gguf",
            "a*.gguf",
            "a<b>.gguf",
            "a|b.gguf",
            "a\"b.gguf",
            "a\tb.gguf",
            "CON",
            "nul.gguf",
            "sub/com1.txt",
            "Lpt9.gguf",
            "a.gguf.",
            "a.gguf ",
        ] {
            assert!(!safe_repo_path(bad), "{bad:?}");
        }
        for ok in [
            "a b#c.gguf",
            "console.gguf",
            "con-Q4.gguf",
            "a%20.gguf",
            "ü.gguf",
        ] {
            assert!(safe_repo_path(ok), "{ok:?}");
        }
    }

    #[test]
    fn next_pages_stay_on_the_endpoints_origin() {
        let page = reqwest::Url::parse("https://hf.co/api/models/o/r/tree/main").unwrap();
        let next = |endpoint: &str, link: &str| {
            same_origin_next(endpoint, "o/r", &page, link).map(|u| u.to_string())
        };
        assert_eq!(
            next("https://hf.co", "https://hf.co/api/x?cursor=1").unwrap(),
            "https://hf.co/api/x?cursor=1"
        );
        assert_eq!(
            next("https://hf.co", "/api/x?cursor=2").unwrap(),
            "https://hf.co/api/x?cursor=2"
        );
        assert!(next("https://hf.co:443", "https://hf.co/api/x").is_ok());
        for other in [
            "http://hf.co/api/x",
            "https://hf.co:8443/api/x",
            "https://evil.example/api/x",
            "https://hf.co.evil.example/api/x",
            "//evil.example/api/x",
        ] {
            let e = next("https://hf.co", other).unwrap_err().to_string();
            assert!(e.contains("HF_ENDPOINT"), "{other}: {e}");
        }
        assert!(next("not a url", "/api/x").is_err());
    }

    #[test]
    fn the_token_never_shows_in_debug_output() {
        let c = HubConfig {
            endpoint: "http://x".into(),
            token: Some("hf_secret".into()),
            cache_dir: "/c".into(),
        };
        let s = format!("{c:?}");
        assert!(!s.contains("hf_secret") && s.contains("redacted"), "{s}");
    }
}
