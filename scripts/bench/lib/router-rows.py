"""Rescale a mixture-of-experts GGUF's router rows in place.

    router-rows.py FILE skew S          each expert's row times exp(S × a normal draw)
    router-rows.py FILE balance R.json  each expert's row times (even share ÷ its count)^½,
                                        from `dyno synth --routing --json` of FILE

A router's logit for expert e is its row e dotted with the hidden state, so a
larger row wins the top-k more often and a smaller one less: `skew` makes a
router favour some experts, and a few rounds of `balance` make one spread a
decode about as evenly as chance allows, as load-balancing training aims to.
The routers (`ffn_gate_inp`, n_expert rows of n_embd) are F32, as llama-quantize
keeps them; GGUF's header is read here by hand, its layout being all it takes.
Used by scripts/bench/moe-routing.sh.
"""
import array
import json
import math
import random
import struct
import sys

path, mode, arg = sys.argv[1], sys.argv[2], sys.argv[3]
with open(path, "r+b") as f:
    def take(fmt):
        return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))

    def text():
        (n,) = take("Q")
        return f.read(n).decode("utf-8", "replace")

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return text()
        if t == 9:
            (at,) = take("I")
            (n,) = take("Q")
            return [value(at) for _ in range(n)]
        return take(scalar[t])[0]

    if f.read(4) != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    _, n_tensors, n_kv = take("IQQ")
    kv = {}
    for _ in range(n_kv):
        k = text()
        (t,) = take("I")
        kv[k] = value(t)
    routers = []
    for _ in range(n_tensors):
        name = text()
        (nd,) = take("I")
        dims = take(f"{nd}Q")
        ty, off = take("IQ")
        if name.endswith("ffn_gate_inp.weight"):
            if ty != 0:
                sys.exit(f"{name}: an F32 router is expected")
            routers.append((int(name.split(".")[1]), dims, off))
    align = kv.get("general.alignment", 32)
    data = (f.tell() + align - 1) // align * align
    routers.sort()
    if mode == "balance":
        counts = json.load(open(arg))["counts"]
        if len(counts) != len(routers):
            sys.exit(f"{arg} counts {len(counts)} layers, {path} has {len(routers)} routers")
    rng = random.Random(7)
    for i, (_, (n_embd, n_expert), off) in enumerate(routers):
        f.seek(data + off)
        w = array.array("f")
        w.fromfile(f, n_embd * n_expert)
        if mode == "skew":
            factors = [math.exp(float(arg) * rng.gauss(0, 1)) for _ in range(n_expert)]
        elif mode == "balance":
            even = sum(counts[i]) / n_expert
            factors = [min(4.0, math.sqrt(even / max(c, 0.25))) for c in counts[i]]
        else:
            sys.exit(f"unknown mode {mode}: skew or balance")
        for e, k in enumerate(factors):
            for j in range(e * n_embd, (e + 1) * n_embd):
                w[j] *= k
        f.seek(data + off)
        w.tofile(f)
