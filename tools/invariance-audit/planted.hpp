// planted.hpp - the known fibers of the planted extractors, and whether a
// sample reveals them: its fixed part matches the query's while its free
// part differs (mask-left, down4, pca32), or for flip it lies nearer to the
// mirrored query than to the query itself.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nk/nn/network.hpp"

namespace ia {

class Revealer {
 public:
  virtual ~Revealer() = default;
  /// sample, query: pixel images [H, W, C].
  virtual bool revealed(const float* sample, const float* query) const = 0;
};

/// Thresholds: fixed part within 'fixed' relative (2%), free part at least
/// 'free' relative (20%) off the query's.
struct RevealRule {
  double fixed = 0.02, free = 0.2;
};

/// null for an extractor whose fiber is unknown (a network, flip excepted).
///   mask-left  fixed: the right half; free: the left half (relative to the query's left half)
///   down4      fixed: the 4x4 block means; free: the residual x - blocks(x) (relative to the query's)
///   pca32      fixed: V (x - mean); free: (I - V^T V)(x - mean) (relative to the query's)
///   flip:SPEC  ||x - mirror(q)|| < ||x - q||
std::unique_ptr<Revealer> open_revealer(const std::string& spec, nk::nn::Shape image, RevealRule rule = {});

}  // namespace ia
