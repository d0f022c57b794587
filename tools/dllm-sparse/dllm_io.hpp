// dllm_io.hpp - file access shared by the verbs.
#pragma once
#include <string>
#include <vector>

#include "dllm-sparse/dllm.hpp"
#include "nk/h5.hpp"

namespace dllm {

/// Reads prefix/q, prefix/k, prefix/v (and prefix/head_map) with shape, d, L and NaN checks.
Qkv read_qkv(const nk::h5::File& file, const std::string& prefix);

/// One denoising step of one layer: layer "" (single-layer files) or "/layers/LL".
struct StepRef {
  std::string layer, step, group;
};
/// Every (layer, step) in sorted order.
std::vector<StepRef> trajectory_steps(const nk::h5::File& file);

}  // namespace dllm
