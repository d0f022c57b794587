// mla.cu - paged MLA decode attention on the GPU (snapmla-decode): SnapMLA's
// 644-byte rows through FP8 mma.sync (e4m3 x e4m3, FP32 accumulate; sm_89+,
// built for sm_90) and its twin over BF16 1152-byte rows through BF16
// mma.sync, with the same dataflow:
//
//   a CTA = 4 warps = one batch row x one split of its pages x 16 query heads
//   (the MMA's 16 rows); per 64-token page:
//     the page's rows -> shared memory (rows past the length zeroed);
//     scores: warp w takes tokens 16w..16w+15; content (q_c codes . c codes,
//       k32 FP8 MMAs, or BF16 k16) and RoPE (q_R/s_q . k_R/s_t, BF16 k16)
//       accumulate into one FP32 fragment (pre-posed scales: SnapMLA (ii)),
//       then x softmax_scale s_q s_t;
//     online softmax per head (16 threads, one row each): running max and
//       the normaliser from the unquantized P; P' = P s_t quantized to E4M3
//       with one scale per head and page (SnapMLA (iii)), or P to BF16;
//     PV: warp w owns latent columns [w d_c/4, (w+1) d_c/4): P' codes x c
//       codes (k32 FP8 MMAs per 8 columns), each page's product times its
//       block scale added to the FP32 output after the rescale.
//   A second kernel merges the splits by their maxima and sums.
//
// CPU twin: tools/snapmla-decode/kernel.cpp (snapmla::attend), which the
// host wrapper (tools/snapmla-decode/kernel_cuda.cpp) also uses to prepare
// the queries, so both read the same query codes.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../common.cuh"

namespace nk::cuda {

namespace {

constexpr int kTokens = 64;  // a page, and a PV block
constexpr int kHeads = 16;   // an MMA's rows: the heads of one CTA
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

struct MlaArgs {
  const uint8_t* pages;
  int row_bytes, dc, dr;
  bool fp8;  // snapmla644 rows (E4M3 codes of c/s, s, BF16 k_R/s); else BF16 rows
  const int* table;
  int max_pages;
  const int* lengths;
  const uint8_t* q_content;  // [B,H,dc]: E4M3 codes (fp8) or BF16 bits (2 bytes each)
  const uint16_t* q_rope;    // [B,H,dr] BF16 bits
  const float* factor;       // [B,H]: softmax_scale s_q
  int heads, splits;
  float *part_acc, *part_m, *part_l;  // [B,S,H,dc], [B,S,H], [B,S,H]
};

__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // the host refuses FP8 rows below compute capability 8.9
#endif
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();
#endif
}

__device__ __forceinline__ uint32_t load32(const uint8_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

/// Four bytes from four rows (the PV operand B: k = token, n = column).
__device__ __forceinline__ uint32_t gather4(const uint8_t* p, int stride) {
  return uint32_t(p[0]) | (uint32_t(p[stride]) << 8) | (uint32_t(p[2 * stride]) << 16) |
         (uint32_t(p[3 * stride]) << 24);
}

/// Two 16-bit values from two rows.
__device__ __forceinline__ uint32_t gather2(const uint8_t* p, int stride) {
  return uint32_t(*reinterpret_cast<const uint16_t*>(p)) |
         (uint32_t(*reinterpret_cast<const uint16_t*>(p + stride)) << 16);
}

/// NT = latent columns per warp / 8 (d_c = 32 NT).
template <int NT>
__global__ void __launch_bounds__(kThreads) mla_decode(MlaArgs a) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int dc = a.dc, dr = a.dr, rb = a.row_bytes;
  const int b = blockIdx.z, split = blockIdx.y, h0 = blockIdx.x * kHeads;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;
  const int qc_bytes = a.fp8 ? dc : 2 * dc;
  uint8_t* page = smem;                                                    // [64][row_bytes]
  uint8_t* qc = page + kTokens * rb;                                       // [16][qc_bytes]
  uint8_t* qr = qc + kHeads * qc_bytes;                                    // [16][dr] BF16
  float* scores = reinterpret_cast<float*>(qr + kHeads * dr * 2);          // [16][64]
  uint8_t* probs = reinterpret_cast<uint8_t*>(scores + kHeads * kTokens);  // [16][64] codes or BF16
  float* st = reinterpret_cast<float*>(probs + kHeads * kTokens * 2);      // [64] token scales
  float* row_m = st + kTokens;                                             // [16] running max
  float* row_l = row_m + kHeads;                                           // [16] normaliser
  float* rescale = row_l + kHeads;                                         // [16] exp(m_old - m_new) of this page
  float* pscale = rescale + kHeads;                                        // [16] P' block scale
  float* fac = pscale + kHeads;                                            // [16] softmax_scale s_q (0: a padding head)

  const int length = a.lengths[b];
  const int pages_b = (length + kTokens - 1) / kTokens;
  const int p0 = static_cast<int>(static_cast<long>(pages_b) * split / a.splits);
  const int p1 = static_cast<int>(static_cast<long>(pages_b) * (split + 1) / a.splits);
  // The queries of the CTA's heads (padding heads: zeros).
  for (int i = threadIdx.x; i < kHeads * qc_bytes; i += kThreads) {
    const int h = h0 + i / qc_bytes;
    qc[i] = h < a.heads ? a.q_content[(static_cast<long>(b) * a.heads + h) * qc_bytes + i % qc_bytes] : 0;
  }
  for (int i = threadIdx.x; i < kHeads * dr; i += kThreads) {
    const int h = h0 + i / dr;
    reinterpret_cast<uint16_t*>(qr)[i] = h < a.heads ? a.q_rope[(static_cast<long>(b) * a.heads + h) * dr + i % dr] : 0;
  }
  if (threadIdx.x < kHeads) {
    const int h = h0 + threadIdx.x;
    fac[threadIdx.x] = h < a.heads ? a.factor[static_cast<long>(b) * a.heads + h] : 0.f;
    row_m[threadIdx.x] = -INFINITY;
    row_l[threadIdx.x] = 0.f;
  }
  float acc[NT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
  const int col0 = warp * NT * 8;  // this warp's latent columns

  for (int p = p0; p < p1; ++p) {
    const int n = min(kTokens, length - p * kTokens);
    const uint8_t* src = a.pages + static_cast<long>(a.table[static_cast<long>(b) * a.max_pages + p]) * kTokens * rb;
    __syncthreads();  // the previous page's PV has read page[] and probs[]
    for (int i = threadIdx.x * 4; i < kTokens * rb; i += kThreads * 4)
      *reinterpret_cast<uint32_t*>(page + i) = i < n * rb ? load32(src + i) : 0u;  // rows past the length: zeros
    __syncthreads();
    if (threadIdx.x < kTokens)
      st[threadIdx.x] = threadIdx.x >= n ? 0.f
                        : a.fp8          ? *reinterpret_cast<const float*>(page + threadIdx.x * rb + dc)
                                         : 1.f;

    // Scores of tokens 16 warp .. + 15, two n8 tiles.
    float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const uint8_t* row = page + (16 * warp + 8 * t + g) * rb;
      if (a.fp8) {
        for (int k = 0; k < dc; k += 32) {
          const uint32_t qa[4] = {load32(qc + g * dc + k + tig * 4), load32(qc + (g + 8) * dc + k + tig * 4),
                                  load32(qc + g * dc + k + 16 + tig * 4), load32(qc + (g + 8) * dc + k + 16 + tig * 4)};
          const uint32_t kb[2] = {load32(row + k + tig * 4), load32(row + k + 16 + tig * 4)};
          mma_e4m3(s[t], qa, kb);
        }
      } else {
        for (int k = 0; k < dc; k += 16) {
          const uint32_t qa[4] = {
              load32(qc + 2 * (g * dc + k + tig * 2)), load32(qc + 2 * ((g + 8) * dc + k + tig * 2)),
              load32(qc + 2 * (g * dc + k + 8 + tig * 2)), load32(qc + 2 * ((g + 8) * dc + k + 8 + tig * 2))};
          const uint32_t kb[2] = {load32(row + 2 * (k + tig * 2)), load32(row + 2 * (k + 8 + tig * 2))};
          mma_bf16(s[t], qa, kb);
        }
      }
      const uint8_t* kr = row + (a.fp8 ? dc + 4 : 2 * dc);  // BF16 k_R (divided by s_t in snapmla644)
      for (int k = 0; k < dr; k += 16) {
        const uint32_t qa[4] = {load32(qr + 2 * (g * dr + k + tig * 2)), load32(qr + 2 * ((g + 8) * dr + k + tig * 2)),
                                load32(qr + 2 * (g * dr + k + 8 + tig * 2)),
                                load32(qr + 2 * ((g + 8) * dr + k + 8 + tig * 2))};
        const uint32_t kb[2] = {load32(kr + 2 * (k + tig * 2)), load32(kr + 2 * (k + 8 + tig * 2))};
        mma_bf16(s[t], qa, kb);
      }
    }
    __syncthreads();  // st[] written
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = g + (e >= 2 ? 8 : 0), c = 16 * warp + 8 * t + tig * 2 + (e & 1);
        scores[r * kTokens + c] = c < n ? s[t][e] * fac[r] * st[c] : -INFINITY;
      }
    __syncthreads();
    // Online softmax, one thread per head row.
    if (threadIdx.x < kHeads) {
      const int r = threadIdx.x;
      float* sr = scores + r * kTokens;
      float mx = -INFINITY;
      for (int j = 0; j < n; ++j) mx = fmaxf(mx, sr[j]);
      const float m_new = fmaxf(row_m[r], mx);
      const float scale_old = row_m[r] == -INFINITY ? 0.f : __expf(row_m[r] - m_new);
      float sum = 0.f, amax = 0.f;
      for (int j = 0; j < kTokens; ++j) {
        const float pj = j < n ? __expf(sr[j] - m_new) : 0.f;
        sum += pj;
        sr[j] = pj * st[j];  // P' = P s_t (s_t = 1 for BF16 rows)
        amax = fmaxf(amax, sr[j]);
      }
      row_l[r] = row_l[r] * scale_old + sum;
      row_m[r] = m_new;
      rescale[r] = scale_old;
      if (a.fp8) {
        const float ps = amax > 0.f ? amax / 448.f : 1.f;
        pscale[r] = ps;
        for (int j = 0; j < kTokens; ++j)
          probs[r * kTokens + j] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(sr[j] / ps, __NV_SATFINITE, __NV_E4M3));
      } else {
        pscale[r] = 1.f;
        for (int j = 0; j < kTokens; ++j) {
          const __nv_bfloat16 v = __float2bfloat16_rn(sr[j]);
          reinterpret_cast<uint16_t*>(probs)[r * kTokens + j] = *reinterpret_cast<const uint16_t*>(&v);
        }
      }
    }
    __syncthreads();
    // PV for this warp's columns.
    const float r_lo = rescale[g], r_hi = rescale[g + 8], ps_lo = pscale[g], ps_hi = pscale[g + 8];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int col = col0 + 8 * t + g;
      float part[4] = {0.f, 0.f, 0.f, 0.f};
      if (a.fp8) {
#pragma unroll
        for (int kk = 0; kk < kTokens; kk += 32) {
          const uint32_t pa[4] = {
              load32(probs + g * kTokens + kk + tig * 4), load32(probs + (g + 8) * kTokens + kk + tig * 4),
              load32(probs + g * kTokens + kk + 16 + tig * 4), load32(probs + (g + 8) * kTokens + kk + 16 + tig * 4)};
          const uint32_t cb[2] = {gather4(page + (kk + tig * 4) * rb + col, rb),
                                  gather4(page + (kk + 16 + tig * 4) * rb + col, rb)};
          mma_e4m3(part, pa, cb);
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < kTokens; kk += 16) {
          const uint8_t* pb = probs;
          const uint32_t pa[4] = {load32(pb + 2 * (g * kTokens + kk + tig * 2)),
                                  load32(pb + 2 * ((g + 8) * kTokens + kk + tig * 2)),
                                  load32(pb + 2 * (g * kTokens + kk + 8 + tig * 2)),
                                  load32(pb + 2 * ((g + 8) * kTokens + kk + 8 + tig * 2))};
          const uint32_t cb[2] = {gather2(page + (kk + tig * 2) * rb + 2 * col, rb),
                                  gather2(page + (kk + 8 + tig * 2) * rb + 2 * col, rb)};
          mma_bf16(part, pa, cb);
        }
      }
      // Fragment (16 x 8): part[0..1] row g, part[2..3] row g + 8.
      acc[t][0] = acc[t][0] * r_lo + part[0] * ps_lo;
      acc[t][1] = acc[t][1] * r_lo + part[1] * ps_lo;
      acc[t][2] = acc[t][2] * r_hi + part[2] * ps_hi;
      acc[t][3] = acc[t][3] * r_hi + part[3] * ps_hi;
    }
  }
  __syncthreads();
  // Partial results of this split: unnormalised output, max, normaliser.
  const long base = (static_cast<long>(b) * a.splits + split) * a.heads;
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int h = h0 + g + (e >= 2 ? 8 : 0), col = col0 + 8 * t + tig * 2 + (e & 1);
      if (h < a.heads) a.part_acc[(base + h) * dc + col] = acc[t][e];
    }
  if (threadIdx.x < kHeads && h0 + threadIdx.x < a.heads) {
    a.part_m[base + h0 + threadIdx.x] = row_m[threadIdx.x];
    a.part_l[base + h0 + threadIdx.x] = row_l[threadIdx.x];
  }
}

/// One block per (batch row, head): the splits merged by their maxima and sums.
__global__ void mla_merge(const float* part_acc, const float* part_m, const float* part_l, int splits, int heads,
                          int dc, float* out, float* lse) {
  const int bh = blockIdx.x, b = bh / heads, h = bh % heads;
  float m = -INFINITY;
  for (int s = 0; s < splits; ++s) m = fmaxf(m, part_m[(static_cast<long>(b) * splits + s) * heads + h]);
  float l = 0.f;
  for (int s = 0; s < splits; ++s) {
    const long i = (static_cast<long>(b) * splits + s) * heads + h;
    if (part_m[i] != -INFINITY) l += part_l[i] * __expf(part_m[i] - m);
  }
  for (int c = threadIdx.x; c < dc; c += blockDim.x) {
    float v = 0.f;
    for (int s = 0; s < splits; ++s) {
      const long i = (static_cast<long>(b) * splits + s) * heads + h;
      if (part_m[i] != -INFINITY) v += part_acc[i * dc + c] * __expf(part_m[i] - m);
    }
    out[static_cast<long>(bh) * dc + c] = v / l;
  }
  if (threadIdx.x == 0) lse[bh] = m + logf(l);
}

size_t shared_bytes(int row_bytes, int dc, int dr, bool fp8) {
  return static_cast<size_t>(kTokens) * row_bytes + static_cast<size_t>(kHeads) * (fp8 ? dc : 2 * dc) +
         static_cast<size_t>(kHeads) * dr * 2 + sizeof(float) * kHeads * kTokens + 2 * kHeads * kTokens +
         sizeof(float) * (kTokens + 5 * kHeads);
}

template <int NT>
cudaError_t launch(const MlaArgs& a, dim3 grid, size_t smem) {
  cudaError_t status =
      cudaFuncSetAttribute(mla_decode<NT>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (status != cudaSuccess) return status;
  mla_decode<NT><<<grid, kThreads, smem>>>(a);
  return cudaGetLastError();
}

}  // namespace

int decode_f32(const unsigned char* pages, long page_count, long row_bytes, int layout, long dc, long dr,
               const int* block_table, long max_pages, const int* lengths, long batch, const unsigned char* q_content,
               const unsigned short* q_rope, const float* factor, long heads, long splits, int repeats, float* out,
               float* lse, nk_cuda_timing* timing, char* error, size_t error_size) {
  const bool fp8 = layout == 1;
  if ((layout != 0 && layout != 1) || (dc != 128 && dc != 256 && dc != 512) || dr < 16 || dr > 256 || dr % 16 != 0 ||
      batch < 1 || heads < 1 || page_count < 1 || max_pages < 1 || splits < 1 || splits > 4096 ||
      row_bytes != (fp8 ? dc + 4 + 2 * dr : 2 * (dc + dr))) {
    set_error(
        error, error_size,
        "mla decode: unsupported shape (layout bf16 or snapmla644, d_c 128/256/512, d_R a multiple of 16 up to 256)");
    return -1;
  }
  int device = 0;
  cudaDeviceProp properties{};
  NK_CUDA_TRY(cudaGetDevice(&device));
  NK_CUDA_TRY(cudaGetDeviceProperties(&properties, device));
  if (fp8 && properties.major * 10 + properties.minor < 89) {
    set_error(error, error_size, "mla decode: FP8 mma.sync needs compute capability 8.9 or newer (Ada, Hopper)");
    return -1;
  }
  const size_t smem = shared_bytes(static_cast<int>(row_bytes), static_cast<int>(dc), static_cast<int>(dr), fp8);
  if (smem > properties.sharedMemPerBlockOptin) {
    set_error(error, error_size, "mla decode: a page does not fit in this GPU's shared memory");
    return -1;
  }
  Timer timer;
  nk_cuda_timing local{};
  DeviceBuffer d_pages, d_table, d_len, d_qc, d_qr, d_fac, d_acc, d_m, d_l, d_out, d_lse;
  const size_t qc_bytes = static_cast<size_t>(batch * heads * dc) * (fp8 ? 1 : 2);
  timer.start();
  NK_CUDA_TRY(upload(d_pages, pages, static_cast<size_t>(page_count) * kTokens * row_bytes));
  NK_CUDA_TRY(upload(d_table, block_table, sizeof(int) * batch * max_pages));
  NK_CUDA_TRY(upload(d_len, lengths, sizeof(int) * batch));
  NK_CUDA_TRY(upload(d_qc, q_content, qc_bytes));
  NK_CUDA_TRY(upload(d_qr, q_rope, sizeof(uint16_t) * batch * heads * dr));
  NK_CUDA_TRY(upload(d_fac, factor, sizeof(float) * batch * heads));
  NK_CUDA_TRY(d_acc.allocate(sizeof(float) * batch * splits * heads * dc));
  NK_CUDA_TRY(d_m.allocate(sizeof(float) * batch * splits * heads));
  NK_CUDA_TRY(d_l.allocate(sizeof(float) * batch * splits * heads));
  NK_CUDA_TRY(d_out.allocate(sizeof(float) * batch * heads * dc));
  NK_CUDA_TRY(d_lse.allocate(sizeof(float) * batch * heads));
  local.upload_ms = timer.stop();
  MlaArgs a{};
  a.pages = static_cast<const uint8_t*>(d_pages.get());
  a.row_bytes = static_cast<int>(row_bytes), a.dc = static_cast<int>(dc), a.dr = static_cast<int>(dr), a.fp8 = fp8;
  a.table = static_cast<const int*>(d_table.get()), a.max_pages = static_cast<int>(max_pages);
  a.lengths = static_cast<const int*>(d_len.get());
  a.q_content = static_cast<const uint8_t*>(d_qc.get()), a.q_rope = static_cast<const uint16_t*>(d_qr.get());
  a.factor = static_cast<const float*>(d_fac.get());
  a.heads = static_cast<int>(heads), a.splits = static_cast<int>(splits);
  a.part_acc = static_cast<float*>(d_acc.get()), a.part_m = static_cast<float*>(d_m.get()),
  a.part_l = static_cast<float*>(d_l.get());
  const dim3 grid(static_cast<unsigned>((heads + kHeads - 1) / kHeads), static_cast<unsigned>(splits),
                  static_cast<unsigned>(batch));
  double best = INFINITY;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    timer.start();
    const cudaError_t status = dc == 128   ? launch<4>(a, grid, smem)
                               : dc == 256 ? launch<8>(a, grid, smem)
                                           : launch<16>(a, grid, smem);
    NK_CUDA_TRY(status);
    mla_merge<<<static_cast<unsigned>(batch * heads), 128>>>(a.part_acc, a.part_m, a.part_l, a.splits, a.heads, a.dc,
                                                             static_cast<float*>(d_out.get()),
                                                             static_cast<float*>(d_lse.get()));
    NK_CUDA_TRY(cudaGetLastError());
    best = std::min<double>(best, timer.stop());
  }
  local.compute_ms = best;
  timer.start();
  NK_CUDA_TRY(cudaMemcpy(out, d_out.get(), sizeof(float) * batch * heads * dc, cudaMemcpyDeviceToHost));
  NK_CUDA_TRY(cudaMemcpy(lse, d_lse.get(), sizeof(float) * batch * heads, cudaMemcpyDeviceToHost));
  local.download_ms = timer.stop();
  if (timing) *timing = local;
  return 0;
}

}  // namespace nk::cuda

extern const nk_cuda_mla nk_cuda_mla_table = {
    .header = nk::cuda::family_header<nk_cuda_mla>(),
    .decode_f32 = nk::cuda::decode_f32,
};
