#!/usr/bin/env bash
# The parameter-server strategies with a straggler:
# W workers, worker W-1 FACTOR times slower, on Fashion-MNIST. Each strategy
# runs twice: for EPOCHS epochs (accuracy after the same number of epochs)
# and for SECONDS of training (accuracy after the same wall time); ps-sync and
# ps-backup also run without the straggler, for the samples/s they keep.
# Prints a table and writes CSV. The defaults (the CNN on 16,384 samples)
# take about 15 minutes on 2 cores.
#   bench/ps_strategies.sh [BUILD_DIR]
#   (env: WORKERS, SERVERS, FACTOR, EPOCHS, TIME_BUDGET (seconds), MODEL, BATCH, LR, SEED,
#    TRAIN_SAMPLES: the first N training samples, 0 for all)
set -euo pipefail
build=${1:-build}
workers=${WORKERS:-4}
servers=${SERVERS:-1}
factor=${FACTOR:-4}
epochs=${EPOCHS:-2}
seconds=${TIME_BUDGET:-10}
model=${MODEL:-cnn}
batch=${BATCH:-32}
lr=${LR:-0.001}
seed=${SEED:-42}
train_samples=${TRAIN_SAMPLES:-16384}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

common="--workers $workers --servers $servers --model $model --batch $batch --lr $lr --seed $seed"
common+=" --train-samples $train_samples"
straggler="--straggler $((workers - 1)):$factor"
declare -a names=(
  "ps-sync, no straggler"
  "ps-sync"
  "ps-backup b=1, no straggler"
  "ps-backup b=1"
  "ssp s=2"
  "ssp s=4"
  "async"
  "async, drop:4"
  "async, scale"
  "async, lr/W"
  "async, warm-up 200 single")
declare -a options=(
  "--strategy ps-sync"
  "--strategy ps-sync $straggler"
  "--strategy ps-backup --backup 1"
  "--strategy ps-backup --backup 1 $straggler"
  "--strategy ssp --staleness 2 $straggler"
  "--strategy ssp --staleness 4 $straggler"
  "--strategy async $straggler"
  "--strategy async --stale-policy drop:4 $straggler"
  "--strategy async --stale-policy scale $straggler"
  "--strategy async --async-lr-divide $straggler"
  "--strategy async --warmup-single 200 $straggler")
for i in "${!names[@]}"; do
  # shellcheck disable=SC2086
  "$build/ptrain" train $common ${options[$i]} --epochs "$epochs" --report "$runs/epochs-$i.json" >/dev/null
  # shellcheck disable=SC2086
  "$build/ptrain" train $common ${options[$i]} --epochs 1000 --time-limit "$seconds" \
    --report "$runs/time-$i.json" >/dev/null
done

python3 - "$runs" "$build/bench-ps-strategies.csv" "$model" "$workers" "$servers" "$factor" "$epochs" \
  "$seconds" "$batch" "$lr" "${names[@]}" <<'PY'
import json, os, sys
runs, csv_path, model, workers, servers, factor, epochs, seconds, batch, lr = sys.argv[1:11]
names = sys.argv[11:]
print(f"{model} on {json.load(open(os.path.join(runs, 'epochs-0.json')))['run']['train_samples']} training "
      f"samples, {workers} workers x batch {batch} + {servers} server shard(s), Adam lr {lr}; worker "
      f"{int(workers) - 1} is {factor}x slower unless marked; {os.cpu_count()} cores")
print()
print(f"| strategy | samples/s | vs same without straggler | test acc. after {epochs} epochs | "
      f"test acc. after {seconds} s | epochs done in {seconds} s | staleness mean / p99 / max | dropped |")
print("|---|---|---|---|---|---|---|---|")
rows = []
baseline = {}
for i, name in enumerate(names):
    e = json.load(open(os.path.join(runs, f"epochs-{i}.json")))
    t = json.load(open(os.path.join(runs, f"time-{i}.json")))
    ps = e["parameter_server"]
    sps = e["summary"]["samples_per_s"]
    kind = name.split(",")[0]
    if name.endswith("no straggler"):
        baseline[kind] = sps
    ratio = sps / baseline[kind] if kind in baseline and not name.endswith("no straggler") else None
    acc_e = e["epochs"][-1]["test_accuracy"] * 100
    acc_t = t["epochs"][-1]["test_accuracy"] * 100
    done = t["summary"]["samples"] / t["run"]["train_samples"]
    dropped = ps["dropped_late"] + ps["dropped_stale"]
    rows.append((name, sps, ratio, acc_e, acc_t, done, ps["staleness_mean"], ps["staleness_p99"],
                 ps["staleness_max"], dropped, t["summary"]["samples_per_s"]))
    r = f"{ratio * 100:.0f}%" if ratio is not None else ""
    print(f"| {name} | {sps:,.0f} | {r} | {acc_e:.2f}% | {acc_t:.2f}% | {done:.2f} | "
          f"{ps['staleness_mean']:.2f} / {ps['staleness_p99']} / {ps['staleness_max']} | {dropped} |")
with open(csv_path, "w") as f:
    f.write("strategy,samples_per_s,vs_no_straggler,test_accuracy_after_epochs,test_accuracy_after_time,"
            "epochs_in_time,staleness_mean,staleness_p99,staleness_max,dropped,samples_per_s_time_run\n")
    for row in rows:
        ratio = "" if row[2] is None else f"{row[2]:.4f}"
        f.write(f'"{row[0]}",{row[1]:.1f},{ratio},{row[3]:.4f},{row[4]:.4f},{row[5]:.3f},{row[6]:.4f},'
                f"{row[7]},{row[8]},{row[9]},{row[10]:.1f}\n")
print()
print(f"every run: {csv_path}")
PY
