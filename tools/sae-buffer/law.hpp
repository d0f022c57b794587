// law.hpp - the data-constrained law of SAE quality and its two baselines,
// fitted by Huber loss on log FVU with L-BFGS from a grid of starts.
//
//   law       FVU = E + A D'^-alpha [+ C N^-gamma],
//             D' = U (1 + R* (1 - exp(-(B/U - 1) / R*)))   (Muennighoff et al. 2023)
//   power_b   FVU = E + A B^-a                (no discount for repetition)
//   power_ub  FVU = E + A U^-a B^-b
// FVU = 1 - EV. Every parameter is positive and fitted as its logarithm.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sb {

struct GridPoint {
  double U = 0, B = 0, latents = 0, fvu = 0;
};

enum class LawKind { law, law_latents, power_b, power_ub };
std::string law_name(LawKind kind);
/// Parameter names in order (law: E, A, alpha, Rstar; law_latents: + C, gamma;
/// power_b: E, A, a; power_ub: E, A, a, b).
std::vector<std::string> law_parameters(LawKind kind);

/// The effective data D' of U unique rows seen B times in all (B >= U).
double effective_data(double U, double B, double r_star);
/// The predicted FVU at a point for parameters in natural units.
double predict_fvu(LawKind kind, const std::vector<double>& params, const GridPoint& p);

struct LawFit {
  LawKind kind = LawKind::law;
  std::vector<double> params;  ///< natural units, law_parameters' order
  double loss = 0;             ///< the Huber objective at the optimum
  int64_t starts = 0;
};
/// Minimises sum_i huber(log predicted_i - log fvu_i, delta) over 'points'
/// from every start of a grid; exit 3 when there are fewer points than parameters.
LawFit fit_law(LawKind kind, const std::vector<GridPoint>& points, double delta = 1e-3);

/// Minimises f from x0 by L-BFGS (memory 10) with a backtracking Armijo line
/// search; 'gradient' fills g at x and returns f(x).
double lbfgs_minimize(const std::function<double(const std::vector<double>&, std::vector<double>&)>& gradient,
                      std::vector<double>& x, int iterations = 500);

/// The buffer-sizing rule: the smallest integer U in [1, B] with
/// 1 - FVU(U, B) >= (1 - tolerance) (1 - FVU(B, B)) (FVU decreases in U).
int64_t smallest_buffer(const LawFit& fit, double B, double latents, double tolerance);

}  // namespace sb
