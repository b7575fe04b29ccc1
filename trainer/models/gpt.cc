#include "trainer/models/gpt.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace hetps {
namespace {

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(int64_t width, int64_t heads)
      : heads_(heads),
        qkv_(register_module("qkv", torch::nn::Linear(width, 3 * width))),
        proj_(register_module("proj", torch::nn::Linear(width, width))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t batch = x.size(0), length = x.size(1), width = x.size(2);
    const int64_t head_width = width / heads_;
    std::vector<torch::Tensor> qkv = qkv_->forward(x).split(width, 2);
    auto heads = [&](const torch::Tensor& t) {
      return t.view({batch, length, heads_, head_width}).transpose(1, 2);
    };
    const torch::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    torch::Tensor scores =
        torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_width)));
    const torch::Tensor future =
        torch::ones({length, length}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    torch::Tensor y = torch::matmul(torch::softmax(scores, -1), v);
    return proj_->forward(y.transpose(1, 2).contiguous().view({batch, length, width}));
  }

 private:
  int64_t heads_;
  torch::nn::Linear qkv_;
  torch::nn::Linear proj_;
};
TORCH_MODULE(CausalSelfAttention);

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(int64_t width)
      : fc_(register_module("fc", torch::nn::Linear(width, 4 * width))),
        proj_(register_module("proj", torch::nn::Linear(4 * width, width))) {}

  torch::Tensor forward(const torch::Tensor& x) { return proj_->forward(torch::gelu(fc_->forward(x))); }

 private:
  torch::nn::Linear fc_;
  torch::nn::Linear proj_;
};
TORCH_MODULE(Mlp);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t width, int64_t heads)
      : ln1_(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        attn_(register_module("attn", CausalSelfAttention(width, heads))),
        ln2_(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        mlp_(register_module("mlp", Mlp(width))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = x + attn_->forward(ln1_->forward(x));
    return x + mlp_->forward(ln2_->forward(x));
  }

 private:
  torch::nn::LayerNorm ln1_;
  CausalSelfAttention attn_;
  torch::nn::LayerNorm ln2_;
  Mlp mlp_;
};
TORCH_MODULE(Block);

class Gpt : public Model {
 public:
  Gpt(const ModelOptions& options, uint32_t vocab)
      : wte_(register_module("wte", torch::nn::Embedding(vocab, options.width))),
        wpe_(register_module("wpe", torch::nn::Embedding(options.context, options.width))),
        blocks_(register_module("blocks", torch::nn::ModuleList())),
        ln_f_(register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.width})))),
        head_(register_module(
            "head", torch::nn::Linear(torch::nn::LinearOptions(options.width, vocab).bias(false)))) {
    for (uint32_t i = 0; i < options.layers; ++i) {
      Block block(options.width, options.heads);
      blocks_->push_back(block);
      layers_.push_back(block);
    }
    ResetParameters(options.layers);
  }

  torch::Tensor forward(torch::Tensor ids) override {
    const torch::Tensor positions =
        torch::arange(ids.size(1), torch::TensorOptions().dtype(torch::kLong).device(ids.device()));
    torch::Tensor x = wte_->forward(ids) + wpe_->forward(positions);
    for (Block& block : layers_) x = block->forward(x);
    return head_->forward(ln_f_->forward(x));
  }

 private:
  // As gpt.py's reset_parameters, name for name.
  void ResetParameters(uint32_t layers) {
    torch::NoGradGuard no_grad;
    auto ends_with = [](const std::string& text, const std::string& end) {
      return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
    };
    for (auto& item : named_parameters()) {
      const std::string& name = item.key();
      torch::Tensor& p = item.value();
      if (ends_with(name, ".bias")) {
        p.zero_();
      } else if (name.find(".ln") != std::string::npos || name.rfind("ln_f", 0) == 0) {
        p.fill_(1);
      } else if (ends_with(name, "proj.weight")) {
        p.normal_(0, 0.02 / std::sqrt(2.0 * layers));
      } else {
        p.normal_(0, 0.02);
      }
    }
  }

  torch::nn::Embedding wte_;
  torch::nn::Embedding wpe_;
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm ln_f_;
  torch::nn::Linear head_;
  std::vector<Block> layers_;  // blocks_, typed
};

}  // namespace

Result<std::shared_ptr<Model>> BuildGpt(const ModelOptions& options, uint32_t vocab) {
  HETPS_RETURN_IF_ERROR(ValidateModelOptions(options));
  if (vocab == 0) return Status::InvalidArgument("model gpt: the data's vocabulary is empty");
  if (options.context == 0) return Status::InvalidArgument("model gpt: a context of 0 positions");
  return std::shared_ptr<Model>(std::make_shared<Gpt>(options, vocab));
}

}  // namespace hetps
