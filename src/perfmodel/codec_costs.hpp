#pragma once
// A codec's CPU cost per gradient value, read from the CSV that `ptrain bench
// compress --csv` writes on the machine being modelled: the row of that codec
// whose size is nearest the model's (sizes differ in cache behaviour).
#include <string>

namespace ptrain {

struct CodecCost {
  double encode_s_per_value = 0;
  double decode_s_per_value = 0;
  double elements = 0;  // the size of the row it came from
};

// Throws ptrain::Error naming the file (as --codec-costs) when it cannot be
// read, is not that CSV, or has no row for the codec.
CodecCost load_codec_cost(const std::string& csv_path, const std::string& codec, double parameters);

}  // namespace ptrain
