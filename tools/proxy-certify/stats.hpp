// stats.hpp - the distributions randomized smoothing and its calibration
// need (Boost.Math underneath): Gaussian CDF and quantile, Clopper-Pearson
// bounds, the two-sided binomial test.
#pragma once
#include <cstdint>

namespace pc {

/// Phi(z), the standard normal CDF.
double normal_cdf(double z);
/// Phi^-1(p) for p in (0, 1); -inf at 0, +inf at 1.
double normal_quantile(double p);
/// One-sided Clopper-Pearson lower bound at level alpha on a binomial
/// proportion with 'successes' of 'trials': the Beta(successes,
/// trials - successes + 1) quantile at alpha; 0 when successes = 0.
double clopper_pearson_lower(int64_t successes, int64_t trials, double alpha);
/// The upper bound: Beta(successes + 1, trials - successes) quantile at
/// 1 - alpha; 1 when successes = trials.
double clopper_pearson_upper(int64_t successes, int64_t trials, double alpha);
/// Two-sided exact binomial test of p = 1/2: P(|X - t/2| >= |k - t/2|) for
/// X ~ Bin(t, 1/2) (scipy.stats.binomtest's p-value; 1 when t = 0).
double binomial_test_half(int64_t k, int64_t trials);
/// The largest radius CERTIFY can give with n samples at level alpha (all n
/// hits): sigma Phi^-1(alpha^(1/n)).
double largest_certifiable_radius(int64_t n, double alpha, double sigma);

}  // namespace pc
