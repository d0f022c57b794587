// realism.hpp - the realism reference eval and train-dedicated share: n test
// images drawn from a reference file by the run's seed (and up to n more,
// held out for eval's 'test' row), and their features in an evaluator
// network (the shipped evaluator CNN's penultimate by default), against
// which a set of samples gets its Frechet distance. The same seed, file and
// n give the same reference in both verbs, so train-dedicated's realism
// checks are eval's numbers.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "invariance-audit/extractor.hpp"

namespace ia {

class RealismReference {
 public:
  /// Exit 3 naming the file when its images are not 'shape' or it holds
  /// fewer than n + 2 of them.
  RealismReference(const std::string& path, nk::nn::Shape shape, int64_t n, const std::string& evaluator, uint64_t seed);
  /// Evaluator features [count, F] of pixel images [count, H, W, C].
  std::vector<float> features(const float* x, int64_t count);
  double frechet(const float* x, int64_t count);
  Extractor& evaluator() { return *evaluator_; }
  int64_t n = 0, held = 0;
  std::vector<float> ref, real;  ///< [n, d] the reference; [held, d] held-out real images
  std::vector<float> ref_features;  ///< [n, F]

 private:
  std::unique_ptr<Extractor> evaluator_;
};

}  // namespace ia
