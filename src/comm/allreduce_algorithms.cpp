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

Range chunk_of(Range seg, size_t j, size_t chunk) {
  const size_t b = std::min(seg.end, seg.begin + j * chunk);
  return {b, std::min(seg.end, b + chunk)};
}

}  // namespace

void ring_allreduce(Communicator& comm, std::span<float> data, size_t chunk_floats) {
  const auto n = static_cast<size_t>(comm.size());
  const auto r = static_cast<size_t>(comm.rank());
  if (n == 1) return;
  chunk_floats = std::max<size_t>(chunk_floats, 1);
  const int right = static_cast<int>((r + 1) % n), left = static_cast<int>((r + n - 1) % n);
  std::vector<float> incoming(std::min(chunk_floats, data.size() / n + 1));
  // Reduce-scatter: after step k, segment (r - k - 1) holds k + 2 workers' sum here.
  for (size_t k = 0; k + 1 < n; ++k) {
    const Range out = segment(data.size(), (r + n - k) % n, n);
    const Range in = segment(data.size(), (r + 2 * n - k - 1) % n, n);
    const size_t parts = std::max(chunks_in(out.size(), chunk_floats), chunks_in(in.size(), chunk_floats));
    for (size_t j = 0; j < parts; ++j) {
      const Range o = chunk_of(out, j, chunk_floats), i = chunk_of(in, j, chunk_floats);
      std::span<float> buffer(incoming.data(), i.size());
      comm.sendrecv(right, bytes_of(std::span<const float>(data.subspan(o.begin, o.size()))), left,
                    bytes_of(buffer), kTagRingAllreduce);
      add_into(data.subspan(i.begin, i.size()), buffer);
    }
  }
  // All-gather: worker r now holds the final segment r + 1; pass the finished ones on.
  for (size_t k = 0; k + 1 < n; ++k) {
    const Range out = segment(data.size(), (r + 1 + n - k) % n, n);
    const Range in = segment(data.size(), (r + n - k) % n, n);
    const size_t parts = std::max(chunks_in(out.size(), chunk_floats), chunks_in(in.size(), chunk_floats));
    for (size_t j = 0; j < parts; ++j) {
      const Range o = chunk_of(out, j, chunk_floats), i = chunk_of(in, j, chunk_floats);
      comm.sendrecv(right, bytes_of(std::span<const float>(data.subspan(o.begin, o.size()))), left,
                    bytes_of(data.subspan(i.begin, i.size())), kTagRingAllreduce);
    }
  }
}

void halving_doubling_allreduce(Communicator& comm, std::span<float> data) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const int extra = n - p2;
  std::vector<float> incoming(data.size());
  // Fold: of each of the first `extra` pairs, the even worker hands its data to the odd one.
  int nr;  // rank among the p2 workers that take part in the butterfly
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      comm.send(r + 1, kTagHalvingDoubling, bytes_of(std::span<const float>(data)));
      comm.recv(r + 1, kTagHalvingDoubling, bytes_of(data));
      return;
    }
    comm.recv(r - 1, kTagHalvingDoubling, bytes_of(std::span<float>(incoming)));
    add_into(data, incoming);
    nr = r / 2;
  } else {
    nr = r - extra;
  }
  auto real_rank = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };
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
    std::span<float> buffer(incoming.data(), keep.size());
    comm.sendrecv(partner, bytes_of(std::span<const float>(data.subspan(give.begin, give.size()))), partner,
                  bytes_of(buffer), kTagHalvingDoubling);
    add_into(data.subspan(keep.begin, keep.size()), buffer);
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
    comm.sendrecv(partner, bytes_of(std::span<const float>(data.subspan(mine.begin, mine.size()))), partner,
                  bytes_of(data.subspan(other.begin, other.size())), kTagHalvingDoubling);
    mine = whole;
  }
  if (r < 2 * extra) comm.send(r - 1, kTagHalvingDoubling, bytes_of(std::span<const float>(data)));
}

void tree_allreduce(Communicator& comm, std::span<float> data) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  std::vector<float> incoming(data.size());
  for (int mask = 1; mask < n; mask <<= 1) {
    if (r & mask) {
      comm.send(r - mask, kTagTree, bytes_of(std::span<const float>(data)));
      break;
    }
    if (r + mask < n) {
      comm.recv(r + mask, kTagTree, bytes_of(std::span<float>(incoming)));
      add_into(data, incoming);
    }
  }
  int mask = 1;
  while (mask < n) {
    if (r & mask) {
      comm.recv(r - mask, kTagTree, bytes_of(data));
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (r + mask < n) comm.send(r + mask, kTagTree, bytes_of(std::span<const float>(data)));
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
