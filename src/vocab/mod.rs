//! The shared vocabulary: types every layer speaks, which use nothing above them.

pub mod failure;
