//! Names of quantisation levels.
//!
//! `general.file_type` holds a `llama_ftype`; these are the names llama.cpp's
//! quantizer and Hugging Face file names use for them.

use super::gguf::{ggml_type_name, TensorInfo};

/// Name of a `llama_ftype` value, or `None` for ids llama.cpp has retired.
pub fn ftype_name(ftype: u32) -> Option<&'static str> {
    Some(match ftype {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        39 => "NVFP4",
        40 => "Q1_0",
        41 => "Q2_0",
        _ => return None,
    })
}

/// When a file has no `general.file_type`, name it after the type that holds
/// most of its weight bytes among 2-D tensors (1-D norms stay F32 in every
/// quant and say nothing).
pub fn guess_from_tensors(tensors: &[TensorInfo]) -> String {
    let mut bytes_by_type = std::collections::BTreeMap::<u32, u64>::new();
    for t in tensors.iter().filter(|t| t.dims.len() >= 2) {
        *bytes_by_type.entry(t.ggml_type).or_default() += t.n_bytes;
    }
    bytes_by_type
        .into_iter()
        .max_by_key(|(_, b)| *b)
        .map(|(t, _)| ggml_type_name(t).to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_levels_have_their_usual_names() {
        assert_eq!(ftype_name(15), Some("Q4_K_M"));
        assert_eq!(ftype_name(3), Some("Q4_1"));
        assert_eq!(ftype_name(1), Some("F16"));
        assert_eq!(ftype_name(4), None);
    }
}
