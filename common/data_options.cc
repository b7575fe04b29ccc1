#include "common/data_options.h"

#include <cmath>

namespace hetps {
namespace {

std::string OrEmpty(const flatbuffers::String* text) {
  return text != nullptr ? text->str() : std::string();
}

// The token format's own fields, and the others' absence from it.
Status ValidateTokenOptions(const DataOptions& o) {
  if (o.format != "tokens") {
    if (!o.token_dtype.empty() || o.context != 0 || o.vocab != 0) {
      return Status::InvalidArgument("data.dtype, data.context and data.vocab are for format tokens only");
    }
    return Status::Ok();
  }
  if (o.context == 0) {
    return Status::InvalidArgument("data.context: required with format tokens (tokens per sample, e.g. 256)");
  }
  if (o.context > (1u << 20)) {
    return Status::InvalidArgument("data.context: " + std::to_string(o.context) +
                                   " is out of range 1..1048576");
  }
  if (!o.token_dtype.empty() && o.token_dtype != "uint16" && o.token_dtype != "uint32") {
    return Status::InvalidArgument("data.dtype: '" + o.token_dtype +
                                   "' is not allowed; choose uint16 or uint32");
  }
  if (o.token_dtype == "uint16" && o.vocab > 65536) {
    return Status::InvalidArgument("data.vocab: " + std::to_string(o.vocab) +
                                   " ids do not fit in data.dtype uint16 (at most 65536)");
  }
  if (o.serve) {
    return Status::InvalidArgument(
        "data.serve: format tokens is not served: token files are memory-mapped where they lie and may be "
        "larger than any machine's memory; copy them to every trainer's machine (under its --data-dir)");
  }
  if (o.header || o.label_column != 0 || o.float_targets || o.classes != 0 || !o.sample_shape.empty() ||
      o.divide_by != 0 || o.mean != 0 || o.std != 1) {
    return Status::InvalidArgument(
        "data: format tokens takes train, test, dtype, context and vocab only (its targets are the next "
        "tokens, its vocabulary is data.vocab)");
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& DataFormats() {
  static const std::vector<std::string> kFormats = {"idx", "csv", "npy", "tokens"};
  return kFormats;
}

Status ValidateDataOptions(const DataOptions& o) {
  if (o.format.empty()) {
    if (!o.train.x.empty() || !o.test.x.empty()) {
      return Status::InvalidArgument(
          "data.format: required with data.train and data.test (idx, csv, npy or tokens)");
    }
    return Status::Ok();
  }
  bool known = false;
  for (const std::string& format : DataFormats()) known = known || format == o.format;
  if (!known) {
    return Status::InvalidArgument("data.format: '" + o.format +
                                   "' is not allowed; choose one of: idx, csv, npy, tokens");
  }
  for (const auto& [name, files] : {std::pair{"train", &o.train}, std::pair{"test", &o.test}}) {
    const std::string field = std::string("data.") + name;
    if (files->x.empty()) return Status::InvalidArgument(field + ": required with data.format " + o.format);
    if (o.format == "idx" && files->y.empty()) {
      return Status::InvalidArgument(field + ".y: idx needs two files, {x: IMAGES, y: LABELS}");
    }
    if ((o.format == "csv" || o.format == "tokens") && !files->y.empty()) {
      return Status::InvalidArgument(field + ": " + o.format + " takes one file" +
                                     (o.format == "csv" ? " holding labels and features" : " of token ids") +
                                     ", not {x, y}");
    }
  }
  HETPS_RETURN_IF_ERROR(ValidateTokenOptions(o));
  if (!(o.std > 0) || !std::isfinite(o.std)) {
    return Status::InvalidArgument("data.std: " + std::to_string(o.std) + " must be a positive number");
  }
  if (o.divide_by < 0 || !std::isfinite(o.divide_by)) {
    return Status::InvalidArgument("data.divide_by: " + std::to_string(o.divide_by) +
                                   " must be positive (or 0 for the default)");
  }
  if (!std::isfinite(o.mean)) return Status::InvalidArgument("data.mean: must be a finite number");
  for (int64_t dim : o.sample_shape) {
    if (dim <= 0) {
      return Status::InvalidArgument("data.sample_shape: " + std::to_string(dim) + " is not a positive size");
    }
  }
  if (o.float_targets && o.classes != 0) {
    return Status::InvalidArgument("data.classes: only for targets: class, not float");
  }
  return Status::Ok();
}

flatbuffers::Offset<wire::DataSpec> DataOptionsToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                      const DataOptions& o) {
  return wire::CreateDataSpecDirect(
      fbb, o.format.c_str(), o.train.x.c_str(), o.train.y.c_str(), o.test.x.c_str(), o.test.y.c_str(),
      o.header, o.label_column, o.float_targets, o.classes, &o.sample_shape, o.divide_by, o.mean, o.std,
      o.serve, o.token_dtype.empty() ? nullptr : o.token_dtype.c_str(), o.context, o.vocab);
}

Result<DataOptions> DataOptionsFromWire(const wire::DataSpec& spec) {
  DataOptions o;
  o.format = OrEmpty(spec.format());
  o.train = {OrEmpty(spec.train_x()), OrEmpty(spec.train_y())};
  o.test = {OrEmpty(spec.test_x()), OrEmpty(spec.test_y())};
  o.header = spec.csv_header();
  o.label_column = spec.label_column();
  o.float_targets = spec.float_targets();
  o.classes = spec.classes();
  if (spec.sample_shape() != nullptr)
    o.sample_shape.assign(spec.sample_shape()->begin(), spec.sample_shape()->end());
  o.divide_by = spec.divide_by();
  o.mean = spec.mean();
  o.std = spec.std();
  o.serve = spec.serve();
  o.token_dtype = OrEmpty(spec.token_dtype());
  o.context = spec.context();
  o.vocab = spec.vocab();
  HETPS_RETURN_IF_ERROR(ValidateDataOptions(o).WithContext("the job's data section"));
  return o;
}

}  // namespace hetps
