// realism.cpp - see realism.hpp.
#include "invariance-audit/realism.hpp"

#include <algorithm>

#include "invariance-audit/invariance_audit.hpp"
#include "invariance-audit/metrics.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/rng.hpp"

namespace ia {

namespace {
constexpr int64_t kChunk = 256;
}

RealismReference::RealismReference(const std::string& path, nk::nn::Shape shape, int64_t count, const std::string& evaluator,
                                   uint64_t seed)
    : n(count) {
  nk::data::Options accept;
  accept.unit_range = true;  // the U-Net prior and the extractors take pixels in [0,1]
  accept.vectors = false;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source reference = nk::data::Source::open(path, accept);
  const nk::nn::Shape rs{reference.height(), reference.width(), reference.channels()};
  if (!(rs == shape)) throw nk::input_error(path, reference.dataset(), "items are " + rs.text() + ", the queries " + shape.text());
  if (reference.count() < n + 2) {
    throw nk::input_error(path, reference.dataset(), "holds " + std::to_string(reference.count()) + " images; the realism measure compares " +
                                                         std::to_string(n) + " samples with as many of them and needs a few more");
  }
  nk::data::check_run_items(path, reference.dataset(), reference.count());
  const int64_t d = shape.size();
  const nk::h5::Array<float> all = reference.read_all();
  std::vector<int64_t> order(static_cast<size_t>(reference.count()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  nk::Rng pick = nk::Rng(seed).split(0x7e57);
  nk::shuffle(order, pick);
  held = std::min(n, reference.count() - n);
  ref.resize(static_cast<size_t>(n * d));
  real.resize(static_cast<size_t>(held * d));
  for (int64_t i = 0; i < n; ++i) std::copy_n(all.data.data() + order[i] * d, d, ref.begin() + i * d);
  for (int64_t i = 0; i < held; ++i) std::copy_n(all.data.data() + order[n + i] * d, d, real.begin() + i * d);
  evaluator_ = open_extractor(evaluator_spec(evaluator), shape, kChunk);
  ref_features = features(ref.data(), n);
}

std::vector<float> RealismReference::features(const float* x, int64_t count) {
  const int64_t d = evaluator_->input().size(), F = evaluator_->dim();
  std::vector<float> f(static_cast<size_t>(count * F));
  for (int64_t s = 0; s < count; s += kChunk) evaluator_->features(x + s * d, std::min(kChunk, count - s), f.data() + s * F);
  return f;
}

double RealismReference::frechet(const float* x, int64_t count) {
  return frechet_distance(features(x, count), count, ref_features, n, evaluator_->dim());
}

}  // namespace ia
