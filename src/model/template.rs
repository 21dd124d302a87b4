//! Dyno's built-in llama header: a template for `dyno synth` when no model
//! is at hand.
//!
//! Why: a synthetic file of a released shape needs a header of the same
//! architecture to resize ([`super::reshape`]). A person who has just
//! installed Dyno, with no model on disk and no network, has none, yet "how
//! fast would Llama 3.1 8B run here?" is the first thing they want to know.
//! This header is a one-layer llama written here, from nothing but the keys
//! llama.cpp reads, so the named llama shapes (Llama 2 and 3, SmolLM2,
//! Mixtral) can be measured on a machine that has nothing else.
//!
//! What decides the speed of the file it becomes is the same as from any
//! llama template: the tensor list comes out of the resize, and with a
//! level (`--type`) every matrix type follows the level's rules, not the
//! template's. The tensor list of a shape at a level is therefore the one a
//! real llama header gives (a unit test checks it against SmolLM2's, and
//! the `it` tests check the sizes against llama-bench's own). What differs
//! from a real Llama 3 file, and is said in the label: the tokenizer (256
//! byte tokens and pads; a benchmark feeds token ids, never text) and the
//! rope, which is plain (no `rope_freqs` long-context scaling, a table of
//! 64 numbers per head that costs nothing measurable).

use super::gguf::Header;
use super::reshape::{assemble, put_str, Out};

/// The `general.name` of the built-in header, which a synthetic file's
/// label (`dyno.synthetic.like`) names as its template:
/// [`super::synthetic_label`] reads it as "llama-3.1-8b Q4_K_M from Dyno's
/// built-in llama header".
pub const NAME: &str = "Dyno's built-in llama";

/// The architecture the built-in header is of; only shapes of it can be
/// written from it.
pub const ARCH: &str = "llama";

/// The template's own sizes: small, and each distinct (width 64, key-value
/// width 32, feed-forward 192, vocabulary 259), so every tensor dimension is
/// recognised by its size as well as its name when it is resized.
const EMBD: u64 = 64;
const HEADS: u64 = 4;
const HEADS_KV: u64 = 2;
const HEAD_DIM: u64 = 16;
const FF: u64 = 192;
/// `<unk>`, `<s>`, `</s>`, then one token per byte.
const VOCAB: u64 = 3 + 256;

/// GGUF metadata value types.
const U32: u32 = 4;
const I32: u32 = 5;
const F32: u32 = 6;
const BOOL: u32 = 7;
const STR: u32 = 8;
const ARR: u32 = 9;

/// ggml tensor types: norms are F32, matrices F16 (the template's "own
/// types", which a file written without `--type` keeps).
const GGML_F32: u32 = 0;
const GGML_F16: u32 = 1;

/// The built-in header's bytes (up to its data section, which a template
/// does not need) and the header they parse to.
pub fn header() -> (Vec<u8>, Header) {
    let mut kv = Vec::new();
    let mut n = 0u64;
    let mut entry = |kv: &mut Vec<u8>, key: &str, t: u32| {
        n += 1;
        put_str(kv, key);
        kv.extend(t.to_le_bytes());
    };
    entry(&mut kv, "general.architecture", STR);
    put_str(&mut kv, ARCH);
    entry(&mut kv, "general.name", STR);
    put_str(&mut kv, NAME);
    // MOSTLY_F16: what the matrices are.
    for (key, v) in [
        ("general.file_type", 1u32),
        ("general.quantization_version", 2),
        ("llama.context_length", 4096),
        ("llama.embedding_length", EMBD as u32),
        ("llama.block_count", 1),
        ("llama.feed_forward_length", FF as u32),
        ("llama.attention.head_count", HEADS as u32),
        ("llama.attention.head_count_kv", HEADS_KV as u32),
        ("llama.rope.dimension_count", HEAD_DIM as u32),
        ("llama.vocab_size", VOCAB as u32),
        ("tokenizer.ggml.unknown_token_id", 0),
        ("tokenizer.ggml.bos_token_id", 1),
        ("tokenizer.ggml.eos_token_id", 2),
    ] {
        entry(&mut kv, key, U32);
        kv.extend(v.to_le_bytes());
    }
    // Llama 3's rope base and norm epsilon.
    for (key, v) in [
        ("llama.rope.freq_base", 500_000f32),
        ("llama.attention.layer_norm_rms_epsilon", 1e-5),
    ] {
        entry(&mut kv, key, F32);
        kv.extend(v.to_le_bytes());
    }
    entry(&mut kv, "tokenizer.ggml.add_bos_token", BOOL);
    kv.push(1);
    // A SentencePiece vocabulary of byte tokens: any text tokenizes (byte by
    // byte), and the resize pads it to the shape's vocabulary.
    entry(&mut kv, "tokenizer.ggml.model", STR);
    put_str(&mut kv, "llama");
    let tokens: Vec<String> = ["<unk>", "<s>", "</s>"]
        .into_iter()
        .map(String::from)
        .chain((0..=255u8).map(|b| format!("<0x{b:02X}>")))
        .collect();
    entry(&mut kv, "tokenizer.ggml.tokens", ARR);
    kv.extend(STR.to_le_bytes());
    kv.extend((tokens.len() as u64).to_le_bytes());
    for t in &tokens {
        put_str(&mut kv, t);
    }
    entry(&mut kv, "tokenizer.ggml.scores", ARR);
    kv.extend(F32.to_le_bytes());
    kv.extend(VOCAB.to_le_bytes());
    for _ in 0..VOCAB {
        kv.extend(0f32.to_le_bytes());
    }
    // llama.cpp's token types: 2 unknown, 3 control, 6 byte.
    entry(&mut kv, "tokenizer.ggml.token_type", ARR);
    kv.extend(I32.to_le_bytes());
    kv.extend(VOCAB.to_le_bytes());
    for i in 0..VOCAB {
        let t: i32 = match i {
            0 => 2,
            1 | 2 => 3,
            _ => 6,
        };
        kv.extend(t.to_le_bytes());
    }
    let (q, kv_w) = (HEADS * HEAD_DIM, HEADS_KV * HEAD_DIM);
    let t = |name: &str, dims: &[u64], ggml_type| Out {
        name: name.into(),
        dims: dims.to_vec(),
        ggml_type,
    };
    // In the order llama.cpp's converter writes a llama model's tensors.
    let tensors = [
        t("token_embd.weight", &[EMBD, VOCAB], GGML_F16),
        t("blk.0.attn_norm.weight", &[EMBD], GGML_F32),
        t("blk.0.ffn_down.weight", &[FF, EMBD], GGML_F16),
        t("blk.0.ffn_gate.weight", &[EMBD, FF], GGML_F16),
        t("blk.0.ffn_up.weight", &[EMBD, FF], GGML_F16),
        t("blk.0.ffn_norm.weight", &[EMBD], GGML_F32),
        t("blk.0.attn_k.weight", &[EMBD, kv_w], GGML_F16),
        t("blk.0.attn_output.weight", &[q, EMBD], GGML_F16),
        t("blk.0.attn_q.weight", &[EMBD, q], GGML_F16),
        t("blk.0.attn_v.weight", &[EMBD, kv_w], GGML_F16),
        t("output_norm.weight", &[EMBD], GGML_F32),
    ];
    assemble(kv, n, &tensors, 32).expect("the built-in header is well formed")
}

#[cfg(test)]
mod tests {
    use super::super::reshape::{self, Origin, Shape};
    use super::*;

    #[test]
    fn the_built_in_header_reads_back_as_a_one_layer_llama() {
        let (bytes, h) = header();
        assert_eq!(h.get_str("general.architecture"), Some(ARCH));
        let s = Shape::of(&h).unwrap();
        assert_eq!(
            (s.embd, s.layers, s.ff, s.heads, s.heads_kv, s.head_dim),
            (EMBD, 1, FF, HEADS, HEADS_KV, HEAD_DIM)
        );
        assert_eq!((s.vocab, s.tied, s.experts), (VOCAB, true, 0));
        assert_eq!(bytes.len() as u64, h.data_offset);
        // Its parameters are what the shape says they are.
        let n: u64 = h.tensors.iter().map(|t| t.n_elements).sum();
        assert_eq!(n, s.n_params());
    }

    /// Every named llama shape resizes from it, with the preset's sizes and
    /// parameters, at every level `--type` accepts.
    #[test]
    fn every_llama_shape_and_level_is_written_from_it() {
        let (bytes, h) = header();
        for p in reshape::PRESETS.iter().filter(|p| p.arch == ARCH) {
            for name in reshape::level_names() {
                let level = reshape::level(name).unwrap();
                let (_, out) =
                    reshape::reshape(&bytes, &h, &p.shape, Some(&level), p.name, &Origin::seed(1))
                        .unwrap_or_else(|e| panic!("{} {name}: {e}", p.name));
                assert_eq!(Shape::of(&out).unwrap(), p.shape, "{} {name}", p.name);
                let n: u64 = out.tensors.iter().map(|t| t.n_elements).sum();
                assert_eq!(n, p.shape.n_params(), "{} {name}", p.name);
                assert_eq!(out.get_str("dyno.synthetic.like"), Some(NAME));
                assert_eq!(out.get_u64("llama.vocab_size"), Some(p.shape.vocab));
            }
        }
    }
}
