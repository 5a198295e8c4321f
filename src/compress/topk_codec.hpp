#pragma once
// Top-k sparsification: each step sends the k = max(1, round(ratio * count))
// largest magnitudes, exactly, as (index, value) pairs (sparse_format.hpp).
// With error feedback the codec keeps what it did not send in a residual and
// adds it to the next gradient: residual += grad; send top-k(residual); the
// sent elements leave the residual, so sent + residual = accumulated, exactly.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compress/codec.hpp"
#include "core/fields.hpp"
#include "compress/sparse_format.hpp"

namespace ptrain {

struct TopkOptions {
  static constexpr std::string_view name = "topk";
  static constexpr std::string_view summary = "the k largest magnitudes, with error feedback";
  double ratio = 0.01;          // fraction of the elements sent
  bool error_feedback = true;   // keep what is not sent in a residual for later steps
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("ratio", s.ratio, "fraction of the elements sent", Range::fraction());
    visit("error_feedback", s.error_feedback, "keep what is not sent in a residual for later steps", Range{});
  }
  std::unique_ptr<Codec> make(const CodecRange& range, uint64_t seed, float momentum) const;
  static constexpr bool sparse = true;  // all-gathered as (index, value) pairs
};

class TopkCodec : public Codec {
 public:
  TopkCodec(const TopkOptions& options, const CodecRange& range);

  std::string name() const override { return "topk"; }
  void encode_into(std::span<const float> grad, const StepInfo& step, Encoded& e) override;
  void decode_add(const Encoded& e, std::span<float> out) const override;

  // Pairs in every message (the same on every worker and step).
  size_t k() const { return k_; }
  size_t message_bytes() const { return layout_.message_bytes(k_); }
  // What has not been sent yet (empty without error feedback).
  std::span<const float> residual() const { return residual_; }

 protected:
  void save_own(StateWriter& out) const override { out.put("topk.residual", residual_); }
  void load_own(StateReader& in) override { in.take("topk.residual", std::span<float>(residual_)); }

 private:
  SparseLayout layout_;
  size_t k_;
  bool error_feedback_;
  std::vector<float> residual_;
  std::vector<uint32_t> selected_;  // reused every step
};

}  // namespace ptrain
