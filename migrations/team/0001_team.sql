-- The team store's schema (`dyno sync`, `--db postgres://`), version 1.
--
-- One file for both engines: Dyno applies it as written to PostgreSQL and
-- to SQLite (a team store in a file, and the tests that run every team
-- query on both). It uses only what both engines read the same way: TEXT,
-- BIGINT, DOUBLE PRECISION, primary keys that Dyno assigns, and no
-- engine-specific functions. Times are RFC 3339 text in UTC, as locally.
--
-- Ids are content-addressed: a run's uid is the sha256 of its machine's
-- fingerprint, its model's sha256, its start time and its id on the machine
-- that measured it (the key `dyno import` already uses), so two machines
-- never collide and a run pushed twice is stored once.

CREATE TABLE IF NOT EXISTS dyno_team (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS team_machines (
    fingerprint     TEXT PRIMARY KEY,
    cpu             TEXT NOT NULL,
    cores           BIGINT NOT NULL,
    memory_bytes    BIGINT NOT NULL,
    os              TEXT,
    -- GPU names, comma-separated, as the run reports them.
    gpus            TEXT,
    first_synced_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS team_models (
    sha256     TEXT PRIMARY KEY,
    file_name  TEXT NOT NULL,
    name       TEXT,
    arch       TEXT NOT NULL,
    quant      TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    n_params   BIGINT NOT NULL
);

-- One run: its conditions as columns for filters and rankings, and the
-- whole run (Dyno's JSON document, results left out) for show and exports.
CREATE TABLE IF NOT EXISTS team_runs (
    uid             TEXT PRIMARY KEY,
    machine         TEXT NOT NULL REFERENCES team_machines (fingerprint),
    model_sha256    TEXT NOT NULL REFERENCES team_models (sha256),
    -- The run's id in the database that measured it.
    local_id        BIGINT NOT NULL,
    status          TEXT NOT NULL,
    backend         TEXT,
    llama_cpp_build TEXT,
    dyno_version    TEXT NOT NULL,
    n_threads       BIGINT NOT NULL,
    n_gpu_layers    BIGINT,
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    -- Headlines of the first clean prefill and decode tests (tokens/s) and
    -- the time to first token (ms): never blended into one figure.
    prefill_tps     DOUBLE PRECISION,
    decode_tps      DOUBLE PRECISION,
    ttft_ms         DOUBLE PRECISION,
    n_prompt        BIGINT,
    n_gen           BIGINT,
    -- 1 when a test of the run was flagged as measured on a busy machine.
    disturbed       BIGINT NOT NULL,
    doc             TEXT NOT NULL,
    synced_at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS team_runs_model ON team_runs (model_sha256);
CREATE INDEX IF NOT EXISTS team_runs_machine ON team_runs (machine);
CREATE INDEX IF NOT EXISTS team_runs_started ON team_runs (started_at);

-- One test of a run with every repetition's samples (its JSON as in the
-- run's document).
CREATE TABLE IF NOT EXISTS team_results (
    run_uid           TEXT NOT NULL REFERENCES team_runs (uid),
    ord               BIGINT NOT NULL,
    test              TEXT NOT NULL,
    kind              TEXT NOT NULL,
    status            TEXT NOT NULL,
    mean_tokens_per_s DOUBLE PRECISION,
    n_samples         BIGINT NOT NULL,
    doc               TEXT NOT NULL,
    PRIMARY KEY (run_uid, ord)
);

-- The telemetry series of a run, pushed only with `--with-telemetry`.
CREATE TABLE IF NOT EXISTS team_telemetry (
    run_uid TEXT PRIMARY KEY REFERENCES team_runs (uid),
    points  TEXT NOT NULL
);
