// align.cpp - weight matching of hidden neurons (see align.hpp).
#include "spike-sft/align.hpp"

#include <stdexcept>

#include "nk/assignment.hpp"

namespace spike {

namespace {

using Perm = std::vector<int>;

/// Each unit's outgoing weights in layer l (its column group), one row per unit.
snn::Matrix outgoing(const snn::Matrix& w, int64_t group) {
  const int64_t units = w.cols() / group;
  snn::Matrix out(units, w.rows() * group);
  for (int64_t i = 0; i < units; ++i)
    for (int64_t r = 0; r < w.rows(); ++r)
      for (int64_t k = 0; k < group; ++k) out(i, r * group + k) = w(r, i * group + k);
  return out;
}

/// w with its column groups reordered: group c takes w's group p[c].
snn::Matrix permute_groups(const snn::Matrix& w, const Perm& p, int64_t group) {
  snn::Matrix out = w;
  for (size_t c = 0; c < p.size(); ++c)
    out.middleCols(static_cast<Eigen::Index>(c) * group, group) = w.middleCols(static_cast<Eigen::Index>(p[c]) * group, group);
  return out;
}

/// Similarity of neuron (or channel) i of a to neuron j of b in hidden layer
/// h: incoming weights (b's inputs already in a's order), bias, and, when
/// 'outgoing', the next layer's weights (b's next-layer neurons in a's order).
Eigen::MatrixXd similarity(const snn::Network& a, const snn::Network& b, size_t h, const Perm* in, const Perm* out) {
  const snn::Config& c = a.config;
  const snn::Matrix& wa = a.weight[h];
  const snn::Matrix wb_in = in ? permute_groups(b.weight[h], *in, c.input_group(static_cast<int64_t>(h))) : b.weight[h];
  Eigen::MatrixXd s = (wa.cast<double>() * wb_in.cast<double>().transpose());
  s += a.bias[h].cast<double>() * b.bias[h].cast<double>().transpose();
  if (h + 1 < a.weight.size()) {
    const int64_t group = c.input_group(static_cast<int64_t>(h) + 1);
    snn::Matrix nb = b.weight[h + 1];
    if (out) {
      snn::Matrix rows = nb;
      for (Eigen::Index r = 0; r < nb.rows(); ++r) rows.row(r) = nb.row((*out)[static_cast<size_t>(r)]);
      nb = rows;
    }
    if (out || h + 2 == a.weight.size())
      s += outgoing(a.weight[h + 1], group).cast<double>() * outgoing(nb, group).cast<double>().transpose();
  }
  return s;
}

double total(const Eigen::MatrixXd& s, const Perm& p) {
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += s(static_cast<Eigen::Index>(i), p[i]);
  return sum;
}

Perm identity(size_t n) {
  Perm p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<int>(i);
  return p;
}

}  // namespace

bool Alignment::identity() const {
  for (int64_t m : moved)
    if (m) return false;
  return true;
}

Alignment match_neurons(const snn::Network& a, const snn::Network& b, int sweeps) {
  if (a.config.sizes != b.config.sizes || a.config.channels != b.config.channels)
    throw std::invalid_argument("match_neurons: the architectures differ");
  const auto hidden = static_cast<size_t>(a.config.hidden_layers());
  Alignment al;
  al.perm.resize(hidden);
  al.before.assign(hidden, 0.0);
  // Forward pass: incoming weights and bias only (the output layer's columns
  // are used for the last hidden layer, whose next layer is not permuted).
  for (size_t h = 0; h < hidden; ++h) {
    const Eigen::MatrixXd s = similarity(a, b, h, h ? &al.perm[h - 1] : nullptr, nullptr);
    al.before[h] = total(s, identity(static_cast<size_t>(s.rows())));
    al.perm[h] = nk::max_assignment(s);
  }
  // Coordinate descent with the outgoing weights too.
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    bool changed = false;
    for (size_t h = 0; h < hidden; ++h) {
      const Perm* out = h + 1 < hidden ? &al.perm[h + 1] : nullptr;
      const Eigen::MatrixXd s = similarity(a, b, h, h ? &al.perm[h - 1] : nullptr, out);
      Perm p = nk::max_assignment(s);
      if (total(s, p) > total(s, al.perm[h]) + 1e-12 * (1 + std::abs(total(s, al.perm[h])))) {
        al.perm[h] = std::move(p);
        changed = true;
      }
    }
    if (!changed) break;
  }
  al.moved.assign(hidden, 0);
  al.after.assign(hidden, 0.0);
  for (size_t h = 0; h < hidden; ++h) {
    for (size_t i = 0; i < al.perm[h].size(); ++i) al.moved[h] += al.perm[h][i] != static_cast<int>(i);
    al.after[h] = total(similarity(a, b, h, h ? &al.perm[h - 1] : nullptr, nullptr), al.perm[h]);
  }
  return al;
}

void permute_neurons(snn::Network& net, const Alignment& al) {
  for (size_t h = 0; h < al.perm.size(); ++h) {
    const Perm& p = al.perm[h];
    snn::Matrix w = net.weight[h];
    snn::Vector bias = net.bias[h];
    for (size_t i = 0; i < p.size(); ++i) {
      w.row(static_cast<Eigen::Index>(i)) = net.weight[h].row(p[i]);
      bias[static_cast<Eigen::Index>(i)] = net.bias[h][p[i]];
    }
    net.weight[h] = w;
    net.bias[h] = bias;
    net.weight[h + 1] = permute_groups(net.weight[h + 1], p, net.config.input_group(static_cast<int64_t>(h) + 1));
  }
}

}  // namespace spike
