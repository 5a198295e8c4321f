#include "comm/allreduce_algorithms.hpp"

#include <algorithm>
#include <vector>

#include "comm/message_tags.hpp"
#include "core/error.hpp"

namespace ptrain {

namespace {

std::span<const std::byte> bytes_of(std::span<const float> s) { return std::as_bytes(s); }
std::span<std::byte> bytes_of(std::span<float> s) { return std::as_writable_bytes(s); }

void add_into(std::span<float> target, std::span<const float> addend) {
  for (size_t i = 0; i < target.size(); ++i) target[i] += addend[i];
}

// Segment i of n nearly equal parts of [0, count).
struct Range {
  size_t begin, end;
  size_t size() const { return end - begin; }
};
Range segment(size_t count, size_t i, size_t n) { return {count * i / n, count * (i + 1) / n}; }

size_t chunks_in(size_t floats, size_t chunk) { return std::max<size_t>(1, (floats + chunk - 1) / chunk); }

// Large messages go in chunks: the receive buffer stays small and cache-hot,
// and each chunk's addition overlaps the next chunk's transfer.
constexpr size_t kChunkFloats = size_t{1} << 18;  // 1 MiB

// Sends `out` to `to` while receiving `in.size()` floats from `from`, both in
// chunks of at most `chunk` floats, and adds what arrives into `in` (Add) or
// stores it there (Copy). A peer of -1 means no send, or no receive. Each
// direction's chunk count depends only on its own size, so sender and
// receiver always agree on it.
enum class Arrival { Add, Copy };
void exchange(Communicator& comm, int to, std::span<const float> out, int from, std::span<float> in,
              Arrival arrival, int tag, std::vector<float>& scratch, size_t chunk = kChunkFloats) {
  const size_t sends = to >= 0 ? chunks_in(out.size(), chunk) : 0;
  const size_t receives = from >= 0 ? chunks_in(in.size(), chunk) : 0;
  for (size_t j = 0; j < std::max(sends, receives); ++j) {
    std::span<const float> o;
    std::span<float> i, target;
    if (j < sends) o = out.subspan(j * chunk, std::min(chunk, out.size() - std::min(out.size(), j * chunk)));
    if (j < receives) {
      i = in.subspan(j * chunk, std::min(chunk, in.size() - std::min(in.size(), j * chunk)));
      target = i;
      if (arrival == Arrival::Add) {
        scratch.resize(std::max(scratch.size(), i.size()));
        target = std::span<float>(scratch.data(), i.size());
      }
    }
    if (j < sends && j < receives)
      comm.sendrecv(to, bytes_of(o), from, bytes_of(target), tag);
    else if (j < sends)
      comm.send(to, tag, bytes_of(o));
    else
      comm.recv(from, tag, bytes_of(target));
    if (j < receives && arrival == Arrival::Add) add_into(i, target);
  }
}

}  // namespace

void ring_allreduce(Communicator& comm, std::span<float> data, size_t chunk_floats) {
  const auto n = static_cast<size_t>(comm.size());
  const auto r = static_cast<size_t>(comm.rank());
  if (n == 1) return;
  chunk_floats = std::max<size_t>(chunk_floats, 1);
  const int right = static_cast<int>((r + 1) % n), left = static_cast<int>((r + n - 1) % n);
  std::vector<float> scratch;
  auto part = [&](Range range) { return data.subspan(range.begin, range.size()); };
  // Reduce-scatter: after step k, segment (r - k - 1) holds k + 2 workers' sum here.
  for (size_t k = 0; k + 1 < n; ++k)
    exchange(comm, right, part(segment(data.size(), (r + n - k) % n, n)), left,
             part(segment(data.size(), (r + 2 * n - k - 1) % n, n)), Arrival::Add, kTagRingAllreduce, scratch,
             chunk_floats);
  // All-gather: worker r now holds the final segment r + 1; pass the finished ones on.
  for (size_t k = 0; k + 1 < n; ++k)
    exchange(comm, right, part(segment(data.size(), (r + 1 + n - k) % n, n)), left,
             part(segment(data.size(), (r + n - k) % n, n)), Arrival::Copy, kTagRingAllreduce, scratch,
             chunk_floats);
}

void halving_doubling_allreduce(Communicator& comm, std::span<float> data) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const int extra = n - p2;
  std::vector<float> scratch;
  const int tag = kTagHalvingDoubling;
  // Fold: of each of the first `extra` pairs, the even worker hands its data to the odd one.
  int nr;  // rank among the p2 workers that take part in the butterfly
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      exchange(comm, r + 1, data, -1, {}, Arrival::Copy, tag, scratch);
      exchange(comm, -1, {}, r + 1, data, Arrival::Copy, tag, scratch);
      return;
    }
    exchange(comm, -1, {}, r - 1, data, Arrival::Add, tag, scratch);
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
    exchange(comm, partner, part(give), partner, part(keep), Arrival::Add, tag, scratch);
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
    exchange(comm, partner, part(mine), partner, part(other), Arrival::Copy, tag, scratch);
    mine = whole;
  }
  if (r < 2 * extra) exchange(comm, r - 1, data, -1, {}, Arrival::Copy, tag, scratch);
}

void tree_allreduce(Communicator& comm, std::span<float> data) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  std::vector<float> scratch;
  for (int mask = 1; mask < n; mask <<= 1) {
    if (r & mask) {
      exchange(comm, r - mask, data, -1, {}, Arrival::Copy, kTagTree, scratch);
      break;
    }
    if (r + mask < n) exchange(comm, -1, {}, r + mask, data, Arrival::Add, kTagTree, scratch);
  }
  int mask = 1;
  while (mask < n) {
    if (r & mask) {
      exchange(comm, -1, {}, r - mask, data, Arrival::Copy, kTagTree, scratch);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (r + mask < n) exchange(comm, r + mask, data, -1, {}, Arrival::Copy, kTagTree, scratch);
}

void allreduce_with(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm) {
  comm.allreduce(data, algorithm);
}

void run_allreduce_algorithm(Communicator& comm, std::span<float> data, AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::Native:
      throw Error("run_allreduce_algorithm: native is each backend's own");
    case AllreduceAlgorithm::Ring:
      ring_allreduce(comm, data);
      return;
    case AllreduceAlgorithm::HalvingDoubling:
      halving_doubling_allreduce(comm, data);
      return;
    case AllreduceAlgorithm::Tree:
      tree_allreduce(comm, data);
      return;
  }
}

}  // namespace ptrain
