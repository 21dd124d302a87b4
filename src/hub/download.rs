//! Downloads into the Hugging Face cache, resumable and verified.
//!
//! A file is written to `blobs/<sha256>.incomplete` (the name the Python
//! client uses), continued after an interruption with a ranged request
//! (`Range: bytes=N-`), hashed as it streams (the bytes already on disk are
//! hashed first), and renamed to `blobs/<sha256>` only when its size and
//! sha256 match what the hub's tree announced. A mismatch deletes it. Then
//! `snapshots/<commit>/<path>` links to the blob and `refs/main` names the
//! commit, as the Python client lays them out.
//!
//! A blob already in the cache is trusted only after Dyno has hashed it
//! once: the first time it is met (put there by the Python client, another
//! tool or an older Dyno) it is hashed, and a mismatch is deleted and
//! downloaded again. What the blob looked like when its hash matched is
//! kept beside it in `blobs/<sha256>.verified`, so later pulls cost a
//! `stat`, and a blob rewritten since is hashed again.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use reqwest::header::{CONTENT_RANGE, RANGE};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{check, network_error, Hub, TreeFile};
use crate::error::{DynoError, Result};
use crate::worker::client::Cancel;

/// Download progress, for a bar with bytes, rate and ETA.
pub trait PullProgress {
    /// A file starts; `already` bytes were on disk from an earlier attempt.
    fn start(&mut self, path: &str, total: u64, already: u64);
    fn advance(&mut self, bytes: u64);
    fn finish(&mut self, path: &str);
}

/// What one file's pull did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pulled {
    pub path: String,
    /// The snapshot path (a link to the blob): what to load.
    pub local_path: PathBuf,
    pub sha256: String,
    pub size_bytes: u64,
    /// Bytes that were on disk from an interrupted attempt.
    pub resumed_from: u64,
    /// Bytes fetched by this pull.
    pub downloaded_bytes: u64,
    /// Already complete in the cache; nothing fetched.
    pub already_present: bool,
    pub elapsed_ms: f64,
}

fn io(what: &str, p: &Path) -> impl FnOnce(std::io::Error) -> DynoError {
    let what = what.to_string();
    let p = p.to_path_buf();
    move |e| {
        let hint = if e.raw_os_error() == Some(libc::ENOSPC) {
            "; the disk is full: free some space, then run again to resume"
        } else {
            ""
        };
        DynoError::io(format!("{what} {}{hint}", p.display()), e)
    }
}

/// `../../blobs/<sha>` from `snapshots/<commit>/<path>`, one more `../` per
/// folder inside the repo, so the cache can move as a whole.
fn relative_blob(path_in_repo: &str, sha: &str) -> PathBuf {
    let depth = path_in_repo.matches('/').count();
    let mut p = PathBuf::new();
    for _ in 0..depth + 2 {
        p.push("..");
    }
    p.join("blobs").join(sha)
}

/// Hold an exclusive lock on `<cache>/.locks/<repo folder>/<sha>.lock` (the
/// Python client's location) so two processes never write one blob.
struct BlobLock(#[allow(dead_code)] std::fs::File);

fn lock_blob(cache: &Path, repo: &str, sha: &str) -> Result<BlobLock> {
    let dir = cache
        .join(".locks")
        .join(format!("models--{}", repo.replace('/', "--")));
    std::fs::create_dir_all(&dir).map_err(io("cannot create", &dir))?;
    let path = dir.join(format!("{sha}.lock"));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io("cannot open", &path))?;
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: `f` owns the descriptor and outlives the call; flock reads
        // no memory of ours. The lock goes with the descriptor when
        // `BlobLock` closes the file.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(DynoError::BadInput(format!(
                "another process is downloading {sha} into {} right now; wait for it to finish",
                cache.display()
            )));
        }
    }
    Ok(BlobLock(f))
}

/// Make the snapshot link and the ref for a complete blob.
fn publish(hub: &Hub, repo: &str, commit: &str, file: &TreeFile, sha: &str) -> Result<PathBuf> {
    let cache_repo = hub.cache_repo(repo);
    let link = cache_repo.pointer_path(commit).join(&file.path);
    let dir = link.parent().expect("a snapshot path has a parent");
    std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    std::os::unix::fs::symlink(relative_blob(&file.path, sha), &link)
        .map_err(io("cannot link", &link))?;
    #[cfg(not(unix))]
    std::fs::copy(cache_repo.blob_path(sha), &link).map_err(io("cannot copy to", &link))?;
    cache_repo
        .create_ref(commit)
        .map_err(io("cannot write the ref of", &hub.config.cache_dir))?;
    Ok(link)
}

/// Bytes between two writeback starts.
const WRITEBACK_STEP: u64 = 32 << 20;

/// Ask the kernel to start writing a range to disk now, without waiting, so
/// the fsync before the file is published finds little left to do: a
/// verified blob is durable without making the download much slower.
fn start_writeback(f: &std::fs::File, start: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: `f` owns the descriptor and outlives the call, which only
        // schedules writeback of its pages and touches no memory of ours.
        // Failure is harmless (the final fsync still runs).
        unsafe {
            libc::sync_file_range(
                f.as_raw_fd(),
                start as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (f, start, len);
}

/// The writer thread: append each chunk at `offset` onwards, hash it,
/// start its writeback, and fsync at the end. Returns the hasher and the
/// bytes written.
fn write_and_hash<B: AsRef<[u8]>>(
    f: std::fs::File,
    offset: u64,
    mut hasher: Sha256,
    mut rx: tokio::sync::mpsc::Receiver<B>,
) -> std::io::Result<(Sha256, u64)> {
    use std::io::Seek;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
    out.seek(std::io::SeekFrom::Start(offset))?;
    let (mut written, mut flushed) = (0u64, 0u64);
    while let Some(chunk) = rx.blocking_recv() {
        let chunk = chunk.as_ref();
        out.write_all(chunk)?;
        hasher.update(chunk);
        written += chunk.len() as u64;
        if written - flushed >= WRITEBACK_STEP {
            out.flush()?;
            start_writeback(out.get_ref(), offset + flushed, written - flushed);
            flushed = written;
        }
    }
    let f = out.into_inner().map_err(|e| e.into_error())?;
    f.sync_all()?;
    Ok((hasher, written))
}

fn hash_prefix(path: &Path, hasher: &mut Sha256) -> std::io::Result<u64> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n_total = 0;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(n_total);
        }
        hasher.update(&buf[..n]);
        n_total += n as u64;
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A blob as it was when its sha256 matched: enough to tell that it is
/// still that file (a rewrite changes the mtime, a replacement the inode).
///
/// The record lives in the cache beside the blob, not in Dyno's database:
/// the cache is shared by every database, by the app and by other tools,
/// and a record there goes wherever the blob goes, with no migration.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Verified {
    size_bytes: u64,
    mtime_ns: u64,
    inode: u64,
}

impl Verified {
    fn of(blob: &Path) -> Option<Verified> {
        let m = std::fs::metadata(blob).ok()?;
        let mtime_ns = m
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos() as u64;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&m);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Verified {
            size_bytes: m.len(),
            mtime_ns,
            inode,
        })
    }
}

fn verified_path(blob: &Path) -> PathBuf {
    let mut p = blob.as_os_str().to_owned();
    p.push(".verified");
    PathBuf::from(p)
}

/// True when `blob` is the very file whose sha256 was last found to match.
fn is_verified(blob: &Path) -> bool {
    let Some(now) = Verified::of(blob) else {
        return false;
    };
    std::fs::read(verified_path(blob))
        .ok()
        .and_then(|b| serde_json::from_slice::<Verified>(&b).ok())
        .is_some_and(|was| was == now)
}

/// Record that `blob` matched its sha256. Best effort: without the record
/// the blob is only hashed again next time.
fn mark_verified(blob: &Path) {
    let Some(v) = Verified::of(blob) else { return };
    let path = verified_path(blob);
    let json = serde_json::to_vec(&v).expect("a stamp serialises");
    if let Err(e) = std::fs::write(&path, json) {
        tracing::warn!("cannot record that {} was verified: {e}", blob.display());
    }
}

/// sha256 of a whole file, off the runtime thread (a blob of many GiB takes
/// a while) and given up on a cancel, so Ctrl-C is still heard.
async fn hash_file(path: &Path, cancel: &Cancel) -> Result<String> {
    let p = path.to_path_buf();
    let job = tokio::task::spawn_blocking(move || {
        let mut h = Sha256::new();
        hash_prefix(&p, &mut h).map(|_| hex(&h.finalize()))
    });
    tokio::select! {
        r = job => r
            .map_err(|e| DynoError::Worker(format!("hashing thread failed: {e}")))?
            .map_err(io("cannot read", path)),
        _ = cancel.cancelled() => Err(DynoError::Network(format!(
            "cancelled while checking the sha256 of {}; run the same command again",
            path.display()
        ))),
    }
}

/// Where an unfinished download of `blob` is kept: `blob` plus
/// `.incomplete`, the Python client's name, so either tool resumes it.
pub fn partial_path(blob: &Path) -> PathBuf {
    let mut p = blob.as_os_str().to_os_string();
    p.push(".incomplete");
    PathBuf::from(p)
}

/// Delete what a cancelled or interrupted download of the blob `sha` left
/// in `repo`'s cache (`blobs/<sha>.incomplete`), so its space comes back
/// and the next pull starts afresh. Refused while a pull of that blob runs
/// (it holds the blob's lock). Returns the bytes freed, 0 when there was no
/// partial file. A complete, verified blob is never touched.
pub fn discard_partial(cache_dir: &Path, repo: &str, sha: &str) -> Result<u64> {
    super::check_repo_id(repo)?;
    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(DynoError::BadInput(format!(
            "'{}' is not a sha256; nothing was deleted",
            sha.escape_default()
        )));
    }
    let _lock = lock_blob(cache_dir, repo, sha)?;
    let blob = hf_hub::Cache::new(cache_dir.to_path_buf())
        .repo(hf_hub::Repo::model(repo.to_string()))
        .blob_path(sha);
    let partial = partial_path(&blob);
    let freed = match std::fs::metadata(&partial) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io("cannot read", &partial)(e)),
    };
    std::fs::remove_file(&partial).map_err(io("cannot delete", &partial))?;
    Ok(freed)
}

/// Download one file of `repo` at `commit` unless the cache has it.
///
/// The steps, each its own function below: check what the hub announced
/// ([`checked_sha`]), reuse a verified blob ([`cached_blob_is_good`]), pick up
/// an earlier partial ([`resume_point`]), ask for the rest
/// ([`request_rest`]), stream it to disk ([`stream_to_partial`]), then
/// check the whole file and move it into place.
pub async fn pull_file(
    hub: &Hub,
    repo: &str,
    commit: &str,
    file: &TreeFile,
    cancel: &Cancel,
    progress: &mut dyn PullProgress,
) -> Result<Pulled> {
    let t0 = Instant::now();
    let sha = checked_sha(repo, commit, file)?;
    let cache_repo = hub.cache_repo(repo);
    let blob = cache_repo.blob_path(&sha);
    let blobs_dir = blob.parent().expect("blob has a parent").to_path_buf();
    std::fs::create_dir_all(&blobs_dir).map_err(io("cannot create", &blobs_dir))?;
    let _lock = lock_blob(&hub.config.cache_dir, repo, &sha)?;

    let done = |resumed_from, downloaded, already, link: PathBuf| Pulled {
        path: file.path.clone(),
        local_path: link,
        sha256: sha.clone(),
        size_bytes: file.size,
        resumed_from,
        downloaded_bytes: downloaded,
        already_present: already,
        elapsed_ms: t0.elapsed().as_secs_f64() * 1e3,
    };
    if cached_blob_is_good(&blob, repo, file, &sha, cancel).await? {
        let link = publish(hub, repo, commit, file, &sha)?;
        return Ok(done(0, 0, true, link));
    }

    let partial = partial_path(&blob);
    let (mut hasher, mut offset) = resume_point(&partial, file.size).await?;
    let mut resumed_from = offset;
    progress.start(&file.path, file.size, offset);

    let what = format!("{repo}/{}", file.path);
    let mut downloaded = 0u64;
    if offset < file.size {
        let url = hub.file_url(repo, commit, &file.path);
        let (resp, from_start) =
            request_rest(hub, &url, offset, file.size, &partial, &what).await?;
        if from_start {
            // The server ignored the range and sends the whole file.
            offset = 0;
            resumed_from = 0;
            hasher = Sha256::new();
            progress.start(&file.path, file.size, 0);
        }
        let target = Partial {
            path: &partial,
            offset,
            size: file.size,
            what: &what,
        };
        (hasher, downloaded) = stream_to_partial(resp, &target, hasher, cancel, progress).await?;
    }
    let have = offset + downloaded;
    if have != file.size {
        return Err(DynoError::Network(format!(
            "{what}: the connection closed after {have} of {} bytes; run the same command again to resume",
            file.size
        )));
    }
    let got = hex(&hasher.finalize());
    if got != sha {
        let _ = std::fs::remove_file(&partial);
        return Err(DynoError::Integrity(format!(
            "{what}: sha256 mismatch (the hub says {sha}, the download is {got}); the corrupt file was deleted, run again to download it afresh"
        )));
    }
    std::fs::rename(&partial, &blob).map_err(io("cannot move into place", &blob))?;
    mark_verified(&blob);
    let link = publish(hub, repo, commit, file, &sha)?;
    progress.finish(&file.path);
    Ok(done(resumed_from, downloaded, false, link))
}

/// The sha256 the hub announced for `file`, once it and the path and
/// commit are known to be safe to build cache paths from. Checked where the
/// listing is read too; again here, right before the paths are joined,
/// since a bad one would write outside the cache.
fn checked_sha(repo: &str, commit: &str, file: &TreeFile) -> Result<String> {
    let sha = file.sha256.clone().ok_or_else(|| {
        DynoError::Integrity(format!(
            "{repo}/{}: the hub gives no sha256 for it, so Dyno cannot verify a download",
            file.path
        ))
    })?;
    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(DynoError::Integrity(format!(
            "{repo}/{}: the hub's sha256 '{sha}' is malformed",
            file.path
        )));
    }
    if !super::safe_repo_path(&file.path)
        || commit.len() != 40
        || !commit.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(DynoError::Network(format!(
            "{repo}: refusing a file path or commit that would leave the cache ('{}' at '{}')",
            file.path.escape_default(),
            commit.escape_default()
        )));
    }
    Ok(sha)
}

/// Whether the cache already holds the file. A blob of the right size
/// counts once its bytes are known to match: hashed here the first time
/// Dyno meets it, since a name and a size are only what some other program
/// claimed. A blob that does not match is deleted.
async fn cached_blob_is_good(
    blob: &Path,
    repo: &str,
    file: &TreeFile,
    sha: &str,
    cancel: &Cancel,
) -> Result<bool> {
    if !std::fs::metadata(blob).is_ok_and(|m| m.len() == file.size) {
        return Ok(false);
    }
    if is_verified(blob) {
        return Ok(true);
    }
    tracing::info!("checking the sha256 of the cached {repo}/{}", file.path);
    let got = hash_file(blob, cancel).await?;
    if got == sha {
        mark_verified(blob);
        return Ok(true);
    }
    tracing::warn!(
        "the cached copy of {repo}/{} did not match its sha256 (the hub says {sha}, the file is {got}); it was deleted and is downloaded again",
        file.path
    );
    let _ = std::fs::remove_file(verified_path(blob));
    std::fs::remove_file(blob).map_err(io("cannot delete the corrupt", blob))?;
    Ok(false)
}

/// Where to go on from: the bytes of an earlier partial download (hashed,
/// so the sha256 covers them) when it is no longer than the file, else a
/// fresh empty partial.
async fn resume_point(partial: &Path, size: u64) -> Result<(Sha256, u64)> {
    if let Ok(m) = std::fs::metadata(partial) {
        if m.len() <= size {
            // Off the runtime thread: a partial of many GiB takes seconds,
            // and Ctrl-C must still be heard.
            let p = partial.to_path_buf();
            let (h, n) = tokio::task::spawn_blocking(move || {
                let mut h = Sha256::new();
                hash_prefix(&p, &mut h).map(|n| (h, n))
            })
            .await
            .map_err(|e| DynoError::Worker(format!("hashing thread failed: {e}")))?
            .map_err(io("cannot read", partial))?;
            if n > 0 {
                return Ok((h, n));
            }
        }
    }
    std::fs::File::create(partial).map_err(io("cannot create", partial))?;
    Ok((Sha256::new(), 0))
}

/// Ask for the file from `offset` on. Returns the response and whether the
/// server sends the whole file instead (it ignored the range). A range the
/// server cannot honour, or one it answers at the wrong place, deletes the
/// partial so the next run starts afresh.
async fn request_rest(
    hub: &Hub,
    url: &str,
    offset: u64,
    size: u64,
    partial: &Path,
    what: &str,
) -> Result<(reqwest::Response, bool)> {
    let mut req = hub.client().get(url);
    if offset > 0 {
        req = req.header(RANGE, format!("bytes={offset}-"));
    }
    let resp = req
        .send()
        .await
        .map_err(|e| network_error(&hub.config.endpoint, &e))?;
    if resp.status() == StatusCode::RANGE_NOT_SATISFIABLE {
        // The partial is longer than what the server has now: start over.
        let _ = std::fs::remove_file(partial);
        return Err(DynoError::Network(format!(
            "{what}: the server cannot continue the earlier partial download; it was deleted, run again to download afresh"
        )));
    }
    let resp = check(resp, what, hub.config.token.is_some()).await?;
    let ranged = resp.status() == StatusCode::PARTIAL_CONTENT;
    if offset > 0 && !ranged {
        return Ok((resp, true));
    }
    if ranged && content_range_start(&resp) != Some((offset, size)) {
        let _ = std::fs::remove_file(partial);
        return Err(DynoError::Network(format!(
            "{what}: the server resumed at the wrong place; the partial file was deleted, run again to download afresh"
        )));
    }
    Ok((resp, false))
}

/// `(first byte, total)` of a `Content-Range: bytes A-B/T` header.
fn content_range_start(resp: &reqwest::Response) -> Option<(u64, u64)> {
    let v = resp.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    let (span, total) = v.strip_prefix("bytes ")?.split_once('/')?;
    Some((
        span.split('-').next()?.parse::<u64>().ok()?,
        total.parse::<u64>().ok()?,
    ))
}

/// The partial file a download writes into.
struct Partial<'a> {
    path: &'a Path,
    /// Bytes already in it (and in the hasher) before this response.
    offset: u64,
    /// The whole file's size, as the hub announced it.
    size: u64,
    /// "repo/path", for messages.
    what: &'a str,
}

/// Stream the response's body onto the end of the partial file. Returns the
/// hasher (now covering every byte on disk) and the bytes received. A cut
/// or a cancel keeps what arrived so the next run resumes; more bytes than
/// announced, or a full disk, deletes the partial.
async fn stream_to_partial(
    mut resp: reqwest::Response,
    target: &Partial<'_>,
    hasher: Sha256,
    cancel: &Cancel,
    progress: &mut dyn PullProgress,
) -> Result<(Sha256, u64)> {
    let Partial {
        path: partial,
        offset,
        size,
        what,
    } = *target;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(partial)
        .map_err(io("cannot open", partial))?;
    f.set_len(offset).map_err(io("cannot truncate", partial))?;
    // Writing and hashing run on their own thread, so the network side
    // only receives: on a fast link the sha256 would otherwise halve the
    // rate. The channel is bounded, so memory stays a few MiB.
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let writer = tokio::task::spawn_blocking(move || write_and_hash(f, offset, hasher, rx));
    let mut downloaded = 0u64;
    let mut failure = None;
    loop {
        let next = tokio::select! {
            c = resp.chunk() => c,
            _ = cancel.cancelled() => {
                failure = Some(DynoError::Network(format!(
                    "{what}: cancelled after {} of {size} bytes; run the same command again to resume",
                    offset + downloaded
                )));
                break;
            }
        };
        match next {
            Ok(Some(bytes)) => {
                if offset + downloaded + bytes.len() as u64 > size {
                    failure = Some(DynoError::Integrity(format!(
                        "{what}: the server sent more than the {size} bytes the hub announced; the download was deleted, run again"
                    )));
                    break;
                }
                downloaded += bytes.len() as u64;
                progress.advance(bytes.len() as u64);
                if tx.send(bytes).await.is_err() {
                    // The writer stopped on an I/O error; join says which.
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                // Keep what arrived: the next run continues from it.
                failure = Some(DynoError::Network(format!(
                    "{what}: the download was interrupted after {} of {size} bytes ({e}); run the same command again to resume",
                    offset + downloaded
                )));
                break;
            }
        }
    }
    drop(tx);
    let written = writer
        .await
        .map_err(|_| DynoError::Worker("the download writer thread panicked".into()))?;
    let (hasher, written) = match written {
        Ok(w) => w,
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
            // A partial file on a full disk only keeps it full; resuming
            // needs the space freed anyway, so take it back now.
            let _ = std::fs::remove_file(partial);
            return Err(DynoError::io(
                format!(
                    "cannot write {}: the disk is full; {what} needs {} there, the partial download was removed; free some space and run again",
                    partial.display(),
                    crate::units::human_bytes(size)
                ),
                e,
            ));
        }
        Err(e) => return Err(io("cannot write", partial)(e)),
    };
    if let Some(f) = failure {
        if matches!(f, DynoError::Integrity(_)) {
            let _ = std::fs::remove_file(partial);
        }
        return Err(f);
    }
    if written != downloaded {
        return Err(DynoError::Network(format!(
            "{what}: only {written} of {downloaded} received bytes reached the disk; run again to resume"
        )));
    }
    Ok((hasher, downloaded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_links_climb_out_of_subfolders() {
        assert_eq!(relative_blob("a.gguf", "s"), Path::new("../../blobs/s"));
        assert_eq!(
            relative_blob("Q4_K_M/a-00001-of-00002.gguf", "s"),
            Path::new("../../../blobs/s")
        );
    }
}
