// Fashion-MNIST, the built-in data set: its IDX files under a directory, read by the IDX reader
// (idx.h) into a Dataset (tensor_dataset.h) of uint8 images [N, 1, 28, 28] and int64 labels
// 0..9, handed to models as float32 pixels in [0, 1].
// Safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "trainer/data/dataset.h"
#include "trainer/data/tensor_dataset.h"

namespace hetps {

inline constexpr int64_t kFashionMnistImageSide = 28;
inline constexpr int64_t kFashionMnistClasses = 10;

// Reads {train,t10k}-images-idx3-ubyte.gz and the matching labels-idx1-ubyte.gz from `dir`
// (IDX, gzipped as Debian's dataset-fashion-mnist ships them, or plain). Errors name the file and
// the problem:
//   NotFound         the file does not exist (with the full path and how to install it);
//   IoError          the operating system refused to open or read it;
//   InvalidArgument  corrupt or truncated data (expected vs. got bytes), trailing data, a wrong
//                    IDX magic number, images that are not 28x28, too many samples for memory,
//                    image and label counts that differ, a label outside 0..9.
Result<Dataset> LoadFashionMnist(const std::string& dir, DatasetSplit split);

}  // namespace hetps
