// activation.hpp - the teacher's activations, centred with unit variance
// under N(0, 1), and the kernel K(q) = E sigma(z) sigma(z') at correlation q.
#pragma once
#include <string>

namespace tl {

/// In this order the codes 0..4 of the CUDA committee family (nk_cuda_committee).
enum class Act { tanh, relu_centered, he2, he3, linear };

/// "tanh", "relu-centered", "he2", "he3", "linear" -> Act; throws nk::Error
/// (exit 3, naming 'file' and 'where') for anything else.
Act parse_activation(const std::string& name, const std::string& file = "", const std::string& where = "");
std::string activation_name(Act a);

/// sigma and its derivative, normalised: E sigma(Z) = 0, E sigma(Z)^2 = 1.
class Activation {
 public:
  explicit Activation(Act kind);
  Act kind() const { return kind_; }
  double operator()(double z) const;
  double derivative(double z) const;
  /// K(q) = sum_l mu_l^2 q^l / l!  (q in [0, 1]; K(1) = 1).
  double kernel(double q) const;
  /// K'(q) = E sigma'(z) sigma'(z') at correlation q (Price's theorem).
  double kernel_derivative(double q) const;
  double mu1() const { return mu1_; }  ///< E sigma(Z) Z
  double mu2() const { return mu2_; }  ///< E sigma(Z) (Z^2 - 1)
  double scale() const { return scale_; }  ///< tanh and relu's normalising factor (1 otherwise)

 private:
  Act kind_;
  double scale_ = 1, mu1_ = 0, mu2_ = 0;
};

}  // namespace tl
