#pragma once
// Where each named tensor of a model lives inside its flat parameter buffer.
// The gradient buffer has the same layout, so one offset serves both.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptrain {

struct FlatSegment {
  std::string name;            // e.g. "layers.0.weight"
  std::vector<int64_t> shape;  // the tensor's shape
  size_t offset = 0;           // first element in the flat buffer
  size_t numel = 0;            // number of elements
};

class FlatLayout {
 public:
  // Appends a tensor after the last one and returns its segment.
  const FlatSegment& add(std::string name, std::vector<int64_t> shape);

  const std::vector<FlatSegment>& segments() const { return segments_; }
  size_t total() const { return total_; }

 private:
  std::vector<FlatSegment> segments_;
  size_t total_ = 0;
};

}  // namespace ptrain
