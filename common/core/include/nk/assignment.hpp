// assignment.hpp - the linear assignment problem (Hungarian algorithm with
// potentials, O(n^3)): a permutation that maximises the summed score.
#pragma once
#include <Eigen/Core>
#include <vector>

namespace nk {

/// For a square score matrix S (n x n), the permutation p (row i -> column
/// p[i]) that maximises sum_i S(i, p[i]). Exact; ties go to the lower column.
/// Throws std::invalid_argument for a non-square or non-finite matrix.
std::vector<int> max_assignment(const Eigen::MatrixXd& score);

}  // namespace nk
