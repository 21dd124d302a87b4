//! Dyno's desktop app: a Tauri v2 shell whose commands (`commands`) call the
//! dyno core, with long work run as cancellable jobs (`jobs`) that stream
//! progress to the web UI in `ui/`.

// The unit tests build the library without `run` and `handler` (see `run`),
// so the commands they reach are unused there; the release build, which
// clippy also checks, still reports anything truly dead.
#![cfg_attr(test, allow(dead_code))]

mod commands;
mod error;
pub mod events;
mod jobs;
mod serve;
mod settings;
mod state;
mod team;

pub use error::AppError;

/// The app's own types that cross to the UI, for the bindings test
/// (tests/ts_bindings.rs), which generates their TypeScript twins.
pub mod wire {
    pub use crate::commands::AppInfo;
    pub use crate::error::ErrorCode;
    pub use crate::serve::ServerRunItem;
}

/// The commands, named once: the handler Tauri dispatches to, and
/// [`COMMANDS`], from which the bindings test writes the UI's `Command` type, so a
/// command the UI calls that the app does not register fails `npm run check`.
macro_rules! commands {
    ($($module:ident :: $name:ident),+ $(,)?) => {
        /// Every command's name, as the UI invokes it.
        pub const COMMANDS: &[&str] = &[$(stringify!($name)),+];

        #[cfg(not(test))]
        fn handler<R: tauri::Runtime>(
        ) -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$($module::$name),+]
        }
    };
}

commands! {
    commands::app_info,
    commands::version_text,
    commands::hw,
    commands::power,
    commands::runs,
    commands::result_list,
    commands::run,
    commands::sweeps,
    commands::sweep,
    commands::telemetry,
    commands::models,
    commands::model_places,
    commands::add_model_place,
    commands::remove_model_place,
    commands::preset_estimates,
    commands::hub_search,
    commands::hub_levels,
    commands::predict,
    commands::predict_files,
    commands::predict_accuracy,
    commands::synth_file,
    commands::synth_options,
    commands::synth_name,
    commands::compare,
    commands::card_svg,
    commands::export_text,
    commands::export_card,
    commands::cancel,
    commands::start_sweep,
    commands::start_bench,
    commands::hub_pull,
    settings::hub_settings,
    settings::set_hub_endpoint,
    settings::save_hub_token,
    settings::remove_hub_token,
    settings::check_hub,
    settings::discard_download,
    settings::rpc_server_start,
    settings::rpc_server_stop,
    settings::rpc_server_status,
    serve::serve_runs,
    serve::serve_run,
    serve::start_serve_bench,
    team::team_status,
    team::save_team_url,
    team::team_sync,
    team::team_machines,
}

/// Start the app: one window showing the built UI.
///
/// Not compiled into the library's unit tests, nor is [`handler`]: Tauri's
/// dispatch is generic over every command's future and result, a large
/// share of the library's machine code, and no unit test starts the app (the end-to-end
/// test does, through the release binary).
#[cfg(not(test))]
pub fn run() {
    tauri::Builder::default()
        // Native Open and Save dialogs; the capability allows those two only.
        .plugin(tauri_plugin_dialog::init())
        .manage(commands::App::from_env())
        .setup(|app| {
            use tauri::Manager;
            // The title carries the version, so a screenshot says which
            // Dyno measured what it shows.
            if let Some(w) = app.get_webview_window("main") {
                let _ = w.set_title(&format!("Dyno {}", env!("CARGO_PKG_VERSION")));
            }
            // llama.cpp's backend modules may ship in the app's resources
            // (`backends/`); the workers this process starts look there after
            // DYNO_BACKEND_DIR and the executable's folder. Set before any
            // worker starts; nothing else in the app reads this variable.
            if let Ok(dir) = app.path().resource_dir() {
                if std::env::var_os("DYNO_RESOURCE_DIR").is_none() {
                    std::env::set_var("DYNO_RESOURCE_DIR", dir.join("backends"));
                }
            }
            Ok(())
        })
        .invoke_handler(handler())
        .run(tauri::generate_context!())
        .expect("error while running the Dyno app");
}
