// Field values from text: what the plan's flags and files go through.
#include "core/fields.hpp"

#include <gtest/gtest.h>

#include "core/registry.hpp"

namespace ptrain {
namespace {

TEST(Fields, TextIsParsedStrictly) {
  size_t u = 7;
  EXPECT_EQ(field_from_text(u, "-1").value_or(""), "must not be negative, got '-1'");
  EXPECT_EQ(u, 7u);  // unchanged on failure
  EXPECT_TRUE(field_from_text(u, "99999999999999999999").has_value());
  EXPECT_TRUE(field_from_text(u, "12abc").has_value());
  EXPECT_FALSE(field_from_text(u, "42"));
  EXPECT_EQ(u, 42u);
  int i = 0;
  EXPECT_TRUE(field_from_text(i, "3000000000").has_value());
  EXPECT_FALSE(field_from_text(i, "-3"));
  EXPECT_EQ(i, -3);
  double d = 0;
  EXPECT_TRUE(field_from_text(d, "1e999").has_value());
  EXPECT_TRUE(field_from_text(d, "").has_value());
  EXPECT_FALSE(field_from_text(d, "nan"));  // parsed; ranges refuse it
  EXPECT_FALSE(Range::positive().contains(d));
  float f = 0;
  EXPECT_TRUE(field_from_text(f, "1e300").has_value());
  bool b = false;
  EXPECT_FALSE(field_from_text(b, "true"));
  EXPECT_TRUE(b);
  EXPECT_TRUE(field_from_text(b, "yes please").has_value());
  ByteSize s;
  EXPECT_FALSE(field_from_text(s, "25MiB"));
  EXPECT_EQ(s.bytes, size_t{25} << 20);
  EXPECT_FALSE(field_from_text(s, "0")) << "zero is a size; a field's range says whether it takes it";
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_TRUE(field_from_text(s, "-4KiB").has_value());
  std::vector<int64_t> widths;
  EXPECT_FALSE(field_from_text(widths, "256,128"));
  EXPECT_EQ(widths, (std::vector<int64_t>{256, 128}));
  EXPECT_TRUE(field_from_text(widths, "256,,128").has_value());
  EXPECT_TRUE(field_from_text(widths, "0").has_value());
}

TEST(Fields, RangesSayWhatTheyRequire) {
  EXPECT_EQ(Range::positive().requirement(), "must be > 0");
  EXPECT_EQ(Range::at_least(1).requirement(), "must be at least 1");
  EXPECT_EQ(Range::fraction().requirement(), "must be in (0, 1]");
  EXPECT_EQ(Range::unit_interval().requirement(), "must be in [0, 1)");
  EXPECT_TRUE(Range::fraction().contains(1));
  EXPECT_FALSE(Range::fraction().contains(0));
  EXPECT_FALSE(Range::unit_interval().contains(1));
  EXPECT_FALSE(Range::non_negative().contains(std::numeric_limits<double>::infinity()));  // never infinite
  EXPECT_FALSE(Range::at_least(1).contains(-std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(Range::non_negative().contains(1e300));
  EXPECT_FALSE(Range::between(0, 10).contains(std::numeric_limits<double>::infinity()));
}

TEST(Registry, SuggestsTheClosestNameForATypo) {
  constexpr std::array<std::string_view, 3> names = {"hybrid", "sequential", "async"};
  EXPECT_EQ(closest_name("hybird", names).value_or(""), "hybrid");
  EXPECT_EQ(closest_name("sequental", names).value_or(""), "sequential");
  EXPECT_FALSE(closest_name("gossip", names));
}

}  // namespace
}  // namespace ptrain
