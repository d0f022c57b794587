// smoothing.hpp - randomized smoothing (Cohen, Rosenfeld & Kolter, arXiv
// 1902.02918): class counts of the base classifier under Gaussian noise, and
// the paper's CERTIFY and PREDICT.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/device.hpp"
#include "proxy-certify/classifier.hpp"

namespace pc {

/// Which noise stream a count draws from. Item i's stream for phase p, sample
/// j is Rng(seed).split(i).split(p).split(j): a count depends on the seed,
/// the item's index in its file, the phase and n only, never on --batch,
/// --threads or --shard.
enum class Phase : uint64_t { selection = 0, estimation = 1, prediction = 2, calibration = 3 };

class Smoother {
 public:
  /// 'batch' noisy copies go through the model per call (<= its capacity).
  /// device cuda: an nk-nn network of flatten, linear, conv2d, relu and
  /// maxpool layers runs on the GPU (the smoothing family; at least 65536
  /// copies per batch there, fewer where its buffers would pass 2 GiB);
  /// another model, or other layers, on the CPU.
  Smoother(Classifier& model, double sigma, uint64_t seed, int64_t batch, nk::DeviceKind device = nk::DeviceKind::cpu);
  ~Smoother();
  Smoother(const Smoother&) = delete;
  Smoother& operator=(const Smoother&) = delete;
  /// Whether the counts are made on the GPU.
  bool on_gpu() const { return gpu_ != nullptr; }
  /// counts[c] = #{j < n : f(x + sigma eps_j) = c} for item 'item' of its file.
  const std::vector<int64_t>& counts(const float* x, int64_t item, Phase phase, int64_t n);
  /// Noisy forwards so far.
  int64_t forwards() const { return forwards_; }
  double sigma() const { return sigma_; }
  Classifier& model() { return model_; }

 private:
  Classifier& model_;
  double sigma_;
  uint64_t seed_;
  int64_t batch_;
  int64_t forwards_ = 0;
  std::vector<float> noisy_, logits_;
  std::vector<int64_t> counts_;
  void* gpu_ = nullptr;  ///< the smoothing family's state
};

struct Certificate {
  int64_t pred = -1;     ///< certified class, -1 = abstain
  double radius = 0;     ///< sigma Phi^-1(pA), 0 when abstaining
  int64_t count = 0;     ///< n_A: the selected class's count among the n samples
  int64_t selected = -1; ///< the class the n0 samples selected (even when abstaining)
  double p_lower = 0;    ///< pA, the Clopper-Pearson lower bound
};

/// CERTIFY from counts: c = argmax of the n0 selection counts (ties: the
/// lowest class), n_A = estimation[c], pA = Clopper-Pearson lower bound at
/// alpha; abstain if pA < 1/2.
Certificate certify_counts(const std::vector<int64_t>& selection, const std::vector<int64_t>& estimation, int64_t n,
                           double alpha, double sigma);
/// CERTIFY of item 'item' (n0 + n noisy forwards).
Certificate certify(Smoother& smoother, const float* x, int64_t item, int64_t n0, int64_t n, double alpha);

struct Prediction {
  int64_t pred = -1;  ///< -1 = abstain
  int64_t count_a = 0, count_b = 0;
  double p_value = 1;
};
/// PREDICT: the top two counts n_A, n_B of n samples; abstain unless the
/// two-sided binomial test of n_A against Bin(n_A + n_B, 1/2) has p <= alpha.
Prediction predict(Smoother& smoother, const float* x, int64_t item, int64_t n, double alpha);

}  // namespace pc
