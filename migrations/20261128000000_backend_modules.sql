-- The llama.cpp backend modules that measured each run (a dynamic-backends
-- build loads them at run time): JSON of [vocab::ModuleRef], each with its
-- file's sha256, since two builds of "the CUDA backend" are not the same
-- engine. NULL for runs before this and for builds with llama.cpp linked in.
ALTER TABLE runs ADD COLUMN modules_json TEXT;
