#!/usr/bin/env bash
# bench/model_check.sh in small (the step-time model against measured runs on
# shaped hosts): one rate, a small MLP, 4 steps, the calibration runs (DGC on
# 2 and 4 workers) and a few others, and a pipeline of 2 stages (its two
# calibration runs and 1F1B with 4 micro-batches); then the table again as if each had run
# twice (REPEATS=2: the same reports under a second repeat's names, not run
# again, to keep the test short). Checks that every run predicted has a
# row, that the CSVs are written, and that the projection to 1,024 workers as
# 128 hosts x 8 threads is printed. Not a check of the model's accuracy (that
# needs a quiet machine and longer runs: README "The model against measured
# runs"). Skipped (CTest exit 77) without root or network namespaces.
#   tests/tools/model_check_test.sh BUILD_DIR
set -euo pipefail
build=$(readlink -f "${1:?usage: model_check_test.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "tools/netcluster needs root"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 (ip, tc) is not installed"
ip netns add "mcsmoke-probe" 2>/dev/null || skip "network namespaces are not available here"
ip netns del "mcsmoke-probe"
[ -d /usr/share/datasets/fashion-mnist ] || skip "the dataset-fashion-mnist package is not installed"
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT

out=$(RATES=1gbit HIDDEN=256 STEPS=4 OUT_DIR="$out_dir" \
  ONLY='-(dgc|ring|async|hierarchical)$|^1gbit-2-pipe-(gpipe-1|gpipe-8|1f1b-4)$' \
  bash "$here/bench/model_check.sh" "$build" 2>&1) || fail "model_check.sh failed: $out"
echo "$out"
# Calibrated on DGC with 2 and with 4 workers; predicted: the ring and async on both, hierarchical on 4.
grep -qE "calibrated on DGC 99.9% at 1gbit: 2 workers [0-9.]+ ms, 4 workers [0-9.]+ ms" <<<"$out" ||
  fail "no calibration for 2 and 4 workers"
# The step-time table: what comes before the pipelines' own.
steps_table() { sed '/^pipelines against/q' <<<"$1"; }
rows=$(steps_table "$out" | grep -cE '^\| 1gbit \| [24] \| .* \| [0-9.]+ \| [0-9.]+ \| [+-][0-9.]+% \|$' || true)
[ "$rows" -eq 5 ] || fail "expected 5 predicted runs, found $rows"
grep -qE "^within 10%: [0-5] of 5 predictions$" <<<"$out" || fail "no summary of the predictions"
# The pipelines: calibrated on their own runs, then beside the dense ring of 2 workers.
grep -qE "^pipelines of 2 workers calibrated on pipe-gpipe-1 and pipe-gpipe-8 at 1gbit: [0-9.]+ ms" <<<"$out" ||
  fail "no calibration of the pipelines"
number='[0-9.]+ \| [0-9.]+ \| [+-][0-9.]+%'
for row in "data parallel, dense ring \| [0-9.]+ \| [0-9.]+ \| [+-][0-9.]+% \| 0 \| - \| -" \
  "pipeline, 2 stages, 1F1B, M = 4 \| $number \| $number \| $number \| $number"; do
  grep -qE "^\| 1gbit \| 2 \| $row \|" <<<"$out" || fail "no pipeline table row matching: $row"
done
[ "$(wc -l < "$out_dir/pipelines.csv")" -eq 5 ] || fail "pipelines.csv does not hold the ring and 3 pipelines"
[ "$(wc -l < "$out_dir/model-check.csv")" -eq 6 ] || fail "model-check.csv does not hold 5 rows"
[ "$(awk -F, 'NR > 1 { print $(NF - 2) }' "$out_dir/model-check.csv" | grep -c '^1$')" -eq 5 ] ||
  fail "model-check.csv: not 1 run a row"
for report in "$out_dir"/1gbit-*.json; do cp "$report" "${report%.json}.2.json"; done
repeated=$(/usr/bin/python3 "$here/bench/model_check.py" "$out_dir" "$build/ptrain" 1gbit) || fail "model_check.py: $repeated"
rows=$(steps_table "$repeated" | grep -cE '^\| 1gbit \| [24] \| .* \| [0-9.]+ \| [0-9.]+ \| [+-][0-9.]+% \| 2: [0-9.]+ to [0-9.]+ \|$' || true)
[ "$rows" -eq 5 ] || fail "with 2 runs of each: expected 5 rows with their range, found $rows"
[ "$(awk -F, 'NR > 1 { print $(NF - 2) }' "$out_dir/model-check.csv" | grep -c '^2$')" -eq 5 ] ||
  fail "model-check.csv: not 2 runs a row"
REPEATS=0 bash "$here/bench/model_check.sh" "$build" >/dev/null 2>&1 && fail "REPEATS=0 was accepted"
TRANSPORT=tcp bash "$here/bench/model_check.sh" "$build" >/dev/null 2>&1 && fail "TRANSPORT=tcp was accepted"
grep -q "^1,hierarchical,1024," "$out_dir/projection.csv" || fail "no projection to 1,024 workers"
grep -q "local-workers 8" <<<"$out" || fail "the projection is not 128 hosts x 8 threads"
echo "PASSED"
