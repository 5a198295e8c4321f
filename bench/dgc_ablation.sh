#!/usr/bin/env bash
# The Deep Gradient Compression ablation (the paper's Table 4, on
# Fashion-MNIST): dense momentum SGD, top-k alone (error feedback) at the same
# density, then DGC with its parts added one by one, each run to the same
# number of epochs with the same seed. Prints test accuracy, the compression
# ratio (dense fp32 bytes over bytes on the wire, over the whole run and after
# warm-up) and samples/s, and writes CSV.
#   bench/dgc_ablation.sh [BUILD_DIR]   (env: WORKERS, EPOCHS, MODEL, HIDDEN, LR, DENSITY, CLIP, WARMUP)
set -euo pipefail
build=${1:-build}
workers=${WORKERS:-4}
epochs=${EPOCHS:-8}
model=${MODEL:-mlp}
hidden=${HIDDEN:-128}
lr=${LR:-0.05}
density=${DENSITY:-0.001}
clip=${CLIP:-5}
warmup=${WARMUP:-1}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

common="--workers $workers --epochs $epochs --model $model --hidden $hidden --optimizer momentum --lr $lr"
dgc="--compress dgc --dgc-density $density"
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
for i in "${!names[@]}"; do
  # shellcheck disable=SC2086
  "$build/ptrain" train $common ${options[$i]} --report "$runs/$i.json" >/dev/null
done

python3 - "$runs" "$build/bench-dgc-ablation.csv" "$model" "$hidden" "$workers" "$epochs" "$lr" "$density" \
  "${names[@]}" <<'PY'
import json, os, sys
runs, csv_path, model, hidden, workers, epochs, lr, density = sys.argv[1:9]
names = sys.argv[9:]
print(f"{model} (hidden {hidden}), {workers} workers x batch 32, momentum SGD lr {lr}, {epochs} epochs, "
      f"density {float(density) * 100:g}%; {os.cpu_count()} cores")
print()
print("| configuration | test accuracy | vs dense (points) | compression ratio, whole run | after warm-up | samples/s |")
print("|---|---|---|---|---|---|")
rows = []
dense_acc = None
for i, name in enumerate(names):
    r = json.load(open(os.path.join(runs, f"{i}.json")))
    acc = r["epochs"][-1]["test_accuracy"] * 100
    dense_acc = acc if dense_acc is None else dense_acc
    c = r["compression"]
    steady = c.get("steady_ratio", c["ratio"])
    rows.append((name, acc, acc - dense_acc, c["ratio"], steady, r["summary"]["samples_per_s"]))
    print(f"| {name} | {acc:.2f}% | {acc - dense_acc:+.2f} | {c['ratio']:.1f}x | {steady:.1f}x | "
          f"{r['summary']['samples_per_s']:,.0f} |")
with open(csv_path, "w") as f:
    f.write("configuration,test_accuracy,delta_vs_dense,ratio,steady_ratio,samples_per_s\n")
    for row in rows:
        f.write(f'"{row[0]}",{row[1]:.4f},{row[2]:.4f},{row[3]:.3f},{row[4]:.3f},{row[5]:.1f}\n')
print()
print(f"every run: {csv_path}")
PY
