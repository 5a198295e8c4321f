#!/usr/bin/env bash
# A model scripted in Python against the same architecture built into ptrain:
# examples/python_model/make_model.py writes the built-in MLP (784-128-10) as
# TorchScript, with torch.manual_seed(SEED) (the built-in MLP's initialiser
# draws the same numbers for the same seed), and both train the demo's run
# (hybrid, Adam, 4 workers, 3 epochs) with the same seed. Runs alternate,
# REPEATS of each; the table gives the median samples/s and the test accuracy.
#   bench/torchscript_vs_builtin.sh [BUILD_DIR]   (env: REPEATS, EPOCHS, WORKERS, SEED)
set -euo pipefail
build=${1:-build}
repeats=${REPEATS:-3}
epochs=${EPOCHS:-3}
workers=${WORKERS:-4}
seed=${SEED:-42}
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3  # Debian's python3-torch lives here, whatever python3 is first on PATH

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$py" "$here/../examples/python_model/make_model.py" "$scratch/mlp.pt" "$seed" >/dev/null
common=(--workers "$workers" --strategy hybrid --optimizer adam --epochs "$epochs" --seed "$seed" --quiet)
for ((rep = 1; rep <= repeats; rep++)); do
  "$build/ptrain" train --model mlp "${common[@]}" --report "$scratch/builtin-$rep.json"
  "$build/ptrain" train --model "$scratch/mlp.pt" "${common[@]}" --report "$scratch/script-$rep.json"
done

"$py" - "$scratch" "$repeats" <<'PY'
import json, os, statistics, sys
scratch, repeats = sys.argv[1], int(sys.argv[2])
def runs(kind):
    return [json.load(open(f"{scratch}/{kind}-{r}.json")) for r in range(1, repeats + 1)]
rows = {kind: runs(kind) for kind in ("builtin", "script")}
first = rows["builtin"][0]
plan = first["plan"]["run"]
print(f"MLP 784-128-10, hybrid, Adam, {plan['workers']} workers x batch {plan['batch']}, {plan['epochs']:g} epochs, "
      f"seed {plan['seed']}; median of {repeats}; {first['host'].get('cpu', '?')}, {os.cpu_count()} cores")
print()
print("| model | samples/s | test accuracy | final test loss |")
print("|---|---|---|---|")
med = {}
for kind, label in (("builtin", "built-in `--model mlp`"), ("script", "scripted in Python, `--model mlp.pt`")):
    rs = rows[kind]
    med[kind] = statistics.median(r["summary"]["samples_per_s"] for r in rs)
    acc = statistics.median(r["epochs"][-1]["test_accuracy"] for r in rs)
    loss = statistics.median(r["epochs"][-1]["test_loss"] for r in rs)
    print(f"| {label} | {med[kind]:,.0f} | {100 * acc:.2f}% | {loss:.4f} |")
print()
print(f"scripted / built-in samples/s: {med['script'] / med['builtin']:.3f}")
PY
