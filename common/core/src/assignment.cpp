// assignment.cpp - the Hungarian algorithm (shortest augmenting paths with
// row and column potentials; Kuhn-Munkres in the Jonker-Volgenant form).
#include "nk/assignment.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace nk {

std::vector<int> max_assignment(const Eigen::MatrixXd& score) {
  const auto n = static_cast<int>(score.rows());
  if (score.cols() != score.rows()) throw std::invalid_argument("max_assignment: the score matrix must be square");
  if (!score.allFinite()) throw std::invalid_argument("max_assignment: the score matrix holds NaN or Inf");
  if (n == 0) return {};
  // Minimise the cost -score. Rows and columns are 1-based; column 0 is the
  // virtual start of each augmenting path.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0.0), v(n + 1, 0.0);
  std::vector<int> match(n + 1, 0), way(n + 1, 0);  // match[column] = row
  for (int row = 1; row <= n; ++row) {
    match[0] = row;
    int column = 0;
    std::vector<double> slack(n + 1, inf);
    std::vector<char> used(n + 1, 0);
    do {
      used[column] = 1;
      const int i = match[column];
      double delta = inf;
      int next = 0;
      for (int j = 1; j <= n; ++j) {
        if (used[j]) continue;
        const double reduced = -score(i - 1, j - 1) - u[i] - v[j];
        if (reduced < slack[j]) slack[j] = reduced, way[j] = column;
        if (slack[j] < delta) delta = slack[j], next = j;
      }
      for (int j = 0; j <= n; ++j) {
        if (used[j]) {
          u[match[j]] += delta;
          v[j] -= delta;
        } else {
          slack[j] -= delta;
        }
      }
      column = next;
    } while (match[column] != 0);
    do {  // flip the augmenting path
      const int previous = way[column];
      match[column] = match[previous];
      column = previous;
    } while (column != 0);
  }
  std::vector<int> permutation(n);
  for (int j = 1; j <= n; ++j) permutation[match[j] - 1] = j - 1;
  return permutation;
}

}  // namespace nk
