//! ggml's quantisers and dequantisers on plain buffers, for synthetic
//! weights ([`crate::model::synth`]). They run in the worker like every other
//! call into ggml: an unexpected type aborts the process, and that must cost
//! only a worker.

use llama_cpp_sys_2 as sys;

use crate::model::synth::{can_synthesise, Codec};

/// The [`Codec`] that is ggml itself.
pub struct Ggml;

impl Codec for Ggml {
    fn quantise(&self, t: u32, values: &[f32], rows: usize, n: usize) -> Vec<u8> {
        assert!(
            can_synthesise(t) && values.len() == rows * n,
            "synth checks the type and the pool's size before quantising"
        );
        let row_bytes = crate::model::synth::row_bytes(t, n as u64) as usize;
        let mut out = vec![0u8; rows * row_bytes];
        // Types that ggml insists on an importance matrix for get a flat one
        // (every column weighs the same); the others none, as llama-quantize
        // without `--imatrix` quantises them (and an importance matrix makes
        // ggml search for each block's scales, ten times slower).
        // SAFETY: a query of a static table.
        let needs = unsafe { sys::ggml_quantize_requires_imatrix(t as sys::ggml_type) };
        let ones = vec![1.0f32; if needs { n } else { 0 }];
        // SAFETY: `t` passed `can_synthesise`, so ggml quantises it (any other
        // type aborts); `values` holds rows × n floats and `out` rows × the
        // type's row size, which is what the call writes; the importance
        // matrix is null or `ones`, n entries, one per column.
        let written = unsafe {
            sys::ggml_quantize_chunk(
                t as sys::ggml_type,
                values.as_ptr(),
                out.as_mut_ptr().cast(),
                0,
                rows as i64,
                n as i64,
                if needs {
                    ones.as_ptr()
                } else {
                    std::ptr::null()
                },
            )
        };
        assert_eq!(written, out.len(), "ggml wrote the rows it was given");
        out
    }

    fn dequantise(&self, t: u32, raw: &[u8], n: usize) -> Vec<f32> {
        let mut out = vec![0f32; n];
        if t == 0 {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            return out;
        }
        assert!(
            can_synthesise(t) && raw.len() as u64 >= crate::model::synth::row_bytes(t, n as u64),
            "the caller passes a whole tensor of a known type"
        );
        // SAFETY: ggml's type traits are static; `to_float` reads the blocks
        // of `n` elements that `raw` holds (checked above) and writes n floats
        // into `out`.
        unsafe {
            let traits = sys::ggml_get_type_traits(t as sys::ggml_type);
            if let Some(to_float) = traits.as_ref().and_then(|tr| tr.to_float) {
                to_float(raw.as_ptr().cast(), out.as_mut_ptr(), n as i64);
            }
        }
        out
    }
}
