// smoothing.cpp - noisy class counts, CERTIFY and PREDICT.
#include "proxy-certify/smoothing.hpp"

#include <algorithm>

#include "nk/kernels/cuda_call.hpp"
#include "nk/kernels/vector.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "proxy-certify/stats.hpp"

namespace pc {

namespace {

// The network as the smoothing family's layers, or empty when a layer has no device path.
std::vector<nk_nn_layer> device_layers(const nk::nn::Network<float>& net) {
  std::vector<nk_nn_layer> layers;
  for (const auto& L : net.layers) {
    int op = -1;
    switch (L.spec.op) {
      case nk::nn::Op::flatten: op = 0; break;
      case nk::nn::Op::linear: op = 1; break;
      case nk::nn::Op::conv2d: op = 2; break;
      case nk::nn::Op::relu: op = 3; break;
      case nk::nn::Op::maxpool: op = 4; break;
      default: return {};
    }
    layers.push_back({op, L.in.h, L.in.w, L.in.c, L.out.h, L.out.w, L.out.c, L.spec.k, L.spec.stride, L.spec.pad,
                      L.weight.empty() ? nullptr : L.weight.data(), L.bias.empty() ? nullptr : L.bias.data()});
  }
  return layers;
}

// Copies per GPU forward: enough threads to fill a large GPU (the noise is one
// thread per copy), with the batch buffers (two activations and the conv
// columns, float) within 2 GiB.
int64_t gpu_batch(const nk::nn::Network<float>& net, int64_t asked) {
  int64_t widest = net.input().size(), columns = 0;
  for (const auto& L : net.layers) {
    widest = std::max(widest, L.out.size());
    if (L.spec.op == nk::nn::Op::conv2d) columns = std::max(columns, L.out.h * L.out.w * L.spec.in * L.spec.k * L.spec.k);
  }
  const int64_t per_copy = 4 * (2 * widest + columns);
  return std::max<int64_t>(1, std::min<int64_t>(std::max<int64_t>(asked, 65536), (int64_t{2} << 30) / per_copy));
}

}  // namespace

Smoother::Smoother(Classifier& model, double sigma, uint64_t seed, int64_t batch, nk::DeviceKind device)
    : model_(model), sigma_(sigma), seed_(seed), batch_(std::min(batch, model.capacity())) {
  noisy_.resize(static_cast<size_t>(batch_ * model.input().size()));
  logits_.resize(static_cast<size_t>(batch_ * model.classes()));
  counts_.resize(static_cast<size_t>(model.classes()));
  if (device != nk::DeviceKind::cuda) return;
  const std::vector<nk_nn_layer> layers = model.network() ? device_layers(*model.network()) : std::vector<nk_nn_layer>();
  if (layers.empty()) {
    spdlog::warn("--device cuda: {} has a layer (or is a command) without a GPU path; counting on the CPU", model.name());
    return;
  }
  const auto& family = nk::kernels::cuda_family<nk_cuda_smoothing>("proxy-certify (smoothing)");
  nk::kernels::cuda_call("proxy-certify: network upload", family.create, layers.data(), static_cast<long>(layers.size()),
                         static_cast<long>(gpu_batch(*model.network(), batch)), &gpu_);
}

Smoother::~Smoother() {
  if (!gpu_) return;
  char error[256];
  nk::kernels::cuda_family<nk_cuda_smoothing>("proxy-certify (smoothing)").destroy(gpu_, error, sizeof error);
}

const std::vector<int64_t>& Smoother::counts(const float* x, int64_t item, Phase phase, int64_t n) {
  std::fill(counts_.begin(), counts_.end(), 0);
  if (gpu_) {
    const auto& family = nk::kernels::cuda_family<nk_cuda_smoothing>("proxy-certify (smoothing)");
    const long index = static_cast<long>(item);
    std::vector<long long> out(counts_.size());
    nk::kernels::cuda_call("proxy-certify: noisy counts on the GPU", family.counts, gpu_, x, &index, 1L,
                           static_cast<long>(model_.input().size()), static_cast<float>(sigma_),
                           static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(phase),
                           static_cast<long>(n), out.data(), static_cast<nk_cuda_timing*>(nullptr));
    for (size_t c = 0; c < counts_.size(); ++c) counts_[c] = out[c];
    forwards_ += n;
    return counts_;
  }
  const int64_t values = model_.input().size(), classes = model_.classes();
  const nk::Rng stream = nk::Rng(seed_).split(static_cast<uint64_t>(item)).split(static_cast<uint64_t>(phase));
  const auto sigma = static_cast<float>(sigma_);
  for (int64_t start = 0; start < n; start += batch_) {
    const int64_t rows = std::min(batch_, n - start);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      nk::Rng rng = stream.split(static_cast<uint64_t>(start + r));
      float* copy = noisy_.data() + r * values;
      nk::kernels::fill_normal(rng, copy, values, sigma);
      for (int64_t v = 0; v < values; ++v) copy[v] += x[v];
    }
    model_.logits(noisy_.data(), rows, logits_.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float* z = logits_.data() + r * classes;
      ++counts_[static_cast<size_t>(std::max_element(z, z + classes) - z)];
    }
    forwards_ += rows;
  }
  return counts_;
}

Certificate certify_counts(const std::vector<int64_t>& selection, const std::vector<int64_t>& estimation, int64_t n,
                           double alpha, double sigma) {
  Certificate c;
  c.selected = std::max_element(selection.begin(), selection.end()) - selection.begin();
  c.count = estimation[static_cast<size_t>(c.selected)];
  c.p_lower = clopper_pearson_lower(c.count, n, alpha);
  if (c.p_lower >= 0.5) {
    c.pred = c.selected;
    c.radius = sigma * normal_quantile(c.p_lower);
  }
  return c;
}

Certificate certify(Smoother& smoother, const float* x, int64_t item, int64_t n0, int64_t n, double alpha) {
  const std::vector<int64_t> selection = smoother.counts(x, item, Phase::selection, n0);
  const std::vector<int64_t>& estimation = smoother.counts(x, item, Phase::estimation, n);
  return certify_counts(selection, estimation, n, alpha, smoother.sigma());
}

Prediction predict(Smoother& smoother, const float* x, int64_t item, int64_t n, double alpha) {
  const std::vector<int64_t>& counts = smoother.counts(x, item, Phase::prediction, n);
  std::vector<int64_t> order(counts.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = static_cast<int64_t>(c);
  std::partial_sort(order.begin(), order.begin() + 2, order.end(),
                    [&](int64_t a, int64_t b) { return counts[a] > counts[b] || (counts[a] == counts[b] && a < b); });
  Prediction p;
  p.count_a = counts[order[0]];
  p.count_b = counts[order[1]];
  p.p_value = binomial_test_half(p.count_a, p.count_a + p.count_b);
  if (p.p_value <= alpha) p.pred = order[0];
  return p;
}

}  // namespace pc
