#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tables of the MLP training step (bench_mlp) beside torch.compile and JAX
jit. Standard library only. Three uses:
  mlp-report.py peers RUNS_DIR [OUT_DIR]        (scripts/run-peers.sh)
      RUNS_DIR/round-*/ holds bench_mlp's <device>.mlp.json and the peers'
      torch_mlp.json, jax_mlp.json; RUNS_DIR/check.json check_mlp.py's
      errors. Writes OUT_DIR/peers-mlp.md and .json.
  mlp-report.py portability RUNS_DIR [OUT_DIR]  (scripts/run-portability.sh)
      RUNS_DIR/round-*/<implementation>/<device>.mlp.json and
      round-*/peers-<isa>/{torch,jax}_mlp.json; RUNS_DIR/check-<impl>.json.
      Adds the GPUs recorded in OUT_DIR. Writes OUT_DIR/portability-mlp.md, .json.
  mlp-report.py recorded OUT_DIR                (scripts/run-nvidia.sh)
      For each GPU's OUT_DIR/<base>.mlp.json, with <base>.mlp.peer_torch.json,
      <base>.mlp.peer_jax.json and <base>.mlp.check.json from the same run:
      OUT_DIR/<base>.mlp.peers.md and .json.
Each figure is the median over rounds of that round's median (one round for
a recorded GPU); ratios are time ratios (above 1: clmad is slower)."""
import datetime
import glob
import json
import os
import statistics
import sys

# (key, heading, tool, variant)
COLUMNS = [("clmad_fused", "clmad fused", "clmad", "fused"),
           ("clmad_separate", "clmad separate", "clmad", "separate"),
           ("clmad_region", "clmad region", "clmad", "region"),
           ("clmad_per-param", "clmad per-param Adam", "clmad", "per-param"),
           ("clmad_gemms", "clmad GEMMs alone", "clmad", "gemms"),
           ("torch_eager", "torch eager", "torch", "eager"),
           ("torch_compile", "torch.compile", "torch", "compile"),
           ("jax_jit", "JAX jit", "jax", "jit")]
RATIOS = [("torch_compile", "fused / torch.compile"), ("jax_jit", "fused / JAX jit")]


def read(path):
    with open(path) as fh:
        return json.load(fh)


class Source:
    """One OpenCL implementation (or recorded GPU): clmad's times and its peers'."""

    def __init__(self, name):
        self.name, self.meta, self.ms, self.losses, self.flops = name, {}, {}, {}, {}

    def add_clmad(self, doc):
        self.meta = doc
        for r in doc["runs"]:
            self.ms.setdefault((r["dims"], "clmad_" + r["variant"]), []).append(r["median_ms"])
            self.losses.setdefault(r["dims"], {})["clmad"] = r["losses"]
            self.flops[r["dims"]] = r["gflops"] * r["median_ms"] * 1e6  # GFLOP/s x ms: flops

    def add_peer(self, doc):
        for r in doc["runs"]:
            key = f"{doc['tool']}_{r['variant']}"
            self.ms.setdefault((r["dims"], key), []).append(r["median_ms"])
            self.losses.setdefault(r["dims"], {})[f"{doc['tool']} {r['variant']}"] = r["losses"]


def load_rounds(runs_dir):
    """{implementation: Source}, {isa: Source of peers}, versions."""
    impls, peers, versions = {}, {}, {}
    for rd in sorted(glob.glob(os.path.join(runs_dir, "round-*"))):
        for folder, _, files in os.walk(rd):
            sub = os.path.relpath(folder, rd)
            for f in sorted(files):
                if not f.endswith(".json"):
                    continue
                doc = read(os.path.join(folder, f))
                if doc.get("benchmark") != "mlp":
                    continue
                if "tool" in doc:
                    isa = sub[len("peers-"):] if sub.startswith("peers-") else "host"
                    peers.setdefault(isa, Source(isa)).add_peer(doc)
                    versions[doc["tool"]] = doc.get("version", "?")
                    versions["python"] = doc.get("python", "?")
                else:
                    name = "pocl" if sub == "." else sub
                    impls.setdefault(name, Source(name)).add_clmad(doc)
    return impls, peers, versions


def recorded_gpus(out_dir):
    """GPUs measured on another machine (scripts/run-nvidia.sh), with their peers and check."""
    found = []
    for f in sorted(glob.glob(os.path.join(out_dir, "*.mlp.json"))):
        if f.endswith((".peer_torch.json", ".peer_jax.json", ".check.json")):
            continue
        doc = read(f)
        if doc.get("device_type") != "gpu":
            continue
        base = f[:-len(".mlp.json")]
        src = Source("gpu (recorded)")
        src.add_clmad(doc)
        for tool in ("torch", "jax"):
            if os.path.exists(f"{base}.mlp.peer_{tool}.json"):
                src.add_peer(read(f"{base}.mlp.peer_{tool}.json"))
        check = read(f"{base}.mlp.check.json") if os.path.exists(f"{base}.mlp.check.json") else None
        found.append((base, src, check))
    return found


def median(v):
    return statistics.median(v) if v else None


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def rows_of(src, peers):
    """One row per size: medians, ratios, spreads, GFLOP/s."""
    rows = []
    for d in sorted({d for d, _ in src.ms}, key=lambda s: [int(p) for p in s.split("x")]):
        # clmad's rounds from src, the peers' from the peers of its host (or src itself when recorded)
        times = {key: src.ms.get((d, key)) or (peers.ms.get((d, key)) if peers else None) for key, *_ in COLUMNS}
        ms = {key: median(v) for key, v in times.items()}
        ratios = {key: ms["clmad_fused"] / ms[key] if ms["clmad_fused"] and ms[key] else None for key, _ in RATIOS}
        share = ms["clmad_gemms"] / ms["clmad_fused"] if ms["clmad_gemms"] and ms["clmad_fused"] else None
        flops = src.flops.get(d)
        rows.append({"implementation": src.name, "device": src.meta.get("device", "?"),
                     "driver": src.meta.get("driver", "?"), "dims": d, "ms": ms, "ratios": ratios,
                     "gemm_share": share,
                     "gflops": {k: flops / v * 1e-6 if flops and v else None for k, v in ms.items()},
                     "rounds": times,
                     "losses": {**src.losses.get(d, {}), **(peers.losses.get(d, {}) if peers else {})}})
    return rows


def table(rows, with_impl):
    head = (["implementation"] if with_impl else []) + ["size (BxIxHxC)"] + [c[1] for c in COLUMNS] + \
        [r[1] for r in RATIOS] + ["GEMMs / fused", "clmad GFLOP/s", "best peer GFLOP/s"]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in rows:
        peer_g = [r["gflops"][k] for k in ("torch_eager", "torch_compile", "jax_jit") if r["gflops"][k]]
        cells = ([r["implementation"]] if with_impl else []) + [r["dims"]] + \
            [fmt(r["ms"][c[0]], 3 if (r["ms"][c[0]] or 99) < 10 else 1) for c in COLUMNS] + \
            [fmt(r["ratios"][k]) for k, _ in RATIOS] + [fmt(r["gemm_share"]), fmt(r["gflops"]["clmad_fused"], 1),
                                                         fmt(max(peer_g, default=None), 1)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def spread(rows, with_impl):
    head = (["implementation"] if with_impl else []) + ["size"] + [c[1] for c in COLUMNS]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in rows:
        cells = [fmt(max(v) / min(v)) if v else "-" for v in (r["rounds"][c[0]] for c in COLUMNS)]
        out.append("| " + " | ".join(([r["implementation"]] if with_impl else []) + [r["dims"]] + cells) + " |")
    return out


def losses_md(rows):
    out = []
    for r in rows:
        pairs = "; ".join(f"{k} {v[0]:.6f} .. {v[-1]:.6f}" for k, v in sorted(r["losses"].items()))
        out.append(f"- {r['implementation']} {r['dims']}: {pairs}")
    return out


def verdict(e):
    """ok, FAIL, or nothing for PyTorch float32's own errors (the yardstick)."""
    if "ok" not in e:
        return "the yardstick"
    return "ok" if e["ok"] else "FAIL (limits " + ", ".join(f"{k} {v:.1e}" for k, v in e["limits"].items()) + ")"


def check_md(checks):
    """check_mlp.py's verdicts, one line per size and device."""
    out = []
    for label, doc in checks:
        if not doc:
            out.append(f"- {label}: no check recorded")
            continue
        for res in doc["results"]:
            e = res["errors"]
            out.append(f"- {label} {res['dims']}, {res['steps']} Adam steps, torch {doc['torch']} on "
                       f"{doc['torch_device']}: " + "; ".join(
                           f"{k}: loss {v['loss_rel']:.1e} relative, 99% of parameters within {v['q99_lr']:.1e} lr, "
                           f"{v['outliers']} of {v['elements']} beyond {doc['agree_lr']} lr (max {v['max_lr']:.2g} lr), "
                           f"{verdict(v)}" for k, v in e.items()))
    return out


STEP = ("one training step: logits = gelu(x W1 + b1) W2 + b2 (GELU in its tanh form, a broadcast kernel "
        "over T in clmad), mean softmax cross-entropy against integer labels, backward, one Adam step on "
        "W1, b1, W2, b2 (lr 1e-3, betas 0.9, 0.999, eps 1e-8), float32, the same inputs for every tool "
        "(bench/peers/mlp_inputs.py). clmad fused adds b1 inside the GELU kernel, clmad separate with "
        "clmad_add, clmad region the same with the sum released (a lazy region); clmad per-param Adam is "
        "fused with the optimizer launched once per parameter instead of its grouped launch (one kernel for the four); clmad GEMMs alone times the step's five matrix products (CLBlast) and nothing else, "
        "and GEMMs / fused is their share of the step; torch.compile compiles the loss (and its backward) and the Adam step; JAX jits the "
        "whole step, matrix products in true float32. GFLOP/s count the five GEMMs of the step "
        "(4 B I H + 6 B H C). Ratios are time ratios: above 1, clmad is slower.")


def write(out_dir, name, header_lines, rows, with_impl, checks):
    os.makedirs(out_dir, exist_ok=True)
    several = any(len(v) > 1 for r in rows for v in r["rounds"].values() if v)
    md = header_lines + [""] + table(rows, with_impl) + \
        (["", "Spread over rounds (slowest / fastest round median):", ""] + spread(rows, with_impl) if several else []) + \
        ["", "Correctness (bench/peers/check_mlp.py: the first steps' losses and the "
                                   "parameters after them, against PyTorch in float64 and float32; each error "
                                   "may reach 4x PyTorch float32's own against float64, 5x against PyTorch "
                                   "float32, or a floor, and none 2 lr a step):", ""] + \
        check_md(checks) + ["", "Losses of the first steps per tool (the same inputs):", ""] + losses_md(rows)
    with open(os.path.join(out_dir, name + ".md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    with open(os.path.join(out_dir, name + ".json"), "w") as fh:
        json.dump({"header": header_lines, "unit": "ms", "rows": rows,
                   "checks": [{"label": l, "check": c} for l, c in checks]}, fh, indent=1)
        fh.write("\n")
    print("\n".join(md))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            return next(l.split(":", 1)[1].strip() for l in fh if l.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def load_note(runs_dir):
    """The load averages run-peers.sh / run-portability.sh wrote at each round's start."""
    path = os.path.join(runs_dir, "load.txt")
    if not os.path.exists(path):
        return ""
    with open(path) as fh:
        loads = [l.strip() for l in fh if l.strip()]
    return f" Load average (1 min) at each round's start: {', '.join(loads)}." if loads else ""


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("peers", "portability", "recorded"):
        sys.exit(__doc__)
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "recorded":
        for base, src, check in recorded_gpus(path):
            rows = rows_of(src, None)
            m = src.meta
            header = [f"# clmad and its peers on {m['device']}: MLP training step", "",
                      f"{m['device']}, driver {m.get('driver', '?')} ({m.get('platform', '?')}); "
                      f"scripts/run-nvidia.sh, peers on the same GPU in the same run; one run of "
                      f"{m.get('repetitions')} repetitions per figure, so read the ratios, not the last digit.",
                      "", STEP]
            write(os.path.dirname(base) or ".", os.path.basename(base) + ".mlp.peers",
                  header, rows, False, [(m["device"], check)])
        return
    out = sys.argv[3] if len(sys.argv) > 3 else "bench/results"
    impls, peers, versions = load_rounds(path)
    if not impls:
        sys.exit(f"mlp-report: no bench_mlp measurements under {path}")
    n_rounds = len(glob.glob(os.path.join(path, "round-*")))
    stamp = datetime.datetime.fromtimestamp(os.path.getmtime(path)).astimezone().isoformat(timespec="seconds")
    vers = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    rows, checks = [], []
    for name in sorted(impls):
        isa = "avx2" if name == "pocl-avx2" and "avx2" in peers else "host"
        rows += rows_of(impls[name], peers.get(isa))
        check = os.path.join(path, "check.json" if mode == "peers" else f"check-{name}.json")
        checks.append((f"{name} ({impls[name].meta.get('device', '?')})", read(check) if os.path.exists(check) else None))
    if mode == "portability":
        for base, src, check in recorded_gpus(out):
            rows += rows_of(src, None)
            checks.append((f"gpu (recorded) ({src.meta.get('device')})", check))
    reps = next(iter(impls.values())).meta.get("repetitions")
    what = ("`make bench-peers` (scripts/run-peers.sh)" if mode == "peers" else
            "`make bench-portability` (scripts/run-portability.sh), bench_mlp on each OpenCL implementation "
            "installed, the peers on the same CPU (for POCL's AVX2 library: limited to AVX2 too); GPU rows "
            "recorded on another machine, their peers on the same GPU in the same run")
    header = [f"# clmad and its peers: MLP training step{'' if mode == 'peers' else ', per OpenCL implementation'}",
              "", f"{stamp}; {cpu_model()}, {os.cpu_count()} cores; {n_rounds} interleaved rounds of "
              f"{reps} repetitions; {vers}.{load_note(path)}", "",
              f"Generated by {what}: {STEP} Times in ms: the median over rounds of each round's median."]
    write(out, "peers-mlp" if mode == "peers" else "portability-mlp", header, rows, mode == "portability", checks)


if __name__ == "__main__":
    main()
