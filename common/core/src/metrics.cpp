// metrics.cpp - PSNR and SSIM (see metrics.hpp).
#include "nk/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nk/error.hpp"

namespace nk {
namespace {

void require_same_shape(const Image& a, const Image& b, const char* metric) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.width <= 0 || a.height <= 0)
    throw Error(Exit::input, std::string(metric) + ": images differ in shape (" + std::to_string(a.height) + "x" +
                                 std::to_string(a.width) + "x" + std::to_string(a.channels) + " vs " +
                                 std::to_string(b.height) + "x" + std::to_string(b.width) + "x" +
                                 std::to_string(b.channels) + ") or are empty");
}

/// Separable Gaussian blur with a window clipped to the image ("valid" positions only).
std::vector<double> valid_filter(const std::vector<double>& x, int h, int w, const std::vector<double>& g, int& oh,
                                 int& ow) {
  const int k = static_cast<int>(g.size());
  oh = h - k + 1;
  ow = w - k + 1;
  std::vector<double> rows(static_cast<size_t>(h) * ow), out(static_cast<size_t>(oh) * ow);
  for (int y = 0; y < h; ++y)
    for (int x0 = 0; x0 < ow; ++x0) {
      double s = 0;
      for (int t = 0; t < k; ++t) s += g[t] * x[static_cast<size_t>(y) * w + x0 + t];
      rows[static_cast<size_t>(y) * ow + x0] = s;
    }
  for (int y0 = 0; y0 < oh; ++y0)
    for (int x0 = 0; x0 < ow; ++x0) {
      double s = 0;
      for (int t = 0; t < k; ++t) s += g[t] * rows[static_cast<size_t>(y0 + t) * ow + x0];
      out[static_cast<size_t>(y0) * ow + x0] = s;
    }
  return out;
}

}  // namespace

double psnr(const Image& reference, const Image& test, double peak) {
  require_same_shape(reference, test, "psnr");
  double sse = 0;
  for (size_t i = 0; i < reference.pixels.size(); ++i) {
    const double d = static_cast<double>(reference.pixels[i]) - test.pixels[i];
    sse += d * d;
  }
  const double mse = sse / static_cast<double>(reference.pixels.size());
  if (mse == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(peak * peak / mse);
}

double ssim(const Image& reference, const Image& test, double peak) {
  require_same_shape(reference, test, "ssim");
  const int h = reference.height, w = reference.width;
  const int k = std::min({11, h, w});
  const double sigma = 1.5;
  std::vector<double> g(k);
  double gs = 0;
  for (int t = 0; t < k; ++t) {
    const double u = t - (k - 1) / 2.0;
    g[t] = std::exp(-u * u / (2 * sigma * sigma));
    gs += g[t];
  }
  for (double& v : g) v /= gs;
  const double c1 = (0.01 * peak) * (0.01 * peak), c2 = (0.03 * peak) * (0.03 * peak);
  double total = 0;
  const size_t n = static_cast<size_t>(h) * w;
  for (int c = 0; c < reference.channels; ++c) {
    std::vector<double> a(n), b(n), aa(n), bb(n), ab(n);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const size_t i = static_cast<size_t>(y) * w + x;
        a[i] = reference.at(y, x, c);
        b[i] = test.at(y, x, c);
        aa[i] = a[i] * a[i];
        bb[i] = b[i] * b[i];
        ab[i] = a[i] * b[i];
      }
    int oh = 0, ow = 0;
    const auto ma = valid_filter(a, h, w, g, oh, ow), mb = valid_filter(b, h, w, g, oh, ow);
    const auto saa = valid_filter(aa, h, w, g, oh, ow), sbb = valid_filter(bb, h, w, g, oh, ow),
               sab = valid_filter(ab, h, w, g, oh, ow);
    double sum = 0;
    for (size_t i = 0; i < ma.size(); ++i) {
      const double va = saa[i] - ma[i] * ma[i], vb = sbb[i] - mb[i] * mb[i], cab = sab[i] - ma[i] * mb[i];
      sum += ((2 * ma[i] * mb[i] + c1) * (2 * cab + c2)) /
             ((ma[i] * ma[i] + mb[i] * mb[i] + c1) * (va + vb + c2));
    }
    total += sum / static_cast<double>(ma.size());
  }
  return total / reference.channels;
}

}  // namespace nk
