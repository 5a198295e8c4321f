#!/usr/bin/env bash
# Compressed pulls on shaped hosts (root): WORKERS worker hosts and one server
# host in network namespaces (tools/netcluster), every link shaped to RATE,
# one ptrain rank a host under mpirun. Each strategy of STRATEGIES trains the
# MLP on Fashion-MNIST for EPOCHS epochs with every pull codec of PULLS
# (none: dense fp32 pulls; topk:R:N: top-k at ratio R with a dense refresh
# every N pulls), for each seed of SEEDS, one after another on the same
# hosts (seeds interleaved, so that a slow spell of the machine does not fall
# on one codec). Prints, for each strategy and pull codec, the median test
# accuracy (each seed's in brackets) and its difference from the dense pulls
# of the same strategy and seeds, the bytes a worker's step pushed and
# pulled, the pull codec's ratio, the share of pulls that were dense, and
# the median samples/s; writes CSV with every run. The defaults take about 7
# minutes on 2 cores, each further seed as long again.
#   bench/ps_pulls.sh [BUILD_DIR]
#   (env: WORKERS (2), RATE (1gbit), EPOCHS (2), STRATEGIES ("ps-sync async"),
#    PULLS ("none fp16 int8 topk:0.1:50"), HIDDEN (256), BATCH (32), SEEDS ("42"),
#    TRAIN_SAMPLES (0: all), NAME (the cluster's, pulls))
set -euo pipefail
build=$(readlink -f "${1:-build}")
workers=${WORKERS:-2}
rate=${RATE:-1gbit}
epochs=${EPOCHS:-2}
strategies=${STRATEGIES:-ps-sync async}
pulls=${PULLS:-none fp16 int8 topk:0.1:50}
hidden=${HIDDEN:-256}
batch=${BATCH:-32}
seeds=${SEEDS:-42}
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
        --lr 0.001 --epochs "$epochs" --train-samples "$train_samples" --comm-timeout 600)
for pull in $pulls; do
  [[ $pull =~ ^(none|fp16|int8|topk:[0-9.]+:[0-9]+)$ ]] ||
    { echo "ps_pulls.sh: PULLS: '$pull' is none, fp16, int8 or topk:RATIO:REFRESH" >&2; exit 2; }
done
"$netcluster" up $((workers + 1)) --name "$name" --rate "$rate" >/dev/null
for seed in $seeds; do
  for strategy in $strategies; do
    for pull in $pulls; do
      IFS=: read -r codec ratio refresh <<< "$pull"
      options=(--strategy "$strategy" --seed "$seed" --pull "$codec")
      [ "$codec" = topk ] && options+=(--pull-topk-ratio "$ratio" --pull-topk-refresh "$refresh")
      twice "$runs/$strategy-$pull-$seed.log" "$strategy with $pull pulls, seed $seed" \
        "$netcluster" run $((workers + 1)) --name "$name" -- "$build/ptrain" train "${common[@]}" "${options[@]}" \
        --report "$runs/$strategy-$pull-$seed.json"
    done
  done
done
"$netcluster" down --name "$name" >/dev/null

/usr/bin/python3 - "$runs" "$csv" "$workers" "$rate" "$strategies" "$pulls" "$seeds" <<'PY'
import csv, json, os, statistics, sys
runs, csv_path, workers, rate, strategies, pulls, seeds = sys.argv[1:8]
seeds = seeds.split()
print(f"{workers} worker hosts and 1 server host, each link shaped to {rate} with tc tbf; "
      f"{os.cpu_count()} cores share every rank; seeds {', '.join(seeds)}")
header = ["strategy", "pull", "seed", "test_accuracy", "pushed_bytes_per_step", "pulled_bytes_per_step",
          "pull_ratio", "dense_pulls", "pulls", "samples_per_s", "train_seconds"]
runs_csv, table = [], []
for strategy in strategies.split():
    dense = None
    for pull in pulls.split():
        rs = [json.load(open(f"{runs}/{strategy}-{pull}-{seed}.json")) for seed in seeds]
        acc = [100 * r["summary"]["final_test_accuracy"] for r in rs]
        for seed, r in zip(seeds, rs):
            ps = r["parameter_server"]
            runs_csv.append([strategy, pull, seed, r["summary"]["final_test_accuracy"], ps["bytes_pushed_per_step"],
                             ps["bytes_pulled_per_step"], ps["pull_ratio"], ps["dense_pulls"], ps["pulls"],
                             r["summary"]["samples_per_s"], r["summary"]["train_seconds"]])
        if pull == "none":
            dense = acc
        vs = "" if dense is None else statistics.median(a - d for a, d in zip(acc, dense))
        ps = [r["parameter_server"] for r in rs]
        table.append((strategy, pull.replace(":", " ", 1).replace(":", ", refresh "), statistics.median(acc), acc, vs,
                      statistics.median(p["bytes_pushed_per_step"] for p in ps) / 1024,
                      statistics.median(p["bytes_pulled_per_step"] for p in ps) / 1024,
                      statistics.median(p["pull_ratio"] for p in ps),
                      100 * sum(p["dense_pulls"] for p in ps) / sum(p["pulls"] for p in ps),
                      statistics.median(r["summary"]["samples_per_s"] for r in rs)))
with open(csv_path, "w", newline="") as f:
    csv.writer(f).writerows([header] + runs_csv)
print("| strategy | pull | test accuracy (each seed) | vs dense, points | pushed KiB/step | pulled KiB/step | pull ratio | dense pulls | samples/s |")
print("|---|---|---|---|---|---|---|---|---|")
for s, p, acc, each, vs, push, pulled, ratio, dense_share, sps in table:
    each = " / ".join(f"{a:.2f}" for a in each)
    vs = "" if p == "none" else f"{vs:+.2f}"
    print(f"| {s} | {p} | {acc:.2f}% ({each}) | {vs} | {push:.1f} | {pulled:.1f} | {ratio:.2f}x | "
          f"{dense_share:.1f}% | {sps:,.0f} |")
print(f"CSV: {csv_path}")
PY
