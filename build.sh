#!/usr/bin/env bash
# The front door: installs what is missing, builds, and runs what you ask for.
#   ./build.sh demo    train the MLP on Fashion-MNIST with 4 in-process workers
#   ./build.sh test    build and run the whole test suite (also under sanitizers), and fuzz each reader briefly
#   ./build.sh bench   the throughput benchmark against LibTorch and PyTorch DDP, and overlap on/off
#   ./build.sh build   just build (into build/)
set -euo pipefail
cd "$(dirname "$0")"
what=${1:-build}
jobs=$(nproc)

tools/setup-debian

configure_and_build() {  # dir, extra cmake args...
  local dir=$1 log
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  log=$(mktemp)
  if ! cmake --build "$dir" -j"$jobs" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    echo "build.sh: the build in $dir failed" >&2
    return 1
  fi
  grep -A4 "warning:" "$log" || true  # the build is meant to be warning-free: show any
  rm -f "$log"
}

case "$what" in
  build)
    configure_and_build build ;;
  demo)
    configure_and_build build
    build/ptrain train --workers 4 --strategy hybrid --optimizer adam --epochs 3 --report demo-report.json ;;
  test)
    configure_and_build build
    (cd build && ctest --output-on-failure -j2 --timeout 900)
    # The torch-free suite again under AddressSanitizer+UBSan and ThreadSanitizer.
    configure_and_build build-asan -DPTRAIN_WITH_TORCH=OFF -DPTRAIN_SANITIZE=address,undefined
    (cd build-asan && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j2 --timeout 900)
    configure_and_build build-tsan -DPTRAIN_WITH_TORCH=OFF -DPTRAIN_SANITIZE=thread
    (cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j2 --timeout 900)
    # Each fuzz target (fuzz/) for a few seconds, built with clang into build-fuzz.
    tools/fuzz.sh 5 ;;
  bench)
    configure_and_build build
    bench/hybrid_vs_peers.sh build
    bench/overlap.sh build ;;
  *)
    echo "usage: ./build.sh [build|demo|test|bench]" >&2; exit 2 ;;
esac
