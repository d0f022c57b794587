// metrics.hpp - what an SAE is judged by: reconstruction (EV, MSE), sparsity
// (L0, dead latents), feature recovery against a known dictionary, and the
// label-based probes (probe.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "sae-buffer/sae.hpp"

namespace sb {

struct Reconstruction {
  double ev = 0;             ///< 1 - sum ||x - x_hat||^2 / sum ||x - mean(x)||^2
  double mse = 0;            ///< per element
  double l0 = 0;             ///< mean active latents per row
  double dead_fraction = 0;  ///< latents that fire on no row
};

/// Encodes x [N, m] with the SAE's inference rule in batches of 'batch' rows.
/// 'codes' (when not null) receives every row's code.
Reconstruction reconstruct(const Sae& sae, const Matrix<float>& x, CodesT<float>* codes = nullptr, int64_t batch = 4096);

struct Recovery {
  double mmcs = 0;       ///< mean over true features of the best cosine with a decoder row
  double recovered = 0;  ///< share of true features whose best cosine is >= 0.9
  std::vector<double> best;  ///< [F] each feature's best cosine
};
/// dictionary [F, m] (rows need not be unit) against the SAE's decoder rows.
Recovery recovery(const Sae& sae, const Matrix<float>& dictionary);

}  // namespace sb
