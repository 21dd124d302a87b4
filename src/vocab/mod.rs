//! The shared vocabulary: small types that every layer speaks (statuses
//! today), kept at the bottom so that using them never pulls in a layer above.

pub mod status;
