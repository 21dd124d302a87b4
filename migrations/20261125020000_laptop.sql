-- Whether the machine was quiet while a result was timed: other processes'
-- CPU, steal time and the repetitions' spread, with the verdict and its
-- reasons (JSON of telemetry::disturbance::Disturbance). NULL for results
-- measured before it was recorded, or with telemetry off.
ALTER TABLE results ADD COLUMN disturbance_json TEXT;

-- Where the machine's power came from and how it was told to spend it while
-- the run was measured (JSON of telemetry::power::PowerState).
ALTER TABLE runs ADD COLUMN power_json TEXT;

-- A sustained decode (`--sustain`): the rate over time beside clocks,
-- temperatures and other programs' CPU, the burst and sustained rates and
-- the drop's cause (JSON of telemetry::sustain::Sustained).
ALTER TABLE results ADD COLUMN sustain_json TEXT;

-- The cool-down wait before the run's model load (`--cooldown`; JSON of
-- telemetry::cooldown::CooldownRecord).
ALTER TABLE runs ADD COLUMN cooldown_json TEXT;
