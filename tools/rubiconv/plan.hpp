// plan.hpp - which FFT size convolves which stretch of which document.
//
// Every method is a Plan run by the same engine (engine.hpp), so benchmarks
// compare plans, not implementations: rubiconv's length buckets, one FFT size
// per document (perdoc), one size for all (padded), or one FFT over the whole
// packed row (fullfft, which ignores boundaries).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rubiconv/packing.hpp"

namespace rubiconv {

enum class Method { rubiconv, perdoc, padded, fullfft, direct };
Method parse_method(const std::string& name);
std::string method_name(Method method);

/// A window of fft_size input positions of one row, and the outputs it yields.
/// Inputs outside [doc_begin, doc_end) count as zero; buffer position p holds
/// row position window_begin + p.
struct Item {
  int64_t row = 0;
  int64_t doc_begin = 0, doc_end = 0;
  int64_t window_begin = 0;
  int64_t out_begin = 0, out_end = 0;
};

/// Items sharing one FFT size and one filter spectrum (taps k[h, 0:taps]).
struct Bucket {
  int64_t fft_size = 0;
  int64_t taps = 0;
  bool tiled = false;              ///< items are overlap-save tiles of long documents
  std::vector<Item> items;         ///< causal windows (apply, dk)
  std::vector<Item> anticausal;    ///< tiled buckets: windows for dx (grad)
};

struct PlanOptions {
  int64_t direct_max = 48;        ///< documents up to this length are convolved directly
  int64_t tile = 16384;           ///< overlap-save FFT size for long documents with short filters
  int64_t task_bytes = 1 << 20;  ///< work buffer per thread and task (about a core's L2 cache)
};

struct Plan {
  Method method = Method::rubiconv;
  std::vector<Bucket> buckets;
  std::vector<Item> direct;       ///< short documents, convolved directly
  int64_t task_bytes = 1 << 20;
  /// FFT work in units of N log2 N summed over items (the cost model's figure).
  double fft_cost() const;
  std::string summary() const;
};

/// Filter taps held by a bucket of size n: min(Lk, ceil(n / 2)).
int64_t bucket_taps(int64_t fft_size, int64_t filter_length);
/// True when a whole document of 'length' convolves exactly in one window of fft_size.
bool fits_whole(int64_t length, int64_t fft_size, int64_t filter_length);
/// The smallest size 2^a or 3 * 2^a that fits a whole document.
int64_t whole_bucket_size(int64_t length, int64_t filter_length);

Plan make_plan(Method method, const Packing& packing, int64_t filter_length, const PlanOptions& options);

}  // namespace rubiconv
