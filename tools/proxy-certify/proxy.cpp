// proxy.cpp - clean forwards, the head, the CRC threshold.
#include "proxy-certify/proxy.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "nk/error.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"
#include "proxy-certify/stats.hpp"

namespace pc {

CleanPass clean_pass(Classifier& model, const nk::data::Source& data, int64_t begin, int64_t end, bool features) {
  const int64_t count = end - begin, classes = model.classes(), cap = model.capacity();
  CleanPass pass;
  pass.cls.resize(count);
  pass.margin.resize(count);
  pass.top_prob.resize(count);
  const bool with_features = features && model.features();
  if (features && !model.has_features()) {
    throw nk::usage_error("the head proxy reads penultimate features: it needs --model (an nk-nn or spike-sft file), not --model-cmd");
  }
  if (features) pass.features.resize(count, model.feature_size());
  std::vector<float> logits(static_cast<size_t>(cap * classes));
  for (int64_t start = begin; start < end; start += cap) {
    const int64_t stop = std::min(end, start + cap), rows = stop - start;
    const nk::h5::Array<float> x = data.read(start, stop);
    model.logits(x.data.data(), rows, logits.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float* z = logits.data() + r * classes;
      int64_t a = 0, b = -1;
      for (int64_t c = 1; c < classes; ++c) {
        if (z[c] > z[a]) b = a, a = c;
        else if (b < 0 || z[c] > z[b]) b = c;
      }
      if (b < 0) b = a == 0 ? 1 : 0;
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - z[a]));
      const int64_t i = start - begin + r;
      pass.cls[i] = a;
      pass.margin[i] = static_cast<double>(z[a]) - static_cast<double>(z[b]);
      pass.top_prob[i] = 1 / sum;
      if (features && with_features) {
        const float* phi = model.features() + r * model.feature_size();
        for (int64_t f = 0; f < model.feature_size(); ++f) pass.features(i, f) = phi[f];
      }
    }
  }
  return pass;
}

namespace {

Eigen::VectorXd head_row(const CleanPass& pass, int64_t i) {
  const int64_t F = pass.features.cols();
  Eigen::VectorXd row(F + 3);
  row.head(F) = pass.features.row(i).transpose();
  row(F) = pass.margin[i];
  row(F + 1) = pass.top_prob[i];
  row(F + 2) = 1;
  return row;
}

}  // namespace

std::vector<double> Head::scores(const CleanPass& pass) const {
  std::vector<double> s(pass.cls.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = weight.dot(head_row(pass, static_cast<int64_t>(i)));
  return s;
}

Head train_head(Classifier& model, const nk::data::Source& data, int64_t n0, int64_t n, double alpha, double sigma,
                uint64_t seed, int64_t batch, nk::DeviceKind device) {
  nk::Stopwatch clock;
  const int64_t count = data.count();
  const CleanPass pass = clean_pass(model, data, 0, count, true);
  // Targets: CERTIFY radii of the training split (a stream apart from every
  // calibration and test stream: seed + 1).
  Smoother smoother(model, sigma, nk::mix64(seed + 1), batch, device);
  Eigen::VectorXd target(count);
  nk::Progress progress("head", count);
  for (int64_t i = 0; i < count; ++i) {
    const nk::h5::Array<float> x = data.read_item(i);
    const Certificate c = certify(smoother, x.data.data(), i, n0, n, alpha);
    target(i) = c.pred == pass.cls[i] ? c.radius : 0.0;
    progress.update(i + 1);
  }
  progress.finish();
  const int64_t F = pass.features.cols();
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(F + 3, F + 3);
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(F + 3);
  for (int64_t i = 0; i < count; ++i) {
    const Eigen::VectorXd row = head_row(pass, i);
    gram.noalias() += row * row.transpose();
    rhs += row * target(i);
  }
  // Ridge, scaled to the features' size; the intercept is not shrunk.
  const double ridge = 1e-3 * gram.diagonal().head(F + 2).mean() + 1e-9;
  for (int64_t j = 0; j < F + 2; ++j) gram(j, j) += ridge;
  Head head;
  head.weight = gram.ldlt().solve(rhs);
  head.items = count;
  head.n = n;
  head.forwards = smoother.forwards() + count;
  head.seconds = clock.seconds();
  return head;
}

void write_head(nk::h5::Writer& out, const Head& head) {
  out.write("/proxy/head/weight", head.weight.data(), {static_cast<int64_t>(head.weight.size())}, "F3");
  out.attr("/proxy/head", "items", head.items);
  out.attr("/proxy/head", "n", head.n);
  out.attr("/proxy/head", "forwards", head.forwards);
  out.attr("/proxy/head", "seconds", head.seconds);
}

Head read_head(const nk::h5::File& file, int64_t feature_size) {
  file.require("/proxy/head/weight");
  const nk::h5::Array<double> w = file.read<double>("/proxy/head/weight", 1, "F3");
  if (w.size() != feature_size + 3) {
    throw nk::input_error(file.path(), "/proxy/head/weight",
                          "has " + std::to_string(w.size()) + " entries, the model's features need " +
                              std::to_string(feature_size + 3) + " (a proxy of another model?)");
  }
  for (int64_t j = 0; j < w.size(); ++j) {
    if (!std::isfinite(w.data[j])) throw nk::input_error(file.path(), "/proxy/head/weight", "entry " + std::to_string(j) + " is not finite");
  }
  Head head;
  head.weight = Eigen::Map<const Eigen::VectorXd>(w.data.data(), w.size());
  return head;
}

std::vector<double> proxy_scores(const std::string& kind, const CleanPass& pass, const Head& head) {
  if (kind == "head") return head.scores(pass);
  return pass.margin;
}

double single_bound(double radius, double sigma) { return 1 / (1 - normal_cdf(radius / sigma)); }

double crc_lambda(const std::vector<double>& scores, const std::vector<double>& losses, double bound, double target) {
  const auto n = static_cast<double>(scores.size());
  const double infinity = std::numeric_limits<double>::infinity();
  auto holds = [&](double loss_sum) { return loss_sum / (n + 1) + bound / (n + 1) <= target; };
  if (!holds(0)) return infinity;
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  double lambda = infinity, loss_sum = 0;
  for (size_t k = 0; k < order.size();) {
    const double threshold = scores[order[k]];
    while (k < order.size() && scores[order[k]] == threshold) loss_sum += losses[order[k++]];
    if (!holds(loss_sum)) break;
    lambda = threshold;
  }
  return lambda;
}

std::string model_fingerprint(const Classifier& model) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto feed = [&](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t j = 0; j < bytes; ++j) hash = (hash ^ p[j]) * 0x100000001b3ULL;
  };
  model.fingerprint(feed);
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace pc
