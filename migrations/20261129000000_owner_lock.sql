-- The token of the lock file its owning process holds (store::owner): a row
-- left 'running' whose lock is free belongs to no live process, on every OS
-- and whatever the host is called now. NULL for rows written before this,
-- which keep the pid and host test.
ALTER TABLE runs ADD COLUMN owner_lock TEXT;
ALTER TABLE sweeps ADD COLUMN owner_lock TEXT;
ALTER TABLE server_runs ADD COLUMN owner_lock TEXT;
