#include "compress/dgc_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "compress/magnitude_select.hpp"
#include "core/error.hpp"
#include "core/prefetch.hpp"
#include "core/rng.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTRAIN_DGC_AVX2_KERNELS 1
#include <immintrin.h>
#endif

// u <- m u + g must round twice, as the optimizer's momentum does, whatever
// the build's flags: g++ would otherwise contract it into an FMA where the
// target has one (kernel_dispatch.hpp in optim/ explains the same for SGD).
#if defined(__GNUC__) && !defined(__clang__)
#define PTRAIN_DGC_NO_CONTRACTION gnu::optimize("fp-contract=off")
#else
#define PTRAIN_DGC_NO_CONTRACTION
#endif

namespace ptrain {

namespace {

// Re-estimates of the threshold after a count below 0.8 k, before an exact selection.
constexpr int kMaxRescans = 3;

size_t pairs_for(double density, size_t n) {
  if (n == 0) return 0;
  const auto k = static_cast<size_t>(std::llround(density * static_cast<double>(n)));
  return std::clamp<size_t>(k, 1, n);
}

// Everything the update of u and v needs, so that the kernels are free functions.
struct UpdateArgs {
  const float* g;
  float* u;
  float* v;
  float momentum;
  float scale;
};

// Element i's new v (stored with its u when kStore). The one place the
// arithmetic is written for the scalar code; the AVX2 kernel does the same
// operations in the same order.
template <bool kMomentum, bool kAccumulate, bool kStore>
[[gnu::always_inline]] inline float new_velocity(const UpdateArgs& a, size_t i) {
  const float scaled = a.g[i] * a.scale;
  float x = scaled;
  if constexpr (kMomentum) {
    const float decayed = a.momentum * a.u[i];
    x = decayed + scaled;
    if constexpr (kStore) a.u[i] = x;
  }
  float v = x;
  if constexpr (kAccumulate) v = a.v[i] + x;
  if constexpr (kStore) a.v[i] = v;
  return v;
}

// What the update collects: every element whose new |v| key is at least a
// lower bound of the threshold, with that key, in ascending order, so that
// the selection needs no second pass over v. Past `cap` entries it stops and
// says so (the selection then scans v).
struct Candidates {
  std::vector<uint32_t>& index;
  std::vector<uint32_t>& key;
  size_t cap;
  bool overflow = false;
  void push(size_t i, uint32_t k) {
    if (index.size() == cap) {
      overflow = true;
      return;
    }
    index.push_back(static_cast<uint32_t>(i));
    key.push_back(k);
  }
};

// u and v updated over [begin, end); with kCollect, the elements whose new
// key is at least min_key (>= 1) into `out`.
template <bool kMomentum, bool kAccumulate, bool kCollect>
[[PTRAIN_DGC_NO_CONTRACTION]] void update_portable(const UpdateArgs& a, size_t begin, size_t end, uint32_t min_key,
                                                   Candidates& out) {
  for (size_t i = begin; i < end; ++i) {
    const uint32_t key = magnitude_key(new_velocity<kMomentum, kAccumulate, true>(a, i));
    if constexpr (kCollect)
      if (key >= min_key) out.push(i, key);
  }
}

#if defined(PTRAIN_DGC_AVX2_KERNELS)
// One pass: load g, u, v; store u, v; compare the new |v| with the bound.
// At DGC's densities almost every block of 8 has nothing over it, so the
// elements are collected off the main path.
template <bool kMomentum, bool kAccumulate, bool kCollect>
[[gnu::target("avx2"), PTRAIN_DGC_NO_CONTRACTION]] void update_avx2(const UpdateArgs& a, size_t begin, size_t end,
                                                                    uint32_t min_key, Candidates& out) {
  const __m256 scale = _mm256_set1_ps(a.scale), momentum = _mm256_set1_ps(a.momentum);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i below = _mm256_set1_epi32(static_cast<int>(min_key) - 1);  // keys < 2^31: signed compare
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    if ((i - begin) % 16 == 0) {  // core/prefetch.hpp says why
      prefetch_ahead(a.g + i);
      prefetch_ahead<true>(a.v + i);
      if constexpr (kMomentum) prefetch_ahead<true>(a.u + i);
    }
    const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(a.g + i), scale);
    __m256 x = scaled;
    if constexpr (kMomentum) {
      const __m256 decayed = _mm256_mul_ps(momentum, _mm256_loadu_ps(a.u + i));
      x = _mm256_add_ps(decayed, scaled);
      _mm256_storeu_ps(a.u + i, x);
    }
    __m256 v = x;
    if constexpr (kAccumulate) v = _mm256_add_ps(_mm256_loadu_ps(a.v + i), x);
    _mm256_storeu_ps(a.v + i, v);
    if constexpr (kCollect) {
      const __m256i key = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
      auto bits = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, below))));
      while (bits != 0) {
        const size_t at = i + static_cast<size_t>(std::countr_zero(bits));
        out.push(at, magnitude_key(a.v[at]));
        bits &= bits - 1;
      }
    }
  }
  update_portable<kMomentum, kAccumulate, kCollect>(a, i, end, min_key, out);
}
#endif

template <bool kMomentum, bool kAccumulate, bool kCollect>
void update_dispatch(const UpdateArgs& a, size_t begin, size_t end, uint32_t min_key, Candidates& out) {
#if defined(PTRAIN_DGC_AVX2_KERNELS)
  if (sparse_kernels_use_avx2()) return update_avx2<kMomentum, kAccumulate, kCollect>(a, begin, end, min_key, out);
#endif
  update_portable<kMomentum, kAccumulate, kCollect>(a, begin, end, min_key, out);
}

template <bool kMomentum, bool kAccumulate>
[[PTRAIN_DGC_NO_CONTRACTION]] float peek_velocity(const UpdateArgs& a, size_t i) {
  return new_velocity<kMomentum, kAccumulate, false>(a, i);
}

// What `pick.template operator()<kMomentum, kAccumulate>()` gives for the
// codec's two switches: the kernels are compiled once for each pair.
template <class Pick>
auto for_switches(bool momentum, bool accumulate, Pick pick) {
  if (momentum && accumulate) return pick.template operator()<true, true>();
  if (momentum) return pick.template operator()<true, false>();
  if (accumulate) return pick.template operator()<false, true>();
  return pick.template operator()<false, false>();
}

}  // namespace

double dgc_density(const DgcConfig& config, double epoch) {
  const double w = config.warmup_epochs;
  if (!(w > 0) || !(epoch < w)) return config.density;
  const int stage = std::clamp(static_cast<int>(std::floor(4.0 * std::max(epoch, 0.0) / w)), 0, 3);
  return std::max(std::pow(0.25, stage + 1), config.density);
}

DgcConfig DgcOptions::config(float momentum) const {
  DgcConfig c;
  c.density = density;
  c.sample_fraction = sample;
  c.min_samples = min_samples;
  c.momentum_correction = momentum_correction != Switch::Off && momentum > 0;
  c.momentum = c.momentum_correction ? momentum : 0.9f;
  c.clip_norm = clip;
  c.momentum_masking = masking;
  c.warmup_epochs = warmup;
  c.dense_one_dim = dense_biases;
  c.accumulation = accumulation;
  return c;
}

std::unique_ptr<Codec> DgcOptions::make(const CodecRange& range, uint64_t seed, float momentum) const {
  return std::make_unique<DgcCodec>(config(momentum), range, seed);
}

DgcCodec::DgcCodec(const DgcConfig& config, const CodecRange& range, uint64_t seed)
    : config_(config),
      layout_("dgc", range.count, config.dense_one_dim ? range.one_dim : std::vector<IndexSpan>{}),
      seed_(seed) {
  if (!(config_.density > 0 && config_.density <= 1) || !(config_.sample_fraction > 0 && config_.sample_fraction <= 1) ||
      !(config_.momentum >= 0 && config_.momentum < 1) || !(config_.clip_norm >= 0) || !(config_.warmup_epochs >= 0))
    throw Error("dgc codec: an option is out of range (density and sample in (0, 1], momentum in [0, 1), clip and warmup >= 0)");
  if (config_.momentum_correction) u_.assign(range.count, 0.0f);
  v_.assign(range.count, 0.0f);
}

size_t DgcCodec::pairs(const StepInfo& step) const {
  return pairs_for(dgc_density(config_, step.epoch), layout_.sparse_count());
}

float DgcCodec::clip_scale(std::span<const float> grad, int workers) const {
  if (config_.clip_norm == 0) return 1.0f;
  if (workers < 1) throw Error(fmt::format("dgc: clipping for {} workers (at least 1)", workers));
  // Eight partial sums: a dependency chain of one would take 4 cycles an element.
  double partial[8] = {};
  const float* g = grad.data();
  size_t i = 0;
  for (; i + 8 <= grad.size(); i += 8)
    for (size_t j = 0; j < 8; ++j) partial[j] += static_cast<double>(g[i + j]) * g[i + j];
  for (; i < grad.size(); ++i) partial[0] += static_cast<double>(g[i]) * g[i];
  double sum = 0;
  for (const double p : partial) sum += p;
  const double norm = std::sqrt(sum);
  const double limit = config_.clip_norm / std::sqrt(static_cast<double>(workers));
  // A non-finite norm is left alone: the NaN or infinity travels on and is seen.
  if (!(norm > limit) || !std::isfinite(norm)) return 1.0f;
  return static_cast<float>(limit / norm);
}

void DgcCodec::encode_dense(std::span<const float> grad, float scale, SparseMessageWriter& writer) {
  UpdateArgs a{.g = grad.data(),
               .u = u_.data(),
               .v = v_.data(),
               .momentum = config_.momentum,
               .scale = scale};
  size_t slot = 0;
  for (const auto& [begin, end] : layout_.dense())
    for (size_t i = begin; i < end; ++i) {
      // Nothing stays behind in a dense span: v is only the value sent.
      const float sent =
          config_.momentum_correction ? peek_velocity<true, false>(a, i) : peek_velocity<false, false>(a, i);
      if (config_.momentum_correction) u_[i] = sent;
      writer.set_dense(slot++, sent);
    }
}

void DgcCodec::update(std::span<const float> grad, float scale, size_t rank, size_t cap) {
  const UpdateArgs a{
      .g = grad.data(), .u = u_.data(), .v = v_.data(), .momentum = config_.momentum, .scale = scale};
  const bool m = config_.momentum_correction, acc = config_.accumulation;
  cand_index_.clear();
  cand_key_.clear();
  Candidates out{.index = cand_index_, .key = cand_key_, .cap = cap};
  if (rank == 0) {
    const auto kernel = for_switches(m, acc, []<bool M, bool A>() { return &update_dispatch<M, A, false>; });
    for (const auto& [begin, end] : layout_.sparse()) kernel(a, begin, end, 0, out);
    candidates_overflow_ = true;
    return;
  }
  const auto kernel = for_switches(m, acc, []<bool M, bool A>() { return &update_dispatch<M, A, true>; });
  const auto peek = for_switches(m, acc, []<bool M, bool A>() { return &peek_velocity<M, A>; });
  // A first bound from a part of the sample, read before the pass (its keys
  // as they will be once v is updated): every stride-th element, enough of
  // them that the rank-th largest lies well inside.
  const size_t samples = sample_index_.size();
  const size_t stride = std::clamp<size_t>(samples / (16 * rank), 1, 16);
  uint32_t first_bound = 0;
  {
    RunningRank part(rank, keys_);
    for (size_t s = 0; s < samples; s += stride) {
      part.push(magnitude_key(peek(a, sample_index_[s])));
    }
    first_bound = part.value();
  }
  // Then, a slice at a time, the sample's elements met so far (read back
  // while in the first-level cache) raise it.
  RunningRank seen(rank, rank_heap_);
  constexpr size_t kSlice = 4096;
  size_t s = 0;
  for (const auto& [begin, end] : layout_.sparse())
    for (size_t from = begin; from < end; from += kSlice) {
      const size_t to = std::min(end, from + kSlice);
      last_bound_ = std::max({first_bound, seen.value(), 1u});
      kernel(a, from, to, last_bound_, out);
      for (; s < samples && sample_index_[s] < to; ++s) {
        sample_key_[s] = magnitude_key(v_[sample_index_[s]]);
        if (stride > 1) seen.push(sample_key_[s]);
      }
    }
  candidates_overflow_ = out.overflow;
}

size_t DgcCodec::collect(uint32_t min_key, size_t capacity) {
  candidates_.clear();
  // Every element at or above the last (highest) bound is among those the pass collected.
  if (candidates_overflow_ || min_key < last_bound_)
    return collect_at_least(v_, layout_.sparse(), min_key, capacity, candidates_);
  size_t count = 0;
  for (size_t c = 0; c < cand_index_.size(); ++c)
    if (cand_key_[c] >= min_key) {
      if (count < capacity) candidates_.push_back(cand_index_[c]);
      ++count;
    }
  return count;
}

void DgcCodec::draw_sample(uint64_t step, size_t samples) {
  // Stratified: the n sparse elements split into `samples` strata of equal
  // size (+-1), one element drawn uniformly from each. Every element is as
  // likely to be drawn as in a simple random sample, quantiles come out no
  // worse, and the positions ascend, so that update() meets them in order.
  const size_t n = layout_.sparse_count();
  const auto& spans = layout_.sparse();
  Rng rng(derive_seed(seed_, step));
  sample_index_.resize(samples);
  sample_key_.resize(samples);
  // Stratum s is [s n / samples, (s + 1) n / samples), its end found by
  // adding n / samples and carrying the remainder, without a division each.
  const size_t step_size = n / samples, step_rest = n % samples;
  size_t lo = 0, rest = 0;
  size_t span = 0, span_rank = 0;  // spans[span] holds sparse ranks [span_rank, span_rank + its size)
  for (size_t s = 0; s < samples; ++s) {
    size_t hi = lo + step_size;
    rest += step_rest;
    if (rest >= samples) rest -= samples, ++hi;
    const size_t rank = lo + rng.below(hi - lo);
    lo = hi;
    while (rank >= span_rank + (spans[span].second - spans[span].first)) {
      span_rank += spans[span].second - spans[span].first;
      ++span;
    }
    sample_index_[s] = spans[span].first + (rank - span_rank);
  }
}

void DgcCodec::select_exact(size_t k) {
  const MagnitudeCut cut = exact_magnitude_cut(v_, layout_.sparse(), k, true);
  selected_.clear();
  if (cut.selected == 0) {
    // Nothing nonzero: still send one element, so that no selection is empty.
    selected_.push_back(static_cast<uint32_t>(layout_.sparse().front().first));
    return;
  }
  append_cut_indices(v_, layout_.sparse(), cut, selected_);
}

void DgcCodec::select(std::span<const float> grad, float scale, const StepInfo& step, size_t k) {
  const size_t n = layout_.sparse_count();
  sample_index_.clear();
  if (k >= n) {  // density 100%: everything goes
    update(grad, scale, 0, 0);
    selected_.clear();
    for (const auto& [begin, end] : layout_.sparse())
      for (size_t i = begin; i < end; ++i) selected_.push_back(static_cast<uint32_t>(i));
    return;
  }
  const size_t samples = std::max<size_t>(
      config_.min_samples, static_cast<size_t>(std::ceil(config_.sample_fraction * static_cast<double>(n))));
  if (samples >= n) {  // the sample would be everything: select exactly
    update(grad, scale, 0, 0);
    select_exact(k);
    return;
  }

  // The sample's j-th largest, for j / samples = k / n.
  size_t j = std::clamp<size_t>(
      static_cast<size_t>(
          std::llround(static_cast<double>(k) * static_cast<double>(samples) / static_cast<double>(n))),
      1, samples);
  // Room for more than 1.3 k, so that a moderate overshoot needs no second pass.
  const size_t capacity = 2 * k + 16;
  // One pass over the data updates u and v, reads the sample's new keys on
  // the way and collects the elements above a rising bound of its j-th largest.
  draw_sample(step.step, samples);
  update(grad, scale, j, 8 * capacity);
  auto sample_at = [&](size_t rank) { return kth_largest_key(sample_key_, rank, keys_); };
  uint32_t threshold = std::max(sample_at(j), 1u);  // zeros are never candidates
  candidates_.reserve(capacity);
  size_t count = collect(threshold, capacity);
  for (int rescan = 0;; ++rescan) {
    if (10 * count > 13 * k) {  // too many: the k largest of them
      ++stats_.refinements;
      if (count <= capacity)
        select_largest(v_, candidates_, k, keys_, selected_);
      else
        select_exact(k);  // they were not all kept: the same k, found from v
      return;
    }
    if (5 * count >= 4 * k) {  // within [0.8 k, 1.3 k]
      if (count > k)
        select_largest(v_, candidates_, k, keys_, selected_);
      else
        selected_.swap(candidates_);
      return;
    }
    if (rescan == kMaxRescans) break;
    // Too few: a deeper quantile of the same sample, aiming a little above k.
    ++stats_.refinements;
    const double wanted = 1.15 * static_cast<double>(j) * static_cast<double>(k) /
                          static_cast<double>(std::max<size_t>(count, 1));
    j = std::clamp<size_t>(static_cast<size_t>(std::ceil(wanted)), j + 1, samples);
    uint32_t lower = sample_at(j);
    if (lower >= threshold) {
      // Ties at the threshold: the largest sampled key below it.
      bool found = false;
      lower = 0;
      for (const uint32_t key : sample_key_) {
        if (key < threshold && key >= lower) {
          lower = key;
          found = true;
        }
      }
      if (!found) break;
    }
    lower = std::max(lower, 1u);
    if (lower >= threshold) break;
    threshold = lower;
    count = collect(threshold, capacity);
  }
  ++stats_.refinements;
  select_exact(k);
}

void DgcCodec::encode_into(std::span<const float> grad, const StepInfo& step, Encoded& e) {
  if (grad.size() != layout_.count())
    throw Error(
        fmt::format("dgc: a gradient of {} elements for a range of {}", grad.size(), layout_.count()));
  const size_t k = pairs(step);
  const float scale = clip_scale(grad, step.workers);
  SparseMessageWriter writer(e, layout_, k);
  encode_dense(grad, scale, writer);
  selected_.clear();
  if (k > 0) select(grad, scale, step, k);
  const bool mask = config_.momentum_masking && config_.momentum_correction;
  for (size_t slot = 0; slot < selected_.size(); ++slot) {
    const uint32_t i = selected_[slot];
    writer.set_pair(slot, i, v_[i]);
    v_[i] = 0.0f;
    if (mask) u_[i] = 0.0f;
  }
  stats_.dense_bytes += sizeof(float) * grad.size();
  stats_.encoded_bytes += e.bytes.size();
  stats_.selected += selected_.size() + layout_.dense_count();
}

void DgcCodec::decode_add(const Encoded& e, std::span<float> out) const {
  sparse_decode_add(e, layout_, out, "dgc");
}

}  // namespace ptrain
