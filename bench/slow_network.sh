#!/usr/bin/env bash
# Training on a slow network (issue 7's measurement; root): HOSTS worker hosts
# and 2 server hosts in network namespaces (tools/netcluster), every link
# shaped to each of RATES, one ptrain rank per host under mpirun. A
# communication-bound MLP (784-4096-4096-10, 20 M parameters) trains STEPS
# steps with: dense ring all-reduce, fp16, DGC at 99.9% sparsity, each with and
# without overlap of communication and backward, and the parameter server
# (ps-sync, 2 shards). Before the runs, an MPI probe between two hosts checks
# that a link carries the shaped rate. Prints a table and writes CSV.
#   sudo bench/slow_network.sh [BUILD_DIR]
#   (env: HOSTS (4), RATES ("1gbit 10gbit"), HIDDEN (4096,4096), STEPS (12), BATCH (32))
set -euo pipefail
build=$(readlink -f "${1:-build}")
hosts=${HOSTS:-4}
rates=${RATES:-1gbit 10gbit}
hidden=${HIDDEN:-4096,4096}
steps=${STEPS:-12}
batch=${BATCH:-32}
netcluster=$(dirname "$(readlink -f "$0")")/../tools/netcluster
name=slow
runs=$(mktemp -d)
trap '"$netcluster" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$runs"' EXIT
csv="$build/bench-slow-network.csv"

common=(--model mlp --hidden "$hidden" --batch "$batch" --optimizer momentum --lr 0.01 --epochs 1
        --max-steps "$steps" --train-samples $((hosts * batch * (steps + 1))) --comm-timeout 600)
declare -a names=("dense ring" "dense ring, overlap" "fp16" "fp16, overlap" "DGC 99.9%" "DGC 99.9%, overlap"
                  "parameter server, 2 shards")
declare -a options=("--allreduce ring --no-overlap" "--allreduce ring --overlap"
                    "--allreduce ring --compress fp16 --no-overlap" "--allreduce ring --compress fp16 --overlap"
                    "--compress dgc --dgc-density 0.001 --dgc-warmup 0 --no-overlap"
                    "--compress dgc --dgc-density 0.001 --dgc-warmup 0 --overlap"
                    "--strategy ps-sync --servers 2")
for rate in $rates; do
  "$netcluster" up $((hosts + 2)) --name "$name" --rate "$rate" >/dev/null
  # The probe: a ring all-reduce between two hosts moves each byte once per direction, so its bus
  # bandwidth is what one link carries.
  "$netcluster" run 2 --name "$name" -- "$build/ptrain" bench allreduce --algo ring --sizes 64MiB \
    > "$runs/probe-$rate.txt"
  for i in "${!names[@]}"; do
    ranks=$hosts
    [[ "${options[$i]}" == *--servers* ]] && ranks=$((hosts + 2))
    # shellcheck disable=SC2086
    "$netcluster" run "$ranks" --name "$name" -- "$build/ptrain" train "${common[@]}" ${options[$i]} \
      --report "$runs/$rate-$i.json" > "$runs/$rate-$i.log" 2>&1 ||
      { echo "slow_network: '${names[$i]}' at $rate failed:" >&2; tail -5 "$runs/$rate-$i.log" >&2; exit 1; }
  done
  "$netcluster" down --name "$name" >/dev/null
done

python3 - "$runs" "$csv" "$hosts" "$rates" "${names[@]}" <<'PY'
import json, os, re, sys
runs, csv_path, hosts, rates = sys.argv[1:5]
names = sys.argv[5:]
rows = []
print(f"{hosts} worker hosts, each link shaped with tc tbf; {os.cpu_count()} cores share every rank")
for rate in rates.split():
    probe = open(os.path.join(runs, f"probe-{rate}.txt")).read()
    m = re.search(r"ring\s+64MiB\s+\S+\s+(\S+)\s+(\S+)\s+ok", probe)
    link = float(m.group(2)) * 8 if m else float("nan")
    print(f"\n{rate}: the probe measured {link:.2f} Gbit/s on one link (MPI ring, 2 hosts, 64 MiB)")
    print("| configuration | parameters | step ms | samples/s | vs dense ring | MiB sent per step and worker |")
    print("|---|---|---|---|---|---|")
    base = None
    for i, name in enumerate(names):
        r = json.load(open(os.path.join(runs, f"{rate}-{i}.json")))
        s = r["summary"]
        sent = max(c["bytes_sent_per_step"] for c in r["comm"]) / 2**20
        if i == 0:
            base = s["samples_per_s"]
        rows.append((rate, name, r["config"]["parameters"], s["mean_step_ms"], s["samples_per_s"],
                     s["samples_per_s"] / base, sent, link))
        print(f"| {name} | {r['config']['parameters']:,} | {s['mean_step_ms']:.1f} | {s['samples_per_s']:.0f} | "
              f"{s['samples_per_s'] / base:.2f}x | {sent:.2f} |")
with open(csv_path, "w") as f:
    f.write("rate,configuration,parameters,step_ms,samples_per_s,vs_dense_ring,mib_sent_per_step,probe_gbit_s\n")
    for row in rows:
        f.write(f'{row[0]},"{row[1]}",{row[2]},{row[3]:.3f},{row[4]:.2f},{row[5]:.4f},{row[6]:.4f},{row[7]:.3f}\n')
print(f"\nevery run: {csv_path}")
PY
