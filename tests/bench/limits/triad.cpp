// triad.cpp - the machine's memory bandwidth, STREAM's triad a = b + s * c
// over three arrays far larger than the caches (OpenMP threads as
// OMP_NUM_THREADS), best of 10; bytes counted as STREAM counts them (two
// reads and one write of 8 bytes per element). Compiled by run.sh.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1L << 25;  // 3 x 256 MiB
  std::vector<double> a(n), b(n), c(n);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 0, b[i] = 1, c[i] = 2;  // first touch on the thread that streams it
  double best = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
    best = std::min(best, omp_get_wtime() - t0);
  }
  if (a[n / 2] != 7.0) return 1;
  std::printf("%.2f\n", 24.0 * static_cast<double>(n) / best / 1e9);
  return 0;
}
