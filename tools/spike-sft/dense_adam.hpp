// dense_adam.hpp - Adam over every weight and bias of a network, in float32
// on the network's own values, with the two moments kept beside each layer
// (as PyTorch's Adam); the update runs over the threads (nk::Adam's
// step_entries). pretrain and full fine-tuning (spe --method full) share it.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/nn/optim.hpp"
#include "nk/snn/snn.hpp"

namespace spike {

class DenseAdam {
 public:
  explicit DenseAdam(const nk::snn::Network& net) {
    for (size_t l = 0; l < net.weight.size(); ++l) {
      weight_.emplace_back(static_cast<size_t>(2 * net.weight[l].size()), 0.0f);
      bias_.emplace_back(static_cast<size_t>(2 * net.bias[l].size()), 0.0f);
    }
  }
  /// One update from the gradient; the caller has called adam.begin_step().
  void step(const nk::Adam& adam, nk::snn::Network& net, const nk::snn::DenseGradient& g) {
    for (size_t l = 0; l < net.weight.size(); ++l) {
      update(adam, net.weight[l].data(), g.weight[l].data(), net.weight[l].size(), weight_[l]);
      update(adam, net.bias[l].data(), g.bias[l].data(), net.bias[l].size(), bias_[l]);
    }
  }

 private:
  static void update(const nk::Adam& adam, float* param, const float* grad, int64_t n, std::vector<float>& mv) {
    adam.step_entries(n, grad, mv.data(), mv.data() + n, [param](int64_t e) -> float& { return param[e]; });
  }
  std::vector<std::vector<float>> weight_, bias_;  // per layer: first moments, then second moments
};

}  // namespace spike
