// distribution.hpp - the one spelling of a random quantity on the command line
// ("NAME:A,B", neurkit(7) DISTRIBUTIONS), shared by every generator verb.
#pragma once
#include <string>
#include <vector>

#include "nk/rng.hpp"

namespace nk {

/// "name:a,b,..." split into the name and finite numbers; a usage error
/// (exit 2) naming 'option' for a number that is not one.
struct Spec {
  std::string name;
  std::vector<double> args;
  double arg(size_t i, double fallback) const { return i < args.size() ? args[i] : fallback; }
};
Spec parse_spec(const std::string& option, const std::string& text);

/// A positive random number:
///   lognormal:MEDIAN,SIGMA  exp(ln MEDIAN + SIGMA z), z standard normal
///                           (MEDIAN > 0 is the median, SIGMA >= 0 the log-scale spread)
///   uniform:A,B             uniform on [A, B), 0 < A <= B
///   fixed:X                 always X > 0
///   pareto:XM,SHAPE         XM (1 - u)^(-1/SHAPE), XM, SHAPE > 0
class Distribution {
 public:
  /// 'kinds' limits the names a verb accepts (all four when empty); the
  /// error lists what is accepted.
  Distribution(const std::string& option, const std::string& text, const std::vector<std::string>& kinds = {});
  double operator()(Rng& rng) const;
  const std::string& name() const { return spec_.name; }
  const std::vector<double>& args() const { return spec_.args; }

 private:
  Spec spec_;
};

}  // namespace nk
