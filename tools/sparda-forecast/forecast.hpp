// forecast.hpp - the Forecast projections, what they read and the KL they
// are trained by.
//
// Target layer m's blocks are forecast from the attention input of its
// source layer, m - 1 (layer 0: its own input, through w_curr): the group
// query f_g(t) = RoPE_t((h(t) W)[g*d .. g*d+d)), one per GQA group, scored
// against layer m's pooled keys as z_j = f_g . Kb_j / sqrt(d) (no softmax
// at selection: blocks are ranked by z).
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/block_select.hpp"
#include "sparda-forecast/trace.hpp"

namespace nk::h5 {
class Writer;
}

namespace sparda {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The selector's settings as root attributes block, init_blocks, local_blocks, topk.
void write_selector_attrs(nk::h5::Writer& out, const nk::lm::BlockSelectorConfig& sel);

/// The layer whose attention input forecasts layer m's blocks.
inline int64_t source_layer(int64_t m) {
  return m == 0 ? 0 : m - 1;
}

struct Forecast {
  int64_t layers = 0, kv_heads = 0, head_dim = 0, d_model = 0;
  /// w[m] [D, Hkv*d] forecasts layer m: w[0] is /layer_00/w_curr, w[m >= 1]
  /// is /layer_(m-1)/w_forecast.
  std::vector<Matrix> w;
  std::vector<MatrixF> wf;  ///< float copies transposed, [Hkv*d, D] (out, in): what selection multiplies by (finalize())
  /// Training loss per target layer and step (written as /loss [L, steps]).
  std::vector<std::vector<double>> loss;

  /// Reads a forecast file and checks it against the trace it will be used
  /// on (layers, d_model, KV heads, head dimension): exit 3 naming file,
  /// dataset and layer.
  static Forecast read(const std::string& path, const Trace& trace);
  /// The same check against a model's sizes instead of a trace's.
  static Forecast read_for(const std::string& path, int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t d_model,
                           double rope_theta);
  /// Under 'prefix' (a group; empty: the file's root) with the attributes on it.
  void write(nk::h5::Writer& out, const std::string& prefix = "") const;
  /// The group of a model file (train --model) that holds its Forecast.
  static constexpr const char* kEmbedded = "/forecast";
  /// Whether an nk-lm model file carries a Forecast; reading it (checked as read_for).
  static bool embedded(const std::string& model_path);
  static Forecast read_embedded(const std::string& model_path, int64_t layers, int64_t kv_heads, int64_t head_dim,
                                int64_t d_model, double rope_theta);
  /// Makes wf from w.
  void finalize();
};

/// Target layer m of a trace, sequence-major: the source layer's attention
/// input [total, D], layer m's queries [seq][Hq][T_s][d], and pooled keys
/// [seq][Hkv][nb_s][d] (nb_s = T_s / block).
struct Target {
  int64_t layer = 0, block = 0;
  std::vector<float> h, q, k, pooled;  ///< k [seq][Hkv][T_s][d] kept only when asked
  std::vector<int64_t> first_block;    ///< sequence s's blocks start at first_block[s] (size S+1)
  int64_t blocks(int64_t s) const { return first_block[s + 1] - first_block[s]; }
};
Target load_target(const Trace& trace, int64_t m, int64_t block, bool queries = true, bool keys = false);

/// InfiniGen's speculation for target layer m (training-free): the source
/// layer's attention input times layer m's own query projection wq, scored
/// on the r channels that skewing makes largest. Skewing: per KV head g, the
/// orthonormal basis V_g of the top-r eigenvectors of the Gram matrix of the
/// group's post-RoPE queries (q.k = (qV).(kV) for the full basis, so the
/// first r columns carry most of every score); the partial key cache holds
/// the pooled keys' r coordinates in V_g.
struct Speculator {
  Matrix wq;                  ///< [D, Hq*d], layer m's query projection (x W, before RoPE)
  std::vector<Matrix> basis;  ///< per KV head: [d, r]
  int64_t rank = 0;
};
/// Builds the speculator of target layer m from the trace (wq of layer m,
/// calibration on up to 8,192 of its query positions); exit 3 when the trace
/// has no wq.
Speculator make_speculator(const Trace& trace, const Target& tg, int64_t rank);
/// The same from layer m's query projection wq [D, Hq*d] and, per KV head,
/// the Gram matrix [d, d] of its group's post-RoPE queries (a model's
/// calibration forward).
Speculator make_speculator(const Matrix& wq, const std::vector<Eigen::MatrixXd>& grams, int64_t rank);

/// How a selection scores blocks: the selector (both null), the Forecast
/// weight of the target layer, or InfiniGen's speculator.
struct Scorer {
  const MatrixF* forecast = nullptr;
  const Speculator* infinigen = nullptr;
};

/// Layer m's selection for sequence s at query positions [begin, end):
/// [Hkv, end - begin, width] block indices (forced first, -1 padding).
std::vector<int32_t> select_layer(const Trace& trace, const Target& tg, const nk::lm::BlockSelectorConfig& sel,
                                  const Scorer& by, int64_t s, int64_t begin, int64_t end);

/// The sizes selection needs (a trace's or a model's).
struct Shape {
  int64_t heads = 0, kv_heads = 0, head_dim = 0, d_model = 0;
  double rope_theta = 1e4;
};
/// select_layer on one sequence's arrays: the source layer's attention input
/// h [T, D], the target layer's post-RoPE queries q [Hq, T, d] (the
/// selector's) and pooled keys [Hkv, nb, d]; rows begin..end-1.
std::vector<int32_t> select_rows(const Shape& shape, const nk::lm::BlockSelectorConfig& sel, const Scorer& by,
                                 const float* h, const float* q, const float* pooled, int64_t T, int64_t nb,
                                 int64_t begin, int64_t end);

/// Forecast group queries [n, Hkv*d] of n rows of attention input (rows of
/// D floats at stride D) at the given positions.
Matrix forecast_queries(const Matrix& w, const float* h, const int32_t* positions, int64_t n, int64_t kv_heads,
                        int64_t head_dim, double rope_theta);

/// The same in float (selection: the model's own precision and kernels), from
/// wt = Forecast::wf[m], the weight transposed [Hkv*d, D].
Matrix forecast_queries(const MatrixF& w, const float* h, const int32_t* positions, int64_t n, int64_t kv_heads,
                        int64_t head_dim, double rope_theta);

/// KL(p || softmax z) over n blocks; dz = its gradient in z.
double kl_full(const double* p, const double* z, int64_t n, double* dz);
/// The authors' top-k KL: the blocks in 'selected' (1/0 per block) plus one
/// rest bucket holding the mass of all others, for p and for softmax z.
double kl_topk(const double* p, const double* z, int64_t n, const char* selected, double* dz);

}  // namespace sparda
