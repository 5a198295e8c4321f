#include "data/idx_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <span>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace ptrain {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;
// The least buffer for compressed input, and the one that counts extra bytes.
constexpr size_t kSmallBufferBytes = size_t{1} << 16;
// Extra bytes after the data are counted this far (a gzip bomb's trailing
// gigabytes are refused without inflating them all).
constexpr uint64_t kMaxExtraCounted = uint64_t{1} << 20;
// Deflate cannot expand more than about 1032:1, which bounds what a gzip file
// of a given size can hold; used so a lying header cannot make us over-allocate.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint8_t kTypeUnsignedByte = 0x08;

std::string hex_byte(uint8_t b) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", b);
  return text;
}

// The decoded bytes of a file, plain or gzipped. read() returns fewer bytes
// than asked only at the end of the data; corruption is an Error.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual size_t read(uint8_t* dst, size_t n) = 0;
  // An upper bound on the bytes still to come, to size buffers safely.
  virtual uint64_t max_remaining() const = 0;
  // True if the data ended because a compressed stream was cut off.
  virtual bool cut_short() const { return false; }
};

class PlainSource final : public ByteSource {
 public:
  PlainSource(InputFile& file, uint64_t file_bytes) : file_(file), remaining_(file_bytes) {}

  size_t read(uint8_t* dst, size_t n) override {
    const size_t got = file_.read(dst, n);
    remaining_ -= std::min<uint64_t>(remaining_, got);
    return got;
  }
  uint64_t max_remaining() const override { return remaining_; }

 private:
  InputFile& file_;
  uint64_t remaining_;
};

// Inflates one or more concatenated gzip members with zlib's inflate, so that
// every way a stream can be damaged (bad CRC or length, bad deflate data, cut
// short, trailing junk) is seen and reported, unlike gzread's lenient reading.
class GzipSource final : public ByteSource {
 public:
  GzipSource(InputFile& file, std::string path, uint64_t file_bytes)
      : file_(file),
        path_(std::move(path)),
        file_bytes_(file_bytes),
        // About the file's size: a small file need not zero a whole chunk.
        input_(static_cast<size_t>(std::clamp<uint64_t>(file_bytes, kSmallBufferBytes, kChunkBytes))) {
    // 16 + MAX_WBITS: gzip wrapper only, with its CRC-32 and length checked.
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK)
      throw Error(path_ + ": cannot start gzip decompression (zlib: " +
                  (stream_.msg ? stream_.msg : "out of memory") + ")");
  }
  ~GzipSource() override { inflateEnd(&stream_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  size_t read(uint8_t* dst, size_t n) override {
    size_t produced = 0;
    while (produced < n && !finished_) {
      if (stream_.avail_in == 0 && !refill()) {
        cut_short_ = true;  // the file ended inside a gzip member
        finished_ = true;
        break;
      }
      const size_t want = std::min<size_t>(n - produced, std::numeric_limits<uInt>::max());
      stream_.next_out = dst + produced;
      stream_.avail_out = static_cast<uInt>(want);
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      produced += want - stream_.avail_out;
      if (rc == Z_OK) continue;
      if (rc == Z_STREAM_END) {
        if (another_member_follows())
          inflateReset(&stream_);
        else
          finished_ = true;
        continue;
      }
      // Z_BUF_ERROR cannot happen with input and output space both available;
      // treating it as corruption rules out an endless loop all the same.
      const std::string detail = stream_.msg ? stream_.msg : "zlib error " + std::to_string(rc);
      if (rc == Z_MEM_ERROR) throw Error(path_ + ": out of memory while decompressing");
      throw Error(path_ + ": corrupt gzip data: " + detail);
    }
    produced_total_ += produced;
    return produced;
  }

  uint64_t max_remaining() const override {
    const uint64_t bound = file_bytes_ * kMaxDeflateRatio + kChunkBytes;
    return bound > produced_total_ ? bound - produced_total_ : 0;
  }

  bool cut_short() const override { return cut_short_; }

 private:
  // Moves unread input to the front and tops the buffer up from the file.
  // Returns false when no input is left at all.
  bool refill() {
    if (stream_.avail_in > 0 && stream_.next_in != input_.data())
      std::memmove(input_.data(), stream_.next_in, stream_.avail_in);
    const size_t kept = stream_.avail_in;
    const size_t got = file_.read(input_.data() + kept, input_.size() - kept);
    stream_.next_in = input_.data();
    stream_.avail_in = static_cast<uInt>(kept + got);
    return stream_.avail_in > 0;
  }

  // After one member ends: true if another gzip member follows, false at end
  // of file; anything else after the stream is an error.
  bool another_member_follows() {
    if (stream_.avail_in < 2) refill();
    if (stream_.avail_in == 0) return false;
    if (stream_.avail_in >= 2 && stream_.next_in[0] == 0x1f && stream_.next_in[1] == 0x8b) return true;
    throw Error(path_ + ": unexpected bytes after the end of the gzip stream");
  }

  InputFile& file_;
  std::string path_;
  uint64_t file_bytes_;
  std::vector<uint8_t> input_;
  z_stream stream_{};
  uint64_t produced_total_ = 0;
  bool finished_ = false;
  bool cut_short_ = false;
};

std::string end_note(const ByteSource& source) {
  return source.cut_short() ? " (the gzip stream is cut short: unexpected end of file)" : "";
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string truncated_header(const std::string& path, size_t needed, size_t found, const ByteSource& source) {
  return path + ": truncated: the IDX header needs " + std::to_string(needed) + " bytes, found " +
         std::to_string(found) + end_note(source);
}

// Reads `expected` bytes, growing the buffer only as far as the file can
// possibly hold, so a corrupt header cannot trigger a huge allocation.
std::vector<uint8_t> read_data(ByteSource& source, uint64_t expected) {
  std::vector<uint8_t> data;
  size_t filled = 0;
  size_t capacity = static_cast<size_t>(std::min(expected, source.max_remaining()));
  while (true) {
    data.resize(capacity);
    const size_t got = source.read(data.data() + filled, capacity - filled);
    filled += got;
    if (filled < capacity || capacity == expected) break;
    capacity = static_cast<size_t>(std::min<uint64_t>(expected, uint64_t{capacity} * 2 + kChunkBytes));
  }
  data.resize(filled);
  return data;
}

// Counts what is left in the source (up to a cap, past which the count is
// only a lower bound).
uint64_t count_remaining(ByteSource& source, uint64_t cap) {
  std::vector<uint8_t> scratch(kSmallBufferBytes);
  uint64_t total = 0;
  while (total < cap) {
    const size_t got = source.read(scratch.data(), scratch.size());
    total += got;
    if (got < scratch.size()) break;
  }
  return total;
}

}  // namespace

IdxArray read_idx_ubyte(const std::string& path, size_t expected_rank, uint64_t max_data_bytes,
                        const std::string& why_limited) {
  InputFile file(path, "an IDX file");

  // Compressed or not is decided by gzip's magic bytes, not by the file name.
  uint8_t sniff[2] = {0, 0};
  const size_t sniffed = file.read(sniff, 2);
  file.seek(0);
  std::unique_ptr<ByteSource> source;
  if (sniffed == 2 && sniff[0] == 0x1f && sniff[1] == 0x8b)
    source = std::make_unique<GzipSource>(file, path, file.size());
  else
    source = std::make_unique<PlainSource>(file, file.size());

  uint8_t magic[4];
  const size_t magic_found = source->read(magic, 4);
  if (magic_found < 4) throw Error(truncated_header(path, 4, magic_found, *source));
  if (magic[0] != 0 || magic[1] != 0)
    throw Error(path + ": not an IDX file: magic number starts " + hex_byte(magic[0]) + " " +
                hex_byte(magic[1]) + ", expected 0x00 0x00");
  if (magic[2] != kTypeUnsignedByte)
    throw Error(path + ": IDX data type " + hex_byte(magic[2]) +
                " is not unsigned byte (0x08), the only type supported");
  const size_t rank = magic[3];
  if (rank != expected_rank)
    throw Error(path + ": IDX rank " + std::to_string(rank) + ", expected " + std::to_string(expected_rank));

  std::vector<uint8_t> dim_bytes(4 * rank);
  const size_t dims_found = source->read(dim_bytes.data(), dim_bytes.size());
  if (dims_found < dim_bytes.size())
    throw Error(truncated_header(path, 4 + dim_bytes.size(), 4 + dims_found, *source));

  const uint64_t limit = std::min(max_data_bytes, kIdxMaxDataBytes);
  const std::string limit_note = limit < kIdxMaxDataBytes ? " (" + why_limited + ")" : "";
  IdxArray array;
  uint64_t expected = 1;
  std::string shape_text;
  for (size_t i = 0; i < rank; ++i) {
    const uint32_t d = big_endian_u32(&dim_bytes[4 * i]);
    shape_text += (i ? " x " : "") + std::to_string(d);
    if (d == 0) throw Error(path + ": IDX dimension " + std::to_string(i) + " is zero");
    // Each factor is < 2^32 and the running product stays <= 2^31: no overflow.
    expected *= d;
    if (expected > limit)
      throw Error(path + ": IDX dimensions " + shape_text + (i + 1 < rank ? " x ..." : "") +
                  " exceed the limit of " + std::to_string(limit) + " bytes" + limit_note);
    array.dims.push_back(d);
  }

  array.data = read_data(*source, expected);
  if (array.data.size() < expected)
    throw Error(path + ": truncated: expected " + std::to_string(expected) + " data bytes, found " +
                std::to_string(array.data.size()) + end_note(*source));
  const uint64_t extra = count_remaining(*source, kMaxExtraCounted);
  if (extra > 0)
    throw Error(path + ": " + (extra >= kMaxExtraCounted ? "over " : "") + std::to_string(extra) +
                " extra bytes after the " + std::to_string(expected) + " data bytes of a " + shape_text +
                " array");
  // All data arrived but the gzip trailer (CRC-32 and length) did not: the
  // bytes are unverified, so refuse them rather than guess.
  if (source->cut_short())
    throw Error(path + ": truncated gzip stream: its end (with the CRC-32 check) is missing");
  return array;
}

}  // namespace ptrain
