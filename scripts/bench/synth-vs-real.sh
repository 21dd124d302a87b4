#!/usr/bin/env bash
# Synthetic weights against the real file: writes `dyno synth --like` twins
# of each model and times both with llama-bench (from Dyno's own llama.cpp,
# scripts/bench/llama-tools.sh), alternating the files within every round,
# then prints synthetic ÷ real per test, and of each run's peak resident
# memory, as the mean of the per-round log ratios with its 95% interval, and
# as the median round with a distribution-free one. Every file is evicted from the page cache
# before each run (docs/method.md says why). A benchmark, never a timed test.
#
#   bash scripts/bench/synth-vs-real.sh                  # both test models
#   MODELS="a.gguf b.gguf" ROUNDS=12 bash scripts/bench/synth-vs-real.sh
#
# Settings (environment): MODELS (default: the two test models), ROUNDS
# (default 12), ARGS (llama-bench's, default "-p 512 -n 128 -r 2 -t 2"),
# EXTRA (more files to alternate with, each compared with the first model's
# real file, e.g. a zero-filled twin), SEED (default 1), TWIN=0 (write no
# twin: only EXTRA against the first model, as the routing bench does),
# PLACE (GiB, default 6, at most a quarter of the memory available; 0 turns
# it off): before each run the script holds a random amount, up to PLACE, of
# touched memory while llama-bench reads the file back, so that the file
# lands on other physical pages each time (docs/method.md, "Where the pages
# land"). Run it on a quiet
# machine: each round's two files run back to back, so drift cancels but
# another program's load does not. On a 2-core VM, `-t 1` in ARGS leaves
# llama-bench a core of its own: a round's ratio then spreads a third as much
# as at `-t 2` (docs/method.md), so a 2% bound needs a ninth of the rounds.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
. scripts/bench/llama-tools.sh
lb=$(llama_tool llama-bench)
build_dyno
dyno="$CARGO_TARGET_DIR/release/dyno"
models=${MODELS:-"$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf $DYNO_TEST_MODELS/gemma-3-270m-q4_k_m.gguf"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for m in $models; do
  twin=
  if [ "${TWIN:-1}" != 0 ]; then
    twin="$work/$(basename "$m" .gguf).synth.gguf"
    "$dyno" synth --like "$m" -o "$twin" --seed "${SEED:-1}" >&2
  fi
  # shellcheck disable=SC2086
  LB="$lb" ROUNDS="${ROUNDS:-12}" ARGS="${ARGS:--p 512 -n 128 -r 2 -t 2}" \
    python3 - "$m" $twin ${EXTRA:-} <<'EOF'
import json, math, mmap, os, random, statistics as st, subprocess, sys
lb, rounds, args = os.environ["LB"], int(os.environ["ROUNDS"]), os.environ["ARGS"].split()
files = sys.argv[1:]
res = {f: [] for f in files}
avail = next(int(l.split()[1]) * 1024 for l in open("/proc/meminfo") if l.startswith("MemAvailable:"))
place = min(int(float(os.environ.get("PLACE", "6")) * 2**30), avail // 4)
shuffle = random.Random(int(os.environ.get("SEED", "1")))
def hold():
    # A file evicted and read straight back tends to land on the pages it
    # just freed, so a whole run keeps one placement, and where the pages
    # land moved decode by several percent here: runs then disagreed by
    # three times what their intervals allowed. Holding a random amount of
    # touched memory while llama-bench reads the file puts it elsewhere
    # each run, so a run's interval includes placement.
    # The memory is held by a process of its own: llama-bench's peak RSS
    # (wait4) would count this one's, whose address space it starts in.
    n = shuffle.randrange(0, place + 1, 1 << 20) if place > 0 else 0
    if n == 0:
        return None
    code = ("import mmap, sys, time\n"
            "n = int(sys.argv[1]); m = mmap.mmap(-1, n)\n"
            "for i in range(0, n, mmap.PAGESIZE): m[i] = 1\n"
            "print(flush=True); time.sleep(86400)")
    p = subprocess.Popen([sys.executable, "-c", code, str(n)], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    return p
def evict(f):
    # Out of the page cache before every run, so every file is read back the
    # same way: a file written just now is mapped with 2 MiB pages where one
    # read from disk may not be, which moved decode by up to 20% here.
    fd = os.open(f, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
for r in range(rounds):
    for f in files[r % len(files):] + files[:r % len(files)]:
        evict(f)
        held = hold()
        # Waited for with wait4, for this run's own peak resident memory.
        with open(os.devnull, "w") as null:
            p = subprocess.Popen([lb, "-m", f, *args, "-o", "json"], stdout=subprocess.PIPE,
                                 stderr=null, text=True)
            stdout = p.stdout.read()
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        if held is not None:
            held.kill()
            held.wait()
        if p.returncode:
            sys.exit(f"llama-bench failed on {f} (exit {p.returncode})")
        row = {(f"pp{t['n_prompt']}" if t["n_prompt"] else f"tg{t['n_gen']}"): t["avg_ts"]
               for t in json.loads(stdout)}
        row["peak RSS (KiB)"] = usage.ru_maxrss
        res[f].append(row)
    print(f"round {r + 1}/{rounds}", {os.path.basename(f): res[f][-1] for f in files}, file=sys.stderr)
# Student's t, 97.5th percentile, for 1..30 degrees of freedom.
T = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
     2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04]
def median_interval(q):
    # Distribution-free: the order statistics the binomial (n, 1/2) puts
    # 2.5% outside on each side. Now and then this host stalls one run of a
    # round, which pulls the mean; the median keeps to the typical round.
    n, x = len(q), sorted(q)
    k = 0
    while sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= 0.025:
        k += 1
    return (st.median(x), x[k - 1], x[n - k]) if k >= 1 else (st.median(x), float("nan"), float("nan"))
real = files[0]
for test in res[real][0]:
    unit = "KiB" if "RSS" in test else "t/s"
    print(f"{os.path.basename(real)} {test}: real median {st.median(x[test] for x in res[real]):.1f} {unit}")
    for f in files[1:]:
        lr = [math.log(a[test] / b[test]) for a, b in zip(res[f], res[real])]
        m = st.mean(lr)
        h = T[min(len(lr) - 2, 29)] * st.stdev(lr) / math.sqrt(len(lr)) if len(lr) > 1 else float("nan")
        sd = st.stdev(lr) if len(lr) > 1 else float("nan")
        md, lo, hi = (math.exp(x) for x in median_interval(lr))
        print(f"  {os.path.basename(f)} ÷ real: {math.exp(m):.3f} [{math.exp(m - h):.3f}, {math.exp(m + h):.3f}]"
              f" (a round's spread: {sd:.3f} in log); median round {md:.3f} [{lo:.3f}, {hi:.3f}]")
EOF
done
