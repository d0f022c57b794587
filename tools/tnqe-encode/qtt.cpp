// qtt.cpp - see qtt.hpp.
#include "tnqe-encode/qtt.hpp"

#include <cmath>

#include "tnqe-encode/linalg.hpp"
#include "nk/error.hpp"

namespace tnqe {

int Layout::qubits() const {
  int n = 0;
  for (const auto& b : bits) n += static_cast<int>(b.size());
  return n;
}

int Layout::offset(int k) const {
  int o = 0;
  for (int l = 0; l < k; ++l) o += static_cast<int>(bits[l].size());
  return o;
}

int64_t Layout::to_amplitude(int64_t x) const {
  int64_t a = 0;
  int o = 0;
  for (const auto& core : bits)
    for (int b : core) a |= ((x >> b) & 1) << o++;
  return a;
}

int64_t Layout::to_tensor(int64_t x) const {
  int64_t t = 0;
  for (const auto& core : bits) {
    int64_t p = 0;
    for (size_t b = 0; b < core.size(); ++b) p |= ((x >> core[b]) & 1) << b;
    t = (t << core.size()) | p;
  }
  return t;
}

Layout image_layout(int m, bool rgb) {
  Layout l;
  const int colour = rgb ? 2 : 0;
  // data index = (i * s + j) * C + c: c bits [0, colour), j bits [colour, colour + m), i bits above.
  for (int k = 1; k <= m; ++k) {
    const int jbit = colour + (m - k), ibit = colour + m + (m - k);
    l.bits.push_back({jbit, ibit});
  }
  if (rgb) l.bits.push_back({0, 1});
  return l;
}

Layout vector_layout(int n) {
  Layout l;
  int top = n - 1;
  while (top >= 0) {
    if (top >= 1) {
      l.bits.push_back({top - 1, top});
      top -= 2;
    } else {
      l.bits.push_back({0});
      top -= 1;
    }
  }
  return l;
}

std::vector<int64_t> Mps::bonds() const {
  std::vector<int64_t> r;
  for (size_t k = 0; k + 1 < cores.size(); ++k) r.push_back(cores[k].right);
  return r;
}

Mps decompose(const CVec& tensor, const std::vector<int64_t>& phys, const Truncation& t) {
  const int kcores = static_cast<int>(phys.size());
  Mps mps;
  mps.norm = tensor.norm();
  if (!(mps.norm > 0)) throw nk::Error(nk::Exit::input, "the data is all zero: no quantum state encodes it");
  const double delta = kcores > 1 ? t.tol * mps.norm / std::sqrt(kcores - 1.0) : 0.0;
  int64_t left = 1;
  int64_t remaining = tensor.size();
  // 'carry' holds the remainder as a (left, remaining) matrix in row-major meaning:
  // element (a, x) = carry_data[a * remaining + x], x with p_k slowest.
  std::vector<cd> carry(tensor.data(), tensor.data() + tensor.size());
  for (int k = 0; k < kcores; ++k) {
    const int64_t d = phys[k];
    remaining /= d;
    Core core;
    core.left = left;
    core.phys = d;
    if (k == kcores - 1) {
      core.right = 1;
      core.m.resize(left, d);
      for (int64_t a = 0; a < left; ++a)
        for (int64_t p = 0; p < d; ++p) core.m(a, p) = carry[a * d + p];
      mps.cores.push_back(std::move(core));
      break;
    }
    // Unfolding (left * d) x remaining.
    CMat unf(left * d, remaining);
    for (int64_t a = 0; a < left; ++a)
      for (int64_t p = 0; p < d; ++p)
        for (int64_t x = 0; x < remaining; ++x) unf(a * d + p, x) = carry[(a * d + p) * remaining + x];
    CMat su, sv;
    Eigen::VectorXd s;
    linalg::svd(unf, su, s, sv);
    int64_t r = 0;
    for (int64_t i = 0; i < s.size(); ++i)
      if (s[i] > 1e-14 * s[0]) r = i + 1;
    if (t.max_bond > 0) r = std::min(r, t.max_bond);
    if (delta > 0) {
      double tail = 0;
      while (r > 1 && tail + s[r - 1] * s[r - 1] <= delta * delta) {
        --r;
        tail += s[r] * s[r];
      }
    }
    r = std::max<int64_t>(r, 1);
    core.right = r;
    core.m.resize(left, d * r);
    for (int64_t a = 0; a < left; ++a)
      for (int64_t p = 0; p < d; ++p)
        for (int64_t b = 0; b < r; ++b) core.m(a, p * r + b) = su(a * d + p, b);
    mps.cores.push_back(std::move(core));
    const CMat next = s.head(r).cast<cd>().asDiagonal() * sv.leftCols(r).adjoint();  // r x remaining
    carry.assign(static_cast<size_t>(r * remaining), cd(0));
    for (int64_t b = 0; b < r; ++b)
      for (int64_t x = 0; x < remaining; ++x) carry[b * remaining + x] = next(b, x);
    left = r;
  }
  // Right-to-left LQ sweep: core k = L Q with Q's rows orthonormal; L moves left.
  for (int k = kcores - 1; k >= 1; --k) {
    Core& c = mps.cores[k];
    // m = U S V^H: the rows of V^H are orthonormal, U S moves left.
    CMat u, v;
    Eigen::VectorXd sv;
    linalg::svd(c.m, u, sv, v);
    const int64_t rank = sv.size();
    const CMat l = u * sv.cast<cd>().asDiagonal();  // left x rank
    c.m = v.adjoint();                               // rank x (phys * right)
    Core& prev = mps.cores[k - 1];
    CMat merged(prev.left, prev.phys * rank);
    for (int64_t p = 0; p < prev.phys; ++p) {
      const CMat block = prev.m.middleCols(p * prev.right, prev.right);  // left x right(=c.left)
      merged.middleCols(p * rank, rank) = block * l;
    }
    prev.m = merged;
    prev.right = rank;
    c.left = rank;
  }
  const double n = mps.cores[0].m.norm();
  mps.cores[0].m /= n;
  return mps;
}

CVec contract(const Mps& mps) {
  // Running (prefix states) x right-bond matrix.
  CMat acc = CMat::Ones(1, 1);
  for (const Core& c : mps.cores) {
    CMat next(acc.rows() * c.phys, c.right);
    for (int64_t x = 0; x < acc.rows(); ++x)
      for (int64_t p = 0; p < c.phys; ++p)
        next.row(x * c.phys + p) = acc.row(x) * c.m.middleCols(p * c.right, c.right);
    acc.swap(next);
  }
  return acc.col(0);
}

CVec data_to_tensor(const Layout& layout, const CVec& data) {
  CVec t(data.size());
  for (int64_t x = 0; x < data.size(); ++x) t[layout.to_tensor(x)] = data[x];
  return t;
}

CVec tensor_to_amplitudes(const Layout& layout, const CVec& tensor) {
  // Walk data indices: amplitude and tensor index of the same data element.
  CVec a(tensor.size());
  for (int64_t x = 0; x < tensor.size(); ++x) a[layout.to_amplitude(x)] = tensor[layout.to_tensor(x)];
  return a;
}

CVec amplitudes_to_data(const Layout& layout, const CVec& amplitudes) {
  CVec d(amplitudes.size());
  for (int64_t x = 0; x < amplitudes.size(); ++x) d[x] = amplitudes[layout.to_amplitude(x)];
  return d;
}

}  // namespace tnqe
