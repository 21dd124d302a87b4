-- What a model file's synthetic weights stand for ("twin of SmolLM2 135M,
-- seed 1"), from the dyno.synthetic.* label `dyno synth` writes into its
-- header; NULL for a real model. Figures measured on such a file say how
-- fast that shape runs, never how well, and every view says so.
ALTER TABLE models ADD COLUMN synthetic TEXT;
