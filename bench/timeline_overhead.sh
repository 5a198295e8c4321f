#!/usr/bin/env bash
# What --timeline costs: samples/s of the same runs with the timeline off and
# on, interleaved REPEATS times (median of each), for hybrid on the MLP, with
# DGC, on the CNN with its gradient in several buckets (a communication thread
# recording beside each worker), and a parameter server; with the events
# recorded per step and the file's size. The span's own cost, off and on, is
# bench/micro/timeline_spans (Google Benchmark).
#   bench/timeline_overhead.sh [BUILD_DIR]   (env: REPEATS, STEPS, CNN_STEPS, WORKERS)
set -euo pipefail
build=${1:-build}
repeats=${REPEATS:-7}
steps=${STEPS:-1500}       # the MLP runs: a few seconds each
cnn_steps=${CNN_STEPS:-300}
workers=${WORKERS:-4}
py=/usr/bin/python3
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

declare -a names=(
  "hybrid, MLP"
  "hybrid + DGC, MLP"
  "hybrid, CNN in 64 KiB buckets"
  "async, 1 server shard, MLP")
declare -a options=(
  "--workers $workers --max-steps $steps"
  "--workers $workers --compress dgc --max-steps $steps"
  "--workers 2 --model cnn --bucket-size 64KiB --max-steps $cnn_steps"
  "--workers 3 --strategy async --servers 1 --max-steps $steps")
common="--train-samples 60000 --epochs 4 -q"
run() {  # off|on, configuration, repetition
  local timeline=()
  [ "$1" = on ] && timeline=(--timeline "$runs/t-$2-$3.json")
  # shellcheck disable=SC2086
  "$build/ptrain" train $common ${options[$2]} --report "$runs/$1-$2-$3.json" "${timeline[@]}"
}
# Off first in odd repetitions, on first in even ones: the machine's drift
# over a repetition (other tenants, the page cache) favours neither.
for ((rep = 1; rep <= repeats; rep++)); do
  for i in "${!names[@]}"; do
    if ((rep % 2)); then run off "$i" "$rep"; run on "$i" "$rep"
    else run on "$i" "$rep"; run off "$i" "$rep"; fi
  done
done

"$py" - "$runs" "$repeats" "$steps" "${names[@]}" <<'PY'
import json, os, statistics, sys
runs, repeats, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = sys.argv[4:]
print(f"{steps} steps a run (the CNN's fewer), off and on interleaved, median of {repeats}; {os.cpu_count()} cores")
print()
print("| run | samples/s, timeline off | on | cost | events a step | file a step |")
print("|---|---|---|---|---|---|")
for i, name in enumerate(names):
    sps = {k: statistics.median(json.load(open(f"{runs}/{k}-{i}-{r}.json"))["summary"]["samples_per_s"]
                                for r in range(1, repeats + 1)) for k in ("off", "on")}
    trace = json.load(open(f"{runs}/t-{i}-1.json"))  # the first repetition's
    report = json.load(open(f"{runs}/on-{i}-1.json"))
    n = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
    size = os.path.getsize(f"{runs}/t-{i}-1.json")
    per_step = report["summary"]["steps"]
    cost = 100 * (1 - sps["on"] / sps["off"])
    print(f"| {name} | {sps['off']:,.0f} | {sps['on']:,.0f} | {cost:+.1f}% | {n / per_step:.1f} | "
          f"{size / per_step / 1024:.1f} KiB |")
PY
