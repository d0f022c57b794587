// rng.hpp - seeded, splittable random streams.
#pragma once
#include <cstdint>
#include <limits>

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

/// SplitMix64 finaliser: a good 64-bit mix, also used to hash seeds.
uint64_t mix64(uint64_t x);

}  // namespace nk
