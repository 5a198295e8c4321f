#pragma once
// How the optimizer kernels reproduce torch's float roundings, and which
// compilation of them runs.
//
// torch's vectorised CPU kernels fuse some multiply-adds (add with alpha,
// addcmul: one rounding) and round others twice (a mul_ pass, then an add_
// pass). The kernels use std::fma at exactly the fused places and keep every
// other product in a statement of its own, compiled without contraction, so
// results match LibTorch's bit for bit and do not depend on the host.
//
// On x86-64 a build for the baseline ISA turns std::fma into a slow library
// call, so the hot loops are compiled a second time for AVX2+FMA and picked at
// run time; both compilations compute the same bits.

#include "core/cpu_features.hpp"  // cpu_has_avx2_fma(): which compilation runs

// Defined where that second, AVX2+FMA compilation exists.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTRAIN_OPTIM_AVX2_FMA_KERNELS 1
#endif

// Marks a kernel whose plain a * b + c must stay two roundings. g++ contracts
// them into FMAs by default, even in ISO C++ mode; clang only within one
// expression, which the kernels never write.
#if defined(__GNUC__) && !defined(__clang__)
#define PTRAIN_OPTIM_NO_CONTRACTION gnu::optimize("fp-contract=off")
#else
#define PTRAIN_OPTIM_NO_CONTRACTION
#endif

