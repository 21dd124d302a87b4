//! The use cases that both front ends share: the CLI (`cli/`) and the desktop
//! app's commands (`src-tauri/`) call these functions and render what they
//! return, so a feature behaves the same whichever way a person reaches it.
//! Inputs and outputs are typed structs (serialised for `--json` and the UI
//! alike); nothing here prints or knows about a terminal or a window, and
//! nothing here uses `cli/`: the layers above call down, never across.

pub mod bench;
pub mod compare;
pub mod downloads;
pub mod export;
pub mod form;
pub mod hub;
pub mod hw;
pub mod models;
pub mod options;
pub mod predict;
pub mod presets;
pub mod results;
pub mod rpc;
pub mod serve;
pub mod settings;
pub mod shape_only;
pub mod sweep;
pub mod synth;
pub mod team;

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::store::Store;

/// Open the database and mark runs a killed Dyno left behind as interrupted:
/// every use case that reads results wants them closed first, whichever
/// front end opened the store.
pub async fn open_store(db: &Path) -> Result<Store> {
    if let Some(url) = db.to_str().filter(|s| crate::store::team::is_team_url(s)) {
        return Err(crate::error::DynoError::BadInput(format!(
            "{} is a team store: Dyno measures into a local SQLite file and `dyno sync` sends the runs there. With --db set to a team store, use runs, show, compare, export or machines",
            crate::store::team::redact(url)
        )));
    }
    let store = Store::open(db).await?;
    let closed = store.close_orphaned_runs().await?;
    if closed > 0 {
        tracing::info!("marked {closed} run(s) left behind by a killed Dyno as interrupted");
    }
    Ok(store)
}

/// `~/x` and `~` as the user's home: a path the app's fields take is typed
/// by a person, and no shell expands it on the way.
pub fn expand_home(p: &str) -> PathBuf {
    let home = || directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    match p
        .strip_prefix("~/")
        .or(if p == "~" { Some("") } else { None })
    {
        Some(rest) => home()
            .map(|h| h.join(rest))
            .unwrap_or_else(|| PathBuf::from(p)),
        None => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_tilde_means_home() {
        let home = directories::BaseDirs::new()
            .unwrap()
            .home_dir()
            .to_path_buf();
        assert_eq!(
            expand_home("~/Downloads/c.png"),
            home.join("Downloads/c.png")
        );
        assert_eq!(expand_home("~"), home);
        assert_eq!(expand_home("/abs/c.png"), PathBuf::from("/abs/c.png"));
        assert_eq!(expand_home("~user/c.png"), PathBuf::from("~user/c.png"));
    }
}
