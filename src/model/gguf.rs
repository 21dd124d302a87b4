//! A bounded reader for GGUF headers: metadata and tensor infos, no weights.
//!
//! The parent process reads every model with this before it spawns a worker,
//! so a missing, truncated or corrupt file fails fast with a message that
//! names the problem, and llama.cpp never sees it. The reader trusts nothing
//! the file claims: every count and length is checked against the bytes that
//! remain in the file before anything is allocated, so a header that claims
//! 2^60 tensors costs nothing.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};

// The error type lives in `crate::error` (its own file there, which depends
// on nothing), so this file and it build alone in the fuzz target (`fuzz/`).
pub use crate::error::GgufError;

const MAGIC: &[u8; 4] = b"GGUF";
/// Longest string value or name we keep. Longer strings (chat templates run
/// to a few KiB, nothing legitimate nears this) are rejected as corrupt.
const MAX_STRING_BYTES: u64 = 16 * 1024 * 1024;
/// llama.cpp's GGML_MAX_DIMS.
const MAX_DIMS: u32 = 4;

/// A metadata value. Arrays keep their element type and length only: the
/// tokenizer's vocabulary arrays are large and Dyno never needs their items.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    Str(String),
    Array { elem_type: u32, len: u64 },
}

impl Value {
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U64(v) => Some(v),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// One tensor's description from the header.
#[derive(Debug, Clone)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    /// Offset from the start of the data section.
    pub offset: u64,
    pub n_elements: u64,
    pub n_bytes: u64,
}

/// Everything in a GGUF header.
#[derive(Debug, Clone)]
pub struct Header {
    pub version: u32,
    pub metadata: BTreeMap<String, Value>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Absolute file offset where tensor data begins.
    pub data_offset: u64,
    pub file_size: u64,
}

impl Header {
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(Value::as_str)
    }
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.metadata.get(key).and_then(Value::as_u64)
    }
}

/// Block size (elements) and block bytes of each ggml type that can appear in
/// a GGUF file, from ggml's type traits. Retired ids (4, 5, 31–33, 36–38)
/// return `None`, as does anything newer than this table.
pub fn ggml_type_block(t: u32) -> Option<(u64, u64)> {
    Some(match t {
        0 => (1, 4),      // F32
        1 => (1, 2),      // F16
        2 => (32, 18),    // Q4_0
        3 => (32, 20),    // Q4_1
        6 => (32, 22),    // Q5_0
        7 => (32, 24),    // Q5_1
        8 => (32, 34),    // Q8_0
        9 => (32, 36),    // Q8_1
        10 => (256, 84),  // Q2_K
        11 => (256, 110), // Q3_K
        12 => (256, 144), // Q4_K
        13 => (256, 176), // Q5_K
        14 => (256, 210), // Q6_K
        15 => (256, 292), // Q8_K
        16 => (256, 66),  // IQ2_XXS
        17 => (256, 74),  // IQ2_XS
        18 => (256, 98),  // IQ3_XXS
        19 => (256, 50),  // IQ1_S
        20 => (32, 18),   // IQ4_NL
        21 => (256, 110), // IQ3_S
        22 => (256, 82),  // IQ2_S
        23 => (256, 136), // IQ4_XS
        24 => (1, 1),     // I8
        25 => (1, 2),     // I16
        26 => (1, 4),     // I32
        27 => (1, 8),     // I64
        28 => (1, 8),     // F64
        29 => (256, 56),  // IQ1_M
        30 => (1, 2),     // BF16
        34 => (256, 54),  // TQ1_0
        35 => (256, 66),  // TQ2_0
        39 => (32, 17),   // MXFP4
        40 => (64, 36),   // NVFP4
        41 => (128, 18),  // Q1_0
        42 => (64, 18),   // Q2_0
        _ => return None,
    })
}

/// Name of a ggml tensor type, as llama.cpp prints it.
pub fn ggml_type_name(t: u32) -> &'static str {
    const NAMES: [&str; 43] = [
        "F32", "F16", "Q4_0", "Q4_1", "?", "?", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K",
        "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
        "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16", "?", "?", "?",
        "TQ1_0", "TQ2_0", "?", "?", "?", "MXFP4", "NVFP4", "Q1_0", "Q2_0",
    ];
    NAMES.get(t as usize).copied().unwrap_or("?")
}

/// Counts bytes so every claim can be checked against what is left.
struct Cursor<R> {
    /// Buffered, and skipped with `seek_relative`, which keeps the buffer:
    /// a plain seek would drop it and cost two syscalls per vocabulary
    /// string (a second per header for a 262k-token vocabulary).
    inner: BufReader<R>,
    pos: u64,
    len: u64,
}

impl<R: Read + Seek> Cursor<R> {
    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        if self.remaining() < N as u64 {
            return Err(GgufError::Truncated(format!("file ends inside {what}")));
        }
        let mut b = [0u8; N];
        self.inner
            .read_exact(&mut b)
            .map_err(|e| GgufError::Io(e.to_string()))?;
        self.pos += N as u64;
        Ok(b)
    }
    fn u8(&mut self, what: &str) -> Result<u8, GgufError> {
        Ok(self.bytes::<1>(what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), GgufError> {
        if self.remaining() < n {
            return Err(GgufError::Truncated(format!("file ends inside {what}")));
        }
        let n_i64 =
            i64::try_from(n).map_err(|_| GgufError::Corrupt(format!("{what} is too long")))?;
        self.inner
            .seek_relative(n_i64)
            .map_err(|e| GgufError::Io(e.to_string()))?;
        self.pos += n;
        Ok(())
    }

    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let n = self.u64(what)?;
        if n > MAX_STRING_BYTES {
            return Err(GgufError::Corrupt(format!(
                "{what} claims a string of {n} bytes"
            )));
        }
        if n > self.remaining() {
            return Err(GgufError::Truncated(format!("file ends inside {what}")));
        }
        let mut buf = vec![0u8; n as usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| GgufError::Io(e.to_string()))?;
        self.pos += n;
        // Lossy: a stray byte in a description must not reject a model.
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Fixed width of a scalar type, or None for strings and arrays.
    fn scalar_width(t: u32) -> Option<u64> {
        match t {
            0 | 1 | 7 => Some(1),
            2 | 3 => Some(2),
            4..=6 => Some(4),
            10..=12 => Some(8),
            _ => None,
        }
    }

    fn value(&mut self, t: u32, key: &str) -> Result<Value, GgufError> {
        let what = format!("the value of '{key}'");
        Ok(match t {
            0 => Value::U64(self.u8(&what)? as u64),
            1 => Value::I64(self.u8(&what)? as i8 as i64),
            2 => Value::U64(u16::from_le_bytes(self.bytes(&what)?) as u64),
            3 => Value::I64(i16::from_le_bytes(self.bytes(&what)?) as i64),
            4 => Value::U64(self.u32(&what)? as u64),
            5 => Value::I64(self.u32(&what)? as i32 as i64),
            6 => Value::F64(f32::from_le_bytes(self.bytes(&what)?) as f64),
            7 => Value::Bool(self.u8(&what)? != 0),
            8 => Value::Str(self.string(&what)?),
            9 => {
                let elem_type = self.u32(&what)?;
                let len = self.u64(&what)?;
                if elem_type == 9 {
                    return Err(GgufError::Corrupt(format!("'{key}' is an array of arrays")));
                }
                if let Some(w) = Self::scalar_width(elem_type) {
                    let bytes = len
                        .checked_mul(w)
                        .ok_or_else(|| GgufError::Corrupt(format!("'{key}' claims {len} items")))?;
                    if bytes > self.remaining() {
                        return Err(GgufError::Truncated(format!(
                            "'{key}' claims {len} items, more than the file holds"
                        )));
                    }
                    self.skip(bytes, &what)?;
                } else if elem_type == 8 {
                    // Each string needs at least its 8-byte length.
                    if len.saturating_mul(8) > self.remaining() {
                        return Err(GgufError::Truncated(format!(
                            "'{key}' claims {len} strings, more than the file holds"
                        )));
                    }
                    for _ in 0..len {
                        let n = self.u64(&what)?;
                        if n > MAX_STRING_BYTES {
                            return Err(GgufError::Corrupt(format!(
                                "an item of '{key}' claims {n} bytes"
                            )));
                        }
                        self.skip(n, &what)?;
                    }
                } else {
                    return Err(GgufError::Corrupt(format!(
                        "'{key}' has items of unknown type {elem_type}"
                    )));
                }
                Value::Array { elem_type, len }
            }
            10 => Value::U64(self.u64(&what)?),
            11 => Value::I64(self.u64(&what)? as i64),
            12 => Value::F64(f64::from_le_bytes(self.bytes(&what)?)),
            other => {
                return Err(GgufError::Corrupt(format!(
                    "'{key}' has unknown value type {other}"
                )))
            }
        })
    }
}

/// Read and validate the header of the GGUF file at `path`.
pub fn read_header(path: &Path) -> Result<Header, GgufError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => GgufError::NotFound,
        std::io::ErrorKind::PermissionDenied => GgufError::Io("permission denied".into()),
        _ => GgufError::Io(e.to_string()),
    })?;
    if meta.is_dir() {
        return Err(GgufError::IsDirectory);
    }
    let file = File::open(path).map_err(|e| GgufError::Io(e.to_string()))?;
    let len = meta.len();
    read_header_from(file, len)
}

/// The files of the model whose first file is `path`, in order: `path`
/// alone, or every part of a split model, found as llama.cpp finds them
/// (`x-00001-of-00003.gguf`, `x-00002-of-00003.gguf` … beside it, as the
/// header's `split.count` says).
pub fn split_files(path: &Path, h: &Header) -> Result<Vec<PathBuf>, GgufError> {
    let count = h.get_u64("split.count").unwrap_or(0);
    if count <= 1 {
        return Ok(vec![path.to_path_buf()]);
    }
    let no = h.get_u64("split.no").unwrap_or(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = name
        .strip_suffix(&format!("-{:05}-of-{count:05}.gguf", no + 1))
        .ok_or_else(|| {
            GgufError::Split(format!(
                "this is part {} of a model split into {count} files, but it is named {name}; llama.cpp finds the parts by names ending -00001-of-{count:05}.gguf, -00002-of-{count:05}.gguf …, so keep the names the files were published with",
                no + 1
            ))
        })?;
    let part = |i: u64| path.with_file_name(format!("{prefix}-{i:05}-of-{count:05}.gguf"));
    if no != 0 {
        return Err(GgufError::Split(format!(
            "this is part {} of {count} of a split model; give its first part, {}",
            no + 1,
            part(1).display()
        )));
    }
    Ok((1..=count).map(part).collect())
}

/// A model's header, every part of a split model read: the first part's
/// metadata, every part's tensors in order, and the parts' sizes summed.
/// A model's parameters, size and shape are all of its parts'; the first
/// alone would record half a model. (Each tensor's `offset` stays relative
/// to its own part's data.)
pub fn read_model_header(path: &Path) -> Result<Header, GgufError> {
    let mut h = read_header(path)?;
    for p in split_files(path, &h)?.iter().skip(1) {
        let part = read_part(p)?;
        h.tensors.extend(part.tensors);
        h.file_size += part.file_size;
    }
    Ok(h)
}

/// The header of `p`, a later part of a split model, its errors saying so.
pub fn read_part(p: &Path) -> Result<Header, GgufError> {
    read_header(p).map_err(|e| part_error(p, e))
}

/// [`read_front`] of `p`, a later part of a split model, its errors saying
/// so.
pub fn read_part_front(p: &Path) -> Result<(Vec<u8>, Header), GgufError> {
    read_front(p, None).map_err(|e| part_error(p, e))
}

fn part_error(p: &Path, e: GgufError) -> GgufError {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    GgufError::Split(match e {
        GgufError::NotFound => format!(
            "{name}, a part of this split model, is not beside it; download every part into one folder"
        ),
        e => format!("{name}, a part of this split model: {e}"),
    })
}

/// A GGUF file's front: its bytes up to the tensor data, and its header.
/// What a synthetic file copies and what split parts are joined from.
/// `size` is the whole file's size when `path` holds only the front (a
/// header fetched from the hub), which may end inside the padding before
/// the data: the padding is zeros, so it is filled in.
pub fn read_front(path: &Path, size: Option<u64>) -> Result<(Vec<u8>, Header), GgufError> {
    let h = match size {
        None => read_header(path)?,
        Some(size) => read_header_from(
            File::open(path).map_err(|e| GgufError::Io(e.to_string()))?,
            size,
        )?,
    };
    Ok((front_bytes(path, &h)?, h))
}

/// The bytes of `path` up to `h`'s tensor data, the padding filled in
/// where the file ends inside it ([`read_front`] for a header already read).
pub fn front_bytes(path: &Path, h: &Header) -> Result<Vec<u8>, GgufError> {
    let mut bytes = Vec::with_capacity(h.data_offset as usize);
    File::open(path)
        .and_then(|f| f.take(h.data_offset).read_to_end(&mut bytes))
        .map_err(|e| GgufError::Io(e.to_string()))?;
    bytes.resize(h.data_offset as usize, 0);
    Ok(bytes)
}

/// Read a header from any seekable source of `len` bytes (used by the file
/// reader and by the fuzz target).
pub fn read_header_from<R: Read + Seek>(inner: R, len: u64) -> Result<Header, GgufError> {
    let mut c = Cursor {
        inner: BufReader::with_capacity(1 << 16, inner),
        pos: 0,
        len,
    };
    if len == 0 {
        return Err(GgufError::Empty);
    }
    if len < 4 {
        return Err(GgufError::NotGguf);
    }
    if &c.bytes::<4>("the magic number")? != MAGIC {
        return Err(GgufError::NotGguf);
    }
    let version = c.u32("the version")?;
    match version {
        2 | 3 => {}
        1 => return Err(GgufError::UnsupportedVersion(1)),
        v => return Err(GgufError::UnsupportedVersion(v)),
    }
    let n_tensors = c.u64("the tensor count")?;
    let n_kv = c.u64("the metadata count")?;
    // A KV pair takes at least 8 (key length) + 4 (type) + 1 bytes, a tensor
    // info at least 8 + 4 + 4 + 8. Reject counts the file cannot hold before
    // looping over them.
    if n_kv.saturating_mul(13) > c.remaining() {
        return Err(GgufError::Corrupt(format!(
            "the header claims {n_kv} metadata entries, more than the file can hold"
        )));
    }
    if n_tensors.saturating_mul(24) > c.remaining() {
        return Err(GgufError::Corrupt(format!(
            "the header claims {n_tensors} tensors, more than the file can hold"
        )));
    }

    let mut metadata = BTreeMap::new();
    for i in 0..n_kv {
        let key = c.string(&format!("metadata key #{i}"))?;
        let t = c.u32(&format!("the type of '{key}'"))?;
        let v = c.value(t, &key)?;
        metadata.insert(key, v);
    }

    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(v) => match v.as_u64() {
            Some(a) if a > 0 && a.is_power_of_two() => a,
            _ => {
                return Err(GgufError::Corrupt(
                    "general.alignment is not a power of two".into(),
                ))
            }
        },
    };

    let mut tensors = Vec::with_capacity(n_tensors.min(1 << 16) as usize);
    for i in 0..n_tensors {
        tensors.push(tensor_info(&mut c, i, alignment)?);
    }

    let data_offset = c.pos.div_ceil(alignment) * alignment;
    for t in &tensors {
        let end = data_offset
            .checked_add(t.offset)
            .and_then(|s| s.checked_add(t.n_bytes))
            .ok_or_else(|| {
                GgufError::Corrupt(format!("tensor '{}' has an absurd offset", t.name))
            })?;
        if end > len {
            return Err(GgufError::Truncated(format!(
                "tensor '{}' ends at byte {end} but the file has {len} bytes",
                t.name
            )));
        }
    }

    Ok(Header {
        version,
        metadata,
        tensors,
        alignment,
        data_offset,
        file_size: len,
    })
}

/// Reads tensor `i`'s entry of the header, refusing a shape, type or offset
/// llama.cpp could not load.
fn tensor_info<R: Read + Seek>(
    c: &mut Cursor<R>,
    i: u64,
    alignment: u64,
) -> Result<TensorInfo, GgufError> {
    let name = c.string(&format!("the name of tensor #{i}"))?;
    let n_dims = c.u32(&format!("the dimensions of '{name}'"))?;
    if n_dims == 0 || n_dims > MAX_DIMS {
        return Err(GgufError::Corrupt(format!(
            "tensor '{name}' has {n_dims} dimensions"
        )));
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    let mut n_elements: u64 = 1;
    for _ in 0..n_dims {
        let d = c.u64(&format!("the shape of '{name}'"))?;
        n_elements = n_elements
            .checked_mul(d)
            .filter(|n| *n < (1u64 << 62))
            .ok_or_else(|| GgufError::Corrupt(format!("tensor '{name}' has an absurd shape")))?;
        dims.push(d);
    }
    let ggml_type = c.u32(&format!("the type of '{name}'"))?;
    let (block, block_bytes) = ggml_type_block(ggml_type).ok_or_else(|| {
        GgufError::Corrupt(format!("tensor '{name}' has unknown type {ggml_type}"))
    })?;
    if dims[0] % block != 0 {
        return Err(GgufError::Corrupt(format!(
            "tensor '{name}' has a row of {} elements, not a multiple of its block size {block}",
            dims[0]
        )));
    }
    let offset = c.u64(&format!("the offset of '{name}'"))?;
    if offset % alignment != 0 {
        return Err(GgufError::Corrupt(format!(
            "tensor '{name}' is misaligned (offset {offset}, alignment {alignment})"
        )));
    }
    // Checked: n_elements is capped at 2^62 only, and an 8-byte type
    // (I64, F64) times that wraps u64. A wrapped size is small, passes the
    // end-of-file check below, and the memory check then trusts it: a
    // 64-byte file was accepted as holding an F64 tensor of 2^61
    // elements and 0 bytes.
    let n_bytes = (n_elements / block)
        .checked_mul(block_bytes)
        .ok_or_else(|| GgufError::Corrupt(format!("tensor '{name}' has an absurd shape")))?;
    Ok(TensorInfo {
        name,
        dims,
        ggml_type,
        offset,
        n_elements,
        n_bytes,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Cursor as IoCursor;

    /// A minimal valid GGUF v3 file: two KVs and one F32 tensor of 8 elements.
    pub(crate) fn tiny_gguf() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"GGUF");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes()); // tensors
        b.extend_from_slice(&2u64.to_le_bytes()); // kvs
        let s = |b: &mut Vec<u8>, s: &str| {
            b.extend_from_slice(&(s.len() as u64).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        };
        s(&mut b, "general.architecture");
        b.extend_from_slice(&8u32.to_le_bytes());
        s(&mut b, "llama");
        s(&mut b, "general.file_type");
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        s(&mut b, "w");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&8u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // F32
        b.extend_from_slice(&0u64.to_le_bytes());
        while b.len() % 32 != 0 {
            b.push(0);
        }
        b.extend_from_slice(&[0u8; 32]);
        b
    }

    fn parse(b: &[u8]) -> Result<Header, GgufError> {
        read_header_from(IoCursor::new(b), b.len() as u64)
    }

    #[test]
    fn reads_a_tiny_valid_file() {
        let h = parse(&tiny_gguf()).unwrap();
        assert_eq!(h.version, 3);
        assert_eq!(h.get_str("general.architecture"), Some("llama"));
        assert_eq!(h.tensors.len(), 1);
        assert_eq!(h.tensors[0].n_bytes, 32);
        assert_eq!(h.data_offset % 32, 0);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = tiny_gguf();
        for cut in 0..b.len() {
            assert!(parse(&b[..cut]).is_err(), "cut at {cut} was accepted");
        }
    }

    #[test]
    fn absurd_counts_are_rejected_without_allocating() {
        let mut b = tiny_gguf();
        b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(parse(&b), Err(GgufError::Corrupt(_))));
        let mut b = tiny_gguf();
        b[16..24].copy_from_slice(&(1u64 << 60).to_le_bytes());
        assert!(matches!(parse(&b), Err(GgufError::Corrupt(_))));
    }

    /// Found by review, missed by 30 minutes of fuzzing (no branch guides a
    /// mutator to a product in [2^61, 2^62)); the fuzz target's check of
    /// n_bytes catches it when given this input.
    #[test]
    fn a_byte_size_that_overflows_is_rejected() {
        let mut b = Vec::new();
        b.extend_from_slice(b"GGUF");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes()); // tensors
        b.extend_from_slice(&0u64.to_le_bytes()); // kvs
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(b"w");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(1u64 << 61).to_le_bytes()); // under the 2^62 cap
        b.extend_from_slice(&28u32.to_le_bytes()); // F64: 2^64 bytes
        b.extend_from_slice(&0u64.to_le_bytes());
        while b.len() % 32 != 0 {
            b.push(0);
        }
        assert!(matches!(parse(&b), Err(GgufError::Corrupt(_))));
    }

    #[test]
    fn bad_magic_and_versions() {
        let mut b = tiny_gguf();
        b[0] = b'X';
        assert!(matches!(parse(&b), Err(GgufError::NotGguf)));
        let mut b = tiny_gguf();
        b[4..8].copy_from_slice(&9u32.to_le_bytes());
        assert!(matches!(parse(&b), Err(GgufError::UnsupportedVersion(9))));
        assert!(matches!(parse(&[]), Err(GgufError::Empty)));
    }

    #[test]
    fn type_table_matches_known_sizes() {
        // Q4_K_M's main type: 256 elements in 144 bytes = 4.5 bits per weight.
        assert_eq!(ggml_type_block(12), Some((256, 144)));
        assert_eq!(ggml_type_name(12), "Q4_K");
        assert_eq!(ggml_type_block(4), None);
    }
}
