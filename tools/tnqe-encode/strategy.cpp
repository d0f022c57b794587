// strategy.cpp - see strategy.hpp.
#include "strategy.hpp"

#include <cmath>

#include "nk/error.hpp"
#include "synth.hpp"
#include "train.hpp"

namespace tnqe {

int bits_for(int64_t r) {
  int b = 0;
  while ((int64_t{1} << b) < r) ++b;
  return b;
}

CMat site_unitary(const Core& core, int right_bits) {
  const int64_t rows = core.phys << right_bits;
  CMat v = CMat::Zero(rows, core.left);
  for (int64_t a = 0; a < core.left; ++a)
    for (int64_t p = 0; p < core.phys; ++p)
      for (int64_t b = 0; b < core.right; ++b) v(p + core.phys * b, a) = core.at(a, p, b);
  return complete_isometry(v);
}

Encoded sequential(const Mps& mps, const Layout& layout) {
  Encoded e;
  e.strategy = "sequential";
  e.circuit = compile_blocks(staircase_blocks(mps, layout), layout.qubits());
  for (int q = 0; q < layout.qubits(); ++q) e.readout.push_back(q);
  return e;
}

Encoded parallel(const Mps& mps, const Layout& layout) {
  Encoded e;
  e.strategy = "parallel";
  const int kc = static_cast<int>(mps.cores.size());
  int total = 0;
  std::vector<int> start(kc);
  for (int k = 0; k < kc; ++k) {
    const Core& core = mps.cores[k];
    e.left_bits.push_back(bits_for(core.left));
    e.right_bits.push_back(bits_for(core.right));
    start[k] = total;
    total += e.left_bits[k] + layout.phys_qubits(k) + e.right_bits[k];
  }
  Circuit c;
  c.qubits = total;
  for (int k = 0; k < kc; ++k) {
    const Core& core = mps.cores[k];
    const int lb = e.left_bits[k], pb = layout.phys_qubits(k), rb = e.right_bits[k];
    const int n = lb + pb + rb;
    CVec s = CVec::Zero(int64_t{1} << n);
    for (int64_t a = 0; a < core.left; ++a)
      for (int64_t p = 0; p < core.phys; ++p)
        for (int64_t b = 0; b < core.right; ++b) s[a + (int64_t{1} << lb) * (p + core.phys * b)] = core.at(a, p, b);
    Circuit r;
    r.qubits = n;
    std::vector<int> local(n);
    for (int j = 0; j < n; ++j) local[j] = j;
    emit_state(r, s / s.norm(), local);
    r = optimise(r);
    std::vector<int> map(n);
    for (int j = 0; j < n; ++j) map[j] = start[k] + j;
    c.append(r, map);
    e.registers.push_back(std::move(r));
    for (int j = 0; j < pb; ++j) e.readout.push_back(start[k] + lb + j);
  }
  // Bell measurements on the bond pairs, post-selected on |00>.
  for (int k = 0; k + 1 < kc; ++k)
    for (int j = 0; j < e.right_bits[k]; ++j) {
      const int qa = start[k] + e.left_bits[k] + layout.phys_qubits(k) + j, qb = start[k + 1] + j;
      c.cx(qa, qb);
      c.h(qa);
      e.postselect.push_back(qa);
      e.postselect.push_back(qb);
    }
  e.circuit = c;
  return e;
}

Prepared run_encoding(const Encoded& e, const Layout& layout) {
  Prepared out;
  if (e.strategy != "parallel") {
    out.state = simulate(e.circuit);
    return out;
  }
  // Contract the simulated registers through the Bell projections:
  // <Phi+|^{(x) b} = 2^{-b/2} sum_a <a|<a| on each bond.
  const int kc = static_cast<int>(e.registers.size());
  CMat acc = CMat::Ones(1, 1);  // (prefix data states) x right bond
  for (int k = 0; k < kc; ++k) {
    const CVec s = simulate(e.registers[k]);
    const int lb = e.left_bits[k], pb = layout.phys_qubits(k), rb = e.right_bits[k];
    const int64_t l = int64_t{1} << lb, d = int64_t{1} << pb, r = int64_t{1} << rb;
    const double bell = k == 0 ? 1.0 : std::pow(2.0, -lb / 2.0);
    if (acc.cols() != l) throw nk::Error(nk::Exit::runtime, "internal: bond sizes of the registers disagree");
    CMat next = CMat::Zero(acc.rows() * d, r);
    for (int64_t x = 0; x < acc.rows(); ++x)
      for (int64_t p = 0; p < d; ++p)
        for (int64_t b = 0; b < r; ++b) {
          cd sum = 0;
          for (int64_t a = 0; a < l; ++a) sum += acc(x, a) * s[a + l * (p + d * b)];
          next(x * d + p, b) = bell * sum;
        }
    acc.swap(next);
  }
  const CVec tensor = acc.col(0);
  out.success = tensor.squaredNorm();
  out.state = tensor_to_amplitudes(layout, tensor / std::sqrt(out.success));
  return out;
}

}  // namespace tnqe
