#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the rounds of scripts/run-peers.sh into peers.json, peers.md and a
gnuplot chart peers.svg. Standard library only.
Usage: peers-report.py RUNS_DIR [OUT_DIR] [BUILD_DIR]
RUNS_DIR holds round-*/ with bench_hmlstm's <device>.hmlstm.json and the
peers' torch.json, jax.json, numpy.json. Each cell of the table is the median
over rounds of that round's median."""
import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

# (column key, heading, tool, variant); tool "clmad" reads bench_hmlstm's JSON.
COLUMNS = [
    ("clmad_store", "clmad store", "clmad", "store"),
    ("clmad_recompute", "clmad recompute", "clmad", "recompute"),
    ("clmad_summed", "clmad summed", "clmad", "summed"),
    ("clmad_natural", "clmad sum(f*w)", "clmad", "natural"),
    ("clmad_mean", "clmad mean(f*w)", "clmad", "mean"),
    ("clmad_hand", "clmad hand", "clmad", "hand"),
    ("clmad_primal", "clmad primal", "clmad", "primal"),
    ("torch_eager", "torch eager", "torch", "eager"),
    ("torch_compile", "torch.compile", "torch", "compile"),
    ("jax_jit", "jax jit", "jax", "jit"),
    ("numpy", "numpy", "numpy", "hand"),
]
RATIOS = [("torch_compile", "clmad best fused / torch.compile"),
          ("jax_jit", "clmad best fused / jax jit"),
          ("torch_eager", "clmad best fused / torch eager"),
          ("natural_jax", "clmad sum(f*w) / jax jit")]


def load_rounds(runs_dir):
    """{(dims, key): [round medians]}, tool versions, reference losses, clmad JSON header."""
    times, versions, losses, clmad_meta = {}, {}, {}, {}
    rounds = sorted(glob.glob(os.path.join(runs_dir, "round-*")))
    for rd in rounds:
        for path in glob.glob(os.path.join(rd, "*.json")):
            with open(path) as fh:
                doc = json.load(fh)
            if doc.get("benchmark") == "mlp":
                continue  # bench_mlp and its peers: scripts/mlp-report.py
            if doc.get("benchmark") == "hmlstm":
                clmad_meta = doc
                for r in doc["runs"]:
                    if r["controls"] != "random":
                        continue
                    if "loss" in r:
                        losses.setdefault(r["dims"], {})["clmad fused"] = r["loss"]
                    for key, _, tool, variant in COLUMNS:
                        if tool == "clmad" and variant == r["variant"]:
                            times.setdefault((r["dims"], key), []).append(r["median_ms"])
            else:
                versions[doc["tool"]] = doc["version"]
                versions["python"] = doc.get("python", "?")
                for r in doc["runs"]:
                    for key, _, tool, variant in COLUMNS:
                        if tool == doc["tool"] and variant == r["variant"]:
                            times.setdefault((r["dims"], key), []).append(r["median_ms"])
                    losses.setdefault(r["dims"], {})[f"{doc['tool']} {r['variant']}"] = r["loss"]
                    if "ref_loss" in r:
                        losses[r["dims"]]["float64 reference"] = r["ref_loss"]
    return len(rounds), times, versions, losses, clmad_meta


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def pocl_version(build, meta):
    """The 'version:' line of clmad-info (run in run-peers.sh's environment),
    else the platform and driver bench_hmlstm recorded."""
    info = os.path.join(build, "clmad-info")
    if os.access(info, os.X_OK):
        try:
            out = subprocess.run([info], capture_output=True, text=True, timeout=60).stdout
            # "version: OpenCL 3.0 PoCL HSTR: ..., driver: 3.1+debian"
            for line in out.splitlines():
                if line.strip().startswith("version:"):
                    version = line.split(":", 1)[1].split(" HSTR:")[0].strip()
                    return f"{version} {line.rsplit('driver:', 1)[-1].strip()}"
        except (OSError, subprocess.SubprocessError):
            pass
    return f"{meta.get('platform', '?')} {meta.get('driver', '?')}"


def measured_at(runs_dir):
    """When the last round's files were written (the report may come later)."""
    paths = glob.glob(os.path.join(runs_dir, "round-*", "*.json"))
    stamp = max(os.path.getmtime(p) for p in paths) if paths else None
    return datetime.datetime.fromtimestamp(stamp).astimezone().isoformat(timespec="seconds")


def fmt(v):
    return "-" if v is None else f"{v:.2f}"


def chart(rows, out_svg):
    if not shutil.which("gnuplot"):
        print("peers-report: gnuplot not found, no chart (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    keys = [c for c in COLUMNS if any(r["ms"].get(c[0]) is not None for r in rows)]
    data = "\n".join(
        f'"{c[1]}" ' + " ".join("NaN" if r["ms"].get(c[0]) is None else f"{r['ms'][c[0]]:.4f}" for r in rows)
        for c in keys)
    plots = ", ".join(f"$data using {k + 2} title 'dims {r['dims']}'" for k, r in enumerate(rows))
    # Two-line labels ("clmad\nstore"), horizontal: they fit under the bars.
    tics = ", ".join(f'"{c[1].replace(" ", chr(92) + "n").replace(".", chr(92) + "n")}" {k}' for k, c in enumerate(keys))
    script = f"""set terminal svg size 900,480 dynamic font 'sans,12'
set output '{out_svg}'
set title 'HM-LSTM cell, forward + backward, f32, CPU (lower is better)'
set ylabel 'median time (ms)'
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics ({tics}) nomirror
set key top left
set grid ytics
set bmargin 4
$data << EOD
{data}
EOD
plot {plots}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs_dir = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else "bench/results"
    build = sys.argv[3] if len(sys.argv) > 3 else "build"
    n_rounds, times, versions, losses, meta = load_rounds(runs_dir)
    if not times:
        sys.exit(f"peers-report: no measurements under {runs_dir}")
    rows = []
    for d in sorted({d for d, _ in times}):
        ms = {key: statistics.median(times[d, key]) if (d, key) in times else None for key, *_ in COLUMNS}
        fused = [v for v in (ms["clmad_store"], ms["clmad_recompute"], ms["clmad_summed"]) if v is not None]
        best = min(fused) if fused else None
        ratios = {key: (best / ms[key] if best is not None and ms.get(key) else None) for key, _ in RATIOS}
        if ms["clmad_natural"] and ms["jax_jit"]:
            ratios["natural_jax"] = ms["clmad_natural"] / ms["jax_jit"]
        rows.append({"dims": d, "ms": ms, "best_fused_ms": best, "ratios": ratios,
                     "rounds": {key: times.get((d, key), []) for key, *_ in COLUMNS},
                     "losses": losses.get(d, {})})

    header = {
        "date": measured_at(runs_dir),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        "device": meta.get("device", "?"),
        "pocl": pocl_version(build, meta),
        "python": versions.get("python", "?"),
        "torch": versions.get("torch", "?"),
        "jax": versions.get("jax", "?"),
        "numpy": versions.get("numpy", "?"),
        "rounds": n_rounds,
        "repetitions": meta.get("repetitions"),
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "peers.json"), "w") as fh:
        json.dump({**header, "controls": "random", "unit": "ms", "rows": rows}, fh, indent=1)
        fh.write("\n")

    md = [
        "# clmad and its peers: HM-LSTM cell, forward + backward",
        "",
        f"{header['date']}; {header['machine']}; OpenCL device {header['device']} ({header['pocl']}); "
        f"Python {header['python']}, torch {header['torch']}, jax {header['jax']}, numpy {header['numpy']}.",
        "",
        "Generated by `make bench-peers` (scripts/run-peers.sh): loss = sum(cell(z, zb, c, f, i, g) * w) "
        "and the gradients of c, f, i, g, float32, random controls, the same inputs for every tool "
        "(bench/peers/inputs.py). Times in ms: the median over "
        f"{n_rounds} alternating rounds of each round's median of {header['repetitions']} repetitions. "
        "Ratios are time ratios: above 1, clmad is slower. clmad summed is the same loss with the weight "
        "inside the kernel and clmad_sum (bench_hmlstm.c); sum(f*w) and mean(f*w) are the loss as users "
        "write it (clmad_mul, then clmad_sum or clmad_mean; fused into one loss kernel: docs/fusion.md); "
        "best fused is the fastest of store, recompute and summed.",
        "",
        "| dims | " + " | ".join(c[1] for c in COLUMNS) + " | " + " | ".join(r[1] for r in RATIOS) + " |",
        "|---" * (1 + len(COLUMNS) + len(RATIOS)) + "|",
    ]
    for r in rows:
        cells = [fmt(r["ms"][c[0]]) for c in COLUMNS] + [fmt(r["ratios"][k]) for k, _ in RATIOS]
        md.append(f"| {r['dims']} | " + " | ".join(cells) + " |")
    # This machine is shared: the spread tells how far a median can be trusted.
    md += ["", "Spread over rounds (slowest / fastest round median):", "",
           "| dims | " + " | ".join(c[1] for c in COLUMNS) + " |", "|---" * (1 + len(COLUMNS)) + "|"]
    for r in rows:
        spread = [max(v) / min(v) if v else None for v in (r["rounds"][c[0]] for c in COLUMNS)]
        md.append(f"| {r['dims']} | " + " | ".join(fmt(v) for v in spread) + " |")
    md += ["", "Loss per tool (float32 sums; the float64 reference from the same inputs), to compare with clmad's:", ""]
    for r in rows:
        pairs = ", ".join(f"{k} {v:.6f}" for k, v in sorted(r["losses"].items()))
        md.append(f"- dims {r['dims']}: {pairs}")
    with open(os.path.join(out, "peers.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    chart(rows, os.path.join(out, "peers.svg"))
    update_readme("docs/benchmarks.md", md[2], md[6:8 + len(rows)])
    print("\n".join(md))


def update_readme(path, header, table):
    """The copy of the table in docs/benchmarks.md, between its peers markers."""
    if not os.path.exists(path):
        return
    with open(path) as fh:
        text = fh.read()
    begin, end = "<!-- peers:begin -->", "<!-- peers:end -->"
    if begin not in text or end not in text:
        return
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    body = "\n".join([header, "", "Times in ms (median of round medians); ratios above 1: clmad is slower.", ""] + table)
    with open(path, "w") as fh:
        fh.write(f"{head}{begin}\n{body}\n{end}{tail}")


if __name__ == "__main__":
    main()
