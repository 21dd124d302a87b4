-- Team sync (`dyno sync`): runs pulled from a team store are marked with the
-- store they came from, so a push never sends another machine's run back,
-- and each store remembers how far this database's push got, so the next
-- sync starts there (a cut sync resumes; the team store's content-addressed
-- ids make any repeat harmless).
ALTER TABLE runs ADD COLUMN pulled_from TEXT;

CREATE TABLE sync_state (
    -- The team store's URL without user or password.
    store           TEXT PRIMARY KEY,
    -- Every run of this database with a smaller or equal id was pushed.
    pushed_through  INTEGER NOT NULL DEFAULT 0,
    telemetry_through INTEGER NOT NULL DEFAULT 0,
    last_sync_at    TEXT
);

-- A pull of 10,000 runs asks, for each, whether this machine already has a
-- run that started at that moment; without an index each question read
-- every run.
CREATE INDEX runs_machine_started ON runs (machine_id, started_at);
