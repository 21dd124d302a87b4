//! `dyno settings [set|unset|check]` and `dyno hub login|logout`: the same
//! settings as the app's Settings page, through `app::settings`.

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use super::args::SettingsCommand;
use super::open_store;
use crate::app::settings::{self, HubSettings, HUB_ENDPOINT};
use crate::app::team::TEAM_URL;
use crate::error::{DynoError, Result};
use crate::hub::SettingSource;
use crate::store::Store;

pub async fn settings(db: &Path, cmd: Option<SettingsCommand>, json: bool) -> Result<i32> {
    let store = open_store(db).await?;
    let out = run(&store, cmd, json).await;
    store.close().await;
    out
}

async fn run(store: &Store, cmd: Option<SettingsCommand>, json: bool) -> Result<i32> {
    let s = match cmd {
        None => {
            let s = settings::hub_settings(store).await?;
            print(&s, json);
            if !json {
                let team = store.setting(TEAM_URL).await?;
                println!("{TEAM_URL}     {}", team.as_deref().unwrap_or("(none)"));
            }
            return Ok(0);
        }
        Some(SettingsCommand::Set { key, value }) if key == TEAM_URL => {
            let saved = crate::app::team::save_team_url(store, &value).await?;
            println!("{TEAM_URL} saved as {saved} (a password is never saved: give it in PGPASSWORD or ~/.pgpass)");
            return Ok(0);
        }
        Some(SettingsCommand::Unset { key }) if key == TEAM_URL => {
            store.remove_setting(TEAM_URL).await?;
            println!("{TEAM_URL} removed");
            return Ok(0);
        }
        Some(SettingsCommand::Set { key, value }) => {
            known(&key)?;
            settings::set_endpoint(store, Some(&value)).await?
        }
        Some(SettingsCommand::Unset { key }) => {
            known(&key)?;
            settings::set_endpoint(store, None).await?
        }
        Some(SettingsCommand::Check) => {
            let c = crate::app::hub::check(store).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&c).expect("serialises"));
            } else {
                println!("{}", c.message);
            }
            return Ok(if c.reachable { 0 } else { 1 });
        }
    };
    print(&s, json);
    Ok(0)
}

fn known(key: &str) -> Result<()> {
    if key == HUB_ENDPOINT {
        return Ok(());
    }
    Err(DynoError::BadInput(format!(
        "there is no setting '{key}'; the settings are: {HUB_ENDPOINT}, {TEAM_URL} (the hub token is saved with `dyno hub login`)"
    )))
}

fn source(s: SettingSource) -> &'static str {
    match s {
        SettingSource::Flag => "from --endpoint",
        SettingSource::Env => "from the environment",
        SettingSource::Saved => "saved",
        SettingSource::File => "from the token file",
        SettingSource::Default => "the default",
    }
}

fn print(s: &HubSettings, json: bool) {
    if json {
        println!("{}", serde_json::to_string_pretty(s).expect("serialises"));
        return;
    }
    println!(
        "hub.endpoint  {} ({})",
        s.endpoint,
        source(s.endpoint_source)
    );
    if s.endpoint_source == SettingSource::Env {
        if let Some(saved) = &s.saved_endpoint {
            println!("              saved {saved}, but HF_ENDPOINT is set and wins");
        }
    }
    match (&s.token.masked, s.token.source) {
        (Some(m), Some(src)) => println!("hub token     {m} ({})", source(src)),
        _ => {
            println!("hub token     none (`dyno hub login` saves one for gated and private repos)")
        }
    }
    println!("token file    {}", s.token.file.display());
    println!("hub cache     {}", s.cache_dir.display());
}

/// `dyno hub login`: the token comes on standard input, never as an
/// argument, so it is not left in the shell's history or `ps`.
pub async fn login(db: &Path) -> Result<i32> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("Paste a token from huggingface.co/settings/tokens, then press Enter:");
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| DynoError::io("cannot read the token from standard input", e))?;
    let store = open_store(db).await?;
    let s = settings::save_token(&store, &line).await;
    store.close().await;
    let s = s?;
    println!(
        "saved the token ({}) to {}",
        s.token.masked.as_deref().unwrap_or("…"),
        s.token.file.display()
    );
    if s.token.source == Some(SettingSource::Env) {
        println!("note: HF_TOKEN is set in the environment and is used instead while it is");
    }
    Ok(0)
}

pub async fn logout(db: &Path) -> Result<i32> {
    let had = crate::hub::token::token_path().is_file();
    let store = open_store(db).await?;
    let s = settings::remove_token(&store).await;
    store.close().await;
    let s = s?;
    if had {
        println!("removed the token file {}", s.token.file.display());
    } else {
        println!("no token file at {}", s.token.file.display());
    }
    if s.token.source == Some(SettingSource::Env) {
        println!("note: HF_TOKEN is still set in the environment");
    }
    Ok(0)
}
