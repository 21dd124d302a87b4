-- Where llama.cpp put each run's model, from its own load report: layers
-- offloaded, weight buffers per device, the devices given, and what --fit
-- chose (JSON of worker::protocol::Offload). NULL for runs before this.
ALTER TABLE runs ADD COLUMN offload_json TEXT;
