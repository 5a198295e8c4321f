#include "core/state_stream.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ptrain {
namespace {

std::vector<std::byte> sample_state() {
  StateWriter w;
  w.put_value("step", uint64_t{42});
  w.put("params", std::vector<float>{1.5f, -2.0f, 3.25f});
  w.put_text("optimizer", "adam");
  w.put("empty", std::vector<float>{});
  return w.take();
}

TEST(StateStream, RoundTripsEveryRecordInOrder) {
  const auto bytes = sample_state();
  StateReader in(bytes, "state");
  EXPECT_EQ(in.take_value<uint64_t>("step"), 42u);
  std::vector<float> params(3);
  in.take("params", std::span<float>(params));
  EXPECT_EQ(params, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(in.take_text("optimizer"), "adam");
  EXPECT_TRUE(in.take_vector<float>("empty").empty());
  in.expect_end();
}

TEST(StateStream, NamesTheRecordThatDiffers) {
  const auto bytes = sample_state();
  {
    StateReader in(bytes, "ckpt");
    EXPECT_EQ(test::error_message([&] { in.take_value<uint64_t>("steps"); }),
              "ckpt: expected record 'steps', found 'step'");
  }
  {
    StateReader in(bytes, "ckpt");
    in.take_value<uint64_t>("step");
    std::vector<float> params(4);
    EXPECT_EQ(test::error_message([&] { in.take("params", std::span<float>(params)); }),
              "ckpt: record 'params' holds 12 bytes, this run needs 16 (another model or settings?)");
  }
  {
    StateReader in(bytes, "ckpt");
    in.take_value<uint64_t>("step");
    EXPECT_NE(test::error_message([&] { in.expect_end(); }).find("bytes after the last record"), std::string::npos);
  }
}

// Found by fuzz/checkpoint_fuzz: a damaged record name went into the error
// as it was, so a newline in it split the one-line message.
TEST(StateStream, ShowsADamagedRecordNameEscapedOnOneLine) {
  StateWriter w;
  std::string name = "epoch\nlosses\x01";
  name.append(60, 'x');  // (operator+ of two temporaries: a false -Warray-bounds of GCC 12 at -O1)
  w.put_value(name, uint64_t{1});
  const auto bytes = w.take();
  StateReader in(bytes, "ckpt");
  EXPECT_EQ(
      test::error_message([&] { in.take_value<uint64_t>("epoch.losses"); }),
      "ckpt: expected record 'epoch.losses', found 'epoch\\x0alosses\\x01" + std::string(27, 'x') + "...'");
}

TEST(StateStream, EveryTruncationIsAnErrorNotAnOverread) {
  const auto bytes = sample_state();
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    StateReader in(std::span<const std::byte>(bytes).first(cut), "cut");
    const std::string message = test::error_message([&] {
      in.take_value<uint64_t>("step");
      std::vector<float> params(3);
      in.take("params", std::span<float>(params));
      in.take_text("optimizer");
      in.take_vector<float>("empty");
    });
    EXPECT_EQ(message.rfind("cut: ", 0), 0u) << cut << ": " << message;
  }
}

}  // namespace
}  // namespace ptrain
