#!/usr/bin/env bash
# Fuzzes ptrain's readers of untrusted bytes with libFuzzer (fuzz/): builds the
# targets with clang, AddressSanitizer and UBSan into their own build
# directory, writes each target's seed corpus (from what ptrain itself
# writes), then runs the targets one after another, one job each, for
# SECONDS each, and prints a table: executions, crashes, seconds per target.
# A crash (or a leak, a timeout, running out of memory) ends the script with
# a non-zero exit; the input that caused it stays in BUILD/crashes/TARGET/.
# The corpus each run grows stays in BUILD/corpus/TARGET/ for the next run.
#
#   tools/fuzz.sh [SECONDS-PER-TARGET [TARGET...]]   (default: 60 s, every target)
#   FUZZ_BUILD=dir   the build directory (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=${FUZZ_BUILD:-build-fuzz}
case "$seconds" in '' | *[!0-9]*) echo "usage: tools/fuzz.sh [SECONDS-PER-TARGET [TARGET...]]" >&2; exit 2 ;; esac

if ! command -v clang++-14 >/dev/null || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "fuzz.sh: needs clang-14 and its libFuzzer (Debian: clang-14 libclang-rt-14-dev; tools/setup-debian installs them)" >&2
  exit 1
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPTRAIN_FUZZ=ON -DPTRAIN_WITH_TORCH=OFF \
  -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 >/dev/null
log=$(mktemp)
if ! cmake --build "$build" -j"$(nproc)" --target fuzz_targets >"$log" 2>&1; then
  cat "$log"
  rm -f "$log"
  echo "fuzz.sh: the build in $build failed" >&2
  exit 1
fi
rm -f "$log"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in fuzz/*_fuzz.cpp; do targets+=("$(basename "$source" .cpp)"); done
fi

# What libFuzzer writes for a failure (not the slow-unit-* notes).
findings() { find "$1" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l; }

failed=0
total=0
printf '%-20s %14s %8s %8s %8s\n' target executions crashes seconds corpus
for t in "${targets[@]}"; do
  exe=$build/fuzz/$t
  [ -x "$exe" ] || { echo "fuzz.sh: no target $t (fuzz/$t.cpp)" >&2; exit 2; }
  seeds=$build/seeds/$t corpus=$build/corpus/$t crashes=$build/crashes/$t logs=$build/logs
  rm -rf "$seeds" "$seeds.dict"
  "$exe" --write-seeds="$seeds" >/dev/null 2>&1 || { echo "fuzz.sh: $t could not write its seeds" >&2; exit 1; }
  mkdir -p "$corpus" "$crashes" "$logs"
  dict=()
  [ -f "$seeds.dict" ] && dict=(-dict="$seeds.dict")
  before=$(findings "$crashes")
  start=$(date +%s%N)
  rc=0
  "$exe" -max_total_time="$seconds" -print_final_stats=1 -timeout=30 -rss_limit_mb=2048 "${dict[@]}" \
    -artifact_prefix="$crashes/" "$corpus" "$seeds" >"$logs/$t.log" 2>&1 || rc=$?
  elapsed=$((($(date +%s%N) - start + 500000000) / 1000000000))
  # The final statistics, or after a crash the last progress line (#N ...).
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  [ -n "$executions" ] || executions=$(grep -o '^#[0-9]*' "$logs/$t.log" | tail -1 | tr -d '#')
  found=$(($(findings "$crashes") - before))
  if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then found=1; fi
  printf '%-20s %14s %8s %8s %8s\n' "$t" "${executions:-0}" "$found" "$elapsed" "$(ls "$corpus" | wc -l)"
  total=$((total + ${executions:-0}))
  if [ "$found" -ne 0 ]; then
    failed=1
    echo "fuzz.sh: $t failed (exit $rc); the input is in $crashes/, the log in $logs/$t.log:" >&2
    grep -E 'ERROR|runtime error|fuzz target:|SUMMARY|Test unit written' "$logs/$t.log" | head -20 >&2 || true
  fi
done
printf '%-20s %14s\n' total "$total"
exit "$failed"
