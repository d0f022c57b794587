// linalg.cpp - see linalg.hpp.
#include "tnqe-encode/linalg.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "nk/error.hpp"

using cd = std::complex<double>;

extern "C" {
void zgesdd_(const char* jobz, const int* m, const int* n, cd* a, const int* lda, double* s, cd* u, const int* ldu,
             cd* vt, const int* ldvt, cd* work, const int* lwork, double* rwork, int* iwork, int* info, size_t);
void zgees_(const char* jobvs, const char* sort, void* select, const int* n, cd* a, const int* lda, int* sdim, cd* w,
            cd* vs, const int* ldvs, cd* work, const int* lwork, double* rwork, int* bwork, int* info, size_t, size_t);
void zgeqrf_(const int* m, const int* n, cd* a, const int* lda, cd* tau, cd* work, const int* lwork, int* info);
void zungqr_(const int* m, const int* n, const int* k, cd* a, const int* lda, const cd* tau, cd* work,
             const int* lwork, int* info);
void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
            const int* lwork, int* info, size_t, size_t);
}

namespace tnqe::linalg {
namespace {

void check(int info, const char* what) {
  if (info != 0) throw nk::Error(nk::Exit::runtime, std::string("LAPACK ") + what + " failed (info " + std::to_string(info) + ")");
}

}  // namespace

void svd(const CMat& input, CMat& u, Eigen::VectorXd& s, CMat& v) {
  CMat a = input;
  const int m = static_cast<int>(a.rows()), n = static_cast<int>(a.cols()), k = std::min(m, n);
  const int mx = std::max(m, n);
  u.resize(m, k);
  CMat vt(k, n);
  s.resize(k);
  std::vector<double> rwork(static_cast<size_t>(std::max(1, k * std::max(5 * k + 7, 2 * mx + 2 * k + 1))));
  std::vector<int> iwork(static_cast<size_t>(8 * std::max(1, k)));
  int info = 0, lwork = -1;
  cd query;
  const char jobz = 'S';
  const int lda = std::max(1, m), ldu = std::max(1, m), ldvt = std::max(1, k);
  zgesdd_(&jobz, &m, &n, a.data(), &lda, s.data(), u.data(), &ldu, vt.data(), &ldvt, &query, &lwork, rwork.data(),
          iwork.data(), &info, 1);
  check(info, "zgesdd (workspace query)");
  lwork = std::max(1, static_cast<int>(query.real()));
  std::vector<cd> work(static_cast<size_t>(lwork));
  zgesdd_(&jobz, &m, &n, a.data(), &lda, s.data(), u.data(), &ldu, vt.data(), &ldvt, work.data(), &lwork,
          rwork.data(), iwork.data(), &info, 1);
  check(info, "zgesdd");
  v = vt.adjoint();
}

void schur(const CMat& input, CMat& z, Eigen::VectorXcd& eig) {
  CMat a = input;
  const int n = static_cast<int>(a.rows());
  z.resize(n, n);
  eig.resize(n);
  std::vector<double> rwork(static_cast<size_t>(std::max(1, n)));
  int info = 0, sdim = 0, lwork = -1, bwork = 0;
  cd query;
  const char jobvs = 'V', sort = 'N';
  zgees_(&jobvs, &sort, nullptr, &n, a.data(), &n, &sdim, eig.data(), z.data(), &n, &query, &lwork, rwork.data(),
         &bwork, &info, 1, 1);
  check(info, "zgees (workspace query)");
  lwork = std::max(1, static_cast<int>(query.real()));
  std::vector<cd> work(static_cast<size_t>(lwork));
  zgees_(&jobvs, &sort, nullptr, &n, a.data(), &n, &sdim, eig.data(), z.data(), &n, work.data(), &lwork,
         rwork.data(), &bwork, &info, 1, 1);
  check(info, "zgees");
}

namespace {

/// zgeqrf on a (m x n), then zungqr for the first 'cols' columns of Q.
CMat householder_q(const CMat& input, int cols) {
  const int m = static_cast<int>(input.rows()), n = static_cast<int>(input.cols());
  CMat a = CMat::Zero(m, cols);
  a.leftCols(n) = input;
  std::vector<cd> tau(static_cast<size_t>(std::max(1, n)));
  int info = 0, lwork = -1;
  cd query;
  zgeqrf_(&m, &n, a.data(), &m, tau.data(), &query, &lwork, &info);
  check(info, "zgeqrf (workspace query)");
  lwork = std::max({1, static_cast<int>(query.real()), cols});
  std::vector<cd> work(static_cast<size_t>(lwork));
  zgeqrf_(&m, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  check(info, "zgeqrf");
  zungqr_(&m, &cols, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  check(info, "zungqr");
  return a;
}

}  // namespace

CMat qr_q(const CMat& a) { return householder_q(a, static_cast<int>(a.rows())); }

void qr_thin(const CMat& input, CMat& q, CMat& r) {
  const int m = static_cast<int>(input.rows()), n = static_cast<int>(input.cols());
  CMat a = input;
  std::vector<cd> tau(static_cast<size_t>(std::max(1, n)));
  int info = 0, lwork = -1;
  cd query;
  zgeqrf_(&m, &n, a.data(), &m, tau.data(), &query, &lwork, &info);
  check(info, "zgeqrf (workspace query)");
  lwork = std::max(1, static_cast<int>(query.real()));
  std::vector<cd> work(static_cast<size_t>(lwork));
  zgeqrf_(&m, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  check(info, "zgeqrf");
  r = a.topLeftCorner(n, n).triangularView<Eigen::Upper>();
  zungqr_(&m, &n, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  check(info, "zungqr");
  q = a;
}

Eigen::MatrixXd symmetric_eigenvectors(const Eigen::MatrixXd& input) {
  Eigen::MatrixXd a = input;
  const int n = static_cast<int>(a.rows());
  Eigen::VectorXd w(n);
  int info = 0, lwork = -1;
  double query = 0;
  const char jobz = 'V', uplo = 'U';
  dsyev_(&jobz, &uplo, &n, a.data(), &n, w.data(), &query, &lwork, &info, 1, 1);
  check(info, "dsyev (workspace query)");
  lwork = std::max(1, static_cast<int>(query));
  std::vector<double> work(static_cast<size_t>(lwork));
  dsyev_(&jobz, &uplo, &n, a.data(), &n, w.data(), work.data(), &lwork, &info, 1, 1);
  check(info, "dsyev");
  return a;
}

}  // namespace tnqe::linalg
