// test_kernels.cpp - CPU twins against naive loops, and every CUDA kernel
// against its CPU twin where a GPU exists (skipped, not failed, elsewhere).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <complex>
#include <cstdio>
#include <vector>

#include "nk/device.hpp"
#include "nk/error.hpp"
#include "nk/kernels/fft.hpp"
#include "nk/kernels/gemm.hpp"
#include "nk/kernels/spectral.hpp"
#include "nk/kernels/vector.hpp"
#include "nk/rng.hpp"

namespace {

std::vector<std::complex<float>> random_complex(size_t n, nk::Rng& rng) {
  std::vector<std::complex<float>> v(n);
  for (auto& z : v) z = {static_cast<float>(rng.normal()), static_cast<float>(rng.normal())};
  return v;
}

std::vector<float> random_real(size_t n, nk::Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

bool cuda_device_present() {
  try {
    return nk::choose_device("auto").kind == nk::DeviceKind::cuda;
  } catch (const std::exception&) {
    return false;
  }
}

double max_relative_error(const float* a, const float* b, size_t n) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / scale);
  return worst;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("spectral_multiply CPU twin equals the naive product, also in place") {
    nk::Rng rng(3);
    const long batch = 2, channels = 5, bins = 33;
    const auto x = random_complex(static_cast<size_t>(batch * channels * bins), rng);
    const auto k = random_complex(static_cast<size_t>(channels * bins), rng);
    std::vector<std::complex<float>> y(x.size());
    nk::kernels::spectral_multiply(x.data(), k.data(), y.data(), batch, channels, bins);
    for (long b = 0; b < batch; ++b)
      for (long h = 0; h < channels; ++h)
        for (long f = 0; f < bins; ++f) {
          const size_t i = static_cast<size_t>((b * channels + h) * bins + f);
          CHECK(y[i] == x[i] * k[static_cast<size_t>(h * bins + f)]);
        }
    auto inplace = x;
    nk::kernels::spectral_multiply(inplace.data(), k.data(), inplace.data(), batch, channels, bins);
    CHECK(inplace == y);
  }

  TEST_CASE("gemm CPU path equals the naive triple loop") {
    nk::Rng rng(4);
    const long m = 7, n = 5, k = 9;
    const auto a = random_real(static_cast<size_t>(m * k), rng), b = random_real(static_cast<size_t>(k * n), rng);
    std::vector<float> c(static_cast<size_t>(m * n));
    nk::kernels::gemm(a.data(), b.data(), c.data(), m, n, k);
    for (long i = 0; i < m; ++i)
      for (long j = 0; j < n; ++j) {
        double acc = 0;
        for (long l = 0; l < k; ++l) acc += static_cast<double>(a[static_cast<size_t>(i * k + l)]) * b[static_cast<size_t>(l * n + j)];
        CHECK(c[static_cast<size_t>(i * n + j)] == doctest::Approx(acc).epsilon(1e-5));
      }
  }

  TEST_CASE("gemm_nt (= and +=) equals the naive triple loop, in the ISA copy this process runs") {
    nk::Rng rng(6);
    for (const long m : {1L, 7L, 65L})
      for (const long n : {3L, 33L})
        for (const long k : {5L, 130L}) {
          const auto a = random_real(static_cast<size_t>(m * k), rng), b = random_real(static_cast<size_t>(n * k), rng);
          std::vector<float> c(static_cast<size_t>(m * n), 0.5f), base = c;
          nk::kernels::gemm_nt(a.data(), b.data(), c.data(), m, n, k);
          std::vector<float> acc = base;
          nk::kernels::gemm_nt(a.data(), b.data(), acc.data(), m, n, k, true);
          for (long i = 0; i < m; ++i)
            for (long j = 0; j < n; ++j) {
              double ref = 0;
              for (long l = 0; l < k; ++l) ref += static_cast<double>(a[static_cast<size_t>(i * k + l)]) * b[static_cast<size_t>(j * k + l)];
              CHECK(c[static_cast<size_t>(i * n + j)] == doctest::Approx(ref).epsilon(1e-5).scale(1.0));
              CHECK(acc[static_cast<size_t>(i * n + j)] == doctest::Approx(ref + 0.5).epsilon(1e-5).scale(1.0));
            }
        }
    const std::string isa = nk::kernels::gemm_isa();
    CHECK((isa == "generic" || isa == "avx2" || isa == "avx512"));
    if (const char* cap = std::getenv("NK_KERNELS_ISA"); cap && std::string(cap) == "generic") CHECK(isa == "generic");
  }

  TEST_CASE("gemm_tn (= and +=) equals the naive triple loop") {
    nk::Rng rng(7);
    for (const long m : {1L, 9L, 64L})
      for (const long n : {3L, 40L})
        for (const long k : {5L, 300L}) {
          const auto a = random_real(static_cast<size_t>(k * m), rng), b = random_real(static_cast<size_t>(k * n), rng);
          std::vector<float> c(static_cast<size_t>(m * n), 0.5f), acc = c;
          nk::kernels::gemm_tn(a.data(), b.data(), c.data(), m, n, k);
          nk::kernels::gemm_tn(a.data(), b.data(), acc.data(), m, n, k, true);
          for (long i = 0; i < m; ++i)
            for (long j = 0; j < n; ++j) {
              double ref = 0;
              for (long l = 0; l < k; ++l) ref += static_cast<double>(a[static_cast<size_t>(l * m + i)]) * b[static_cast<size_t>(l * n + j)];
              CHECK(c[static_cast<size_t>(i * n + j)] == doctest::Approx(ref).epsilon(1e-5).scale(std::sqrt(static_cast<double>(k))));
              CHECK(acc[static_cast<size_t>(i * n + j)] == doctest::Approx(ref + 0.5).epsilon(1e-5).scale(std::sqrt(static_cast<double>(k))));
            }
        }
  }

  TEST_CASE("asking for CUDA without a device is a runtime error with the reason") {
    if (cuda_device_present()) return;
    try {
      nk::choose_device("cuda");
      FAIL("--device cuda accepted without a device");
    } catch (const nk::Error& e) {
      CHECK(e.code() == nk::Exit::runtime);
      CHECK(std::string(e.what()).find("--device cuda") != std::string::npos);
    }
    CHECK(nk::choose_device("auto").kind == nk::DeviceKind::cpu);
    CHECK_FALSE(nk::choose_device("auto").reason.empty());
  }

  TEST_CASE("CUDA kernels match their CPU twins") {
    if (!cuda_device_present()) {
      std::string why;
      nk::cuda_family<nk_cuda_core>(&why);
      std::printf("CUDA comparison skipped: no usable GPU (%s)\n",
                  why.empty() ? nk::choose_device("auto").reason.c_str() : why.c_str());
      return;
    }
    nk::Rng rng(5);
    const long batch = 3, channels = 64, bins = 4097;
    const auto x = random_complex(static_cast<size_t>(batch * channels * bins), rng);
    const auto k = random_complex(static_cast<size_t>(channels * bins), rng);
    std::vector<std::complex<float>> cpu(x.size()), gpu(x.size());
    nk::kernels::spectral_multiply(x.data(), k.data(), cpu.data(), batch, channels, bins, nk::DeviceKind::cpu);
    nk::kernels::spectral_multiply(x.data(), k.data(), gpu.data(), batch, channels, bins, nk::DeviceKind::cuda);
    CHECK(max_relative_error(reinterpret_cast<float*>(gpu.data()), reinterpret_cast<float*>(cpu.data()), 2 * cpu.size()) < 1e-6);

    const long m = 129, n = 65, kk = 257;
    const auto a = random_real(static_cast<size_t>(m * kk), rng), b = random_real(static_cast<size_t>(kk * n), rng);
    std::vector<float> c_cpu(static_cast<size_t>(m * n)), c_gpu(c_cpu.size());
    nk::kernels::gemm(a.data(), b.data(), c_cpu.data(), m, n, kk, nk::DeviceKind::cpu);
    nk::kernels::gemm(a.data(), b.data(), c_gpu.data(), m, n, kk, nk::DeviceKind::cuda);
    CHECK(max_relative_error(c_gpu.data(), c_cpu.data(), c_cpu.size()) < 1e-4);

    const long length = 1000, rows = 8;
    const auto signal = random_real(static_cast<size_t>(length * rows), rng);
    std::vector<std::complex<float>> s_cpu(static_cast<size_t>(nk::fft::bins(length) * rows)), s_gpu(s_cpu.size());
    nk::fft::forward(signal.data(), s_cpu.data(), length, rows, nk::DeviceKind::cpu);
    nk::fft::forward(signal.data(), s_gpu.data(), length, rows, nk::DeviceKind::cuda);
    CHECK(max_relative_error(reinterpret_cast<float*>(s_gpu.data()), reinterpret_cast<float*>(s_cpu.data()), 2 * s_cpu.size()) < 1e-5);
    std::vector<float> back(signal.size());
    nk::fft::inverse(s_gpu.data(), back.data(), length, rows, nk::DeviceKind::cuda);
    CHECK(max_relative_error(back.data(), signal.data(), signal.size()) < 1e-5);
  }

  TEST_CASE("silu and its gradient equal x / (1 + exp(-x)) in double, in the ISA copy this process runs") {
    nk::Rng rng(12);
    const int64_t n = 10007;
    std::vector<float> x(n), y(n), dy(n), dx(n);
    for (int64_t j = 0; j < n; ++j) {
      const double u = rng.uniform();
      x[j] = static_cast<float>(j % 3 == 0 ? 400.0 * u - 200.0 : 20.0 * u - 10.0);  // saturated and central
      dy[j] = static_cast<float>(2.0 * rng.uniform() - 1.0);
    }
    x[0] = 0.0f, x[1] = -0.0f, x[2] = 88.5f, x[3] = -88.5f, x[4] = 1e-20f;
    nk::kernels::silu(x.data(), y.data(), n);
    nk::kernels::silu_backward(x.data(), dy.data(), dx.data(), n);
    double worst = 0, worst_grad = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double v = x[j], s = 1.0 / (1.0 + std::exp(-v));
      const double ref = v * s, ref_grad = dy[j] * s * (1.0 + v * (1.0 - s));
      worst = std::max(worst, std::abs(y[j] - ref) / (std::abs(ref) + 1e-30));
      worst_grad = std::max(worst_grad, std::abs(dx[j] - ref_grad) / (std::abs(dy[j]) + 1e-30));
      if (v < -87.0) CHECK(std::abs(y[j]) < 1e-30);  // clamped: e^-87 x, not e^x x
    }
    INFO("isa " << nk::kernels::vector_isa() << ": worst relative error " << worst << ", gradient " << worst_grad);
    CHECK(worst < 2e-6);
    CHECK(worst_grad < 2e-6);
  }

  TEST_CASE("softmax_rows_biased: log-sum-exp and accumulated softmax equal double loops, rows alone or together") {
    nk::Rng rng(31);
    const int64_t rows = 7, V = 1027;  // V not a multiple of any vector width
    std::vector<float> z(rows * V), b(V);
    for (auto& x : z) x = static_cast<float>(30.0 * rng.uniform() - 15.0);
    for (auto& x : b) x = static_cast<float>(4.0 * rng.uniform() - 2.0);
    z[5] = 80.0f, z[V + 3] = -90.0f;  // a dominant logit; one below the clamp
    std::vector<double> lse(rows), acc(V, 0.5), lse_one(1), acc_one(V, 0.5);
    nk::kernels::softmax_rows_biased(z.data(), rows, V, b.data(), lse.data(), acc.data());
    double worst_lse = 0, worst_acc = 0, mass = 0;
    std::vector<double> ref_acc(V, 0.5);
    for (int64_t r = 0; r < rows; ++r) {
      double top = -INFINITY, sum = 0;
      for (int64_t v = 0; v < V; ++v) top = std::max(top, double(z[r * V + v]) + double(b[v]));
      for (int64_t v = 0; v < V; ++v) sum += std::exp(double(z[r * V + v]) + double(b[v]) - top);
      const double ref = top + std::log(sum);
      worst_lse = std::max(worst_lse, std::abs(lse[r] - ref));
      for (int64_t v = 0; v < V; ++v) ref_acc[v] += std::exp(double(z[r * V + v]) + double(b[v]) - ref);
    }
    for (int64_t v = 0; v < V; ++v) worst_acc = std::max(worst_acc, std::abs(acc[v] - ref_acc[v])), mass += acc[v] - 0.5;
    INFO("isa " << std::string(nk::kernels::vector_isa()) << ": lse error " << worst_lse << ", softmax error " << worst_acc);
    CHECK(worst_lse < 1e-5);
    CHECK(worst_acc < 1e-6);
    CHECK(std::abs(mass - rows) < 1e-9);  // each row's softmax sums to 1 (normalised by its double sum)
    nk::kernels::softmax_rows_biased(z.data() + 3 * V, 1, V, b.data(), lse_one.data(), nullptr);
    CHECK(lse_one[0] == lse[3]);  // a row's result does not depend on where it sits
  }

  TEST_CASE("fill_normal: N(0, scale^2) moments and tails, odd lengths, the draw count it documents") {
    const int64_t n = 1000001;
    std::vector<float> z(n + 1, 99.0f);
    nk::Rng rng(3);
    nk::kernels::fill_normal(rng, z.data(), n, 2.0f);
    CHECK(z[n] == 99.0f);
    double mean = 0, var = 0, kurt = 0;
    int64_t beyond3 = 0;
    for (int64_t i = 0; i < n; ++i) mean += z[i] / n;
    for (int64_t i = 0; i < n; ++i) {
      const double d = (z[i] - mean) / 2.0;
      var += d * d / n;
      kurt += d * d * d * d / n;
      beyond3 += std::abs(d) > 3;
    }
    CHECK(std::abs(mean) < 0.01);
    CHECK(std::abs(var - 1) < 0.01);
    CHECK(std::abs(kurt - 3) < 0.05);
    CHECK(std::abs(beyond3 / double(n) - 0.0027) < 0.0004);  // P(|Z| > 3) = 0.0027
    // Against Box-Muller with the C library's log, cos and sin on the same draws.
    nk::Rng again(3), replay(3);
    std::vector<float> mine(1001);
    nk::kernels::fill_normal(again, mine.data(), 1001);
    double worst = 0;
    for (int j = 0; j < 501; ++j) {
      const uint64_t r = replay();
      const double u = ((r >> 40) + 1.0) * 0x1.0p-24, v = ((r >> 8) & 0xffffff) * 0x1.0p-24;
      const double radius = std::sqrt(-2 * std::log(u));
      worst = std::max(worst, std::abs(mine[2 * j] - radius * std::cos(2 * M_PI * v)));
      if (2 * j + 1 < 1001) worst = std::max(worst, std::abs(mine[2 * j + 1] - radius * std::sin(2 * M_PI * v)));
    }
    CHECK(worst < 5e-6);
    nk::Rng a(4), b(4);
    std::vector<float> buffer(7);
    nk::kernels::fill_normal(a, buffer.data(), 7);
    for (int i = 0; i < 4; ++i) b();
    CHECK(a() == b());
  }
}
