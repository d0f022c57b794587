// activations.hpp - where activations come from: a synthetic superposition
// source with a known dictionary (gen), any file with /acts [N,m], or the
// residual stream of an nk-lm capture file (--hook).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "sae-buffer/sae.hpp"

namespace sb {

inline constexpr const char* kActsSchema = "sae-buffer.acts/1";

/// x = sum_{i active} f_i d_i + noise * N(0, I): F unit directions d_i in R^m
/// (Gaussian, normalised), k draws with replacement from Zipf probabilities
/// p_i ~ i^-zipf (a feature drawn twice is active once, so P(active) =
/// 1 - (1 - p_i)^k), magnitudes f_i = exp(magnitude_sigma z). Row r depends
/// only on (seed, r): a fresh baseline streams rows that were never stored.
struct SyntheticSpec {
  int64_t dim = 64, features = 512, active = 8;
  double zipf = 1.1, noise = 0.05, magnitude_sigma = 0.5;
  uint64_t seed = 0;
};

class Synthetic {
 public:
  explicit Synthetic(const SyntheticSpec& spec);
  const SyntheticSpec& spec() const { return spec_; }
  /// Row r of the source (float32, length m).
  void row(int64_t r, float* out) const;
  /// Rows [begin, end) into out [end-begin, m], in parallel.
  void rows(const int64_t* index, int64_t count, float* out) const;
  const Matrix<float>& dictionary() const { return dictionary_; }  ///< [F, m]
  /// P(feature i active in a row) = 1 - (1 - p_i)^k.
  std::vector<double> frequency() const;

 private:
  SyntheticSpec spec_;
  Matrix<float> dictionary_;
  std::vector<double> probability_;
  std::vector<double> alias_cut_;  ///< Vose's alias table
  std::vector<int64_t> alias_;
};

/// The first row (past a synthetic file's first row) of held-out data: rows
/// of a synthetic source at and beyond it are never used for training.
inline constexpr int64_t kHeldoutFirstRow = int64_t{1} << 50;
/// The training pool of a synthetic source that starts at row 0: unbounded.
inline constexpr int64_t kUnboundedRows = int64_t{1} << 49;

/// A readable source of activation rows [N, m].
class Activations {
 public:
  /// 'path' ('-' = stdin) holding /acts [N, m] float (any schema, or none),
  /// or an nk-lm.capture/1 file, whose /capture/layer_LL/resid 'hook' picks:
  /// early (layer 1), middle (n_layers / 2), last (n_layers, the final
  /// residual) or a layer number; a synthetic file (gen) also regenerates
  /// rows past those it stores. Exit 3 for a wrong shape, dtype or missing
  /// dataset, naming file and dataset.
  static Activations open(const std::string& path, const std::string& hook = "");

  const std::string& path() const { return path_; }
  const std::string& dataset() const { return dataset_; }
  int64_t dim() const { return dim_; }
  int64_t stored_rows() const { return rows_; }
  /// Rows a buffer may draw from: the stored rows, or unbounded for a
  /// synthetic source.
  int64_t pool() const;
  const Synthetic* synthetic() const { return synthetic_.get(); }
  /// Token ids of the rows for a capture file (empty otherwise).
  std::vector<int32_t> tokens() const;
  /// A capture's row offsets [R+1] into the tokens (/capture/offsets, or one row).
  std::vector<int64_t> row_offsets() const;

  /// Rows 'index' (any order) as [count, m]: row i is the file's i-th row,
  /// and for a synthetic source i >= N is generator row first_row + i
  /// (so rows past those stored continue the file). Stored rows are read in
  /// blocks; NaN/Inf is exit 3 naming file, dataset, row and column; a
  /// request beyond memory is refused before allocating (exit 3).
  Matrix<float> read(const std::vector<int64_t>& index) const;
  Matrix<float> read_range(int64_t begin, int64_t end) const;

 private:
  std::string path_, dataset_;
  std::shared_ptr<nk::h5::File> file_;
  int64_t rows_ = 0, dim_ = 0, first_row_ = 0;
  std::shared_ptr<Synthetic> synthetic_;
};

/// Refuses (exit 3) 'rows' x 'dim' floats beyond the memory available.
void require_memory(const std::string& path, const std::string& dataset, int64_t rows, int64_t dim, const char* what);

}  // namespace sb
