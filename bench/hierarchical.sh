#!/usr/bin/env bash
# Hierarchical all-reduce against the flat ring over the same workers
# (root). For each host count H in HOST_COUNTS, H hosts in network
# namespaces (tools/netcluster) on RATE links, one rank a host with THREADS
# worker threads (--local-workers), and, REPEATS times, interleaved:
#   - ptrain bench allreduce of SIZE, --algo hierarchical and --algo ring;
#   - STEPS training steps of the communication-bound MLP of
#     bench/slow_network.sh (784-2048x5-10, 18.4 M parameters, batch 32 a
#     worker, momentum SGD, no overlap), --allreduce hierarchical and ring.
# Prints the medians beside what the bytes crossing each host's link
# predict: the flat ring over N = H x T workers sends 2(N-1)/N of the buffer
# over a link, hierarchical 2(H-1)/H. The ranks run unbound (tools/netcluster).
#   sudo bench/hierarchical.sh [BUILD_DIR]
#   (env: HOST_COUNTS ("2 4"), THREADS (2), RATE (1gbit), SIZE (64MiB), STEPS (8), REPEATS (3))
set -euo pipefail
build=$(readlink -f "${1:-build}")
host_counts=${HOST_COUNTS:-2 4}
threads=${THREADS:-2}
rate=${RATE:-1gbit}
size=${SIZE:-64MiB}
steps=${STEPS:-8}
repeats=${REPEATS:-3}
netcluster=$(readlink -f "$(dirname "$(readlink -f "$0")")/../tools/netcluster")
name=hier
runs=$(mktemp -d)
trap '"$netcluster" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$runs"' EXIT
run_limit=${RUN_LIMIT:-300}

source "$(dirname "$(readlink -f "$0")")/netcluster_twice.sh"  # twice LOG LABEL COMMAND...

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for hosts in $host_counts; do
  "$netcluster" up "$hosts" --name "$name" --rate "$rate" >/dev/null
  for repeat in $(seq "$repeats"); do
    for algo in hierarchical ring; do
      twice "$runs/bench-$hosts-$algo-$repeat.txt" "bench allreduce, $hosts hosts, $algo" "$netcluster" run "$hosts" --name "$name" -- \
        "$build/ptrain" bench allreduce --local-workers "$threads" --algo "$algo" --sizes "$size" --iters 3 --warmup 1
      twice "$runs/train-$hosts-$algo-$repeat.log" "training, $hosts hosts, $algo" "$netcluster" run "$hosts" --name "$name" -- \
        "$build/ptrain" train --local-workers "$threads" --allreduce "$algo" --no-overlap --model mlp \
        --hidden 2048,2048,2048,2048,2048 --batch 32 --optimizer momentum --lr 0.01 --epochs 1 --max-steps "$steps" \
        --train-samples $((hosts * threads * 32 * (steps + 1))) --comm-timeout 600 --quiet --transport mpi \
        --report "$runs/train-$hosts-$algo-$repeat.json"
    done
  done
  "$netcluster" down --name "$name" >/dev/null
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$runs" "$host_counts" "$threads" "$rate" "$size" "$repeats" "$load_before" "$load_after" "$build/ptrain" <<'PY'
import json, os, re, statistics, subprocess, sys
runs, host_counts, threads, rate, size, repeats, before, after, ptrain = sys.argv[1:10]
threads, repeats = int(threads), int(repeats)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"{os.cpu_count()} cores ({cpu}); load average {before} before, {after} after; "
      f"{rate} links; medians of {repeats} interleaved runs")
print(f"| hosts x threads | link bytes, ring / hierarchical | bench {size}: hierarchical ms | ring ms | ring / hierarchical "
      f"| training step: hierarchical ms | ring ms | ring / hierarchical | model: hierarchical step ms |")
print("|---|---|---|---|---|---|---|---|---|")
for hosts in map(int, host_counts.split()):
    n = hosts * threads
    predicted = (2 * (n - 1) / n) / (2 * (hosts - 1) / hosts)
    bench, step = {}, {}
    for algo in ("hierarchical", "ring"):
        times, steps = [], []
        for r in range(1, repeats + 1):
            text = open(os.path.join(runs, f"bench-{hosts}-{algo}-{r}.txt")).read()
            m = re.search(rf"{algo}\s+\S+\s+([0-9.]+)\s+\S+\s+\S+\s+ok", text)
            times.append(float(m.group(1)) / 1000)
            report = json.load(open(os.path.join(runs, f"train-{hosts}-{algo}-{r}.json")))
            steps.append(report["summary"]["mean_step_ms"])
        bench[algo], step[algo] = statistics.median(times), statistics.median(steps)
        if algo == "ring":  # the median ring run, its link rate and memory copy rate, for the model
            middle = sorted(range(repeats), key=lambda i: steps[i])[repeats // 2] + 1
            ring_report = os.path.join(runs, f"train-{hosts}-ring-{middle}.json")
            text = open(os.path.join(runs, f"bench-{hosts}-ring-{middle}.txt")).read()
            link_gbit = float(re.search(r"ring\s+\S+\s+\S+\s+\S+\s+([0-9.]+)\s+ok", text).group(1)) * 8
            copy_gbytes = float(re.search(r"([0-9.]+) GB/s for the slowest rank", text).group(1))
    # The model, calibrated on the ring's training run at the bench's link rate, predicts hierarchical's step.
    out = subprocess.run([ptrain, "simulate", "--calibrate", ring_report, "--calibrate-bandwidth", str(link_gbit),
                          "--exchange", "ring,hierarchical", "--local-workers", str(threads), "--workers", str(n),
                          "--bandwidth", str(link_gbit), "--memory-bandwidth", str(copy_gbytes),
                          "--cores-per-rank", str(os.cpu_count() / hosts)],
                         check=True, capture_output=True, text=True).stdout
    predicted_ms = float(re.search(rf"^\s+{n}\s+\S+ / \S+ / \S+\s+([0-9.]+) /", out, re.M).group(1))
    print(f"| {hosts} x {threads} | {2 * (n - 1) / n:.3f} / {2 * (hosts - 1) / hosts:.3f} of the buffer: "
          f"{predicted:.2f}x | {bench['hierarchical']:.0f} | {bench['ring']:.0f} | "
          f"{bench['ring'] / bench['hierarchical']:.2f}x | {step['hierarchical']:.0f} | {step['ring']:.0f} | "
          f"{step['ring'] / step['hierarchical']:.2f}x | {predicted_ms:.0f} (link {link_gbit:.2f} Gbit/s, "
          f"memory {copy_gbytes:.1f} GB/s) |")
PY
