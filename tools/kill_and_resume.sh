#!/usr/bin/env bash
# Fault injection: kill a training run with SIGKILL at a random moment, resume
# it from its checkpoints, and check that it ends with the bits of the run
# that was never interrupted. Trials cycle through synchronous configurations
# (hybrid with DGC, top-k and no codec, sequential), on threads and, where
# mpirun is there, as MPI ranks (a random rank is killed; the job dies with it).
#   tools/kill_and_resume.sh [BUILD_DIR]   (env: TRIALS=50, EVERY=20, SEED=1, OUT=csv path)
# Prints a table; exits non-zero when a resumed run ends with other bits.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
trials=${TRIALS:-50}
every=${EVERY:-20}
seed=${SEED:-1}
py=/usr/bin/python3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out=${OUT:-$scratch/trials.csv}
mpirun_cmd=()
if command -v mpirun >/dev/null; then mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe -np 3); fi

configs=("hybrid dgc momentum" "hybrid none adam" "sequential none sgd" "hybrid topk nesterov")
common=(--train-samples 30000 --epochs 3 --batch 32 --seed 5 --quiet)
plan_of() {  # strategy codec optimizer backend
  local workers=4; [ "$4" = mpi ] && workers=3
  echo "--workers $workers --strategy $1 --compress $2 --optimizer $3 ${common[*]}"
}
launcher_of() { [ "$1" = mpi ] && echo "${mpirun_cmd[*]}" || true; }

RANDOM=$seed
echo "trial,backend,config,killed_after_first_checkpoint_s,ended_before_kill,resumed_at_step,identical" >"$out"
declare -A reference wall
for ((t = 1; t <= trials; t++)); do
  cfg=${configs[$(((t - 1) % ${#configs[@]}))]}
  backend=local
  if ((${#mpirun_cmd[@]} > 0 && t % 2 == 0)); then backend=mpi; fi
  [ "${cfg%% *}" = sequential ] && backend=local  # sequential runs on threads only
  set -- $cfg
  plan=$(plan_of "$1" "$2" "$3" "$backend")
  launcher=$(launcher_of "$backend")
  key="$cfg/$backend"
  if [ -z "${reference[$key]:-}" ]; then
    start=$(date +%s.%N)
    $launcher "$build/ptrain" train $plan --report "$scratch/reference.json"
    wall[$key]=$($py -c "print($(date +%s.%N) - $start)")
    reference[$key]=$($py -c "import json; print(json.load(open('$scratch/reference.json'))['summary']['final_params_fnv1a64'])")
  fi
  dir="$scratch/ckpt-$t"
  started=$(date +%s.%N)
  $launcher "$build/ptrain" train $plan --checkpoint-dir "$dir" --checkpoint-every "$every" --quiet \
    >"$scratch/log-$t" 2>&1 &
  pid=$!
  # Training has begun once the first checkpoint is committed; the kill comes
  # at a random moment of what is left of the run.
  until ls "$dir"/*.ckpt >/dev/null 2>&1 || ! kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
  first=$($py -c "print($(date +%s.%N) - $started)")
  delay=$($py -c "import random; random.seed($seed * 1000 + $t); print(round(random.uniform(0, 0.8) * max(${wall[$key]} - $first, 0.1), 3))")
  sleep "$delay"
  if [ "$backend" = mpi ]; then
    ranks=($(pgrep -f -- "$build/ptrain train" | grep -v "^$pid\$" || true))
    victim=$pid  # the job may have ended already: then no rank is left to kill
    if ((${#ranks[@]} > 0)); then victim=${ranks[$((RANDOM % ${#ranks[@]}))]}; fi
  else
    victim=$pid
  fi
  ended=1
  if kill -0 "$pid" 2>/dev/null; then ended=0; fi
  kill -9 "$victim" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pkill -9 -f -- "--checkpoint-dir $dir" 2>/dev/null || true  # ranks left behind
  if $launcher "$build/ptrain" train --resume "$dir" --report "$scratch/resumed.json" --quiet \
    >"$scratch/resume-log-$t" 2>&1; then
    :
  else
    cat "$scratch/resume-log-$t" >&2
    echo "trial $t: resume failed" >&2
    exit 1
  fi
  $py - "$scratch/resumed.json" "${reference[$key]}" "$t" "$backend" "$cfg" "$delay" "$ended" >>"$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ref, t, backend, cfg, delay, ended = sys.argv[2:8]
same = r["summary"]["final_params_fnv1a64"] == ref
print(f'{t},{backend},{cfg},{delay},{ended},{r["checkpoints"]["resumed_at_step"]},{int(same)}')
PY
  rm -rf "$dir"
done

$py - "$out" "$every" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
every = int(sys.argv[2])
by = collections.defaultdict(list)
for r in rows:
    by[(r["backend"], r["config"])].append(r)
print(f"{len(rows)} trials, SIGKILL at a random moment after the first checkpoint, resumed from the newest intact "
      f"checkpoint (every {every} steps)")
print()
print("| backend | strategy codec optimizer | trials | resumed from a later checkpoint than the first | killed after the run ended | same bits as the uninterrupted run |")
print("|---|---|---|---|---|---|")
for (backend, cfg), rs in sorted(by.items()):
    later = sum(1 for r in rs if int(r["resumed_at_step"]) > every)
    ended = sum(int(r["ended_before_kill"]) for r in rs)
    same = sum(int(r["identical"]) for r in rs)
    print(f"| {backend} | {cfg} | {len(rs)} | {later} | {ended} | {same} |")
bad = [r for r in rows if r["identical"] != "1"]
print()
print(f"every trial: {sys.argv[1]}")
sys.exit(1 if bad else 0)
PY
