#include "shm/version_pool.hpp"

namespace ptrain {

namespace {

constexpr uint64_t pack(uint32_t tag, uint32_t slot) { return (static_cast<uint64_t>(tag) << 32) | slot; }
constexpr uint32_t slot_of(uint64_t head) { return static_cast<uint32_t>(head); }
constexpr uint32_t tag_of(uint64_t head) { return static_cast<uint32_t>(head >> 32); }

}  // namespace

bool ParamVersion::try_ref() {
  int64_t r = refs.load(std::memory_order_relaxed);
  while (r > 0)
    if (refs.compare_exchange_weak(r, r + 1, std::memory_order_acquire, std::memory_order_relaxed)) return true;
  return false;
}

VersionPool::VersionPool(size_t count, size_t size) {
  versions_.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto v = std::make_unique<ParamVersion>();
    v->values.resize(size);
    v->index = static_cast<uint32_t>(i);
    versions_.push_back(std::move(v));
  }
  for (auto& v : versions_) push(v.get());
}

void VersionPool::push(ParamVersion* v) {
  uint64_t head = head_.load(std::memory_order_relaxed);
  while (true) {
    v->next_free.store(slot_of(head), std::memory_order_relaxed);
    if (head_.compare_exchange_weak(head, pack(tag_of(head) + 1, v->index + 1), std::memory_order_release,
                                    std::memory_order_relaxed))
      return;
  }
}

ParamVersion* VersionPool::take() {
  uint64_t head = head_.load(std::memory_order_acquire);
  while (slot_of(head) != 0) {
    ParamVersion* top = versions_[slot_of(head) - 1].get();
    const uint32_t next = top->next_free.load(std::memory_order_relaxed);
    if (head_.compare_exchange_weak(head, pack(tag_of(head) + 1, next), std::memory_order_acquire,
                                    std::memory_order_acquire)) {
      top->refs.store(1, std::memory_order_relaxed);
      return top;
    }
  }
  return nullptr;
}

void VersionPool::unref(ParamVersion* v) {
  // acq_rel: the last owner sees every other owner's reads finished before it recycles.
  if (v->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) push(v);
}

size_t VersionPool::free_count() const {
  size_t n = 0;
  for (uint32_t slot = slot_of(head_.load(std::memory_order_acquire)); slot != 0;
       slot = versions_[slot - 1]->next_free.load(std::memory_order_relaxed))
    ++n;
  return n;
}

}  // namespace ptrain
