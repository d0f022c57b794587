// louver_codes.hpp - the Louver index of one KV head: in each of S contiguous
// subspaces the keys' sub-vectors are clustered into small balls; a key is
// stored as its cluster code and its exact residual radius per subspace, so
// that sum_s (q_s . mu_{s,c} + |q_s| rho_{i,s}) bounds q . k_i from above.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace nk::louver {

/// Keys per block of the search's key pass (and of HeadIndex::warm_rows).
inline constexpr int64_t kKeyBlock = 512;
/// The key pass sums this many subspaces of the order for every key, then
/// checks the norm bound of the rest (HeadIndex::rest_norm).
inline constexpr int64_t kWarmSubspaces = 4;

/// d dimensions cut into S contiguous subspaces; the first d % S get one more.
struct Subspaces {
  int64_t dims = 0;
  std::vector<int64_t> begin;  ///< S + 1 boundaries
  int64_t count() const { return static_cast<int64_t>(begin.size()) - 1; }
  int64_t width(int64_t s) const { return begin[static_cast<size_t>(s) + 1] - begin[static_cast<size_t>(s)]; }
  static Subspaces split(int64_t dims, int64_t count);
};

struct IndexParams {
  int64_t subspaces = 32;  ///< S
  int64_t branching = 2;   ///< children per split when clustering a subspace
  int64_t leaf_size = 64;  ///< keys per cluster at most (at build time; raised to keep clusters < 65536)
  int64_t buffer = 256;    ///< appended keys scanned exactly before they get codes
};

/// Centroids of one subspace's clusters.
struct Codebook {
  int64_t width = 0;
  std::vector<double> centroid;  ///< [clusters, width]
  std::vector<float> centroid_f32;  ///< the same in float, for the per-query table
  std::vector<double> norm;      ///< [clusters]: |mu|, for rounding margins
  double max_norm = 0;           ///< the largest of 'norm' (derived)
  float max_residual = 0;        ///< largest residual of any coded key
  int64_t clusters() const { return width ? static_cast<int64_t>(norm.size()) : 0; }
};

/// The index of one KV head. Keys keep their original order: key i is row i.
struct HeadIndex {
  std::vector<float> keys;      ///< [n, d]
  std::vector<float> key_norm;  ///< [n]: |k|, rounded up (for the dense scan's float filter)
  std::vector<float> values;    ///< [n, dv] or empty
  std::vector<Codebook> books;  ///< [S]
  std::vector<std::vector<int32_t>> code;    ///< [S][coded]: cluster of key i in subspace s
  std::vector<std::vector<float>> residual;  ///< [S][coded]: |k_{i,s} - mu_{s,code}|, rounded up
  /// Packed copies for the search pass: codes as uint16 and residuals as the
  /// upper 16 bits of the float, rounded up (bfloat16 towards +infinity).
  std::vector<std::vector<uint16_t>> code16, residual16;
  std::vector<float> residual16_max;  ///< [S]: the largest packed residual of each subspace, as float
  /// [S]: the order in which the key pass sums the subspaces' terms, by
  /// decreasing variance of the keys in the subspace (derived, not stored):
  /// the subspaces that separate keys most come first, so that the
  /// progressive pass drops most keys after a few look-ups.
  std::vector<int64_t> order;
  /// The progressive pass reads the first warm = min(kWarmSubspaces, S)
  /// subspaces of the order from warm_rows (for every key) and the others
  /// from 'tail', key-major: [coded][S - warm][code, packed residual], so the
  /// few keys still alive after the warm subspaces read only their own bytes.
  int64_t warm = 0;
  /// The warm subspaces' codes and packed residuals block by block, so that
  /// the warm pass reads one contiguous stream: [coded / 512 blocks, rounded
  /// up][warm][512 words], a key's word being code | packed residual << 16
  /// (its upper half is the residual's float bits: one load gives both).
  std::vector<uint32_t> warm_rows;
  /// After the warm subspaces, the terms of the others sum to at least
  /// q_R . k_R, which is at most |q_R| |k_R| (Cauchy-Schwarz over the
  /// remaining dimensions R): a bound per key that prunes far more keys there
  /// than the largest table entries do. [coded + 8]: |k_R| rounded up, then
  /// eight zeros (for eight-lane loads); derived, not stored.
  std::vector<float> rest_norm;
  int64_t tail_stride = 0;      ///< uint16 per key in 'tail': 2 (S - warm), rounded up to 64 bytes
  std::vector<uint16_t> tail;   ///< holds the rows from tail_begin(), 64-byte aligned
  const uint16_t* tail_begin() const {
    const auto at = reinterpret_cast<uintptr_t>(tail.data());
    return tail.data() + ((64 - at % 64) % 64) / sizeof(uint16_t);
  }
  int64_t coded = 0;            ///< keys [coded, n) are the exact buffer
  int64_t built = 0;            ///< keys [0, built) were clustered when the codebooks were made
  int64_t size(int64_t dims) const { return static_cast<int64_t>(keys.size()) / dims; }
};

/// A packed residual (the upper 16 bits of a float, bfloat16) as float.
inline float unpack_residual(uint16_t packed) {
  const uint32_t bits = static_cast<uint32_t>(packed) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The float at or above sqrt(squares) (1 + (terms + 4) eps), eps the double
/// rounding unit: a norm computed in double from 'terms' squares, rounded up.
float norm_up(double squares, int64_t terms);

/// |k_s - mu| computed in double from float coordinates and rounded up past
/// every rounding of that computation, then up to float.
float residual_up(const float* k, const double* mu, int64_t width);

/// Mean over keys of the summed residuals sum_s rho_{i,s}, for keys [begin, end).
double mean_residual(const HeadIndex& head, int64_t begin, int64_t end);

/// Fills the float copies of centroids, the packed codes, the key norms and
/// the subspace order (after building, appending or loading).
void finish_head(HeadIndex& head, int64_t dims);

/// Clusters every subspace of keys [0, n) (balanced principal-direction splits
/// into 'branching' parts until clusters hold at most leaf_size keys) and codes them.
void build_codes(HeadIndex& head, const Subspaces& subspaces, const IndexParams& params);

/// Codes keys [head.coded, n) against the existing codebooks (nearest
/// centroid; the residual is exact whatever the choice, so the guarantee holds).
void code_buffer(HeadIndex& head, const Subspaces& subspaces);

/// The appended (coded) keys' mean summed residual over the built keys' (0 without either).
double residual_ratio(const HeadIndex& head);

/// When appended keys rebuild the codebooks (louver-index append's
/// --rebuild-ratio and --rebuild-growth; 0 turns a rule off).
struct RebuildRule {
  double ratio = 1.25;  ///< appended keys' mean summed residual over the built keys'
  double growth = 2.0;  ///< coded keys over the keys the codebooks were made from
};

/// What one append did.
struct AppendReport {
  bool coded = false;    ///< the buffer was full and got codes
  bool rebuilt = false;  ///< the codebooks were rebuilt over every key
  double ratio = 0;      ///< appended keys' mean residual over the built keys' (after coding)
};

/// Keys [n, dims] (and their values [n, value_dims], when the head keeps
/// values) join the head's exact buffer; a buffer of params.buffer keys or
/// more gets codes against the codebooks, after which the rule may rebuild
/// them over every key (keys that arrive later, at new positions and topics,
/// sit farther from the old centroids). The head is ready to search after it:
/// the derived copies are refreshed when codes changed, and the buffer's key
/// norms are extended otherwise (one decoding step costs O(dims)).
AppendReport append_keys(HeadIndex& head, const Subspaces& subspaces, const IndexParams& params, const float* keys,
                         const float* values, int64_t n, int64_t value_dims, const RebuildRule& rule);

}  // namespace nk::louver
