// base_currents.hpp - the frozen base's first-layer currents, kept for
// methods that train a delta over the base (masks and LoRA).
//
// With direct coding the first layer's current of an example is the same at
// every step and every epoch: x W0^T + b0. A method that adapts the weights
// as W0 = W_base + Delta (Delta sparse, or low rank) and leaves the bias
// alone gets it as x W_base^T + b0 (computed once per training example,
// one dense product over the training set) plus x Delta^T: per batch a
// sparse product of B x nnz(Delta) multiply-adds (or two thin ones for
// LoRA) in place of the dense B x in x out product. Full fine-tuning moves
// every weight and cannot use it.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "nk/snn/snn.hpp"

// spike-sft's code names the shared spiking network library snn::.
namespace snn = nk::snn;

namespace spike {

/// dst = src^T for row-major matrices (dst resized by the caller), in blocks
/// of 16 source columns; called inside an OpenMP parallel region, whose
/// threads share the blocks (no barrier at the end).
void transpose_into(const Eigen::Ref<const snn::Matrix>& src, snn::Matrix& dst);

/// The masked gradient as a sampled matrix product: for e in [e0, e1),
/// grad[e] = row i of gv_t . row j of x_t (rows of 'steps' floats), where
/// index[e] = i cols + j; each entry summed in a fixed order (AVX2 where the
/// CPU has it).
void sampled_dots(int64_t e0, int64_t e1, const int32_t* index, int64_t cols, const float* gv_t, const float* x_t,
                  int64_t steps, float* grad);

class BaseCurrents {
 public:
  /// True where the first layer's current does not depend on the step: a
  /// dense first layer (an MLP) under direct coding.
  static bool applies(const snn::Config& config);
  /// Bytes the cache of 'examples' rows would take.
  static int64_t bytes_for(const snn::Config& config, int64_t examples);
  /// x W0^T + b0 for every row of examples [N, in] (config must apply).
  BaseCurrents(const snn::Network& base, const snn::Matrix& examples);
  int64_t bytes() const;

  /// The entries of Delta = w - base that may be nonzero until the next
  /// call: the mask and every entry already moved (sorted, flat row-major
  /// indices into W0).
  void set_support(const snn::Matrix& w, const snn::Matrix& base, const std::vector<int32_t>& mask);
  /// The first layer's currents of a batch [B, out]: the cached rows of its
  /// examples plus x Delta^T over the support, from x_t = x^T [in, B] and
  /// Delta's current values (w - base).
  void sparse_currents(const int64_t* examples, const snn::Matrix& x_t, const snn::Matrix& w, const snn::Matrix& base,
                       snn::Matrix& out);
  /// The same for LoRA, Delta = U V^T (U [out, r], V [in, r]): x Delta^T = (x V) U^T.
  void low_rank_currents(const int64_t* examples, const snn::Matrix& x, const Eigen::MatrixXf& u,
                         const Eigen::MatrixXf& v, snn::Matrix& out) const;

 private:
  snn::Matrix cache_;               ///< [N, out]
  std::vector<int32_t> support_;    ///< flat indices, sorted (so grouped by output row)
  std::vector<int64_t> row_start_;  ///< [out + 1]: support_ of row i is [row_start_[i], row_start_[i + 1])
  snn::Matrix delta_t_;             ///< [out, B]: x Delta^T, transposed
  int64_t widest_ = 0;  ///< the most support entries of one row
};

}  // namespace spike
