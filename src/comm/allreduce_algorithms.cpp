#include "comm/allreduce_algorithms.hpp"

#include <algorithm>
#include <vector>

#include "comm/message_tags.hpp"
#include "core/error.hpp"
#include "core/half.hpp"

namespace ptrain {

namespace {

// The algorithms are written once over an element type and its addition:
// floats add in fp32; IEEE halves add in fp32 and round back to half,
// saturating (core/half.hpp).
struct FloatSum {
  using Element = float;
  static void add_into(std::span<float> target, std::span<const float> addend) {
    for (size_t i = 0; i < target.size(); ++i) target[i] += addend[i];
  }
};
struct HalfSum {
  using Element = uint16_t;
  static void add_into(std::span<uint16_t> target, std::span<const uint16_t> addend) {
    add_halves(target, addend);
  }
};

// Each algorithm's message tag, per element type: a half all-reduce's messages
// are named as such in errors and never pair with a float all-reduce's.
struct Tags {
  int ring, halving_doubling, tree;
};
template <typename Sum>
constexpr Tags kTags = {kTagRingAllreduce, kTagHalvingDoubling, kTagTree};
template <>
constexpr Tags kTags<HalfSum> = {kTagRingAllreduceHalf, kTagHalvingDoublingHalf, kTagTreeHalf};

template <typename T>
std::span<const std::byte> bytes_of(std::span<const T> s) {
  return std::as_bytes(s);
}
template <typename T>
std::span<std::byte> bytes_of(std::span<T> s) {
  return std::as_writable_bytes(s);
}

// Segment i of n nearly equal parts of [0, count).
struct Range {
  size_t begin, end;
  size_t size() const { return end - begin; }
};
Range segment(size_t count, size_t i, size_t n) { return {count * i / n, count * (i + 1) / n}; }

size_t chunks_in(size_t elements, size_t chunk) {
  return std::max<size_t>(1, (elements + chunk - 1) / chunk);
}

// Sends `out` to `to` while receiving `in.size()` elements from `from`, both
// in chunks of at most `chunk` elements, and adds what arrives into `in` (Add)
// or stores it there (Copy). A peer of -1 means no send, or no receive. Each
// direction's chunk count depends only on its own size, so sender and
// receiver always agree on it.
enum class Arrival { Add, Copy };
// (Sum::Element is named in full in the parameters: not deduced, so spans convert.)
template <typename Sum>
void exchange(Communicator& comm, int to, std::span<const typename Sum::Element> out, int from,
              std::span<typename Sum::Element> in, Arrival arrival, int tag,
              std::vector<typename Sum::Element>& scratch,
              size_t chunk = kAllreduceChunkBytes / sizeof(typename Sum::Element)) {
  using T = typename Sum::Element;
  const size_t sends = to >= 0 ? chunks_in(out.size(), chunk) : 0;
  const size_t receives = from >= 0 ? chunks_in(in.size(), chunk) : 0;
  for (size_t j = 0; j < std::max(sends, receives); ++j) {
    std::span<const T> o;
    std::span<T> i, target;
    if (j < sends) o = out.subspan(j * chunk, std::min(chunk, out.size() - std::min(out.size(), j * chunk)));
    if (j < receives) {
      i = in.subspan(j * chunk, std::min(chunk, in.size() - std::min(in.size(), j * chunk)));
      target = i;
      if (arrival == Arrival::Add) {
        scratch.resize(std::max(scratch.size(), i.size()));
        target = std::span<T>(scratch.data(), i.size());
      }
    }
    if (j < sends && j < receives)
      comm.sendrecv(to, bytes_of(o), from, bytes_of(target), tag);
    else if (j < sends)
      comm.send(to, tag, bytes_of(o));
    else
      comm.recv(from, tag, bytes_of(target));
    if (j < receives && arrival == Arrival::Add) Sum::add_into(i, target);
  }
}

template <typename Sum>
void ring(Communicator& comm, std::span<typename Sum::Element> data, size_t chunk) {
  using T = typename Sum::Element;
  const auto n = static_cast<size_t>(comm.size());
  const auto r = static_cast<size_t>(comm.rank());
  if (n == 1) return;
  chunk = std::max<size_t>(chunk, 1);
  const int tag = kTags<Sum>.ring;
  const int right = static_cast<int>((r + 1) % n), left = static_cast<int>((r + n - 1) % n);
  std::vector<T> scratch;
  auto part = [&](Range range) { return data.subspan(range.begin, range.size()); };
  // Reduce-scatter: after step k, segment (r - k - 1) holds k + 2 workers' sum here.
  for (size_t k = 0; k + 1 < n; ++k)
    exchange<Sum>(comm, right, part(segment(data.size(), (r + n - k) % n, n)), left,
                  part(segment(data.size(), (r + 2 * n - k - 1) % n, n)), Arrival::Add, tag, scratch, chunk);
  // All-gather: worker r now holds the final segment r + 1; pass the finished ones on.
  for (size_t k = 0; k + 1 < n; ++k)
    exchange<Sum>(comm, right, part(segment(data.size(), (r + 1 + n - k) % n, n)), left,
                  part(segment(data.size(), (r + n - k) % n, n)), Arrival::Copy, tag, scratch, chunk);
}

template <typename Sum>
void halving_doubling(Communicator& comm, std::span<typename Sum::Element> data) {
  using T = typename Sum::Element;
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const int extra = n - p2;
  std::vector<T> scratch;
  const int tag = kTags<Sum>.halving_doubling;
  // Fold: of each of the first `extra` pairs, the even worker hands its data to the odd one.
  int nr;  // rank among the p2 workers that take part in the butterfly
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      exchange<Sum>(comm, r + 1, data, -1, {}, Arrival::Copy, tag, scratch);
      exchange<Sum>(comm, -1, {}, r + 1, data, Arrival::Copy, tag, scratch);
      return;
    }
    exchange<Sum>(comm, -1, {}, r - 1, data, Arrival::Add, tag, scratch);
    nr = r / 2;
  } else {
    nr = r - extra;
  }
  auto real_rank = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  auto part = [&](Range range) { return data.subspan(range.begin, range.size()); };
  // Recursive halving: keep one half, send the other, add the partner's copy of the kept half.
  struct Level {
    Range whole;
    bool kept_low;
  };
  std::vector<Level> levels;
  Range mine{0, data.size()};
  for (int mask = p2 / 2; mask >= 1; mask /= 2) {
    const int partner = real_rank(nr ^ mask);
    const size_t mid = mine.begin + mine.size() / 2;
    const Range low{mine.begin, mid}, high{mid, mine.end};
    const Range keep = (nr & mask) == 0 ? low : high, give = (nr & mask) == 0 ? high : low;
    exchange<Sum>(comm, partner, part(give), partner, part(keep), Arrival::Add, tag, scratch);
    levels.push_back({mine, (nr & mask) == 0});
    mine = keep;
  }
  // Recursive doubling: swap finished halves back up.
  for (int mask = 1; mask < p2; mask *= 2) {
    const int partner = real_rank(nr ^ mask);
    const Level level = levels.back();
    levels.pop_back();
    const Range whole = level.whole;
    const Range other = level.kept_low ? Range{mine.end, whole.end} : Range{whole.begin, mine.begin};
    exchange<Sum>(comm, partner, part(mine), partner, part(other), Arrival::Copy, tag, scratch);
    mine = whole;
  }
  if (r < 2 * extra) exchange<Sum>(comm, r - 1, data, -1, {}, Arrival::Copy, tag, scratch);
}

template <typename Sum>
void tree(Communicator& comm, std::span<typename Sum::Element> data) {
  using T = typename Sum::Element;
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  const int tag = kTags<Sum>.tree;
  std::vector<T> scratch;
  for (int mask = 1; mask < n; mask <<= 1) {
    if (r & mask) {
      exchange<Sum>(comm, r - mask, data, -1, {}, Arrival::Copy, tag, scratch);
      break;
    }
    if (r + mask < n) exchange<Sum>(comm, -1, {}, r + mask, data, Arrival::Add, tag, scratch);
  }
  int mask = 1;
  while (mask < n) {
    if (r & mask) {
      exchange<Sum>(comm, -1, {}, r - mask, data, Arrival::Copy, tag, scratch);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (r + mask < n) exchange<Sum>(comm, r + mask, data, -1, {}, Arrival::Copy, tag, scratch);
}

template <typename Sum>
void run_algorithm(Communicator& comm, std::span<typename Sum::Element> data, AllreduceAlgorithm algorithm,
                   const char* what) {
  using T = typename Sum::Element;
  switch (algorithm) {
    case AllreduceAlgorithm::Native:
      throw Error(std::string(what) + ": native is each backend's own");
    case AllreduceAlgorithm::Ring:
    case AllreduceAlgorithm::Hierarchical:  // one worker per process: only the level between processes
      return ring<Sum>(comm, data, kAllreduceChunkBytes / sizeof(T));
    case AllreduceAlgorithm::HalvingDoubling:
      return halving_doubling<Sum>(comm, data);
    case AllreduceAlgorithm::Tree:
      return tree<Sum>(comm, data);
  }
}

}  // namespace

void ring_allreduce(Communicator& comm, std::span<float> data, size_t chunk_floats) {
  ring<FloatSum>(comm, data, chunk_floats);
}
void halving_doubling_allreduce(Communicator& comm, std::span<float> data) {
  halving_doubling<FloatSum>(comm, data);
}
void tree_allreduce(Communicator& comm, std::span<float> data) { tree<FloatSum>(comm, data); }

void ring_allreduce_half(Communicator& comm, std::span<uint16_t> data, size_t chunk_halves) {
  ring<HalfSum>(comm, data, chunk_halves);
}
void halving_doubling_allreduce_half(Communicator& comm, std::span<uint16_t> data) {
  halving_doubling<HalfSum>(comm, data);
}
void tree_allreduce_half(Communicator& comm, std::span<uint16_t> data) { tree<HalfSum>(comm, data); }

void allreduce_with(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm) {
  comm.allreduce(data, algorithm);
}

void run_allreduce_algorithm(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm) {
  run_algorithm<FloatSum>(comm, data, algorithm, "run_allreduce_algorithm");
}

void allreduce_half_with(Communicator& comm, std::span<uint16_t> data, AllreduceAlgorithm algorithm) {
  comm.allreduce_half(data, algorithm);
}

void run_allreduce_half_algorithm(Communicator& comm, std::span<uint16_t> data,
                                  AllreduceAlgorithm algorithm) {
  run_algorithm<HalfSum>(comm, data, algorithm, "run_allreduce_half_algorithm");
}

}  // namespace ptrain
