//! The Hugging Face token: read and written where huggingface_hub keeps it,
//! so a login in the Python tools works in Dyno and the other way round.
//! The token is a secret: it is never stored in Dyno's database, printed or
//! logged; at most its last four characters are shown, so a person can tell
//! which of their tokens is in use.

use std::path::PathBuf;

use super::{env, hf_home, SettingSource};
use crate::error::{DynoError, Result};

/// The token file: `$HF_TOKEN_PATH`, else `$HF_HOME/token`.
pub fn token_path() -> PathBuf {
    env("HF_TOKEN_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| hf_home().join("token"))
}

/// The token used and where it came from: `HF_TOKEN` (or the older
/// `HUGGING_FACE_HUB_TOKEN`), else the token file.
pub fn token_in_force() -> Option<(String, SettingSource)> {
    let clean = |t: String| Some(t.trim().to_string()).filter(|t| !t.is_empty());
    if let Some(t) = env("HF_TOKEN")
        .or_else(|| env("HUGGING_FACE_HUB_TOKEN"))
        .and_then(clean)
    {
        return Some((t, SettingSource::Env));
    }
    std::fs::read_to_string(token_path())
        .ok()
        .and_then(clean)
        .map(|t| (t, SettingSource::File))
}

/// The token with all but its last four characters hidden ("hf_…x7Qz").
pub fn masked(token: &str) -> String {
    let tail: String = {
        let chars: Vec<char> = token.chars().collect();
        let keep = if chars.len() >= 12 { 4 } else { 0 };
        chars[chars.len() - keep..].iter().collect()
    };
    let head = if token.starts_with("hf_") { "hf_" } else { "" };
    format!("{head}…{tail}")
}

/// Save `token` to the token file (created private to the user), replacing
/// what was there. Refuses text that cannot be a token, so a pasted
/// sentence or a second line never reaches the hub as a header.
pub fn save_token(token: &str) -> Result<PathBuf> {
    let t = token.trim();
    if t.is_empty() {
        return Err(DynoError::BadInput(
            "the token is empty; paste a token from huggingface.co/settings/tokens (it starts with hf_)"
                .into(),
        ));
    }
    if t.len() > 512 || !t.chars().all(|c| c.is_ascii_graphic()) {
        return Err(DynoError::BadInput(
            "that is not a Hugging Face token (it has spaces, line breaks or odd characters); \
             copy the token itself from huggingface.co/settings/tokens"
                .into(),
        ));
    }
    let path = token_path();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            DynoError::io(format!("cannot create {} for the token", dir.display()), e)
        })?;
    }
    // Written to a private temporary file and renamed, so the token file is
    // never half-written nor readable by other users, even for a moment. The
    // name is unguessable and the file is created new (O_EXCL, which follows
    // no symlink), so nobody can plant a link there to redirect the secret.
    let tmp = path.with_extension(format!("{}.dyno-tmp", crate::store::unique_id()));
    write_private(&tmp, t.as_bytes())
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            DynoError::io(format!("cannot save the token to {}", path.display()), e)
        })?;
    Ok(path)
}

#[cfg(unix)]
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Delete the token file; false when there was none.
pub fn remove_token() -> Result<bool> {
    let path = token_path();
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(DynoError::io(
            format!("cannot remove the token file {}", path.display()),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_masked_token_shows_only_its_end() {
        assert_eq!(masked("hf_abcdefghijklmnopXYZW"), "hf_…XYZW");
        // Too short to hide anything by showing four: show nothing.
        assert_eq!(masked("hf_short"), "hf_…");
        assert_eq!(masked("abcdefghijklmnop"), "…mnop");
    }
}
