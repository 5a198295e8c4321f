#!/usr/bin/python3
"""The step-time model against the runs of bench/model_check.sh.

    bench/model_check.py OUT_DIR PTRAIN "RATE ..."

OUT_DIR holds the run reports (RATE-WORKERS-LABEL.json, and
RATE-WORKERS-LABEL.K.json for the K-th repeat of a configuration), the probes
(probe-RATE-HOSTS-ALGO.txt: ring and halving-doubling all-reduces of 4 KiB to
16 MiB over that many hosts, on the transport the all-reduce strategies take;
probe-RATE-HOSTS-ring-mpi.txt: the ring over MPI's, when that is Gloo's) and
the codecs' CPU costs (codecs.csv). A run's step time is its steady one: worker 0's seconds from the end of step SKIP to
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

The pipelines (labels pipe-*) are calibrated on two of their own runs,
GPipe with 1 and with 8 micro-batches: the first gives the compute (the
stages take turns) and the time of a message between stages (a shaped
link's token bucket passes a message that fits its burst faster than the
rate), the second what each micro-batch costs a stage beyond its samples
(its gradient zeroed, written and summed: memory traffic of the stage's
size). Each stage's share of the parameters is its share of the compute;
a message waits the latency the probe of as many hosts measured on the
transport the pipeline took (MPI's by default; ranks sharing the cores
wait to be scheduled). They get a table of their own
beside the dense ring: samples/s, the bubble (the mean of the stages' idle
fractions), the bytes the busiest worker sends a step (activations, their
gradients and a stage's all-reduce) and its peak memory (its state and the
activations it held at the most, counted from the layers' widths and the
schedule's micro-batches in flight), each predicted and measured
(OUT_DIR/pipelines.csv).
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
PIPELINE = "pipe-"  # the labels of pipeline runs, whose options come from their reports' plans
PIPELINE_CALIBRATION = ("pipe-gpipe-1", "pipe-gpipe-8")
EAGER_LIMIT = 65536  # OpenMPI's TCP transport sends messages up to this without waiting for the receiver
OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "nesterov": 1, "adam": 2}


def known_label(label):
    return label in LABELS or label.startswith(PIPELINE)


def steady_step_s(report):
    # Worker 0's steps (under ssp and async the curve may go on with another worker's, without times).
    points = [(p["step"], p["seconds"]) for p in report["loss_curve"] if (p["seconds"] or 0) > 0]
    first = next((p for p in points if p[0] == SKIP), None)
    last = points[-1] if points else None
    if first is None or last[0] <= SKIP:
        sys.exit(f"model_check.py: a report has no per-step times past step {SKIP} (run with --log-every 1)")
    return (last[1] - first[1]) / (last[0] - first[0])


def over_mpi(report):
    """Whether a run's messages took MPI's transport (its report names Gloo's where they did not)."""
    return "over gloo" not in report["run"]["transport"]


@functools.cache  # read once: every run of a rate and host count asks for the same probes
def probe(out, rate, hosts, algo, mpi=False):
    """{size: (seconds, bus bandwidth in Gbit/s)} of a probe's all-reduces (`mpi`: over MPI's transport,
    where the all-reduce strategies took Gloo's)."""
    path = os.path.join(out, f"probe-{rate}-{hosts}-{algo}.txt")
    if mpi and os.path.exists(path.replace(".txt", "-mpi.txt")):
        path = path.replace(".txt", "-mpi.txt")
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


def link(out, rate, hosts, algo, gradient_bytes, mpi=False):
    """(bandwidth Gbit/s, latency us) that a probe gives: the bus bandwidth at the size nearest the
    gradient's, and
    the quickest small all-reduce's time over its messages (2(H-1) in a ring, 2 log2(H) in
    halving-doubling; the quickest, as one stalled packet costs a small one milliseconds)."""
    rows = probe(out, rate, hosts, algo, mpi)
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
        if m and known_label(m.group(3)):
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
        if run["rate"] == first_rate and run["label"] == CALIBRATION or run["label"].startswith(PIPELINE):
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

    pipeline_table(out, ptrain, runs, first_rate, compute_ms, cores, common)

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


def layer_widths(plan, classes):
    """The MLP's layers' output widths, and the bytes a sample's outputs of each hold for its backward
    (a hidden layer's Linear and ReLU, the last layer's Linear)."""
    if plan["model"]["name"] != "mlp":
        sys.exit("model_check.py: pipelines are predicted for the mlp model only")
    widths = list(plan["model"]["hidden"]) + [classes]
    held = [4 * (2 * w if i + 1 < len(widths) else w) for i, w in enumerate(widths)]
    return widths, held


def stages_of(report, pipeline=0):
    return sorted((s for s in report["pipeline"] if s["pipeline"] == pipeline), key=lambda s: s["stage"])


def activation_bytes(report):
    """A sample's activations across the widest of a pipeline run's boundaries."""
    widths, _ = layer_widths(report["plan"], report["run"]["classes"])
    return max(4 * widths[s["first_layer"] - 1] for s in stages_of(report)[1:])


def message_latency_us(out, run):
    """A message between two neighbours, at the latency a message had among as many ranks as the run's
    sharing the cores (a rank waits for the one it needs to be scheduled)."""
    plan = run["report"]["plan"]
    size = activation_bytes(run["report"]) * plan["run"]["batch"] / plan["run"]["microbatches"]
    return link(out, run["rate"], run["workers"], "ring", size, over_mpi(run["report"]))[1]


def pipeline_args(out, run, compute_ms, microbatch_ns, hop_gbit, cores):
    """simulate's options for a pipeline run: its stages' shares of the parameters as their shares of
    the compute, the activations' width at the cut, and the link at a message's size."""
    report = run["report"]
    plan, w = report["plan"], run["workers"]
    micro, batch = plan["run"]["microbatches"], plan["run"]["batch"]
    mine = stages_of(report)
    # The pipelines' all-reduce of a stage's gradient at what the ring carried at its size.
    largest = 4 * max(s["parameters"] for s in mine)
    bandwidth = link(out, run["rate"], max(2, w // plan["strategy"]["stages"]), "ring", largest, over_mpi(report))[0]
    return ["--workers", str(w), "--parameters", str(report["run"]["parameters"]), "--batch", str(batch),
            "--compute-per-sample", f"{compute_ms:.9g}", "--microbatch-cost", f"{microbatch_ns:.9g}",
            "--bandwidth", f"{bandwidth:.4f}", "--hop-bandwidth", f"{hop_gbit:.4f}",
            "--latency", f"{message_latency_us(out, run):.1f}", "--cores-per-rank", f"{cores / w:.4f}",
            "--exchange", "pipeline", "--stages", str(plan["strategy"]["stages"]), "--microbatches", str(micro),
            "--schedule", plan["strategy"]["schedule"], "--activation-bytes", str(activation_bytes(report)),
            "--stage-shares", ",".join(str(s["parameters"]) for s in mine), "--eager-limit", str(EAGER_LIMIT)]


def calibrate_pipelines(out, ptrain, runs, rate, workers, cores):
    """(compute ms per sample, ns per parameter per micro-batch, hop Gbit/s) from the 1- and
    8-micro-batch GPipe runs at `rate`. With one micro-batch the stages take turns: their compute
    (the report's) is the samples' and one micro-batch's cost on every stage, and the rest of the step
    is 2 (S - 1) messages, one after another, each at most a burst of the shaped link's token bucket
    (512 KiB), which passes it faster than the rate: their time gives the hop's rate. The cost per
    micro-batch is then what makes the 8-micro-batch run's step, the compute per sample following it."""
    def find(label):
        return next((r for r in runs if r["rate"] == rate and r["workers"] == workers and r["label"] == label), None)

    one, eight = find(PIPELINE_CALIBRATION[0]), find(PIPELINE_CALIBRATION[1])
    if one is None or eight is None:
        sys.exit(f"model_check.py: the pipelines of {workers} workers are calibrated on "
                 f"{' and '.join(PIPELINE_CALIBRATION)} at {rate}")
    report = one["report"]
    batch, parameters = report["plan"]["run"]["batch"], report["run"]["parameters"]
    stages = stages_of(report)
    compute = sum(s["compute_ms_per_step"] for s in stages)
    optimizer = max(s["optimizer_ms_per_step"] for s in stages)
    hops = 2 * (len(stages) - 1)
    per_hop = (one["step_s"] * 1000 - compute - optimizer) / hops - message_latency_us(out, one) * 1e-3
    hop_gbit = activation_bytes(report) * batch * 8 / (per_hop * 1e-3) / 1e9 if per_hop > 0 else 1e3

    def per_sample(ns):
        return (compute - ns * 1e-6 * parameters) / batch

    def step_of_eight(ns):
        args = pipeline_args(out, eight, per_sample(ns), ns, hop_gbit, cores)
        return float(simulate(ptrain, out, args)[0]["step_ms"])

    low, high = 0.0, compute / (parameters * 1e-6) * (1 - 1e-9)
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if step_of_eight(mid) < eight["step_s"] * 1000 else (low, mid)
    return per_sample(low), low, hop_gbit


def pipeline_prediction(out, ptrain, run, compute_ms, microbatch_ns, hop_gbit, cores):
    """(name, predicted, measured): samples/s, bubble, bytes sent a step and peak memory of a pipeline
    run's busiest worker (the bubble: the mean over the stages)."""
    report = run["report"]
    plan, w = report["plan"], run["workers"]
    stages, schedule = plan["strategy"]["stages"], plan["strategy"]["schedule"]
    micro, batch = plan["run"]["microbatches"], plan["run"]["batch"]
    groups = w // stages
    mine = stages_of(report)
    _, held = layer_widths(plan, report["run"]["classes"])
    activation = activation_bytes(report)
    row = simulate(ptrain, out, pipeline_args(out, run, compute_ms, microbatch_ns, hop_gbit, cores))[0]
    slots = OPTIMIZER_SLOTS[plan["optimizer"]["name"]]
    sent, memory = [], []
    for s in mine:
        k = s["stage"]
        boundaries = (k > 0) + (k + 1 < stages)
        sent.append(boundaries * batch * activation + 2 * (groups - 1) / groups * 4 * s["parameters"])
        in_flight = micro if schedule == "gpipe" else min(stages - k, micro)
        layers = range(s["first_layer"], s["end_layer"])
        memory.append((3 + slots) * 4 * s["parameters"] + in_flight * batch / micro * sum(held[i] for i in layers))
    everyone = report["pipeline"]
    predicted = {"samples_s": float(row["samples_per_s"]), "bubble": float(row["bubble_fraction"]),
                 "bytes": max(sent), "memory": max(memory)}
    measured = {"samples_s": groups * batch / run["step_s"],
                "bubble": statistics.mean(s["idle_fraction"] for s in everyone),
                "bytes": max(s["bytes_sent_per_step"] + s["allreduce_bytes_sent_per_step"] for s in everyone),
                "memory": max(s["peak_bytes"] for s in everyone)}
    name = (f"pipeline, {stages} stages, {'GPipe' if schedule == 'gpipe' else '1F1B'}, M = {micro}" if groups == 1
            else f"{groups} x {stages} data x pipeline, {'GPipe' if schedule == 'gpipe' else '1F1B'}, M = {micro}")
    return name, predicted, measured


def pipeline_table(out, ptrain, runs, first_rate, compute_ms, cores, common):
    """The pipelines beside the dense ring of as many workers, at each rate."""
    pipes = [r for r in runs if r["label"].startswith(PIPELINE)]
    if not pipes:
        return
    calibrated = {}
    for w in sorted({r["workers"] for r in pipes}):
        calibrated[w] = calibrate_pipelines(out, ptrain, runs, first_rate, w, cores)
        per_sample, microbatch_ns, hop_gbit = calibrated[w]
        print(f"\npipelines of {w} workers calibrated on {' and '.join(PIPELINE_CALIBRATION)} at {first_rate}: "
              f"{per_sample:.4f} ms of compute per sample, {microbatch_ns:.3f} ns per parameter of a stage per "
              f"micro-batch, messages between stages at {hop_gbit:.2f} Gbit/s")
    table = []
    for rate in sorted({r["rate"] for r in pipes}):
        for w in sorted(calibrated):
            for ring in (r for r in runs if r["rate"] == rate and r["label"] == "ring" and r["workers"] == w):
                report = ring["report"]
                p = report["run"]["parameters"]
                row = simulate(ptrain, out, common(ring, compute_ms[w]))[0]
                widths, held = layer_widths(report["plan"], report["run"]["classes"])
                batch = report["plan"]["run"]["batch"]
                slots = OPTIMIZER_SLOTS[report["plan"]["optimizer"]["name"]]
                predicted = {"samples_s": float(row["samples_per_s"]), "bubble": 0,
                             "bytes": 2 * (w - 1) / w * 4 * p, "memory": (3 + slots) * 4 * p + batch * sum(held)}
                measured = {"samples_s": w * batch / ring["step_s"], "bubble": None,
                            "bytes": max(c["bytes_sent_per_step"] for c in report["comm"]), "memory": None}
                table.append((rate, w, "data parallel, dense ring", predicted, measured, ring))
            for run in (r for r in pipes if r["rate"] == rate and r["workers"] == w):
                name, predicted, measured = pipeline_prediction(out, ptrain, run, *calibrated[w], cores)
                if rate == first_rate and run["label"] in PIPELINE_CALIBRATION:
                    name += " (calibrated on)"
                table.append((rate, w, name, predicted, measured, run))

    def cell(key, predicted, measured, scale, form):
        m = measured[key]
        if m is None:
            return f"{form.format(predicted[key] * scale)} | - | -"
        error = f"{100 * (predicted[key] / m - 1):+.1f}%" if m else "-"
        return f"{form.format(predicted[key] * scale)} | {form.format(m * scale)} | {error}"

    print("\npipelines against the dense ring of as many workers, on the same global batch; "
          "each figure predicted | measured | error")
    print("| rate | workers | configuration | samples/s | | | bubble % | | | MiB sent a step | | | peak MiB | | | "
          "runs: step ms, fastest to slowest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    keys = ("samples_s", "bubble", "bytes", "memory")
    with open(os.path.join(out, "pipelines.csv"), "w") as f:
        f.write("rate,workers,configuration," + ",".join(f"predicted_{k},measured_{k}" for k in keys) + "\n")
        for rate, w, name, predicted, measured, run in table:
            print(f"| {rate} | {w} | {name} | {cell('samples_s', predicted, measured, 1, '{:.0f}')} | "
                  f"{cell('bubble', predicted, measured, 100, '{:.0f}')} | "
                  f"{cell('bytes', predicted, measured, 2**-20, '{:.2f}')} | "
                  f"{cell('memory', predicted, measured, 2**-20, '{:.1f}')} | "
                  f"{run['repeats']}: {run['spread'][0] * 1000:.1f} to {run['spread'][1] * 1000:.1f} |")
            f.write(f'{rate},{w},"{name}",' + ",".join(
                f"{predicted[k]:.6g},{'' if measured[k] is None else f'{measured[k]:.6g}'}" for k in keys) + "\n")


if __name__ == "__main__":
    main()
