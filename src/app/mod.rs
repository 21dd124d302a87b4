//! The use cases that both front ends share: the CLI (`cli/`) and the desktop
//! app's commands (`src-tauri/`) call these functions and render what they
//! return, so a feature behaves the same whichever way a person reaches it.
//! Inputs and outputs are typed structs (serialised for `--json` and the UI
//! alike); nothing here prints or knows about a terminal or a window.
//!
//! This layer is being grown one use case at a time; what is not here yet
//! still lives in `cli/` and is called from there by the app.

pub mod downloads;
pub mod models;
pub mod presets;
pub mod settings;
