// The CSV reader: one sample per line, comma-separated numbers, one column the label (or the
// regression target), the others the features, gzipped or plain. Free functions; safe to call
// from any thread.
#pragma once

#include <string>

#include "trainer/data/dataset.h"

namespace hetps {

// Reads `path` in two passes (the first counts lines and columns, so the features are allocated
// once, after the memory check). Options: header (skip the first line), label_column (negative
// from the end), float_targets, classes, sample_shape (default [columns - 1]). Features are
// float32. Errors name the file and line: ragged rows, a value that is not a number, a label
// that is not a whole number or out of range, an empty file.
Result<HostDataset> LoadCsv(const DataOptions& options, const std::string& path, uint32_t classes,
                            const ReadLimits& limits);

}  // namespace hetps
