// sae.hpp - the sparse autoencoder: its parameters, the three encodings
// (TopK, BatchTopK, JumpReLU) and the loss with its explicit gradient.
//
// Shapes: m = activation width, n = latents, b = rows of a batch.
// Encoding (SAELens's convention): pre = (x - b_dec) W_enc + b_enc;
//   topk       z keeps the k largest of ReLU(pre) per row;
//   batchtopk  training: the k*b largest of ReLU(pre) over the batch;
//              inference: z = pre where pre > threshold (one value);
//   jumprelu   z = pre where pre > threshold_j (one per latent).
// Decoding: x_hat = z W_dec + b_dec; decoder rows have unit norm.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

#include "nk/rng.hpp"

namespace sb {

enum class Arch { topk, batchtopk, jumprelu };
std::string arch_name(Arch arch);
/// "topk" | "batchtopk" | "jumprelu"; exit 3 naming 'where' otherwise.
Arch parse_arch(const std::string& text, const std::string& where);

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

/// The parameters. The encoder is kept transposed (enc = W_enc^T, [n, m]) so
/// that a latent's encoder and decoder weights are both one contiguous row.
template <class T>
struct SaeT {
  Arch arch = Arch::topk;
  int64_t k = 0;
  Matrix<T> enc;       ///< [n, m] = W_enc^T
  Vector<T> b_enc;     ///< [n]
  Matrix<T> dec;       ///< [n, m] = W_dec
  Vector<T> b_dec;     ///< [m]
  Vector<T> threshold; ///< [n]; topk: unused (0); batchtopk: one value repeated

  int64_t dim() const { return dec.cols(); }
  int64_t latents() const { return dec.rows(); }
};
using Sae = SaeT<float>;

/// Unit-norm random decoder rows, the encoder tied to them (W_enc = W_dec^T,
/// as Gao et al. initialise), zero biases; jumprelu thresholds start at
/// 'initial_threshold'.
template <class T>
SaeT<T> init_sae(Arch arch, int64_t dim, int64_t latents, int64_t k, nk::Rng& rng, double initial_threshold = 0.001);

/// Sparse codes of a batch, by row: row r's active latents are
/// latent[offsets[r] .. offsets[r+1]) with their values.
template <class T>
struct CodesT {
  std::vector<int64_t> offsets;
  std::vector<int32_t> latent;
  std::vector<T> value;
  int64_t rows() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t nonzeros() const { return static_cast<int64_t>(latent.size()); }
};

/// pre [b, n] = (x - b_dec) W_enc + b_enc for x [b, m] (row-major).
template <class T>
void pre_activations(const SaeT<T>& sae, const T* x, int64_t rows, Matrix<T>& pre);

/// The inference encoding of the SAE's arch (see the top of this file).
template <class T>
void encode(const SaeT<T>& sae, const Matrix<T>& pre, CodesT<T>& codes);
/// TopK per row: the 'k' largest positive entries of each row of 'pre'
/// (fewer where a row has fewer positive ones), ties to the lower index.
template <class T>
void topk_rows(const Matrix<T>& pre, int64_t k, CodesT<T>& codes);
/// BatchTopK's training selection: the k*b largest positive entries of the
/// whole batch; returns the smallest value kept (0 when none is).
template <class T>
T topk_batch(const Matrix<T>& pre, int64_t k, CodesT<T>& codes);

/// x_hat [b, m] = z W_dec + b_dec.
template <class T>
void decode(const SaeT<T>& sae, const CodesT<T>& codes, T* x_hat);

/// What the loss adds to reconstruction, and how.
struct LossConfig {
  /// TopK/BatchTopK: aux-K loss coefficient (Gao et al.: 1/32) and how many
  /// dead latents reconstruct the residual (0: m/2).
  double aux_coef = 1.0 / 32.0;
  int64_t aux_k = 0;
  /// JumpReLU: L0 penalty coefficient and the rectangle kernel's bandwidth
  /// of the straight-through threshold gradient.
  double l0_coef = 0.0;
  double bandwidth = 0.01;
};

/// Gradient with the shapes of SaeT (threshold: d/d threshold, jumprelu).
template <class T>
struct GradT {
  Matrix<T> enc, dec;
  Vector<T> b_enc, b_dec, threshold;
  void resize_like(const SaeT<T>& sae);
  void zero();
};

struct LossParts {
  double mse = 0;   ///< mean over rows of ||x - x_hat||^2
  double aux = 0;   ///< aux-K term (already times its coefficient)
  double l0 = 0;    ///< mean active latents per row
  double l0_penalty = 0;  ///< jumprelu: l0_coef * l0
  double total() const { return mse + aux + l0_penalty; }
};

/// The training loss of one batch x [b, m] and its gradient:
///   mse: (1/b) sum_r ||x_r - x_hat_r||^2, with the training encoding
///        (topk; batchtopk over the batch; jumprelu);
///   aux (topk, batchtopk, when 'dead' marks any latent): aux_coef (1/b)
///        sum_r ||e_r - e_hat_r||^2, e = x - x_hat held fixed, e_hat the
///        decoding (no bias) of the aux_k largest pre-activations among
///        dead latents;
///   l0 (jumprelu): l0_coef (1/b) sum_r ||z_r||_0, whose threshold gradient
///        (and that of z) is the straight-through estimate with a
///        rectangle kernel of width 'bandwidth' (Rajamanoharan et al. 2024).
/// 'codes' receives the batch's training codes; 'batch_min' (batchtopk) the
/// smallest value kept. grad may be null (loss only).
template <class T>
LossParts loss_and_grad(const SaeT<T>& sae, const T* x, int64_t rows, const LossConfig& config,
                        const std::vector<char>& dead, GradT<T>* grad, CodesT<T>& codes, T* batch_min = nullptr);

/// Removes from each decoder row's gradient its part parallel to the row
/// (the row stays on the unit sphere to first order).
template <class T>
void project_decoder_grad(const SaeT<T>& sae, GradT<T>& grad);
/// Scales every decoder row to unit norm.
template <class T>
void normalize_decoder(SaeT<T>& sae);

}  // namespace sb
