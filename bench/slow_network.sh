#!/usr/bin/env bash
# Training on a slow network (root): HOSTS worker hosts
# and 2 server hosts in network namespaces (tools/netcluster), every link
# shaped to each of RATES, one ptrain rank per host under mpirun. A
# communication-bound MLP (784-2048x5-10, 18.4 M parameters, so that backward
# has layers left to run while the last ones' gradients are on the wire)
# trains STEPS steps with: dense ring all-reduce, fp16, DGC at 99.9% sparsity,
# each with and without overlap of communication and backward, the dense
# all-reduce over Gloo's transport instead of OpenMPI's (--transport gloo,
# Gloo's ring), with and without overlap, and the parameter server (ps-sync,
# 2 shards). In the same run, on the same hosts,
# PyTorch DDP (gloo, one process a host through tools/netcluster each,
# bench/ddp_host.py) trains the same MLP the same way, dense and with its fp16
# compression hook. Before the runs, an MPI probe checks what the links carry:
# a ring all-reduce over the worker hosts, whose bus bandwidth is one link's
# rate; with DDP, gloo's all-reduce of the same 64 MiB is a second probe. Then
# the step-time model (ptrain simulate), calibrated on the dense ring at the
# first rate with the probe's bandwidth and the codecs' CPU cost from ptrain
# bench compress, predicts every other ptrain run. Prints the tables and
# writes two CSVs.
#   sudo bench/slow_network.sh [BUILD_DIR]
#   (env: HOSTS (4), RATES ("1gbit 10gbit"), HIDDEN (2048,2048,2048,2048,2048), STEPS (12), BATCH (32),
#    CONFIGS (all of: dense dense-overlap gloo gloo-overlap fp16 fp16-overlap dgc dgc-overlap ps ddp ddp-fp16),
#    NAME (the cluster's, slow))
set -euo pipefail
build=$(readlink -f "${1:-build}")
hosts=${HOSTS:-4}
rates=${RATES:-1gbit 10gbit}
hidden=${HIDDEN:-2048,2048,2048,2048,2048}
steps=${STEPS:-12}
batch=${BATCH:-32}
all_configs="dense dense-overlap gloo gloo-overlap fp16 fp16-overlap dgc dgc-overlap ps ddp ddp-fp16"
configs=${CONFIGS:-$all_configs}
for c in $configs; do
  [[ " $all_configs " == *" $c "* ]] || { echo "slow_network.sh: CONFIGS: unknown '$c' (expected some of: $all_configs)" >&2; exit 2; }
done
netcluster=$(readlink -f "$(dirname "$(readlink -f "$0")")/../tools/netcluster")
name=${NAME:-slow}
here=$(dirname "$(readlink -f "$0")")
runs=$(mktemp -d)
trap '"$netcluster" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$runs"' EXIT
csv="$build/bench-slow-network.csv"
model_csv="$build/bench-slow-network-model.csv"
codecs_csv="$build/bench-slow-network-codecs.csv"
# Every run gets this long (they take under 2 minutes here); a run that fails or
# passes the limit is run once more (bench/netcluster_twice.sh).
run_limit=${RUN_LIMIT:-300}

# The codecs' CPU time per value near this model's size, on one core, before any host is up.
"$build/ptrain" bench compress --sizes 16M --codecs fp16,dgc --csv "$codecs_csv" > /dev/null

common=(--model mlp --hidden "$hidden" --batch "$batch" --optimizer momentum --lr 0.01 --epochs 1
        --max-steps "$steps" --train-samples $((hosts * batch * (steps + 1))) --comm-timeout 600)
declare -A names=([dense]="dense ring" [dense-overlap]="dense ring, overlap" [gloo]="dense, gloo transport"
                  [gloo-overlap]="dense, gloo transport, overlap" [fp16]="fp16"
                  [fp16-overlap]="fp16, overlap" [dgc]="DGC 99.9%" [dgc-overlap]="DGC 99.9%, overlap"
                  [ps]="parameter server, 2 shards" [ddp]="PyTorch DDP (gloo)" [ddp-fp16]="PyTorch DDP, fp16 hook")
declare -A options=([dense]="--allreduce ring --no-overlap --transport mpi" [dense-overlap]="--allreduce ring --overlap --transport mpi"
                    [gloo]="--transport gloo --allreduce native --no-overlap"
                    [gloo-overlap]="--transport gloo --allreduce native --overlap"
                    [fp16]="--allreduce ring --compress fp16 --no-overlap --transport mpi"
                    [fp16-overlap]="--allreduce ring --compress fp16 --overlap --transport mpi"
                    [dgc]="--compress dgc --dgc-density 0.001 --dgc-warmup 0 --no-overlap --transport mpi"
                    [dgc-overlap]="--compress dgc --dgc-density 0.001 --dgc-warmup 0 --overlap --transport mpi"
                    [ps]="--strategy ps-sync --servers 2" [ddp]="" [ddp-fp16]="--fp16-hook")
export GLOO_SOCKET_IFNAME=eth0  # gloo's connections on the cluster's links
# DDP: the same MLP, batch, optimizer, step size and steps, every step timed as ptrain's mean_step_ms.
ddp=(/usr/bin/python3 "$here/ddp_host.py" --model mlp --hidden "$hidden" --batch "$batch" --optimizer momentum
     --lr 0.01 --steps "$steps" --warmup 0 --timeout $((run_limit - 30)))
source "$here/netcluster_twice.sh"  # twice LOG LABEL COMMAND...

for rate in $rates; do
  servers=0
  [[ " $configs " == *" ps "* ]] && servers=2
  "$netcluster" up $((hosts + servers)) --name "$name" --rate "$rate" >/dev/null
  # The probe: in a ring all-reduce each host sends to one neighbour and receives from the other, so
  # its bus bandwidth is what one link carries, under the same traffic as the training runs.
  twice "$runs/probe-$rate.txt" "the probe at $rate" \
    "$netcluster" run "$hosts" --name "$name" -- "$build/ptrain" bench allreduce --algo ring --sizes 64MiB --iters 5
  if [[ " $configs " == *" gloo"* ]]; then
    # The same 64 MiB through ptrain over Gloo's transport (Gloo's ring).
    twice "$runs/probe-ptrain-gloo-$rate.txt" "the gloo transport's probe at $rate" \
      "$netcluster" run "$hosts" --name "$name" -- "$build/ptrain" bench allreduce --transport gloo --algo native \
      --sizes 64MiB --iters 5
  fi
  if [[ " $configs " == *" ddp"* ]]; then
    # The same 64 MiB through gloo's own all-reduce, on the same links: each transport's share of the link.
    twice "$runs/probe-gloo-$rate.log" "gloo's probe at $rate" \
      "$netcluster" each "$hosts" --name "$name" -- "${ddp[@]}" --allreduce-only 64 --steps 5
    grep '^{"peer"' "$runs/probe-gloo-$rate.log" > "$runs/probe-gloo-$rate.json"
  fi
  for c in $configs; do
    if [[ $c == ddp* ]]; then
      # shellcheck disable=SC2086
      twice "$runs/$rate-$c.log" "'${names[$c]}' at $rate" \
        "$netcluster" each "$hosts" --name "$name" -- "${ddp[@]}" ${options[$c]}
      grep '^{"peer"' "$runs/$rate-$c.log" > "$runs/$rate-$c.json"
      continue
    fi
    ranks=$hosts
    [[ "${options[$c]}" == *--servers* ]] && ranks=$((hosts + 2))
    # shellcheck disable=SC2086
    twice "$runs/$rate-$c.log" "'${names[$c]}' at $rate" \
      "$netcluster" run "$ranks" --name "$name" -- "$build/ptrain" train "${common[@]}" ${options[$c]} \
      --report "$runs/$rate-$c.json"
  done
  "$netcluster" down --name "$name" >/dev/null
done

names_args=()
for c in $configs; do names_args+=("$c" "${names[$c]}"); done
python3 - "$runs" "$csv" "$hosts" "$rates" "$build/ptrain" "$model_csv" "$codecs_csv" "${names_args[@]}" <<'PY'
import json, os, re, subprocess, sys
runs, csv_path, hosts, rates, ptrain, model_csv, codecs_csv = sys.argv[1:8]
configs = sys.argv[8::2]
names = dict(zip(sys.argv[8::2], sys.argv[9::2]))
rows = []
probes = {}
print(f"{hosts} worker hosts, each link shaped with tc tbf; {os.cpu_count()} cores share every rank")
for rate in rates.split():
    probe = open(os.path.join(runs, f"probe-{rate}.txt")).read()
    m = re.search(r"ring\s+64MiB\s+\S+\s+(\S+)\s+(\S+)\s+ok", probe)
    link = float(m.group(2)) * 8 if m else float("nan")
    probes[rate] = link
    print(f"\n{rate}: the probe measured {link:.2f} Gbit/s on one link (MPI ring, {hosts} hosts, 64 MiB)")
    ptrain_gloo = os.path.join(runs, f"probe-ptrain-gloo-{rate}.txt")
    if os.path.exists(ptrain_gloo):
        m = re.search(r"native\s+64MiB\s+(\S+)\s+\S+\s+(\S+)\s+ok", open(ptrain_gloo).read())
        if m:
            print(f"{rate}: ptrain over gloo's transport, the same 64 MiB: {float(m.group(2)) * 8:.2f} Gbit/s "
                  f"({float(m.group(1)) / 1000:.0f} ms)")
    gloo = os.path.join(runs, f"probe-gloo-{rate}.json")
    if os.path.exists(gloo):
        g = json.loads(open(gloo).read().splitlines()[-1])
        print(f"{rate}: gloo's all-reduce of the same 64 MiB: {g['busbw_gb_s'] * 8:.2f} Gbit/s ({g['mean_ms']:.0f} ms)")
    print("| configuration | parameters | step ms | samples/s | vs dense ring | MiB sent per step and worker |")
    print("|---|---|---|---|---|---|")
    base = None
    phases = []
    for c in configs:
        if c.startswith("ddp"):
            # bench/ddp_host.py's line; its bytes are the busiest host's eth0 counter, TCP/IP headers included.
            r = json.loads(open(os.path.join(runs, f"{rate}-{c}.json")).read().splitlines()[-1])
            parameters, step_ms, samples_per_s, batch = r["parameters"], r["mean_step_ms"], r["samples_per_s"], r["batch"]
            sent = r["bytes_sent_per_step"] / 2**20 if r["bytes_sent_per_step"] is not None else float("nan")
        else:
            r = json.load(open(os.path.join(runs, f"{rate}-{c}.json")))
            s = r["summary"]
            parameters, step_ms, samples_per_s, batch = (r["run"]["parameters"], s["mean_step_ms"], s["samples_per_s"],
                                                         r["plan"]["run"]["batch"])
            sent = max(x["bytes_sent_per_step"] for x in r["comm"]) / 2**20
            if "step phases" in s.get("notes", {}):
                phases.append(f"- {names[c]}: {s['notes']['step phases']}")
        if c == "dense":
            base = samples_per_s
        relative = samples_per_s / base if base else float("nan")
        rows.append((rate, c, names[c], parameters, step_ms, samples_per_s, relative, sent, link, batch))
        print(f"| {names[c]} | {parameters:,} | {step_ms:.1f} | {samples_per_s:.0f} | "
              + (f"{relative:.2f}x" if base else "") + f" | {sent:.2f}{' (eth0)' if c.startswith('ddp') else ''} |")
    if phases:
        print(f"\n{rate}: where worker 0's steps went (ptrain's step phases):")
        print("\n".join(phases))
with open(csv_path, "w") as f:
    f.write("rate,configuration,parameters,step_ms,samples_per_s,vs_dense_ring,mib_sent_per_step,probe_gbit_s\n")
    for row in rows:
        f.write(f'{row[0]},"{row[2]}",{row[3]},{row[4]:.3f},{row[5]:.2f},{row[6]:.4f},{row[7]:.4f},{row[8]:.3f}\n')
print(f"\nevery run: {csv_path}")

# The model: calibrated on the first rate's dense ring, it predicts ptrain's other runs at the probe's bandwidth.
first_rate = rates.split()[0]
model_args = {"dense": ["--exchange", "ring"], "dense-overlap": ["--exchange", "ring", "--overlap"],
              "fp16": ["--exchange", "ring", "--codec", "fp16"],
              "fp16-overlap": ["--exchange", "ring", "--codec", "fp16", "--overlap"],
              "dgc": ["--exchange", "allgather", "--density", "0.001"],
              "dgc-overlap": ["--exchange", "allgather", "--density", "0.001", "--overlap"],
              "ps": ["--exchange", "ps", "--servers", "2"]}
if "dense" not in configs:
    print("\nno model table: it is calibrated on the dense ring, which CONFIGS leaves out")
    sys.exit(0)
def simulate(args):
    out = subprocess.run([ptrain, "simulate", "--workers", hosts] + args, check=True, capture_output=True,
                         text=True).stdout
    return out
cores_per_rank = str(os.cpu_count() / int(hosts))
try:
    out = simulate(["--calibrate", os.path.join(runs, f"{first_rate}-dense.json"), "--calibrate-bandwidth",
                    str(probes[first_rate]), "--bandwidth", str(probes[first_rate]), "--exchange", "ring"])
except subprocess.CalledProcessError as e:
    # A gradient that fits the shaped link's burst crosses it faster than its rate, and a small
    # model's step may then be shorter than the exchange the rate predicts: no compute is left to calibrate.
    print(f"\nno model table: {e.stderr.strip()}")
    sys.exit(0)
compute = re.search(r"([0-9.]+) ms of compute per sample", out).group(1)
print(f"\nthe model, calibrated on '{names['dense']}' at {first_rate} ({compute} ms of compute per sample), "
      f"{cores_per_rank} cores per worker rank, codec CPU from ptrain bench compress")
print("| rate | configuration | predicted step ms | measured | error |")
print("|---|---|---|---|---|")
model_rows = []
for row in rows:
    rate, c, name = row[0], row[1], row[2]
    if (rate, c) == (first_rate, "dense") or c not in model_args:
        continue
    predicted_csv = os.path.join(runs, "predicted.csv")
    simulate(["--parameters", str(row[3]), "--compute-per-sample", compute, "--batch", str(row[9]), "--bandwidth",
        str(probes[rate]), "--codec-costs", codecs_csv, "--cores-per-rank", cores_per_rank,
        "--csv", predicted_csv] + model_args[c])
    line = open(predicted_csv).read().splitlines()[1].split(",")
    predicted = float(line[6])
    error = predicted / row[4] - 1
    model_rows.append((rate, name, predicted, row[4], error))
    print(f"| {rate} | {name} | {predicted:.1f} | {row[4]:.1f} | {100 * error:+.0f}% |")
with open(model_csv, "w") as f:
    f.write("rate,configuration,predicted_step_ms,measured_step_ms,error\n")
    for r in model_rows:
        f.write(f'{r[0]},"{r[1]}",{r[2]:.3f},{r[3]:.3f},{r[4]:.4f}\n')
print(f"every prediction: {model_csv}")
PY
