// copy_bypassing_cache: the same bytes as memcpy, for every alignment of the
// destination and every length around the 16-byte stores.
#include "core/streaming_copy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ptrain {
namespace {

TEST(StreamingCopy, SameBytesAsMemcpyForEveryOffsetAndLength) {
  std::vector<unsigned char> src(300);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  for (size_t offset = 0; offset < 17; ++offset) {
    for (size_t bytes = 0; bytes + offset + 1 <= 200; bytes += (bytes < 40 ? 1 : 13)) {
      std::vector<std::byte> dst(256, std::byte{0xEE});
      copy_bypassing_cache(dst.data() + offset, src.data() + 1, bytes);
      finish_bypassing_copies();
      for (size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= offset && i < offset + bytes;
        ASSERT_EQ(dst[i], inside ? static_cast<std::byte>(src[i - offset + 1]) : std::byte{0xEE})
            << "offset " << offset << " bytes " << bytes << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace ptrain
