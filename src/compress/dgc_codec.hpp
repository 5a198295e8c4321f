#pragma once
// Deep Gradient Compression (Lin et al., ICLR 2018), every part switchable
// through DgcOptions:
//
//   (a) sparsification to a target density, with a threshold estimated from a
//       random sample of the elements (stratified: one element drawn from
//       each of `samples` equal slices; deterministic from the seed and step);
//   (b) local accumulation of everything not sent;
//   (c) momentum correction: u <- m u + g; v <- v + u; send sparse(v) (the
//       optimizer then runs plain SGD on the aggregate: applies_momentum());
//       without it v <- v + g;
//   (d) local gradient clipping by L2 norm before accumulating, to
//       clip_norm * N^(-1/2) for N workers;
//   (e) momentum factor masking: u and v are zeroed where sent (without it
//       only v is);
//   (f) warm-up: the density falls exponentially over the first epochs;
//   (g) 1-D tensors (CodecRange::one_dim) sent dense, outside the selection.
//
// Messages use the sparse wire format (sparse_format.hpp) with a fixed number
// of pairs per step: k = max(1, round(density * n)) for the n elements outside
// the dense spans, where density = dgc_density(config, step.epoch). Dense
// spans carry u (with momentum correction) or the clipped gradient: plain
// momentum SGD there, without masking or accumulation (nothing stays behind).
//
// The selection, once per step: the sample's j-th largest magnitude of the
// updated v, j = round(k * samples / n), is the threshold, and the elements
// at or above it are counted and collected. One pass over the data does it
// all: it updates u and v, reads the sampled elements' new |v| as it meets
// them, and collects every element at or above a lower bound of the
// threshold, which rises as more of the sample is known (the j-th largest of
// the sample's elements seen so far, and of every 16th one read before the
// pass); the candidates then filter down to the threshold's. A count in
// [0.8 k, 1.3 k] is kept (above k: the k largest of them; below: padded). Too
// many: the k largest of them. Too few: the threshold is lowered to a deeper
// quantile of the same sample and v is scanned again, at most 3 times, then
// an exact selection. Each of those counts as a refinement in stats().refinements.
// Zeros are never selected, except one element when nothing else is nonzero.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compress/codec.hpp"
#include "compress/sparse_format.hpp"
#include "core/fields.hpp"

namespace ptrain {

// Whether DGC's momentum correction runs: auto takes it on with a momentum
// optimizer (whose momentum it then applies) and off otherwise.
enum class Switch { Auto, On, Off };
template <>
struct EnumText<Switch> {
  static constexpr std::array<std::string_view, 3> names = {"auto", "on", "off"};
};

// What a DGC codec runs with, once the momentum correction is resolved.
struct DgcConfig {
  double density = 0.001;           // fraction of elements sent once warm-up is over
  double sample_fraction = 0.01;    // of the elements, to estimate the threshold
  size_t min_samples = 4096;        // ... but at least this many (or all)
  bool momentum_correction = true;  // (c) accumulate the velocity, not the gradient
  float momentum = 0.9f;            // m in u <- m u + g
  double clip_norm = 0.0;           // (d) local clipping by norm before accumulating; 0: off
  bool momentum_masking = true;     // (e) zero u and v where sent
  double warmup_epochs = 0;         // (f) W: density 25%, 6.25%, 1.5625%, 0.4%, then `density`
  bool dense_one_dim = true;        // (g) send 1-D tensors dense
  bool accumulation = true;         // (b) keep what is not sent; off only for the ablation
};


// The plan's DGC options.
struct DgcOptions {
  static constexpr std::string_view name = "dgc";
  static constexpr std::string_view summary = "Deep Gradient Compression (Lin et al. 2018), every part switchable";
  double density = 0.001;
  double sample = 0.01;
  size_t min_samples = 4096;
  Switch momentum_correction = Switch::Auto;
  double clip = 0.0;
  bool masking = true;
  double warmup = 0;
  bool dense_biases = true;
  bool accumulation = true;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("density", s.density, "fraction of the elements sent after warm-up", Range::fraction());
    visit("sample", s.sample, "fraction of the elements sampled to estimate the threshold", Range::fraction());
    visit("min_samples", s.min_samples, "... but at least this many", Range{});
    visit("momentum_correction", s.momentum_correction,
          "accumulate the velocity, not the gradient (auto: with the momentum optimizer, whose momentum it takes over)",
          Range{});
    visit("clip", s.clip, "local gradient clipping by norm, threshold x N^-1/2 (0: off)", Range::non_negative());
    visit("masking", s.masking, "momentum factor masking (zero u and v where sent)", Range{});
    visit("warmup", s.warmup, "warm-up epochs: density 25%, 6.25%, 1.5625%, 0.4%, then density",
          Range::between(0, 1e6));
    visit("dense_biases", s.dense_biases, "send 1-D tensors (biases) dense", Range{});
    visit("accumulation", s.accumulation, "accumulate locally what is not sent", Range{});
  }
  // The codec's configuration; `momentum` > 0: the optimizer's momentum, which
  // the correction then applies (0: no momentum optimizer).
  DgcConfig config(float momentum) const;
  std::unique_ptr<Codec> make(const CodecRange& range, uint64_t seed, float momentum) const;
  static constexpr bool sparse = true;  // all-gathered as (index, value) pairs
};

// (f) The density at `epoch` (epochs done, fractional): over the first W =
// config.warmup_epochs epochs, W/4 each at 25%, 6.25%, 1.5625% and 0.390625%
// (4^-1 .. 4^-4: the paper's 75%, 93.75%, 98.4375% and 99.6% sparsity), but
// never below config.density; from epoch W on, config.density.
double dgc_density(const DgcConfig& config, double epoch);

class DgcCodec : public Codec {
 public:
  DgcCodec(const DgcConfig& config, const CodecRange& range, uint64_t seed);

  std::string name() const override { return "dgc"; }
  void encode_into(std::span<const float> grad, const StepInfo& step, Encoded& e) override;
  void decode_add(const Encoded& e, std::span<float> out) const override;
  bool applies_momentum() const override { return config_.momentum_correction; }
  // (f) While the warm-up's density is above the target.
  bool warming_up(const StepInfo& step) const override {
    return dgc_density(config_, step.epoch) > config_.density;
  }

  // Pairs in every worker's message for `step`, and the message's size.
  size_t pairs(const StepInfo& step) const;
  size_t message_bytes(const StepInfo& step) const { return layout_.message_bytes(pairs(step)); }

  // The state between steps: u (empty without momentum correction) and v,
  // what has been accumulated and not sent.
  std::span<const float> momentum() const { return u_; }
  std::span<const float> velocity() const { return v_; }
  // Pairs of the last message that carry a selected element (the rest pad).
  size_t last_selected() const { return selected_.size(); }
  const SparseLayout& layout() const { return layout_; }

 protected:
  void save_own(StateWriter& out) const override {
    out.put("dgc.u", u_);
    out.put("dgc.v", v_);
  }
  void load_own(StateReader& in) override {
    in.take("dgc.u", std::span<float>(u_));
    in.take("dgc.v", std::span<float>(v_));
  }

 private:
  float clip_scale(std::span<const float> grad, int workers) const;
  void encode_dense(std::span<const float> grad, float scale, SparseMessageWriter& writer);
  // Updates u and v over the sparse spans and leaves the indices to send in selected_.
  void select(std::span<const float> grad, float scale, const StepInfo& step, size_t k);
  // u and v updated over the sparse spans, one pass. With rank > 0 also the
  // new keys of the sampled elements (sample_index_) into sample_key_, and
  // every element whose new |v| key reaches a lower bound of the sample's
  // rank-th largest key (at most `cap` of them) into cand_index_ / cand_key_.
  void update(std::span<const float> grad, float scale, size_t rank, size_t cap);
  // Counts the elements whose new |v| key is at least min_key (>= 1) and
  // collects up to `capacity` of their indices in candidates_: from what
  // update() collected where that holds them all, else from v.
  size_t collect(uint32_t min_key, size_t capacity);
  // Draws the step's sample positions (deterministic from the seed and step),
  // ascending, into sample_index_.
  void draw_sample(uint64_t step, size_t samples);
  void select_exact(size_t k);

  DgcConfig config_;
  SparseLayout layout_;
  uint64_t seed_;
  std::vector<float> u_, v_;
  // Scratch, reused every step.
  std::vector<size_t> sample_index_;
  std::vector<uint32_t> sample_key_;
  std::vector<uint32_t> candidates_;
  std::vector<uint32_t> selected_;
  std::vector<uint32_t> keys_;
  std::vector<uint32_t> cand_index_, cand_key_;  // what update() collected, ascending
  uint32_t last_bound_ = 0;                       // the highest bound it collected at
  bool candidates_overflow_ = true;               // ... or it did not collect them all
  std::vector<uint32_t> rank_heap_;
};

}  // namespace ptrain
