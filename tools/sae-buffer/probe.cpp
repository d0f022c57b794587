// probe.cpp - logistic probes, sparse probing and first-letter absorption.
#include "sae-buffer/probe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/rng.hpp"

namespace sb {

namespace {

constexpr uint64_t kSplitStream = 11, kCapStream = 12;
constexpr int64_t kMinTrain = 10, kMinTest = 3;  // tokens of a class needed to score it

double f1_score(const std::vector<char>& truth, const std::vector<char>& predicted) {
  int64_t tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    tp += truth[i] && predicted[i];
    fp += !truth[i] && predicted[i];
    fn += truth[i] && !predicted[i];
  }
  return tp + fp + fn > 0 ? 2.0 * static_cast<double>(tp) / static_cast<double>(2 * tp + fp + fn) : 0.0;
}

// At most 'cap' of 'items', a seeded subset in increasing order.
std::vector<int64_t> capped(std::vector<int64_t> items, int64_t cap, uint64_t seed) {
  if (static_cast<int64_t>(items.size()) <= cap) return items;
  nk::Rng rng = nk::Rng(seed).split(kCapStream);
  nk::shuffle_prefix(items, static_cast<size_t>(cap), rng);
  items.resize(static_cast<size_t>(cap));
  std::sort(items.begin(), items.end());
  return items;
}

Matrix<double> gather(const Matrix<float>& x, const std::vector<int64_t>& rows) {
  Matrix<double> out(static_cast<int64_t>(rows.size()), x.cols());
  for (size_t i = 0; i < rows.size(); ++i) out.row(static_cast<int64_t>(i)) = x.row(rows[i]).cast<double>();
  return out;
}

// Activation of 'latent' at row r (0 when it does not fire).
float activation(const CodesT<float>& codes, int64_t r, int32_t latent) {
  for (int64_t e = codes.offsets[r]; e < codes.offsets[r + 1]; ++e)
    if (codes.latent[e] == latent) return codes.value[e];
  return 0.f;
}

// Latents ranked by |mean activation on positives - on negatives| over 'rows'.
std::vector<int32_t> ranked_latents(const CodesT<float>& codes, int64_t latents, const std::vector<int64_t>& rows,
                                    const std::vector<char>& positive, int64_t top, bool signed_difference = false) {
  std::vector<double> pos(static_cast<size_t>(latents), 0.0), neg(pos.size(), 0.0);
  int64_t npos = 0, nneg = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto& sum = positive[i] ? pos : neg;
    (positive[i] ? npos : nneg)++;
    for (int64_t e = codes.offsets[rows[i]]; e < codes.offsets[rows[i] + 1]; ++e) sum[codes.latent[e]] += codes.value[e];
  }
  std::vector<double> score(pos.size());
  for (size_t j = 0; j < pos.size(); ++j) {
    const double d = pos[j] / std::max<int64_t>(1, npos) - neg[j] / std::max<int64_t>(1, nneg);
    score[j] = signed_difference ? d : std::abs(d);
  }
  std::vector<int32_t> order(pos.size());
  std::iota(order.begin(), order.end(), 0);
  const int64_t keep = std::min<int64_t>(top, latents);
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](int32_t a, int32_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
  order.resize(static_cast<size_t>(keep));
  return order;
}

}  // namespace

TokenLabels read_labels(const std::string& path, int64_t rows) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema("sae-buffer.labels/");
  TokenLabels t;
  for (const auto& [name, target] : {std::pair{"/labels/pos", &t.pos}, std::pair{"/labels/first_letter", &t.first_letter}}) {
    f.require(name);
    const auto a = f.read<int32_t>(name, 1, "T");
    if (a.size() != rows)
      throw nk::input_error(path, name, "has " + std::to_string(a.size()) + " labels, the activations have " + std::to_string(rows) +
                                            " rows (label the same tokens that were captured)");
    target->resize(a.data.size());
    for (size_t i = 0; i < a.data.size(); ++i) {
      const int32_t v = a.data[i];
      const bool ok = name[8] == 'p' ? (v >= 0 && v <= kPosClasses) : (v >= -1 && v < 26);
      if (!ok) throw nk::input_error(path, name, "entry " + std::to_string(i) + " is " + std::to_string(v) + " (out of range)");
      (*target)[i] = static_cast<int8_t>(v);
    }
  }
  return t;
}

double Logistic::score(const double* x) const {
  double s = w[w.size() - 1];
  for (int64_t c = 0; c + 1 < w.size(); ++c) s += w[c] * (x[c] - mean[c]) / scale[c];
  return s;
}

Logistic fit_logistic(const Matrix<double>& x, const std::vector<char>& y, double l2, int iterations) {
  const int64_t N = x.rows(), d = x.cols();
  Logistic model;
  model.mean = x.colwise().mean().transpose();
  model.scale = ((x.rowwise() - model.mean.transpose()).colwise().squaredNorm() / std::max<double>(1.0, static_cast<double>(N)))
                    .cwiseSqrt()
                    .transpose();
  for (int64_t c = 0; c < d; ++c)
    if (!(model.scale[c] > 1e-12)) model.scale[c] = 1;
  Matrix<double> z(N, d + 1);
  z.leftCols(d) = (x.rowwise() - model.mean.transpose()).array().rowwise() / model.scale.transpose().array();
  z.col(d).setOnes();
  model.w = Vector<double>::Zero(d + 1);
  for (int it = 0; it < iterations; ++it) {
    const Vector<double> logit = z * model.w;
    Vector<double> p(N), weight(N);
    for (int64_t i = 0; i < N; ++i) {
      p[i] = 1 / (1 + std::exp(-logit[i]));
      weight[i] = std::max(1e-10, p[i] * (1 - p[i]));
      p[i] -= y[i] ? 1.0 : 0.0;
    }
    Vector<double> g = z.transpose() * p;
    Matrix<double> H = z.transpose() * weight.asDiagonal() * z;
    g.head(d) += l2 * static_cast<double>(N) * model.w.head(d);
    H.diagonal().head(d).array() += l2 * static_cast<double>(N);
    const Vector<double> step = H.ldlt().solve(g);
    model.w -= step;
    if (step.norm() < 1e-8 * (1 + model.w.norm())) break;
  }
  return model;
}

ProbeSetup prepare_probes(const Matrix<float>& x, const TokenLabels& labels, uint64_t seed, int64_t cap) {
  const int64_t T = x.rows();
  ProbeSetup s;
  s.pos = labels.pos;
  s.letter = labels.first_letter;
  s.train.assign(static_cast<size_t>(T), 0);
  {
    std::vector<int64_t> order(static_cast<size_t>(T));
    std::iota(order.begin(), order.end(), int64_t{0});
    nk::Rng rng = nk::Rng(seed).split(kSplitStream);
    nk::shuffle(order, rng);
    for (int64_t i = 0; i < (7 * T) / 10; ++i) s.train[order[i]] = 1;
  }
  std::vector<int64_t> train_words, test_words, train_initial, test_initial;
  for (int64_t t = 0; t < T; ++t) {
    if (s.pos[t] > 0) (s.train[t] ? train_words : test_words).push_back(t);
    if (s.letter[t] >= 0) (s.train[t] ? train_initial : test_initial).push_back(t);
  }
  // Raw-activation probes of the part-of-speech tasks.
  const std::vector<int64_t> fit_rows = capped(train_words, cap, seed);
  const Matrix<double> fit_x = gather(x, fit_rows), test_x = gather(x, test_words);
  for (int c = 1; c <= kPosClasses; ++c) {
    std::vector<char> y(fit_rows.size()), truth(test_words.size()), predicted(test_words.size());
    int64_t positives = 0, test_positives = 0;
    for (size_t i = 0; i < fit_rows.size(); ++i) positives += (y[i] = s.pos[fit_rows[i]] == c);
    for (size_t i = 0; i < test_words.size(); ++i) test_positives += (truth[i] = s.pos[test_words[i]] == c);
    if (positives < kMinTrain || static_cast<int64_t>(fit_rows.size()) - positives < kMinTrain || test_positives < kMinTest) continue;
    const Logistic model = fit_logistic(fit_x, y);
    for (size_t i = 0; i < test_words.size(); ++i) predicted[i] = model.score(test_x.row(static_cast<int64_t>(i)).data()) > 0;
    s.f1_raw += f1_score(truth, predicted);
    ++s.tasks;
  }
  if (s.tasks) s.f1_raw /= static_cast<double>(s.tasks);
  // The first-letter probe: one-vs-rest over the letters with enough tokens.
  const std::vector<int64_t> letter_rows = capped(train_initial, cap, seed + 1);
  const Matrix<double> letter_x = gather(x, letter_rows), letter_test = gather(x, test_initial);
  std::vector<Logistic> models;
  for (int L = 0; L < 26; ++L) {
    std::vector<char> y(letter_rows.size());
    int64_t positives = 0, test_positives = 0;
    for (size_t i = 0; i < letter_rows.size(); ++i) positives += (y[i] = s.letter[letter_rows[i]] == L);
    for (const int64_t t : test_initial) test_positives += s.letter[t] == L;
    if (positives < kMinTrain || test_positives < kMinTest) continue;
    s.letters.push_back(L);
    models.push_back(fit_logistic(letter_x, y));
  }
  s.predicted.assign(static_cast<size_t>(T), -1);
  for (size_t i = 0; i < test_initial.size() && !models.empty(); ++i) {
    int best = 0;
    double best_score = -1e300;
    for (size_t l = 0; l < models.size(); ++l) {
      const double v = models[l].score(letter_test.row(static_cast<int64_t>(i)).data());
      if (v > best_score) best_score = v, best = s.letters[l];
    }
    s.predicted[test_initial[i]] = static_cast<int8_t>(best);
  }
  return s;
}

ProbeScores score_probes(const ProbeSetup& s, const CodesT<float>& codes, int64_t latents) {
  const int64_t T = static_cast<int64_t>(s.pos.size());
  ProbeScores out;
  out.f1_raw = s.f1_raw;
  std::vector<int64_t> train_words, test_words, train_initial;
  for (int64_t t = 0; t < T; ++t) {
    if (s.pos[t] > 0) (s.train[t] ? train_words : test_words).push_back(t);
    if (s.letter[t] >= 0 && s.train[t]) train_initial.push_back(t);
  }
  for (int c = 1; c <= kPosClasses; ++c) {
    std::vector<char> y(train_words.size()), truth(test_words.size());
    int64_t positives = 0, test_positives = 0;
    for (size_t i = 0; i < train_words.size(); ++i) positives += (y[i] = s.pos[train_words[i]] == c);
    for (size_t i = 0; i < test_words.size(); ++i) test_positives += (truth[i] = s.pos[test_words[i]] == c);
    if (positives < kMinTrain || static_cast<int64_t>(train_words.size()) - positives < kMinTrain || test_positives < kMinTest) continue;
    for (const int64_t k : {int64_t{1}, int64_t{5}}) {
      const std::vector<int32_t> chosen = ranked_latents(codes, latents, train_words, y, k);
      auto dense = [&](const std::vector<int64_t>& rows) {
        Matrix<double> d(static_cast<int64_t>(rows.size()), static_cast<int64_t>(chosen.size()));
        for (size_t i = 0; i < rows.size(); ++i)
          for (size_t j = 0; j < chosen.size(); ++j) d(static_cast<int64_t>(i), static_cast<int64_t>(j)) = activation(codes, rows[i], chosen[j]);
        return d;
      };
      const Logistic model = fit_logistic(dense(train_words), y);
      const Matrix<double> test_x = dense(test_words);
      std::vector<char> predicted(test_words.size());
      for (size_t i = 0; i < test_words.size(); ++i) predicted[i] = model.score(test_x.row(static_cast<int64_t>(i)).data()) > 0;
      (k == 1 ? out.f1_k1 : out.f1_k5) += f1_score(truth, predicted);
    }
    ++out.tasks;
  }
  if (out.tasks) {
    out.f1_k1 /= static_cast<double>(out.tasks);
    out.f1_k5 /= static_cast<double>(out.tasks);
  }
  // Absorption: correct first-letter predictions whose letter's main latent is silent.
  int64_t correct = 0, silent = 0;
  for (const int L : s.letters) {
    std::vector<char> y(train_initial.size());
    for (size_t i = 0; i < train_initial.size(); ++i) y[i] = s.letter[train_initial[i]] == L;
    const int32_t main_latent = ranked_latents(codes, latents, train_initial, y, 1, true).front();
    for (int64_t t = 0; t < T; ++t) {
      if (s.train[t] || s.letter[t] != L || s.predicted[t] != L) continue;
      ++correct;
      silent += activation(codes, t, main_latent) == 0.f;
    }
  }
  out.letters = static_cast<int64_t>(s.letters.size());
  out.absorption = correct > 0 ? static_cast<double>(silent) / static_cast<double>(correct) : 0.0;
  return out;
}

}  // namespace sb
