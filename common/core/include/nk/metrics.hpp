// metrics.hpp - image quality metrics shared by the tools that reconstruct
// images (tnqe-encode decodes them from quantum states, sbr-render paints them).
#pragma once
#include "nk/image.hpp"

namespace nk {

/// Peak signal-to-noise ratio in dB for values in [0, peak]; +inf when equal.
/// Both images must have the same size and channel count (exit 3 otherwise).
double psnr(const Image& reference, const Image& test, double peak = 1.0);

/// Structural similarity (Wang, Bovik, Sheikh, Simoncelli 2004): 11x11
/// Gaussian window of sigma 1.5, K1 = 0.01, K2 = 0.03, dynamic range 'peak';
/// the mean over valid window positions, averaged over channels. Images
/// smaller than the window use a window clipped to the image.
double ssim(const Image& reference, const Image& test, double peak = 1.0);

}  // namespace nk
