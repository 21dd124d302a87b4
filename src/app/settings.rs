//! Settings a person changes in the app's Settings page or with
//! `dyno settings` / `dyno hub login`: the Hugging Face endpoint (saved in
//! Dyno's database) and the token (saved where huggingface_hub keeps it,
//! never in the database). Each answer says which value is in force and
//! why, because an environment variable silently beating a saved value is
//! the confusion this page exists to prevent.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::Result;
use crate::hub::{self, token, HubConfig, SettingSource, DEFAULT_ENDPOINT};
use crate::store::Store;

/// The settings key of the hub endpoint.
pub const HUB_ENDPOINT: &str = "hub.endpoint";

/// The hub settings as they stand.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HubSettings {
    /// The endpoint requests go to now.
    pub endpoint: String,
    /// Why that one: `env` (HF_ENDPOINT), `saved` or `default`.
    pub endpoint_source: SettingSource,
    /// What Settings saved, even when HF_ENDPOINT overrides it.
    pub saved_endpoint: Option<String>,
    pub default_endpoint: String,
    pub token: TokenStatus,
    /// Where downloads go (`$HF_HUB_CACHE`, else `$HF_HOME/hub`).
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub cache_dir: PathBuf,
}

/// Whether a token is in force, never the token itself.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TokenStatus {
    pub present: bool,
    /// `env` (HF_TOKEN) or `file`; null without a token.
    pub source: Option<SettingSource>,
    /// "hf_…x7Qz": enough to tell tokens apart.
    pub masked: Option<String>,
    /// The token file, where Save writes.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub file: PathBuf,
    /// Whether that file exists (it is ignored while HF_TOKEN is set).
    pub file_exists: bool,
}

/// What "Test connection" found.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HubCheck {
    pub endpoint: String,
    /// The search answered.
    pub reachable: bool,
    /// The token's account, when a token is in force and the hub accepted it.
    pub user: Option<String>,
    /// A sentence for the person: what worked, or what failed and what to do.
    pub message: String,
}

/// The hub client as Dyno uses it: `flag` (`--endpoint`), else HF_ENDPOINT,
/// else the saved endpoint, else huggingface.co.
pub async fn hub_config(store: &Store, flag: Option<&str>) -> Result<HubConfig> {
    let saved = store.setting(HUB_ENDPOINT).await?;
    Ok(HubConfig::resolve(flag, saved.as_deref()))
}

pub async fn hub_settings(store: &Store) -> Result<HubSettings> {
    let saved = store.setting(HUB_ENDPOINT).await?;
    let (endpoint, endpoint_source) = hub::endpoint_in_force(None, saved.as_deref());
    let file = token::token_path();
    let in_force = token::token_in_force();
    Ok(HubSettings {
        endpoint,
        endpoint_source,
        saved_endpoint: saved,
        default_endpoint: DEFAULT_ENDPOINT.to_string(),
        token: TokenStatus {
            present: in_force.is_some(),
            source: in_force.as_ref().map(|(_, s)| *s),
            masked: in_force.as_ref().map(|(t, _)| token::masked(t)),
            file_exists: file.is_file(),
            file,
        },
        cache_dir: hub::hub_cache(),
    })
}

/// Save the endpoint (checked), or go back to the default with `None`, an
/// empty string or "default".
pub async fn set_endpoint(store: &Store, url: Option<&str>) -> Result<HubSettings> {
    match url
        .map(str::trim)
        .filter(|u| !u.is_empty() && *u != "default")
    {
        Some(u) => {
            let url = hub::normalize_endpoint(u)?;
            store.set_setting(HUB_ENDPOINT, &url).await?;
        }
        None => {
            store.remove_setting(HUB_ENDPOINT).await?;
        }
    }
    hub_settings(store).await
}

/// Save a token to the token file.
pub async fn save_token(store: &Store, token: &str) -> Result<HubSettings> {
    token::save_token(token)?;
    hub_settings(store).await
}

/// Delete the token file (HF_TOKEN, if set, stays in force: the answer says so).
pub async fn remove_token(store: &Store) -> Result<HubSettings> {
    token::remove_token()?;
    hub_settings(store).await
}
