// The NumPy reader: an x.npy and a y.npy, or one .npz holding arrays named x and y (as
// numpy.savez or numpy.savez_compressed write them). Little-endian C-order arrays of bool,
// (u)int8/16/32/64, float32 or float64. Free functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/dataset.h"

namespace hetps {

// One array: its element kind ('b', 'u', 'i', 'f'), width in bytes, shape and bytes.
struct NpyArray {
  char kind = 'u';
  size_t width = 1;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  double At(int64_t i) const;  // element i as a double
};

// Reads a .npy file; `what` names the array's role in errors ("x", "y").
Result<NpyArray> ReadNpy(const std::string& path, const ReadLimits& limits);
// Reads a .npy file's header only: the array's kind, width and shape, with no bytes;
// `data_offset` is where its elements start in the file (for a reader that maps them).
Result<NpyArray> ReadNpyHeader(const std::string& path, uint64_t* data_offset);
// Reads the array stored as `name`.npy in the .npz archive at `path`.
Result<NpyArray> ReadNpzMember(const std::string& path, const std::string& name, const ReadLimits& limits);

// A split from x and y (`y_path` empty: `x_path` is an .npz with both). uint8 features stay
// bytes, any other type becomes float32; x's first dimension is the sample, y is [N] (or [N, k]
// for float targets). Errors name the file and the index of a bad label, and both lengths when
// x and y differ.
Result<HostDataset> LoadNpy(const DataOptions& options, const std::string& x_path, const std::string& y_path,
                            uint32_t classes, const ReadLimits& limits);

}  // namespace hetps
