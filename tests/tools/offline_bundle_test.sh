#!/usr/bin/env bash
# The offline bundle's round trip (docs/building.md: "Without a package
# registry"): tools/bundle-deps fetches the .deb files, tools/offline-build
# unpacks them into a temporary prefix and configures ptrain against it alone,
# and an MPI program built with the prefix's headers and library runs on 2
# ranks under the prefix's launcher, loading the prefix's libmpi (not the
# system's, which this machine also has).
#   offline_bundle_test.sh SOURCE_DIR
set -euo pipefail
source=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

"$source/tools/bundle-deps" "$scratch/bundle"
test -f "$scratch/bundle/PACKAGES"
"$source/tools/offline-build" "$scratch/bundle" --prefix "$scratch/root" --build "$scratch/build" \
  --without-torch --configure-only

# Every dependency found in the prefix, none on the system.
cache=$scratch/build/CMakeCache.txt
for entry in fmt_DIR nlohmann_json_DIR CLI11_DIR GTest_DIR MPI_mpi_LIBRARY MPI_C_HEADER_DIR ZLIB_INCLUDE_DIR \
  PTRAIN_HWLOC_INCLUDE_DIR PTRAIN_HWLOC_LIBRARY; do
  value=$(sed -n "s/^$entry:[A-Z]*=//p" "$cache")
  case "$value" in
    "$scratch/root"/*) ;;
    *) echo "offline_bundle_test: $entry is '$value', not in the prefix $scratch/root" >&2; exit 1 ;;
  esac
done
if grep -q -- "-I/usr/lib/.*openmpi" "$scratch/build/compile_commands.json"; then
  echo "offline_bundle_test: the build would compile against the system's OpenMPI headers" >&2
  exit 1
fi

# OpenMPI relocated: a program built against the prefix runs on 2 ranks under
# the prefix's launcher and loads the prefix's libmpi.
# shellcheck disable=SC1091
. "$scratch/root/ptrain-env.sh"
lib=$(dirname "$(sed -n 's/^MPI_mpi_LIBRARY:FILEPATH=//p' "$cache")")
cat >"$scratch/hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  char line[4096], libmpi[4096] = "";
  FILE* maps = fopen("/proc/self/maps", "r");
  while (maps && fgets(line, sizeof line, maps))
    if (strstr(line, "libmpi.so")) sscanf(strchr(line, '/'), "%4095s", libmpi);
  printf("rank %d of %d, sum %d, %s\n", rank, size, sum, libmpi);
  MPI_Finalize();
  return 0;
}
C
gcc "$scratch/hello.c" -I"$(sed -n 's/^MPI_C_HEADER_DIR:PATH=//p' "$cache")" -L"$lib" -lmpi -o "$scratch/hello"
out=$(orterun --allow-run-as-root -np 2 "$scratch/hello")
echo "$out"
test "$(echo "$out" | grep -c "of 2, sum 1, $scratch/root/")" -eq 2 || {
  echo "offline_bundle_test: the ranks did not run with the prefix's libmpi" >&2
  exit 1
}
echo "offline_bundle_test: bundle, unpack, configure and a 2-rank run against the prefix: ok"
