-- The standard quantisation sweep (`dyno sweep`): a sweep's levels, and the
-- quality of each level against the sweep's highest-precision member.

-- 'bench' sweeps keep these NULL.
ALTER TABLE sweeps ADD COLUMN source_kind TEXT;
-- Identity of a sweep's work (source, levels, plan, quality settings and
-- machine), so running the same sweep again resumes it.
ALTER TABLE sweeps ADD COLUMN resume_key TEXT;
-- 'running', 'ok' (every level measured), 'partial' (some failed),
-- 'cancelled', 'interrupted' (the process died).
ALTER TABLE sweeps ADD COLUMN status TEXT;
ALTER TABLE sweeps ADD COLUMN owner_pid INTEGER;
ALTER TABLE sweeps ADD COLUMN owner_host TEXT;
-- The model every level's quality is measured against, and how.
ALTER TABLE sweeps ADD COLUMN reference_sha256 TEXT;
ALTER TABLE sweeps ADD COLUMN quality_tokens INTEGER;
ALTER TABLE sweeps ADD COLUMN quality_topk INTEGER;
ALTER TABLE sweeps ADD COLUMN finished_at TEXT;
CREATE INDEX sweeps_resume_key ON sweeps (resume_key);

CREATE TABLE sweep_levels (
    id          INTEGER PRIMARY KEY,
    sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    -- Highest precision first.
    position    INTEGER NOT NULL,
    level       TEXT NOT NULL,
    -- 'file' (given), 'base' (the --from input itself), 'quantized' (made
    -- locally, cached), later 'hub'.
    origin      TEXT NOT NULL,
    path        TEXT,
    model_id    INTEGER REFERENCES models(id),
    status      TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'failed', 'cancelled')),
    error_code  TEXT,
    error       TEXT,
    -- Time the quantizer took, when this run made the file.
    quantize_ms REAL,
    -- The latest attempt at this level began here; the sweep's runs of this
    -- model from before it are earlier attempts (kept, not shown).
    attempt_at  TEXT,
    quality_error TEXT,
    updated_at  TEXT NOT NULL,
    UNIQUE (sweep_id, level)
);

-- Quality of a model against a reference model, on the bundled text. Keyed
-- by file digests and settings, so it is computed once and reused by every
-- sweep that needs it.
CREATE TABLE quality (
    id               INTEGER PRIMARY KEY,
    model_sha256     TEXT NOT NULL,
    reference_sha256 TEXT NOT NULL,
    -- Which text (its sha256) and how it was cut and kept.
    text_sha256      TEXT NOT NULL,
    chunk_tokens     INTEGER NOT NULL,
    n_chunks         INTEGER NOT NULL,
    -- Reference top-k kept per position; 0 means the whole vocabulary.
    topk             INTEGER NOT NULL,
    n_positions      INTEGER NOT NULL,
    ppl              REAL NOT NULL,
    kld_mean         REAL NOT NULL,
    kld_p99          REAL NOT NULL,
    top1_agreement   REAL NOT NULL,
    elapsed_ms       REAL,
    peak_rss_bytes   INTEGER,
    created_at       TEXT NOT NULL,
    UNIQUE (model_sha256, reference_sha256, text_sha256, chunk_tokens, n_chunks, topk)
);
