// quadrature.cpp - Golub-Welsch for the probabilists' Hermite polynomials.
#include "teacher-limits/quadrature.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <stdexcept>

namespace tl {

Quadrature gauss_hermite(int n) {
  if (n < 1 || n > 400) throw std::invalid_argument("gauss_hermite: 1 <= n <= 400");
  // He_{j+1} = x He_j - j He_{j-1}: the symmetric Jacobi matrix has zero
  // diagonal and off-diagonal sqrt(j); the weights are the squared first
  // components of its unit eigenvectors (the measure has mass 1).
  Eigen::MatrixXd jacobi = Eigen::MatrixXd::Zero(n, n);
  for (int j = 1; j < n; ++j) jacobi(j, j - 1) = jacobi(j - 1, j) = std::sqrt(static_cast<double>(j));
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(jacobi);
  Quadrature q;
  q.x.resize(n);
  q.w.resize(n);
  double total = 0;
  for (int j = 0; j < n; ++j) {
    q.x[j] = solver.eigenvalues()(j);
    q.w[j] = solver.eigenvectors()(0, j) * solver.eigenvectors()(0, j);
    total += q.w[j];
  }
  for (double& w : q.w) w /= total;
  // Symmetrise: the rule is exactly symmetric, the eigensolver nearly so.
  for (int j = 0; j < n / 2; ++j) {
    const double x = 0.5 * (q.x[n - 1 - j] - q.x[j]), w = 0.5 * (q.w[j] + q.w[n - 1 - j]);
    q.x[j] = -x;
    q.x[n - 1 - j] = x;
    q.w[j] = q.w[n - 1 - j] = w;
  }
  if (n % 2 == 1) q.x[n / 2] = 0;
  return q;
}

}  // namespace tl
