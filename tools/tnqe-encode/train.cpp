// train.cpp - see train.hpp.
#include "tnqe-encode/train.hpp"

#include <Eigen/LU>
#include <cmath>

#include "nk/error.hpp"
#include "nk/nn/optim.hpp"
#include "tnqe-encode/strategy.hpp"
#include "tnqe-encode/synth.hpp"

namespace tnqe {

CVec apply_blocks(const std::vector<Block>& blocks, int n) {
  CVec psi = CVec::Zero(int64_t{1} << n);
  psi[0] = 1;
  for (const Block& b : blocks) apply_matrix(psi, b.qubits, b.u);
  return psi;
}

std::vector<CMat> gradients(const std::vector<Block>& blocks, int n, const CVec& target, double& loss) {
  CVec phi = apply_blocks(blocks, n);  // state after the last block
  const cd z = target.dot(phi);        // <t|psi>
  loss = 1 - std::norm(z);
  CVec lambda = target;  // backward state after block b
  std::vector<CMat> g(blocks.size());
  for (int64_t b = static_cast<int64_t>(blocks.size()) - 1; b >= 0; --b) {
    const Block& blk = blocks[b];
    const CMat uh = blk.u.adjoint();
    apply_matrix(phi, blk.qubits, uh);     // phi: state before block b
    apply_matrix(lambda, blk.qubits, uh);  // mu = U^H lambda
    // dz = eps <mu|A|phi> = eps tr(A C), C = Tr_rest |phi><mu|; dL = -2 eps Re(conj(z) tr(A C)).
    const CMat w = std::conj(z) * reduced_outer(phi, lambda, blk.qubits);
    g[b] = w - w.adjoint();
  }
  return g;
}

std::vector<double> train(std::vector<Block>& blocks, int n, const CVec& target, const TrainOptions& o) {
  Eigen::Index size = 0;
  for (const Block& b : blocks) size += 2 * b.u.size();
  nk::AdamConfig cfg;
  cfg.learning_rate = o.learning_rate;
  nk::Adam adam(size, cfg);
  std::vector<double> history;
  Eigen::VectorXd grad(size), step(size);
  std::vector<Block> best = blocks;
  double best_loss = 2;
  for (int it = 0; it <= o.iterations; ++it) {
    double loss = 0;
    const std::vector<CMat> g = gradients(blocks, n, target, loss);
    history.push_back(loss);
    if (loss < best_loss) {
      best_loss = loss;
      best = blocks;
    }
    if (it == o.iterations || loss < 1e-14) break;
    // Cosine decay of the learning rate to zero over the run.
    adam.set_learning_rate(nk::cosine_rate(o.learning_rate, static_cast<double>(it) / o.iterations));
    Eigen::Index at = 0;
    for (const CMat& m : g)
      for (Eigen::Index i = 0; i < m.size(); ++i) {
        grad[at++] = m.data()[i].real();
        grad[at++] = m.data()[i].imag();
      }
    step.setZero();
    adam.step(step, grad);  // step = -lr * mhat / (sqrt(vhat) + eps): skew-Hermitian like g
    at = 0;
    for (Block& b : blocks) {
      const Eigen::Index d = b.u.rows();
      CMat a(d, d);
      for (Eigen::Index i = 0; i < a.size(); ++i, at += 2) a.data()[i] = cd(step[at], step[at + 1]);
      a = ((a - a.adjoint()) / 2.0).eval();  // exactly skew-Hermitian (eval: no aliasing)
      const CMat eye = CMat::Identity(d, d);
      b.u = b.u * (eye - a / 2.0).partialPivLu().solve(eye + a / 2.0);  // Cayley retraction
    }
  }
  blocks = std::move(best);  // the best iterate (Adam's last step need not be)
  return history;
}

std::vector<Block> staircase_blocks(const Mps& mps, const Layout& layout) {
  std::vector<Block> blocks;
  int in_bits = 0;
  for (size_t k = 0; k < mps.cores.size(); ++k) {
    const Core& core = mps.cores[k];
    const int o = layout.offset(static_cast<int>(k)), pb = layout.phys_qubits(static_cast<int>(k));
    const int rb = bits_for(core.right);
    Block b;
    for (int j = 0; j < pb + rb; ++j) b.qubits.push_back(o + j);
    b.u = site_unitary(core, rb);
    b.zero_inputs = pb + rb - in_bits;
    blocks.push_back(std::move(b));
    in_bits = rb;
  }
  return blocks;
}

std::vector<Block> layered_blocks(const CVec& target, int n, int layers) {
  Layout qubit_level;
  for (int q = 0; q < n; ++q) qubit_level.bits.push_back({q});
  std::vector<int64_t> phys(n, 2);
  Truncation t;
  t.max_bond = 2;
  std::vector<std::vector<Block>> per_layer;
  CVec residual = target;
  for (int l = 0; l < layers; ++l) {
    const Mps mps = decompose(data_to_tensor(qubit_level, residual), phys, t);
    std::vector<Block> layer = staircase_blocks(mps, qubit_level);
    for (Block& b : layer) {
      b.zero_inputs = 0;  // later layers feed them arbitrary states
      // Real data: keep each block in SO(4) (2 CNOTs, and the Cayley steps
      // stay there) by flipping a completion column when the determinant is -1.
      if (b.u.imag().norm() < 1e-12 && b.u.rows() == 4 && b.u.real().determinant() < 0) b.u.col(3) *= -1;
    }
    for (auto it = layer.rbegin(); it != layer.rend(); ++it) apply_matrix(residual, it->qubits, it->u.adjoint());
    per_layer.push_back(std::move(layer));
  }
  std::vector<Block> blocks;  // U_L first, U_1 last
  for (auto it = per_layer.rbegin(); it != per_layer.rend(); ++it) blocks.insert(blocks.end(), it->begin(), it->end());
  return blocks;
}

Circuit compile_blocks(const std::vector<Block>& blocks, int n) {
  Circuit c;
  c.qubits = n;
  for (const Block& b : blocks) {
    const int q = static_cast<int>(b.qubits.size());
    if (b.zero_inputs >= q) {
      const CVec first = b.u.col(0);
      emit_state(c, first / first.norm(), b.qubits);
    } else {
      emit_unitary(c, b.u, b.qubits, b.zero_inputs);
    }
  }
  return optimise(c);
}

}  // namespace tnqe
