// Where a pipeline cuts the layers: the balanced cut minimises the costliest
// stage (checked against every cut of small models), and a user's boundaries
// are taken as given or refused saying what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/error.hpp"
#include "sync/pipeline_split.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

double costliest(const std::vector<double>& costs, const std::vector<size_t>& cut) {
  double worst = 0;
  for (size_t s = 0; s + 1 < cut.size(); ++s) {
    double c = 0;
    for (size_t l = cut[s]; l < cut[s + 1]; ++l) c += costs[l];
    worst = std::max(worst, c);
  }
  return worst;
}

// The least costliest stage over every cut, by enumeration.
double best_by_enumeration(const std::vector<double>& costs, size_t stages) {
  double best = 1e300;
  std::vector<size_t> cut{0};
  std::function<void(size_t)> place = [&](size_t from) {
    if (cut.size() == stages) {
      cut.push_back(costs.size());
      best = std::min(best, costliest(costs, cut));
      cut.pop_back();
      return;
    }
    for (size_t b = from + 1; b + (stages - cut.size()) <= costs.size(); ++b) {
      cut.push_back(b);
      place(b);
      cut.pop_back();
    }
  };
  place(0);
  return best;
}

TEST(PipelineSplit, BalancedCutIsTheBestOfEveryCut) {
  const std::vector<std::vector<double>> models = {
      {100480, 8256, 650}, {416, 12832, 200832, 1290}, {1, 1, 1, 1, 1, 1, 1}, {5, 1, 1, 1, 9, 2, 2, 7}, {3, 0, 0, 3}};
  for (const auto& costs : models)
    for (size_t stages = 1; stages <= costs.size(); ++stages) {
      const auto cut = balanced_cut(costs, stages);
      ASSERT_EQ(cut.size(), stages + 1);
      EXPECT_EQ(cut.front(), 0u);
      EXPECT_EQ(cut.back(), costs.size());
      for (size_t s = 0; s < stages; ++s) EXPECT_LT(cut[s], cut[s + 1]) << "every stage holds a layer";
      EXPECT_EQ(costliest(costs, cut), best_by_enumeration(costs, stages));
    }
  EXPECT_EQ(balanced_cut({1, 1, 1, 1}, 2), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(balanced_cut({1, 1, 1}, 2), (std::vector<size_t>{0, 2, 3})) << "ties go to the earlier stages";
}

// Under a memory limit only the cuts whose every stage fits count: the best
// of them, checked against every cut, or none.
TEST(PipelineSplit, BalancedCutKeepsEveryStageWithinWhatFits) {
  const std::vector<double> costs{4, 1, 1, 4};
  const auto sum = [&](size_t first, size_t end) {
    double c = 0;
    for (size_t l = first; l < end; ++l) c += costs[l];
    return c;
  };
  EXPECT_EQ(balanced_cut(costs, 2), (std::vector<size_t>{0, 2, 4}));
  // A first stage that may hold a cost of 4 at most (as 1F1B's first stage holds the most activations).
  const StageFits small_first = [&](size_t stage, size_t first, size_t end) { return stage > 0 || sum(first, end) <= 4; };
  EXPECT_EQ(balanced_cut(costs, 2, small_first), (std::vector<size_t>{0, 1, 4}));
  EXPECT_EQ(balanced_cut(costs, 3, small_first), (std::vector<size_t>{0, 1, 3, 4}));
  EXPECT_TRUE(balanced_cut(costs, 2, [](size_t, size_t first, size_t end) { return end - first <= 1; }).empty());
  // Every stage within 6: five stages can be, four cannot.
  const std::vector<double> model{5, 1, 1, 1, 6, 2, 2, 5};
  const StageFits within = [&](size_t, size_t first, size_t end) {
    double c = 0;
    for (size_t l = first; l < end; ++l) c += model[l];
    return c <= 6;
  };
  const auto cut = balanced_cut(model, 5, within);
  EXPECT_EQ(cut, (std::vector<size_t>{0, 2, 4, 5, 7, 8}));
  for (size_t s = 0; s < 5; ++s) EXPECT_TRUE(within(s, cut[s], cut[s + 1])) << s;
  EXPECT_TRUE(balanced_cut(model, 4, within).empty()) << "5+1, 1+1, 6, 2+2 leave the last 5 no stage";
}

TEST(PipelineSplit, GivenBoundariesAreTakenOrRefused) {
  EXPECT_EQ(cut_at({1, 3}, 4, 3), (std::vector<size_t>{0, 1, 3, 4}));
  EXPECT_EQ(cut_at({}, 4, 1), (std::vector<size_t>{0, 4}));
  EXPECT_NE(test::error_message([] { cut_at({2}, 4, 3); }).find("1 boundaries make 2 stages, not 3"),
            std::string::npos);
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{0, 2}, {2, 2}, {3, 1}, {1, 4}, {-1, 2}})
    EXPECT_NE(test::error_message([&] { cut_at(bad, 4, 3); }).find("each must be a layer index from 1 to 3, increasing"),
              std::string::npos);
}

}  // namespace
}  // namespace ptrain
