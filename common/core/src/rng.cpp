// rng.cpp - xoshiro256** with SplitMix64 seeding.
#include "nk/rng.hpp"

#include <cmath>

namespace nk {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Rng::Rng(uint64_t seed) : seed_(seed) {
  uint64_t s = seed;
  for (uint64_t& word : state_) {
    s += 0x9e3779b97f4a7c15ULL;
    word = mix64(s);
  }
}

Rng Rng::split(uint64_t stream) const { return Rng(mix64(seed_ ^ mix64(stream + 0x632be59bd9b4e019ULL))); }

uint64_t Rng::operator()() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u = 0;
  while (u <= 0) u = uniform();
  const double v = uniform();
  const double radius = std::sqrt(-2.0 * std::log(u));
  spare_ = radius * std::sin(2 * M_PI * v);
  has_spare_ = true;
  return radius * std::cos(2 * M_PI * v);
}

uint64_t Rng::below(uint64_t bound) {
  if (bound <= 1) return 0;
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t r = (*this)();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace nk
