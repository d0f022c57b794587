// linalg.hpp - the dense factorisations tnqe-encode needs, on LAPACK (which
// it links for zuncsd anyway): thin SVD (zgesdd), Schur form (zgees), QR
// (zgeqrf + zungqr) and the symmetric eigenproblem (dsyev). Eigen's own
// complex SVD and Schur templates cost minutes of compile time per file.
#pragma once
#include <Eigen/Core>
#include <complex>

namespace tnqe::linalg {

using CMat = Eigen::MatrixXcd;

/// a = u diag(s) v^H, u: m x k, v: n x k, k = min(m, n), s descending.
void svd(const CMat& a, CMat& u, Eigen::VectorXd& s, CMat& v);
/// a = z t z^H with z unitary and t upper triangular; returns diag(t) in 'eig'.
void schur(const CMat& a, CMat& z, Eigen::VectorXcd& eig);
/// The full m x m unitary Q of a = Q R (m >= n).
CMat qr_q(const CMat& a);
/// a = Q R, thin: q m x n with orthonormal columns, r n x n upper triangular (m >= n).
void qr_thin(const CMat& a, CMat& q, CMat& r);
/// Eigenvectors (columns, orthonormal) of a real symmetric matrix.
Eigen::MatrixXd symmetric_eigenvectors(const Eigen::MatrixXd& a);

}  // namespace tnqe::linalg
