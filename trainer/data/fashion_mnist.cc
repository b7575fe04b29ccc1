#include "trainer/data/fashion_mnist.h"

#include "trainer/data/idx.h"

namespace hetps {

Result<Dataset> LoadFashionMnist(const std::string& dir, DatasetSplit split) {
  const DataOptions options = FashionMnistOptions(dir);
  const DataFiles& files = split == DatasetSplit::kTrain ? options.train : options.test;
  const std::string hint =
      " (install it with `apt-get install dataset-fashion-mnist`, or pass --data-dir with the directory that "
      "holds it)";
  HETPS_ASSIGN_OR_RETURN(HostDataset host, LoadIdx(options, files.x, files.y, options.classes, {}, hint));
  const std::vector<int64_t> expected = {1, kFashionMnistImageSide, kFashionMnistImageSide};
  if (host.sample_shape != expected || host.feature_type != FeatureType::kUInt8) {
    std::string got;
    for (size_t i = 1; i < host.sample_shape.size(); ++i) {
      got += (got.empty() ? "" : "x") + std::to_string(host.sample_shape[i]);
    }
    return Status::InvalidArgument(files.x + ": wrong dimensions: expected 28x28 images of bytes, got " +
                                   got);
  }
  return ToTensors(std::move(host));
}

}  // namespace hetps
