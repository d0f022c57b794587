// circuit.cpp - gates, the simulator, noise trajectories, passes and counts.
#include "tnqe-encode/circuit.hpp"

#include <omp.h>

#include <Eigen/LU>

#include <algorithm>
#include <bit>
#include <cmath>

#include "nk/error.hpp"
#include "nk/rng.hpp"

namespace tnqe {
namespace {

/// Index with a zero bit inserted at each position of 'sorted' (ascending).
inline uint64_t insert_zeros(uint64_t r, const int* sorted, int k) {
  for (int j = 0; j < k; ++j) {
    const int q = sorted[j];
    r = ((r >> q) << (q + 1)) | (r & ((uint64_t{1} << q) - 1));
  }
  return r;
}

void apply_1q(CVec& psi, int q, const Mat2& m) {
  const int64_t half = psi.size() / 2;
  const uint64_t bit = uint64_t{1} << q;
  const cd a = m(0, 0), b = m(0, 1), c = m(1, 0), d = m(1, 1);
  cd* s = psi.data();
#pragma omp parallel for schedule(static) if (half >= (1 << 14))
  for (int64_t r = 0; r < half; ++r) {
    const uint64_t i0 = ((static_cast<uint64_t>(r) >> q) << (q + 1)) | (static_cast<uint64_t>(r) & (bit - 1));
    const uint64_t i1 = i0 | bit;
    const cd x = s[i0], y = s[i1];
    s[i0] = a * x + b * y;
    s[i1] = c * x + d * y;
  }
}

void apply_cx(CVec& psi, int control, int target) {
  const int64_t quarter = psi.size() / 4;
  int sorted[2] = {std::min(control, target), std::max(control, target)};
  const uint64_t cb = uint64_t{1} << control, tb = uint64_t{1} << target;
  cd* s = psi.data();
#pragma omp parallel for schedule(static) if (quarter >= (1 << 14))
  for (int64_t r = 0; r < quarter; ++r) {
    const uint64_t i = insert_zeros(static_cast<uint64_t>(r), sorted, 2) | cb;
    std::swap(s[i], s[i | tb]);
  }
}

/// Applies a dense 2^k x 2^k matrix on the qubit list 'qs' (local bit j = qs[j]).
/// A qubit list as the sorted positions for insert_zeros and the offset of
/// each local index (local bit j = qs[j]).
struct QubitOffsets {
  std::vector<int> sorted;
  std::vector<uint64_t> offset;
  explicit QubitOffsets(const std::vector<int>& qs) : sorted(qs), offset(size_t{1} << qs.size(), 0) {
    std::sort(sorted.begin(), sorted.end());
    for (size_t l = 0; l < offset.size(); ++l)
      for (size_t j = 0; j < qs.size(); ++j)
        if (l >> j & 1) offset[l] |= uint64_t{1} << qs[j];
  }
};

void apply_block(CVec& psi, const std::vector<int>& qs, const CMat& m) {
  const int k = static_cast<int>(qs.size());
  const int64_t dim = int64_t{1} << k;
  const QubitOffsets qo(qs);
  const std::vector<int>& sorted = qo.sorted;
  const std::vector<uint64_t>& offset = qo.offset;
  const int64_t bases = psi.size() >> k;
  cd* s = psi.data();
#pragma omp parallel if (bases >= 64)
  {
    CVec in(dim), out(dim);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < bases; ++r) {
      const uint64_t base = insert_zeros(static_cast<uint64_t>(r), sorted.data(), k);
      for (int64_t l = 0; l < dim; ++l) in[l] = s[base | offset[l]];
      out.noalias() = m * in;
      for (int64_t l = 0; l < dim; ++l) s[base | offset[l]] = out[l];
    }
  }
}

void apply_gate(CVec& psi, const Gate& g) {
  if (g.kind == Gate::cx)
    apply_cx(psi, g.q0, g.q1);
  else
    apply_1q(psi, g.q0, u3_matrix(g.theta, g.phi, g.lambda));
}

/// 'y' for u3(theta, 0, 0) = Ry(theta), 'z' for u3(0, 0, lambda) = e^{i lambda/2} Rz(lambda), else 0.
char rotation_axis(const Gate& g) {
  if (g.kind != Gate::u3) return 0;
  if (g.phi == 0 && g.lambda == 0) return 'y';
  if (g.theta == 0 && g.phi == 0) return 'z';
  return 0;
}

/// Length of the run starting at 'i' of rotations about one axis on one
/// target and CNOTs onto that target (a uniformly controlled rotation, as
/// the Gray-code ladders produce), or 0 when too short to be worth it.
size_t multiplexor_run(const std::vector<Gate>& gates, size_t i) {
  const Gate& g0 = gates[i];
  const int target = g0.kind == Gate::cx ? g0.q1 : g0.q0;
  char axis = rotation_axis(g0);
  if (g0.kind == Gate::u3 && !axis) return 0;
  size_t j = i, cx = 0;
  for (; j < gates.size(); ++j) {
    const Gate& g = gates[j];
    if (g.kind == Gate::cx) {
      if (g.q1 != target || g.q0 == target) break;
      ++cx;
    } else {
      const char a = rotation_axis(g);
      if (g.q0 != target || !a) break;
      if (!axis) axis = a;
      if (a != axis) break;
    }
  }
  return (j - i >= 16 && cx >= 4) ? j - i : 0;
}

/// The exact product of such a run: for control pattern i the target turns
/// by sum_j (-1)^{popcount(m_j & i)} theta_j (m_j: the CNOT controls seen
/// before rotation j, as a mask; a Walsh-Hadamard transform over the masks),
/// then takes X when the CNOTs' total parity for i is odd.
void apply_multiplexor_run(CVec& psi, const std::vector<Gate>& gates, size_t begin, size_t end) {
  const int target = gates[begin].kind == Gate::cx ? gates[begin].q1 : gates[begin].q0;
  std::vector<int> controls;
  for (size_t j = begin; j < end; ++j)
    if (gates[j].kind == Gate::cx && std::find(controls.begin(), controls.end(), gates[j].q0) == controls.end())
      controls.push_back(gates[j].q0);
  std::sort(controls.begin(), controls.end());
  const int k = static_cast<int>(controls.size());
  std::vector<double> w(size_t{1} << k, 0.0);
  size_t mask = 0;
  char axis = 0;
  double phase = 0;
  for (size_t j = begin; j < end; ++j) {
    const Gate& g = gates[j];
    if (g.kind == Gate::cx) {
      mask ^= size_t{1} << (std::lower_bound(controls.begin(), controls.end(), g.q0) - controls.begin());
    } else {
      axis = rotation_axis(g);
      const double angle = axis == 'y' ? g.theta : g.lambda;
      w[mask] += angle;
      if (axis == 'z') phase += angle / 2;
    }
  }
  walsh_hadamard(w);
  const size_t final_parity = mask;
  const cd global = std::polar(1.0, phase);
  const int64_t half = psi.size() / 2;
  const uint64_t bit = uint64_t{1} << target;
  cd* s = psi.data();
#pragma omp parallel for schedule(static) if (half >= (1 << 14))
  for (int64_t r = 0; r < half; ++r) {
    const uint64_t i0 = ((static_cast<uint64_t>(r) >> target) << (target + 1)) | (static_cast<uint64_t>(r) & (bit - 1));
    const uint64_t i1 = i0 | bit;
    size_t pattern = 0;
    for (int c = 0; c < k; ++c) pattern |= ((i0 >> controls[c]) & 1) << c;
    const double angle = w[pattern];
    cd x = s[i0], y = s[i1];
    if (axis == 'y') {
      const double cs = std::cos(angle / 2), sn = std::sin(angle / 2);
      const cd nx = cs * x - sn * y, ny = sn * x + cs * y;
      x = nx;
      y = ny;
    } else if (axis == 'z') {
      x *= global * std::polar(1.0, -angle / 2);
      y *= global * std::polar(1.0, angle / 2);
    }
    if (std::popcount(final_parity & pattern) & 1) std::swap(x, y);
    s[i0] = x;
    s[i1] = y;
  }
}

bool identity_up_to_phase(const Mat2& m) {
  return std::abs(m(0, 1)) < 1e-12 && std::abs(m(1, 0)) < 1e-12 && std::abs(m(0, 0) - m(1, 1)) < 1e-12;
}

void check_qubit(const Circuit& c, int q) {
  if (q < 0 || q >= c.qubits)
    throw nk::Error(nk::Exit::runtime, "internal: qubit " + std::to_string(q) + " outside a circuit of " +
                                           std::to_string(c.qubits) + " qubits");
}

}  // namespace

void walsh_hadamard(std::vector<double>& v) {
  for (size_t len = 1; len < v.size(); len <<= 1)
    for (size_t i = 0; i < v.size(); i += len << 1)
      for (size_t j = i; j < i + len; ++j) {
        const double a = v[j], b = v[j + len];
        v[j] = a + b;
        v[j + len] = a - b;
      }
}

void apply_matrix(CVec& psi, const std::vector<int>& qs, const CMat& m) { apply_block(psi, qs, m); }

CMat reduced_outer(const CVec& phi, const CVec& mu, const std::vector<int>& qs) {
  const int k = static_cast<int>(qs.size());
  const int64_t dim = int64_t{1} << k;
  const QubitOffsets qo(qs);
  const std::vector<int>& sorted = qo.sorted;
  const std::vector<uint64_t>& offset = qo.offset;
  const int64_t bases = phi.size() >> k;
  CMat total = CMat::Zero(dim, dim);
#pragma omp parallel if (bases >= 64)
  {
    CMat local = CMat::Zero(dim, dim);
    CVec a(dim), b(dim);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < bases; ++r) {
      const uint64_t base = insert_zeros(static_cast<uint64_t>(r), sorted.data(), k);
      for (int64_t l = 0; l < dim; ++l) {
        a[l] = phi[base | offset[l]];
        b[l] = mu[base | offset[l]];
      }
      local.noalias() += a * b.adjoint();
    }
#pragma omp critical
    total += local;
  }
  return total;
}

Mat2 u3_matrix(double theta, double phi, double lambda) {
  const double c = std::cos(theta / 2), s = std::sin(theta / 2);
  Mat2 m;
  m << c, -std::polar(1.0, lambda) * s, std::polar(1.0, phi) * s, std::polar(1.0, phi + lambda) * c;
  return m;
}

void u3_angles(const Mat2& m, double& theta, double& phi, double& lambda) {
  const cd phase = std::sqrt(m.determinant());
  const cd alpha = m(0, 0) / phase, beta = m(1, 0) / phase;
  theta = 2 * std::atan2(std::abs(beta), std::abs(alpha));
  const double arg_a = std::abs(alpha) < 1e-14 ? 0.0 : std::arg(alpha);
  const double arg_b = std::abs(beta) < 1e-14 ? 0.0 : std::arg(beta);
  phi = arg_b - arg_a;
  lambda = -arg_b - arg_a;
}

void Circuit::u3(int q, double theta, double phi, double lambda) {
  check_qubit(*this, q);
  Gate g;
  g.kind = Gate::u3;
  g.q0 = q;
  g.theta = theta;
  g.phi = phi;
  g.lambda = lambda;
  gates.push_back(g);
}

void Circuit::u3(int q, const Mat2& m) {
  double t, p, l;
  u3_angles(m, t, p, l);
  u3(q, t, p, l);
}

void Circuit::cx(int control, int target) {
  check_qubit(*this, control);
  check_qubit(*this, target);
  if (control == target) throw nk::Error(nk::Exit::runtime, "internal: cx with control == target");
  Gate g;
  g.kind = Gate::cx;
  g.q0 = control;
  g.q1 = target;
  gates.push_back(g);
}

void Circuit::rz(int q, double angle) { u3(q, 0, 0, angle); }
void Circuit::h(int q) { u3(q, kPi / 2, 0, kPi); }

void Circuit::append(const Circuit& other, const std::vector<int>& map) {
  for (Gate g : other.gates) {
    g.q0 = map.at(g.q0);
    if (g.kind == Gate::cx) g.q1 = map.at(g.q1);
    check_qubit(*this, g.q0);
    if (g.kind == Gate::cx) check_qubit(*this, g.q1);
    gates.push_back(g);
  }
}

Counts count(const Circuit& c) {
  Counts k;
  k.qubits = c.qubits;
  std::vector<int64_t> ready(c.qubits, 0), cready(c.qubits, 0);
  for (const Gate& g : c.gates) {
    if (g.kind == Gate::cx) {
      ++k.cnots;
      const int64_t start = std::max(ready[g.q0], ready[g.q1]);
      ready[g.q0] = ready[g.q1] = start + 1;
      const int64_t level = std::max(cready[g.q0], cready[g.q1]) + 1;
      cready[g.q0] = cready[g.q1] = level;
      k.depth = std::max(k.depth, start + 1);
      k.cnot_depth = std::max(k.cnot_depth, level);
    } else {
      ++k.single;
      k.depth = std::max(k.depth, ++ready[g.q0]);
    }
  }
  return k;
}

Circuit optimise(const Circuit& input) {
  Circuit c = input;
  for (;;) {
    const size_t before = c.gates.size();
    // Pass 1: fuse runs of single-qubit gates.
    Circuit fused;
    fused.qubits = c.qubits;
    std::vector<Mat2> pending(c.qubits, Mat2::Identity());
    std::vector<int> has(c.qubits, 0);
    std::vector<Gate> single(c.qubits);
    auto flush = [&](int q) {
      if (has[q] == 1 && !identity_up_to_phase(pending[q]))
        fused.gates.push_back(single[q]);  // a lone gate stays as written (Ry stays Ry)
      else if (has[q] > 1 && !identity_up_to_phase(pending[q]))
        fused.u3(q, pending[q]);
      pending[q].setIdentity();
      has[q] = 0;
    };
    for (const Gate& g : c.gates) {
      if (g.kind == Gate::u3) {
        pending[g.q0] = u3_matrix(g.theta, g.phi, g.lambda) * pending[g.q0];
        single[g.q0] = g;
        ++has[g.q0];
      } else {
        flush(g.q0);
        flush(g.q1);
        fused.gates.push_back(g);
      }
    }
    for (int q = 0; q < c.qubits; ++q) flush(q);
    // Pass 2: cancel adjacent equal CNOTs.
    std::vector<std::vector<int>> stack(c.qubits);
    std::vector<char> alive(fused.gates.size(), 1);
    bool cancelled = false;
    for (int i = 0; i < static_cast<int>(fused.gates.size()); ++i) {
      const Gate& g = fused.gates[i];
      if (g.kind == Gate::cx) {
        auto& sa = stack[g.q0];
        auto& sb = stack[g.q1];
        if (!sa.empty() && !sb.empty() && sa.back() == sb.back()) {
          const Gate& prev = fused.gates[sa.back()];
          if (prev.kind == Gate::cx && prev.q0 == g.q0 && prev.q1 == g.q1) {
            alive[sa.back()] = 0;
            alive[i] = 0;
            sa.pop_back();
            sb.pop_back();
            cancelled = true;
            continue;
          }
        }
        sa.push_back(i);
        sb.push_back(i);
      } else {
        stack[g.q0].push_back(i);
      }
    }
    Circuit out;
    out.qubits = c.qubits;
    for (size_t i = 0; i < fused.gates.size(); ++i)
      if (alive[i]) out.gates.push_back(fused.gates[i]);
    c = std::move(out);
    if (!cancelled && c.gates.size() >= before) break;
  }
  return c;
}

CVec simulate(const Circuit& c, const CVec& initial, int fuse) {
  if (c.qubits > 30)
    throw nk::Error(nk::Exit::input, "simulation of " + std::to_string(c.qubits) +
                                         " qubits refused: a state vector of more than 30 qubits needs over 16 GiB");
  const int64_t dim = int64_t{1} << c.qubits;
  CVec psi;
  if (initial.size() == 0) {
    psi = CVec::Zero(dim);
    psi[0] = 1;
  } else {
    if (initial.size() != dim) throw nk::Error(nk::Exit::runtime, "internal: initial state of the wrong size");
    psi = initial;
  }
  fuse = std::clamp(fuse, 1, std::max(1, c.qubits));
  size_t i = 0;
  const size_t n = c.gates.size();
  while (i < n) {
    const size_t run = multiplexor_run(c.gates, i);
    if (run > 0) {
      apply_multiplexor_run(psi, c.gates, i, i + run);
      i += run;
      continue;
    }
    // Grow a block while its qubit set stays within 'fuse' qubits.
    std::vector<int> qs;
    size_t j = i;
    for (; j < n; ++j) {
      const Gate& g = c.gates[j];
      std::vector<int> add;
      if (std::find(qs.begin(), qs.end(), g.q0) == qs.end()) add.push_back(g.q0);
      if (g.kind == Gate::cx && std::find(qs.begin(), qs.end(), g.q1) == qs.end()) add.push_back(g.q1);
      if (j > i && static_cast<int>(qs.size() + add.size()) > fuse) break;
      qs.insert(qs.end(), add.begin(), add.end());
    }
    if (j - i <= 2 || qs.size() <= 1) {
      // Too short to pay for a block (or a run on one qubit: fold it).
      if (qs.size() == 1 && j - i > 1) {
        Mat2 m = Mat2::Identity();
        for (size_t t = i; t < j; ++t) m = u3_matrix(c.gates[t].theta, c.gates[t].phi, c.gates[t].lambda) * m;
        apply_1q(psi, qs[0], m);
      } else {
        for (size_t t = i; t < j; ++t) apply_gate(psi, c.gates[t]);
      }
    } else {
      // Dense block: simulate the run on 2^k basis vectors.
      const int k = static_cast<int>(qs.size());
      Circuit local;
      local.qubits = k;
      for (size_t t = i; t < j; ++t) {
        Gate g = c.gates[t];
        g.q0 = static_cast<int>(std::find(qs.begin(), qs.end(), g.q0) - qs.begin());
        if (g.kind == Gate::cx) g.q1 = static_cast<int>(std::find(qs.begin(), qs.end(), g.q1) - qs.begin());
        local.gates.push_back(g);
      }
      apply_block(psi, qs, unitary(local));
    }
    i = j;
  }
  return psi;
}

CMat unitary(const Circuit& c) {
  const int64_t dim = int64_t{1} << c.qubits;
  CMat u = CMat::Identity(dim, dim);
  // Row-vector trick: apply every gate to all columns at once.
  for (const Gate& g : c.gates) {
    if (g.kind == Gate::cx) {
      const uint64_t cb = uint64_t{1} << g.q0, tb = uint64_t{1} << g.q1;
      for (int64_t r = 0; r < dim; ++r)
        if ((r & cb) && !(r & tb)) u.row(r).swap(u.row(r | tb));
    } else {
      const Mat2 m = u3_matrix(g.theta, g.phi, g.lambda);
      const uint64_t bit = uint64_t{1} << g.q0;
      for (int64_t r = 0; r < dim; ++r) {
        if (r & bit) continue;
        const Eigen::RowVectorXcd x = u.row(r), y = u.row(r | bit);
        u.row(r) = m(0, 0) * x + m(0, 1) * y;
        u.row(r | bit) = m(1, 0) * x + m(1, 1) * y;
      }
    }
  }
  return u;
}

double fidelity(const CVec& a, const CVec& b) {
  const double na = a.squaredNorm(), nb = b.squaredNorm();
  if (na == 0 || nb == 0) return 0;
  return std::norm(a.dot(b)) / (na * nb);
}

std::pair<int, int> random_two_qubit_pauli(nk::Rng& rng) {
  const int which = 1 + static_cast<int>(rng.below(15));  // 1..15: not I (x) I
  return {which / 4, which % 4};
}

Circuit with_depolarising(const Circuit& c, double p, nk::Rng& rng) {
  // Paulis as u3: I, X, Y, Z.
  static const double pauli[4][3] = {{0, 0, 0}, {kPi, 0, kPi}, {kPi, kPi / 2, kPi / 2}, {0, 0, kPi}};
  Circuit noisy;
  noisy.qubits = c.qubits;
  noisy.gates.reserve(c.gates.size() + 64);
  for (const Gate& g : c.gates) {
    noisy.gates.push_back(g);
    if (g.kind != Gate::cx || rng.uniform() >= p) continue;
    const auto [pa, pb] = random_two_qubit_pauli(rng);
    if (pa) noisy.u3(g.q0, pauli[pa][0], pauli[pa][1], pauli[pa][2]);
    if (pb) noisy.u3(g.q1, pauli[pb][0], pauli[pb][1], pauli[pb][2]);
  }
  return noisy;
}

NoisyFidelity noisy_fidelity(const Circuit& c, const CVec& target, double p, int64_t trajectories, uint64_t seed) {
  NoisyFidelity out;
  out.trajectories = trajectories;
  double sum = 0, sum2 = 0;
  for (int64_t t = 0; t < trajectories; ++t) {
    nk::Rng rng = nk::Rng(seed).split(static_cast<uint64_t>(t));
    const Circuit noisy = with_depolarising(c, p, rng);
    const double f = fidelity(target, simulate(noisy));
    sum += f;
    sum2 += f * f;
  }
  out.mean = sum / static_cast<double>(trajectories);
  if (trajectories > 1) {
    const double var = std::max(0.0, (sum2 - sum * out.mean) / static_cast<double>(trajectories - 1));
    out.stderr_ = std::sqrt(var / static_cast<double>(trajectories));
  }
  return out;
}

}  // namespace tnqe
