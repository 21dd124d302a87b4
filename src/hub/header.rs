//! A GGUF file's header from the hub without its weights.
//!
//! Prediction needs a model's shape before anyone downloads it. The header is
//! at the front of the file, but its length is not known until it is parsed:
//! a 262k-token vocabulary alone is several MB. So Dyno asks for the first
//! 512 KiB with a ranged request, tries to parse, and while the parser runs
//! off the end it asks for the next span, doubling what it holds, up to
//! [`MAX_HEADER_BYTES`]. Only new bytes are requested each time.
//!
//! The bytes that parsed are cached under the file's sha256, so a header is
//! fetched once per file whatever repo or commit names it. A split model's
//! parts each carry their own tensors, so every part's header is read and the
//! tensor lists are joined.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use reqwest::header::RANGE;
use reqwest::StatusCode;

use super::{check, network_error, Hub, TreeFile};
use crate::error::{DynoError, GgufError, Result};
use crate::model::gguf::{read_header_from, Header};

/// The first request's span.
const FIRST_SPAN: u64 = 512 << 10;
/// No legitimate header comes near this; a file whose header would not
/// parse in this many bytes is refused rather than downloaded whole.
pub const MAX_HEADER_BYTES: u64 = 64 << 20;

/// A level's header and what it cost to get.
#[derive(Debug, Clone)]
pub struct FetchedHeader {
    pub header: Header,
    /// Bytes requested from the hub now (0 when every part was cached).
    pub fetched_bytes: u64,
    /// Bytes of the files, for scale.
    pub file_bytes: u64,
    pub from_cache: bool,
}

/// Where headers are cached: beside the quantisation cache.
pub fn cache_dir() -> PathBuf {
    crate::quantize::cache_root().join("headers")
}

/// A prefix of a file posing as the whole file: reads past the prefix end
/// find nothing and raise `ran_past`, which tells a truncated header (fetch
/// more) from a corrupt one.
struct Prefix<'a> {
    bytes: &'a [u8],
    pos: u64,
    ran_past: Arc<AtomicBool>,
}

impl Read for Prefix<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let have = self.bytes.len() as u64;
        if self.pos >= have {
            if !buf.is_empty() {
                self.ran_past.store(true, Ordering::Relaxed);
            }
            return Ok(0);
        }
        let start = self.pos as usize;
        let n = buf.len().min(self.bytes.len() - start);
        buf[..n].copy_from_slice(&self.bytes[start..start + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Prefix<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let next = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(_) => None,
        };
        self.pos = next.ok_or_else(|| std::io::Error::other("seek out of range"))?;
        Ok(self.pos)
    }
}

/// What parsing a prefix of `file_size` bytes gave.
enum Parsed {
    Done(Header),
    NeedMore,
    Bad(GgufError),
}

fn parse_prefix(bytes: &[u8], file_size: u64) -> Parsed {
    let ran_past = Arc::new(AtomicBool::new(false));
    let src = Prefix {
        bytes,
        pos: 0,
        ran_past: ran_past.clone(),
    };
    match read_header_from(src, file_size) {
        Ok(h) => Parsed::Done(h),
        Err(_) if ran_past.load(Ordering::Relaxed) && (bytes.len() as u64) < file_size => {
            Parsed::NeedMore
        }
        Err(e) => Parsed::Bad(e),
    }
}

/// Bytes `[from, to)` of a file on the hub. A server that ignores the range
/// and sends the whole file is read only as far as needed.
async fn get_span(hub: &Hub, url: &str, from: u64, to: u64, what: &str) -> Result<Vec<u8>> {
    let req = hub
        .client()
        .get(url)
        .header(RANGE, format!("bytes={from}-{}", to - 1));
    let resp = req
        .send()
        .await
        .map_err(|e| network_error(&hub.config.endpoint, &e))?;
    let mut resp = check(resp, what, hub.config.token.is_some()).await?;
    let mut skip = if resp.status() == StatusCode::PARTIAL_CONTENT {
        0
    } else {
        from
    };
    let want = (to - from) as usize;
    let mut out = Vec::with_capacity(want);
    while out.len() < want {
        let chunk = resp
            .chunk()
            .await
            .map_err(|e| DynoError::Network(format!("{what}: the header download broke: {e}")))?;
        let Some(mut chunk) = chunk else { break };
        if skip > 0 {
            let s = (skip as usize).min(chunk.len());
            skip -= s as u64;
            chunk = chunk.slice(s..);
        }
        let n = chunk.len().min(want - out.len());
        out.extend_from_slice(&chunk[..n]);
    }
    Ok(out)
}

/// The header of one file, from the cache or the hub. Returns it with the
/// bytes fetched now.
async fn one_header(hub: &Hub, repo: &str, commit: &str, file: &TreeFile) -> Result<(Header, u64)> {
    let what = format!("{repo}/{}", file.path);
    let cached = file
        .sha256
        .as_ref()
        .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|s| cache_dir().join(format!("{s}.gguf-header")));
    if let Some(p) = &cached {
        if let Ok(bytes) = std::fs::read(p) {
            if let Parsed::Done(h) = parse_prefix(&bytes, file.size) {
                return Ok((h, 0));
            }
            // A cache entry that no longer parses is fetched afresh.
            let _ = std::fs::remove_file(p);
        }
    }
    let url = hub.file_url(repo, commit, &file.path);
    let mut bytes: Vec<u8> = Vec::new();
    let mut span = FIRST_SPAN;
    loop {
        let to = span.min(file.size).min(MAX_HEADER_BYTES);
        let from = bytes.len() as u64;
        if to > from {
            let got = get_span(hub, &url, from, to, &what).await?;
            if got.is_empty() {
                return Err(DynoError::Network(format!(
                    "{what}: the hub sent no bytes for the header; try again later"
                )));
            }
            bytes.extend_from_slice(&got);
        }
        match parse_prefix(&bytes, file.size) {
            Parsed::Done(h) => {
                if let Some(p) = &cached {
                    // Best effort: without the cache the next look fetches again.
                    let _ = std::fs::create_dir_all(cache_dir());
                    let tmp = p.with_extension("partial");
                    if std::fs::write(&tmp, &bytes).is_ok() {
                        let _ = std::fs::rename(&tmp, p);
                    }
                }
                let fetched = bytes.len() as u64;
                return Ok((h, fetched));
            }
            Parsed::Bad(e) => {
                return Err(DynoError::Network(format!(
                    "{what} is not a readable GGUF file ({e}); pick another file of the repo"
                )))
            }
            Parsed::NeedMore if to >= MAX_HEADER_BYTES || to >= file.size => {
                return Err(DynoError::Network(format!(
                    "{what}: its header did not end within the first {} MiB, so Dyno stopped \
                     reading it; download the file to look at it",
                    to >> 20
                )))
            }
            Parsed::NeedMore => span = to.saturating_mul(2),
        }
    }
}

/// The header of a level (every part of a split model), fetched with ranged
/// requests or read from the cache.
pub async fn fetch_header(
    hub: &Hub,
    repo: &str,
    commit: &str,
    files: &[TreeFile],
) -> Result<FetchedHeader> {
    let mut fetched = 0;
    let mut joined: Option<Header> = None;
    for f in files {
        let (h, n) = one_header(hub, repo, commit, f).await?;
        fetched += n;
        match &mut joined {
            None => joined = Some(h),
            Some(j) => {
                j.tensors.extend(h.tensors);
                j.file_size += h.file_size;
            }
        }
    }
    let header = joined.ok_or_else(|| {
        DynoError::BadInput(format!(
            "{repo}: the level has no files to read a header from"
        ))
    })?;
    Ok(FetchedHeader {
        header,
        fetched_bytes: fetched,
        file_bytes: files.iter().map(|f| f.size).sum(),
        from_cache: fetched == 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_that_ends_inside_the_header_asks_for_more_and_junk_is_refused() {
        let whole = crate::model::gguf::tests::tiny_gguf();
        let size = whole.len() as u64;
        // Every cut before the header's end asks for more, every cut after
        // it parses (the padding and the weights are never needed).
        let first_done = (0..=whole.len())
            .find(|&cut| matches!(parse_prefix(&whole[..cut], size), Parsed::Done(_)))
            .expect("the whole file parses");
        assert!(first_done > 100 && first_done < whole.len(), "{first_done}");
        for cut in 0..whole.len() {
            let p = parse_prefix(&whole[..cut], size);
            if cut < first_done {
                assert!(matches!(p, Parsed::NeedMore), "cut at {cut}");
            } else {
                assert!(matches!(p, Parsed::Done(_)), "cut at {cut}");
            }
        }
        let junk = vec![7u8; 4096];
        assert!(matches!(parse_prefix(&junk, 1 << 20), Parsed::Bad(_)));
    }
}
