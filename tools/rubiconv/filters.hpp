// filters.hpp - long-convolution filters of the models RubiConv serves.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/rng.hpp"

namespace rubiconv {

/// Hyena-style implicit filters: a sum of four random sinusoids under an
/// exponential window that decays to 1% between 0.3 and 1.5 filter lengths,
/// each channel scaled to unit L1 norm. [H, Lk], row-major.
std::vector<double> hyena_filters(int64_t channels, int64_t filter_length, const nk::Rng& rng);

/// Spectral (STU) filters: eigenvectors phi_j of the Hankel matrix
/// Z_ab = 2 / ((a+b)^3 - (a+b)), a, b = 1..Lk, scaled by sigma_j^(1/4), for the
/// min(24, H) largest eigenvalues; channel h takes filter h mod K. [H, Lk].
std::vector<double> stu_filters(int64_t channels, int64_t filter_length, const nk::Rng& rng);

/// Gaussian taps with variance 1 / Lk. [H, Lk].
std::vector<double> random_filters(int64_t channels, int64_t filter_length, const nk::Rng& rng);

/// The top 'count' eigenpairs of the STU Hankel matrix of size n, largest
/// first: by a dense symmetric eigensolver when dense, else by Lanczos with
/// full reorthogonalisation and an FFT Hankel product (O(n log n) per step).
/// Each vector is normalised, its largest-magnitude entry positive.
struct Eigenpairs {
  std::vector<double> values;                ///< [count]
  std::vector<std::vector<double>> vectors;  ///< [count][n]
};
Eigenpairs stu_eigenpairs(int64_t n, int64_t count, bool dense, const nk::Rng& rng);

}  // namespace rubiconv
