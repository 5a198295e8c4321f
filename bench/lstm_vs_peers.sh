#!/usr/bin/env bash
# Tokens/s of the LSTM language model on the King James Bible: ptrain's
# hybrid with 1 and 2 workers beside a plain single-thread LibTorch loop
# (bench/lstm_loop.cpp) and a plain PyTorch loop (bench/lstm_peer.py) of the
# same model, optimizer (momentum SGD 0.9, lr 1) and batches, in one run.
# Every figure is timed from the first step to the last, data loading, model
# building and evaluation left out (ptrain's summary.tokens_per_s is its
# training time's, with no warm-up excluded, so the peers exclude none
# either). Each runs REPEATS times, interleaved; medians are reported.
# Then DGC's encode cost on the LSTM's gradient: ptrain bench compress on one
# core (a standard-normal gradient), and a 2-worker run with
# --compress dgc --timeline, its "encode" spans against its steps.
#   bench/lstm_vs_peers.sh [BUILD_DIR]
#   env: STEPS 200, BATCH 20 (rows per worker), BPTT 35, EMBEDDING 128, HIDDEN 128, LAYERS 2,
#        VOCABULARY 5000, DROPOUT 0.2, REPEATS 3
set -euo pipefail
build=${1:-build}
steps=${STEPS:-200}
batch=${BATCH:-20}
bptt=${BPTT:-35}
embedding=${EMBEDDING:-128}
hidden=${HIDDEN:-128}
layers=${LAYERS:-2}
vocabulary=${VOCABULARY:-5000}
dropout=${DROPOUT:-0.2}
repeats=${REPEATS:-3}
here=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
py=/usr/bin/python3  # Debian's python3-torch lives here, whatever python3 is first on PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shared=(--batch "$batch" --bptt "$bptt" --layers "$layers" --vocabulary "$vocabulary" --dropout "$dropout")
sizes=("${shared[@]}" --embedding "$embedding" --hidden "$hidden")
peer=("${sizes[@]}" --steps "$steps" --warmup 0)
ptrain=("$build/ptrain" train --data-set bible --model lstm "${shared[@]}" --embedding-size "$embedding"
        --hidden-size "$hidden" --optimizer momentum --lr 1 --max-steps "$steps" --test-samples 20 -q)
# ptrain's report as the peers' JSON line.
from_report='import json, sys; r = json.load(open(sys.argv[1])); s = r["summary"]
print(json.dumps({"peer": "ptrain", "workers": int(sys.argv[2]), "tokens_per_s": s["tokens_per_s"],
                  "samples_per_s": s["samples_per_s"], "parameters": r["run"]["parameters"]}))'

# The stream the Python peer reads, as ptrain tokenizes it.
"$build/lstm_loop" "${sizes[@]}" --steps 1 --dump-tokens "$work/tokens.npy" >/dev/null
for ((rep = 1; rep <= repeats; rep++)); do
  "$build/lstm_loop" "${peer[@]}" >>"$work/runs"
  "$py" "$here/lstm_peer.py" "$work/tokens.npy" "${peer[@]}" >>"$work/runs"
  for w in 1 2; do
    "${ptrain[@]}" --workers "$w" --report "$work/p.json"
    "$py" -c "$from_report" "$work/p.json" "$w" >>"$work/runs"
  done
done

# DGC's encode: alone on a gradient of the model's size, and inside a run.
parameters=$("$py" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["parameters"])' "$work/runs")
"$build/ptrain" bench compress --sizes "$parameters" --codecs dgc --iters 5 --csv "$work/compress.csv" >/dev/null
"${ptrain[@]}" --workers 2 --compress dgc --dgc-density 0.001 --no-dgc-dense-biases \
  --timeline "$work/timeline.json" --report "$work/dgc.json"

"$py" - "$work" "$build/bench-lstm.csv" "$steps" "$batch" "$bptt" "$embedding" "$hidden" "$layers" \
  "$vocabulary" "$repeats" "$parameters" <<'PY'
import csv, json, os, platform, statistics, sys
work, csv_path, steps, batch, bptt, embedding, hidden, layers, vocabulary, repeats, parameters = sys.argv[1:12]
rows = [json.loads(l) for l in open(os.path.join(work, "runs")) if l.strip()]
runs = {}
for r in rows:
    runs.setdefault((r["peer"], r["workers"]), []).append(r)
med = {k: (statistics.median(r["tokens_per_s"] for r in v), statistics.median(r["samples_per_s"] for r in v))
       for k, v in runs.items()}
def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"
print(f"LSTM: embedding {embedding}, {layers} x {hidden}, vocabulary {vocabulary} ({int(parameters):,} parameters); "
      f"{batch} rows x {bptt} tokens per worker per step, momentum SGD, {steps} steps timed from the first, "
      f"median of {repeats}; {platform.node()}: {cpu_model()}, {os.cpu_count()} cores")
print()
print("| peer | workers | tokens/s | samples/s | vs the LibTorch loop |")
print("|---|---|---|---|---|")
names = {"libtorch": "plain LibTorch loop", "pytorch": "plain PyTorch loop", "ptrain": "ptrain hybrid"}
base = med[("libtorch", 1)][0]
for key in [("libtorch", 1), ("pytorch", 1), ("ptrain", 1), ("ptrain", 2)]:
    tokens, samples = med[key]
    print(f"| {names[key[0]]} | {key[1]} | {tokens:,.0f} | {samples:,.1f} | {tokens / base:.2f}x |")
with open(csv_path, "w") as f:
    f.write("peer,workers,repeat,batch,bptt,steps,tokens_per_s,samples_per_s\n")
    for (p, w), v in runs.items():
        for i, r in enumerate(v):
            f.write(f'{p},{w},{i + 1},{batch},{bptt},{steps},{r["tokens_per_s"]},{r["samples_per_s"]}\n')

c = next(csv.DictReader(open(os.path.join(work, "compress.csv"))))
print()
print(f"DGC encode, ptrain bench compress (one core, a standard-normal gradient of {int(c['elements']):,}): "
      f"{1000 * float(c['encode_seconds']):.2f} ms")
# The run's spans, its first step (allocations) left out: encode per step against the step.
trace = json.load(open(os.path.join(work, "timeline.json")))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
steps_by_thread = {}
for e in events:
    if e.get("ph") == "X" and e.get("name") == "step":
        steps_by_thread.setdefault(e["tid"], []).append(e)
first_end = {t: min(v, key=lambda e: e["ts"]) for t, v in steps_by_thread.items()}
first_end = {t: e["ts"] + e["dur"] for t, e in first_end.items()}
step = [e["dur"] / 1000 for v in steps_by_thread.values() for e in v if e["ts"] >= first_end[e["tid"]]]
encode = [e["dur"] / 1000 for e in events if e.get("ph") == "X" and e.get("name") == "encode"
          and e["tid"] in first_end and e["ts"] >= first_end[e["tid"]]]
summary = json.load(open(os.path.join(work, "dgc.json")))["summary"]
encode_per_step = sum(encode) / len(step)  # every bucket's encode in a step
print(f"DGC encode in a 2-worker hybrid run (density 0.001, biases compressed too, steps 2-{steps}, "
      f"{len(encode) // max(len(step), 1)} bucket(s)/step): {encode_per_step:.2f} ms of a {statistics.mean(step):.1f} ms "
      f"step ({100 * encode_per_step / statistics.mean(step):.1f}%); that run: {summary['tokens_per_s']:,.0f} tokens/s")
print(f"every run: {csv_path}")
PY
