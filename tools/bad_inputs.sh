#!/usr/bin/env bash
# Bad and hostile inputs for every ptrain command: options out of range
# (negative counts, nan, inf, overflowing numbers, counts no memory holds),
# damaged or hostile data files (FIFOs, devices, symlink loops, truncated or
# corrupt headers, gzip bombs, test sets that do not match the training set),
# output paths that must not be written through (devices, FIFOs, symlinks,
# directories, unwritable places), corrupt plan files, reports and
# checkpoints, killed and missing MPI ranks, signals during a run, and runs
# that diverge. Each case states what must happen:
#   - the exit status (2: fix the input, 3: diverged with the report written,
#     75: resume from the last checkpoint; never 0 for bad input, never 1, a
#     crash or a signal), within a time limit (a hang fails the case);
#   - exactly one line on stderr, "ptrain: error: ...", naming the input
#     (warnings aside);
#   - nothing written or clobbered: every file of the case's directory keeps
#     its type, mode and bytes, no file appears (no temporary or partial file
#     left), /dev/null stays a device; only the files a case names (a
#     diverged run's report) may appear, complete.
#   tools/bad_inputs.sh [BUILD_DIR]
#     env: QUICK=1 runs the cases marked quick (the ctest subset);
#          ONLY=REGEX runs the cases whose name matches; KINDS=REGEX those whose
#          kind matches (KINDS='^(switch|empty)$'); LIMIT=seconds per case
#          (default 60); OUT=FILE also writes the table there.
# Prints a markdown table (case, command, expected, outcome) and a summary
# line per kind; exits non-zero when any case fails.
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
ptrain=$build/ptrain
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
quick=${QUICK:-0}
only=${ONLY:-}
kinds=${KINDS:-}
limit=${LIMIT:-60}
out=${OUT:-}
[ -x "$ptrain" ] || { echo "bad_inputs.sh: no $ptrain (build first)" >&2; exit 2; }
# The fixtures are made with NumPy (Debian: python3-numpy); without it, skip (77, as ctest is told).
$py -c "import numpy" 2>/dev/null || { echo "bad_inputs.sh: $py cannot import numpy; skipped" >&2; exit 77; }

T=$(mktemp -d /tmp/bad_inputs.XXXXXX)
children=()
cleanup() {
  for pid in "${children[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
fx=$T/fixtures
$py "$here/bad_inputs_fixtures.py" "$fx" || { echo "bad_inputs.sh: making the fixtures failed" >&2; exit 1; }
mpirun_cmd=()
if command -v mpirun >/dev/null; then
  mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe)
fi

# Flags that make a run short, should a bad value be taken by mistake: a
# command's @SHORT@ stands for those of them it does not give itself (ptrain
# refuses a flag given twice).
fm=$fx/fm
short=(--data "$fm" --epochs 1 --batch 32 --workers 2 --quiet)
npy_set=(--data-set npy --train-features "$fx/npy/train-x.npy" --train-labels "$fx/npy/train-y.npy"
  --test-features "$fx/npy/test-x.npy" --test-labels "$fx/npy/test-y.npy" --epochs 1 --workers 2 --quiet)

rows=()
failed=0
passed=0
declare -A kind_total kind_passed
case_no=0
C=  # the current case's directory

# new_case: a fresh, empty directory to set the case up in, and cd there.
new_case() {
  case_no=$((case_no + 1))
  C=$T/case-$case_no
  mkdir -p "$C" && cd "$C" || exit 1
}

# The state of the case's directory (each entry's type, mode, size, target
# and bytes) and of /dev/null.
snapshot() {
  (cd "$C" && find . -mindepth 1 -printf '%p %y %m %s %l\n' | sort &&
    find . -type f -exec md5sum {} + 2>/dev/null | sort)
  stat -c '/dev/null %F %t:%T %a' /dev/null
}

# A character device of the case's own (the null device's numbers), so that
# a ptrain that replaced it would not replace the machine's /dev/null.
null_device() { mknod -m 666 null c 1 3 2>/dev/null || ln -s /dev/null null; }

md_escape() { sed -e 's/|/\\|/g' <<<"$1"; }

# expect [-q] KIND NAME STATUS NEEDLE [--writes FILE] [--lacks TEXT] [--has TEXT] [--signal SIG:DELAY] -- COMMAND...
#   -q: in the quick subset. STATUS: the exit status that must come back.
#   NEEDLE: text the one error line must hold (the input it names).
#   --writes FILE: this file may appear (it must then be complete JSON).
#   --lacks TEXT: stdout and stderr must not hold TEXT.
#   --has TEXT: stdout or stderr must hold TEXT.
#   --whole-stderr: under mpirun too, every line on stderr counts (the launcher's own as well).
#   --writes-dir DIR: files may appear in DIR (none hidden, none partial).
#   --writes-lines FILE: FILE may appear or grow, ending in a whole line.
#   --signal SIG:DELAY: send SIG to the command after DELAY seconds.
expect() {
  local is_quick=0
  if [ "$1" = -q ]; then is_quick=1; shift; fi
  local kind=$1 name=$2 status=$3 needle=$4
  shift 4
  local writes=() lacks=() has=() signal= dirs=() line_files=() whole_stderr=0
  while [ "$1" != -- ]; do
    case $1 in
      --writes) writes+=("$2"); shift 2 ;;
      --lacks) lacks+=("$2"); shift 2 ;;
      --has) has+=("$2"); shift 2 ;;
      --whole-stderr) whole_stderr=1; shift ;;
      --writes-dir) dirs+=("$2"); shift 2 ;;
      --writes-lines) line_files+=("$2"); shift 2 ;;
      --signal) signal=$2; shift 2 ;;
      *) echo "expect: unknown option $1" >&2; exit 2 ;;
    esac
  done
  shift
  local cmd=() arg a i given
  for arg in "$@"; do
    if [ "$arg" != @SHORT@ ]; then cmd+=("$arg"); continue; fi
    for ((i = 0; i < ${#short[@]}; i++)); do
      if [[ ${short[$i]} == --quiet ]]; then cmd+=(--quiet); continue; fi
      given=0
      for a in "$@"; do [ "$a" = "${short[$i]}" ] && given=1; done
      [ $given = 1 ] || cmd+=("${short[$i]}" "${short[$((i + 1))]}")
      i=$((i + 1))
    done
  done
  set -- "${cmd[@]}"
  if { [ "$quick" = 1 ] && [ $is_quick = 0 ]; } || { [ -n "$only" ] && ! [[ $name =~ $only ]]; } ||
    { [ -n "$kinds" ] && ! [[ $kind =~ $kinds ]]; }; then
    cd "$T" && rm -rf "$C"
    return
  fi
  local before after
  before=$(snapshot)
  local started=$SECONDS st
  if [ -n "$signal" ]; then
    timeout -k 5 "$limit" "$@" >"$T/stdout" 2>"$T/stderr" &
    local pid=$!
    sleep "${signal#*:}"
    # timeout(1) passes the signal on to the command.
    kill -s "${signal%%:*}" "$pid" 2>/dev/null
    wait "$pid"
    st=$?
  else
    timeout -k 5 "$limit" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
    st=$?
  fi
  local took=$((SECONDS - started))
  after=$(snapshot)
  local problems=()
  if [ $st = "$status" ]; then
    :
  elif [ $st = 124 ] || [ $st = 137 ]; then
    problems+=("hung (killed after ${limit} s)")
  elif [ $st -gt 128 ]; then
    problems+=("killed by signal $((st - 128))")
  elif [ $st != "$status" ]; then
    problems+=("exit $st")
  fi
  # stderr: one error line naming the input, besides warnings (and mpirun's own lines).
  local errors
  errors=$(grep -v -e '^ptrain: warning:' "$T/stderr" | grep -v -e '^\s*$' || true)
  if [ "${#mpirun_cmd[@]}" -gt 0 ] && [ "$1" = "${mpirun_cmd[0]}" ] && [ $whole_stderr = 0 ]; then
    errors=$(grep -e '^ptrain: ' <<<"$errors" | sort -u || true)
  fi
  local lines
  lines=$(grep -c . <<<"$errors" || true)
  if [ "$status" = 0 ]; then
    [ "$lines" = 0 ] || problems+=("$lines lines on stderr")
  elif [ "$lines" != 1 ]; then
    problems+=("$lines lines on stderr")
  elif ! grep -q -e '^ptrain: error: ' <<<"$errors"; then
    problems+=("stderr is not 'ptrain: error: ...'")
  elif ! grep -q -F -e "$needle" <<<"$errors"; then
    problems+=("the error does not name '$needle'")
  fi
  # However long the input, an error is a line a person reads.
  if [ "$(wc -L <"$T/stderr")" -gt 4096 ]; then problems+=("a line of $(wc -L <"$T/stderr") characters on stderr"); fi
  for text in "${lacks[@]}"; do
    if grep -q -F -e "$text" "$T/stdout" "$T/stderr"; then problems+=("prints '$text'"); fi
  done
  for text in "${has[@]}"; do
    if ! grep -q -F -e "$text" "$T/stdout" "$T/stderr"; then problems+=("does not print '$text'"); fi
  done
  # Nothing written but the files the case allows, which must be whole.
  local allowed='^$'
  for f in "${writes[@]}"; do
    allowed="$allowed|^\./$f |^[0-9a-f]+  \./$f\$"
    if ! [ -f "$C/$f" ] || ! $py -c "import json,sys; json.load(open(sys.argv[1]))" "$C/$f" 2>/dev/null; then
      problems+=("$f not written whole")
    fi
  done
  for f in "${line_files[@]}"; do
    allowed="$allowed|^\./$f |^[0-9a-f]+  \./$f\$"
    if [ -s "$C/$f" ] && [ "$(tail -c 1 "$C/$f" | od -An -c | tr -d ' ')" != '\n' ]; then
      problems+=("$f ends in a torn line")
    fi
  done
  for d in "${dirs[@]}"; do
    allowed="$allowed|^\./$d(/[^/.][^/]*)* |^[0-9a-f]+  \./$d(/[^/.][^/]*)+\$"
    local odd
    odd=$(cd "$C" && find "$d" -mindepth 1 \( -name '.*' -o -name '*.partial' -o -name '*.tmp*' \) 2>/dev/null | head -3)
    [ -n "$odd" ] && problems+=("left in $d: $(tr '\n' ' ' <<<"$odd")")
  done
  if [ "$(grep -v -E "$allowed" <<<"$before")" != "$(grep -v -E "$allowed" <<<"$after")" ]; then
    problems+=("files changed: $(diff <(grep -v -E "$allowed" <<<"$before") <(grep -v -E "$allowed" <<<"$after") |
      grep '^[<>]' | head -3 | tr '\n' ' ')")
  fi
  local shown="$*"
  shown=${shown//"$ptrain"/ptrain}
  shown=${shown//"$fx"/F}
  shown=${shown//"$C"/.}
  shown=${shown//"$T"/T}
  local said
  said=$(head -c 300 <<<"$errors" | head -1)
  said=${said//"$fx"/F}
  said=${said//"$T"/T}
  local expected="exit $status, an error naming '$needle'"
  [ "$status" = 0 ] && expected="exit 0, no error"
  [ ${#writes[@]} -gt 0 ] && expected="$expected, ${writes[*]} written"
  local outcome
  kind_total[$kind]=$((${kind_total[$kind]:-0} + 1))
  if [ ${#problems[@]} = 0 ]; then
    passed=$((passed + 1))
    kind_passed[$kind]=$((${kind_passed[$kind]:-0} + 1))
    outcome="ok (exit $st, ${took} s): ${said#ptrain: error: }"
  else
    failed=$((failed + 1))
    local joined
    joined=$(printf '%s; ' "${problems[@]}")
    outcome="**FAIL**: ${joined%; } (${took} s); stderr: $(head -c 400 "$T/stderr" | tr '\n' ' ')"
    echo "FAIL $name: ${joined%; }" >&2
  fi
  rows+=("| $case_no | $kind | $(md_escape "$name") | \`$(md_escape "$shown")\` | $(md_escape "$expected") | $(md_escape "$outcome") |")
  cd "$T" && rm -rf "$C"
}

# A fresh copy of the good Fashion-MNIST files in ./d, its training images replaced by FILE (or made a FIFO...).
data_with_images() {
  mkdir d && cp "$fm"/* d/
  rm d/train-images-idx3-ubyte
  case $1 in
    fifo) mkfifo d/train-images-idx3-ubyte ;;
    device) ln -s /dev/zero d/train-images-idx3-ubyte ;;
    dir) mkdir d/train-images-idx3-ubyte ;;
    loop) ln -s loop2 d/train-images-idx3-ubyte && ln -s train-images-idx3-ubyte d/loop2 ;;
    dangling) ln -s nowhere d/train-images-idx3-ubyte ;;
    socket) $py -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" d/train-images-idx3-ubyte ;;
    *) cp "$fx/idx/$1" d/train-images-idx3-ubyte ;;
  esac
}

source "$here/bad_inputs_cases.sh"

# The table.
{
  echo "| # | kind | case | command | expected | outcome |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "| kind | cases | as expected |"
  echo "|---|---|---|"
  for kind in $(printf '%s\n' "${!kind_total[@]}" | sort); do
    echo "| $kind | ${kind_total[$kind]} | ${kind_passed[$kind]:-0} |"
  done
  echo
  echo "summary: $((passed + failed)) cases, $passed as expected, $failed failed"
} | tee ${out:+"$out"}
[ $failed = 0 ]
