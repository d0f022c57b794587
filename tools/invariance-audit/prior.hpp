// prior.hpp - the flow-matching prior of an audit: a U-Net velocity model
// over images mapped from [0,1] pixels to x = 2 p - 1, stored as
// invariance-audit.prior/1 (the U-Net's parts under /prior, nk/nn/unet.hpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nk/nn/flow.hpp"
#include "nk/nn/guidance.hpp"
#include "nk/nn/unet.hpp"

namespace ia {

/// The shipped prior (data/invariance-audit/prior.h5) when 'path' is empty.
/// Exit 3 naming the file and dataset for another schema, a malformed
/// U-Net, or a conditional one; exit 4 when unreadable.
nk::nn::UNet<float> read_prior(const std::string& path);
std::string prior_path(const std::string& path);

/// The dedicated baseline: a U-Net conditioned on normalised features
/// c = (f(x) - mean) / scale of one extractor (invariance-audit.dedicated/1,
/// the U-Net under /dedicated). Exit 3 naming the file and dataset when
/// malformed or unconditional.
struct Dedicated {
  nk::nn::UNet<float> net;
  std::vector<float> mean, scale;  ///< [F]
  std::string extractor;           ///< the spec it was trained with
  double seconds = 0;              ///< training wall time (features included)
};
Dedicated read_dedicated(const std::string& path);

/// The prior's velocity for an audit: the U-Net of 'path' (the shipped prior
/// when empty), or the program 'command' (--prior-cmd, command.hpp) when not
/// empty; batches of up to 'capacity'. Exit 3 naming the file when its
/// images are not 'image'.
struct PriorField {
  std::unique_ptr<nk::nn::UNet<float>> net;  ///< null for a command
  std::unique_ptr<nk::nn::FlowField> field;
  std::string name;
};
PriorField open_prior(const std::string& path, const std::string& command, nk::nn::Shape image, int64_t capacity);

/// The U-Net of train-prior and train-dedicated: widths 'channels' ("24,48,96"),
/// GroupNorm 'groups', time embedding 'time_dim', condition width 'cond_dim'
/// (0: a prior), initialised with 'seed' (the output conv at zero); exit 2
/// saying what does not fit the images.
nk::nn::UNet<float> build_unet(const std::string& channels, int64_t groups, int64_t time_dim, int64_t cond_dim,
                               nk::nn::Shape image, uint64_t seed);
/// Their schedule: AdamW at 'learning_rate' with warm-up over min(500, steps/10 + 1) steps.
nk::nn::FlowTraining flow_schedule(int64_t steps, int64_t batch, double learning_rate, double ema, uint64_t seed);

inline float to_prior(float pixel) { return 2.0f * pixel - 1.0f; }
inline float to_pixel(float x) { return 0.5f * (x + 1.0f); }

}  // namespace ia
