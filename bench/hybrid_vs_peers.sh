#!/usr/bin/env bash
# Samples/s of hybrid training of the MLP (784-128-10, Adam, batch 64 per
# worker) with 1, 2, 4, ... workers up to the machine's cores (nproc), side
# by side in one run with a plain
# single-process LibTorch loop and PyTorch DistributedDataParallel (gloo, CPU,
# one process per worker, one thread each). Each configuration runs REPEATS
# times, interleaved, and the median is reported.
#   bench/hybrid_vs_peers.sh [BUILD_DIR]   (env: STEPS, BATCH, REPEATS, WORKERS)
set -euo pipefail
build=${1:-build}
steps=${STEPS:-1000}
batch=${BATCH:-64}
repeats=${REPEATS:-3}
cores=$(nproc)
default_workers="1"
for ((w = 2; w <= cores; w *= 2)); do default_workers="$default_workers $w"; done
if ((cores & (cores - 1))); then default_workers="$default_workers $cores"; fi  # nproc itself, if not a power of 2
workers=${WORKERS:-$default_workers}
here=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
py=/usr/bin/python3  # Debian's python3-torch lives here, whatever python3 is first on PATH

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((rep = 1; rep <= repeats; rep++)); do
  "$build/libtorch_loop" --batch "$batch" --steps "$steps" >>"$results"
  for w in $workers; do
    "$build/hybrid_throughput" --workers "$w" --batch "$batch" --steps "$steps" >>"$results"
    "$py" "$here/ddp_peer.py" --workers "$w" --batch "$batch" --steps "$steps" >>"$results"
  done
done

"$py" - "$results" "$batch" "$steps" "$repeats" "$build/bench-hybrid.csv" <<'PY'
import json, platform, statistics, sys, os
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
batch, steps, repeats, csv_path = sys.argv[2:6]
med = {}
for r in rows:
    med.setdefault((r["peer"], r["workers"]), []).append(r["samples_per_s"])
med = {k: statistics.median(v) for k, v in med.items()}
def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
print(f"MLP 784-128-10, Adam, batch {batch} per worker, {steps} steps, median of {repeats}; "
      f"{platform.node()}: {cpu_model()}, {os.cpu_count()} cores")
print()
print("| workers | ptrain hybrid | PyTorch DDP (gloo) | LibTorch loop | hybrid / DDP | hybrid / hybrid x1 |")
print("|---|---|---|---|---|---|")
base = med.get(("ptrain-hybrid", 1))
loop = med.get(("libtorch-loop", 1))
for w in sorted({k[1] for k in med if k[0] == "ptrain-hybrid"}):
    h, d = med[("ptrain-hybrid", w)], med.get(("pytorch-ddp", w))
    print(f"| {w} | {h:,.0f} | {d:,.0f} | {loop if w == 1 else float('nan'):,.0f} | {h / d:.2f}x | {h / base:.2f}x |"
          .replace("| nan |", "| |"))
with open(csv_path, "w") as f:
    f.write("peer,workers,batch,steps,samples_per_s\n")
    for r in rows:
        f.write(f'{r["peer"]},{r["workers"]},{r["batch"]},{r["steps"]},{r["samples_per_s"]}\n')
print()
print(f"every run: {csv_path}")
PY
