//! Who owns a row left 'running': a lock file held by the measuring process.
//!
//! A pid and a host name cannot answer "is its owner still alive?" on every
//! OS: Windows has no cheap `kill(pid, 0)`, a host name changes (macOS renames
//! machines on a network change), and a pid is reused. An advisory lock can:
//! the OS drops it when the process dies, however it dies, on Linux, macOS and
//! Windows alike. So each Dyno process that starts a run, a sweep or a server
//! run holds an exclusive lock on a file of its own in `<database>-owners/`
//! beside the database, and writes that file's token into the row. A row whose
//! token's file is missing, or can be locked, belongs to no live process.
//!
//! The folder travels with the database (a copied database's rows read as
//! orphaned on the new machine, as they are), and needs no clock, host name
//! or pid.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::error::{DynoError, Result};

/// The suffix of a held lock's file; a file is given it only once locked.
const LOCK: &str = "lock";

/// This process's lock for each owners' folder it has written rows under,
/// held until the process exits (the OS then releases it).
fn held() -> &'static Mutex<HashMap<PathBuf, (String, File)>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, (String, File)>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// The owners' folder of the database at `db`.
pub(super) fn folder(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push("-owners");
    db.with_file_name(name)
}

/// This process's owner token for the database at `db`, its lock taken on
/// first use. Call it before writing a row that names it: a token is never
/// written before its lock is held, so no reader can see it unlocked.
pub(super) fn token(db: &Path) -> Result<String> {
    let dir = folder(db);
    let mut held = held().lock().unwrap_or_else(|e| e.into_inner());
    if let Some((t, _)) = held.get(&dir) {
        return Ok(t.clone());
    }
    let io = |what: &str, e| DynoError::io(format!("{what} {}", dir.display()), e);
    std::fs::create_dir_all(&dir).map_err(|e| io("cannot create the owners' folder", e))?;
    // Written under a temporary name, locked, then renamed, so a reaper
    // never finds a `.lock` file that is not yet locked.
    let t = super::unique_id();
    let tmp = dir.join(format!("{t}.new"));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| io("cannot create an owner's lock in", e))?;
    file.try_lock().map_err(|e| {
        io(
            "cannot lock an owner's file in",
            match e {
                TryLockError::Error(e) => e,
                TryLockError::WouldBlock => std::io::ErrorKind::WouldBlock.into(),
            },
        )
    })?;
    std::fs::rename(&tmp, dir.join(format!("{t}.{LOCK}")))
        .map_err(|e| io("cannot name an owner's lock in", e))?;
    held.insert(dir, (t.clone(), file));
    Ok(t)
}

/// Whether the process that wrote `token` into a row of the database at
/// `db` is still alive. A dead owner's file is removed on the way.
pub(super) fn alive(db: &Path, token: &str) -> bool {
    let dir = folder(db);
    if held()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&dir)
        .is_some_and(|(t, _)| t == token)
    {
        return true;
    }
    // A token is a file name Dyno made; anything else cannot name a lock.
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return false;
    }
    let path = dir.join(format!("{token}.{LOCK}"));
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(e) => {
            // Unreadable (permissions): leave the row alone rather than
            // close a run that may still be measuring.
            tracing::warn!("cannot read the owner's lock {}: {e}", path.display());
            return true;
        }
    };
    match file.try_lock() {
        Ok(()) => {
            // Nobody holds it: its process has ended. Removing it while
            // holding the lock means no live process ever loses its file.
            let _ = std::fs::remove_file(&path);
            false
        }
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(e)) => {
            tracing::warn!("cannot test the owner's lock {}: {e}", path.display());
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_alive_while_its_process_holds_it_and_a_missing_one_is_not() {
        let dir = std::env::temp_dir().join(format!("dyno-owner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("t.db");
        let t = token(&db).unwrap();
        assert_eq!(token(&db).unwrap(), t, "one token per process and database");
        assert!(alive(&db, &t));
        assert!(folder(&db).join(format!("{t}.lock")).exists());
        assert!(!alive(&db, "1-00-0"), "no file: no owner");
        assert!(!alive(&db, "../t"), "not a token Dyno makes");
        // A file nobody holds is a dead owner's, and is removed.
        let dead = folder(&db).join("2-0f-1.lock");
        std::fs::write(&dead, b"").unwrap();
        assert!(!alive(&db, "2-0f-1"));
        assert!(!dead.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
