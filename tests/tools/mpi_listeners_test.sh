#!/usr/bin/env bash
# Nothing listens where nobody asked: `mpirun -np 2 ptrain train` on one host,
# and while it trains, the TCP sockets its ranks listen on (each rank's socket
# inodes from /proc/PID/fd, matched in /proc/PID/net/tcp and tcp6). Fails if
# a rank listens on any address but loopback, or does not say which transport
# it uses. Then the user's setting wins: with OMPI_MCA_btl naming tcp the
# ranks listen on every address again (which shows the check sees them), and
# say that the transport is the user's. mpirun's own listeners are printed:
# OpenMPI 4.1's out-of-band channel binds every address (docs/security.md).
# Skipped (CTest exit 77) without mpirun or Fashion-MNIST.
#   tests/tools/mpi_listeners_test.sh PTRAIN_EXECUTABLE
set -euo pipefail
ptrain=${1:?usage: mpi_listeners_test.sh PTRAIN_EXECUTABLE}

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }

command -v mpirun >/dev/null || skip "no mpirun"
[ -d /usr/share/datasets/fashion-mnist ] || skip "Fashion-MNIST not installed (Debian: dataset-fashion-mnist)"

work=$(mktemp -d)
mpirun_pid=
trap '[ -z "$mpirun_pid" ] || kill "$mpirun_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

# The processes whose parent is $1.
# Pure bash (no process per entry): a scan that forks lets a short run end
# before it is done.
children() {
  local stat line state ppid pid
  for stat in /proc/[0-9]*/stat; do
    read -r line <"$stat" 2>/dev/null || continue
    # Fields after the command name (which may hold spaces): state, ppid, ...
    read -r state ppid _ <<<"${line##*) }"
    pid=${stat#/proc/}
    [ "$ppid" = "$1" ] && echo "${pid%/stat}"
  done
  return 0
}

listening() {
  local pid=$1 inodes
  inodes=$(for fd in /proc/"$pid"/fd/*; do readlink "$fd" 2>/dev/null || true; done |
    sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | tr '\n' ' ')
  [ -n "$inodes" ] || return 0
  awk -v inodes=" $inodes" 'FNR > 1 && $4 == "0A" && index(inodes, " " $10 " ") {
      split($2, a, ":"); print a[1], a[2] }' /proc/"$pid"/net/tcp /proc/"$pid"/net/tcp6 2>/dev/null || true
}

# 127.0.0.0/8, ::1, and ::ffff:127.x.y.z; in /proc each 32-bit word is little-endian.
loopback() {
  local a=$1
  case ${#a} in
    8) [ "${a:6:2}" = 7F ] ;;
    32) [ "$a" = 00000000000000000000000001000000 ] || { [ "${a:0:24}" = 0000000000000000FFFF0000 ] && [ "${a:30:2}" = 7F ]; } ;;
    *) return 1 ;;
  esac
}

# Runs mpirun -np 2 ptrain train with the environment assignments given;
# once every rank is past MPI_Init (rank 0 printed its world line) reads the
# ranks' listening sockets into $work/ranks and mpirun's into $work/mpirun.
run_and_watch() {
  : >"$work/ranks"
  : >"$work/mpirun"
  : >"$work/log"  # there before the loop below reads it
  env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$@" \
    mpirun -np 2 "$ptrain" train --train-samples 8192 --epochs 3 --batch 16 >"$work/log" 2>&1 &
  mpirun_pid=$!
  while kill -0 "$mpirun_pid" 2>/dev/null && ! grep -q "mpi backend" "$work/log"; do sleep 0.05; done
  local ranks rank
  ranks=$(children "$mpirun_pid")
  [ "$(wc -w <<<"$ranks")" -eq 2 ] || fail "expected 2 ranks under mpirun, found '$ranks': $(cat "$work/log")"
  for rank in $ranks; do listening "$rank" >>"$work/ranks"; done
  listening "$mpirun_pid" >>"$work/mpirun"
  # Both ranks still there after the read: their sockets were read while they trained.
  for rank in $ranks; do [ -d "/proc/$rank" ] || fail "a rank ended before its sockets were read"; done
  wait "$mpirun_pid" || fail "the run failed: $(cat "$work/log")"
  mpirun_pid=
}

# ADDRESS:PORT as people write them.
readable() {
  local a=$1 port=$((16#$2))
  if [ ${#a} -eq 8 ]; then
    echo "$((16#${a:6:2})).$((16#${a:4:2})).$((16#${a:2:2})).$((16#${a:0:2})):$port"
  elif [ "$a" = 00000000000000000000000000000000 ]; then
    echo "[::]:$port"
  elif [ "$a" = 00000000000000000000000001000000 ]; then
    echo "[::1]:$port"
  else
    echo "[$a]:$port"
  fi
}

all() { local address port; while read -r address port; do readable "$address" "$port"; done <"$1"; }
not_loopback() {
  local address port
  while read -r address port; do loopback "$address" || readable "$address" "$port"; done <"$1"
}

run_and_watch
grep "mpi backend" "$work/log"
echo "mpirun itself listens on: $(all "$work/mpirun" | tr '\n' ' ')"
open=$(not_loopback "$work/ranks" | tr '\n' ' ')
[ -z "$open" ] || fail "a rank listens beyond loopback: $open"
grep -q "one host: shared memory only" "$work/log" || fail "the run does not say which transport it uses"

# The user's setting wins, and the check sees what the TCP transport opens.
run_and_watch OMPI_MCA_btl=self,vader,tcp
grep -q "the MPI transport you set (btl=self,vader,tcp)" "$work/log" || fail "the user's transport is not named"
[ -n "$(not_loopback "$work/ranks")" ] || fail "with btl tcp given, no rank was seen listening: the check sees nothing"
echo "with btl tcp given, the ranks listen on: $(all "$work/ranks" | tr '\n' ' ')"
echo "PASSED"
