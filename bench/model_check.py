#!/usr/bin/python3
"""The step-time model against the runs of bench/model_check.sh.

    bench/model_check.py OUT_DIR PTRAIN "RATE ..."

OUT_DIR holds the run reports (RATE-WORKERS-LABEL.json, and
RATE-WORKERS-LABEL.K.json for the K-th repeat of a configuration), the probes
(probe-RATE-HOSTS-ALGO.txt: ring and halving-doubling all-reduces of 4 KiB to
16 MiB over that many hosts) and the codecs' CPU costs (codecs.csv). A run's
step time is its steady one: worker 0's seconds from the end of step SKIP to
its last step, over those steps (the first steps pay for connections and first
touches of memory); with repeats, the median of its runs' steady steps. The
compute per sample is calibrated once for each worker count, on DGC at the
first rate (the workers share the machine's cores, so it depends on how many
there are; DGC's exchange is small, so the link's noise hardly moves what it
leaves). Every other run is predicted by `ptrain simulate`: a collective with
the bandwidth its own pattern and host count reached in the probe at the size
nearest the gradient's, and the latency of the quickest small all-reduce; the
parameter servers with the link's rate (a shard serves one request at a time,
a single stream that fills the link). Prints the table, writes
OUT_DIR/model-check.csv, then projects to 1,024 workers as 128 hosts x 8
threads (OUT_DIR/projection.csv).
"""
import csv
import functools
import json
import math
import os
import re
import statistics
import subprocess
import sys

SKIP = 2
LATENCY_SIZES = ("4KiB", "16KiB", "64KiB")
CALIBRATION = "dgc"  # its exchange is small, so the link's noise hardly moves the compute it leaves
LABELS = {  # label: (name in the table, simulate's options; S: the run's servers)
    "ring": ("dense ring", ["--exchange", "ring"]),
    "ring-overlap": ("dense ring, overlap", ["--exchange", "ring", "--overlap"]),
    "hd": ("halving-doubling", ["--exchange", "hd"]),
    "fp16": ("fp16 ring", ["--exchange", "ring", "--codec", "fp16"]),
    "int8": ("int8 ring", ["--exchange", "ring", "--codec", "int8"]),
    "dgc": ("DGC 99.9%", ["--exchange", "allgather", "--sparse-codec", "dgc", "--density", "0.001"]),
    "ps-sync": ("ps-sync, S shards", ["--exchange", "ps", "--servers", "S"]),
    "async": ("async, S shards", ["--exchange", "ps-async", "--servers", "S"]),
    "ssp": ("ssp (s = 2), S shards", ["--exchange", "ps-async", "--servers", "S"]),
    "hierarchical": ("hierarchical, 2 hosts x 2 threads", ["--exchange", "hierarchical", "--local-workers", "2"]),
}


def steady_step_s(report):
    # Worker 0's steps (under ssp and async the curve may go on with another worker's, without times).
    points = [(p["step"], p["seconds"]) for p in report["loss_curve"] if p["seconds"] > 0]
    first = next((p for p in points if p[0] == SKIP), None)
    last = points[-1] if points else None
    if first is None or last[0] <= SKIP:
        sys.exit(f"model_check.py: a report has no per-step times past step {SKIP} (run with --log-every 1)")
    return (last[1] - first[1]) / (last[0] - first[0])


@functools.cache  # read once: every run of a rate and host count asks for the same probes
def probe(out, rate, hosts, algo):
    """{size: (seconds, bus bandwidth in Gbit/s)} of a probe's all-reduces."""
    path = os.path.join(out, f"probe-{rate}-{hosts}-{algo}.txt")
    rows = {}
    for line in open(path):
        m = re.match(r"\s*(\w+)\s+(\d+[KM]iB)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+ok", line)
        if m and m.group(1) == algo:
            rows[m.group(2)] = (float(m.group(3)) * 1e-6, float(m.group(4)) * 8)
    if any(size not in rows for size in LATENCY_SIZES):
        sys.exit(f"model_check.py: {path} lacks {algo} rows of {', '.join(LATENCY_SIZES)}")
    return rows


def rate_gbit(rate):
    """tc's rate ("1gbit", "500mbit") in Gbit/s."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(gbit|mbit|kbit)", rate)
    if not m:
        sys.exit(f"model_check.py: '{rate}' is not a rate like 1gbit or 500mbit")
    return float(m.group(1)) * {"gbit": 1, "mbit": 1e-3, "kbit": 1e-6}[m.group(2)]


def size_bytes(size):
    return int(size[:-3]) * {"KiB": 1 << 10, "MiB": 1 << 20}[size[-3:]]


def link(out, rate, hosts, algo, gradient_bytes):
    """(bandwidth Gbit/s, latency us) that a probe gives: the bus bandwidth at the size nearest the
    gradient's, and
    the quickest small all-reduce's time over its messages (2(H-1) in a ring, 2 log2(H) in
    halving-doubling; the quickest, as one stalled packet costs a small one milliseconds)."""
    rows = probe(out, rate, hosts, algo)
    messages = 2 * (hosts - 1) if algo == "ring" else 2 * (hosts - 1).bit_length()
    nearest = min(rows, key=lambda size: abs(math.log(size_bytes(size) / gradient_bytes)))
    return rows[nearest][1], min(rows[s][0] for s in LATENCY_SIZES) / messages * 1e6


def simulate(ptrain, out, args):
    path = os.path.join(out, "predicted.csv")
    done = subprocess.run([ptrain, "simulate", "--csv", path] + args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"model_check.py: ptrain simulate {' '.join(args)}: {done.stderr.strip()}")
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    if len(sys.argv) != 4:
        sys.exit('usage: model_check.py OUT_DIR PTRAIN "RATE ..." (the first rate is calibrated on)')
    out, ptrain, rates = sys.argv[1], sys.argv[2], sys.argv[3].split()
    repeats = {}  # (rate, workers, label): [(report, steady step s), ...]
    for name in sorted(os.listdir(out)):
        m = re.fullmatch(r"(\w+)-(\d+)-([\w-]+)(?:\.\d+)?\.json", name)
        if m and m.group(3) in LABELS:
            report = json.load(open(os.path.join(out, name)))
            key = (m.group(1), int(m.group(2)), m.group(3))
            repeats.setdefault(key, []).append((report, steady_step_s(report)))
    runs = []
    for (rate, workers, label), done in sorted(repeats.items()):
        steps = sorted(step for _, step in done)
        runs.append({"rate": rate, "workers": workers, "label": label, "report": done[0][0],
                     "step_s": statistics.median(steps), "spread": (steps[0], steps[-1]), "repeats": len(steps)})
    runs = [r for r in runs if r["rate"] in rates]
    if not runs:
        sys.exit(f"model_check.py: no run reports of {' '.join(rates)} in {out}")
    first_rate = rates[0]
    codecs = os.path.join(out, "codecs.csv")
    cores = os.cpu_count()

    def common(run, compute_ms):
        report = run["report"]
        w = run["workers"]
        threads = report["run"].get("local_workers", 1)
        hosts = w // threads
        servers = report["run"]["servers"]
        opts = [o if o != "S" else str(servers) for o in LABELS[run["label"]][1]]
        # Each collective at what its own pattern carried in the probe. A shard serves one request at
        # a time, each a single stream that fills its link: the parameter servers at the link's rate.
        gradient_bytes = 4 * report["run"]["parameters"]
        bandwidth, latency = link(out, run["rate"], hosts, "hd" if run["label"] == "hd" else "ring", gradient_bytes)
        if servers:
            bandwidth = rate_gbit(run["rate"])
        return ["--workers", str(w), "--parameters", str(report["run"]["parameters"]), "--batch",
                str(report["plan"]["run"]["batch"]), "--compute-per-sample", f"{compute_ms:.9g}", "--bandwidth",
                f"{bandwidth:.4f}", "--latency", f"{latency:.1f}", "--codec-costs", codecs,
                "--cores-per-rank", f"{cores / w:.4f}"] + opts

    # Calibration: the compute per sample is what the steady step leaves once the model's exchange is off.
    compute_ms = {}
    for run in runs:
        if run["rate"] == first_rate and run["label"] == CALIBRATION:
            row = simulate(ptrain, out, common(run, 1e-9))[0]
            left = run["step_s"] * 1000 - float(row["exchange_ms"]) - float(row["codec_ms"])
            batch = run["report"]["plan"]["run"]["batch"]
            compute_ms[run["workers"]] = left / batch
    print(f"{cores} cores; compute per sample calibrated on {LABELS[CALIBRATION][0]} at {first_rate}: " +
          ", ".join(f"{w} workers {c:.4f} ms" for w, c in sorted(compute_ms.items())))
    gradient_bytes = 4 * runs[0]["report"]["run"]["parameters"] if runs else 1
    for rate in rates:
        for h in (2, 4):
            for algo in ("ring", "hd"):
                bandwidth, latency = link(out, rate, h, algo, gradient_bytes)
                print(f"{rate}, {h} hosts, {algo}: {bandwidth:.3f} Gbit/s near the gradient's "
                      f"{gradient_bytes / 2**20:.1f} MiB, {latency:.0f} us a message")

    rows = []
    for run in runs:
        if run["rate"] == first_rate and run["label"] == CALIBRATION:
            continue
        if run["workers"] not in compute_ms:
            continue
        predicted = float(simulate(ptrain, out, common(run, compute_ms[run["workers"]]))[0]["step_ms"])
        measured = run["step_s"] * 1000
        servers = run["report"]["run"]["servers"]
        name = LABELS[run["label"]][0].replace("S shards", f"{servers} shard" + ("s" if servers > 1 else ""))
        rows.append((run["rate"], run["workers"], name, predicted, measured, predicted / measured - 1,
                     run["repeats"], run["spread"]))
    most = max((r[6] for r in rows), default=1)
    if most > 1:
        print(f"\nmeasured: the median of each configuration's runs (up to {most}); their range beside it")
    runs_column = (" runs: fastest to slowest |", "---|") if most > 1 else ("", "")
    print(f"\n| rate | workers | configuration | predicted step ms | measured | error |{runs_column[0]}")
    print(f"|---|---|---|---|---|---|{runs_column[1]}")
    for r in rows:
        spread = f" {r[6]}: {r[7][0] * 1000:.1f} to {r[7][1] * 1000:.1f} |" if most > 1 else ""
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | {100 * r[5]:+.1f}% |{spread}")
    within = sum(abs(r[5]) <= 0.10 for r in rows)
    print(f"\nwithin 10%: {within} of {len(rows)} predictions")
    with open(os.path.join(out, "model-check.csv"), "w") as f:
        f.write("rate,workers,configuration,predicted_step_ms,measured_step_ms,error,runs,fastest_ms,slowest_ms\n")
        for r in rows:
            f.write(f'{r[0]},{r[1]},"{r[2]}",{r[3]:.3f},{r[4]:.3f},{r[5]:.4f},{r[6]},{r[7][0] * 1000:.3f},'
                    f'{r[7][1] * 1000:.3f}\n')

    # The projection: 128 hosts x 8 threads, each thread a core (the compute of 2 workers on these 2
    # cores), a host's memory 8 times what one core copies here (read + written, from a probe's ceiling).
    if 2 in compute_ms:
        text = open(os.path.join(out, f"probe-{first_rate}-2-ring.txt")).read()
        m = re.search(r"([\d.]+) GB/s in all", text)
        memory = 8 * float(m.group(1)) / 2 if m else 10.0
        projection = os.path.join(out, "projection.csv")
        report = runs[0]["report"]
        args = ["--parameters", str(report["run"]["parameters"]), "--compute-per-sample", f"{compute_ms[2]:.9g}",
                "--batch", str(report["plan"]["run"]["batch"]), "--workers", "8,64,128,256,512,1024",
                "--bandwidth", "1,10,100", "--exchange", "hierarchical,ring", "--local-workers", "8",
                "--memory-bandwidth", f"{memory:.1f}", "--cores-per-rank", "1", "--csv", projection]
        text = subprocess.run([ptrain, "simulate"] + args, check=True, capture_output=True, text=True).stdout
        print("\nprojection to 128 hosts x 8 threads (hierarchical) against a flat ring over the same workers:")
        print("ptrain simulate " + " ".join(args))
        print(text)


if __name__ == "__main__":
    main()
