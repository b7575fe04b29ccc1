#include "trainer/data/csv.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <string_view>
#include <vector>

#include "trainer/data/gz_reader.h"

namespace hetps {
namespace {

constexpr size_t kBlockBytes = 4u << 20;

// Hands out the file's lines one by one, reading it in large blocks.
class LineReader {
 public:
  explicit LineReader(GzReader& reader) : reader_(reader) {}

  // The next line (without its end), or nullopt at the end of the file; line_number() is its
  // number, from 1.
  Result<bool> Next(std::string_view* line) {
    while (true) {
      const size_t end = buffer_.find('\n', start_);
      if (end != std::string::npos) {
        *line = std::string_view(buffer_).substr(start_, end - start_);
        start_ = end + 1;
        ++line_number_;
        return true;
      }
      if (done_) {
        if (start_ >= buffer_.size()) return false;
        *line = std::string_view(buffer_).substr(start_);
        start_ = buffer_.size();
        ++line_number_;
        return true;
      }
      buffer_.erase(0, start_);
      start_ = 0;
      const size_t kept = buffer_.size();
      buffer_.resize(kept + kBlockBytes);
      HETPS_ASSIGN_OR_RETURN(size_t got, reader_.ReadSome(buffer_.data() + kept, kBlockBytes, "CSV text"));
      buffer_.resize(kept + got);
      if (got == 0) done_ = true;
    }
  }
  int64_t line_number() const { return line_number_; }

 private:
  GzReader& reader_;
  std::string buffer_;
  size_t start_ = 0;
  bool done_ = false;
  int64_t line_number_ = 0;
};

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

bool Blank(std::string_view line) {
  return Trim(line).empty();
}

int64_t CountColumns(std::string_view line) {
  int64_t columns = 1;
  for (char c : line) columns += c == ',' ? 1 : 0;
  return columns;
}

// Reads `path` from the start and calls `visit` with each sample's line and its number (from 1):
// every line but the header (when there is one) and blank lines. Stops at the first error.
Status ForEachSampleLine(const std::string& path, bool header,
                         const std::function<Status(std::string_view line, int64_t number)>& visit) {
  HETPS_ASSIGN_OR_RETURN(GzReader reader, GzReader::Open(path));
  LineReader lines(reader);
  std::string_view line;
  bool first = true;
  while (true) {
    HETPS_ASSIGN_OR_RETURN(bool more, lines.Next(&line));
    if (!more) return Status::Ok();
    const bool skip = (first && header) || Blank(line);
    first = false;
    if (!skip) HETPS_RETURN_IF_ERROR(visit(line, lines.line_number()));
  }
}

}  // namespace

Result<HostDataset> LoadCsv(const DataOptions& options, const std::string& path, uint32_t classes,
                            const ReadLimits& limits) {
  // Pass 1: rows and columns.
  int64_t rows = 0;
  int64_t columns = 0;
  HETPS_RETURN_IF_ERROR(ForEachSampleLine(path, options.header, [&](std::string_view line, int64_t) {
    if (columns == 0) columns = CountColumns(line);
    ++rows;
    return Status::Ok();
  }));
  if (rows == 0) return Status::InvalidArgument(path + ": holds no samples (an empty CSV file)");
  if (columns < 2) {
    return Status::InvalidArgument(path + ":" + std::string(options.header ? "2" : "1") +
                                   ": a sample needs a label and at least one feature; found 1 column");
  }
  const int64_t label_column =
      options.label_column < 0 ? columns + options.label_column : options.label_column;
  if (label_column < 0 || label_column >= columns) {
    return Status::InvalidArgument(path + ": data.label_column " + std::to_string(options.label_column) +
                                   " is outside the file's " + std::to_string(columns) + " columns");
  }
  const int64_t features_per_row = columns - 1;
  HETPS_RETURN_IF_ERROR(
      CheckFitsInMemory(path, static_cast<uint64_t>(rows) * static_cast<uint64_t>(columns) * 4, limits));

  HostDataset data;
  data.source = path;
  data.samples = rows;
  data.sample_shape = {features_per_row};
  data.feature_type = FeatureType::kFloat32;
  data.features.resize(static_cast<size_t>(rows * features_per_row) * 4);
  data.float_targets = options.float_targets;
  if (options.float_targets) {
    data.float_targets_values.resize(static_cast<size_t>(rows));
  } else {
    data.class_targets.resize(static_cast<size_t>(rows));
  }
  std::vector<int64_t> line_of_row(static_cast<size_t>(rows));

  // Pass 2: the values.
  auto* features = reinterpret_cast<float*>(data.features.data());
  int64_t row = 0;
  HETPS_RETURN_IF_ERROR(ForEachSampleLine(path, options.header, [&](std::string_view line, int64_t number) {
    const std::string where = path + ":" + std::to_string(number);
    if (row >= rows) return Status::InvalidArgument(where + ": the file grew while it was read");
    const int64_t found = CountColumns(line);
    if (found != columns) {
      return Status::InvalidArgument(where + ": ragged row: " + std::to_string(found) +
                                     " columns, expected " + std::to_string(columns) +
                                     " as on the first row");
    }
    line_of_row[row] = number;
    float* out = features + row * features_per_row;
    size_t at = 0;
    for (int64_t column = 0; column < columns; ++column) {
      size_t comma = line.find(',', at);
      if (comma == std::string_view::npos) comma = line.size();
      const std::string_view field = Trim(line.substr(at, comma - at));
      at = comma + 1;
      float value = 0;
      const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
      if (error != std::errc() || end != field.data() + field.size() || field.empty()) {
        return Status::InvalidArgument(where + ": column " + std::to_string(column + 1) + ": '" +
                                       std::string(field) + "' is not a number");
      }
      if (column == label_column) {
        if (options.float_targets) {
          data.float_targets_values[row] = value;
        } else {
          double label = 0;
          std::from_chars(field.data(), field.data() + field.size(), label);
          if (label != std::floor(label) || std::abs(label) > 9e15) {
            return Status::InvalidArgument(where + ": label '" + std::string(field) +
                                           "' is not a whole number (targets: class; say targets: float for "
                                           "regression)");
          }
          data.class_targets[row] = static_cast<int64_t>(label);
        }
      } else {
        *out++ = value;
      }
    }
    ++row;
    return Status::Ok();
  }));
  if (row != rows) return Status::InvalidArgument(path + ": the file changed while it was read");
  HETPS_RETURN_IF_ERROR(FinishDataset(
      options, classes, path, [&line_of_row](int64_t i) { return "line " + std::to_string(line_of_row[i]); },
      &data));
  return data;
}

}  // namespace hetps
