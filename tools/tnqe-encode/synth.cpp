// synth.cpp - see synth.hpp.
#include "tnqe-encode/synth.hpp"

#include <Eigen/LU>
#include <bit>
#include <cmath>

#include "tnqe-encode/linalg.hpp"
#include "nk/error.hpp"

extern "C" {
// LAPACK (Fortran, hidden string lengths at the end).
void zuncsd_(const char* jobu1, const char* jobu2, const char* jobv1t, const char* jobv2t, const char* trans,
             const char* signs, const int* m, const int* p, const int* q, std::complex<double>* x11, const int* ldx11,
             std::complex<double>* x12, const int* ldx12, std::complex<double>* x21, const int* ldx21,
             std::complex<double>* x22, const int* ldx22, double* theta, std::complex<double>* u1, const int* ldu1,
             std::complex<double>* u2, const int* ldu2, std::complex<double>* v1t, const int* ldv1t,
             std::complex<double>* v2t, const int* ldv2t, std::complex<double>* work, const int* lwork, double* rwork,
             const int* lrwork, int* iwork, int* info, size_t, size_t, size_t, size_t, size_t, size_t);
}

namespace tnqe {
namespace {

void rotation(Circuit& c, char axis, int q, double angle) {
  if (axis == 'y')
    c.ry(q, angle);
  else
    c.rz(q, angle);
}

/// diag(a0, a1) (top qubit control) = (I x V) diag(D, D^H) (I x W): emits W,
/// the multiplexed Rz on the top qubit, then V.
void demultiplex(Circuit& c, const CMat& a0, const CMat& a1, const std::vector<int>& qubits) {
  const int n = static_cast<int>(qubits.size());
  const std::vector<int> lower(qubits.begin(), qubits.end() - 1);
  const CMat prod = a0 * a1.adjoint();
  CMat v;
  Eigen::VectorXcd eig;
  linalg::schur(prod, v, eig);  // prod is normal: its Schur form is diagonal
  Eigen::VectorXcd d(eig.size());
  for (Eigen::Index i = 0; i < eig.size(); ++i) d[i] = std::polar(1.0, std::arg(eig[i]) / 2);
  const CMat w = d.asDiagonal() * v.adjoint() * a1;
  emit_unitary(c, w, lower);
  std::vector<double> angles(d.size());
  for (Eigen::Index i = 0; i < d.size(); ++i) angles[i] = -2 * std::arg(d[i]);
  emit_multiplexed_rotation(c, 'z', qubits[n - 1], lower, angles);
  emit_unitary(c, v, lower);
}

/// m = kron(a, b) up to a scalar: a acts on the high bit, b on the low bit.
void kron_factor(const Mat4& m, Mat2& high, Mat2& low) {
  int best_r = 0, best_c = 0;
  double best = -1;
  for (int r = 0; r < 2; ++r)
    for (int col = 0; col < 2; ++col) {
      const double f = m.block<2, 2>(2 * r, 2 * col).norm();
      if (f > best) {
        best = f;
        best_r = r;
        best_c = col;
      }
    }
  low = m.block<2, 2>(2 * best_r, 2 * best_c);
  low /= std::sqrt(low.determinant());
  for (int r = 0; r < 2; ++r)
    for (int col = 0; col < 2; ++col) high(r, col) = (low.adjoint() * m.block<2, 2>(2 * r, 2 * col)).trace() / 2.0;
}

}  // namespace

void emit_multiplexed_rotation(Circuit& c, char axis, int target, const std::vector<int>& controls,
                               const std::vector<double>& angles, bool target_zero) {
  const int m = static_cast<int>(controls.size());
  const size_t patterns = size_t{1} << m;
  if (angles.size() != patterns) throw nk::Error(nk::Exit::runtime, "internal: multiplexor angle count");
  bool any = false;
  for (double a : angles) any = any || std::abs(a) > 1e-14;
  if (!any) return;
  if (m == 0) {
    rotation(c, axis, target, angles[0]);
    return;
  }
  std::vector<double> w = angles;
  walsh_hadamard(w);
  const auto ladder_bit = [&](size_t j) { return (j + 1 == patterns) ? m - 1 : std::countr_zero(j + 1); };
  if (target_zero && axis == 'y') {
    // The ladder run backwards (same angles: the pattern's angle is linear in
    // them, and the reversed ladder with negated angles is the inverse) with
    // CZ for CX (Z, like X, flips Ry's sign; an even number of either
    // cancels). Its first gate, a CZ onto the target, is the identity while
    // the target is |0>: dropped. Written in the target's Hadamard frame
    // (H CZ H = CX, H Ry(a) H = Ry(-a)): H, a plain CX ladder with negated
    // angles, H, so the simulator still sees a Gray-code run and the H's
    // fuse into the neighbouring gates.
    c.h(target);
    for (size_t j = patterns; j-- > 0;) {
      const double theta = w[j ^ (j >> 1)] / static_cast<double>(patterns);
      if (std::abs(theta) > 1e-15) c.ry(target, -theta);
      if (j > 0) c.cx(controls[ladder_bit(j - 1)], target);
    }
    c.h(target);
    return;
  }
  for (size_t j = 0; j < patterns; ++j) {
    const size_t gray = j ^ (j >> 1);
    const double theta = w[gray] / static_cast<double>(patterns);
    if (std::abs(theta) > 1e-15) rotation(c, axis, target, theta);
    c.cx(controls[ladder_bit(j)], target);
  }
}

namespace {

/// The magic basis: b^H SO(4) b = SU(2) x SU(2).
Mat4 magic_basis() {
  const double s = 1 / std::sqrt(2.0);
  const cd i1(0, 1);
  Mat4 b;
  b << s, 0, 0, i1 * s, 0, i1 * s, s, 0, 0, i1 * s, -s, 0, s, 0, 0, -i1 * s;
  return b;
}

/// True when u is a real orthogonal matrix with determinant +1, up to a global phase.
bool special_orthogonal(const Mat4& u, Mat4& real_u) {
  Eigen::Index r = 0, col = 0;
  u.cwiseAbs().maxCoeff(&r, &col);
  real_u = u * (std::abs(u(r, col)) / u(r, col));
  return real_u.imag().norm() < 1e-10 && real_u.real().determinant() > 0;
}

}  // namespace

bool emit_two_qubit_orthogonal(Circuit& c, const Mat4& u, int q0, int q1) {
  Mat4 o;
  if (!special_orthogonal(u, o)) return false;
  // u = b^H (K_high x K_low) b, and b = (HS^H x HS) CX(q0 -> q1) (S x HS) up
  // to a phase (q1 is the high qubit): two CNOTs (Vatan and Williams 2004).
  const Mat4 b = magic_basis();
  Mat2 kh, kl;
  kron_factor(Mat4(b * o * b.adjoint()), kh, kl);
  Mat2 h, sg;
  h << 1, 1, 1, -1;
  h /= std::sqrt(2.0);
  sg << 1, 0, 0, cd(0, 1);
  const Mat2 hs = h * sg, hsd = h * sg.adjoint();
  c.u3(q1, sg);
  c.u3(q0, hs);
  c.cx(q0, q1);
  c.u3(q1, Mat2(hsd.adjoint() * kh * hsd));
  c.u3(q0, Mat2(hs.adjoint() * kl * hs));
  c.cx(q0, q1);
  c.u3(q1, Mat2(sg.adjoint()));
  c.u3(q0, Mat2(hs.adjoint()));
  return true;
}

void emit_two_qubit(Circuit& c, const Mat4& input, int q0, int q1) {
  if (emit_two_qubit_orthogonal(c, input, q0, q1)) return;
  const cd i1(0, 1);
  const Mat4 b = magic_basis();
  const Mat4 u = input / std::pow(input.determinant(), 0.25);
  const Mat4 um = b.adjoint() * u * b;
  const Mat4 m = um.transpose() * um;
  // A real orthogonal P diagonalising the commuting real symmetric Re m and Im m.
  Eigen::Matrix4d p;
  bool found = false;
  for (int attempt = 0; attempt < 20 && !found; ++attempt) {
    const double w = attempt == 0 ? 0.6180339887 : std::sin(1.0 + attempt * 2.399963);
    const Eigen::Matrix4d mix = m.real() + w * m.imag();
    p = linalg::symmetric_eigenvectors(mix);
    const Mat4 d = p.transpose().cast<cd>() * m * p.cast<cd>();
    found = (d - Mat4(d.diagonal().asDiagonal())).norm() < 1e-9;
  }
  if (!found) throw nk::Error(nk::Exit::runtime, "KAK decomposition did not converge (non-unitary input?)");
  if (p.determinant() < 0) p.col(0) *= -1;
  const Eigen::Vector4cd d2 = (p.transpose().cast<cd>() * m * p.cast<cd>()).diagonal();
  Eigen::Vector4cd d;
  for (int k = 0; k < 4; ++k) d[k] = std::sqrt(d2[k]);
  Eigen::Matrix4d o1 = (um * p.cast<cd>() * d.cwiseInverse().asDiagonal()).real();
  if (o1.determinant() < 0) {
    o1.col(0) *= -1;
    d[0] *= -1;
  }
  const Mat4 k1 = b * o1.cast<cd>() * b.adjoint();
  const Mat4 k2 = b * p.transpose().cast<cd>() * b.adjoint();
  // Phases of d in the XX, YY, ZZ eigenbasis (the magic basis): solve
  // arg d_j = g + a x_j + b y_j + c z_j.
  Mat2 px, py, pz;
  px << 0, 1, 1, 0;
  py << 0, -i1, i1, 0;
  pz << 1, 0, 0, -1;
  Mat4 xx, yy, zz;
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 4; ++col) {
      xx(r, col) = px(r / 2, col / 2) * px(r % 2, col % 2);
      yy(r, col) = py(r / 2, col / 2) * py(r % 2, col % 2);
      zz(r, col) = pz(r / 2, col / 2) * pz(r % 2, col % 2);
    }
  Eigen::Matrix4d sys;
  Eigen::Vector4d rhs;
  for (int j = 0; j < 4; ++j) {
    const Eigen::Vector4cd bj = b.col(j);
    sys(j, 0) = 1;
    sys(j, 1) = (bj.adjoint() * xx * bj)(0).real();
    sys(j, 2) = (bj.adjoint() * yy * bj)(0).real();
    sys(j, 3) = (bj.adjoint() * zz * bj)(0).real();
    rhs[j] = std::arg(d[j]);
  }
  const Eigen::Vector4d gabc = sys.partialPivLu().solve(rhs);
  const double a = gabc[1], bb = gabc[2], cc = gabc[3];
  Mat2 k2_high, k2_low, k1_high, k1_low;
  kron_factor(k2, k2_high, k2_low);
  kron_factor(k1, k1_high, k1_low);
  // u = k1 exp(i(a XX + b YY + c ZZ)) k2, in time order k2 first.
  c.u3(q0, k2_low);
  c.u3(q1, k2_high);
  c.rz(q1, -kPi / 2);
  c.cx(q1, q0);
  c.rz(q0, -2 * cc + kPi / 2);
  c.ry(q1, 2 * a - kPi / 2);
  c.cx(q0, q1);
  c.ry(q1, -2 * bb + kPi / 2);
  c.cx(q1, q0);
  c.rz(q0, kPi / 2);
  c.u3(q0, k1_low);
  c.u3(q1, k1_high);
}

CosineSine cosine_sine(const CMat& u) {
  const int m = static_cast<int>(u.rows());
  const int h = m / 2;
  CMat x11 = u.topLeftCorner(h, h), x12 = u.topRightCorner(h, h), x21 = u.bottomLeftCorner(h, h),
       x22 = u.bottomRightCorner(h, h);
  CosineSine out;
  out.theta.resize(h);
  out.u1.resize(h, h);
  out.u2.resize(h, h);
  out.v1h.resize(h, h);
  out.v2h.resize(h, h);
  std::vector<int> iwork(static_cast<size_t>(m));
  int info = 0, lwork = -1, lrwork = -1;
  cd wq;
  double rq = 0;
  const char y = 'Y', no = 'N', sg = 'D';
  zuncsd_(&y, &y, &y, &y, &no, &sg, &m, &h, &h, x11.data(), &h, x12.data(), &h, x21.data(), &h, x22.data(), &h,
          out.theta.data(), out.u1.data(), &h, out.u2.data(), &h, out.v1h.data(), &h, out.v2h.data(), &h, &wq, &lwork,
          &rq, &lrwork, iwork.data(), &info, 1, 1, 1, 1, 1, 1);
  lwork = std::max(1, static_cast<int>(wq.real()));
  lrwork = std::max(1, static_cast<int>(rq));
  std::vector<cd> work(static_cast<size_t>(lwork));
  std::vector<double> rwork(static_cast<size_t>(lrwork));
  zuncsd_(&y, &y, &y, &y, &no, &sg, &m, &h, &h, x11.data(), &h, x12.data(), &h, x21.data(), &h, x22.data(), &h,
          out.theta.data(), out.u1.data(), &h, out.u2.data(), &h, out.v1h.data(), &h, out.v2h.data(), &h, work.data(),
          &lwork, rwork.data(), &lrwork, iwork.data(), &info, 1, 1, 1, 1, 1, 1);
  if (info != 0)
    throw nk::Error(nk::Exit::runtime, "LAPACK zuncsd failed (info " + std::to_string(info) + ") on a " +
                                           std::to_string(m) + "x" + std::to_string(m) + " unitary");
  return out;
}

void emit_unitary(Circuit& c, const CMat& u, const std::vector<int>& qubits, int zero_inputs) {
  const int n = static_cast<int>(qubits.size());
  if (u.rows() != (Eigen::Index{1} << n) || u.cols() != u.rows())
    throw nk::Error(nk::Exit::runtime, "internal: unitary size does not match its qubits");
  if (n == 1) {
    c.u3(qubits[0], Mat2(u));
    return;
  }
  if (n == 2) {
    emit_two_qubit(c, Mat4(u), qubits[0], qubits[1]);
    return;
  }
  const int top = qubits[n - 1];
  const std::vector<int> lower(qubits.begin(), qubits.end() - 1);
  const CosineSine cs = cosine_sine(u);
  if (zero_inputs > 0)
    emit_unitary(c, cs.v1h, lower, zero_inputs - 1);  // the top qubit is |0>: only v1h acts
  else
    demultiplex(c, cs.v1h, cs.v2h, qubits);
  std::vector<double> angles(cs.theta.size());
  for (Eigen::Index i = 0; i < cs.theta.size(); ++i) angles[i] = 2 * cs.theta[i];
  emit_multiplexed_rotation(c, 'y', top, lower, angles, zero_inputs > 0);
  demultiplex(c, cs.u1, cs.u2, qubits);
}

void emit_state(Circuit& c, const CVec& psi, const std::vector<int>& qubits) {
  const int n = static_cast<int>(qubits.size());
  const int64_t dim = int64_t{1} << n;
  if (psi.size() != dim) throw nk::Error(nk::Exit::runtime, "internal: state size does not match its qubits");
  bool real = true;
  for (int64_t x = 0; x < dim; ++x) real = real && std::abs(psi[x].imag()) <= 1e-14 * (1 + std::abs(psi[x]));
  // norms[k][h]: norm of the amplitudes whose bits k.. equal h.
  std::vector<std::vector<double>> norms(n + 1);
  norms[0].resize(dim);
  for (int64_t x = 0; x < dim; ++x) norms[0][x] = std::abs(psi[x]);
  for (int k = 1; k <= n; ++k) {
    norms[k].resize(dim >> k);
    for (int64_t h = 0; h < (dim >> k); ++h)
      norms[k][h] = std::hypot(norms[k - 1][2 * h], norms[k - 1][2 * h + 1]);
  }
  for (int k = n - 1; k >= 0; --k) {
    const std::vector<int> controls(qubits.begin() + k + 1, qubits.end());
    std::vector<double> angles(dim >> (k + 1));
    for (int64_t h = 0; h < static_cast<int64_t>(angles.size()); ++h) {
      if (k == 0 && real)
        angles[h] = 2 * std::atan2(psi[2 * h + 1].real(), psi[2 * h].real());
      else
        angles[h] = 2 * std::atan2(norms[k][2 * h + 1], norms[k][2 * h]);
    }
    emit_multiplexed_rotation(c, 'y', qubits[k], controls, angles, true);  // qubit k is still |0>
  }
  if (real) return;
  std::vector<double> phase(dim);
  for (int64_t x = 0; x < dim; ++x) phase[x] = std::abs(psi[x]) > 0 ? std::arg(psi[x]) : 0.0;
  for (int k = 0; k < n; ++k) {
    const std::vector<int> controls(qubits.begin() + k + 1, qubits.end());
    std::vector<double> angles(phase.size() / 2), next(phase.size() / 2);
    for (size_t h = 0; h < angles.size(); ++h) {
      angles[h] = phase[2 * h + 1] - phase[2 * h];
      next[h] = (phase[2 * h + 1] + phase[2 * h]) / 2;
    }
    emit_multiplexed_rotation(c, 'z', qubits[k], controls, angles);
    phase.swap(next);
  }
}

void emit_state_schmidt(Circuit& c, const CVec& psi, const std::vector<int>& qubits) {
  const int n = static_cast<int>(qubits.size());
  if (psi.size() != (int64_t{1} << n)) throw nk::Error(nk::Exit::runtime, "internal: state size does not match its qubits");
  if (n == 1) {
    CMat v(2, 1);
    v.col(0) = psi;
    c.u3(qubits[0], Mat2(complete_isometry(v)));
    return;
  }
  const int a = n / 2, b = n - a;
  const int64_t da = int64_t{1} << a, db = int64_t{1} << b;
  CMat m(db, da);  // m(xB, xA) = psi[xA + 2^a xB]
  for (int64_t xb = 0; xb < db; ++xb)
    for (int64_t xa = 0; xa < da; ++xa) m(xb, xa) = psi[xa + da * xb];
  CMat su, sv;
  Eigen::VectorXd sigma;
  linalg::svd(m, su, sigma, sv);
  // psi = sum_i s_i |U_i>_B |conj(V_i)>_A.
  const std::vector<int> qa(qubits.begin(), qubits.begin() + a), qb(qubits.begin() + a, qubits.end());
  CVec s = sigma.cast<cd>();
  emit_state_schmidt(c, s / s.norm(), qa);
  for (int j = 0; j < a; ++j) c.cx(qa[j], qb[j]);
  emit_unitary(c, sv.conjugate(), qa);
  emit_unitary(c, complete_isometry(su), qb, b - a);
}

int64_t isometry_cnots(int n, int z) {
  if (n <= 1) return 0;
  if (n == 2) return 3;
  const int64_t half = int64_t{1} << (n - 1);
  const int64_t right = z > 0 ? isometry_cnots(n - 1, z - 1) : 2 * unitary_cnots(n - 1) + half;
  const int64_t rotation = z > 0 ? half - 1 : half;  // the top qubit is |0>: one CZ less
  return right + rotation + 2 * unitary_cnots(n - 1) + half;
}

int64_t schmidt_cnots(int n) {
  if (n <= 1) return 0;
  const int a = n / 2, b = n - a;
  return schmidt_cnots(a) + a + unitary_cnots(a) + isometry_cnots(b, b - a);
}

int64_t state_cnots(int n, bool real) {
  if (n <= 0) return 0;
  const int64_t ry = (int64_t{1} << n) - n - 1;  // sum over k = 1..n-1 controls of 2^k - 1
  return real ? ry : ry + (int64_t{1} << n) - 2;
}

int64_t unitary_cnots(int n) {
  if (n <= 1) return 0;
  if (n == 2) return 3;
  return 4 * unitary_cnots(n - 1) + 3 * (int64_t{1} << (n - 1));
}

CMat complete_isometry(const CMat& v) {
  const CMat q = linalg::qr_q(v);
  CMat u(v.rows(), v.rows());
  u.leftCols(v.cols()) = v;
  u.rightCols(v.rows() - v.cols()) = q.rightCols(v.rows() - v.cols());
  return u;
}

double phase_distance(const CMat& a, const CMat& b) {
  const cd overlap = (a.adjoint() * b).trace();
  const cd phase = std::abs(overlap) > 0 ? overlap / std::abs(overlap) : cd(1);
  return (a * phase - b).norm();
}

}  // namespace tnqe
