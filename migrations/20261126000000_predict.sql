-- A model's costs per token from its header (JSON of
-- model::shape::ModelShape): what the speed prediction divides by this
-- machine's fitted rates. NULL for models registered before it was kept;
-- the prediction reads those from their file while it still exists.
ALTER TABLE models ADD COLUMN shape_json TEXT;

-- The prediction Dyno made for a run before it was measured (JSON of
-- predict::RunPrediction), so `dyno predict --accuracy` can hold the model
-- to account. NULL for runs measured before predictions were kept.
ALTER TABLE runs ADD COLUMN prediction_json TEXT;
