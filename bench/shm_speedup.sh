#!/usr/bin/env bash
# Shared-memory asynchronous SGD against one thread:
# every algorithm with THREADS threads and seq with one, each at its best
# step size from LRS, REPS runs each, timed to the training loss TARGET (on a
# fixed sample of LOSS_SAMPLE training images, every CHECK_EVERY updates). Prints a markdown table of the
# median time to the target and its ratio to seq's, with staleness and failed
# swaps, and keeps every run in BUILD_DIR/bench-shm-speedup.csv. The defaults
# (the 784-128-128-128-10 MLP on all of Fashion-MNIST) take about 5 minutes on 2 cores.
#   bench/shm_speedup.sh [BUILD_DIR]
#   (env: THREADS, BATCH, LRS (comma-separated), TARGET, REPS, STRATEGIES, LOSS_SAMPLE, CHECK_EVERY
#    (updates between loss checks), EPOCHS (the most each run takes), EXTRA (more ptrain sweep options))
set -euo pipefail
build=${1:-build}
threads=${THREADS:-2}
batch=${BATCH:-16}
lrs=${LRS:-0.02,0.05,0.1}
target=${TARGET:-0.36}
check_every=${CHECK_EVERY:-200}
reps=${REPS:-3}
strategies=${STRATEGIES:-seq,mutex,rwlock,hogwild,leashed}
loss_sample=${LOSS_SAMPLE:-10000}
epochs=${EPOCHS:-5}
csv="$build/bench-shm-speedup.csv"
rm -f "$csv"  # a fresh measurement: ptrain sweep would resume from an old CSV of the same grid

# shellcheck disable=SC2086
"$build/ptrain" sweep --strategies "$strategies" --threads "$threads" --batch "$batch" --lr "$lrs" \
  --repetitions "$reps" --target-loss "$target" --loss-sample "$loss_sample" --check-every "$check_every" \
  --epochs "$epochs" --placement compact \
  --csv "$csv" ${EXTRA:-} >/dev/null

python3 - "$csv" "$target" "$reps" "$lrs" <<'PY'
import csv, os, statistics, sys
path, target, reps, lrs = sys.argv[1:5]
rows = list(csv.DictReader(open(path)))
points = {}
for r in rows:
    points.setdefault((r["strategy"], int(r["threads"]), r["lr"]), []).append(r)
def median_time(runs):  # a crashed run never reached the target
    t = [float(r["seconds_to_target"]) if r["reached_target"] == "1" else float("inf") for r in runs]
    return statistics.median(t)
best = {}
for (strategy, threads, lr), runs in points.items():
    m = median_time(runs)
    if (strategy, threads) not in best or m < best[(strategy, threads)][0]:
        best[(strategy, threads)] = (m, lr, runs)
seq = next((v[0] for k, v in best.items() if k[0] == "seq"), None)
print(f"time to training loss {target} (median of {reps} runs, best step size of {lrs}); {os.cpu_count()} cores")
print()
print("| strategy | threads | best lr | median s to target | vs seq | runs (s) | staleness mean / p99 | failed swaps per update | contended locks |")
print("|---|---|---|---|---|---|---|---|---|")
for (strategy, threads), (m, lr, runs) in sorted(best.items(), key=lambda kv: ["seq", "mutex", "rwlock", "hogwild", "leashed"].index(kv[0][0])):
    times = " ".join(f"{float(r['seconds_to_target']):.2f}" if r["reached_target"] == "1" else "-" for r in runs)
    ratio = f"{m / seq:.2f}x" if seq and m != float("inf") else ""
    ran = [r for r in runs if r["crashed"] == "0"]  # a crashed run measured nothing
    if not ran:
        print(f"| {strategy} | {threads} | {lr} | every run crashed | | | | | |")
        continue
    stale = statistics.mean(float(r["staleness_mean"]) for r in ran)
    p99 = max(int(r["staleness_p99"]) for r in ran)
    swaps = statistics.mean(float(r["failed_swaps_per_update"]) for r in ran)
    locks = statistics.mean(float(r["contended_locks"]) for r in ran)
    shown = f"{m:.2f}" if m != float("inf") else "not reached"
    print(f"| {strategy} | {threads} | {lr} | {shown} | {ratio} | {times} | {stale:.2f} / {p99} | {swaps:.3f} | {locks:.0f} |")
print()
print(f"every run: {path}")
PY
