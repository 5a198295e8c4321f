#!/usr/bin/env bash
# The five ways to treat stale gradients side by side, under async (or
# STRATEGY=ssp, at its default staleness bound) with a straggler (worker W-1 FACTOR times slower), for each worker count in
# WORKER_COUNTS: none, a lower learning rate (the rate over W), dropping
# gradients staler than 2W updates, scaling the step by 1 / (1 + staleness),
# a warm-up on worker 0 alone, and growing a stale worker's next mini-batch
# (batch:K). Every configuration runs REPEATS times with seeds SEED,
# SEED + 1, ..., interleaved; the table has the medians of the time to
# TARGET test accuracy (training seconds to the first epoch end at or above
# it; "not reached" when fewer than half the runs reached it) and of the
# final test accuracy. Short epochs (TRAIN_SAMPLES) evaluated on TEST_SAMPLES
# place the time to the target finely. Prints a table and writes CSV. The
# defaults take about 7 minutes on 2 cores.
#   bench/stale_fixes.sh [BUILD_DIR]
#   (env: STRATEGY, WORKER_COUNTS, FACTOR, EPOCHS, TARGET, K, REPEATS, SEED, MODEL, BATCH, LR, SERVERS,
#    TRAIN_SAMPLES, TEST_SAMPLES: the first N samples of each, 0 for all)
set -euo pipefail
build=${1:-build}
worker_counts=${WORKER_COUNTS:-4 8}
factor=${FACTOR:-4}
epochs=${EPOCHS:-12}
target=${TARGET:-0.83}
k=${K:-4}
repeats=${REPEATS:-3}
seed=${SEED:-1}
model=${MODEL:-cnn}
batch=${BATCH:-32}
lr=${LR:-0.001}
servers=${SERVERS:-1}
train_samples=${TRAIN_SAMPLES:-4096}
test_samples=${TEST_SAMPLES:-1000}
strategy=${STRATEGY:-async}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

policies=("none" "lower-lr" "drop" "scale" "warmup" "batch")
options_of() {  # policy workers
  case $1 in
    none) echo "" ;;
    lower-lr) if [ "$strategy" = async ]; then echo "--async-lr-divide"; fi ;;  # ssp: --lr divided below
    drop) echo "--stale-policy drop:$((2 * $2))" ;;
    scale) echo "--stale-policy scale" ;;
    warmup) echo "--warmup-single 200" ;;
    batch) echo "--stale-policy batch:$k" ;;
  esac
}

for r in $(seq 0 $((repeats - 1))); do
  for w in $worker_counts; do
    for p in "${policies[@]}"; do
      run_lr=$lr
      if [ "$p" = lower-lr ] && [ "$strategy" != async ]; then run_lr=$(python3 -c "print($lr / $w)"); fi
      # shellcheck disable=SC2046
      "$build/ptrain" train --strategy "$strategy" --workers "$w" --servers "$servers" --straggler "$((w - 1)):$factor" \
        --model "$model" --batch "$batch" --lr "$run_lr" --seed $((seed + r)) --epochs "$epochs" \
        --train-samples "$train_samples" --test-samples "$test_samples" $(options_of "$p" "$w") \
        --report "$runs/$w-$p-$r.json" >/dev/null
    done
  done
done

python3 - "$runs" "$build/bench-stale-fixes-$strategy.csv" "$target" "$repeats" "$factor" "$k" "$worker_counts" \
  "${policies[@]}" <<'PY'
import json, os, statistics, sys
runs, csv_path, target, repeats, factor, k, worker_counts = sys.argv[1:8]
policies = sys.argv[8:]
target, repeats = float(target), int(repeats)
described = {"none": "none", "lower-lr": "lower lr (lr / W)", "drop": "drop staler than 2W",
             "scale": "scale by 1 / (1 + s)", "warmup": "warm-up: 200 on worker 0", "batch": f"batch:{k}"}
first = json.load(open(os.path.join(runs, f"{worker_counts.split()[0]}-none-0.json")))
run, plan = first["run"], first["plan"]
print(f"{plan['strategy']['name']}, {run['servers']} server shard(s), {run['model']} on {run['train_samples']} training samples, batch "
      f"{plan['run']['batch']}, {plan['optimizer']['name']} lr {plan['optimizer']['lr']}, {len(first['epochs'])} "
      f"epochs; worker W-1 {factor}x slower; medians of {repeats} runs; {os.cpu_count()} cores")
print()
print(f"| workers | stale-gradient fix | s to {target:.0%} test acc. (each run) | final test acc. | "
      f"samples/s | staleness mean / max | steps by base batches |")
print("|---|---|---|---|---|---|---|")
rows = []
for w in worker_counts.split():
    for p in policies:
        reports = [json.load(open(os.path.join(runs, f"{w}-{p}-{r}.json"))) for r in range(repeats)]
        times = []
        for rep in reports:
            t, reached = 0.0, None
            for e in rep["epochs"]:
                t += e["seconds"]
                if reached is None and e["test_accuracy"] >= target:
                    reached = t
            times.append(reached)
        got = sorted(t for t in times if t is not None)
        median_time = statistics.median(got) if len(got) * 2 > repeats else None
        final = statistics.median(rep["summary"]["final_test_accuracy"] for rep in reports)
        sps = statistics.median(rep["summary"]["samples_per_s"] for rep in reports)
        ps = [rep["parameter_server"] for rep in reports]
        mean_s = statistics.median(x["staleness_mean"] for x in ps)
        max_s = max(x["staleness_max"] for x in ps)
        sizes = {}
        for x in ps:
            for m, n in enumerate(x["step_batches_histogram"]):
                if n:
                    sizes[m] = sizes.get(m, 0) + n
        total = sum(sizes.values())
        by_size = ", ".join(f"{m}: {n / total:.1%}" for m, n in sorted(sizes.items()))
        each = " / ".join("-" if t is None else f"{t:.1f}" for t in times)
        shown = "not reached" if median_time is None else f"{median_time:.1f}"
        print(f"| {w} | {described[p]} | {shown} ({each}) | {final:.2%} | {sps:,.0f} | {mean_s:.2f} / {max_s} | "
              f"{by_size} |")
        rows.append((w, p, median_time, times, final, sps, mean_s, max_s, by_size))
with open(csv_path, "w") as f:
    f.write("workers,fix,median_seconds_to_target,seconds_to_target_each,final_test_accuracy,samples_per_s,"
            "staleness_mean,staleness_max,steps_by_base_batches\n")
    for w, p, median_time, times, final, sps, mean_s, max_s, by_size in rows:
        each = " ".join("" if t is None else f"{t:.3f}" for t in times)
        f.write(f'{w},{p},{"" if median_time is None else f"{median_time:.3f}"},"{each}",{final:.4f},{sps:.1f},'
                f'{mean_s:.4f},{max_s},"{by_size}"\n')
print()
print(f"every run: {csv_path}")
PY
