// gittins.cpp - the Gittins index of a discrete cost distribution, and the
// gittins verb that evaluates it for a batch of distributions.
#include <cmath>
#include <limits>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "sagesched/sagesched.hpp"

namespace sage {

GittinsIndex gittins_scan(const double* support, const double* prob, size_t n, double attained, double tail) {
  // For D between support points the ratio P(S - a <= D) / E[min(S - a, D)]
  // has a constant numerator and a growing denominator, so the maximum sits at
  // D = s_j - a for some s_j > a: scan them in order, keeping running sums.
  // Ratios are compared by cross-multiplication (one division in all); a
  // later D wins only when strictly better, so ties keep the smallest D.
  GittinsIndex best;
  if (!(tail > 0)) {
    best.index = std::numeric_limits<double>::infinity();
    return best;
  }
  double done = 0, partial = 0, best_num = 0, best_den = 1;  // P(a < S <= s_j), E[(S - a) 1{a < S <= s_j}]
  for (size_t j = 0; j < n; ++j) {
    const double delta = support[j] - attained;
    done += prob[j];
    partial += prob[j] * delta;
    const double expected = partial + (tail - done) * delta;
    if (done * best_den > best_num * expected) best_num = done, best_den = expected, best.best_delta = delta;
    // E[min(S - a, D)] grows with D and P(S - a <= D) <= tail: no later D
    // beats tail / expected, so stop once that is no better than the best.
    if (tail * best_den <= best_num * expected) break;
  }
  best.index = best_num / best_den;
  return best;
}

GittinsIndex gittins_index(const double* support, const double* prob, size_t n, double attained) {
  size_t first = 0;  // support is increasing: the points above a are a suffix
  while (first < n && !(support[first] > attained)) ++first;
  double tail = 0;
  for (size_t i = first; i < n; ++i) tail += prob[i];
  return gittins_scan(support + first, prob + first, n - first, attained, tail);
}

void gittins_verb(const GittinsOptions& o) {
  const nk::h5::File in = nk::h5::File::open(o.input);
  const auto support = in.read<double>("/support", 2, "M,n");
  const auto prob = in.read<double>("/prob", 2, "M,n");
  const auto attained = in.read<double>("/attained", 1, "M");
  if (prob.shape != support.shape) {
    throw nk::input_error(o.input, "/prob", "shape " + nk::h5::shape_text(prob.shape) + " differs from /support's " +
                                                nk::h5::shape_text(support.shape));
  }
  if (attained.shape[0] != support.shape[0]) {
    throw nk::input_error(o.input, "/attained", "has " + std::to_string(attained.shape[0]) + " entries, /support has " +
                                                    std::to_string(support.shape[0]) + " rows");
  }
  nk::h5::require_finite(o.input, "/support", support);
  nk::h5::require_finite(o.input, "/prob", prob);
  nk::h5::require_finite(o.input, "/attained", attained);
  const int64_t m = support.shape[0], n = support.shape[1];
  if (n < 1) throw nk::input_error(o.input, "/support", "rows of length 0");
  std::vector<double> index(static_cast<size_t>(m)), best_delta(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    const double* s = support.data.data() + r * n;
    const double* p = prob.data.data() + r * n;
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (k > 0 && !(s[k] > s[k - 1])) {
        throw nk::input_error(o.input, "/support", "row " + std::to_string(r) + " is not increasing (index " +
                                                       std::to_string(k) + ")");
      }
      if (p[k] < 0) throw nk::input_error(o.input, "/prob", "row " + std::to_string(r) + " has a negative entry");
      sum += p[k];
    }
    if (std::fabs(sum - 1) > 1e-6) {
      throw nk::input_error(o.input, "/prob", "row " + std::to_string(r) + " sums to " + std::to_string(sum) + ", not 1");
    }
    const GittinsIndex g = gittins_index(s, p, static_cast<size_t>(n), attained.data[static_cast<size_t>(r)]);
    index[static_cast<size_t>(r)] = g.index;
    best_delta[static_cast<size_t>(r)] = g.best_delta;
  }
  nk::h5::Writer out(o.output, kGittinsSchema, o.no_clobber);
  out.allow_nonfinite("/index");  // inf where P(S > a) = 0
  out.write("/index", index.data(), {m}, "M");
  out.write("/best_delta", best_delta.data(), {m}, "M");
  out.commit();
  spdlog::info("{} Gittins index(es)", m);
}

}  // namespace sage
