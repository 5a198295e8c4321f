#!/usr/bin/env bash
# What checkpoints cost: the demo's run (MLP, hybrid, Adam, 4 workers, 3
# epochs; or the run ARGS gives) without checkpoints and with one every EVERY
# steps (100) into a directory on the same disk as the build, runs
# alternating, REPEATS of each (5). The table gives the median samples/s
# (training time, checkpoints written inside an epoch included), the
# checkpoints written and their size; the cost is the median over the
# back-to-back pairs of with / without.
#   bench/checkpoint_overhead.sh [BUILD_DIR]   (env: REPEATS, EVERY, WORKERS, EPOCHS, ARGS)
#   ARGS="--strategy leashed --workers 2 --optimizer sgd --lr 0.05 --epochs 1" bench/checkpoint_overhead.sh
set -euo pipefail
build=${1:-build}
repeats=${REPEATS:-5}
every=${EVERY:-100}
workers=${WORKERS:-4}
epochs=${EPOCHS:-3}
py=/usr/bin/python3

scratch=$(mktemp -d "$(cd "$build" && pwd)/checkpoint-bench.XXXXXX")  # on the build's disk, not a tmpfs
trap 'rm -rf "$scratch"' EXIT
read -r -a run_args <<<"${ARGS:---workers $workers --strategy hybrid --optimizer adam --epochs $epochs}"
common=("${run_args[@]}" --quiet)
for ((rep = 1; rep <= repeats; rep++)); do
  "$build/ptrain" train "${common[@]}" --report "$scratch/off-$rep.json"
  rm -rf "$scratch/ckpt"
  "$build/ptrain" train "${common[@]}" --checkpoint-dir "$scratch/ckpt" --checkpoint-every "$every" \
    --report "$scratch/on-$rep.json"
done
size=$(du -sb "$scratch/ckpt" | cut -f1)
kept=$(ls "$scratch/ckpt"/*.ckpt | wc -l)

"$py" - "$scratch" "$repeats" "$every" "$size" "$kept" <<'PY'
import json, os, statistics, sys
scratch, repeats, every, size, kept = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
runs = {k: [json.load(open(f"{scratch}/{k}-{r}.json")) for r in range(1, repeats + 1)] for k in ("off", "on")}
first = runs["off"][0]
plan = first["plan"]["run"]
print(f"{first['plan']['model']['name']}, {first['plan']['strategy']['name']}, {first['plan']['optimizer']['name']}, "
      f"{plan['workers']} workers x batch {plan['batch']}, {plan['epochs']:g} epochs; "
      f"median of {repeats}, alternating; {first['host'].get('cpu', '?')}, {os.cpu_count()} cores")
print()
print("| checkpoints | samples/s | runs (samples/s) | written | test accuracy |")
print("|---|---|---|---|---|")
med = {}
for kind, label in (("off", "none"), ("on", f"every {every} steps")):
    rs = [r["summary"]["samples_per_s"] for r in runs[kind]]
    med[kind] = statistics.median(rs)
    print(f"| {label} | {med[kind]:,.0f} | {' '.join(f'{x:,.0f}' for x in rs)} | "
          f"{runs[kind][0]['checkpoints']['written']} | {100 * runs[kind][0]['summary']['final_test_accuracy']:.2f}% |")
# The machine's speed drifts between runs; each pair ran back to back, so the
# median of the pairs' ratios is the steadier figure.
pairs = [on["summary"]["samples_per_s"] / off["summary"]["samples_per_s"] for on, off in zip(runs["on"], runs["off"])]
print()
print(f"cost: {100 * (1 - statistics.median(pairs)):.1f}% of samples/s (median of the {repeats} back-to-back pairs; "
      f"{100 * (1 - med['on'] / med['off']):.1f}% between the medians); the newest {kept} checkpoints kept, "
      f"{size / kept / 1e6:.2f} MB each")
PY
