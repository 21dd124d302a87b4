-- Hugging Face downloads, and the folders `dyno models` searches besides
-- the HF cache, LM Studio and Ollama.

CREATE TABLE downloads (
    id             INTEGER PRIMARY KEY,
    repo           TEXT NOT NULL,
    -- The commit the file was taken from, and its path in the repo.
    commit_sha     TEXT NOT NULL,
    path           TEXT NOT NULL,
    -- The hub's LFS sha256, checked before the file counts as present.
    sha256         TEXT NOT NULL,
    size_bytes     INTEGER NOT NULL,
    -- The endpoint, never the token.
    endpoint       TEXT NOT NULL,
    -- 'running', 'ok', 'failed', 'cancelled'.
    status         TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'cancelled')),
    error          TEXT,
    resumed_from   INTEGER,
    downloaded_bytes INTEGER,
    local_path     TEXT,
    elapsed_ms     REAL,
    started_at     TEXT NOT NULL,
    finished_at    TEXT
);
CREATE INDEX downloads_repo ON downloads (repo);

CREATE TABLE model_dirs (
    id       INTEGER PRIMARY KEY,
    path     TEXT NOT NULL UNIQUE,
    added_at TEXT NOT NULL
);
