#pragma once
// Reader for NumPy .npy files (what np.save writes), so users can bring their
// own arrays. Follows the format spec: magic "\x93NUMPY", versions 1.0, 2.0 and
// 3.0, and a header that is a Python dict literal. Every malformed input is a
// ptrain::Error whose one-line message names the file and what is wrong: never
// a crash, a hang or a silent short read.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dataset.hpp"

namespace ptrain {

// The element types read: little-endian, or single bytes where byte order
// does not apply. Anything else (big-endian, strings, objects, ...) is refused.
enum class NpyType { Bool, UInt8, Int8, UInt16, Int16, UInt32, Int32, UInt64, Int64, Float32, Float64 };

size_t npy_type_size(NpyType type);
// The dtype as NumPy writes it in a header: "|b1", "|u1", "<i4", "<f8", ...
std::string npy_type_name(NpyType type);

struct NpyArray {
  NpyType type = NpyType::Float32;
  std::vector<uint64_t> shape;  // {} for a scalar; C (row-major) order
  std::vector<std::byte> data;  // count() * npy_type_size(type) bytes, little-endian as in the file
  // The number of elements, NumPy's `size`: the product of shape, 1 for ().
  // (Unlike IdxArray::count(), which is the first dimension.)
  size_t count() const;
};

NpyArray read_npy(const std::string& path);

// The bytes of a .npy file holding `array`, as np.save writes it: format 1.0
// (2.0 for a header past 64 KiB), C order, the data at a multiple of 64
// bytes. Throws ptrain::Error when the data is not count() elements.
std::vector<std::byte> npy_file_bytes(const NpyArray& array);
// Writes `array` to `path` as a .npy file, complete or absent
// (core/atomic_file.hpp); errors start with `label`.
void write_npy(const std::string& path, const NpyArray& array, const std::string& label);
// Little-endian arrays of int64 and float32 values, for write_npy.
NpyArray npy_array(std::vector<uint64_t> shape, std::span<const int64_t> values);
NpyArray npy_array(std::vector<uint64_t> shape, std::span<const float> values);

// Every element as a float: bool as 0 or 1, the others rounded to the
// nearest float (float64 beyond float's range becomes infinite).
std::vector<float> npy_to_float(const NpyArray& array);

// Every element as an int64. Floating values must be integral and in range;
// the first that is not is an Error naming `what` (e.g. the file) and its index.
std::vector<int64_t> npy_to_int64(const NpyArray& array, const std::string& what);

// A data set from two .npy files: features of shape (N, ...) give N samples
// of shape (...) ({1} for features of shape (N,)); labels are N integers (or
// integral floats) in [0, num_classes): shape (N,) for one class per sample,
// (N, T) for a target per position (language modelling: the next token at
// each position, with token ids as the features). num_classes 0 means max
// label + 1. uint8 features are scaled to [0, 1] like IDX images, but for
// language modelling (token ids); other types are converted as they are. Errors name the file, and the index
// and value where one is at fault.
Dataset load_npy_dataset(const std::string& features_path, const std::string& labels_path,
                         const std::string& name, int num_classes);

// The inverse: a data set's samples written as two .npy files that
// load_npy_dataset (and np.load) reads back as the same samples. Features
// (N, sample shape...) as float32, or as int64 token ids for language
// modelling; labels (N,) or (N, T) as int64.
void write_npy_dataset(const Dataset& data, const std::string& features_path, const std::string& labels_path,
                       const std::string& label);

}  // namespace ptrain
