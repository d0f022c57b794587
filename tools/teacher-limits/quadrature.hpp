// quadrature.hpp - Gauss-Hermite rules for expectations under N(0, 1).
#pragma once
#include <vector>

namespace tl {

/// Nodes x and weights w with sum_j w_j f(x_j) ~ E f(Z), Z ~ N(0, 1), exact
/// for polynomials of degree < 2n (the probabilists' Hermite rule, from the
/// eigen-decomposition of the Jacobi matrix: Golub-Welsch).
struct Quadrature {
  std::vector<double> x, w;
  int size() const { return static_cast<int>(x.size()); }
};
Quadrature gauss_hermite(int n);

}  // namespace tl
