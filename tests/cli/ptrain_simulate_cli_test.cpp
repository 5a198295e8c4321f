// `ptrain simulate` as a user meets it: a table, its CSV, a calibration from a
// run report, and one-line errors.
#include <gtest/gtest.h>

#include <fstream>

#include "run_ptrain.hpp"

namespace ptrain {
namespace {

using test::Outcome;
using test::run_ptrain;

TEST(PtrainSimulateCli, TabulatesWorkersAndExchangesIntoCsv) {
  test::ScratchDir dir;
  const Outcome o = run_ptrain("simulate --parameters 1e6 --compute-per-sample 1 --batch 32 --workers 1,4,1024 "
                               "--bandwidth 1,10 --exchange ring,allgather --latency 0 --csv " + dir.file("s.csv"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("at 1 Gbit/s"), std::string::npos) << o.out;
  // 2 M / m = 1,000 workers: the sparse all-gather is the slower exchange at 1,024.
  EXPECT_NE(o.out.find("slower than dense ring all-reduce: from 1024 workers on"), std::string::npos) << o.out;
  std::ifstream csv(dir.file("s.csv"));
  std::string line;
  size_t rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 1u + 2 * 3 * 2);  // header, 2 bandwidths x 3 worker counts x 2 exchanges
}

// The exchange_ms column of the one row a CSV holds.
std::string exchange_ms(const std::string& csv_path) {
  std::ifstream csv(csv_path);
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  for (int column = 0; column < 5; ++column) row = row.substr(row.find(',') + 1);
  return row.substr(0, row.find(','));
}

// A pull codec shrinks the pulls the shard's link carries: 4 workers' pushes
// (4e6 bytes each) and pulls (4e6 dense, 2e6 as fp16) over one 1 Gbit/s link.
TEST(PtrainSimulateCli, APullCodecShrinksTheParameterServersPulls) {
  test::ScratchDir dir;
  const std::string args = "simulate --parameters 1e6 --compute-per-sample 1 --batch 32 --workers 4 --bandwidth 1 "
                           "--exchange ps --latency 0 --csv " + dir.file("s.csv");
  ASSERT_EQ(run_ptrain(args).exit_code, 0);
  EXPECT_EQ(exchange_ms(dir.file("s.csv")), "256.000000");
  const Outcome fp16 = run_ptrain(args + " --pull-codec fp16");
  ASSERT_EQ(fp16.exit_code, 0) << fp16.err;
  EXPECT_EQ(exchange_ms(dir.file("s.csv")), "192.000000");
}

TEST(PtrainSimulateCli, CalibratesFromARunReport) {
  test::ScratchDir dir;
  std::ofstream(dir.file("run.json")) << R"({"run": {"parameters": 1000000, "workers": 4}, "plan": {"run": {"batch": 32}},
                                             "summary": {"mean_step_ms": 80.3}})";
  const Outcome o = run_ptrain("simulate --calibrate " + dir.file("run.json") + " --calibrate-bandwidth 1 --workers 4 "
                               "--bandwidth 1 --exchange ring");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("1.0000 ms of compute per sample"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("80.30 / "), std::string::npos) << o.out;  // the calibrated model gives the measured step back
}

TEST(PtrainSimulateCli, AddsTheCodecsMeasuredCpuTime) {
  test::ScratchDir dir;
  const std::string costs = dir.file("compress.csv");
  std::ofstream(costs) << "codec,elements,encode_seconds,encode_gbps,decode_seconds,decode_gbps,wire_bytes,dense_bytes\n"
                          "dgc,1000000,0.002,2,0.001,4,8000,4000000\n";
  // 1e6 values: 32 ms compute, 3 x 64 us exchange, encode 2 ms + 4 x 1 ms decode, x 2 ranks a core = 44.192 ms.
  const Outcome o = run_ptrain("simulate --parameters 1e6 --compute-per-sample 1 --batch 32 --workers 4 --bandwidth 1 "
                               "--latency 0 --exchange allgather --codec-costs " + costs + " --cores-per-rank 0.5");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("allgather codec dgc: encode 2.000 ns, decode 1.000 ns a value"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("44.19 / "), std::string::npos) << o.out;
}

TEST(PtrainSimulateCli, ImpossibleOptionsAreOneLineErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"simulate --parameters 0", "--parameters must be > 0"},
      {"simulate --exchange tree", "--exchange: unknown exchange 'tree'"},
      {"simulate --codec zip", "--codec: unknown codec 'zip'"},
      {"simulate --bandwidth 0", "--bandwidth must be > 0"},
      {"simulate --workers 0,4", "--workers: Value 0 not in range 1 to 1048576"},
      {"simulate --density 0", "--density must be in (0, 1]"},
      {"simulate --calibrate /no/such/run.json", "--calibrate /no/such/run.json: no such file"},
      {"simulate --exchange allgather --codec-costs /no/such.csv", "--codec-costs /no/such.csv: no such file"},
      {"simulate --cores-per-rank 0", "--cores-per-rank must be > 0"},
      {"simulate --sparse-codec zip", "--sparse-codec"},
      {"simulate --pull-codec zip", "--pull-codec: unknown pull codec 'zip'"},
  };
  test::expect_one_line_errors(cases);
}

}  // namespace
}  // namespace ptrain
