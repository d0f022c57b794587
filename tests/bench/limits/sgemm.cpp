// sgemm.cpp - this machine's single-precision GEMM rate: Eigen's product of
// two n x n float matrices on OMP_NUM_THREADS threads, the best of 5, in
// GFLOP/s (2 n^3 a product). Compiled by run.sh with -O3 -march=native.
#include <Eigen/Dense>
#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2048;
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    c.noalias() = a * b;
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!std::isfinite(c(n / 2, n / 3))) return 1;
  std::printf("%.1f\n", 2.0 * n * static_cast<double>(n) * n / best / 1e9);
  return 0;
}
