// prior.cpp - reading the prior file (prior.hpp).
#include "invariance-audit/prior.hpp"

#include "invariance-audit/invariance_audit.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/shipped.hpp"

namespace ia {

std::string prior_path(const std::string& path) {
  return path.empty() ? nk::shipped_data("invariance-audit/prior.h5") : path;
}

nk::nn::UNet<float> read_prior(const std::string& path) {
  const std::string where = prior_path(path);
  const nk::h5::File file = nk::h5::File::open(where);
  file.require_schema(kPriorSchema);
  nk::nn::UNet<float> net = nk::nn::read_unet(file, "/prior");
  if (net.config().cond_dim != 0) {
    throw nk::input_error(where, "/prior", "is a conditional U-Net (cond_dim " + std::to_string(net.config().cond_dim) +
                                               "): a prior takes no condition");
  }
  return net;
}

}  // namespace ia
