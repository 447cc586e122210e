#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the Python layer itself costs per operation, and a before/after
comparison of package trees, interleaved round by round.

  1. Python layer alone: the package runs against a null libclmad (every
     function returns at once, the few that make objects hand back fake
     handles; compiled here with cc from the names in include/clmad.h), so
     what is timed is the package's code and ctypes, with no device and no
     C work: microseconds per operation (median of the rounds) and the
     number of calls into the library per operation.
  2. With --build: the same package against the real library of that build
     folder, calls per second of bench/python_overhead.py's small-broadcast
     loops (forward no-grad; forward + dot + backward), and build/bench_call
     (the same loops from C) in every round, so that the Python cost per call
     over C is 1/python - 1/C from figures taken side by side.

Each package tree (--package DIR, a folder holding clmad/; repeat to compare
several, e.g. a `git worktree` of main and the working tree) runs in child
processes in turn, in every round. Prints a Markdown table; --json writes
the figures.
Usage: python bench/python_layer.py [--package DIR]... [--build build] [--rounds 5]
       [--calls 20000] [--json out.json]"""
import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The functions whose out-parameters the timed operations read; every other
# function of the header returns 0 (CLMAD_OK, or a NULL pointer).
NULL_SPECIAL = r"""
#include <stddef.h>
#include <stdint.h>
unsigned long long null_calls;
static uintptr_t next_handle = 0x10000;
static void *fake(void) { return (void *)(next_handle += 64); }
#define COUNT (void)null_calls++
const char *clmad_version_string(void) { COUNT; return "null"; }
const char *clmad_status_string(int s) { (void)s; COUNT; return "null"; }
const char *clmad_last_error(void *c) { (void)c; COUNT; return "null"; }
int clmad_context_create(void *o, void **c) { (void)o; COUNT; *c = fake(); return 0; }
int clmad_tensor_fill(void *c, int d, int n, size_t *s, double v, void **o)
{ (void)c; (void)d; (void)n; (void)s; (void)v; COUNT; *o = fake(); return 0; }
int clmad_kernel_create(void *c, const char *s, const char *f, int i, int n, void **o)
{ (void)c; (void)s; (void)f; (void)i; (void)n; COUNT; *o = fake(); return 0; }
int clmad_broadcast(void *c, void *k, void **in, void **out)
{ (void)c; (void)k; (void)in; COUNT; out[0] = fake(); return 0; }
#define BINARY(name) \
    int name(void *c, void *a, void *b, void **o) { (void)c; (void)a; (void)b; COUNT; *o = fake(); return 0; }
BINARY(clmad_dot) BINARY(clmad_add) BINARY(clmad_mul)
#define WITH_SCALAR(name) \
    int name(void *c, void *a, double v, void **o) { (void)c; (void)a; (void)v; COUNT; *o = fake(); return 0; }
WITH_SCALAR(clmad_mul_scalar) WITH_SCALAR(clmad_add_scalar)
int clmad_tensor_dtype(void *t) { (void)t; COUNT; return 0; }
int clmad_context_get_param(void *c, int p, long long *v) { (void)c; (void)p; COUNT; *v = 0; return 0; }
/* The layouts and constants `import clmad` checks are the real ones: src/runtime/abi.c
 * (clmad_abi_struct_size, clmad_abi_field, clmad_abi_constant) is compiled in. */
int clmad__fail(const void *c, int s, const char *fmt, ...) { (void)c; (void)fmt; return s; }
"""


def build_null_library(folder):
    headers = ""  # clmad.h and the headers beside it (clmad_cl.h: the package binds them too)
    for name in sorted(os.listdir(os.path.join(ROOT, "include"))):
        if name.startswith("clmad") and name.endswith(".h"):
            with open(os.path.join(ROOT, "include", name)) as f:
                headers += f.read()
    names = sorted(set(re.findall(r"CLMAD_API[^;(]*?\b(clmad_\w+)\s*\(", headers)))
    special = set(re.findall(r"\b(clmad_\w+)\b", NULL_SPECIAL))
    source = NULL_SPECIAL + "".join(f"long long {n}(void) {{ COUNT; return 0; }}\n"
                                    for n in names if n not in special)
    c_file, so_file = os.path.join(folder, "null.c"), os.path.join(folder, "libclmad_null.so")
    with open(c_file, "w") as f:
        f.write(source)
    # linked to the OpenCL loader, as libclmad is: the package finds the few
    # OpenCL functions it calls itself through libclmad's handle (_opencl.py)
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-I", os.path.join(ROOT, "include"),
                    "-I", os.path.join(ROOT, "src"), "-o", so_file, c_file,
                    os.path.join(ROOT, "src", "runtime", "abi.c"), "-Wl,--no-as-needed", "-lOpenCL"], check=True)
    return so_file


def child_null(calls, rounds):
    """Microseconds and library calls per operation against the null library."""
    import clmad
    counter = ctypes.c_ulonglong.in_dll(ctypes.CDLL(os.environ["CLMAD_LIBRARY"]), "null_calls")
    ctx = clmad.Context()
    x, a, w = ctx.full(16, 0.5), ctx.full(16, 2.0), ctx.full(16, 1.0)
    k = ctx.kernel("T f(T x, T a) { return a * x + 1; }", "f")
    cell = ctx.kernel("T c(T z, T zb, T c, T f, T i, T g) { return c; }", "c")
    xs = [ctx.full(16, 1.0) for _ in range(4)]

    def forward():
        k(x, a)

    def forward_dot_backward():
        clmad.dot(k(x, a), w).backward()
        x.zero_grad()

    def hmlstm_step():  # bench/python_overhead.py's HM-LSTM round, without the device
        clmad.dot(cell(x, a, *xs), w).backward()
        for t in xs:
            t.zero_grad()

    ops = {"forward": forward, "forward + dot + backward": forward_dot_backward,
           "x * a": lambda: x * a, "x * 2.0": lambda: x * 2.0, "HM-LSTM step (6-input cell)": hmlstm_step}
    out = {}
    for name, op in ops.items():
        before = counter.value
        op()
        crossings = counter.value - before
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                op()
            times.append((time.perf_counter_ns() - t0) / calls / 1e3)
        out[name] = {"us": statistics.median(times), "calls_into_c": crossings}
    return out


def child_real(calls):
    sys.path.insert(0, HERE)
    import clmad
    from python_overhead import calls_per_second
    return calls_per_second(clmad.Context(), calls)


def run_child(package, library, mode, calls, rounds):
    env = dict(os.environ, CLMAD_LIBRARY=library, PYTHONPATH=package)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, "--calls", str(calls),
                          "--rounds", str(rounds)], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--package", action="append", help="a folder holding clmad/ (default: the importable one)")
    p.add_argument("--build", help="build folder: adds the real library's loops and bench_call")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--json")
    p.add_argument("--child", choices=("null", "real"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        result = child_null(args.calls, 3) if args.child == "null" else child_real(args.calls)
        print(json.dumps(result))
        return
    if not args.package:
        import clmad
        args.package = [os.path.dirname(os.path.dirname(os.path.abspath(clmad.__file__)))]
    packages = [os.path.abspath(d) for d in args.package]
    null_runs = {d: [] for d in packages}
    real_runs = {d: [] for d in packages}
    c_runs = []
    with tempfile.TemporaryDirectory() as tmp:
        null_lib = build_null_library(tmp)
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
            for d in packages:
                null_runs[d].append(run_child(d, null_lib, "null", args.calls, 3))
                if args.build:
                    real_runs[d].append(run_child(d, os.path.join(os.path.abspath(args.build), "libclmad.so"),
                                                  "real", args.calls, 1))
            if args.build:
                c_runs.append(json.loads(subprocess.run(
                    [os.path.join(args.build, "bench_call"), "--calls", str(args.calls)], check=True,
                    capture_output=True, text=True).stdout))
    med = statistics.median
    result = {"load_average_1_5_15": os.getloadavg(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
              "rounds": args.rounds, "calls": args.calls, "packages": {}}
    lines = [f"Python layer alone (null library), us per operation, median of {args.rounds} rounds "
             "(calls into the library in brackets):", "",
             "| operation | " + " | ".join(packages) + " |", "|---|" + "---:|" * len(packages)]
    for op in null_runs[packages[0]][0]:
        cells = [f"{med(run[op]['us'] for run in null_runs[d]):.2f} ({null_runs[d][0][op]['calls_into_c']})"
                 for d in packages]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    for d in packages:
        result["packages"][d] = {"null_library_us": {op: med(run[op]["us"] for run in null_runs[d])
                                                     for op in null_runs[d][0]},
                                 "calls_into_c": {op: v["calls_into_c"] for op, v in null_runs[d][0].items()}}
    if args.build:
        keys = (("forward_calls_per_s", "forward (no grad)"), ("fwd_bwd_calls_per_s", "forward + dot + backward"))
        c_med = {k: med(run[k] for run in c_runs) for k, _ in keys}
        result["c_calls_per_s"] = c_med
        lines += ["", f"Real library ({args.build}), calls per second, median of {args.rounds} interleaved "
                  "rounds; Python's cost per call over C = 1/Python - 1/C:", "",
                  "| loop | C | " + " | ".join(packages) + " |", "|---|---:|" + "---:|" * len(packages)]
        for k, label in keys:
            cells = []
            for d in packages:
                py = med(run[k] for run in real_runs[d])
                result["packages"][d].setdefault("calls_per_s", {})[k] = py
                cells.append(f"{py:,.0f} (+{1e6 / py - 1e6 / c_med[k]:.1f} us)")
            lines.append(f"| {label} | {c_med[k]:,.0f} | " + " | ".join(cells) + " |")
    load = result["load_average_1_5_15"]
    lines += ["", f"Load average when done: {load[0]:.1f} on {os.cpu_count()} CPUs; Python {result['python']}."]
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
