//! The Settings page's commands (hub endpoint and token) and the download
//! discard, each a few lines over `dyno::app`. The token crosses from the
//! UI once, to be saved in huggingface_hub's token file; nothing sends it
//! back, the page only ever sees its masked form.

use dyno::app::downloads::{self, Discarded};
use dyno::app::rpc::{self, RpcServing};
use dyno::app::settings::{self, HubCheck, HubSettings};
use tauri::State;

use crate::commands::{with_store, App};
use crate::error::AppResult;

#[tauri::command]
pub async fn hub_settings(app: State<'_, App>) -> AppResult<HubSettings> {
    with_store(&app, async |s, _| settings::hub_settings(s).await).await
}

/// Save the endpoint; an empty one goes back to huggingface.co.
#[tauri::command]
pub async fn set_hub_endpoint(app: State<'_, App>, url: Option<String>) -> AppResult<HubSettings> {
    with_store(&app, async move |s, _| {
        settings::set_endpoint(s, url.as_deref()).await
    })
    .await
}

#[tauri::command]
pub async fn save_hub_token(app: State<'_, App>, token: String) -> AppResult<HubSettings> {
    with_store(&app, async move |s, _| {
        settings::save_token(s, &token).await
    })
    .await
}

#[tauri::command]
pub async fn remove_hub_token(app: State<'_, App>) -> AppResult<HubSettings> {
    with_store(&app, async |s, _| settings::remove_token(s).await).await
}

/// "Test connection": a failure comes back as an answer to show in place.
#[tauri::command]
pub async fn check_hub(app: State<'_, App>) -> AppResult<HubCheck> {
    with_store(&app, async |s, _| dyno::app::hub::check(s).await).await
}

/// Delete a cancelled download's partial file (Cancel, after Pause).
#[tauri::command]
pub async fn discard_download(
    app: State<'_, App>,
    repo: String,
    file: String,
) -> AppResult<Discarded> {
    with_store(&app, async move |s, _| {
        downloads::discard(s, &repo, &file).await
    })
    .await
}

/// Lend this machine's devices over llama.cpp's RPC (`dyno rpc-server`).
#[tauri::command]
pub async fn rpc_server_start(
    host: String,
    port: u16,
    threads: Option<u32>,
) -> AppResult<RpcServing> {
    Ok(rpc::start(&host, port, threads).await?)
}

#[tauri::command]
pub async fn rpc_server_stop() -> AppResult<bool> {
    Ok(rpc::stop().await)
}

#[tauri::command]
pub async fn rpc_server_status() -> AppResult<Option<RpcServing>> {
    Ok(rpc::status())
}
