// trainer.hpp - SAE training from a buffer of U unique rows replayed in
// reshuffled epochs until B samples are seen, and the SAE file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "sae-buffer/activations.hpp"
#include "sae-buffer/sae.hpp"

namespace sb {

inline constexpr const char* kSaeSchema = "sae-buffer.sae/1";

struct TrainConfig {
  Arch arch = Arch::topk;
  int64_t latents = 0;    ///< n (0: 16 m)
  int64_t k = 32;         ///< active latents (jumprelu: the L0 the penalty steers to)
  int64_t buffer = 0;     ///< U unique rows
  int64_t budget = 0;     ///< B samples seen
  int64_t batch = 4096;
  double learning_rate = 4e-4;
  double weight_decay = 0.0;    ///< AdamW's decoupled decay of W_enc and W_dec
  double warmup = 0.01;         ///< share of steps with a linear warm-up
  double decay = 0.2;           ///< share of steps at the end with a linear decay to 0
  int64_t dead_window = 0;      ///< samples without firing that make a latent dead (0: max(B/8, 4 batch))
  double threshold_decay = 0.0;  ///< batchtopk: running mean's decay (0: 1 - 1/h, h = min(100, steps/10) steps)
  double l0_coef = 0.0;           ///< jumprelu: fixed L0 coefficient (0: steered so that L0 -> k)
  std::string b_dec_init = "median";  ///< median (geometric) | mean
  LossConfig loss;
  int64_t curve_points = 64;
};

struct Curve {
  std::vector<int64_t> samples;
  std::vector<double> mse, l0, dead_fraction;
};

struct TrainResult {
  Sae sae;                           ///< in the data's own units
  std::vector<int64_t> buffer_rows;  ///< [U] source rows of the buffer
  std::vector<int64_t> usage;        ///< [U] samples drawn from each
  Curve curve;
  double scale = 1;                  ///< the inputs were scaled by this during training (E||s x||^2 = m)
  int64_t steps = 0;
};

/// Trains on U rows of 'source' drawn from its first 'pool' rows (a seeded
/// subset, or rows 0..U-1 of an unbounded synthetic source). Exit 3 when U
/// exceeds the pool or k >= n; B < U is the caller's usage error.
TrainResult train_sae(const Activations& source, int64_t pool, const TrainConfig& config, uint64_t seed,
                      const std::string& progress_label);

/// The seeded buffer: U rows of [0, pool), sorted (nested: the rows for a
/// smaller U are a subset of those for a larger one with the same seed).
std::vector<int64_t> buffer_rows(int64_t pool, int64_t U, bool unbounded, uint64_t seed);

/// /sae/{W_enc [m,n], b_enc [n], W_dec [n,m], b_dec [m], threshold [n]},
/// attributes arch, k, latents, dim on /sae.
void write_sae(nk::h5::Writer& out, const Sae& sae);
/// Reads and checks an SAE file (shapes agree, values finite, decoder rows
/// nonzero, k < n for topk); exit 3 naming file and dataset.
Sae read_sae(const std::string& path);

}  // namespace sb
