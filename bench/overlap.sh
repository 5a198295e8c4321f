#!/usr/bin/env bash
# Mean step time of hybrid training of the CNN on Fashion-MNIST with and
# without overlapping the gradient all-reduce with backward, on both backends
# (threads in one process; one process per worker under mpirun), for each
# bucket size in BUCKETS: at the default 25MiB the CNN's 0.86 MB gradient is a
# single bucket, which can only start when backward ends; at 64KiB it is three.
# Configurations run REPEATS times, interleaved; the median is reported.
#   bench/overlap.sh [BUILD_DIR]   (env: WORKERS, STEPS, BATCH, REPEATS, BUCKETS, ALLREDUCE)
set -euo pipefail
build=${1:-build}
workers=${WORKERS:-2}
steps=${STEPS:-150}
batch=${BATCH:-32}
repeats=${REPEATS:-3}
buckets=${BUCKETS:-"25MiB 64KiB"}
allreduce=${ALLREDUCE:-native}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
args="--model cnn --train-samples 16384 --epochs 1 --max-steps $steps --batch $batch --allreduce $allreduce"
for ((rep = 1; rep <= repeats; rep++)); do
  for bucket in $buckets; do
    for overlap in overlap no-overlap; do
      "$build/ptrain" train --workers "$workers" $args --bucket-size "$bucket" "--$overlap" \
        --report "$runs/local_${bucket}_${overlap}_$rep.json" >/dev/null
      mpirun --oversubscribe -np "$workers" "$build/ptrain" train $args --bucket-size "$bucket" "--$overlap" \
        --report "$runs/mpi_${bucket}_${overlap}_$rep.json" >/dev/null
    done
  done
done

/usr/bin/python3 - "$runs" "$build/bench-overlap.csv" "$workers" "$steps" "$batch" "$repeats" "$allreduce" <<'PY'
import glob, json, os, statistics, sys
runs, csv_path, workers, steps, batch, repeats, allreduce = sys.argv[1:8]
rows = []
for path in sorted(glob.glob(os.path.join(runs, "*.json"))):
    backend, bucket, overlap, rep = os.path.basename(path)[:-5].split("_")
    r = json.load(open(path))
    rows.append((backend, bucket, overlap, int(rep), r["summary"]["mean_step_ms"], r["summary"]["samples_per_s"]))
med = {}
for b, k, o, _, ms, _ in rows:
    med.setdefault((b, k, o), []).append(ms)
med = {key: statistics.median(v) for key, v in med.items()}
print(f"CNN (215,370 parameters), {workers} workers x batch {batch}, {allreduce} all-reduce, {steps} steps, "
      f"median of {repeats}; {os.cpu_count()} cores")
print()
print("| backend | bucket size | step, overlap (ms) | step, no overlap (ms) | no overlap / overlap |")
print("|---|---|---|---|---|")
for backend in ("local", "mpi"):
    for bucket in dict.fromkeys(k for _, k, _, _, _, _ in rows):
        on, off = med[(backend, bucket, "overlap")], med[(backend, bucket, "no-overlap")]
        print(f"| {backend} | {bucket} | {on:.2f} | {off:.2f} | {off / on:.2f}x |")
with open(csv_path, "w") as f:
    f.write("backend,bucket,overlap,repeat,mean_step_ms,samples_per_s\n")
    for row in rows:
        f.write(",".join(str(x) for x in row) + "\n")
print()
print(f"every run: {csv_path}")
PY
