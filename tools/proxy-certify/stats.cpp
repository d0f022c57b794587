// stats.cpp - Boost.Math's distributions behind the names the paper uses.
#include "proxy-certify/stats.hpp"

#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>

namespace pc {

namespace {
const boost::math::normal_distribution<double> kStandardNormal(0.0, 1.0);
}

double normal_cdf(double z) {
  if (std::isinf(z)) return z > 0 ? 1.0 : 0.0;
  return boost::math::cdf(kStandardNormal, z);
}

double normal_quantile(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  return boost::math::quantile(kStandardNormal, p);
}

double clopper_pearson_lower(int64_t successes, int64_t trials, double alpha) {
  if (successes <= 0) return 0.0;
  const boost::math::beta_distribution<double> beta(static_cast<double>(successes),
                                                    static_cast<double>(trials - successes + 1));
  return boost::math::quantile(beta, alpha);
}

double clopper_pearson_upper(int64_t successes, int64_t trials, double alpha) {
  if (successes >= trials) return 1.0;
  const boost::math::beta_distribution<double> beta(static_cast<double>(successes + 1),
                                                    static_cast<double>(trials - successes));
  return boost::math::quantile(beta, 1 - alpha);
}

double binomial_test_half(int64_t k, int64_t trials) {
  if (trials <= 0) return 1.0;
  const boost::math::binomial_distribution<double> bin(static_cast<double>(trials), 0.5);
  // Symmetric at p = 1/2: twice the smaller tail, which includes k.
  const int64_t low = std::min(k, trials - k);
  const double tail = boost::math::cdf(bin, static_cast<double>(low));
  return std::min(1.0, 2 * tail);
}

double largest_certifiable_radius(int64_t n, double alpha, double sigma) {
  return sigma * normal_quantile(std::pow(alpha, 1.0 / static_cast<double>(n)));
}

}  // namespace pc
