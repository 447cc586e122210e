#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the rounds of scripts/run-portability.sh into portability.json,
portability.md and a gnuplot chart portability.svg. Standard library only.
Usage: portability-report.py RUNS_DIR [OUT_DIR]
RUNS_DIR holds round-*/<implementation>/<device>.hmlstm.json (bench_hmlstm)
and round-*/peers-<isa>/{torch,jax}.json. Each figure is the median over
rounds of that round's median; ratios are time ratios (above 1: clmad is
slower). GPUs measured elsewhere come from OUT_DIR/*.hmlstm.json, with the
peers measured on the same GPU from <base>.peer_torch.json and
<base>.peer_jax.json beside it where present.
Usage: portability-report.py --refresh-gpu [OUT_DIR]
keeps OUT_DIR/portability.json's CPU rows and replaces its GPU rows (after a
GPU run on another machine)."""
import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

PEERS = [("torch", "compile", "torch.compile"), ("jax", "jit", "JAX jit")]


def median(values):
    return statistics.median(values) if values else None


def load(runs_dir):
    """{impl: {"device", "driver", "platform", "ms": {(dims, variant): [..]}, "gbps"}}, {isa: {(dims, name): [..]}}"""
    impls, peers, versions = {}, {}, {}
    for rd in sorted(glob.glob(os.path.join(runs_dir, "round-*"))):
        for sub in sorted(os.listdir(rd)):
            path = os.path.join(rd, sub)
            for f in glob.glob(os.path.join(path, "*.json")):
                with open(f) as fh:
                    doc = json.load(fh)
                if doc.get("benchmark") == "mlp":
                    continue  # bench_mlp and its peers: scripts/mlp-report.py
                if sub.startswith("peers-"):
                    isa = sub[len("peers-"):]
                    versions[doc["tool"]] = doc.get("version", "?")
                    for r in doc["runs"]:
                        for tool, variant, name in PEERS:
                            if doc["tool"] == tool and r["variant"] == variant:
                                peers.setdefault(isa, {}).setdefault((r["dims"], name), []).append(r["median_ms"])
                elif doc.get("benchmark") == "hmlstm":
                    e = impls.setdefault(sub, {"device": doc["device"], "driver": doc.get("driver", "?"),
                                               "platform": doc.get("platform", "?"), "ms": {}, "passes": {}})
                    for r in doc["runs"]:
                        if r["controls"] == "random":
                            e["ms"].setdefault((r["dims"], r["variant"]), []).append(r["median_ms"])
                            e["passes"][(r["dims"], r["variant"])] = r.get("passes")
    return impls, peers, versions


def gpu_rows(out_dir, dims_seen):
    """GPUs measured on another machine: their bench_hmlstm files in OUT_DIR."""
    rows = []
    for f in sorted(glob.glob(os.path.join(out_dir, "*.hmlstm.json"))):
        with open(f) as fh:
            doc = json.load(fh)
        if "nvidia" not in f.lower() and "gpu" not in doc.get("device_type", "").lower():
            continue
        ms, passes = {}, {}
        for r in doc["runs"]:
            if r["controls"] == "random":
                ms.setdefault((r["dims"], r["variant"]), []).append(r["median_ms"])
                passes[(r["dims"], r["variant"])] = r.get("passes")
        base = f[:-len(".hmlstm.json")]
        peers = {}
        for tool, variant, name in PEERS:
            try:
                with open(f"{base}.peer_{tool}.json") as fh:
                    peer = json.load(fh)
            except OSError:
                continue
            for r in peer["runs"]:
                if r["variant"] == variant:
                    peers.setdefault((r["dims"], name), []).append(r["median_ms"])
        rows.append(("gpu (recorded)", {"device": doc["device"], "driver": doc.get("driver", "?"),
                                        "platform": doc.get("platform", "?"), "ms": ms, "passes": passes,
                                        "file": os.path.basename(f)}, peers))
    return rows


def row_for(name, e, peers, isa):
    out = []
    dims = sorted({d for d, _ in e["ms"]})
    for d in dims:
        m = {v: median(e["ms"].get((d, v), [])) for v in ("store", "recompute", "summed", "primal", "copy", "copybuf",
                                                        "unfused")}
        fused = [(m[v], v) for v in ("store", "recompute", "summed") if m[v] is not None]
        best, best_variant = min(fused) if fused else (None, None)
        passes = e["passes"].get((d, best_variant))
        copy_passes = e["passes"].get((d, "copy")) or 2
        peer_ms = {n: median(peers.get(isa, {}).get((d, n), [])) for _, _, n in PEERS} if isa else {}
        best_peer = min(((v, n) for n, v in peer_ms.items() if v is not None), default=(None, None))
        out.append({
            "implementation": name, "device": e["device"], "driver": e["driver"], "dims": d,
            "best_fused_ms": best, "best_fused_variant": best_variant, "store_ms": m["store"],
            "recompute_ms": m["recompute"], "summed_ms": m["summed"],
            "primal_ms": m["primal"], "copy_ms": m["copy"], "unfused_ms": m["unfused"],
            # clmad's contiguous copy kernel against the driver's copy of the same buffers
            "copy_over_copybuf": m["copybuf"] / m["copy"] if m["copy"] and m["copybuf"] else None,
            "fused_over_primal": best / m["primal"] if best and m["primal"] else None,
            # bench_hmlstm counts the passes over arrays of the cell's size
            # each variant makes; the copy kernel's time per pass times the
            # fused variant's passes is what the memory traffic alone costs.
            "fused_over_copy_bound": best / (m["copy"] / copy_passes * passes) if best and m["copy"] and passes
            else None,
            "peers": peer_ms, "peer_isa": isa,
            "best_peer": best_peer[1], "best_peer_ms": best_peer[0],
            "fused_over_best_peer": best / best_peer[0] if best and best_peer[0] else None,
        })
    return out


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def chart(rows, out_svg):
    if not shutil.which("gnuplot"):
        print("portability-report: gnuplot not found, no chart (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    data, tics = [], []
    for k, r in enumerate(rows):
        label = f"{r['implementation']} {r['dims']}"
        tics.append(f'"{label}" {k}')
        data.append(f'"{label}" {fmt(r["best_fused_ms"], 4).replace("-", "NaN")} '
                    f'{fmt(r["best_peer_ms"], 4).replace("-", "NaN")} {fmt(r["primal_ms"], 4).replace("-", "NaN")}')
    script = f"""set terminal svg size 1000,480 dynamic font 'sans,12'
set output '{out_svg}'
set title 'HM-LSTM cell, forward + backward, f32, per OpenCL implementation (lower is better)'
set ylabel 'median time (ms)'
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics ({", ".join(tics)}) nomirror rotate by -30
set key top left
set grid ytics
set bmargin 6
set rmargin 10
$data << EOD
{chr(10).join(data)}
EOD
plot $data using 2 title 'clmad best fused', $data using 3 title 'best peer (torch.compile, JAX jit)', \\
     $data using 4 title 'clmad primal only'
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--refresh-gpu":
        return refresh_gpu(sys.argv[2] if len(sys.argv) > 2 else "bench/results")
    runs_dir = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else "bench/results"
    impls, peers, versions = load(runs_dir)
    if not impls:
        sys.exit(f"portability-report: no measurements under {runs_dir}")
    n_rounds = len(glob.glob(os.path.join(runs_dir, "round-*")))
    rows = []
    for name in sorted(impls):
        isa = "avx2" if name == "pocl-avx2" and "avx2" in peers else ("host" if "host" in peers else None)
        rows += row_for(name, impls[name], peers, isa)
    rows += gpu_table(out)
    stamp = datetime.datetime.fromtimestamp(os.path.getmtime(runs_dir), datetime.timezone.utc)
    model = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(l.split(":", 1)[1].strip() for l in fh if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    header = {"date": stamp.isoformat(timespec="seconds"), "machine": f"{model}, {os.cpu_count()} cores",
              "rounds": n_rounds, "versions": versions}
    write(out, header, rows)


def gpu_table(out):
    rows = []
    for name, e, peers in gpu_rows(out, None):
        rows += row_for(name, e, {"gpu": peers} if peers else {}, "gpu" if peers else None)
    return rows


def refresh_gpu(out):
    with open(os.path.join(out, "portability.json")) as fh:
        doc = json.load(fh)
    rows = [r for r in doc["rows"] if r["implementation"] != "gpu (recorded)"] + gpu_table(out)
    header = {k: doc[k] for k in ("date", "machine", "rounds", "versions")}
    write(out, header, rows)


def write(out, header, rows):
    n_rounds = header["rounds"]
    versions = header["versions"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "portability.json"), "w") as fh:
        json.dump({**header, "unit": "ms", "rows": rows}, fh, indent=1)
        fh.write("\n")
    md = [
        "# clmad across OpenCL implementations: HM-LSTM cell, forward + backward",
        "",
        f"{header['date']}; {header['machine']}; {n_rounds} interleaved rounds; peers: "
        + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".",
        "",
        "Generated by `make bench-portability` (scripts/run-portability.sh): bench_hmlstm on each OpenCL "
        "implementation installed, float32, random controls, and the best of torch.compile and JAX jit on the "
        "same inputs and CPU (for POCL's AVX2 library: the peers limited to AVX2 too). GPU rows are recorded "
        "on another machine, their peers on the same GPU in the same run (bench/results/*.peers.md). Times in ms, the median "
        "over rounds of each round's median. Ratios are time ratios: above 1, clmad is slower. The copy bound "
        "is the time of the fused variant's passes over memory at the copy kernel's speed on the same device. "
        "Best fused is the fastest of bench_hmlstm's store, recompute and summed (the loss's weight inside the "
        "kernel and clmad_sum) variants, named in brackets. Copy / driver: the bandwidth of clmad's contiguous "
        "copy kernel over that of clEnqueueCopyBuffer on the same buffers (above 1: the kernel is faster).",
        "",
        "| implementation | device | dims | best fused | primal | fused / primal | fused / copy bound | best peer | "
        "peer ms | fused / best peer | copy / driver |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        md.append(f"| {r['implementation']} | {r['device']} ({r['driver']}) | {r['dims']} | {fmt(r['best_fused_ms'])} ({r.get('best_fused_variant') or '-'}) | "
                  f"{fmt(r['primal_ms'])} | {fmt(r['fused_over_primal'])} | {fmt(r['fused_over_copy_bound'])} | "
                  f"{r['best_peer'] or '-'}{' (AVX2)' if r['peer_isa'] == 'avx2' else ''} | "
                  f"{fmt(r['best_peer_ms'])} | {fmt(r['fused_over_best_peer'])} | "
                  f"{fmt(r.get('copy_over_copybuf'))} |")
    md += ["", "Rounds of each figure are in portability.json."]
    with open(os.path.join(out, "portability.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    chart(rows, os.path.join(out, "portability.svg"))
    print("\n".join(md[8:]))


if __name__ == "__main__":
    main()
