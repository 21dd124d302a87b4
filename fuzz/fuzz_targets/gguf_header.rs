//! Fuzz target for Dyno's GGUF header reader (`src/model/gguf.rs`).
//!
//! The parent process runs this reader on every model file before it spawns
//! a worker, and a file can be anything a user points Dyno at, so the reader
//! must return an error, never panic, hang or allocate without bound. A panic
//! or a timeout is therefore a finding by itself; `scripts/test/fuzz.sh` runs this
//! with `-malloc_limit_mb=64`, so an allocation sized by a count the file
//! claims instead of by the bytes it holds is a finding too.
//!
//! When the reader accepts an input, the asserts below check what it
//! promises about the header it returns: each is something `gguf.rs` checks
//! or computes before returning `Ok`, so a failing assert is a bug in the
//! reader, not a stricter opinion of what a GGUF file should be.

#![no_main]

use libfuzzer_sys::fuzz_target;

/// The reader itself and its error type, compiled from the app's source
/// rather than a copy, so the fuzzer always tests what ships. Both depend only
/// on std and thiserror for this reason; the app's helpers this target never
/// calls are dead code.
#[allow(dead_code)]
#[path = "../../src/model/gguf.rs"]
mod gguf;
#[path = "../../src/error/gguf.rs"]
mod gguf_error;
/// The reader names its error `crate::error::GgufError`, as in the app.
mod error {
    pub use super::gguf_error::GgufError;
}

use gguf::{ggml_type_block, GgufError, Value};

fuzz_target!(|data: &[u8]| {
    let len = data.len() as u64;
    let header = match gguf::read_header_from(std::io::Cursor::new(data), len) {
        Ok(h) => h,
        // Every read is preceded by a check against the bytes that remain,
        // so on an in-memory source whose length is exact no read can hit
        // the end: an `Io` error here means the reader's count of bytes left
        // drifted from the truth, and a short file would be reported as
        // unreadable instead of truncated.
        Err(GgufError::Io(e)) => panic!("I/O error on an in-memory source: {e}"),
        Err(_) => return,
    };

    // Magic and version are checked first, and the counts are read straight
    // after them, so an accepted input has all of them at fixed offsets.
    assert_eq!(&data[..4], b"GGUF");
    assert!(matches!(header.version, 2 | 3));
    assert_eq!(
        u32::from_le_bytes(data[4..8].try_into().unwrap()),
        header.version
    );
    let n_tensors = u64::from_le_bytes(data[8..16].try_into().unwrap());
    let n_kv = u64::from_le_bytes(data[16..24].try_into().unwrap());
    assert_eq!(header.file_size, len);
    // One tensor info per claimed tensor; metadata can be fewer than claimed
    // because a repeated key replaces the earlier value.
    assert_eq!(header.tensors.len() as u64, n_tensors);
    assert!(header.metadata.len() as u64 <= n_kv);

    // The reader rejects any other general.alignment and defaults to 32.
    assert!(header.alignment > 0 && header.alignment.is_power_of_two());
    if !header.metadata.contains_key("general.alignment") {
        assert_eq!(header.alignment, 32);
    }
    // Data starts at the end of the tensor infos rounded up to the alignment,
    // and the infos come after the 24-byte fixed part.
    assert_eq!(header.data_offset % header.alignment, 0);
    assert!(header.data_offset >= 24);
    // Not asserted: data_offset <= file_size when there are no tensors. The
    // reader only bounds data_offset through the tensors' ends (checked
    // below), so a header with no tensors that is not padded to the
    // alignment is accepted with data_offset past the end, as llama.cpp
    // accepts it.

    // Arrays of arrays and unknown element types are rejected.
    for v in header.metadata.values() {
        if let Value::Array { elem_type, .. } = v {
            assert!(
                *elem_type <= 12 && *elem_type != 9,
                "array of type {elem_type}"
            );
        }
    }

    for t in &header.tensors {
        // 1..=4 dimensions (GGML_MAX_DIMS), a known type, whole blocks per
        // row, and an aligned offset are each checked while reading.
        assert!((1..=4).contains(&t.dims.len()), "{} dims", t.dims.len());
        let (block, block_bytes) =
            ggml_type_block(t.ggml_type).expect("accepted a tensor of unknown type");
        assert_eq!(t.dims[0] % block, 0);
        assert_eq!(t.offset % header.alignment, 0);
        // The element count is the product of the shape, computed with a
        // checked multiply and kept below 2^62.
        let product = t
            .dims
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .expect("accepted a shape whose product overflows");
        assert_eq!(t.n_elements, product);
        assert!(t.n_elements < 1 << 62);
        // The byte size is whole blocks times the block's bytes. Checked
        // here, so a size that wrapped in the reader shows up as a mismatch
        // instead of as a small number that passes the bound below.
        let n_bytes = (t.n_elements / block)
            .checked_mul(block_bytes)
            .expect("accepted a tensor whose byte size overflows u64");
        assert_eq!(t.n_bytes, n_bytes);
        // The reader's last check: every tensor's data lies inside the file.
        let end = header
            .data_offset
            .checked_add(t.offset)
            .and_then(|s| s.checked_add(t.n_bytes))
            .expect("accepted a tensor whose end overflows u64");
        assert!(
            end <= header.file_size,
            "tensor '{}' ends at {end}, past the file's {} bytes",
            t.name,
            header.file_size
        );
    }
});
