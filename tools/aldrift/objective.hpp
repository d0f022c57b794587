// objective.hpp - the continuous test functions of the global verb, shifted so
// that the minimum is d(x*) = 0, with their quadratic envelopes
// c1 |x - x*|^2 <= d(x) <= c2 |x - x*|^2 where they have one.
#pragma once
#include <string>
#include <vector>

namespace ald {

enum class Fn { rastrigin, levy, ackley, styblinski_tang };
Fn parse_function(const std::string& name);
const char* function_name(Fn f);

struct Objective {
  Fn fn = Fn::rastrigin;
  int n = 2;
  double amplitude = 1.0;      ///< rastrigin's A
  std::vector<double> x_star;  ///< the minimiser
  double c1 = 0, c2 = 0;       ///< the envelope (0, 0: none)

  bool has_envelope() const { return c2 > 0; }
  /// d(x) - d(x*) >= 0.
  double operator()(const double* x) const;
};

/// The objective 'name' in n dimensions around x_star (size n), with its
/// envelope: rastrigin c1 = 1, c2 = 1 + 2 pi^2 A; levy c1 = 1/16,
/// c2 = (pi^2 + 11)/16; ackley and styblinski-tang have none.
Objective make_objective(Fn fn, int n, double amplitude, std::vector<double> x_star);

}  // namespace ald
