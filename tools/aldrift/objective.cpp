// objective.cpp - rastrigin, levy, ackley and styblinski-tang, shifted to x*.
#include "aldrift/objective.hpp"

#include <cmath>
#include <numbers>

#include "nk/error.hpp"

namespace ald {

namespace {
constexpr double kPi = std::numbers::pi;

/// The coordinate of styblinski-tang's global minimum: the lowest root of
/// 4y^3 - 32y + 5 = 0 (Newton from -3), and its value 0.5 (y^4 - 16 y^2 + 5 y).
struct StMin {
  double y, f;
};
StMin styblinski_min() {
  double y = -3.0;
  for (int i = 0; i < 60; ++i) y -= (4 * y * y * y - 32 * y + 5) / (12 * y * y - 32);
  return {y, 0.5 * (y * y * y * y - 16 * y * y + 5 * y)};
}
}  // namespace

Fn parse_function(const std::string& name) {
  if (name == "rastrigin") return Fn::rastrigin;
  if (name == "levy") return Fn::levy;
  if (name == "ackley") return Fn::ackley;
  if (name == "styblinski-tang") return Fn::styblinski_tang;
  throw nk::usage_error("unknown function '" + name + "' (rastrigin, levy, ackley or styblinski-tang)");
}

const char* function_name(Fn f) {
  switch (f) {
    case Fn::rastrigin: return "rastrigin";
    case Fn::levy: return "levy";
    case Fn::ackley: return "ackley";
    case Fn::styblinski_tang: return "styblinski-tang";
  }
  return "?";
}

Objective make_objective(Fn fn, int n, double amplitude, std::vector<double> x_star) {
  Objective o;
  o.fn = fn;
  o.n = n;
  o.amplitude = amplitude;
  o.x_star = std::move(x_star);
  if (fn == Fn::rastrigin) {
    // 1 - cos(2 pi z) lies in [0, 2 pi^2 z^2].
    o.c1 = 1.0;
    o.c2 = 1.0 + 2 * kPi * kPi * amplitude;
  } else if (fn == Fn::levy) {
    // With w = 1 + z/4: sin^2(pi w_1) = sin^2(pi z_1/4) <= pi^2 z_1^2/16 and each
    // (w_i - 1)^2 = z_i^2/16 carries a factor in [1, 11] (the last in [1, 2]).
    o.c1 = 1.0 / 16;
    o.c2 = (kPi * kPi + 11.0) / 16;
  }
  return o;
}

double Objective::operator()(const double* x) const {
  double d = 0;
  switch (fn) {
    case Fn::rastrigin:
      for (int i = 0; i < n; ++i) {
        const double z = x[i] - x_star[i];
        d += z * z + amplitude * (1 - std::cos(2 * kPi * z));
      }
      return d;
    case Fn::levy: {
      auto w = [&](int i) { return 1.0 + (x[i] - x_star[i]) / 4.0; };
      const double s1 = std::sin(kPi * w(0));
      d = s1 * s1;
      for (int i = 0; i + 1 < n; ++i) {
        const double wi = w(i), s = std::sin(kPi * wi + 1);
        d += (wi - 1) * (wi - 1) * (1 + 10 * s * s);
      }
      const double wn = w(n - 1), sn = std::sin(2 * kPi * wn);
      d += (wn - 1) * (wn - 1) * (1 + sn * sn);
      return d;
    }
    case Fn::ackley: {
      double sq = 0, cs = 0;
      for (int i = 0; i < n; ++i) {
        const double z = x[i] - x_star[i];
        sq += z * z;
        cs += std::cos(2 * kPi * z);
      }
      d = -20 * std::exp(-0.2 * std::sqrt(sq / n)) - std::exp(cs / n) + 20 + std::exp(1.0);
      return std::max(d, 0.0);
    }
    case Fn::styblinski_tang: {
      static const StMin m = styblinski_min();
      for (int i = 0; i < n; ++i) {
        const double y = x[i] - x_star[i] + m.y;
        d += 0.5 * (y * y * y * y - 16 * y * y + 5 * y) - m.f;
      }
      return std::max(d, 0.0);
    }
  }
  return d;
}

}  // namespace ald
