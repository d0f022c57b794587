// sae_buffer.hpp - the verbs of sae-buffer: synthetic activations (gen),
// token labels (labels), SAE training from a replayed buffer (train), its
// evaluation (eval), the (U, B) grid (grid), the data-constrained law (fit)
// and the buffer-sizing rule (size).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/run_env.hpp"
#include "sae-buffer/activations.hpp"
#include "sae-buffer/autointerp.hpp"
#include "sae-buffer/trainer.hpp"

namespace sb {

inline constexpr const char* kEvalSchema = "sae-buffer.eval/1";
inline constexpr const char* kGridSchema = "sae-buffer.grid/1";
inline constexpr const char* kFitSchema = "sae-buffer.fit/1";
inline constexpr const char* kSizeSchema = "sae-buffer.size/1";
inline constexpr const char* kLabelsSchema = "sae-buffer.labels/1";

struct GenOptions {
  std::string output = "-";
  bool no_clobber = false;
  SyntheticSpec spec;
  int64_t rows = 65536, first_row = 0;
};
/// /acts [N, m] float32 (generator rows first_row ..), /truth/dictionary
/// [F, m], /truth/frequency [F]; the generator's parameters as root attributes.
void gen(const GenOptions& options, const nk::RunEnv& env);

struct TrainOptions {
  std::string input, hook, output = "-";
  bool no_clobber = false;
  TrainConfig config;
};
/// /sae/* (trainer.hpp), /train/buffer_rows [U], /train/usage [U],
/// /train/curve/{samples, mse, l0, dead_fraction}.
void train(const TrainOptions& options, const nk::RunEnv& env);

struct EvalOptions {
  std::string input, acts, hook, truth, labels, output = "-";
  bool no_clobber = false;
  int64_t rows = 0;  ///< evaluate on the first N rows of --acts (0: all)
  JudgeOptions judge;  ///< --judge-cmd: automated interpretability (autointerp.hpp)
};
/// Attributes ev, mse, l0, dead_fraction on /eval; with --truth mmcs,
/// recovered and /eval/best_cosine [F]; with --labels the probes (probe.hpp);
/// with --judge-cmd autointerp_score and /eval/autointerp/{latent, score}.
void eval(const EvalOptions& options, const nk::RunEnv& env);

/// Held-out activations for a grid: --heldout FILE, or the generator's
/// held-out rows of a synthetic source, or the input's last rows (which
/// buffers then do not draw from).
struct Heldout {
  Matrix<float> x;
  int64_t pool = 0;     ///< rows of the training source buffers may draw from
  std::string source;   ///< what the held-out rows are, for logs and attributes
};
Heldout heldout_split(const Activations& train, const std::string& heldout_path, const std::string& hook, int64_t rows);

struct GridOptions {
  std::string input, hook, heldout, truth, labels, output = "-";
  bool no_clobber = false;
  int64_t heldout_rows = 16384;
  std::vector<int64_t> buffers, budgets, latents;
  double heldout_fraction = 0.3;
  TrainConfig config;
};
/// Every (U, B, n) with B >= U: /grid/{U, B, latents, heldout_ev, mse, l0,
/// dead_fraction, mmcs, probe_f1, absorption} [G] (NaN where not measured),
/// /grid/heldout [G] int8; --shard takes a contiguous slice of the points.
void grid(const GridOptions& options, const nk::RunEnv& env);

/// The columns of a grid file (any integer or float type; a user's own
/// grid needs only /grid/{U, B, heldout_ev}; heldout and latents default to 0).
struct GridColumns {
  std::vector<double> U, B, ev, latents;
  std::vector<int8_t> heldout;
  int64_t dim = 0;  ///< root attribute dim, 0 when absent
};
GridColumns read_grid_columns(const std::string& path);

struct FitOptions {
  std::string input, output = "-", plot;
  double min_buffer = 0;  ///< points with U below it are neither fitted nor scored (the memorisation regime)
  bool no_clobber = false;
};
/// /fit/{law, power_b, power_ub}/predicted [G] (EV) with the parameters and
/// median_rel_err (held-out points) as attributes; --plot an SVG.
void fit(const FitOptions& options, const nk::RunEnv& env);

struct SizeOptions {
  std::string fit, grid, output;
  bool no_clobber = false;
  int64_t budget = 0, latents = 0;
  double tolerance = 0.01;
};
void size(const SizeOptions& options, const nk::RunEnv& env);

struct LabelsOptions {
  std::string input, model, wordnet = "/usr/share/wordnet", output = "-";
  bool no_clobber = false;
};
void labels(const LabelsOptions& options, const nk::RunEnv& env);

}  // namespace sb
