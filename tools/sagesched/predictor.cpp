// predictor.cpp - the online output-length predictor: a pmf over log-spaced
// bins from three experts (kNN over hashed word n-grams of past prompts, a
// per-category histogram, an online log-linear model) mixed by exponential
// weights on their past log-loss; and a pairwise learning-to-rank scorer.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>

#include "nk/rng.hpp"
#include "sagesched/sagesched.hpp"

namespace sage {

Bins Bins::log_spaced(int64_t max_length, int per_octave) {
  Bins b;
  const double step = 1.0 / per_octave;
  for (int k = 0;; ++k) {
    b.edges.push_back(std::exp2(k * step));
    if (b.edges.back() > static_cast<double>(max_length)) break;
  }
  for (size_t k = 0; k + 1 < b.edges.size(); ++k) b.centre.push_back(std::sqrt(b.edges[k] * b.edges[k + 1]));
  return b;
}

size_t Bins::bin_of(double length) const {
  const double per_octave = 1.0 / std::log2(edges[1]);
  const double k = std::floor(std::log2(std::max(length, 1.0)) * per_octave + 1e-9);
  return static_cast<size_t>(std::clamp(k, 0.0, static_cast<double>(size() - 1)));
}

namespace {

constexpr uint32_t kFeatureBits = 20;
constexpr size_t kPosting = 32;     ///< most recent results kept per n-gram
constexpr size_t kNeighbours = 16;  ///< k of kNN
constexpr size_t kRankRing = 1024;  ///< recent results the ranker pairs with
constexpr double kDiscount = 0.995; ///< forgetting of the experts' log-loss
constexpr double kUniform = 0.002;  ///< uniform mass mixed in so no bin is impossible
constexpr int kExperts = 3;

uint32_t fnv1a(const std::string& s, uint64_t salt) {
  uint64_t h = 1469598103934665603ULL ^ salt;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return static_cast<uint32_t>((h ^ (h >> 29)) & ((1u << kFeatureBits) - 1));
}

/// Hashed unigrams and bigrams of the lower-cased words, the category and the
/// prompt length's octave; sorted, without duplicates.
std::vector<uint32_t> features_of(const std::string& prompt, int32_t category, int64_t prompt_tokens) {
  std::vector<uint32_t> f;
  std::string word, previous;
  auto flush = [&] {
    if (word.empty()) return;
    f.push_back(fnv1a(word, 1));
    if (!previous.empty()) f.push_back(fnv1a(previous + ' ' + word, 2));
    previous = word;
    word.clear();
  };
  for (char c : prompt) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      flush();
    }
  }
  flush();
  f.push_back(fnv1a("category " + std::to_string(category), 3));
  f.push_back(fnv1a("prompt octave " + std::to_string(static_cast<int>(std::log2(std::max<int64_t>(prompt_tokens, 1)))), 4));
  std::sort(f.begin(), f.end());
  f.erase(std::unique(f.begin(), f.end()), f.end());
  return f;
}

}  // namespace

struct Predictor::Impl {
  Bins bins;
  size_t k = 0;
  // kNN: results in order learned, and per n-gram the most recent ones.
  std::vector<float> result_log_length;
  struct Posting {
    uint32_t items[kPosting];
    uint32_t count = 0;  // results ever posted (the ring's write position)
  };
  std::unordered_map<uint32_t, Posting> postings;
  std::vector<float> score;
  std::vector<uint32_t> touched;
  std::vector<double> kernel;  // spread of one neighbour over nearby bins
  // per-category histograms
  std::vector<std::vector<double>> category_counts;
  std::vector<double> category_total;
  std::vector<double> global_counts;
  double global_total = 0;
  // online log-linear model of ln(o): bias per category + weights, AdaGrad
  std::vector<float> weight, weight_g2;
  std::vector<double> category_bias, category_bias_g2, category_var;
  // pairwise ranker
  std::vector<float> rank_weight;
  struct Ranked {
    std::vector<uint32_t> features;
    double log_length;
  };
  std::vector<Ranked> rank_ring;
  size_t rank_next = 0;
  uint64_t rank_draws = 0;
  // mixture
  double loss[kExperts] = {0, 0, 0};
  struct Pending {
    std::vector<uint32_t> features;
    int32_t category;
    std::vector<float> expert;  // kExperts x k pmfs
    double rank_score;
  };
  std::unordered_map<int64_t, Pending> pending;

  explicit Impl(Bins b) : bins(std::move(b)), k(bins.size()) {
    weight.assign(size_t{1} << kFeatureBits, 0.0f);
    weight_g2.assign(size_t{1} << kFeatureBits, 0.0f);
    rank_weight.assign(size_t{1} << kFeatureBits, 0.0f);
    global_counts.assign(k, 0.0);
    // A neighbour's mass over its bin and the three on each side: a normal of
    // sd 0.3 in ln-length (about a quarter of an octave per bin at 4/octave).
    const double bin_ln = std::log(bins.edges[1]);
    for (int d = -3; d <= 3; ++d) kernel.push_back(std::exp(-0.5 * std::pow(d * bin_ln / 0.3, 2)));
    double sum = 0;
    for (double v : kernel) sum += v;
    for (double& v : kernel) v /= sum;
  }

  void ensure_category(int32_t c) {
    const auto need = static_cast<size_t>(c) + 1;
    if (category_counts.size() < need) {
      category_counts.resize(need, std::vector<double>(k, 0.0));
      category_total.resize(need, 0.0);
      category_bias.resize(need, std::log(64.0));
      category_bias_g2.resize(need, 0.0);
      category_var.resize(need, 1.0);
    }
  }

  void prior(int32_t c, float* out) const {
    // Category histogram with a Dirichlet prior of 2 pseudo-counts spread as
    // the global histogram (itself with one pseudo-count spread uniformly).
    for (size_t b = 0; b < k; ++b) {
      const double global = (global_counts[b] + 1.0 / static_cast<double>(k)) / (global_total + 1.0);
      out[b] = static_cast<float>((category_counts[static_cast<size_t>(c)][b] + 2 * global) /
                                  (category_total[static_cast<size_t>(c)] + 2));
    }
  }

  void knn(const std::vector<uint32_t>& f, const float* fallback, float* out) {
    const double n = static_cast<double>(result_log_length.size());
    if (score.size() < result_log_length.size()) score.resize(result_log_length.size(), 0.0f);
    for (uint32_t feature : f) {
      const auto it = postings.find(feature);
      if (it == postings.end()) continue;
      const Posting& p = it->second;
      const uint32_t held = std::min<uint32_t>(p.count, kPosting);
      const auto idf = static_cast<float>(std::log(1.0 + n / p.count));
      for (uint32_t j = 0; j < held; ++j) {
        const uint32_t r = p.items[j];
        if (score[r] == 0.0f) touched.push_back(r);
        score[r] += idf;
      }
    }
    if (touched.empty()) {
      std::copy(fallback, fallback + k, out);
      return;
    }
    const size_t keep = std::min(kNeighbours, touched.size());
    std::partial_sort(touched.begin(), touched.begin() + static_cast<std::ptrdiff_t>(keep), touched.end(),
                      [&](uint32_t a, uint32_t b) { return score[a] > score[b] || (score[a] == score[b] && a > b); });
    std::fill(out, out + k, 0.0f);
    double total = 0;
    for (size_t j = 0; j < keep; ++j) {
      const uint32_t r = touched[j];
      const double w = score[r];
      const auto centre = static_cast<int64_t>(bins.bin_of(std::exp(result_log_length[r])));
      for (int d = -3; d <= 3; ++d) {
        const int64_t b = std::clamp<int64_t>(centre + d, 0, static_cast<int64_t>(k) - 1);
        out[b] += static_cast<float>(w * kernel[static_cast<size_t>(d + 3)]);
      }
      total += w;
    }
    for (uint32_t r : touched) score[r] = 0.0f;
    touched.clear();
    // Shrink towards the prior by the neighbours' evidence (16 full matches ~ all kNN).
    const double trust = total / (total + 4.0 * std::log(2.0 + n));
    for (size_t b = 0; b < k; ++b) out[b] = static_cast<float>(trust * out[b] / total + (1 - trust) * fallback[b]);
  }

  double model_mean(const std::vector<uint32_t>& f, int32_t c) const {
    const double scale = 1.0 / std::sqrt(static_cast<double>(f.size()));
    double mu = category_bias[static_cast<size_t>(c)];
    for (uint32_t feature : f) mu += scale * weight[feature];
    return mu;
  }

  void model(const std::vector<uint32_t>& f, int32_t c, float* out) const {
    const double mu = model_mean(f, c), sd = std::sqrt(category_var[static_cast<size_t>(c)]);
    double previous = 0;
    for (size_t b = 0; b < k; ++b) {
      const double upper = b + 1 == k ? 1.0 : 0.5 * std::erfc(-(std::log(bins.edges[b + 1]) - mu) / (sd * std::sqrt(2.0)));
      out[b] = static_cast<float>(upper - previous);
      previous = upper;
    }
  }

  double rank(const std::vector<uint32_t>& f) const {
    double s = 0;
    for (uint32_t feature : f) s += rank_weight[feature];
    return s;
  }
};

Predictor::Predictor(Bins bins, uint64_t seed) : impl_(std::make_unique<Impl>(std::move(bins))) {
  impl_->rank_draws = seed;
}
Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

const Bins& Predictor::bins() const { return impl_->bins; }

void Predictor::predict(int64_t id, const std::string& prompt, int32_t category, int64_t prompt_tokens, double* pmf) {
  Impl& m = *impl_;
  m.ensure_category(category);
  Impl::Pending p;
  p.features = features_of(prompt, category, prompt_tokens);
  p.category = category;
  p.expert.assign(kExperts * m.k, 0.0f);
  float* prior = p.expert.data();
  float* knn = prior + m.k;
  float* model = knn + m.k;
  m.prior(category, prior);
  m.knn(p.features, prior, knn);
  m.model(p.features, category, model);
  double best = m.loss[0];
  for (double l : m.loss) best = std::min(best, l);
  double w[kExperts], wsum = 0;
  for (int e = 0; e < kExperts; ++e) wsum += (w[e] = std::exp(-(m.loss[e] - best)));
  for (size_t b = 0; b < m.k; ++b) {
    double v = 0;
    for (int e = 0; e < kExperts; ++e) v += w[e] / wsum * p.expert[static_cast<size_t>(e) * m.k + b];
    pmf[b] = (1 - kUniform) * v + kUniform / static_cast<double>(m.k);
  }
  double total = 0;
  for (size_t b = 0; b < m.k; ++b) total += pmf[b];
  for (size_t b = 0; b < m.k; ++b) pmf[b] /= total;
  p.rank_score = m.rank(p.features);
  m.pending[id] = std::move(p);
}

double Predictor::rank_score(int64_t id) const {
  const auto it = impl_->pending.find(id);
  return it == impl_->pending.end() ? 0.0 : it->second.rank_score;
}

void Predictor::learn(int64_t id, int64_t output_tokens) {
  Impl& m = *impl_;
  const auto it = m.pending.find(id);
  if (it == m.pending.end()) return;
  Impl::Pending p = std::move(it->second);
  m.pending.erase(it);
  const double y = std::log(static_cast<double>(output_tokens));
  const size_t bin = m.bins.bin_of(static_cast<double>(output_tokens));
  // Experts' log-loss on this result, from the pmfs they gave at its arrival.
  for (int e = 0; e < kExperts; ++e) {
    const double q = (1 - kUniform) * p.expert[static_cast<size_t>(e) * m.k + bin] + kUniform / static_cast<double>(m.k);
    m.loss[e] = kDiscount * m.loss[e] - std::log(q);
  }
  // Histograms.
  const auto c = static_cast<size_t>(p.category);
  m.category_counts[c][bin] += 1;
  m.category_total[c] += 1;
  m.global_counts[bin] += 1;
  m.global_total += 1;
  // Log-linear model: one AdaGrad step on the squared error of ln(o); the
  // residual variance per category as an exponential average.
  const double residual = y - m.model_mean(p.features, p.category);
  m.category_var[c] = 0.98 * m.category_var[c] + 0.02 * std::max(residual * residual, 0.01);
  const double lr = 0.2, scale = 1.0 / std::sqrt(static_cast<double>(p.features.size()));
  m.category_bias_g2[c] += residual * residual;
  m.category_bias[c] += lr * residual / std::sqrt(m.category_bias_g2[c] + 1e-8);
  for (uint32_t f : p.features) {
    const double g = residual * scale;
    m.weight_g2[f] += static_cast<float>(g * g);
    m.weight[f] += static_cast<float>(lr * g / std::sqrt(m.weight_g2[f] + 1e-8));
  }
  // kNN index.
  const auto r = static_cast<uint32_t>(m.result_log_length.size());
  m.result_log_length.push_back(static_cast<float>(y));
  for (uint32_t f : p.features) {
    Impl::Posting& post = m.postings[f];
    post.items[post.count % kPosting] = r;
    ++post.count;
  }
  // Ranker: pairwise logistic steps against up to four recent results.
  const double s = m.rank(p.features);
  for (int pair = 0; pair < 4 && !m.rank_ring.empty(); ++pair) {
    m.rank_draws = nk::mix64(m.rank_draws + 0x9e3779b97f4a7c15ULL);
    const Impl::Ranked& other = m.rank_ring[m.rank_draws % m.rank_ring.size()];
    if (std::fabs(other.log_length - y) < 1e-9) continue;
    const double sign = y > other.log_length ? 1.0 : -1.0;  // want sign (s - s_other) > 0
    const double margin = sign * (s - m.rank(other.features));
    const double g = 0.05 / (1 + std::exp(margin));  // step of log(1 + exp(-margin))
    for (uint32_t f : p.features) m.rank_weight[f] += static_cast<float>(g * sign);
    for (uint32_t f : other.features) m.rank_weight[f] -= static_cast<float>(g * sign);
  }
  Impl::Ranked entry{std::move(p.features), y};
  if (m.rank_ring.size() < kRankRing) {
    m.rank_ring.push_back(std::move(entry));
  } else {
    m.rank_ring[m.rank_next] = std::move(entry);
  }
  m.rank_next = (m.rank_next + 1) % kRankRing;
}

// ---------------------------------------------------------------------------

double pmf_mean(const Bins& bins, const double* pmf) {
  double mean = 0;
  for (size_t b = 0; b < bins.size(); ++b) mean += pmf[b] * bins.centre[b];
  return mean;
}

double pmf_quantile(const Bins& bins, const double* pmf, double q) {
  double cum = 0;
  for (size_t b = 0; b < bins.size(); ++b) {
    if (pmf[b] > 0 && cum + pmf[b] >= q) {
      const double f = (q - cum) / pmf[b];
      return std::exp2(std::log2(bins.edges[b]) + f * (std::log2(bins.edges[b + 1]) - std::log2(bins.edges[b])));
    }
    cum += pmf[b];
  }
  return bins.edges.back();
}

Losses pmf_losses(const Bins& bins, const double* pmf, double y) {
  Losses l;
  // CRPS over x = log2(length): the CDF rises linearly within each bin.
  const double ly = std::log2(y);
  double cum = 0;
  for (size_t b = 0; b < bins.size(); ++b) {
    const double a = std::log2(bins.edges[b]), e = std::log2(bins.edges[b + 1]);
    const double fa = cum, fe = cum + pmf[b];
    auto piece = [](double x0, double x1, double f0, double f1, double h) {
      const double u = f0 - h, v = f1 - h;
      return (x1 - x0) * (u * u + u * v + v * v) / 3.0;
    };
    if (ly <= a) {
      l.crps += piece(a, e, fa, fe, 1.0);
    } else if (ly >= e) {
      l.crps += piece(a, e, fa, fe, 0.0);
    } else {
      const double fy = fa + (fe - fa) * (ly - a) / (e - a);
      l.crps += piece(a, ly, fa, fy, 0.0) + piece(ly, e, fy, fe, 1.0);
    }
    cum = fe;
  }
  const double top = std::log2(bins.edges.back());
  if (ly > top) l.crps += (ly - top) * (1 - cum) * (1 - cum);  // truth beyond the last edge
  auto pinball = [&](double tau) {
    const double d = y - pmf_quantile(bins, pmf, tau);
    return std::max(tau * d, (tau - 1) * d);
  };
  l.pinball50 = pinball(0.5);
  l.pinball90 = pinball(0.9);
  l.mae = std::fabs(y - pmf_mean(bins, pmf));
  return l;
}

}  // namespace sage
