// committee.hpp - the network f(x) = sum_j a_j sigma(w_j.x / sqrt d) over a
// data set: its squared error and gradients through two float32 GEMMs per
// block of rows (Z = X W^T, then dW = M^T X), the hot loop of hmc and adam.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "teacher-limits/activation.hpp"
#include "teacher-limits/model.hpp"

namespace tl {

using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// X [rows, d] as float32 (the GEMMs' operand; the data stay float64 in files).
MatrixF to_float(const Matrix& X);

class Committee {
 public:
  /// A committee of width k over inputs of dimension d.
  Committee(Act activation, int64_t k, int64_t d);

  /// L = 1/2 sum_mu (y_mu - f(x_mu))^2 over 'rows' rows of X (float32,
  /// [rows, d], row-major) and y; with gW [k,d] and ga [k] (either may be
  /// null) dL/dW and dL/da. The rows are cut into kChunks fixed chunks whose
  /// sums are added in order, so the result does not depend on --threads.
  double half_sse(const float* X, const double* y, int64_t rows, const Matrix& W, const Vector& a, Matrix* gW,
                  Vector* ga);
  /// out[mu] = f(x_mu) for 'rows' rows of X.
  void predict(const float* X, int64_t rows, const Matrix& W, const Vector& a, double* out);

  int64_t width() const { return k_; }
  int64_t dims() const { return d_; }
  /// Floating-point operations of one half_sse with gradients (the two GEMMs).
  static double gradient_flops(int64_t rows, int64_t k, int64_t d) { return 4.0 * rows * k * d; }

  static constexpr int kChunks = 16;

 private:
  struct Chunk {
    MatrixF z, s, ds;   // [block, k]: pre-activations, sigma, sigma'
    Eigen::VectorXf f;  // [block]: outputs, then -residuals
    MatrixF gW;         // [k, d] partial of M^T X
    Eigen::VectorXd ga;
    double loss = 0;
  };
  // Runs one chunk's rows [begin, end): pre-activations, then (when y is
  // given) the loss and partial gradients, else the outputs into out.
  void run_chunk(Chunk& c, const float* X, const double* y, int64_t begin, int64_t end, bool grad_W, bool grad_a,
                 double* out);
  void activate(Chunk& c, int64_t rows, bool derivative) const;

  Activation act_;
  int64_t k_, d_, block_;
  MatrixF wf_;           // W / sqrt d in float32
  Eigen::VectorXf af_;   // a in float32
  std::vector<Chunk> chunks_;
};

/// Overlap of each teacher feature with the student feature the Hungarian
/// matching gives it: |cos(w*_i, what_pi(i))|, maximising the summed |cos|
/// (nk/assignment.hpp); features left unmatched (student narrower) get 0.
std::vector<double> matched_overlaps(const Matrix& teacher_W, const Matrix& student_W);

}  // namespace tl
