#!/usr/bin/env bash
# Compressed pulls on shaped hosts (root): WORKERS worker hosts and one server
# host in network namespaces (tools/netcluster), every link shaped to RATE,
# one ptrain rank a host under mpirun. Each strategy of STRATEGIES trains the
# MLP on Fashion-MNIST for EPOCHS epochs with every pull codec of PULLS
# (none: dense fp32 pulls), the same seed and data order, one after another
# on the same hosts. Prints, for each run, its test accuracy (and the
# difference from the dense pulls of its strategy), the bytes a worker's step
# pushed and pulled, the pull codec's ratio, how many pulls were dense, and
# samples/s; writes CSV. The defaults take about 5 minutes on 2 cores.
#   bench/ps_pulls.sh [BUILD_DIR]
#   (env: WORKERS (2), RATE (1gbit), EPOCHS (2), STRATEGIES ("ps-sync async"),
#    PULLS ("none fp16 int8 topk"), TOPK ("--pull-topk-ratio 0.1 --pull-topk-refresh 50"),
#    HIDDEN (256), BATCH (32), SEED (42), TRAIN_SAMPLES (0: all), NAME (the cluster's, pulls))
set -euo pipefail
build=$(readlink -f "${1:-build}")
workers=${WORKERS:-2}
rate=${RATE:-1gbit}
epochs=${EPOCHS:-2}
strategies=${STRATEGIES:-ps-sync async}
pulls=${PULLS:-none fp16 int8 topk}
topk=${TOPK:---pull-topk-ratio 0.1 --pull-topk-refresh 50}
hidden=${HIDDEN:-256}
batch=${BATCH:-32}
seed=${SEED:-42}
train_samples=${TRAIN_SAMPLES:-0}
name=${NAME:-pulls}
here=$(dirname "$(readlink -f "$0")")
netcluster=$(readlink -f "$here/../tools/netcluster")
runs=$(mktemp -d)
trap '"$netcluster" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$runs"' EXIT
csv="$build/bench-ps-pulls.csv"
run_limit=${RUN_LIMIT:-900}
source "$here/netcluster_twice.sh"  # twice LOG LABEL COMMAND...

common=(--workers "$workers" --servers 1 --model mlp --hidden "$hidden" --batch "$batch" --optimizer adam
        --lr 0.001 --epochs "$epochs" --seed "$seed" --train-samples "$train_samples" --comm-timeout 600)
"$netcluster" up $((workers + 1)) --name "$name" --rate "$rate" >/dev/null
for strategy in $strategies; do
  for pull in $pulls; do
    options=(--strategy "$strategy" --pull "$pull")
    # shellcheck disable=SC2206
    [ "$pull" = topk ] && options+=($topk)
    twice "$runs/$strategy-$pull.log" "$strategy with $pull pulls" \
      "$netcluster" run $((workers + 1)) --name "$name" -- "$build/ptrain" train "${common[@]}" "${options[@]}" \
      --report "$runs/$strategy-$pull.json"
  done
done
"$netcluster" down --name "$name" >/dev/null

/usr/bin/python3 - "$runs" "$csv" "$workers" "$rate" "$strategies" "$pulls" <<'PY'
import csv, json, os, sys
runs, csv_path, workers, rate, strategies, pulls = sys.argv[1:7]
print(f"{workers} worker hosts and 1 server host, each link shaped to {rate} with tc tbf; "
      f"{os.cpu_count()} cores share every rank")
header = ["strategy", "pull", "test_accuracy", "vs_dense_points", "pushed_kib_per_step", "pulled_kib_per_step",
          "pull_ratio", "dense_pulls", "pulls", "samples_per_s", "train_seconds"]
rows = []
for strategy in strategies.split():
    dense = None
    for pull in pulls.split():
        r = json.load(open(f"{runs}/{strategy}-{pull}.json"))
        ps = r["parameter_server"]
        accuracy = r["epochs"][-1]["test_accuracy"]
        if pull == "none":
            dense = accuracy
        rows.append([strategy, pull, round(100 * accuracy, 2),
                     "" if dense is None else round(100 * (accuracy - dense), 2),
                     round(ps["bytes_pushed_per_step"] / 1024, 1), round(ps["bytes_pulled_per_step"] / 1024, 1),
                     round(ps["pull_ratio"], 2), ps["dense_pulls"], ps["pulls"],
                     round(r["summary"]["samples_per_s"]), round(r["summary"]["train_seconds"], 1)])
with open(csv_path, "w", newline="") as f:
    csv.writer(f).writerows([header] + rows)
print("| strategy | pull | test accuracy | vs dense | pushed KiB/step | pulled KiB/step | pull ratio | dense pulls | samples/s |")
print("|---|---|---|---|---|---|---|---|---|")
for row in rows:
    s, p, acc, vs, push, pull, ratio, dense_pulls, n, sps, _ = row
    vs = "" if vs == "" else f"{vs:+.2f}"
    print(f"| {s} | {p} | {acc:.2f}% | {vs} | {push} | {pull} | {ratio:.2f}x | {dense_pulls} of {n} | {sps} |")
print(f"CSV: {csv_path}")
PY
