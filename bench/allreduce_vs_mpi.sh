#!/usr/bin/env bash
# ptrain's all-reduce against OpenMPI's MPI_Allreduce, in one run, on this
# machine: `ptrain bench allreduce` with the local backend (threads) and under
# mpirun (the mpi backend, whose "native" is MPI_Allreduce), at each rank
# count, every algorithm, sizes SIZES. Prints the memory-copy ceiling, the
# full tables, and the 64 MiB summary: the local backend's best bus bandwidth
# and ptrain's ring over MPI point-to-point, each over MPI_Allreduce's.
#   bench/allreduce_vs_mpi.sh [BUILD_DIR]   (env: RANKS, SIZES, ITERS)
set -euo pipefail
build=${1:-build}
ranks=${RANKS:-"2 4"}
sizes=${SIZES:-64KiB:64MiB}
iters=${ITERS:-10}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$build/bench-allreduce
mkdir -p "$out"
for n in $ranks; do
  "$build/ptrain" bench allreduce --backend local --ranks "$n" --sizes "$sizes" --iters "$iters" \
    --csv "$out/local-$n.csv"
  mpirun --oversubscribe -np "$n" "$build/ptrain" bench allreduce --sizes "$sizes" --iters "$iters" \
    --csv "$out/mpi-$n.csv"
done

python3 - "$out" $ranks <<'PY'
import csv, sys
out, ranks = sys.argv[1], sys.argv[2:]
print()
print("| ranks | size | local best (algo): busbw GB/s | MPI_Allreduce busbw GB/s | local best / MPI_Allreduce "
      "| ptrain ring over MPI busbw GB/s | ring over MPI / MPI_Allreduce | memory copy, all ranks GB/s |")
print("|---|---|---|---|---|---|---|---|")
for n in ranks:
    rows = {}
    for backend in ("local", "mpi"):
        for r in csv.DictReader(open(f"{out}/{backend}-{n}.csv")):
            rows[(backend, r["algorithm"], r["bytes"])] = r
    size = max(int(b) for (_, a, b) in rows if a != "stream-copy")
    local = [r for (be, a, b), r in rows.items() if be == "local" and a != "stream-copy" and int(b) == size]
    best = max(local, key=lambda r: float(r["busbw_gbps"]))
    mpi_native = float(rows[("mpi", "native", str(size))]["busbw_gbps"])
    mpi_ring = float(rows[("mpi", "ring", str(size))]["busbw_gbps"])
    copy = float(rows[("local", "stream-copy", next(b for (be, a, b) in rows if be == "local" and a == "stream-copy"))]["algbw_gbps"])
    print(f"| {n} | {size >> 20} MiB | {float(best['busbw_gbps']):.2f} ({best['algorithm']}) | {mpi_native:.2f} | "
          f"{float(best['busbw_gbps']) / mpi_native:.2f}x | {mpi_ring:.2f} | {mpi_ring / mpi_native:.2f}x | {copy:.1f} |")
print()
print(f"every measurement: {out}/")
PY
