#!/usr/bin/env bash
# Fault injection for the shared-memory strategies: kill a `ptrain shm` run
# with SIGKILL at a random moment after its first checkpoint, resume it, and
# compare it with the run never interrupted: seq (one thread) must end with
# the same bits; mutex, rwlock, hogwild and leashed (2 threads, whose
# interleaving is timing) with the test accuracy and training loss of
# reference runs, within TOLERANCE of their range.
#   tools/shm_kill_and_resume.sh [BUILD_DIR]
#   (env: TRIALS=25, REFERENCES=3 per strategy, EVERY=25, TOLERANCE=0.01, SEED=1, OUT=csv path)
# Prints one CSV line per trial and a summary; exits non-zero when a resumed
# run is outside the tolerance or seq's bits differ.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
trials=${TRIALS:-25}
references=${REFERENCES:-3}
every=${EVERY:-25}
tolerance=${TOLERANCE:-0.01}
seed=${SEED:-1}
py=/usr/bin/python3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out=${OUT:-$scratch/trials.csv}

strategies=(seq mutex rwlock hogwild leashed)
# Softmax regression on Fashion-MNIST, one epoch: 3750 gradients, 1.6 to 2.3 s of training here. A
# small step, so that the run's end is not noisy: the MLP at lr 0.01 ends 0.06 apart in accuracy run to run.
common=(--model softmax --batch 16 --lr 0.002 --epochs 1 --check-every 250 --loss-sample 2000 --seed 5 --quiet)
threads_of() { [ "$1" = seq ] && echo 1 || echo 2; }
figures() {  # report -> "accuracy loss params-hash"
  $py -c "import json; r = json.load(open('$1')); print(r['epochs'][-1]['test_accuracy'], \
r['shared_memory']['final_train_loss'], r['summary']['final_params_fnv1a64'])"
}

RANDOM=$seed
declare -A lo_acc hi_acc lo_loss hi_loss bits wall
for s in "${strategies[@]}"; do
  for ((k = 1; k <= references; k++)); do
    start=$(date +%s.%N)
    "$build/ptrain" shm --strategy "$s" --threads "$(threads_of "$s")" "${common[@]}" --report "$scratch/ref.json"
    wall[$s]=$($py -c "print($(date +%s.%N) - $start)")
    read -r acc loss hash < <(figures "$scratch/ref.json")
    bits[$s]=$hash
    lo_acc[$s]=$($py -c "print(min($acc, ${lo_acc[$s]:-$acc}))"); hi_acc[$s]=$($py -c "print(max($acc, ${hi_acc[$s]:-$acc}))")
    lo_loss[$s]=$($py -c "print(min($loss, ${lo_loss[$s]:-$loss}))"); hi_loss[$s]=$($py -c "print(max($loss, ${hi_loss[$s]:-$loss}))")
  done
  echo "reference $s: accuracy ${lo_acc[$s]} to ${hi_acc[$s]}, training loss ${lo_loss[$s]} to ${hi_loss[$s]}"
done

echo "trial,strategy,killed_after_first_checkpoint_s,ended_before_kill,resumed_at_step,accuracy,loss,within" >"$out"
failures=0
for ((t = 1; t <= trials; t++)); do
  s=${strategies[$(((t - 1) % ${#strategies[@]}))]}
  dir="$scratch/ckpt-$t"
  started=$(date +%s.%N)
  "$build/ptrain" shm --strategy "$s" --threads "$(threads_of "$s")" "${common[@]}" --checkpoint-dir "$dir" \
    --checkpoint-every "$every" >"$scratch/log-$t" 2>&1 &
  pid=$!
  until ls "$dir"/*.ckpt >/dev/null 2>&1 || ! kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
  first=$($py -c "print($(date +%s.%N) - $started)")
  delay=$($py -c "import random; random.seed($seed * 1000 + $t); print(round(random.uniform(0, 0.8) * max(${wall[$s]} - $first, 0.1), 3))")
  sleep "$delay"
  ended=yes
  if kill -KILL "$pid" 2>/dev/null; then ended=no; fi
  wait "$pid" 2>/dev/null || true
  "$build/ptrain" shm --resume "$dir" --report "$scratch/resumed-$t.json" --quiet
  read -r acc loss hash < <(figures "$scratch/resumed-$t.json")
  at=$($py -c "import json; print(json.load(open('$scratch/resumed-$t.json'))['checkpoints']['resumed_at_step'])")
  if [ "$s" = seq ]; then
    within=$([ "$hash" = "${bits[$s]}" ] && echo identical || echo DIFFERENT)
  else
    within=$($py -c "print('yes' if ${lo_acc[$s]} - $tolerance <= $acc <= ${hi_acc[$s]} + $tolerance and \
${lo_loss[$s]} - $tolerance <= $loss <= ${hi_loss[$s]} + $tolerance else 'NO')")
  fi
  [ "$within" = yes ] || [ "$within" = identical ] || failures=$((failures + 1))
  echo "$t,$s,$delay,$ended,$at,$acc,$loss,$within" | tee -a "$out"
done
echo "$trials trials, $failures outside (csv: $out)"
[ "$failures" -eq 0 ]
