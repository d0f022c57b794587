// attention.cu - block-sparse bidirectional attention (dllm-sparse) on the GPU,
// and the cuBLAS dense baseline it is measured against. CPU twin:
// tools/dllm-sparse/kernel.cpp (the comparison test is in tests/unit/dllm-sparse.cpp).
//
// Fused kernel: one CTA of 256 threads per (head, 64 query rows). The query
// tile stays in shared memory, pre-scaled by scale * log2(e); for every 64-key
// tile that holds a kept block the K and V tiles are loaded, each thread
// computes a 4 x 4 patch of scores (rows 4*tr.., keys tc + 16 j), the online
// softmax updates the running row maxima and sums (rows are reduced across
// the 16 lanes that share them), P goes to shared memory, and each thread
// adds P V into its 4 rows x D/16 output columns held in registers. Scores
// never leave the chip. Mask blocks smaller than 64 (16, 32, 48) are applied
// per element inside the tile.
#include <cublas_v2.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "../common.cuh"

namespace nk::cuda {

namespace {

constexpr int kTile = 64;
constexpr int kThreads = 256;

struct AttentionArgs {
  const float* q;
  const float* k;
  const float* v;
  const int* kv_of;
  const unsigned char* keep;  // null: dense
  float* out;
  int length, dims, block, blocks;
  float qscale;  // scale * log2(e)
};

template <int D>
constexpr int smem_floats() {
  return 3 * kTile * (D + 4) + kTile * (kTile + 4);
}

__device__ __forceinline__ bool kept(const AttentionArgs& a, int h, int qb, int kb) {
  return a.keep[(static_cast<long>(h) * a.blocks + qb) * a.blocks + kb] != 0;
}

/// Loads rows [row0, row0 + 64) of a [L, d] matrix into tile[64][D + 4], zero padded.
template <int D>
__device__ __forceinline__ void load_tile(const float* __restrict__ src, int row0, int length, int dims, float* tile,
                                          float factor) {
  constexpr int stride = D + 4;
  if ((dims & 3) == 0) {
    const int quads = D / 4;
    for (int e = threadIdx.x; e < kTile * quads; e += kThreads) {
      const int r = e / quads, c = (e % quads) * 4;
      float4 value = make_float4(0.f, 0.f, 0.f, 0.f);
      if (row0 + r < length && c < dims) {
        value = __ldg(reinterpret_cast<const float4*>(src + static_cast<long>(row0 + r) * dims + c));
        value.x *= factor, value.y *= factor, value.z *= factor, value.w *= factor;
      }
      *reinterpret_cast<float4*>(tile + r * stride + c) = value;
    }
  } else {
    for (int e = threadIdx.x; e < kTile * D; e += kThreads) {
      const int r = e / D, c = e % D;
      float value = 0.f;
      if (row0 + r < length && c < dims) value = __ldg(src + static_cast<long>(row0 + r) * dims + c) * factor;
      tile[r * stride + c] = value;
    }
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads) flash_block_sparse(AttentionArgs a) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  constexpr int stride = D + 4, pstride = kTile + 4, cols = D / 64;  // float4 column chunks per thread
  float* Qs = smem;
  float* Ks = Qs + kTile * stride;
  float* Vs = Ks + kTile * stride;
  float* Ps = Vs + kTile * stride;
  const int h = blockIdx.y, q0 = blockIdx.x * kTile;
  const int g = a.kv_of[h];
  const int tid = threadIdx.x, tr = tid >> 4, tc = tid & 15;
  const float* qh = a.q + static_cast<long>(h) * a.length * a.dims;
  const float* kh = a.k + static_cast<long>(g) * a.length * a.dims;
  const float* vh = a.v + static_cast<long>(g) * a.length * a.dims;
  load_tile<D>(qh, q0, a.length, a.dims, Qs, a.qscale);

  float m[4], l[4], acc[4][cols][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY, l[i] = 0.f;
#pragma unroll
    for (int c = 0; c < cols; ++c) acc[i][c][0] = acc[i][c][1] = acc[i][c][2] = acc[i][c][3] = 0.f;
  }
  const bool whole_blocks = a.block == kTile;
  const int qb_first = q0 / a.block, qb_last = min(q0 + kTile - 1, a.length - 1) / a.block;
  const int tiles = (a.length + kTile - 1) / kTile;
  for (int t = 0; t < tiles; ++t) {
    const int k0 = t * kTile;
    if (a.keep) {  // the same decision in every thread: skip tiles with no kept block
      bool any = false;
      const int kb_first = k0 / a.block, kb_last = min(k0 + kTile - 1, a.length - 1) / a.block;
      for (int qb = qb_first; qb <= qb_last && !any; ++qb)
        for (int kb = kb_first; kb <= kb_last && !any; ++kb) any = kept(a, h, qb, kb);
      if (!any) continue;
    }
    __syncthreads();  // the previous tile's K, V and P are no longer read
    load_tile<D>(kh, k0, a.length, a.dims, Ks, 1.f);
    load_tile<D>(vh, k0, a.length, a.dims, Vs, 1.f);
    __syncthreads();

    float s[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll 4
    for (int c = 0; c < D; c += 4) {
      float4 qv[4], kv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) qv[i] = *reinterpret_cast<const float4*>(Qs + (tr * 4 + i) * stride + c);
#pragma unroll
      for (int j = 0; j < 4; ++j) kv[j] = *reinterpret_cast<const float4*>(Ks + (tc + 16 * j) * stride + c);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          s[i][j] += qv[i].x * kv[j].x + qv[i].y * kv[j].y + qv[i].z * kv[j].z + qv[i].w * kv[j].w;
    }
    // Mask: keys past L, and (blocks < 64) elements of blocks that are not kept.
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int key = k0 + tc + 16 * j;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = q0 + tr * 4 + i;
        bool ok = key < a.length;
        if (ok && a.keep && !whole_blocks) ok = row < a.length && kept(a, h, row / a.block, key / a.block);
        if (!ok) s[i][j] = -INFINITY;
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float tile_max = fmaxf(fmaxf(s[i][0], s[i][1]), fmaxf(s[i][2], s[i][3]));
#pragma unroll
      for (int o = 1; o < 16; o <<= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));
      const float m_new = fmaxf(m[i], tile_max);
      float alpha = 1.f, sum = 0.f;
      if (m_new == -INFINITY) {  // nothing kept in this row yet
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = 0.f;
      } else {
        alpha = exp2f(m[i] - m_new);  // m = -inf: 0
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          s[i][j] = exp2f(s[i][j] - m_new);
          sum += s[i][j];
        }
      }
#pragma unroll
      for (int o = 1; o < 16; o <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      l[i] = l[i] * alpha + sum;
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < cols; ++c) {
        acc[i][c][0] *= alpha, acc[i][c][1] *= alpha, acc[i][c][2] *= alpha, acc[i][c][3] *= alpha;
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) Ps[(tr * 4 + i) * pstride + tc + 16 * j] = s[i][j];
    }
    __syncthreads();
    // O += P V: thread (tr, tc) owns rows 4 tr + i and columns 4 tc + 64 c + (0..3).
    // This tile's P V starts from zero and joins the running sum once (not key
    // by key onto it), as the CPU kernel does: each product then rounds
    // against the tile's partial sum, not the whole row's.
    float part[4][cols][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int c = 0; c < cols; ++c) part[i][c][0] = part[i][c][1] = part[i][c][2] = part[i][c][3] = 0.f;
#pragma unroll 2
    for (int key = 0; key < kTile; key += 4) {
      float4 p[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) p[i] = *reinterpret_cast<const float4*>(Ps + (tr * 4 + i) * pstride + key);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
        for (int c = 0; c < cols; ++c) {
          const float4 vv = *reinterpret_cast<const float4*>(Vs + (key + kk) * stride + tc * 4 + 64 * c);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float pk = kk == 0 ? p[i].x : kk == 1 ? p[i].y : kk == 2 ? p[i].z : p[i].w;
            part[i][c][0] += pk * vv.x, part[i][c][1] += pk * vv.y, part[i][c][2] += pk * vv.z, part[i][c][3] += pk * vv.w;
          }
        }
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int c = 0; c < cols; ++c) {
        acc[i][c][0] += part[i][c][0], acc[i][c][1] += part[i][c][1];
        acc[i][c][2] += part[i][c][2], acc[i][c][3] += part[i][c][3];
      }
  }
  float* oh = a.out + static_cast<long>(h) * a.length * a.dims;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = q0 + tr * 4 + i;
    if (row >= a.length) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
#pragma unroll
    for (int c = 0; c < cols; ++c) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = tc * 4 + 64 * c + e;
        if (col < a.dims) oh[static_cast<long>(row) * a.dims + col] = acc[i][c][e] * inv;
      }
    }
  }
}

template <int D>
cudaError_t launch_flash(const AttentionArgs& a, int heads, cudaStream_t stream) {
  const size_t bytes = sizeof(float) * smem_floats<D>();
  cudaError_t status = cudaFuncSetAttribute(flash_block_sparse<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(bytes));
  if (status != cudaSuccess) return status;
  const dim3 grid(static_cast<unsigned>((a.length + kTile - 1) / kTile), static_cast<unsigned>(heads));
  flash_block_sparse<D><<<grid, kThreads, bytes, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t run_flash(const AttentionArgs& a, int heads, cudaStream_t stream) {
  if (a.dims <= 64) return launch_flash<64>(a, heads, stream);
  if (a.dims <= 128) return launch_flash<128>(a, heads, stream);
  return launch_flash<256>(a, heads, stream);
}

/// Row softmax of a [rows, n] matrix in place: one CTA per row.
__global__ void softmax_rows(float* s, long n) {
  float* row = s + static_cast<long>(blockIdx.x) * n;
  __shared__ float shared[32];
  float local = -INFINITY;
  for (long j = threadIdx.x; j < n; j += blockDim.x) local = fmaxf(local, row[j]);
  for (int o = 16; o > 0; o >>= 1) local = fmaxf(local, __shfl_xor_sync(0xffffffffu, local, o));
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = local;
  __syncthreads();
  float max_value = -INFINITY;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) max_value = fmaxf(max_value, shared[w]);
  __syncthreads();
  float sum = 0.f;
  for (long j = threadIdx.x; j < n; j += blockDim.x) {
    const float e = expf(row[j] - max_value);
    row[j] = e;
    sum += e;
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = sum;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total += shared[w];
  const float inv = 1.f / total;
  for (long j = threadIdx.x; j < n; j += blockDim.x) row[j] *= inv;
}

}  // namespace

int block_sparse_attention_f32(const float* q, const float* k, const float* v, const int* kv_of,
                               const unsigned char* keep, long heads, long kv_heads, long length, long dims,
                               long block, float scale, int repeats, float* out, nk_cuda_timing* timing, char* error,
                               size_t error_size) {
  if (dims < 1 || dims > 256 || block < 1 || block > kTile || length < 1 || heads < 1 || kv_heads < 1 ||
      length > (1L << 30)) {
    set_error(error, error_size, "block_sparse_attention: unsupported shape (1 <= d <= 256, block <= 64)");
    return -1;
  }
  Timer timer;
  nk_cuda_timing local{};
  const size_t q_bytes = sizeof(float) * heads * length * dims, kv_bytes = sizeof(float) * kv_heads * length * dims;
  const long blocks = (length + block - 1) / block;
  const size_t mask_bytes = keep ? static_cast<size_t>(heads * blocks * blocks) : 0;
  DeviceBuffer d_q, d_k, d_v, d_o, d_map, d_keep;
  timer.start();
  NK_CUDA_TRY(upload(d_q, q, q_bytes));
  NK_CUDA_TRY(upload(d_k, k, kv_bytes));
  NK_CUDA_TRY(upload(d_v, v, kv_bytes));
  NK_CUDA_TRY(d_o.allocate(q_bytes));
  NK_CUDA_TRY(upload(d_map, kv_of, sizeof(int) * heads));
  NK_CUDA_TRY(upload(d_keep, keep, mask_bytes));
  local.upload_ms = timer.stop();
  AttentionArgs a{};
  a.q = static_cast<const float*>(d_q.get());
  a.k = static_cast<const float*>(d_k.get());
  a.v = static_cast<const float*>(d_v.get());
  a.kv_of = static_cast<const int*>(d_map.get());
  a.keep = keep ? static_cast<const unsigned char*>(d_keep.get()) : nullptr;
  a.out = static_cast<float*>(d_o.get());
  a.length = static_cast<int>(length), a.dims = static_cast<int>(dims), a.block = static_cast<int>(block);
  a.blocks = static_cast<int>(blocks);
  a.qscale = scale * 1.4426950408889634f;
  double best = INFINITY;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    timer.start();
    NK_CUDA_TRY(run_flash(a, static_cast<int>(heads), nullptr));
    best = std::min<double>(best, timer.stop());
    NK_CUDA_TRY(cudaGetLastError());
  }
  local.compute_ms = best;
  timer.start();
  NK_CUDA_TRY(cudaMemcpy(out, d_o.get(), q_bytes, cudaMemcpyDeviceToHost));
  local.download_ms = timer.stop();
  if (timing) *timing = local;
  return 0;
}

int dense_attention_cublas_f32(const float* q, const float* k, const float* v, const int* kv_of, long heads,
                               long kv_heads, long length, long dims, float scale, int repeats, float* out,
                               nk_cuda_timing* timing, char* error, size_t error_size) {
  if (dims < 1 || length < 1 || heads < 1 || kv_heads < 1 || length > (1L << 30)) {
    set_error(error, error_size, "dense_attention_cublas: unsupported shape");
    return -1;
  }
  Timer timer;
  nk_cuda_timing local{};
  const size_t q_bytes = sizeof(float) * heads * length * dims, kv_bytes = sizeof(float) * kv_heads * length * dims;
  DeviceBuffer d_q, d_k, d_v, d_o, d_s;
  timer.start();
  NK_CUDA_TRY(upload(d_q, q, q_bytes));
  NK_CUDA_TRY(upload(d_k, k, kv_bytes));
  NK_CUDA_TRY(upload(d_v, v, kv_bytes));
  NK_CUDA_TRY(d_o.allocate(q_bytes));
  local.upload_ms = timer.stop();
  // Scores of as many heads at once as fit in 4 GiB (at least one).
  const size_t head_scores = sizeof(float) * static_cast<size_t>(length) * static_cast<size_t>(length);
  const long group = std::clamp<long>(static_cast<long>((size_t{4} << 30) / head_scores), 1, heads);
  timer.start();
  NK_CUDA_TRY(d_s.allocate(head_scores * group));
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    set_error(error, error_size, "cublasCreate failed");
    return -1;
  }
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);  // plain FP32, no TF32: the same arithmetic as ours
  local.setup_ms = timer.stop();
  const int n = static_cast<int>(length), d = static_cast<int>(dims);
  const float zero = 0.f, one = 1.f;
  float* s = static_cast<float*>(d_s.get());
  double best = INFINITY;
  bool failed = false;
  for (int r = 0; r < std::max(1, repeats) && !failed; ++r) {
    timer.start();
    for (long h0 = 0; h0 < heads && !failed; h0 += group) {
      const long count = std::min(group, heads - h0);
      for (long i = 0; i < count && !failed; ++i) {
        const long h = h0 + i;
        const float* qh = static_cast<const float*>(d_q.get()) + h * length * dims;
        const float* kh = static_cast<const float*>(d_k.get()) + static_cast<long>(kv_of[h]) * length * dims;
        // Row-major S = scale Q K^T is column-major S^T = K Q^T.
        failed |= cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, &scale, kh, d, qh, d, &zero,
                              s + i * length * length, n) != CUBLAS_STATUS_SUCCESS;
      }
      softmax_rows<<<static_cast<unsigned>(count * length), 256>>>(s, length);
      for (long i = 0; i < count && !failed; ++i) {
        const long h = h0 + i;
        const float* vh = static_cast<const float*>(d_v.get()) + static_cast<long>(kv_of[h]) * length * dims;
        float* oh = static_cast<float*>(d_o.get()) + h * length * dims;
        // Row-major O = P V is column-major O^T = V^T P^T.
        failed |= cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, d, n, n, &one, vh, d, s + i * length * length, n,
                              &zero, oh, d) != CUBLAS_STATUS_SUCCESS;
      }
    }
    best = std::min<double>(best, timer.stop());
  }
  cublasDestroy(handle);
  if (failed) {
    set_error(error, error_size, "cublasSgemm failed");
    return -1;
  }
  NK_CUDA_TRY(cudaGetLastError());
  local.compute_ms = best;
  timer.start();
  NK_CUDA_TRY(cudaMemcpy(out, d_o.get(), q_bytes, cudaMemcpyDeviceToHost));
  local.download_ms = timer.stop();
  if (timing) *timing = local;
  return 0;
}

}  // namespace nk::cuda

extern const nk_cuda_attention nk_cuda_attention_table = {
    .header = nk::cuda::family_header<nk_cuda_attention>(),
    .block_sparse_attention_f32 = nk::cuda::block_sparse_attention_f32,
    .dense_attention_cublas_f32 = nk::cuda::dense_attention_cublas_f32,
};
