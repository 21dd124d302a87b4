#!/usr/bin/env bash
# Fuzz the GGUF header reader (src/model/gguf.rs) with cargo-fuzz/libFuzzer.
#
# Usage: scripts/test/fuzz.sh [SECONDS]   (default 300)
#
# The reader is the only code that parses files users point Dyno at, and it
# claims that no count in a header can make it allocate more than the file
# holds. -malloc_limit_mb=64 turns that claim into a test: any single
# allocation over 64 MB is reported as a crash, while fuzz inputs are at most
# 1 MiB. -timeout=10 reports an input that takes over 10 s (the default is
# 20 minutes, longer than a run), so a quadratic loop is a finding too.
#
# Needs the nightly toolchain (libFuzzer's sanitizer flags) and the test
# models (scripts/lib/fetch-test-models.sh) for seeds. cargo-fuzz is installed
# into ~/.cache/dyno/tools on first use. Builds go to their own target dir,
# ~/.cache/dyno/fuzz-target, so the sanitizer build never invalidates the
# app's build in ~/.cache/dyno/target.
#
# Crashes are saved in fuzz/artifacts/gguf_header/; the corpus grows in
# fuzz/corpus/gguf_header/ and is kept between runs (both are git-ignored).
set -euo pipefail

secs="${1:-300}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

tools="$HOME/.cache/dyno/tools"
export PATH="$tools/bin:$PATH"
export CARGO_TARGET_DIR="$HOME/.cache/dyno/fuzz-target"
models="${DYNO_TEST_MODELS:-$HOME/.cache/dyno/models}"
corpus="fuzz/corpus/gguf_header"
artifacts="fuzz/artifacts/gguf_header"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz: the nightly toolchain is missing; run: rustup toolchain install nightly" >&2
  exit 1
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz into $tools (a few minutes, once)" >&2
  # cargo install builds in a temporary dir of its own, not the fuzz target dir.
  env -u CARGO_TARGET_DIR cargo install cargo-fuzz --locked --root "$tools"
fi

smol="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
gemma="$models/gemma-3-270m-q4_k_m.gguf"
for m in "$smol" "$gemma"; do
  if [ ! -s "$m" ]; then
    echo "fuzz: $m is missing; run scripts/lib/fetch-test-models.sh \"$models\" first" >&2
    exit 1
  fi
done

# Seeds. The real headers (1.7 and 6.5 MB, mostly vocabulary) are longer
# than the 1 MiB input limit, so a prefix of one only reaches the truncation
# paths. To reach the tensor infos and the checks after them, the seeds also
# include each model's real header rebuilt small: vocabulary arrays cut to 16
# items, and tensor shapes shrunk so the data section is a few KB of zeros.
# The reader accepts those; mutated variants of them cover each early error.
mkdir -p "$corpus" "$artifacts"
python3 - "$corpus" "$smol" "$gemma" <<'PY'
import os, struct, sys

out = sys.argv[1]
WIDTH = {0: 1, 1: 1, 7: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 10: 8, 11: 8, 12: 8}
KEEP = 16  # array items kept in the rebuilt headers


def write(name, b):
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(b)


def u64(v):
    return struct.pack("<Q", v)


def u32(v):
    return struct.pack("<I", v)


def rebuild(path, tag):
    with open(path, "rb") as f:
        raw = f.read(8 << 20)  # both headers fit in 8 MiB
    p = 0

    def take(n):
        nonlocal p
        p += n
        return raw[p - n:p]

    def num(fmt):
        return struct.unpack("<" + fmt, take(struct.calcsize(fmt)))[0]

    def string():
        return take(num("Q"))

    assert take(4) == b"GGUF"
    version, n_tensors, n_kv = num("I"), num("Q"), num("Q")
    kvs = b""
    for _ in range(n_kv):
        key, t = string(), num("I")
        kvs += u64(len(key)) + key + u32(t)
        if t == 8:
            v = string()
            kvs += u64(len(v)) + v
        elif t == 9:
            et, n = num("I"), num("Q")
            if et == 8:
                items = [string() for _ in range(n)]
            else:
                items = [take(WIDTH[et]) for _ in range(n)]
            items = items[:KEEP]
            kvs += u32(et) + u64(len(items))
            kvs += b"".join((u64(len(i)) + i) if et == 8 else i for i in items)
        else:
            kvs += take(WIDTH[t])
    tensors = []
    for _ in range(n_tensors):
        name, nd = string(), num("I")
        dims = [num("Q") for _ in range(nd)]
        tensors.append((name, dims, num("I"), num("Q")))

    # Prefixes of the real file: its truncated header, cut at several points.
    for cut in (8, 24, 300, 4096, 65536, 262144):
        write(f"{tag}-prefix-{cut}", raw[:cut])

    def gguf(tensors, data_bytes, version=version, n_tensors=None, n_kv=n_kv):
        b = b"GGUF" + u32(version)
        b += u64(len(tensors) if n_tensors is None else n_tensors) + u64(n_kv) + kvs
        for name, dims, t, off in tensors:
            b += u64(len(name)) + name + u32(len(dims))
            b += b"".join(u64(d) for d in dims) + u32(t) + u64(off)
        b += b"\0" * (-len(b) % 32)
        return b + b"\0" * data_bytes

    # Small: the first 8 tensors, each shrunk to one 256-element row
    # (a multiple of every block size), in 2 KiB slots (256 elements of at
    # most 8 bytes), so every type keeps its real id.
    slot = 2048
    small = [(n, [256] + [1] * (len(d) - 1), t, i * slot) for i, (n, d, t, _) in enumerate(tensors[:8])]
    ok = gguf(small, slot * len(small))
    write(f"{tag}-small", ok)
    # Every tensor info, with no elements: needs no data at all.
    empty = [(n, [0] + d[1:], t, 0) for n, d, t, _ in tensors]
    write(f"{tag}-all-empty-tensors", gguf(empty, 0))
    # Real shapes and offsets with the data cut off: fails the last check.
    write(f"{tag}-real-no-data", gguf(tensors[:8], 64))
    write(f"{tag}-no-tensors", gguf([], 0))
    write(f"{tag}-v2", gguf(small, slot * len(small), version=2))
    write(f"{tag}-v99", gguf(small, 0, version=99))
    write(f"{tag}-bad-magic", b"GGUX" + ok[4:])
    write(f"{tag}-huge-tensor-count", gguf(small, 0, n_tensors=1 << 60))
    write(f"{tag}-huge-kv-count", gguf(small, 0, n_kv=(1 << 64) - 1))
    for cut in (len(ok) // 3, len(ok) // 2, len(ok) - slot):
        write(f"{tag}-small-cut-{cut}", ok[:cut])


rebuild(sys.argv[2], "smol")
rebuild(sys.argv[3], "gemma")

# One small file per ggml type id, retired and unknown ones included: the
# models use only a few types, and sizes differ per type (I64 and F64 take
# 8 bytes an element), so each gets a tensor of 256 x 1 elements in 2 KiB.
for t in range(44):
    b = b"GGUF" + u32(3) + u64(1) + u64(0)
    b += u64(1) + b"t" + u32(2) + u64(256) + u64(1) + u32(t) + u64(0)
    b += b"\0" * (-len(b) % 32)
    write(f"type-{t}", b + b"\0" * 2048)

# Regression: an F64 tensor of 2^61 elements, 2^64 bytes, whose size once
# wrapped to 0 and was accepted (no branch leads the mutator to it).
b = b"GGUF" + u32(3) + u64(1) + u64(0)
b += u64(1) + b"w" + u32(1) + u64(1 << 61) + u32(28) + u64(0)
write("f64-size-overflow", b + b"\0" * (-len(b) % 32))
PY

before=$(find "$corpus" -type f | wc -l)
artifacts_before=$(find "$artifacts" -type f | wc -l)
echo "fuzz: $before inputs in $corpus; fuzzing for ${secs}s" >&2

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo +nightly fuzz run gguf_header -- \
  -max_total_time="$secs" -rss_limit_mb=512 -malloc_limit_mb=64 \
  -max_len=1048576 -timeout=10 -print_final_stats=1 2>&1 | tee "$log" || status=$?

runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
speed=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
rss=$(grep -oE 'stat::peak_rss_mb: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
after=$(find "$corpus" -type f | wc -l)
artifacts_after=$(find "$artifacts" -type f | wc -l)

echo
echo "fuzz: ${runs:-?} runs (${speed:-?} exec/s), ${cov:-no coverage figure}, peak RSS ${rss:-?} MB"
echo "fuzz: corpus $before -> $after inputs in $corpus"
if [ "$status" -ne 0 ] || [ "$artifacts_after" -gt "$artifacts_before" ]; then
  echo "fuzz: FOUND a problem (exit $status); inputs in $artifacts:" >&2
  ls -t "$artifacts" | head -n 5 >&2 || true
  echo "fuzz: minimise one with: cargo +nightly fuzz tmin gguf_header $artifacts/<file>" >&2
  exit 1
fi
echo "fuzz: nothing found"
