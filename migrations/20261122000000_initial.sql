-- Dyno's first schema. Every figure keeps its conditions: the machine, the
-- model file (with sha256) and the full configuration of its run.

CREATE TABLE machines (
    id             INTEGER PRIMARY KEY,
    fingerprint    TEXT NOT NULL UNIQUE,
    hostname       TEXT,
    os             TEXT,
    kernel         TEXT,
    cpu            TEXT NOT NULL,
    cores_physical INTEGER,
    cores_logical  INTEGER NOT NULL,
    memory_bytes   INTEGER NOT NULL,
    -- Measured read bandwidth (the decode roofline's ceiling), cached.
    memory_bandwidth_bytes_per_s INTEGER,
    bandwidth_threads            INTEGER,
    bandwidth_measured_at        TEXT,
    -- NVIDIA GPUs from NVML (JSON list; datasheet bandwidth for the roofline).
    gpus_json      TEXT,
    created_at     TEXT NOT NULL
);

CREATE TABLE models (
    id             INTEGER PRIMARY KEY,
    sha256         TEXT NOT NULL,
    path           TEXT NOT NULL,
    file_name      TEXT NOT NULL,
    arch           TEXT NOT NULL,
    name           TEXT,
    quant          TEXT NOT NULL,
    size_bytes     INTEGER NOT NULL,
    weight_bytes   INTEGER NOT NULL,
    n_params       INTEGER NOT NULL,
    n_layers       INTEGER,
    context_length INTEGER,
    gguf_version   INTEGER NOT NULL,
    -- The sha256 cache key: a file with the same path, size and mtime is
    -- not hashed again.
    file_mtime_ns  INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    UNIQUE (path, sha256)
);

-- A group of runs made by one command (`dyno bench`, later `dyno sweep`).
CREATE TABLE sweeps (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    machine_id INTEGER REFERENCES machines(id),
    args_json  TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- One model under one configuration.
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    sweep_id        INTEGER REFERENCES sweeps(id),
    machine_id      INTEGER NOT NULL REFERENCES machines(id),
    model_id        INTEGER NOT NULL REFERENCES models(id),
    status          TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'cancelled')),
    error           TEXT,
    -- Machine-readable failure kind ('crashed', 'timed_out', 'load_failed',
    -- 'unsupported_architecture', 'test_failed', 'interrupted', ...).
    error_code      TEXT,
    -- The process measuring this run, so a run left 'running' by a killed
    -- Dyno can be told apart from one still in progress.
    owner_pid       INTEGER,
    owner_host      TEXT,
    config_json     TEXT NOT NULL,
    n_threads       INTEGER NOT NULL,
    n_gpu_layers    INTEGER,
    n_batch         INTEGER NOT NULL,
    n_ubatch        INTEGER NOT NULL,
    flash_attn      TEXT NOT NULL,
    cache_type      TEXT NOT NULL,
    -- 1 mmap, 0 read into memory, NULL llama.cpp's automatic load mode.
    use_mmap        INTEGER,
    reps            INTEGER NOT NULL,
    backend         TEXT,
    llama_cpp_build TEXT,
    devices_json    TEXT,
    system_info     TEXT,
    -- Model load, measured on its own and never part of a tokens/s figure.
    load_time_ms    REAL,
    model_desc      TEXT,
    peak_rss_bytes  INTEGER,
    -- Which telemetry sources this machine had (JSON), so a missing energy
    -- figure can say why.
    telemetry_sources TEXT,
    dyno_version    TEXT NOT NULL,
    started_at      TEXT NOT NULL,
    finished_at     TEXT
);
CREATE INDEX runs_sweep ON runs (sweep_id);

-- One test of a run, with every repetition's raw timings.
CREATE TABLE results (
    id                  INTEGER PRIMARY KEY,
    run_id              INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    test                TEXT NOT NULL,
    kind                TEXT NOT NULL,
    n_prompt            INTEGER NOT NULL,
    n_gen               INTEGER NOT NULL,
    n_depth             INTEGER NOT NULL,
    n_parallel          INTEGER NOT NULL,
    reps                INTEGER NOT NULL,
    -- 'running' while repetitions arrive: each sample is written as it is
    -- measured, so a killed Dyno loses none of them.
    status              TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'cancelled')),
    error               TEXT,
    samples_json        TEXT NOT NULL,
    mean_tokens_per_s   REAL,
    stddev_tokens_per_s REAL,
    created_at          TEXT NOT NULL
);
CREATE INDEX results_run ON results (run_id);

-- What the machine did while a run was measured: one row per 100 ms
-- reading, tagged with the phase and the test (result) in progress.
CREATE TABLE telemetry (
    run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    result_id          INTEGER REFERENCES results(id) ON DELETE CASCADE,
    t_ms               REAL NOT NULL,
    phase              TEXT NOT NULL,
    cpu_util_pct       REAL,
    -- One byte per core, 0-100.
    core_util_pct      BLOB,
    cpu_freq_mhz       INTEGER,
    ram_used_bytes     INTEGER,
    worker_rss_bytes   INTEGER,
    cpu_temp_c         REAL,
    cpu_energy_uj      INTEGER,
    gpu_util_pct       REAL,
    gpu_mem_used_bytes INTEGER,
    gpu_power_mw       INTEGER,
    gpu_energy_mj      INTEGER,
    gpu_temp_c         REAL,
    gpu_sm_clock_mhz   INTEGER,
    gpu_mem_clock_mhz  INTEGER,
    gpu_throttle       INTEGER
);
CREATE INDEX telemetry_run ON telemetry (run_id);
