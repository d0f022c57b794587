// dllm.hpp - block-sparse bidirectional attention for diffusion LLMs
// (Step-dLLM): the fused kernel over a block mask, on the CPU (AVX2+FMA or
// the baseline ISA, picked at run time) and on the GPU through the CUDA
// module (kernels/cuda/attention). Shared by dllm-sparse and by nk::lm's
// diffusion sampler (--sparse-policy); the mask planner is dllm_plan.hpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/kernels/cuda_call.hpp"

namespace nk::dllm {

inline constexpr int64_t kMaxDims = 256;

/// One step of one layer: q [H,L,d], k and v [Hkv,L,d]; query head h reads KV head kv_of[h].
struct Qkv {
  int64_t heads = 0, kv_heads = 0, length = 0, dims = 0;
  std::vector<float> q, k, v;
  std::vector<int32_t> kv_of;
  int64_t q_length = 0;  ///< query rows per head when it differs from the key length (0: the same)
  const float* k_shared = nullptr;  ///< K and V borrowed from another Qkv instead of k, v
  const float* v_shared = nullptr;
  int64_t queries() const { return q_length ? q_length : length; }
  const float* k_data() const { return k_shared ? k_shared : k.data(); }
  const float* v_data() const { return v_shared ? v_shared : v.data(); }
  const float* q_row(int64_t h, int64_t i) const { return q.data() + (h * queries() + i) * dims; }
  const float* k_row(int64_t g, int64_t i) const { return k_data() + (g * length + i) * dims; }
  const float* v_row(int64_t g, int64_t i) const { return v_data() + (g * length + i) * dims; }
};

/// keep[(h * nq + i) * nk + j]: query block i of head h attends to key block j.
struct BlockMask {
  int64_t heads = 0, blocks = 0, block = 64;  ///< square grid: nq = nk = blocks
  std::vector<uint8_t> keep;
  bool at(int64_t h, int64_t i, int64_t j) const { return keep[static_cast<size_t>((h * blocks + i) * blocks + j)] != 0; }
  uint8_t& at(int64_t h, int64_t i, int64_t j) { return keep[static_cast<size_t>((h * blocks + i) * blocks + j)]; }
  int64_t kept() const;
  double density() const { return static_cast<double>(kept()) / static_cast<double>(keep.size()); }
  static BlockMask full(int64_t heads, int64_t blocks, int64_t block);
};

inline int64_t block_count(int64_t length, int64_t block) { return (length + block - 1) / block; }

// --- kernels ---------------------------------------------------------------
/// Fused block-sparse attention (online softmax over the kept key blocks of each
/// query block; scores never materialised beyond one block x block tile).
/// mask == nullptr: dense. block_mass, when given, receives [H, L, nk]: the
/// softmax mass of each key block for each query row (dense runs only).
/// Returns the ISA used ("avx2+fma" or "generic").
std::string attention(const Qkv& x, const BlockMask* mask, int64_t block, float scale, float* out,
                      float* block_mass = nullptr);
/// Tests: run the baseline-ISA build of the kernel even where AVX2+FMA exist.
void force_generic_isa(bool on);
using nk::kernels::GpuTiming;
/// attention() on the GPU (fused block-sparse kernel; dense when mask is null).
GpuTiming attention_cuda(const Qkv& x, const BlockMask* mask, int64_t block, float scale, float* out, int repeats = 1);
/// Dense attention on the GPU through cuBLAS (scores materialised per head).
GpuTiming attention_cublas(const Qkv& x, float scale, float* out, int repeats = 1);
/// Unfused dense attention: the whole L x L score matrix of a head, softmax, then P V.
void attention_unfused(const Qkv& x, float scale, float* out);
/// Masked softmax attention in float64, row by row (the test reference).
void attention_reference(const Qkv& x, const BlockMask* mask, int64_t block, double scale, double* out);

}  // namespace nk::dllm
