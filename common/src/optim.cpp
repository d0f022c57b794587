// optim.cpp - Adam / AdamW.
#include "nk/optim.hpp"

#include <cmath>

#include "nk/error.hpp"

namespace nk {

Adam::Adam(Eigen::Index size, AdamConfig config)
    : config_(config), m_(Eigen::VectorXd::Zero(size)), v_(Eigen::VectorXd::Zero(size)) {}

void Adam::step(Eigen::Ref<Eigen::VectorXd> params, const Eigen::Ref<const Eigen::VectorXd>& grad) {
  if (params.size() != m_.size() || grad.size() != m_.size()) {
    throw Error(Exit::runtime, "Adam: parameter/gradient size does not match the optimiser");
  }
  ++t_;
  m_ = config_.beta1 * m_ + (1 - config_.beta1) * grad;
  v_ = config_.beta2 * v_ + (1 - config_.beta2) * grad.cwiseAbs2();
  const double m_scale = 1.0 / (1 - std::pow(config_.beta1, static_cast<double>(t_)));
  const double v_scale = 1.0 / (1 - std::pow(config_.beta2, static_cast<double>(t_)));
  if (config_.weight_decay > 0) params *= 1 - config_.learning_rate * config_.weight_decay;
  params.array() -= config_.learning_rate * (m_.array() * m_scale) /
                    ((v_.array() * v_scale).sqrt() + config_.epsilon);
}

}  // namespace nk
