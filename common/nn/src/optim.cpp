// optim.cpp - Adam / AdamW.
#include "nk/nn/optim.hpp"

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

void Adam::reorder_blocks(const std::vector<Eigen::Index>& source, Eigen::Index block) {
  const Eigen::Index blocks = m_.size() / block;
  Eigen::VectorXd m = Eigen::VectorXd::Zero(Eigen::Index(source.size()) * block), v = m;
  for (size_t j = 0; j < source.size(); ++j) {
    if (source[j] >= blocks) throw Error(Exit::runtime, "Adam: reorder_blocks source out of range");
    if (source[j] < 0) continue;
    m.segment(Eigen::Index(j) * block, block) = m_.segment(source[j] * block, block);
    v.segment(Eigen::Index(j) * block, block) = v_.segment(source[j] * block, block);
  }
  m_ = std::move(m);
  v_ = std::move(v);
}

}  // namespace nk
