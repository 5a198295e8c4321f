#!/usr/bin/env bash
# The installed package as an outside project sees it: `cmake --install` the
# build tree into a temporary prefix, then configure, build and run
# examples/softmax_run against that prefix alone, with find_package(ptrain)
# from a project that declares C++ alone (and again with C too), and with
# pkg-config, then examples/residual_cnn.
#   installed_package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
test -f "$scratch/prefix/lib/cmake/ptrain/ptrainConfig.cmake"
test -f "$scratch/prefix/include/ptrain/run/run.hpp"
test -f "$scratch/prefix/lib/pkgconfig/ptrain.pc"
# The example must not see the source tree: copy it out.
cp -r "$source/examples/softmax_run" "$scratch/example"
cmake -S "$scratch/example" -B "$scratch/example-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/example-build" -j2 >/dev/null
if grep -q "$source/src" "$scratch/example-build/compile_commands.json" 2>/dev/null; then
  echo "the example was compiled against the source tree, not the installed headers" >&2
  exit 1
fi
"$scratch/example-build/softmax_run"
# The examples declare C++ alone; a project that enables C as well finds
# MPI's C component instead, and builds the same.
cp -r "$source/examples/softmax_run" "$scratch/example-c"
sed -i 's/LANGUAGES CXX)/LANGUAGES C CXX)/' "$scratch/example-c/CMakeLists.txt"
grep -q "LANGUAGES C CXX)" "$scratch/example-c/CMakeLists.txt"
cmake -S "$scratch/example-c" -B "$scratch/example-c-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/example-c-build" -j2 >/dev/null
"$scratch/example-c-build/softmax_run" >/dev/null
# And through pkg-config, without CMake.
export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
g++ -std=c++20 -O1 "$scratch/example/softmax_run.cpp" $(pkg-config --cflags --libs --static ptrain) \
  -o "$scratch/softmax_run"
"$scratch/softmax_run"
# examples/residual_cnn: a module of its own (a residual CNN) trained with
# hybrid + DGC on 4 workers, against the installed package (needs the data).
if [ -d /usr/share/datasets/fashion-mnist ]; then
  cp -r "$source/examples/residual_cnn" "$scratch/residual_cnn"
  cmake -S "$scratch/residual_cnn" -B "$scratch/residual_cnn-build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
  cmake --build "$scratch/residual_cnn-build" -j2 >/dev/null
  if grep -q "$source/src" "$scratch/residual_cnn-build/compile_commands.json"; then
    echo "residual_cnn was compiled against the source tree, not the installed headers" >&2
    exit 1
  fi
  "$scratch/residual_cnn-build/residual_cnn" --steps 150
fi
