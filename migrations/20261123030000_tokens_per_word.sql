-- Tokens per English word of the run's model, measured with its own tokenizer
-- on the bundled text: turns tokens per second into words and reply times.
ALTER TABLE runs ADD COLUMN tokens_per_word REAL;
