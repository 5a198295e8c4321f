#!/usr/bin/env bash
# Training on a slow network (issue 7's measurement; root): HOSTS worker hosts
# and 2 server hosts in network namespaces (tools/netcluster), every link
# shaped to each of RATES, one ptrain rank per host under mpirun. A
# communication-bound MLP (784-2048x5-10, 18.4 M parameters, so that backward
# has layers left to run while the last ones' gradients are on the wire)
# trains STEPS steps with: dense ring all-reduce, fp16, DGC at 99.9% sparsity,
# each with and without overlap of communication and backward, and the
# parameter server (ps-sync, 2 shards). Before the runs, an MPI probe checks
# what the links carry: a ring all-reduce over the worker hosts, whose bus
# bandwidth is one link's rate. Then the step-time model (ptrain simulate),
# calibrated on the first run (dense ring at the first rate) with the probe's
# bandwidth and the codecs' CPU cost from ptrain bench compress, predicts every
# other run. Prints the tables and writes two CSVs.
#   sudo bench/slow_network.sh [BUILD_DIR]
#   (env: HOSTS (4), RATES ("1gbit 10gbit"), HIDDEN (2048,2048,2048,2048,2048), STEPS (12), BATCH (32))
set -euo pipefail
build=$(readlink -f "${1:-build}")
hosts=${HOSTS:-4}
rates=${RATES:-1gbit 10gbit}
hidden=${HIDDEN:-2048,2048,2048,2048,2048}
steps=${STEPS:-12}
batch=${BATCH:-32}
netcluster=$(readlink -f "$(dirname "$(readlink -f "$0")")/../tools/netcluster")
name=slow
runs=$(mktemp -d)
trap '"$netcluster" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$runs"' EXIT
csv="$build/bench-slow-network.csv"
model_csv="$build/bench-slow-network-model.csv"
codecs_csv="$build/bench-slow-network-codecs.csv"
# Every run gets this long (they take under 2 minutes here). Now and then (2 launches in about
# 40 here) mpirun waits for ever for a daemon that never reports from its host; such a run is
# killed at the limit and run once more.
run_limit=${RUN_LIMIT:-300}

# The codecs' CPU time per value near this model's size, on one core, before any host is up.
"$build/ptrain" bench compress --sizes 16M --codecs fp16,dgc --csv "$codecs_csv" > /dev/null

common=(--model mlp --hidden "$hidden" --batch "$batch" --optimizer momentum --lr 0.01 --epochs 1
        --max-steps "$steps" --train-samples $((hosts * batch * (steps + 1))) --comm-timeout 600)
declare -a names=("dense ring" "dense ring, overlap" "fp16" "fp16, overlap" "DGC 99.9%" "DGC 99.9%, overlap"
                  "parameter server, 2 shards")
declare -a options=("--allreduce ring --no-overlap" "--allreduce ring --overlap"
                    "--allreduce ring --compress fp16 --no-overlap" "--allreduce ring --compress fp16 --overlap"
                    "--compress dgc --dgc-density 0.001 --dgc-warmup 0 --no-overlap"
                    "--compress dgc --dgc-density 0.001 --dgc-warmup 0 --overlap"
                    "--strategy ps-sync --servers 2")
source "$(dirname "$(readlink -f "$0")")/netcluster_twice.sh"  # twice LOG LABEL COMMAND...

for rate in $rates; do
  "$netcluster" up $((hosts + 2)) --name "$name" --rate "$rate" >/dev/null
  # The probe: in a ring all-reduce each host sends to one neighbour and receives from the other, so
  # its bus bandwidth is what one link carries, under the same traffic as the training runs.
  twice "$runs/probe-$rate.txt" "the probe at $rate" \
    "$netcluster" run "$hosts" --name "$name" -- "$build/ptrain" bench allreduce --algo ring --sizes 64MiB --iters 5
  for i in "${!names[@]}"; do
    ranks=$hosts
    [[ "${options[$i]}" == *--servers* ]] && ranks=$((hosts + 2))
    # shellcheck disable=SC2086
    twice "$runs/$rate-$i.log" "'${names[$i]}' at $rate" \
      "$netcluster" run "$ranks" --name "$name" -- "$build/ptrain" train "${common[@]}" ${options[$i]} \
      --report "$runs/$rate-$i.json"
  done
  "$netcluster" down --name "$name" >/dev/null
done

python3 - "$runs" "$csv" "$hosts" "$rates" "$build/ptrain" "$model_csv" "$codecs_csv" "${names[@]}" <<'PY'
import json, os, re, subprocess, sys
runs, csv_path, hosts, rates, ptrain, model_csv, codecs_csv = sys.argv[1:8]
names = sys.argv[8:]
rows = []
probes = {}
print(f"{hosts} worker hosts, each link shaped with tc tbf; {os.cpu_count()} cores share every rank")
for rate in rates.split():
    probe = open(os.path.join(runs, f"probe-{rate}.txt")).read()
    m = re.search(r"ring\s+64MiB\s+\S+\s+(\S+)\s+(\S+)\s+ok", probe)
    link = float(m.group(2)) * 8 if m else float("nan")
    probes[rate] = link
    print(f"\n{rate}: the probe measured {link:.2f} Gbit/s on one link (MPI ring, {hosts} hosts, 64 MiB)")
    print("| configuration | parameters | step ms | samples/s | vs dense ring | MiB sent per step and worker |")
    print("|---|---|---|---|---|---|")
    base = None
    for i, name in enumerate(names):
        r = json.load(open(os.path.join(runs, f"{rate}-{i}.json")))
        s = r["summary"]
        sent = max(c["bytes_sent_per_step"] for c in r["comm"]) / 2**20
        if i == 0:
            base = s["samples_per_s"]
        rows.append((rate, name, r["run"]["parameters"], s["mean_step_ms"], s["samples_per_s"],
                     s["samples_per_s"] / base, sent, link, r["plan"]["run"]["batch"]))
        print(f"| {name} | {r['run']['parameters']:,} | {s['mean_step_ms']:.1f} | {s['samples_per_s']:.0f} | "
              f"{s['samples_per_s'] / base:.2f}x | {sent:.2f} |")
with open(csv_path, "w") as f:
    f.write("rate,configuration,parameters,step_ms,samples_per_s,vs_dense_ring,mib_sent_per_step,probe_gbit_s\n")
    for row in rows:
        f.write(f'{row[0]},"{row[1]}",{row[2]},{row[3]:.3f},{row[4]:.2f},{row[5]:.4f},{row[6]:.4f},{row[7]:.3f}\n')
print(f"\nevery run: {csv_path}")

# The model: calibrated on the first run, it predicts the others at the probe's bandwidth.
def simulate(args):
    out = subprocess.run([ptrain, "simulate", "--workers", hosts] + args, check=True, capture_output=True,
                         text=True).stdout
    return out
first_rate = rates.split()[0]
cores_per_rank = str(os.cpu_count() / int(hosts))
out = simulate(["--calibrate", os.path.join(runs, f"{first_rate}-0.json"), "--calibrate-bandwidth",
                str(probes[first_rate]), "--bandwidth", str(probes[first_rate]), "--exchange", "ring"])
compute = re.search(r"([0-9.]+) ms of compute per sample", out).group(1)
model_args = {0: ["--exchange", "ring"], 1: ["--exchange", "ring", "--overlap"],
              2: ["--exchange", "ring", "--codec", "fp16"], 3: ["--exchange", "ring", "--codec", "fp16", "--overlap"],
              4: ["--exchange", "allgather", "--density", "0.001"],
              5: ["--exchange", "allgather", "--density", "0.001", "--overlap"],
              6: ["--exchange", "ps", "--servers", "2"]}
print(f"\nthe model, calibrated on '{names[0]}' at {first_rate} ({compute} ms of compute per sample), "
      f"{cores_per_rank} cores per worker rank, codec CPU from ptrain bench compress")
print("| rate | configuration | predicted step ms | measured | error |")
print("|---|---|---|---|---|")
model_rows = []
for row in rows:
    rate, name = row[0], row[1]
    i = names.index(name)
    if (rate, i) == (first_rate, 0):
        continue
    predicted_csv = os.path.join(runs, "predicted.csv")
    simulate(["--parameters", str(row[2]), "--compute-per-sample", compute, "--batch", str(row[8]), "--bandwidth",
        str(probes[rate]), "--codec-costs", codecs_csv, "--cores-per-rank", cores_per_rank,
        "--csv", predicted_csv] + model_args[i])
    line = open(predicted_csv).read().splitlines()[1].split(",")
    predicted = float(line[6])
    error = predicted / row[3] - 1
    model_rows.append((rate, name, predicted, row[3], error))
    print(f"| {rate} | {name} | {predicted:.1f} | {row[3]:.1f} | {100 * error:+.0f}% |")
with open(model_csv, "w") as f:
    f.write("rate,configuration,predicted_step_ms,measured_step_ms,error\n")
    for r in model_rows:
        f.write(f'{r[0]},"{r[1]}",{r[2]:.3f},{r[3]:.3f},{r[4]:.4f}\n')
print(f"every prediction: {model_csv}")
PY
