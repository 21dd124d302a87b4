-- Benchmarks of a running server (`dyno serve-bench`): one row per run,
-- against one endpoint and model, and one row per test (a prompt length,
-- generation length, context depth and concurrency) holding every request's
-- measurements as JSON. A test's row is written when its requests end, so a
-- killed Dyno keeps every finished test. The endpoint is stored without
-- credentials or query; the API key is never stored.
CREATE TABLE server_runs (
    id             INTEGER PRIMARY KEY,
    machine_id     INTEGER REFERENCES machines(id),
    endpoint       TEXT NOT NULL,
    server_kind    TEXT NOT NULL,
    server_version TEXT,
    model          TEXT NOT NULL,
    -- What the server said about itself (ServerInfo) and the plan, as JSON.
    server_json    TEXT NOT NULL,
    plan_json      TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'cancelled')),
    error_code     TEXT,
    error          TEXT,
    owner_pid      INTEGER,
    owner_host     TEXT,
    dyno_version   TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    finished_at    TEXT
);

CREATE TABLE server_results (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES server_runs(id) ON DELETE CASCADE,
    test          TEXT NOT NULL,
    n_prompt      INTEGER NOT NULL,
    n_gen         INTEGER NOT NULL,
    n_depth       INTEGER NOT NULL,
    concurrency   INTEGER NOT NULL,
    prefix_cache  INTEGER NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'cancelled')),
    error         TEXT,
    -- From the first request sent to the last one ended.
    wall_ms       REAL NOT NULL,
    requests_json TEXT NOT NULL,
    created_at    TEXT NOT NULL
);

CREATE INDEX server_results_run ON server_results(run_id);
