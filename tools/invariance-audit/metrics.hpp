// metrics.hpp - realism and diversity of a set of samples against real
// images, in the features of an evaluator network (never an audited one):
// the Frechet distance of Gaussians fitted to both sets (Heusel et al. 2017)
// and density and coverage (Naeem et al. 2020, k nearest neighbours of the
// real set); and the prior's bits per dimension of pixel images.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/nn/guidance.hpp"

namespace ia {

/// ||mu_a - mu_b||^2 + tr(C_a + C_b - 2 (C_a^1/2 C_b C_a^1/2)^1/2) of the
/// rows of a [na, F] and b [nb, F] (na, nb >= 2).
double frechet_distance(const std::vector<float>& a, int64_t na, const std::vector<float>& b, int64_t nb, int64_t F);

struct DensityCoverage {
  double density = 0, coverage = 0;
};
/// real [nr, F], fake [nf, F]; radii: each real point's distance to its
/// k-th nearest real neighbour (itself excluded).
DensityCoverage density_coverage(const std::vector<float>& real, int64_t nr, const std::vector<float>& fake, int64_t nf,
                                 int64_t F, int64_t k = 5);

struct BitsPerDim {
  std::vector<double> bits;  ///< per image
  int64_t forwards = 0, backwards = 0;
};
/// -log2 p(x) / D + 7 of pixel images, dequantised to (level + u) / 256, [n, H, W, C] under the prior (x = 2p - 1,
/// the 8-bit scale: 8 bits per dimension minus the 1 bit of the map's
/// Jacobian), by the probability-flow ODE ('steps' Heun steps) with
/// 'probes' Hutchinson vectors; batches of 'batch' images (at most the
/// field's capacity).
BitsPerDim bits_per_dim(nk::nn::FlowField& prior, nk::nn::Shape image, const float* pixels, int64_t n, int64_t steps,
                        int64_t probes, int64_t batch, uint64_t seed);

}  // namespace ia
