#!/usr/bin/env bash
# The figures of docs/science.md and the README, made anew: each experiment's
# runs write their reports (or CSV), and each figure is one `ptrain plot` or
# `ptrain report` command over them. Runs take a few minutes on 2 cores; the
# reports stay in OUT (default docs/img/runs, not committed) for a look.
#   tools/figures.sh [BUILD_DIR] [OUT]   (env: SAMPLES, EPOCHS)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/img/runs}
img=docs/img
samples=${SAMPLES:-20000}
epochs=${EPOCHS:-2}
ptrain="$build/ptrain"
mkdir -p "$out" "$img"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step() { echo "figures.sh: $*"; }
common=(--train-samples "$samples" -q)
long=("${common[@]}" --epochs "$epochs")

step "five strategies, 4 workers, worker 3 three times slower"
"$ptrain" train "${long[@]}" --workers 4 --straggler 3:3 --strategy hybrid --report "$out/straggler-hybrid.json"
for s in ps-sync ps-backup ssp async; do
  extra=()
  [ "$s" = ps-backup ] && extra=(--backup 1)
  "$ptrain" train "${long[@]}" --workers 4 --straggler 3:3 --strategy "$s" --servers 1 "${extra[@]}" \
    --report "$out/straggler-$s.json"
done
"$ptrain" plot "$out"/straggler-{hybrid,ps-sync,ps-backup,ssp,async}.json \
  --title "4 workers, worker 3 three times slower" -o "$img/strategies-straggler.png"

step "async staleness with 2, 4 and 8 workers"
for w in 2 4 8; do
  "$ptrain" train "${long[@]}" --workers "$w" --strategy async --servers 1 --report "$out/async-$w.json"
done
"$ptrain" plot "$out"/async-{2,4,8}.json --title "async, 1 server shard" -o "$img/async-staleness.png"

step "shared-memory sweep: threads x batch for three strategies"
rm -f "$out/shm-sweep.csv"
"$ptrain" sweep --strategies mutex,hogwild,leashed --threads 1,2 --batch 16,64 --lr 0.05 --repetitions 1 \
  --target-loss 0.6 --epochs 2 --train-samples "$samples" --csv "$out/shm-sweep.csv" >/dev/null
"$ptrain" plot "$out/shm-sweep.csv" --title "shared-memory SGD, time to training loss 0.6" -o "$img/shm-sweep.png"

step "the DGC ablation (bench/dgc_ablation.sh)"
EPOCHS=$epochs bench/dgc_ablation.sh "$build" >/dev/null
cp "$build/bench-dgc-ablation.csv" "$out/dgc-ablation.csv"
"$ptrain" plot "$out/dgc-ablation.csv" --title "DGC, its parts added one by one" -o "$img/dgc-ablation.png"

step "the step-time model's projection to 1,024 workers"
"$ptrain" simulate --parameters 25e6 --exchange ring,hd,allgather,ps --density 0.001 --bandwidth 1,10,100 \
  --csv "$out/projection.csv" >/dev/null
"$ptrain" plot "$out/projection.csv" --title "ResNet-50-sized model, 1 to 1,024 workers" -o "$img/projection.png"

step "timelines: hybrid + DGC on 4 threads, and mpirun -np 3"
"$ptrain" train "${common[@]}" --workers 4 --compress dgc --model cnn --bucket-size 64KiB --epochs 1 \
  --timeline "$out/timeline-hybrid-dgc.json" --metrics "$out/hybrid-dgc.jsonl" --report "$out/hybrid-dgc.json"
mpirun -q --oversubscribe -np 3 "$ptrain" train "${common[@]}" --epochs 1 \
  --timeline "$out/timeline-mpirun.json" --report "$out/mpirun.json"
"$ptrain" report "$out/hybrid-dgc.json" -o "$out/hybrid-dgc.html"
"$ptrain" report "$out/mpirun.json" -o "$out/mpirun.html"
for page in hybrid-dgc mpirun; do
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2800 \
    --screenshot="$img/report-$page.png" "file://$PWD/$out/$page.html" 2>/dev/null
done
step "done: $img"
