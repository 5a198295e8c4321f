#!/usr/bin/env bash
# Checks the step-time model (ptrain simulate) against measured runs
# (root). On hosts in network namespaces (tools/netcluster), every
# link shaped to each of RATES, one ptrain rank a host under mpirun, it trains
# a communication-bound MLP (784-1024x4-10, 4.0 M parameters, batch 32 a
# worker, momentum SGD) STEPS steps in each of many configurations: 2 and 4
# workers; dense ring (with and without overlap), halving-doubling, fp16,
# int8, DGC at 99.9%; parameter servers synchronous (ps-sync), asynchronous
# (async) and bounded-stale (ssp); and, on 4 workers, hierarchical all-reduce
# over 2 hosts x 2 threads; and the model split into pipeline stages, one a
# worker (GPipe and 1F1B, 1, 4 and 8 micro-batches), and on 4 workers 2
# pipelines of 2 stages, each pipeline taking the batch its share of the
# workers would (W x BATCH through W stages), so that every configuration of
# a worker count trains on the same global batch. Before each rate's runs an all-reduce
# over 2 and over 4 hosts (ring and halving-doubling, 4 KiB to 16 MiB) measures
# what a link carries in each pattern at the gradient's size, and the latency
# of a message (the 4 KiB all-reduce's time over its 2(H-1) messages).
# The reports, the probes and the codecs' CPU costs (ptrain bench compress)
# land in OUT_DIR; bench/model_check.py then calibrates the compute per
# sample on DGC at the first rate (one run for each worker count) and
# predicts every other run. With REPEATS=R every configuration runs R times,
# the repeats interleaved (every configuration once, then again), and a
# configuration's measured step is the median of its runs, so that one run's
# noise does not decide a row.
#   sudo bench/model_check.sh [BUILD_DIR]
#   (env: RATES ("1gbit 500mbit"), HIDDEN (1024,1024,1024,1024), STEPS (16), BATCH (32),
#    OUT_DIR (BUILD_DIR/model-check), ONLY (a regular expression: run only the labels it matches),
#    REPEATS (1), TRANSPORT (gloo: what carries the all-reduces, probes and training alike; mpi:
#    OpenMPI's TCP transport))
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
build=$(readlink -f "${1:-build}")
rates=${RATES:-1gbit 500mbit}
hidden=${HIDDEN:-1024,1024,1024,1024}
steps=${STEPS:-16}
batch=${BATCH:-32}
out=${OUT_DIR:-$build/model-check}
only=${ONLY:-.}
repeats=${REPEATS:-1}
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "model_check.sh: REPEATS '$repeats': expected a whole number from 1" >&2; exit 2; }
# Training across hosts takes Gloo's transport by default (--transport auto) for the all-reduce
# strategies and MPI for the parameter servers and the pipelines; the probes measure the transports
# the runs use.
transport=${TRANSPORT:-gloo}
case "$transport" in
  gloo) train_transport=auto ;;
  mpi) train_transport=mpi ;;
  *) echo "model_check.sh: TRANSPORT '$transport': expected gloo or mpi" >&2; exit 2 ;;
esac
netcluster=$(readlink -f "$here/../tools/netcluster")
name=mcheck
trap '"$netcluster" down --name "$name" >/dev/null 2>&1 || true' EXIT
run_limit=${RUN_LIMIT:-120}  # every run takes under a minute here; one that fails is run once more
source "$here/netcluster_twice.sh"  # twice LOG LABEL COMMAND...
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.txt "$out"/*.log

"$build/ptrain" bench compress --sizes 4M --codecs fp16,int8,dgc --csv "$out/codecs.csv" > /dev/null

# label | workers | ranks | options (the label names the run's files: no spaces; BW and B2: the batch a
# pipeline of W or 2 stages takes, BATCH x W or x 2)
configs=(
  "ring|W|W|--allreduce ring --no-overlap"
  "ring-overlap|W|W|--allreduce ring --overlap"
  "hd|W|W|--allreduce hd --no-overlap"
  "fp16|W|W|--allreduce ring --compress fp16 --no-overlap"
  "int8|W|W|--allreduce ring --compress int8 --no-overlap"
  "dgc|W|W|--compress dgc --dgc-density 0.001 --dgc-warmup 0 --no-overlap"
  "ps-sync|W|W+S|--strategy ps-sync"
  "async|W|W+S|--strategy async"
  "ssp|W|W+S|--strategy ssp --staleness 2"
  "hierarchical|4|2|--allreduce hierarchical --local-workers 2 --no-overlap"
  "pipe-gpipe-1|W|W|--strategy pipeline --stages W --schedule gpipe --microbatches 1 --batch BW"
  "pipe-gpipe-4|W|W|--strategy pipeline --stages W --schedule gpipe --microbatches 4 --batch BW"
  "pipe-gpipe-8|W|W|--strategy pipeline --stages W --schedule gpipe --microbatches 8 --batch BW"
  "pipe-1f1b-1|W|W|--strategy pipeline --stages W --schedule 1f1b --microbatches 1 --batch BW"
  "pipe-1f1b-4|W|W|--strategy pipeline --stages W --schedule 1f1b --microbatches 4 --batch BW"
  "pipe-1f1b-8|W|W|--strategy pipeline --stages W --schedule 1f1b --microbatches 8 --batch BW"
  "pipe-2x2|4|4|--strategy pipeline --stages 2 --schedule 1f1b --microbatches 4 --batch B2"
)
for rate in $rates; do
  "$netcluster" up 6 --name "$name" --rate "$rate" >/dev/null
  for hosts in 2 4; do
    for algo in ring hd; do
      twice "$out/probe-$rate-$hosts-$algo.txt" "the $hosts-host $algo probe at $rate" \
        "$netcluster" run "$hosts" --name "$name" -- "$build/ptrain" bench allreduce --algo "$algo" \
        --transport "$transport" --sizes 4KiB:16MiB --iters 20 --warmup 3
    done
    # The pipelines take MPI's transport (run.transport auto), whichever the all-reduces take.
    [ "$transport" = mpi ] || twice "$out/probe-$rate-$hosts-ring-mpi.txt" "the $hosts-host ring probe over MPI at $rate" \
      "$netcluster" run "$hosts" --name "$name" -- "$build/ptrain" bench allreduce --algo ring \
      --transport mpi --sizes 4KiB:16MiB --iters 20 --warmup 3
  done
  for repeat in $(seq "$repeats"); do
    for workers in 2 4; do
      servers=$((workers / 2))
      for config in "${configs[@]}"; do
        IFS='|' read -r label w ranks options <<<"$config"
        [[ "$w" == W || "$w" == "$workers" ]] || continue
        [[ "$ranks" == *S* ]] && options="$options --servers $servers"
        ranks=${ranks//W+S/$((workers + servers))}
        ranks=${ranks//W/$workers}
        options=${options//--stages W/--stages $workers}
        [[ "$options" == *--batch* ]] || options="$options --batch $batch"
        options=${options//BW/$((batch * workers))}
        options=${options//B2/$((batch * 2))}
        run="$rate-$workers-$label"
        [[ "$run" =~ $only ]] || continue
        (( repeat > 1 )) && run="$run.$repeat"  # the first repeat's files keep the plain name
        # shellcheck disable=SC2086
        twice "$out/$run.log" "$run" "$netcluster" run "$ranks" --name "$name" -- "$build/ptrain" train \
          --model mlp --hidden "$hidden" --optimizer momentum --lr 0.01 --epochs 1 \
          --max-steps "$steps" --log-every 1 --train-samples $((workers * batch * (steps + 1))) --comm-timeout 600 \
          --transport "$train_transport" $options --report "$out/$run.json"
      done
    done
  done
  "$netcluster" down --name "$name" >/dev/null
done
/usr/bin/python3 "$here/model_check.py" "$out" "$build/ptrain" "$rates"
