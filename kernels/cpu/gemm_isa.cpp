// gemm_isa.cpp - the CPU matrix products, compiled once per instruction set
// (gemm_avx2.cpp and gemm_avx512.cpp include this file with Eigen renamed, so
// the copies never share a symbol); gemm.cpp picks one per process.
#ifndef NK_GEMM_NAMESPACE
#define NK_GEMM_NAMESPACE gemm_generic
#define NK_GEMM_ISA "generic"
// The sanitizer build compiles this copy optimised and uninstrumented (see
// CMakeLists.txt); its Eigen is renamed too, so no other file's -O1 instantiation
// of the same templates can take its place at link time.
#ifdef NK_GEMM_RENAME_EIGEN
#define Eigen EigenKernelsGeneric
#endif
#endif

#include <Eigen/Core>

#include "gemm_isa.hpp"

namespace nk::kernels::NK_GEMM_NAMESPACE {

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void product(const float* a, const float* b, float* c, long m, long n, long k) {
  Eigen::Map<const Matrix> A(a, m, k), B(b, k, n);
  Eigen::Map<Matrix> C(c, m, n);
  C.noalias() = A * B;
}

void product_nt(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate) {
  Eigen::Map<const Matrix> A(a, m, k), B(b, n, k);
  Eigen::Map<Matrix> C(c, m, n);
  if (accumulate)
    C.noalias() += A * B.transpose();
  else
    C.noalias() = A * B.transpose();
}

void product_tn(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate) {
  Eigen::Map<const Matrix> A(a, k, m), B(b, k, n);
  Eigen::Map<Matrix> C(c, m, n);
  if (accumulate)
    C.noalias() += A.transpose() * B;
  else
    C.noalias() = A.transpose() * B;
}

}  // namespace

const GemmOps ops = {NK_GEMM_ISA, product, product_nt, product_tn};

}  // namespace nk::kernels::NK_GEMM_NAMESPACE
