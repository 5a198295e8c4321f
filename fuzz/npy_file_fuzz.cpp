// Fuzz target: NumPy .npy files (src/data/npy_file), the arrays users bring
// as their own data. The first byte chooses what is read: one file (read_npy,
// then its values as floats and as integers), or a features file and a labels
// file as the npy data set loads them (load_npy_dataset). A refused file is a
// ptrain::Error of one line.
#include <array>
#include <cstring>

#include "data/npy_file.hpp"
#include "fuzz_support.hpp"

namespace ptrain::fuzz {
namespace {

// A .npy file as np.save writes it: magic, version, little-endian header
// length, the dict padded with spaces and a newline so that the data starts
// at a multiple of 64 bytes, then the data.
std::vector<uint8_t> npy_file(const std::string& descr, const std::string& shape,
                              std::span<const uint8_t> data, int major = 1) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < preamble - 8; ++i) bytes.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

template <class T>
std::vector<uint8_t> raw(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> one_file(std::span<const uint8_t> file) {
  return InputBuilder().put(uint8_t{0}).put_bytes(file).bytes();
}

std::vector<uint8_t> data_set(std::span<const uint8_t> features, std::span<const uint8_t> labels,
                              uint8_t classes) {
  return InputBuilder().put(uint8_t{1}).put(classes).put_chunk(features).put_bytes(labels).bytes();
}

void write_seeds(const std::string& dir) {
  const std::vector<float> features = {0.5f, -1.25f, 3.0f, 0.0f, 1e-3f, 2.5f};  // 3 samples of 2
  const std::vector<int64_t> labels = {0, 2, 1};
  write_seed(dir, "f4", one_file(npy_file("<f4", "(3, 2)", raw(features))));
  write_seed(dir, "f8-v2", one_file(npy_file("<f8", "(6,)", raw(std::vector<double>{1, 2, 3, 4, 5, 6}), 2)));
  write_seed(dir, "i4-v3", one_file(npy_file("<i4", "(2, 1, 2)", raw(std::vector<int32_t>{1, -2, 3, 4}), 3)));
  write_seed(dir, "u1", one_file(npy_file("|u1", "(4,)", raw(std::vector<uint8_t>{0, 7, 255, 9}))));
  write_seed(dir, "b1-scalar", one_file(npy_file("|b1", "()", raw(std::vector<uint8_t>{1}))));
  write_seed(dir, "u8-empty", one_file(npy_file("<u8", "(0, 3)", {})));
  write_seed(dir, "classification",
             data_set(npy_file("<f4", "(3, 2)", raw(features)), npy_file("<i8", "(3,)", raw(labels)), 0));
  write_seed(dir, "classification-u1",
             data_set(npy_file("|u1", "(3, 2)", raw(std::vector<uint8_t>{1, 2, 3, 4, 5, 6})),
                      npy_file("|u1", "(3,)", raw(std::vector<uint8_t>{0, 1, 1})), 3));
  // Language modelling: token ids, and the next token at each position.
  write_seed(dir, "tokens",
             data_set(npy_file("<i8", "(2, 3)", raw(std::vector<int64_t>{1, 2, 3, 4, 5, 6})),
                      npy_file("<i8", "(2, 3)", raw(std::vector<int64_t>{2, 3, 4, 5, 6, 0})), 7));
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
  static MemoryFile features("npy-features"), labels("npy-labels");
  InputCursor input({data, size});
  const auto mode = input.take<uint8_t>();
  if (mode % 2 == 0) {
    const std::string& path = features.hold(input.rest());
    NpyArray array;
    if (!accepted([&] { array = read_npy(path); }, path)) return 0;
    require(array.data.size() == array.count() * npy_type_size(array.type),
            "an accepted .npy file whose data is not its shape's size");
    std::vector<float> floats;
    if (accepted([&] { floats = npy_to_float(array); }))
      require(floats.size() == array.count(), "npy_to_float");
    std::vector<int64_t> ints;
    if (accepted([&] { ints = npy_to_int64(array, path); }, path))
      require(ints.size() == array.count(), "npy_to_int64");
    return 0;
  }
  const int classes = input.take<uint8_t>() % 8;  // 0: the largest label + 1
  const std::string& features_path = features.hold(input.take_chunk());
  const std::string& labels_path = labels.hold(input.rest());
  Dataset set;
  if (!accepted([&] { set = load_npy_dataset(features_path, labels_path, "fuzz", classes); })) return 0;
  require(set.size() > 0, "an accepted npy data set without samples");
  require(set.features().size() == set.size() * set.sample_numel(), "an npy data set of the wrong size");
  require(set.labels().size() == set.size() * set.label_numel(),
          "an npy data set with the wrong label count");
  for (int64_t label : set.labels())
    require(label >= 0 && label < set.num_classes(), "an npy data set with a label outside its classes");
  return 0;
}
