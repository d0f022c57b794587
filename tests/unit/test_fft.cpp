// test_fft.cpp - the FFT facade against a direct DFT.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <vector>

#include "nk/kernels/fft.hpp"
#include "nk/rng.hpp"

namespace {
std::vector<std::complex<double>> direct_dft(const std::vector<double>& row) {
  const long n = static_cast<long>(row.size());
  std::vector<std::complex<double>> out(static_cast<size_t>(nk::fft::bins(n)));
  for (long f = 0; f < nk::fft::bins(n); ++f) {
    std::complex<double> acc = 0;
    for (long t = 0; t < n; ++t) acc += row[static_cast<size_t>(t)] * std::polar(1.0, -2 * M_PI * f * t / n);
    out[static_cast<size_t>(f)] = acc;
  }
  return out;
}
}  // namespace

TEST_SUITE("fft") {
  TEST_CASE("batched forward transforms match the direct DFT (float and double)") {
    nk::Rng rng(1);
    for (long n : {1L, 2L, 7L, 16L, 100L, 243L}) {
      const long batch = 3;
      std::vector<double> x(static_cast<size_t>(n * batch));
      for (double& v : x) v = rng.normal();
      std::vector<float> xf(x.begin(), x.end());
      std::vector<std::complex<double>> y(static_cast<size_t>(nk::fft::bins(n) * batch));
      std::vector<std::complex<float>> yf(y.size());
      nk::fft::forward(x.data(), y.data(), n, batch);
      nk::fft::forward(xf.data(), yf.data(), n, batch);
      for (long b = 0; b < batch; ++b) {
        const auto reference = direct_dft(std::vector<double>(x.begin() + b * n, x.begin() + (b + 1) * n));
        for (long f = 0; f < nk::fft::bins(n); ++f) {
          const auto got = y[static_cast<size_t>(b * nk::fft::bins(n) + f)];
          const auto got_f = yf[static_cast<size_t>(b * nk::fft::bins(n) + f)];
          CHECK(std::abs(got - reference[static_cast<size_t>(f)]) < 1e-10 * n);
          CHECK(std::abs(std::complex<double>(got_f) - reference[static_cast<size_t>(f)]) < 1e-4 * n);
        }
      }
    }
  }

  TEST_CASE("inverse undoes forward, keeps its input, and plans are cached") {
    nk::Rng rng(2);
    const long n = 96, batch = 4;
    std::vector<double> x(static_cast<size_t>(n * batch));
    for (double& v : x) v = rng.uniform();
    std::vector<std::complex<double>> spectrum(static_cast<size_t>(nk::fft::bins(n) * batch));
    nk::fft::forward(x.data(), spectrum.data(), n, batch);
    const auto spectrum_copy = spectrum;
    std::vector<double> back(x.size());
    nk::fft::inverse(spectrum.data(), back.data(), n, batch);
    CHECK(spectrum == spectrum_copy);
    for (size_t i = 0; i < x.size(); ++i) CHECK(back[i] == doctest::Approx(x[i]).epsilon(1e-12));
    const long plans = nk::fft::cached_plans();
    nk::fft::forward(x.data(), spectrum.data(), n, batch);
    CHECK(nk::fft::cached_plans() == plans);
  }

  TEST_CASE("good_size gives 7-smooth lengths") {
    CHECK(nk::fft::good_size(1) == 1);
    CHECK(nk::fft::good_size(11) == 12);
    CHECK(nk::fft::good_size(1000) == 1000);
    CHECK(nk::fft::good_size(1031) == 1050);
  }
}
