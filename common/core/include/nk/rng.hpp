// rng.hpp - seeded, splittable random streams.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace nk {

/// xoshiro256** seeded through SplitMix64. Rng(seed).split(k) gives stream k,
/// independent of how many other streams exist, so a shard's or an item's
/// randomness does not depend on the shard count. Satisfies
/// UniformRandomBitGenerator, so it works with <random> distributions.
class Rng {
 public:
  using result_type = uint64_t;
  explicit Rng(uint64_t seed = 0);
  /// An independent stream derived from this generator's seed and 'stream'.
  Rng split(uint64_t stream) const;

  uint64_t operator()();
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }

  double uniform();                   ///< [0, 1) with 53 random bits
  double normal();                    ///< standard normal (Box-Muller)
  uint64_t below(uint64_t bound);     ///< uniform in [0, bound), unbiased

 private:
  uint64_t seed_;
  uint64_t state_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

/// Fisher-Yates: a uniform permutation of v in place (the draws are
/// below(i + 1) for i = n-1 down to 1, so a seed gives the same order on
/// every platform, unlike std::shuffle).
template <class Vector>
void shuffle(Vector& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

/// Partial Fisher-Yates from the front: afterwards v[0..k) is a uniform sample
/// of v without replacement, in random order (k draws, not n).
template <class Vector>
void shuffle_prefix(Vector& v, size_t k, Rng& rng) {
  const size_t n = v.size();
  for (size_t i = 0; i < k && i < n; ++i) std::swap(v[i], v[i + rng.below(n - i)]);
}

/// SplitMix64 finaliser: a good 64-bit mix, also used to hash seeds.
uint64_t mix64(uint64_t x);

}  // namespace nk
