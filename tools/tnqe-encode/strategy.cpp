// strategy.cpp - see strategy.hpp.
#include "tnqe-encode/strategy.hpp"

#include <cmath>

#include "nk/rng.hpp"

#include "nk/error.hpp"
#include "tnqe-encode/synth.hpp"
#include "tnqe-encode/train.hpp"

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
  const std::vector<Block> blocks = staircase_blocks(mps, layout);
  e.circuit = compile_blocks(blocks, layout.qubits());
  for (const Block& b : blocks) e.unitaries.push_back(b.u);
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
    e.unitaries.push_back(complete_isometry(CMat(s / s.norm())));
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

namespace {

/// Contracts register states through the bond measurements. flips[k][j] =
/// (fa, fb): the outcome bits of bond k's pair j that count as "0" after a
/// Pauli error (none: the ideal projection onto |Phi+>). Returns the
/// unnormalised post-selected data state in tensor order.
CVec contract_registers(const std::vector<CVec>& states, const Encoded& e, const Layout& layout,
                        const std::vector<std::vector<std::pair<int, int>>>* flips) {
  const int kc = static_cast<int>(states.size());
  CMat acc = CMat::Ones(1, 1);  // (prefix data states) x right bond
  for (int k = 0; k < kc; ++k) {
    const CVec& s = states[k];
    const int lb = e.left_bits[k], pb = layout.phys_qubits(k), rb = e.right_bits[k];
    const int64_t l = int64_t{1} << lb, d = int64_t{1} << pb, r = int64_t{1} << rb;
    if (acc.cols() != l) throw nk::Error(nk::Exit::runtime, "internal: bond sizes of the registers disagree");
    if (k > 0) {
      // <bell|: per bond qubit j, (1/sqrt 2) sum_x (-1)^(fa x) <x|_a <x ^ fb|_b.
      CMat bell = CMat::Zero(l, l);
      for (int64_t a = 0; a < l; ++a) {
        int64_t b = a;
        double sign = 1;
        for (int j = 0; j < lb; ++j) {
          const auto [fa, fb] = flips ? (*flips)[k - 1][j] : std::pair<int, int>{0, 0};
          if (fb) b ^= int64_t{1} << j;
          if (fa && ((a >> j) & 1)) sign = -sign;
        }
        bell(a, b) = sign * std::pow(2.0, -lb / 2.0);
      }
      acc = acc * bell;
    }
    CMat next = CMat::Zero(acc.rows() * d, r);
    for (int64_t x = 0; x < acc.rows(); ++x)
      for (int64_t p = 0; p < d; ++p)
        for (int64_t b = 0; b < r; ++b) {
          cd sum = 0;
          for (int64_t a = 0; a < l; ++a) sum += acc(x, a) * s[a + l * (p + d * b)];
          next(x * d + p, b) = sum;
        }
    acc.swap(next);
  }
  return acc.col(0);
}

}  // namespace

Prepared run_encoding(const Encoded& e, const Layout& layout) {
  Prepared out;
  if (e.strategy != "parallel") {
    out.state = simulate(e.circuit);
    return out;
  }
  std::vector<CVec> states;
  for (const Circuit& r : e.registers) states.push_back(simulate(r));
  const CVec tensor = contract_registers(states, e, layout, nullptr);
  out.success = tensor.squaredNorm();
  out.state = tensor_to_amplitudes(layout, tensor / std::sqrt(out.success));
  return out;
}

NoisyFidelity noisy_parallel(const Encoded& e, const Layout& layout, const CVec& target, double p,
                             int64_t trajectories, uint64_t seed) {
  double num = 0, den = 0;
  std::vector<double> per;
  for (int64_t t = 0; t < trajectories; ++t) {
    nk::Rng rng = nk::Rng(seed).split(static_cast<uint64_t>(t));
    std::vector<CVec> states;
    for (const Circuit& reg : e.registers) states.push_back(simulate(with_depolarising(reg, p, rng)));
    // The Bell layer's CNOTs: an error (Pa, Pb) after CX turns the "00"
    // outcome into fa = [Pa in {Z, Y}] (through the H), fb = [Pb in {X, Y}].
    std::vector<std::vector<std::pair<int, int>>> flips(e.registers.size());
    for (size_t k = 0; k + 1 < e.registers.size(); ++k)
      for (int j = 0; j < e.right_bits[k]; ++j) {
        std::pair<int, int> f{0, 0};
        if (rng.uniform() < p) {
          const auto [pa, pb] = random_two_qubit_pauli(rng);  // 1 X, 2 Y, 3 Z
          f = {pa == 2 || pa == 3, pb == 1 || pb == 2};
        }
        flips[k].push_back(f);
      }
    const CVec v = tensor_to_amplitudes(layout, contract_registers(states, e, layout, &flips));
    const double overlap = std::norm(target.dot(v)) / target.squaredNorm();
    num += overlap;
    den += v.squaredNorm();
    per.push_back(v.squaredNorm() > 0 ? overlap / v.squaredNorm() : 0);
  }
  NoisyFidelity out;
  out.trajectories = trajectories;
  // The post-selected state is the mixture of the trajectories' accepted
  // branches: F = sum_t |<t|v_t>|^2 / sum_t ||v_t||^2.
  out.mean = den > 0 ? num / den : 0;
  double var = 0;
  for (double f : per) var += (f - out.mean) * (f - out.mean);
  out.stderr_ = trajectories > 1 ? std::sqrt(var / static_cast<double>(trajectories - 1) / static_cast<double>(trajectories)) : 0;
  out.success = den / static_cast<double>(trajectories);
  return out;
}

}  // namespace tnqe
