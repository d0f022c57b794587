// activation.cpp - closed forms where they exist (linear, he2, he3 and the
// ReLU arc-cosine kernel), Gauss-Hermite quadrature for tanh.
#include "teacher-limits/activation.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "nk/error.hpp"
#include "teacher-limits/quadrature.hpp"

namespace tl {
namespace {

const double kPi = std::numbers::pi;
const double kReluMean = 1.0 / std::sqrt(2 * std::numbers::pi);
const double kReluVar = 0.5 - 1.0 / (2 * std::numbers::pi);

const Quadrature& rule() {
  static const Quadrature q = gauss_hermite(64);
  return q;
}

// E_xi [ (E_u g(sqrt(q) xi + sqrt(1-q) u))^2 ] by a product rule.
template <class G>
double gaussian_kernel(double q, G g) {
  q = std::clamp(q, 0.0, 1.0);
  const Quadrature& r = rule();
  const double a = std::sqrt(q), b = std::sqrt(1 - q);
  double total = 0;
  for (int i = 0; i < r.size(); ++i) {
    double inner = 0;
    for (int j = 0; j < r.size(); ++j) inner += r.w[j] * g(a * r.x[i] + b * r.x[j]);
    total += r.w[i] * inner * inner;
  }
  return total;
}

}  // namespace

Act parse_activation(const std::string& name, const std::string& file, const std::string& where) {
  if (name == "tanh") return Act::tanh;
  if (name == "relu-centered") return Act::relu_centered;
  if (name == "he2") return Act::he2;
  if (name == "he3") return Act::he3;
  if (name == "linear") return Act::linear;
  const std::string message = "unknown activation '" + name + "' (tanh, relu-centered, he2, he3, linear)";
  if (file.empty()) throw nk::usage_error(message);
  throw nk::input_error(file, where, message);
}

std::string activation_name(Act a) {
  switch (a) {
    case Act::tanh: return "tanh";
    case Act::relu_centered: return "relu-centered";
    case Act::he2: return "he2";
    case Act::he3: return "he3";
    case Act::linear: return "linear";
  }
  return "?";
}

Activation::Activation(Act kind) : kind_(kind) {
  if (kind_ == Act::tanh) {
    const Quadrature& r = rule();
    double second = 0, slope = 0;
    for (int i = 0; i < r.size(); ++i) {
      const double t = std::tanh(r.x[i]);
      second += r.w[i] * t * t;
      slope += r.w[i] * (1 - t * t);
    }
    scale_ = 1 / std::sqrt(second);
    mu1_ = slope * scale_;
    mu2_ = 0;
  } else if (kind_ == Act::relu_centered) {
    scale_ = 1 / std::sqrt(kReluVar);
    mu1_ = 0.5 * scale_;                          // E relu'(Z)
    mu2_ = scale_ / std::sqrt(2 * kPi);           // E relu''(Z) = phi(0)
  } else if (kind_ == Act::he2) {
    mu2_ = std::sqrt(2.0);
  } else if (kind_ == Act::linear) {
    mu1_ = 1;
  }
}

double Activation::operator()(double z) const {
  switch (kind_) {
    case Act::tanh: return scale_ * std::tanh(z);
    case Act::relu_centered: return scale_ * (std::max(z, 0.0) - kReluMean);
    case Act::he2: return (z * z - 1) / std::sqrt(2.0);
    case Act::he3: return (z * z * z - 3 * z) / std::sqrt(6.0);
    case Act::linear: return z;
  }
  return 0;
}

double Activation::derivative(double z) const {
  switch (kind_) {
    case Act::tanh: {
      const double t = std::tanh(z);
      return scale_ * (1 - t * t);
    }
    case Act::relu_centered: return z > 0 ? scale_ : 0.0;
    case Act::he2: return 2 * z / std::sqrt(2.0);
    case Act::he3: return (3 * z * z - 3) / std::sqrt(6.0);
    case Act::linear: return 1;
  }
  return 0;
}

double Activation::kernel(double q) const {
  q = std::clamp(q, 0.0, 1.0);
  switch (kind_) {
    case Act::linear: return q;
    case Act::he2: return q * q;
    case Act::he3: return q * q * q;
    case Act::relu_centered: {
      // E relu(z) relu(z') = (sqrt(1-q^2) + q (pi - arccos q)) / (2 pi).
      const double raw = (std::sqrt(std::max(0.0, 1 - q * q)) + q * (kPi - std::acos(q))) / (2 * kPi);
      return (raw - kReluMean * kReluMean) / kReluVar;
    }
    case Act::tanh: return gaussian_kernel(q, [this](double z) { return (*this)(z); });
  }
  return 0;
}

double Activation::kernel_derivative(double q) const {
  q = std::clamp(q, 0.0, 1.0);
  switch (kind_) {
    case Act::linear: return 1;
    case Act::he2: return 2 * q;
    case Act::he3: return 3 * q * q;
    case Act::relu_centered: return (kPi - std::acos(q)) / (2 * kPi) / kReluVar;
    case Act::tanh: return gaussian_kernel(q, [this](double z) { return derivative(z); });
  }
  return 0;
}

}  // namespace tl
