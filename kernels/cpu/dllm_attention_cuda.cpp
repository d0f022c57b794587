// dllm_attention_cuda.cpp - Step-dLLM's attention kernels on the GPU, through the CUDA module
// (kernels/cuda/attention/attention.cu): the fused block-sparse kernel, and dense
// attention through cuBLAS as the GPU baseline.
#include <stdexcept>

#include "nk/kernels/dllm.hpp"
#include "nk/kernels/cuda_call.hpp"

namespace nk::dllm {

namespace {

void check_gpu_shape(const Qkv& x) {
  if (x.queries() != x.length) throw std::invalid_argument("the CUDA kernel needs as many query rows as keys");
}
}  // namespace

GpuTiming attention_cuda(const Qkv& x, const BlockMask* mask, int64_t block, float scale, float* out, int repeats) {
  check_gpu_shape(x);
  const nk_cuda_attention& api = nk::kernels::cuda_family<nk_cuda_attention>("block-sparse attention");
  nk_cuda_timing t{};
  nk::kernels::cuda_call("block-sparse attention", api.block_sparse_attention_f32, x.q.data(), x.k_data(), x.v_data(),
                         x.kv_of.data(), mask ? mask->keep.data() : nullptr, static_cast<long>(x.heads),
                         static_cast<long>(x.kv_heads), static_cast<long>(x.length), static_cast<long>(x.dims),
                         static_cast<long>(block), scale, repeats, out, &t);
  return GpuTiming::from(t);
}

GpuTiming attention_cublas(const Qkv& x, float scale, float* out, int repeats) {
  check_gpu_shape(x);
  const nk_cuda_attention& api = nk::kernels::cuda_family<nk_cuda_attention>("dense attention (cuBLAS)");
  nk_cuda_timing t{};
  nk::kernels::cuda_call("dense attention (cuBLAS)", api.dense_attention_cublas_f32, x.q.data(), x.k_data(),
                         x.v_data(), x.kv_of.data(), static_cast<long>(x.heads), static_cast<long>(x.kv_heads),
                         static_cast<long>(x.length), static_cast<long>(x.dims), scale, repeats, out, &t);
  return GpuTiming::from(t);
}

}  // namespace nk::dllm
