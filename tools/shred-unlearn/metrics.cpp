// metrics.cpp - ROUGE-L, KS, AUC, Min-K%, harmonic mean.
#include "shred-unlearn/metrics.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "nk/error.hpp"
#include "nk/lm/answers.hpp"

namespace shred {

std::vector<std::string> rouge_words(const std::string& text) {
  return nk::lm::answer_words(text);
}

double rouge_l_recall(const std::string& prediction, const std::string& reference) {
  const std::vector<std::string> p = rouge_words(prediction), r = rouge_words(reference);
  if (r.empty()) return 0.0;
  std::vector<int64_t> prev(p.size() + 1, 0), cur(p.size() + 1, 0);
  for (size_t i = 1; i <= r.size(); ++i) {
    for (size_t j = 1; j <= p.size(); ++j)
      cur[j] = r[i - 1] == p[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    std::swap(prev, cur);
  }
  return static_cast<double>(prev[p.size()]) / static_cast<double>(r.size());
}

KsResult ks_2samp_equal(std::vector<double> a, std::vector<double> b) {
  if (a.empty() || a.size() != b.size())
    throw nk::usage_error("ks_2samp: the samples must be non-empty and of equal size (" + std::to_string(a.size()) +
                          " vs " + std::to_string(b.size()) + ")");
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const int64_t n = static_cast<int64_t>(a.size());
  // max |cdf_a - cdf_b| over the pooled values (right-continuous cdfs).
  double d = 0;
  for (const std::vector<double>* pool : {&a, &b})
    for (double x : *pool) {
      const double ca =
          static_cast<double>(std::upper_bound(a.begin(), a.end(), x) - a.begin()) / static_cast<double>(n);
      const double cb =
          static_cast<double>(std::upper_bound(b.begin(), b.end(), x) - b.begin()) / static_cast<double>(n);
      d = std::max(d, std::fabs(ca - cb));
    }
  // scipy's exact path for n1 == n2: h = round(d n), then Pr(D >= h/n) by
  // the alternating series in Horner form.
  const int64_t h = std::llround(d * static_cast<double>(n));
  KsResult r;
  r.statistic = static_cast<double>(h) / static_cast<double>(n);
  if (h == 0) return r;
  double P = 0;
  for (int64_t k = n / h; k >= 0; --k) {
    double p1 = 1;
    for (int64_t j = 0; j < h; ++j)
      p1 = static_cast<double>(n - k * h - j) * p1 / static_cast<double>(n + k * h + j + 1);
    P = p1 * (1.0 - P);
  }
  r.pvalue = std::clamp(2 * P, 0.0, 1.0);
  return r;
}

double auc(const std::vector<double>& members, const std::vector<double>& non_members) {
  if (members.empty() || non_members.empty()) return std::nan("");
  double wins = 0;
  for (double m : members)
    for (double x : non_members) wins += m > x ? 1.0 : (m == x ? 0.5 : 0.0);
  return wins / (static_cast<double>(members.size()) * static_cast<double>(non_members.size()));
}

double min_k_mean(std::vector<double> values, double fraction) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const size_t k =
      std::max<size_t>(1, static_cast<size_t>(std::llround(fraction * static_cast<double>(values.size()))));
  double s = 0;
  for (size_t i = 0; i < k; ++i) s += values[i];
  return s / static_cast<double>(k);
}

double harmonic_mean(const std::vector<double>& values) {
  double s = 0;
  for (double v : values) {
    if (!(v > 0)) return 0.0;
    s += 1.0 / v;
  }
  return values.empty() ? 0.0 : static_cast<double>(values.size()) / s;
}

}  // namespace shred
