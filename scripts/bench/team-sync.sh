#!/usr/bin/env bash
# Issue N's benchmark: `dyno sync` of 10,000 runs over loopback into a
# private PostgreSQL (TLS and a password, as the tests run it), and the pull
# of 10,000 runs from 20 machines into a fresh database, which the app's
# Results view then reads (`scripts/test/e2e.sh bench` with E2E_BENCH_DB set
# to the database this leaves in OUT).
#
# The runs are the real sweep of tests/fixtures/sweep-export.json copied
# with distinct ids and start times (scripts/bench/seed-runs.py).
#
# Usage: scripts/bench/team-sync.sh   (on an otherwise idle machine)
# Settings: RUNS (10000), MACHINES (20), DYNO_BIN, OUT (a folder to keep).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
RUNS="${RUNS:-10000}"
MACHINES="${MACHINES:-20}"
if [ -z "${DYNO_BIN:-}" ]; then build_dyno; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
echo "working in $out" >&2
pg="$out/pg"
eval "$(bash scripts/lib/postgres.sh start "$pg")"
trap 'bash scripts/lib/postgres.sh stop "$pg"' EXIT
newdb() { psql "$DYNO_TEST_PG_URL" -qc "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1"; echo "${DYNO_TEST_PG_URL%/*}/$1"; }
secs() { python3 -c 'import sys,time; print(time.time())'; }

# 1. One machine pushes RUNS runs; then a second sync finds nothing to send;
#    then another machine pulls them all.
one=$(newdb bench_one)
rm -f "$out/one.db"*
python3 scripts/bench/seed-runs.py "$dyno" "$out/one.db" "$RUNS" bench-one >/dev/null
DYNO_MACHINE_ID=bench-one "$dyno" --db "$out/one.db" sync --push-only --json "$one" >"$out/push.json"
t0=$(secs)
DYNO_MACHINE_ID=bench-one "$dyno" --db "$out/one.db" sync --push-only --json "$one" >"$out/again.json"
t1=$(secs)
rm -f "$out/pull-one.db"*
DYNO_MACHINE_ID=bench-reader "$dyno" --db "$out/pull-one.db" sync --json "$one" >"$out/pull.json"
python3 - "$out" "$t0" "$t1" <<'PY'
import json, sys
out, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
p = json.load(open(f"{out}/push.json"))
a = json.load(open(f"{out}/again.json"))
q = json.load(open(f"{out}/pull.json"))
print(f"push: {p['pushed']} runs in {p['push_seconds']:.2f} s = {p['pushed']/p['push_seconds']:.0f} runs/s, "
      f"{p['push_bytes']/1e6:.1f} MB = {p['push_bytes']/1e6/p['push_seconds']:.2f} MB/s")
print(f"repeat sync: pushed {a['pushed']}, {t1 - t0:.2f} s for the whole command")
print(f"pull: {q['pulled']} runs in {q['pull_seconds']:.2f} s = {q['pulled']/q['pull_seconds']:.0f} runs/s")
PY

# 2. MACHINES machines push RUNS/MACHINES runs each, all at once; a fresh
#    database then pulls all of them (the app's view of a shared store).
many=$(newdb bench_many)
per=$((RUNS / MACHINES))
pids=()
for i in $(seq 1 "$MACHINES"); do
  (
    db="$out/m$i.db"
    rm -f "$db"*
    python3 scripts/bench/seed-runs.py "$dyno" "$db" "$per" "bench-m$i" >/dev/null
  ) &
  pids+=($!)
done
wait "${pids[@]}"
t0=$(secs)
pids=()
for i in $(seq 1 "$MACHINES"); do
  DYNO_MACHINE_ID="bench-m$i" "$dyno" --db "$out/m$i.db" sync --push-only --json "$many" >"$out/m$i.json" &
  pids+=($!)
done
wait "${pids[@]}"
t1=$(secs)
echo "$MACHINES machines pushing $per runs each at once: $(psql "$many" -qAtc 'SELECT COUNT(*) FROM team_runs') runs stored in $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"
rm -f "$out/app.db"*
DYNO_MACHINE_ID=bench-app "$dyno" --db "$out/app.db" sync --json "$many" >"$out/app-pull.json"
python3 -c "import json; q=json.load(open('$out/app-pull.json')); print(f\"pull into the app's database: {q['pulled']} runs from {q['team_machines']} machines in {q['pull_seconds']:.1f} s\")"
t0=$(secs)
"$dyno" --db "$many" machines --json >/dev/null
t1=$(secs)
echo "dyno machines on the store ($RUNS runs): $(python3 -c "print(f'{($t1 - $t0)*1000:.0f}')") ms for the whole command"
echo "the app's database: $out/app.db (E2E_BENCH_DB=$out/app.db bash scripts/test/e2e.sh bench)"
