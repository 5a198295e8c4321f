#pragma once
// The parameter vectors Leashed-SGD publishes, and the fixed pool they are
// recycled through, so that the steady state allocates nothing.
//
// A version is shared by reference count: one reference for being the latest,
// one for each thread holding it. A count that reached 0 never rises again
// (acquire only increments a positive count), so the thread that brings it to
// 0 is the only one to return the vector to the pool. The pool's vectors live
// as long as the pool, so a thread still holding a stale pointer to a
// recycled vector touches valid memory and its increment simply fails or is
// undone.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace ptrain {

struct ParamVersion {
  std::vector<float> values;
  uint64_t version = 0;  // updates applied to reach it: its parent's version + 1
  uint64_t parent = 0;   // the version it was built from (for the chain check)
  std::atomic<int64_t> refs{0};
  uint32_t index = 0;                  // its place in the pool
  std::atomic<uint32_t> next_free{0};  // the free list's link (index + 1; 0: end)

  // Adds a reference if the count is still positive; false once it reached 0.
  bool try_ref();
};

class VersionPool {
 public:
  // `count` vectors of `size` floats, all free.
  VersionPool(size_t count, size_t size);

  // A free vector with one reference (its taker's), or nullptr when none is free.
  ParamVersion* take();
  // Drops a reference; the last one returns the vector to the free list.
  void unref(ParamVersion* v);

  size_t capacity() const { return versions_.size(); }
  size_t free_count() const;  // while no thread runs (tests)

 private:
  void push(ParamVersion* v);

  std::vector<std::unique_ptr<ParamVersion>> versions_;
  // A Treiber stack: low 32 bits the top's index + 1 (0: empty), high 32 bits a
  // tag bumped on every change, so a pop cannot succeed on a stale top (ABA).
  std::atomic<uint64_t> head_{0};
};

}  // namespace ptrain
