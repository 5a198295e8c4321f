// Fuzz target: IDX files (src/data/idx_file), plain or gzipped, read as
// labels (rank 1) and as images (rank 3), the way the Fashion-MNIST loader
// reads them. An accepted file holds exactly its dimensions' bytes; a refused
// one is a ptrain::Error of one line that starts with the path.
#include <zlib.h>

#include <fstream>
#include <iterator>

#include "data/idx_file.hpp"
#include "fuzz_support.hpp"

namespace ptrain::fuzz {
namespace {

// gzip as the gzip tool writes it, one member.
std::vector<uint8_t> gzipped(std::span<const uint8_t> bytes) {
  z_stream z{};
  require(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK,
          "deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&z, bytes.size()) + 32);
  z.next_in = const_cast<Bytef*>(bytes.data());
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  require(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate failed");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// An IDX file of unsigned bytes: magic, big-endian dimensions, data.
std::vector<uint8_t> idx_file(const std::vector<uint32_t>& dims, std::span<const uint8_t> data) {
  std::vector<uint8_t> out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// From the real Fashion-MNIST files (Debian's dataset-fashion-mnist): the
// test labels as shipped, and the first few images and labels, plain and
// gzipped, as read by the reader under test.
void write_seeds(const std::string& dir) {
  const std::string data = "/usr/share/datasets/fashion-mnist/";
  const IdxArray images = read_idx_ubyte(data + "t10k-images-idx3-ubyte.gz", 3);
  const IdxArray labels = read_idx_ubyte(data + "t10k-labels-idx1-ubyte.gz", 1);
  std::ifstream shipped(data + "t10k-labels-idx1-ubyte.gz", std::ios::binary);
  const std::vector<uint8_t> labels_gz(std::istreambuf_iterator<char>(shipped), {});
  write_seed(dir, "t10k-labels-idx1-ubyte.gz", labels_gz);
  for (uint32_t n : {1u, 3u}) {
    const size_t pixels = size_t{n} * images.dims[1] * images.dims[2];
    const auto few_images =
        idx_file({n, images.dims[1], images.dims[2]}, std::span(images.data).first(pixels));
    const auto few_labels = idx_file({n}, std::span(labels.data).first(n));
    const std::string tag = std::to_string(n);
    write_seed(dir, "images-" + tag, few_images);
    write_seed(dir, "images-" + tag + ".gz", gzipped(few_images));
    write_seed(dir, "labels-" + tag, few_labels);
    write_seed(dir, "labels-" + tag + ".gz", gzipped(few_labels));
  }
}

}  // namespace
}  // namespace ptrain::fuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  ptrain::fuzz::write_seeds_if_asked(argc, argv, ptrain::fuzz::write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptrain;
  using namespace ptrain::fuzz;
  static MemoryFile file("idx");
  const std::string& path = file.hold({data, size});
  for (size_t rank : {size_t{1}, size_t{3}}) {
    IdxArray array;
    if (!accepted([&] { array = read_idx_ubyte(path, rank); }, path)) continue;
    size_t bytes = 1;
    for (uint32_t d : array.dims) {
      require(d > 0, "an accepted IDX file with a zero dimension");
      bytes *= d;
    }
    require(array.dims.size() == rank, "an accepted IDX file of another rank");
    require(array.data.size() == bytes, "an accepted IDX file whose data is not its dimensions' size");
  }
  return 0;
}
