#pragma once
// `ptrain bench compress`: how fast each gradient codec encodes and decodes
// one worker's gradient on one core, in GB/s of fp32 gradient, beside an exact
// top-k selection by std::nth_element at DGC's density (the cost that DGC's
// sampled threshold exists to avoid).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ptrain {

struct BenchCompressOptions {
  std::string sizes = "1M:64M";  // element counts
  std::string codecs = "all";    // fp16,int8,topk,dgc
  int iters = 5;
  int warmup = 1;
  std::string csv_path;
};

CLI::App* add_bench_compress_command(CLI::App& bench, BenchCompressOptions& options);
int run_bench_compress_command(BenchCompressOptions& options);

// "1M:64M" -> 2^20, 2^22, 2^24, 2^26 (x4 steps, then the end); "65536" or
// "1M" -> one count. Throws ptrain::Error naming the text when it is neither.
std::vector<size_t> parse_element_counts(const std::string& text);

}  // namespace ptrain
