# Sourced by the benches that run on tools/netcluster's shaped hosts.
# `twice LOG LABEL COMMAND...`: COMMAND under $run_limit seconds, its output in
# LOG; if it fails, its leftovers (MPI daemons in the hosts of $netcluster) are
# killed and it runs once more before the bench gives up, so that one failed
# launch does not cost a long bench. (The launch hang that made this necessary,
# two hosts' daemons colliding on one machine, is fixed in tools/netcluster.)
twice() {
  local log=$1 label=$2 attempt
  shift 2
  for attempt in 1 2; do
    timeout -k 10 "$run_limit" "$@" > "$log" 2>&1 && return 0
    pkill -9 -f "orted .*plm_rsh_agent $netcluster" 2>/dev/null || true
    echo "$(basename "$0" .sh): $label failed (attempt $attempt):" >&2
    tail -5 "$log" >&2
  done
  exit 1
}
