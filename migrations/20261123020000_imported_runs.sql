-- Runs imported from a shared result file (`dyno import`). The key makes an
-- import idempotent: the same run imported twice is stored once.
ALTER TABLE runs ADD COLUMN import_key TEXT;
CREATE UNIQUE INDEX runs_import_key ON runs (import_key) WHERE import_key IS NOT NULL;
