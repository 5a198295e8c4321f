#!/usr/bin/env bash
# The front door: installs what is missing, builds, and runs what you ask for.
#   ./build.sh demo    build the ptrain program alone, then train the MLP on Fashion-MNIST with 4 in-process workers
#   ./build.sh test    build everything and run the whole test suite (also under sanitizers), fuzz each reader
#                      briefly, and run the commands of README.md and docs/
#   ./build.sh bench   the throughput benchmark against LibTorch and PyTorch DDP, and overlap on/off
#   ./build.sh build   just build everything (into build/)
# Each long step says what it does; a build prints its progress every 10%.
set -euo pipefail
cd "$(dirname "$0")"
what=${1:-build}
jobs=$(nproc)

# Each step says when it starts (minutes:seconds since build.sh began), so a log shows where the time went.
step() { printf 'build.sh: [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

if [ "$what" = demo ]; then
  step "checking the Debian packages the ptrain program needs (tools/setup-debian demo)"
  tools/setup-debian demo
else
  step "checking the Debian packages ptrain needs (tools/setup-debian)"
  tools/setup-debian
fi

# dir, [--target T], extra cmake args...: configure and build quietly, one
# progress line each time the build passes another tenth, its warnings (it is
# meant to have none) and, should it fail, its whole output.
configure_and_build() {
  local dir=$1 target=() log
  shift
  if [ "${1:-}" = --target ]; then target=(--target "$2"); shift 2; fi
  step "configuring $dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  step "building ${target[1]:-everything} in $dir with $jobs jobs"
  log=$(mktemp)
  # pipefail: the pipeline fails when the build does.
  if ! cmake --build "$dir" -j"$jobs" "${target[@]}" 2>&1 | tee "$log" | awk -v dir="$dir" '
      /^\[ *[0-9]+%\]/ { p = $0; sub(/^\[ */, "", p); sub(/%.*/, "", p); p += 0
                         if (p >= next_tenth) { printf "build.sh:   %s: %d%%\n", dir, p; fflush()
                                                next_tenth = int(p / 10) * 10 + 10 } }'; then
    cat "$log"
    rm -f "$log"
    echo "build.sh: the build in $dir failed" >&2
    return 1
  fi
  grep -A4 "warning:" "$log" || true
  rm -f "$log"
}

case "$what" in
  build)
    configure_and_build build ;;
  demo)
    configure_and_build build --target ptrain
    step "training: build/ptrain train --workers 4 --strategy hybrid --optimizer adam --epochs 3 --report demo-report.json"
    build/ptrain train --workers 4 --strategy hybrid --optimizer adam --epochs 3 --report demo-report.json ;;
  test)
    configure_and_build build
    step "running the test suite (ctest in build/)"
    (cd build && ctest --output-on-failure -j2 --timeout 900)
    # The torch-free suite again under AddressSanitizer+UBSan and ThreadSanitizer.
    configure_and_build build-asan -DPTRAIN_WITH_TORCH=OFF -DPTRAIN_SANITIZE=address,undefined
    step "running the LibTorch-free suite under AddressSanitizer and UBSan"
    (cd build-asan && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j2 --timeout 900)
    configure_and_build build-tsan -DPTRAIN_WITH_TORCH=OFF -DPTRAIN_SANITIZE=thread
    step "running the LibTorch-free suite under ThreadSanitizer"
    (cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j2 --timeout 900)
    # Each fuzz target (fuzz/) for a few seconds, built with clang into build-fuzz.
    step "fuzzing each reader for 5 s (tools/fuzz.sh)"
    tools/fuzz.sh 5
    # Every command block of README.md and docs/, as written (docs/testing.md).
    step "running the commands of README.md and docs/ (tools/doc_test.py)"
    /usr/bin/python3 tools/doc_test.py ;;
  bench)
    configure_and_build build
    bench/hybrid_vs_peers.sh build
    bench/overlap.sh build ;;
  *)
    echo "usage: ./build.sh [build|demo|test|bench]" >&2; exit 2 ;;
esac
