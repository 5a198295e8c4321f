#!/usr/bin/env bash
# tools/netcluster end to end: up 3 shaped hosts, status, MPI across them (one
# rank in each namespace, 20 launches back to back, an all-reduce checked for
# its sum, a short training run that names its transport: TCP on the cluster's
# interface, the all-reduces over Gloo's by default, a pipeline's messages
# over MPI's; ranks left unbound on the shared cores; an all-reduce and
# training with worker threads over Gloo's transport named), down, and a
# failed up that leaves nothing behind. Skipped (CTest exit 77, with the
# reason) where there is no root or no network namespaces.
#   tests/tools/netcluster_test.sh PTRAIN_EXECUTABLE
set -euo pipefail
ptrain=${1:?usage: netcluster_test.sh PTRAIN_EXECUTABLE}
netcluster=$(cd "$(dirname "$0")/../.." && pwd)/tools/netcluster
name=ct$(( $$ % 10000 ))

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }
leftovers() { { ip netns list | grep -E "^$name-h" || true; ip -br link | grep -E "^$name-" || true; } | wc -l; }

[ "$(id -u)" -eq 0 ] || skip "tools/netcluster needs root"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 (ip, tc) is not installed"
ip netns add "$name-probe" 2>/dev/null || skip "network namespaces are not available here"
ip netns del "$name-probe"
trap '"$netcluster" down --name "$name" >/dev/null 2>&1 || true' EXIT
# `netcluster run` under a limit: a launch that hangs fails the test, naming it.
run_on_cluster() {
  local rc=0 out
  out=$(timeout -k 10 120 "$netcluster" run "$@") || rc=$?
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "netcluster run $* did not finish in 120 s"
  printf '%s\n' "$out"
  return "$rc"
}

"$netcluster" up 3 --name "$name" --rate 1gbit
status=$("$netcluster" status --name "$name")
echo "$status"
[ "$(grep -c "^  $name-h" <<<"$status")" -eq 3 ] || fail "status does not list 3 hosts"
[ "$(grep -c "rate 1Gbit" <<<"$status")" -eq 3 ] || fail "status does not show 3 links at 1 Gbit/s"

# The hosts share this machine's cores: mpirun binds no rank (each host's
# daemon would bind its rank to the same first core).
mine=$(grep Cpus_allowed_list /proc/self/status)
bound=$(run_on_cluster 2 --name "$name" -- sh -c 'grep Cpus_allowed_list /proc/self/status' | sort -u)
[ "$bound" = "$mine" ] || fail "ranks on the cluster may use '$bound', this machine '$mine'"

# Each rank runs in its own namespace: three different cluster addresses.
addresses=$(run_on_cluster 3 --name "$name" -- sh -c 'ip -4 -o addr show dev eth0' | awk '{print $4}' | sort -u)
[ "$(wc -l <<<"$addresses")" -eq 3 ] || fail "expected 3 ranks on 3 hosts, saw: $addresses"

# each: one process a host, without MPI, told its rank, the size and host 0's address.
out=$("$netcluster" each 3 --name "$name" -- sh -c \
  'echo "$NETCLUSTER_RANK $NETCLUSTER_SIZE $NETCLUSTER_MASTER $(ip -4 -o addr show dev eth0 | awk "{print \$4}")"' | sort)
echo "$out"
[ "$(awk '{print $1, $2}' <<<"$out" | tr '\n' ' ')" = "0 3 1 3 2 3 " ] || fail "each: expected ranks 0..2 of 3, saw: $out"
[ "$(awk '{print $4}' <<<"$out" | sort -u | wc -l)" -eq 3 ] || fail "each: expected 3 hosts, saw: $out"
[ "$(awk '$1 == 0 {print $3 "/24"}' <<<"$out")" = "$(awk '$1 == 0 {print $4}' <<<"$out")" ] ||
  fail "each: NETCLUSTER_MASTER is not host 0's address: $out"
# A rank that fails ends the job with its status at once; the others do not wait for it.
start=$SECONDS
rc=0
"$netcluster" each 3 --name "$name" -- sh -c '[ "$NETCLUSTER_RANK" != 1 ] || exit 5; exec sleep 120' || rc=$?
[ "$rc" -eq 5 ] || fail "each: a rank that exits 5 gave status $rc"
[ $((SECONDS - start)) -lt 60 ] || fail "each: waited for the other ranks after one failed"

# Launches back to back: two hosts' MPI daemons start at once on one machine
# (the same hostname, one kernel). They used to collide about once in 10
# launches (a crash in the shared topology segment, or a race for one session
# directory), and mpirun then waited for ever for the daemon.
for i in $(seq 20); do
  out=$(run_on_cluster 2 --name "$name" -- sh -c 'ip -4 -o addr show dev eth0' 2>&1) ||
    fail "launch $i of 20 on 2 hosts failed: $out"
  [ "$(grep -c "inet " <<<"$out")" -eq 2 ] || fail "launch $i of 20 on 2 hosts: expected 2 ranks, saw: $out"
done

out=$(run_on_cluster 3 --name "$name" -- "$ptrain" bench allreduce --algo ring --sizes 1MiB)
echo "$out"
grep -qE "ring +1MiB .* ok +[0-9.]+$" <<<"$out" || fail "the all-reduce across the cluster did not check out"
default_bench=$out

# Gloo's transport across the hosts, on the interface MPI was given (a build without Gloo says so).
have_gloo=0
if out=$(run_on_cluster 3 --name "$name" -- "$ptrain" bench allreduce --transport gloo --algo native --sizes 1MiB 2>&1)
then
  have_gloo=1
  echo "$out"
  grep -q "all-reduces over gloo's TCP transport on interface eth0 (OpenMPI's btl_tcp_if_include)" <<<"$out" ||
    fail "the gloo all-reduce does not name its interface: $out"
  grep -qE "native +1MiB .* ok +[0-9.]+$" <<<"$out" || fail "the gloo all-reduce across the cluster did not check out"
  # Without --transport the bench measures what training across hosts takes: Gloo's.
  grep -q "all-reduces over gloo's TCP transport" <<<"$default_bench" ||
    fail "bench allreduce across hosts does not take training's transport (gloo) by default: $default_bench"
elif ! grep -q "built without Gloo" <<<"$out"; then
  fail "the gloo all-reduce across the cluster failed: $out"
fi

# Training across the hosts names the transport the cluster set: TCP on eth0 only.
if [ -d /usr/share/datasets/fashion-mnist ]; then
  out=$(run_on_cluster 3 --name "$name" -- "$ptrain" train --model softmax --train-samples 960 --epochs 1 \
    --max-steps 5 --batch 16 2>&1)
  grep -q "several hosts: the MPI transport you set (btl=tcp,self, btl_tcp_if_include=eth0)" <<<"$out" ||
    fail "training across the cluster does not name its transport: $out"
  ! grep -q "warning" <<<"$out" || fail "training across the cluster warned: $out"
  # Ranks on several hosts: the default transport (auto) is Gloo's, where the build has it.
  if [ "$have_gloo" = 1 ]; then
    grep -q "all-reduces over gloo's TCP transport on interface eth0" <<<"$out" ||
      fail "training across hosts did not pick gloo's transport by default: $out"
  fi
  # A pipeline's stages wait for each message: auto gives it MPI's transport across hosts too.
  out=$(run_on_cluster 2 --name "$name" -- "$ptrain" train --strategy pipeline --model mlp --hidden 32 \
    --train-samples 960 --epochs 1 --max-steps 5 --batch 16 --microbatches 2 2>&1) ||
    fail "a pipeline across the cluster failed: $out"
  ! grep -q "over gloo" <<<"$out" || fail "a pipeline across hosts took gloo's transport by default: $out"
  if out=$(run_on_cluster 2 --name "$name" -- "$ptrain" train --model softmax --train-samples 960 --epochs 1 \
    --max-steps 5 --batch 16 --transport gloo --local-workers 2 --allreduce hierarchical 2>&1); then
    grep -q "all-reduces over gloo's TCP transport on interface eth0" <<<"$out" ||
      fail "training over gloo does not name its transport: $out"
  elif ! grep -q "built without Gloo" <<<"$out"; then
    fail "training over gloo across the cluster failed: $out"
  fi
fi

"$netcluster" down --name "$name"
[ "$(leftovers)" -eq 0 ] || fail "down left namespaces or links behind"

if "$netcluster" up 2 --name "$name" --rate 0bit 2>/dev/null; then fail "up with rate 0 succeeded"; fi
[ "$(leftovers)" -eq 0 ] || fail "a failed up left namespaces or links behind"
echo "PASSED"
