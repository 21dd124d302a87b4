-- Dyno's own settings, as key/value text: the Hugging Face endpoint chosen in
-- the app's Settings page or `dyno settings set`. Secrets never go here: the
-- hub token lives where huggingface_hub keeps it ($HF_HOME/token).
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
