#include "perfmodel/codec_costs.hpp"

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace ptrain {

namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  return fields;
}

double positive_number(const std::string& text, const std::string& where) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value > 0) || !std::isfinite(value))
    throw Error(fmt::format("{}: '{}' is not a positive number", where, text));
  return value;
}

}  // namespace

CodecCost load_codec_cost(const std::string& path, const std::string& codec, double parameters) {
  const std::string flag = "--codec-costs " + path;
  std::istringstream in(read_input_file(path, size_t{64} << 20, "a CSV file", flag));
  std::string line;
  std::getline(in, line);
  const auto header = split_fields(line);
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    throw Error(fmt::format("{}: no '{}' column (expected the CSV of ptrain bench compress --csv)", flag, name));
  };
  const size_t codec_col = column("codec"), elements_col = column("elements"),
               encode_col = column("encode_seconds"), decode_col = column("decode_seconds");
  CodecCost best;
  double best_distance = INFINITY;
  for (size_t number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const auto fields = split_fields(line);
    if (fields.size() != header.size())
      throw Error(fmt::format("{}: line {} has {} fields, the header {}", flag, number, fields.size(), header.size()));
    if (fields[codec_col] != codec) continue;
    const std::string where = fmt::format("{}: line {}", flag, number);
    const double elements = positive_number(fields[elements_col], where);
    const double distance = std::abs(std::log(elements / parameters));
    if (distance >= best_distance) continue;
    best_distance = distance;
    best = {positive_number(fields[encode_col], where) / elements,
            positive_number(fields[decode_col], where) / elements, elements};
  }
  if (!(best.elements > 0)) throw Error(fmt::format("{}: no row for codec '{}'", flag, codec));
  return best;
}

}  // namespace ptrain
