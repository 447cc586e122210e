#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the Python layer costs: the same work from Python (the clmad package) and
from C, on the same device, in one run.
  1. calls per second of a small broadcast (f(x, a) = a * x + 1 over 16 f32
     elements): forward alone, and forward + dot + backward; C: build/bench_call.
  2. the HM-LSTM cell's forward + backward at 1024 x 1024 f32 (loss = dot(cell(z,
     zb, c, f, i, g), w), random controls), partials stored and recomputed, median
     of --reps runs; C: build/bench_call_hmlstm, the same loop. C and Python
     alternate over --rounds rounds (C, Python, per policy); the figures are
     the medians over rounds, and the ratio the median of each round's ratio.
Writes <out>/python.json and <out>/python.md.
Usage: build/python-venv/bin/python bench/python_overhead.py [--build build] [--reps 10]
       [--rounds 5] [--calls 20000] [--dims 1024] [--out bench/results]"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import clmad

CELL = """
T cell_update(T z, T zb, T c, T f, T i, T g)
{
    if (z == 1)  return sigmoid(i) * tanh(g);
    if (zb == 0) return c;
    return sigmoid(f) * c + sigmoid(i) * tanh(g);
}
"""


def calls_per_second(ctx, calls):
    n = 16
    x, a, w = ctx.full(n, 0.5), ctx.full(n, 2.0), ctx.full(n, 1.0)
    k = ctx.kernel("T f(T x, T a) { return a * x + 1; }", "f")

    def loop(count, backward):
        ctx.finish()
        t0 = time.perf_counter()
        for _ in range(count):
            y = k(x, a)
            if backward:
                clmad.dot(y, w).backward()
                x.zero_grad()
        ctx.finish()
        return count / (time.perf_counter() - t0)

    with ctx.no_grad():
        loop(calls // 10 + 1, False)
        fwd = loop(calls, False)
    x.requires_grad = True
    loop(calls // 10 + 1, True)
    return {"n": n, "calls": calls, "forward_calls_per_s": fwd, "fwd_bwd_calls_per_s": loop(calls, True)}


def hmlstm_python(ctx, dims, reps, policy):
    rng = np.random.default_rng(1)
    z = ctx.tensor((rng.uniform(size=(1, dims)) < 1 / 3).astype(np.float32))
    zb = ctx.tensor((rng.uniform(size=(1, dims)) < 0.5).astype(np.float32))
    xs = [ctx.tensor(rng.uniform(-2, 2, (dims, dims)).astype(np.float32), requires_grad=True) for _ in range(4)]
    w = ctx.tensor(rng.uniform(-1, 1, (dims, dims)).astype(np.float32))
    cell = ctx.kernel(CELL, "cell_update")
    ctx.partials_policy = policy
    times = []
    for r in range(reps + 2):  # two warm-up rounds, as bench_hmlstm
        ctx.finish()
        t0 = time.perf_counter()
        clmad.dot(cell(z, zb, *xs), w).backward()
        ctx.finish()
        if r >= 2:
            times.append(time.perf_counter() - t0)
        for x in xs:
            x.zero_grad()
    ctx.partials_policy = "auto"
    return 1e3 * float(np.median(times))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--dims", type=int, default=1024)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = p.parse_args()

    ctx = clmad.Context()
    dev = ctx.device
    print(f"device: {dev.name} ({dev.platform})", file=sys.stderr)
    c_calls = json.loads(subprocess.run([os.path.join(args.build, "bench_call"), "--calls", str(args.calls)],
                                        check=True, capture_output=True, text=True).stdout)
    py_calls = calls_per_second(ctx, args.calls)

    rounds = {policy: {"c": [], "python": [], "ratio": []} for policy in ("store", "recompute")}
    for _ in range(args.rounds):
        for policy, r in rounds.items():
            c = json.loads(subprocess.run([os.path.join(args.build, "bench_call_hmlstm"), "--dims", str(args.dims),
                                           "--reps", str(args.reps), "--policy", policy],
                                          check=True, capture_output=True, text=True).stdout)["median_ms"]
            py = hmlstm_python(ctx, args.dims, args.reps, policy)
            r["c"].append(c)
            r["python"].append(py)
            r["ratio"].append(py / c)
    c_ms = {k: float(np.median(r["c"])) for k, r in rounds.items()}
    py_ms = {k: float(np.median(r["python"])) for k, r in rounds.items()}

    load = os.getloadavg()
    result = {"load_average_1_5_15": load, "cpus": os.cpu_count(), "device": dev.name, "platform": dev.platform, "driver": dev.driver_version,
              "python": sys.version.split()[0], "numpy": np.__version__,
              "small_broadcast": {"c": c_calls, "python": py_calls},
              "hmlstm": {"dims": args.dims, "repetitions": args.reps, "rounds": args.rounds,
                         "c_median_ms": c_ms, "python_median_ms": py_ms,
                         "ratio_python_over_c": {k: float(np.median(r["ratio"])) for k, r in rounds.items()},
                         "per_round": rounds}}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "python.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    sb, hm = result["small_broadcast"], result["hmlstm"]
    lines = [
        "# Python vs C: the cost of the Python layer",
        "",
        f"Device: {dev.name} ({dev.platform}, {dev.driver_version}); Python {result['python']}, "
        f"NumPy {result['numpy']}. Written by `bench/python_overhead.py`.",
        "",
        "Small broadcast (16 f32 elements, `a * x + 1`), calls per second:",
        "",
        "| loop | C | Python | Python / C |",
        "|---|---:|---:|---:|",
    ]
    for key, label in (("forward_calls_per_s", "forward (no grad)"), ("fwd_bwd_calls_per_s", "forward + dot + backward")):
        lines.append(f"| {label} | {sb['c'][key]:,.0f} | {sb['python'][key]:,.0f} | "
                     f"{sb['python'][key] / sb['c'][key]:.2f} |")
    lines += ["", f"HM-LSTM cell, forward + backward, {args.dims} x {args.dims} f32, random controls, "
              f"median of {args.reps} runs per round, {args.rounds} rounds alternating C and Python:", "", "| partials | C (ms) | Python (ms) | Python / C |", "|---|---:|---:|---:|"]
    for k in ("store", "recompute"):
        lines.append(f"| {k} | {hm['c_median_ms'][k]:.2f} | {hm['python_median_ms'][k]:.2f} | "
                     f"{hm['ratio_python_over_c'][k]:.3f} |")
    lines += ["", "The C figures are bench_call's and bench_call_hmlstm's (the same loops in C); the "
              "HM-LSTM ratio is the median of each round's Python / C. Load average of the host when written: "
              f"{load[0]:.1f} on {os.cpu_count()} CPUs: above the CPU count, the figures are noisy."]
    with open(os.path.join(args.out, "python.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
