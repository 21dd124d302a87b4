# Sourced by the scripts: one target directory and one model cache outside
# the clone, so a fresh clone on the same machine reuses the llama.cpp build
# (about 9 minutes on 2 cores) and the downloaded test models.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/dyno/target}"
export DYNO_TEST_MODELS="${DYNO_TEST_MODELS:-$HOME/.cache/dyno/models}"
