#!/usr/bin/env bash
# End-to-end test of the real desktop app (e2e/app.test.mjs): build the UI
# and the release app, then drive it through tauri-driver and WebKitWebDriver
# under Xvfb, against a fresh database and the real SmolLM2 test model.
# Screenshots land in e2e/screenshots/ (E2E_OUT overrides).
# DYNO_TEST_PG_URL (a PostgreSQL server, as scripts/lib/postgres.sh prints it)
# gives the Team journey its store: a fresh database on it per run, dropped
# at the end. Without it that journey is skipped, and says so.
# `bash scripts/test/e2e.sh bench` runs the app benchmarks (e2e/bench.mjs) instead,
# on a database seeded with 1,000 runs, and `clock` the CPU the app's own
# processes use while a test is timed (e2e/clock.mjs). E2E_ONLY=REGEX runs only the journeys
# whose names match it.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
# The app embeds ui/dist, so it is built every time (a second or two): a
# dist left from before a UI change would test the old UI. It replaces
# ui/dist only when its content differs: new files with the same bytes
# would still make cargo rebuild the app (about 2 minutes), which the test
# step had just built from the same UI.
fresh_dist=$(mktemp -d)
(cd ui && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } &&
  npm run build -- --outDir "$fresh_dist" --emptyOutDir >/dev/null)
if ! diff -r -q "$fresh_dist" ui/dist >/dev/null 2>&1; then
  rm -rf ui/dist
  cp -r "$fresh_dist" ui/dist
fi
rm -rf "$fresh_dist"
# The workspace build (as the tests'), plus the fake hub example it serves
# the hub journey from.
cargo build --release --workspace
cargo build --release --workspace --example fake_hub
(cd e2e && npm ci --no-audit --no-fund --loglevel=error)

# tauri-driver, installed once per machine next to the build cache.
tauri_driver=$(bash scripts/lib/tauri-driver.sh)

scratch=$(mktemp -d)
# Run copies of what was just built, so another build in the same target
# directory (a second checkout sharing ~/.cache/dyno/target) cannot swap a
# binary under the test while it runs.
bin="$scratch/bin"
mkdir -p "$bin"
# With llama.cpp's libraries and backend modules, which the executables load
# from their own folder.
cp "$CARGO_TARGET_DIR/release/dyno" "$CARGO_TARGET_DIR/release/dyno-app" \
  "$CARGO_TARGET_DIR/release/examples/fake_hub" "$CARGO_TARGET_DIR"/release/lib*.so.[0-9]* \
  "$CARGO_TARGET_DIR"/release/libggml-*.so "$CARGO_TARGET_DIR/release/dyno-backends.txt" "$bin/"
pids=()
team_db=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$team_db" ]; then
    psql "$DYNO_TEST_PG_URL" -qc "DROP DATABASE IF EXISTS $team_db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# A display for the webview: the one we have, else a private Xvfb.
if [ -z "${DISPLAY:-}" ]; then
  for n in $(seq 90 99); do
    [ -e "/tmp/.X11-unix/X$n" ] && continue
    Xvfb ":$n" -screen 0 1400x900x24 -nolisten tcp >"$scratch/xvfb.log" 2>&1 &
    pids+=($!)
    export DISPLAY=":$n"
    break
  done
  sleep 1
fi

# A fake Hugging Face hub on loopback serving the SmolLM2 test model as a
# repo, with a second level of random bytes that is only ever discarded;
# the first download of each file is cut short after 25 MB, so the app's
# resume and discard are exercised (e2e/app.test.mjs, the hub journeys).
head -c 40000000 /dev/urandom >"$scratch/SmolLM2-135M-Instruct.Q8_0.gguf"
"$bin/fake_hub" --cut-first-get 25000000 \
  dyno-test/SmolLM2-135M-Instruct-GGUF "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" \
  "$scratch/SmolLM2-135M-Instruct.Q8_0.gguf" \
  >"$scratch/hub.url" 2>"$scratch/hub.log" &
pids+=($!)
for _ in $(seq 1 50); do [ -s "$scratch/hub.url" ] && break; sleep 0.1; done
[ -s "$scratch/hub.url" ] || { echo "e2e: the fake hub did not start" >&2; cat "$scratch/hub.log" >&2; exit 1; }

# A real llama-server on SmolLM2 for the Servers view (its binary built once
# per machine by scripts/lib/llama-server.sh; scripts/test.sh passes it).
llama_server="${DYNO_LLAMA_SERVER:-$(bash scripts/lib/llama-server.sh)}"
serve_port=18080
while (echo >"/dev/tcp/127.0.0.1/$serve_port") 2>/dev/null; do serve_port=$((serve_port + 1)); done
"$llama_server" -m "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" --host 127.0.0.1 --port "$serve_port" \
  -t 2 -c 2048 -np 2 --no-webui >"$scratch/llama-server.log" 2>&1 &
pids+=($!)
export E2E_SERVE_URL="http://127.0.0.1:$serve_port"

# A team store for the Team journey: a fresh database holding a second
# machine's runs, pushed by the CLI as that machine would, so the app's sync
# pulls another machine and its ranking has two. The second machine is the
# exported fixture with its identity changed and its decode 30% slower.
if [ -n "${DYNO_TEST_PG_URL:-}" ]; then
  team_db="e2e_team_$$"
  psql "$DYNO_TEST_PG_URL" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $team_db"
  export E2E_TEAM_URL="${DYNO_TEST_PG_URL%/*}/$team_db"
  python3 - tests/fixtures/sweep-export.json "$scratch/other.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["machine"].update(fingerprint="e2e-other", cpu="Other CPU")
for run in doc["runs"]:
    for r in run["results"]:
        # The Quick preset's tests, which this machine runs in the app's
        # first benchmark before the Team journey: the ranking compares like
        # for like. The rates stay the fixture's; import derives each time
        # from them.
        if r["kind"] == "prompt":
            r.update(test="pp128", n_prompt=128)
        elif r["kind"] == "gen":
            r.update(test="tg32", n_gen=32)
        # Import recomputes each figure from the samples of its phase.
        d = r.get("decode_tokens_per_s")
        if d:
            d["samples"] = [v * 0.7 for v in d["samples"]]
            for k in ("mean", "median", "min", "max"):
                d[k] *= 0.7
        if r["kind"] == "gen":
            r["samples_ns"] = [round(ns / 0.7) for ns in r["samples_ns"]]
json.dump(doc, open(sys.argv[2], "w"))
PY
  "$bin/dyno" --db "$scratch/other.db" import "$scratch/other.json" >/dev/null
  "$bin/dyno" --db "$scratch/other.db" sync --push-only "$E2E_TEAM_URL" >/dev/null
else
  echo "e2e: DYNO_TEST_PG_URL is not set; the Team journey is skipped (scripts/lib/postgres.sh starts a server)" >&2
fi

# The app under test is started by tauri-driver, so its environment is set
# here: a fresh database and a Hugging Face home of its own. The fake hub's
# address is not given to the app: the test types it into Settings, as a
# person with a mirror would.
export E2E_HUB_URL="$(head -n 1 "$scratch/hub.url")" HF_HOME="$scratch/hf"
unset HF_ENDPOINT HF_HUB_CACHE HF_TOKEN HF_TOKEN_PATH HUGGING_FACE_HUB_TOKEN
export DYNO_DB="$scratch/dyno.db" E2E_SCRATCH="$scratch"
# Quantised levels and synthetic files go to a cache of this run's own, so a
# journey sees only what the journeys before it left there.
export DYNO_CACHE_DIR="$scratch/cache"
export DYNO_APP="$bin/dyno-app" DYNO_CLI="$bin/dyno"
export E2E_OUT="${E2E_OUT:-$PWD/e2e/screenshots}"
port=4444
while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
export TAURI_DRIVER_PORT=$port
"$tauri_driver" --port "$port" >"$scratch/driver.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.2
done

if [ "${1:-}" = bench ]; then
  if [ -n "${E2E_BENCH_DB:-}" ]; then
    # A database already filled, such as the 10,000 runs of 20 machines that
    # scripts/bench/team-sync.sh pulls from a team store.
    cp "$E2E_BENCH_DB" "$DYNO_DB"
  else
    python3 scripts/bench/seed-runs.py "$bin/dyno" "$DYNO_DB" 1000
  fi
  run=(node bench.mjs)
elif [ "${1:-}" = clock ]; then
  # What the Benchmark view's clock costs while a test is timed (e2e/clock.mjs).
  run=(node clock.mjs)
elif [ -n "${E2E_ONLY:-}" ]; then
  # A developer's shortcut: only the journeys whose names match (a regular
  # expression), e.g. E2E_ONLY='starts|disturbed'.
  run=(node --test --test-concurrency=1 "--test-name-pattern=$E2E_ONLY" app.test.mjs)
else
  run=(npm test)
fi
if ! (cd e2e && "${run[@]}"); then
  echo "e2e: failed; tauri-driver's log:" >&2
  tail -50 "$scratch/driver.log" >&2
  exit 1
fi
