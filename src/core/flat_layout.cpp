#include "core/flat_layout.hpp"

#include "core/error.hpp"

namespace ptrain {

const FlatSegment& FlatLayout::add(std::string name, std::vector<int64_t> shape) {
  size_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("flat layout: tensor '" + name + "' has a negative dimension");
    numel *= static_cast<size_t>(d);
  }
  segments_.push_back(FlatSegment{std::move(name), std::move(shape), total_, numel});
  total_ += numel;
  return segments_.back();
}

}  // namespace ptrain
