# SPDX-License-Identifier: Apache-2.0
"""Shared inputs, float64 reference and timing helpers for the peer benchmarks.

The inputs are bit-identical to bench/bench_hmlstm.c's: the same xorshift64
stream (seed 0x2545F4914F6CDD1D) drawn in the same order. For each dims of the
--dims list, in order, bench_hmlstm draws
  c, f, i, g   dims*dims values each, (float)(4u - 2), row-major
  w            dims*dims values, (float)(2u - 1)
  "random" controls: per column, z = u < 1/3, then zb = u < 0.5
  "uniform" controls: the same two draws once every 32 columns
and the next dims continues the stream. A peer run with the same --dims list
as bench_hmlstm therefore sees the same c, f, i, g, w and random z, zb
(the uniform controls are drawn only to keep the stream in step).

`python inputs.py --dims 1024,2048` checks the generator against a scalar
xorshift and prints the float64 reference loss for each dims.
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np

SEED = 0x2545F4914F6CDD1D
MASK = (1 << 64) - 1


def _step(x):
    x ^= (x << 13) & MASK
    x ^= x >> 7
    x ^= (x << 17) & MASK
    return x


# xorshift64 is linear over GF(2): a map is stored as the images of the 64 bits.
def _apply(cols, x):
    r = 0
    j = 0
    while x:
        if x & 1:
            r ^= cols[j]
        x >>= 1
        j += 1
    return r


def _power(steps):
    """The map 'advance the state by `steps`' (binary exponentiation)."""
    result = [1 << j for j in range(64)]
    base = [_step(1 << j) for j in range(64)]
    while steps:
        if steps & 1:
            result = [_apply(base, c) for c in result]
        base = [_apply(base, c) for c in base]
        steps >>= 1
    return result


class XorShift64:
    """bench_hmlstm's uniform01(), vectorised: n draws at a time."""

    def __init__(self, state=SEED):
        self.state = state

    def uniform(self, n):
        # Lay the n outputs out as rows x cols; each row's first state comes
        # from the previous one by a jump of `cols` steps, then all rows step
        # together in numpy.
        rows = max(1, min(n, 2048))
        cols = -(-n // rows)
        jump = _power(cols)
        starts = [_step(self.state)]
        for _ in range(rows - 1):
            starts.append(_apply(jump, starts[-1]))
        s = np.array(starts, dtype=np.uint64)
        out = np.empty((cols, rows), dtype=np.uint64)
        for t in range(cols):
            out[t] = s
            s ^= s << np.uint64(13)
            s ^= s >> np.uint64(7)
            s ^= s << np.uint64(17)
        out = out.T.reshape(-1)[:n]
        self.state = int(out[-1])
        return (out >> np.uint64(11)).astype(np.float64) / 9007199254740992.0

    def uniform_scalar(self):
        self.state = _step(self.state)
        return (self.state >> 11) / 9007199254740992.0


def generate(dims_list):
    """Yields (dims, dict of float32 arrays) in bench_hmlstm's order."""
    rng = XorShift64()
    for d in dims_list:
        n = d * d
        x = {}
        for name in ("c", "f", "i", "g"):
            x[name] = (4 * rng.uniform(n) - 2).astype(np.float32).reshape(d, d)
        x["w"] = (2 * rng.uniform(n) - 1).astype(np.float32).reshape(d, d)
        u = rng.uniform(2 * d)
        x["z"] = (u[0::2] < 1.0 / 3).astype(np.float32).reshape(1, d)
        x["zb"] = (u[1::2] < 0.5).astype(np.float32).reshape(1, d)
        rng.uniform(2 * (-(-d // 32)))  # the uniform controls
        yield d, x


def reference(x):
    """Float64 loss and gradients (c, f, i, g) by hand."""
    c, f, i, g, w = (x[k].astype(np.float64) for k in ("c", "f", "i", "g", "w"))
    flush = x["z"] == 1
    copy = ~flush & (x["zb"] == 0)
    update = ~flush & ~copy
    sf, si, tg = 1 / (1 + np.exp(-f)), 1 / (1 + np.exp(-i)), np.tanh(g)
    y = np.where(flush, si * tg, np.where(copy, c, sf * c + si * tg))
    loss = float(np.sum(y * w))
    gc = w * np.where(update, sf, np.where(copy, 1.0, 0.0))
    gf = np.where(update, w * sf * (1 - sf) * c, 0.0)
    gi = np.where(copy, 0.0, w * si * (1 - si) * tg)
    gg = np.where(copy, 0.0, w * si * (1 - tg * tg))
    return loss, (gc, gf, gi, gg)


def check(x, loss, grads, label):
    """Prints the largest gradient error against the float64 reference."""
    ref_loss, ref = reference(x)
    err = max(float(np.max(np.abs(np.asarray(a, dtype=np.float64) - b))) for a, b in zip(grads, ref))
    print(f"  check {label}: loss {loss:.6f} (float64 {ref_loss:.6f}), max |grad error| {err:.2e}")
    if err > 1e-5:
        raise SystemExit(f"{label}: gradients disagree with the float64 reference ({err:.2e})")
    return ref_loss


def median_ms(fn, reps, warmup=2):
    """Median wall time of fn() in ms after warm-up runs (fn must block)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def parse_args(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dims", default="1024,2048", help="comma-separated, as bench_hmlstm --dims")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--json", help="write the medians here")
    a = p.parse_args()
    a.dims = [int(s) for s in a.dims.split(",")]
    return a


def write_json(path, tool, version, runs, benchmark=None):
    """The peer's medians; benchmark names another experiment than the HM-LSTM cell's ("mlp")."""
    if path:
        doc = {"tool": tool, "version": version, "python": platform.python_version(), "runs": runs}
        if benchmark:
            doc["benchmark"] = benchmark
        with open(path, "w") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    args = parse_args("Checks the generator and prints the reference loss.")
    a, b = XorShift64(), XorShift64()
    v = a.uniform(100003)
    s = np.array([b.uniform_scalar() for _ in range(100003)])
    assert np.array_equal(v, s) and a.state == b.state, "vectorised xorshift differs"
    for d, x in generate(args.dims):
        loss, _ = reference(x)
        print(f"dims {d}: reference loss {loss:.9g}; sums c {x['c'].sum(dtype=np.float64):.9g} "
              f"w {x['w'].sum(dtype=np.float64):.9g}; z {int(x['z'].sum())} zb {int(x['zb'].sum())}")
