#!/usr/bin/env bash
# The Deep Gradient Compression ablation (the paper's Table 4, on
# Fashion-MNIST): dense momentum SGD, top-k alone (error feedback) at the same
# density, then DGC with its parts added one by one, each run to the same
# number of epochs with the same seed. Prints test accuracy (perplexity for
# the LSTM), the compression ratio (dense fp32 bytes over bytes on the wire,
# over the whole run and after warm-up), samples/s and whether the run
# converged, and writes CSV.
#   bench/dgc_ablation.sh [BUILD_DIR]   (env: WORKERS, EPOCHS, MODEL, HIDDEN, LR, DENSITY, CLIP, WARMUP,
#                                        and for MODEL=lstm: EMBEDDING, VOCABULARY, BATCH, HELD_OUT)
set -euo pipefail
build=${1:-build}
workers=${WORKERS:-4}
epochs=${EPOCHS:-8}
model=${MODEL:-mlp}
hidden=${HIDDEN:-128}
lr=${LR:-0.05}
batch=${BATCH:-32}
density=${DENSITY:-0.001}
clip=${CLIP:-5}
warmup=${WARMUP:-1}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

size="--hidden $hidden"
if [ "$model" = lstm ]; then size="--hidden-size $hidden"; fi
common="--workers $workers --epochs $epochs --batch $batch --model $model $size --optimizer momentum --lr $lr"
dgc="--compress dgc --dgc-density $density"
if [ "$model" = lstm ]; then
  # The decoder's bias alone is as large as the vocabulary: sent dense, it
  # would cost more than the 0.1% of everything else.
  common="$common --data-set bible --embedding-size ${EMBEDDING:-$hidden} --vocabulary ${VOCABULARY:-10000}"
  common="$common --held-out ${HELD_OUT:-validation}"
  dgc="$dgc --no-dgc-dense-biases"
fi
declare -a names=(
  "dense"
  "top-k alone (error feedback)"
  "DGC: sparsify + local accumulation"
  "+ momentum correction"
  "+ local clipping"
  "+ momentum factor masking"
  "+ warm-up (all of DGC)")
declare -a options=(
  ""
  "--compress topk --topk-ratio $density"
  "$dgc --dgc-momentum-correction off --no-dgc-masking --dgc-clip 0 --dgc-warmup 0"
  "$dgc --dgc-momentum-correction on --no-dgc-masking --dgc-clip 0 --dgc-warmup 0"
  "$dgc --dgc-momentum-correction on --no-dgc-masking --dgc-clip $clip --dgc-warmup 0"
  "$dgc --dgc-momentum-correction on --dgc-masking --dgc-clip $clip --dgc-warmup 0"
  "$dgc --dgc-momentum-correction on --dgc-masking --dgc-clip $clip --dgc-warmup $warmup")
keep=${KEEP_REPORTS:-}  # a directory to keep each run's report in
for i in "${!names[@]}"; do
  # A run that diverges ends with status 3 and its report written: a row like the others.
  status=0
  # shellcheck disable=SC2086
  "$build/ptrain" train $common ${options[$i]} --report "$runs/$i.json" >/dev/null 2>"$runs/$i.err" || status=$?
  if [ "$status" != 0 ] && [ "$status" != 3 ]; then cat "$runs/$i.err" >&2; exit "$status"; fi
  if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$runs/$i.json" "$keep/$i.json"; fi
done

python3 - "$runs" "$build/bench-dgc-ablation.csv" "$model" "$hidden" "$workers" "$epochs" "$lr" "$density" "$batch" \
  "${names[@]}" <<'PY'
import json, math, os, sys
runs, csv_path, model, hidden, workers, epochs, lr, density, batch = sys.argv[1:10]
names = sys.argv[10:]
lm = model == "lstm"
print(f"{model} (hidden {hidden}), {workers} workers x batch {batch}, momentum SGD lr {lr}, {epochs} epochs, "
      f"density {float(density) * 100:g}%; {os.cpu_count()} cores")
print()
figure = "test perplexity | vs dense (%)" if lm else "test accuracy | vs dense (points)"
print(f"| configuration | {figure} | compression ratio, whole run | after warm-up | samples/s | converged |")
print("|---|---|---|---|---|---|---|")
rows = []
dense = None
for i, name in enumerate(names):
    r = json.load(open(os.path.join(runs, f"{i}.json")))
    converged = r["outcome"]["status"] == "completed"
    value = r["epochs"][-1]["test_perplexity"] if lm and r["epochs"] else (
        r["epochs"][-1]["test_accuracy"] * 100 if r["epochs"] else float("nan"))
    if not converged or not math.isfinite(value):
        value = float("nan")
    dense = value if dense is None else dense
    delta = 100 * (value / dense - 1) if lm else value - dense
    c = r["compression"]
    steady = c.get("steady_ratio", c["ratio"])
    rows.append((name, value, delta, c["ratio"], steady, r["summary"]["samples_per_s"], converged))
    shown = "-" if math.isnan(value) else (f"{value:.2f}" if lm else f"{value:.2f}%")
    shown_delta = "-" if math.isnan(delta) else f"{delta:+.2f}"
    print(f"| {name} | {shown} | {shown_delta} | {c['ratio']:.1f}x | {steady:.1f}x | "
          f"{r['summary']['samples_per_s']:,.0f} | {'yes' if converged else 'no: ' + str(r['outcome']['diverged_why'])} |")
with open(csv_path, "w") as f:
    column = "test_perplexity,delta_vs_dense_percent" if lm else "test_accuracy,delta_vs_dense"
    f.write(f"configuration,{column},ratio,steady_ratio,samples_per_s,converged\n")
    for row in rows:
        f.write(f'"{row[0]}",{row[1]:.4f},{row[2]:.4f},{row[3]:.3f},{row[4]:.3f},{row[5]:.1f},{int(row[6])}\n')
print()
print(f"every run: {csv_path}")
PY
