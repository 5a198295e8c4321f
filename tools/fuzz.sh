#!/usr/bin/env bash
# Fuzzes ptrain's readers of untrusted bytes with libFuzzer (fuzz/): builds the
# targets with clang, AddressSanitizer and UBSan into their own build
# directory, writes each target's seed corpus (from what ptrain itself
# writes), then runs the targets one after another, one job each, for
# SECONDS each (TARGET:SECONDS gives one target its own), and prints a table:
# executions, crashes, seconds and corpus size per target, and the totals.
# A crash (or a leak, a timeout, running out of memory) ends the script with
# a non-zero exit; the input that caused it stays in BUILD/crashes/TARGET/.
# The corpus each run grows stays in BUILD/corpus/TARGET/ for the next run.
#
#   tools/fuzz.sh [SECONDS-PER-TARGET [TARGET[:SECONDS]...]]   (default: 60 s, every target)
#   FUZZ_BUILD=dir   the build directory (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=${FUZZ_BUILD:-build-fuzz}
# A whole number of seconds above 0 (libFuzzer takes 0 as no limit).
seconds_given() { [[ $1 =~ ^[0-9]+$ ]] && ((10#$1 > 0)); }
seconds_given "$seconds" || { echo "usage: tools/fuzz.sh [SECONDS-PER-TARGET [TARGET[:SECONDS]...]]" >&2; exit 2; }

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

for spec in "${targets[@]}"; do
  [ "${spec%%:*}" = "$spec" ] || seconds_given "${spec#*:}" ||
    { echo "fuzz.sh: $spec: the seconds after the colon must be a whole number above 0" >&2; exit 2; }
done

# What libFuzzer writes for a failure (not the slow-unit-* notes).
findings() { find "$1" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l; }

failed=0
total=0 total_found=0 total_seconds=0 total_corpus=0
printf '%-20s %14s %8s %8s %8s\n' target executions crashes seconds corpus
for spec in "${targets[@]}"; do
  t=${spec%%:*} target_seconds=$seconds
  [ "$t" = "$spec" ] || target_seconds=${spec#*:}
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
  "$exe" -max_total_time="$target_seconds" -print_final_stats=1 -timeout=30 -rss_limit_mb=2048 "${dict[@]}" \
    -artifact_prefix="$crashes/" "$corpus" "$seeds" >"$logs/$t.log" 2>&1 || rc=$?
  elapsed=$((($(date +%s%N) - start + 500000000) / 1000000000))
  # The final statistics, or after a crash the last progress line (#N ...).
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  [ -n "$executions" ] || executions=$(grep -o '^#[0-9]*' "$logs/$t.log" | tail -1 | tr -d '#')
  found=$(($(findings "$crashes") - before))
  if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then found=1; fi
  corpus_files=$(find "$corpus" -maxdepth 1 -type f | wc -l)
  printf '%-20s %14s %8s %8s %8s\n' "$t" "${executions:-0}" "$found" "$elapsed" "$corpus_files"
  total=$((total + ${executions:-0})) total_found=$((total_found + found))
  total_seconds=$((total_seconds + elapsed)) total_corpus=$((total_corpus + corpus_files))
  if [ "$found" -ne 0 ]; then
    failed=1
    echo "fuzz.sh: $t failed (exit $rc); the input is in $crashes/, the log in $logs/$t.log:" >&2
    grep -E 'ERROR|runtime error|fuzz target:|SUMMARY|Test unit written' "$logs/$t.log" | head -20 >&2 || true
  fi
done
printf '%-20s %14s %8s %8s %8s\n' total "$total" "$total_found" "$total_seconds" "$total_corpus"
exit "$failed"
