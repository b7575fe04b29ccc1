#include "trainer/models/torchscript_model.h"

#include <sys/stat.h>
#include <sstream>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace hetps {
namespace {

// The line of a LibTorch message that says what went wrong: the first, or for an error raised
// inside TorchScript code the last (after the TorchScript traceback), e.g. "RuntimeError: mat1
// and mat2 shapes cannot be multiplied (56x28 and 784x10)".
std::string FirstLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const size_t end = text.find('\n');
  if (end == std::string::npos) return text;
  if (text.rfind("The following operation failed in the TorchScript interpreter", 0) == 0) {
    return text.substr(text.rfind('\n') + 1);
  }
  return text.substr(0, end);
}

std::string ShapeText(const torch::Tensor& tensor) {
  std::ostringstream out;
  out << tensor.sizes() << " " << tensor.dtype();
  return out.str();
}

// The submodule of `root` that holds `dotted` name's last part, created as empty modules on the
// way ("layers.0.weight" -> root.layers.0); `leaf` gets "weight". nn::Module forbids dots in a
// parameter's name, so the hierarchy is rebuilt instead.
torch::nn::Module& Holder(torch::nn::Module& root, const std::string& dotted, std::string* leaf) {
  torch::nn::Module* module = &root;
  size_t begin = 0;
  for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', begin)) {
    const std::string part = dotted.substr(begin, dot - begin);
    std::shared_ptr<torch::nn::Module> child;
    for (const auto& item : module->named_children()) {
      if (item.key() == part) child = item.value();
    }
    if (!child) child = module->register_module(part, std::make_shared<torch::nn::Module>());
    module = child.get();
    begin = dot + 1;
  }
  *leaf = dotted.substr(begin);
  return *module;
}

}  // namespace

TorchScriptModel::TorchScriptModel(const torch::jit::Module& module, std::string path)
    : module_(module), path_(std::move(path)) {
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
    std::string leaf;
    torch::nn::Module& holder = Holder(*this, item.name, &leaf);
    holder.register_parameter(leaf, item.value, item.value.requires_grad());
  }
  for (const auto& item : module_.named_buffers(/*recurse=*/true)) {
    std::string leaf;
    Holder(*this, item.name, &leaf).register_buffer(leaf, item.value);
  }
  module_.train(true);
}

torch::Tensor TorchScriptModel::forward(torch::Tensor input) {
  return module_.forward({std::move(input)}).toTensor();
}

void TorchScriptModel::train(bool on) {
  torch::nn::Module::train(on);
  module_.train(on);
}

Result<std::shared_ptr<Model>> LoadTorchScriptModel(const std::string& path, torch::Device device) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return Status::NotFound("model file " + path + " does not exist");
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, device);
  } catch (const c10::Error& e) {
    return Status::InvalidArgument("model file " + path +
                                   " is not a TorchScript file that this LibTorch can load (save one with "
                                   "torch.jit.script(model).save(FILE)): " +
                                   FirstLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument("model file " + path +
                                   " is not a TorchScript file: " + FirstLine(e.what()));
  }
  auto model = std::make_shared<TorchScriptModel>(module, path);
  const auto parameters = model->named_parameters();
  if (parameters.is_empty()) {
    return Status::InvalidArgument("model file " + path +
                                   " has no parameters: hetps trains a module's parameters (nn.Parameter)");
  }
  for (const auto& item : parameters) {
    if (item.value().scalar_type() != torch::kFloat32) {
      std::ostringstream type;
      type << item.value().dtype();
      return Status::InvalidArgument("model file " + path + ": parameter " + item.key() + " is " +
                                     type.str() +
                                     "; hetps servers hold float32 parameters (call model.float() before "
                                     "scripting)");
    }
  }
  return std::shared_ptr<Model>(model);
}

Status CheckModelOnBatch(Model& model, const std::string& what, const torch::Tensor& input, Loss loss,
                         int64_t classes, int64_t positions) {
  const std::string tried =
      what + ": forward on a batch of shape " + ShapeText(input) + " (the data's input)";
  torch::Tensor output;
  try {
    torch::NoGradGuard no_grad;
    model.eval();
    output = model.forward(input);
    model.train();
  } catch (const c10::Error& e) {
    model.train();
    return Status::InvalidArgument(tried + " fails: " + FirstLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    model.train();
    return Status::InvalidArgument(tried + " fails: " + FirstLine(e.what()));
  }
  const int64_t batch = input.size(0);
  if (!output.is_floating_point()) {
    return Status::InvalidArgument(tried + " returns " + ShapeText(output) + ", not floating point");
  }
  if (loss == Loss::kMse) {
    const bool fits = (output.dim() == 1 && output.size(0) == batch) ||
                      (output.dim() == 2 && output.size(0) == batch && output.size(1) == 1);
    if (!fits) {
      return Status::InvalidArgument(tried + " returns " + ShapeText(output) + "; loss mse needs [" +
                                     std::to_string(batch) + "] or [" + std::to_string(batch) + ", 1]");
    }
    return Status::Ok();
  }
  if (positions > 0) {
    if (loss == Loss::kMse) return Status::InvalidArgument(what + ": loss mse does not take token data");
    if (output.dim() != 3 || output.size(0) != batch || output.size(1) != positions ||
        output.size(2) < classes) {
      return Status::InvalidArgument(tried + " returns " + ShapeText(output) + "; loss " + LossName(loss) +
                                     " on sequences needs [" + std::to_string(batch) + ", " +
                                     std::to_string(positions) + ", V] with V >= " + std::to_string(classes) +
                                     " (the vocabulary: ids run 0.." + std::to_string(classes - 1) + ")");
    }
    return Status::Ok();
  }
  if (output.dim() != 2 || output.size(0) != batch || output.size(1) < classes) {
    return Status::InvalidArgument(tried + " returns " + ShapeText(output) + "; loss " + LossName(loss) +
                                   " needs [" + std::to_string(batch) +
                                   ", C] with C >= " + std::to_string(classes) + " (the labels run 0.." +
                                   std::to_string(classes - 1) + ")");
  }
  return Status::Ok();
}

}  // namespace hetps
