// method.cpp - the sampling methods of an audit (method.hpp).
#include "invariance-audit/method.hpp"

#include <algorithm>
#include <cmath>

#include "invariance-audit/fiber.hpp"
#include "invariance-audit/prior.hpp"
#include "nk/error.hpp"
#include "nk/image.hpp"
#include "nk/nn/flow.hpp"
#include "nk/kernels/vector.hpp"
#include "nk/timer.hpp"

namespace ia {

namespace {

// Feature inversion: Adam on the pixels from uniform noise, projected on
// [0,1], 'iterations' gradient steps on the fiber loss; no prior.
void invert(FiberCost& cost, float* pixels, int64_t batch, int64_t dim, int64_t iterations, double rate) {
  std::vector<float> x(static_cast<size_t>(batch * dim)), grad(x.size()), m(x.size()), v(x.size());
  std::vector<double> c(static_cast<size_t>(batch));
  for (int64_t j = 0; j < batch * dim; ++j) x[j] = to_prior(pixels[j]);
  constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (int64_t k = 1; k <= iterations; ++k) {
    cost.evaluate(x.data(), batch, c.data(), grad.data());
    const double c1 = 1 - std::pow(b1, static_cast<double>(k)), c2 = 1 - std::pow(b2, static_cast<double>(k));
    for (int64_t j = 0; j < batch * dim; ++j) {
      m[j] = static_cast<float>(b1 * m[j] + (1 - b1) * grad[j]);
      v[j] = static_cast<float>(b2 * v[j] + (1 - b2) * grad[j] * grad[j]);
      x[j] -= static_cast<float>(rate * (m[j] / c1) / (std::sqrt(v[j] / c2) + eps));
      x[j] = std::clamp(x[j], -1.0f, 1.0f);
    }
  }
  for (int64_t j = 0; j < batch * dim; ++j) pixels[j] = to_pixel(x[j]);
}

}  // namespace

Method::Method(MethodConfig config, nk::nn::FlowField* prior, int64_t capacity, const Dedicated* dedicated)
    : config_(std::move(config)), prior_(prior), dedicated_(dedicated) {
  const std::string& n = config_.name;
  config_.guide.guide = n == "ndtm" ? nk::nn::Guide::ndtm : n == "dps" ? nk::nn::Guide::dps : nk::nn::Guide::none;
  if (n == "dedicated") {
    if (!dedicated) throw std::logic_error("method dedicated needs its model");
    field_ = std::make_unique<nk::nn::UNetField>(dedicated->net, capacity);
    cond_.resize(static_cast<size_t>(capacity * dedicated->net.config().cond_dim));
  } else if (n != "invert" && !prior) {
    throw std::logic_error("method " + n + " needs a prior");
  }
}

MethodRun Method::run(Extractor& extractor, const float* query, float* x, int64_t S, nk::Rng& rng) {
  const int64_t d = extractor.input().size();
  MethodRun r;
  nk::Stopwatch clock;
  const int64_t ef = extractor.forwards, eb = extractor.backwards;
  FiberCost cost(extractor, query, S);
  if (config_.name == "invert") {
    for (int64_t j = 0; j < S * d; ++j) x[j] = static_cast<float>(rng.uniform());
    invert(cost, x, S, d, config_.guide.steps * config_.guide.inner, config_.invert_rate);
  } else if (dedicated_) {
    // The condition: the query's normalised features, once per sample.
    const std::vector<float>& fq = cost.query_features();
    const int64_t F = dedicated_->net.config().cond_dim;
    if (static_cast<int64_t>(fq.size()) != F) {
      throw nk::usage_error("the dedicated model takes " + std::to_string(F) + " features, " + extractor.name() + " gives " +
                            std::to_string(fq.size()));
    }
    for (int64_t j = 0; j < S; ++j)
      for (int64_t k = 0; k < F; ++k) cond_[j * F + k] = (fq[k] - dedicated_->mean[k]) / dedicated_->scale[k];
    field_->condition(cond_.data());
    nk::kernels::fill_normal(rng, x, S * d);
    r.prior_forwards = nk::nn::integrate(
        [&](const float* xt, float t, int64_t batch, float* v) { field_->velocity(xt, t, batch, v); }, x, S, d,
        config_.guide.steps, nk::nn::Solver::euler);
    for (int64_t j = 0; j < S * d; ++j) x[j] = std::clamp(to_pixel(x[j]), 0.0f, 1.0f);
  } else {
    nk::kernels::fill_normal(rng, x, S * d);
    const nk::nn::GuideCounts counts = nk::nn::guided_sample(*prior_, cost, x, S, d, config_.guide);
    r.prior_forwards = counts.forwards;
    r.prior_backwards = counts.backwards;
    for (int64_t j = 0; j < S * d; ++j) x[j] = std::clamp(to_pixel(x[j]), 0.0f, 1.0f);
  }
  r.seconds = clock.seconds();
  r.mismatch = cost.mismatch(x, S);
  r.extractor_forwards = extractor.forwards - ef;
  r.extractor_backwards = extractor.backwards - eb;
  return r;
}

void write_fiber_grid(const std::string& path, const std::vector<float>& queries, const std::vector<float>& samples,
                const std::vector<float>& variance, int64_t q, int64_t s, nk::nn::Shape shape, bool no_clobber) {
  const int64_t H = shape.h, W = shape.w, C = shape.c, cols = s + 2;
  nk::Image grid;
  grid.width = static_cast<int>(cols * W);
  grid.height = static_cast<int>(q * H);
  grid.channels = C == 3 ? 3 : 1;
  grid.pixels.assign(static_cast<size_t>(grid.width) * grid.height * grid.channels, 0.0f);
  auto tile = [&](int64_t row, int64_t col, const float* img, int64_t channels) {
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        for (int c = 0; c < grid.channels; ++c) {
          const float v = img[(y * W + x) * channels + (channels == 1 ? 0 : c)];
          grid.at(static_cast<int>(row * H + y), static_cast<int>(col * W + x), c) = std::clamp(v, 0.0f, 1.0f);
        }
  };
  std::vector<float> map(static_cast<size_t>(H * W));
  for (int64_t i = 0; i < q; ++i) {
    tile(i, 0, queries.data() + i * shape.size(), C);
    for (int64_t j = 0; j < s; ++j) tile(i, 1 + j, samples.data() + (i * s + j) * shape.size(), C);
    const float* var = variance.data() + i * H * W;
    const float top = *std::max_element(var, var + H * W);
    for (int64_t p = 0; p < H * W; ++p) map[p] = top > 0 ? var[p] / top : 0.0f;
    tile(i, cols - 1, map.data(), 1);
  }
  nk::save_png(path, grid, no_clobber);
}

void pixel_variance(const float* x, int64_t S, nk::nn::Shape shape, float* var) {
  const int64_t d = shape.size();
  for (int64_t p = 0; p < shape.h * shape.w; ++p) {
    double sum = 0;
    for (int64_t c = 0; c < shape.c; ++c) {
      double mean = 0, sq = 0;
      for (int64_t j = 0; j < S; ++j) mean += x[j * d + p * shape.c + c];
      mean /= static_cast<double>(S);
      for (int64_t j = 0; j < S; ++j) sq += std::pow(x[j * d + p * shape.c + c] - mean, 2);
      sum += sq / static_cast<double>(S);
    }
    var[p] = static_cast<float>(sum / static_cast<double>(shape.c));
  }
}

double mean_pairwise_distance(const float* x, int64_t S, int64_t d) {
  double dist = 0;
  int64_t pairs = 0;
  for (int64_t a = 0; a < S; ++a)
    for (int64_t b = a + 1; b < S; ++b, ++pairs) {
      double sq = 0;
      for (int64_t j = 0; j < d; ++j) sq += std::pow(x[a * d + j] - x[b * d + j], 2);
      dist += std::sqrt(sq);
    }
  return pairs > 0 ? dist / static_cast<double>(pairs) : 0.0;
}

}  // namespace ia
