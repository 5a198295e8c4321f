#pragma once
// fp16 compression: every float sent as an IEEE half (core/half.hpp), rounded
// to nearest even, half the bytes of fp32.
//
// Wire form: `count` halves, 2 bytes each, in memory order (little-endian on
// the hosts we run on). Because it is an array of halves the communicator can
// sum it as it is (Communicator::allreduce_half): summable_as_half() is true.
//
// A finite value beyond the half range (one whose nearest half is inf) is sent
// as +-65504 and counted in stats().saturated; inf and NaN go as they are.
#include <string_view>

#include "compress/codec.hpp"

namespace ptrain {

struct Fp16Options {
  static constexpr std::string_view name = "fp16";
  static constexpr std::string_view summary = "IEEE half precision, all-reduced as halves (each addition in fp32)";
  template <class Self, class Visit>
  static void fields(Self&, Visit&&) {}
  std::unique_ptr<Codec> make(const CodecRange& range, uint64_t seed, float momentum) const;
  double dense_bytes_per_value() const { return 2; }  // for the step-time model
  static constexpr bool summed_on_the_wire = true;   // as Fp16Codec::summable_as_half says
};

class Fp16Codec : public Codec {
 public:
  explicit Fp16Codec(const CodecRange& range);

  std::string name() const override { return "fp16"; }
  void encode_into(std::span<const float> grad, const StepInfo& step, Encoded& e) override;
  void decode_add(const Encoded& e, std::span<float> out) const override;
  bool summable_as_half() const override { return true; }

  // The wire form's size for `count` floats.
  static size_t encoded_size(size_t count) { return count * sizeof(uint16_t); }

 private:
  size_t count_;
};

}  // namespace ptrain
