// dllm_attention.cpp - Step-dLLM's fused block-sparse attention on the CPU.
//
// One task = one (head, query block). The query rows are pre-scaled; for each
// kept key block a 64 x 64 score tile is computed against a transposed copy of
// K (so the inner loop runs along keys and vectorises without reassociation),
// the online softmax updates the row maxima, sums and output rows, and P V is
// accumulated in registers over the block's keys. The vector code uses GCC
// vector extensions and is compiled twice, for AVX2+FMA and for the baseline
// ISA, picked at run time; OpenMP spreads the tasks over threads.
#include <omp.h>

// The vector helpers below are always inlined, so the AVX argument ABI never crosses a call.
#pragma GCC diagnostic ignored "-Wpsabi"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "nk/kernels/dllm.hpp"
#include "nk/kernels/attention.hpp"

namespace nk::dllm {

int64_t BlockMask::kept() const {
  int64_t n = 0;
  for (uint8_t k : keep) n += k != 0;
  return n;
}

BlockMask BlockMask::full(int64_t heads, int64_t blocks, int64_t block) {
  BlockMask m;
  m.heads = heads, m.blocks = blocks, m.block = block;
  m.keep.assign(static_cast<size_t>(heads * blocks * blocks), 1);
  return m;
}

namespace {

typedef float f8 __attribute__((vector_size(32)));
typedef int i8v __attribute__((vector_size(32)));
constexpr int kTile = 64;
constexpr int kRows = 66;  // 64 rows padded to a multiple of 6

__attribute__((always_inline)) inline f8 load8(const float* p) {
  f8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline void store8(float* p, f8 v) { std::memcpy(p, &v, sizeof v); }
__attribute__((always_inline)) inline f8 splat(float x) { return f8{x, x, x, x, x, x, x, x}; }

/// exp(x) for x <= 0 (relative error about 2e-7); below -87 it returns ~1e-38.
__attribute__((always_inline)) inline f8 exp8(f8 x) {
  const f8 lo = splat(-87.0f);
  x = x < lo ? lo : x;
  const f8 t = x * splat(1.44269504088896341f) - splat(0.5f);
  const i8v n = __builtin_convertvector(t, i8v);  // truncation of t - 0.5 (t <= 0) = round
  const f8 nf = __builtin_convertvector(n, f8);
  const f8 r = x - nf * splat(0.693359375f) + nf * splat(2.12194440e-4f);
  f8 p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * r * r + r + splat(1.0f);
  const i8v bits = (n + 127) << 23;
  f8 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

struct Task {
  const Qkv* x;
  const BlockMask* mask;
  const float* kt;  ///< K transposed per KV head: [Hkv][d][Lpad]
  int64_t block, lpad, nk;
  float scale;
  float* out;
  float* block_mass;
};

/// One (head, query block): the whole fused pass. Compiled for two ISAs.
__attribute__((always_inline)) inline void run_task(const Task& t, int64_t h, int64_t qb) {
  const Qkv& x = *t.x;
  const int64_t d = x.dims, L = x.length, Lq = x.queries(), g = x.kv_of[h];
  const int64_t r0 = qb * t.block, rows = std::min(t.block, Lq - r0);
  const int64_t rows4 = (rows + 5) / 6 * 6;  // rows padded to the 6-row register tile
  alignas(32) float qs[kRows * kMaxDims];
  alignas(32) float acc[kRows * kMaxDims];
  alignas(32) float s[kRows * kTile];
  float m[kRows], l[kRows];
  for (int64_t i = 0; i < rows4; ++i) {
    for (int64_t c = 0; c < d; ++c) qs[i * d + c] = i < rows ? x.q_row(h, r0 + i)[c] * t.scale : 0.0f;
    m[i] = -std::numeric_limits<float>::infinity();
    l[i] = 0;
  }
  std::fill(acc, acc + rows4 * d, 0.0f);
  for (int64_t kb = 0; kb < t.nk; ++kb) {
    if (t.mask && !t.mask->at(h, qb, kb)) continue;
    const int64_t c0 = kb * t.block, cols = std::min(t.block, L - c0);
    const float* kt = t.kt + (g * t.nk + kb) * d * kTile;  // this block of K, transposed: [d][64]
    // Scores: s[i][j] = q_i . k_j, 6 rows x 16 keys in registers (12 accumulators).
    const int64_t cols16 = (cols + 15) / 16 * 16;
    for (int64_t jc = 0; jc < cols16; jc += 16) {
      for (int64_t i = 0; i < rows4; i += 6) {
        f8 a00 = splat(0), a01 = splat(0), a10 = splat(0), a11 = splat(0), a20 = splat(0), a21 = splat(0);
        f8 a30 = splat(0), a31 = splat(0), a40 = splat(0), a41 = splat(0), a50 = splat(0), a51 = splat(0);
        const float* q0 = qs + i * d;
        const float* kc = kt + jc;
        for (int64_t c = 0; c < d; ++c, kc += kTile) {
          const f8 b0 = load8(kc), b1 = load8(kc + 8);
          float x = q0[c];
          a00 += x * b0, a01 += x * b1;
          x = q0[d + c];
          a10 += x * b0, a11 += x * b1;
          x = q0[2 * d + c];
          a20 += x * b0, a21 += x * b1;
          x = q0[3 * d + c];
          a30 += x * b0, a31 += x * b1;
          x = q0[4 * d + c];
          a40 += x * b0, a41 += x * b1;
          x = q0[5 * d + c];
          a50 += x * b0, a51 += x * b1;
        }
        float* si = s + i * kTile + jc;
        store8(si, a00), store8(si + 8, a01), store8(si + kTile, a10), store8(si + kTile + 8, a11);
        store8(si + 2 * kTile, a20), store8(si + 2 * kTile + 8, a21), store8(si + 3 * kTile, a30), store8(si + 3 * kTile + 8, a31);
        store8(si + 4 * kTile, a40), store8(si + 4 * kTile + 8, a41), store8(si + 5 * kTile, a50), store8(si + 5 * kTile + 8, a51);
      }
    }
    // Online softmax over this block.
    for (int64_t i = 0; i < rows4; ++i) {
      float* si = s + i * kTile;
      for (int64_t j = cols; j < kTile; ++j) si[j] = -INFINITY;  // the ragged end of the sequence
      // Row maximum and sum in 8 lanes (a 64-key tile), reduced once.
      f8 mx8 = load8(si);
      for (int64_t j = 8; j < kTile; j += 8) {
        const f8 v = load8(si + j);
        mx8 = v > mx8 ? v : mx8;
      }
      float mx = mx8[0];
      for (int e = 1; e < 8; ++e) mx = std::max(mx, mx8[e]);
      const float m_new = std::max(m[i], mx);
      const float corr = std::exp(m[i] - m_new);
      const f8 mv = splat(m_new);
      f8 sum8 = splat(0);
      for (int64_t j = 0; j < kTile; j += 8) {
        const f8 e = exp8(load8(si + j) - mv);
        store8(si + j, e);
        sum8 += e;
      }
      // Past the ragged end exp8 gave its floor (~1e-38) for -inf: zero for P V; in the sum it is below
      // float resolution (the row's maximum contributes exp(0) = 1).
      for (int64_t j = cols; j < kTile; ++j) si[j] = 0;
      float rowsum = 0;
      for (int e = 0; e < 8; ++e) rowsum += sum8[e];
      l[i] = l[i] * corr + rowsum;
      m[i] = m_new;
      if (corr != 1.0f) {
        float* ai = acc + i * d;
        for (int64_t c = 0; c < d; ++c) ai[c] *= corr;
      }
      if (t.block_mass && i < rows) {
        // Stored relative to this block's running maximum; rescaled at the end.
        float* bm = t.block_mass + ((h * Lq + r0 + i) * t.nk + kb) * 2;
        bm[0] = rowsum;
        bm[1] = m_new;
      }
    }
    // acc += P V, 6 rows x 16 output columns in registers over the block's keys
    // (skipped when only the block masses are wanted).
    for (int64_t i = 0; t.out && i < rows4; i += 6) {
      for (int64_t c = 0; c < d; c += 16) {
        float* o0 = acc + i * d + c;
        // This block's P V starts from zero and joins the running sum once
        // (not key by key onto it): each product rounds against the block's
        // partial sum, not against the whole row's (4e-5 -> see the test).
        f8 a00 = splat(0), a01 = splat(0), a10 = splat(0), a11 = splat(0), a20 = splat(0), a21 = splat(0);
        f8 a30 = splat(0), a31 = splat(0), a40 = splat(0), a41 = splat(0), a50 = splat(0), a51 = splat(0);
        const float* p = s + i * kTile;
        const float* vj = x.v_row(g, c0) + c;
        for (int64_t j = 0; j < cols; ++j, vj += d) {
          const f8 v0 = load8(vj), v1 = load8(vj + 8);
          float w = p[j];
          a00 += w * v0, a01 += w * v1;
          w = p[kTile + j];
          a10 += w * v0, a11 += w * v1;
          w = p[2 * kTile + j];
          a20 += w * v0, a21 += w * v1;
          w = p[3 * kTile + j];
          a30 += w * v0, a31 += w * v1;
          w = p[4 * kTile + j];
          a40 += w * v0, a41 += w * v1;
          w = p[5 * kTile + j];
          a50 += w * v0, a51 += w * v1;
        }
        const auto add8 = [](float* at, f8 x) { store8(at, load8(at) + x); };
        add8(o0, a00), add8(o0 + 8, a01), add8(o0 + d, a10), add8(o0 + d + 8, a11);
        add8(o0 + 2 * d, a20), add8(o0 + 2 * d + 8, a21), add8(o0 + 3 * d, a30), add8(o0 + 3 * d + 8, a31);
        add8(o0 + 4 * d, a40), add8(o0 + 4 * d + 8, a41), add8(o0 + 5 * d, a50), add8(o0 + 5 * d + 8, a51);
      }
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    const float inv = 1.0f / l[i];
    if (t.out) {
      float* o = t.out + (h * Lq + r0 + i) * d;
      for (int64_t c = 0; c < d; ++c) o[c] = acc[i * d + c] * inv;
    }
    if (t.block_mass) {
      for (int64_t kb = 0; kb < t.nk; ++kb) {
        float* bm = t.block_mass + ((h * Lq + r0 + i) * t.nk + kb) * 2;
        bm[0] = bm[0] > 0 ? bm[0] * std::exp(bm[1] - m[i]) * inv : 0.0f;
      }
    }
  }
}

__attribute__((target("avx2,fma"))) void task_avx2(const Task& t, int64_t h, int64_t qb) { run_task(t, h, qb); }
void task_generic(const Task& t, int64_t h, int64_t qb) { run_task(t, h, qb); }

bool g_force_generic = false;

}  // namespace

void force_generic_isa(bool on) { g_force_generic = on; }

std::string attention(const Qkv& x, const BlockMask* mask, int64_t block, float scale, float* out, float* block_mass) {
  const int64_t nk = block_count(x.length, block);
  const int64_t nq = block_count(x.queries(), block), Lq = x.queries();
  const int64_t lpad = nk * block;
  // d must be a multiple of 16 for the register tiles; pad Q, K, V with zero columns otherwise.
  Qkv padded;
  const Qkv* use = &x;
  const int64_t d16 = (x.dims + 15) / 16 * 16;
  if (d16 != x.dims) {
    padded = x;
    padded.dims = d16;
    auto pad = [&](const float* src, int64_t heads, int64_t length) {
      std::vector<float> dst(static_cast<size_t>(heads * length * d16), 0.0f);
      for (int64_t r = 0; r < heads * length; ++r) std::copy_n(src + r * x.dims, x.dims, dst.data() + r * d16);
      return dst;
    };
    padded.k_shared = padded.v_shared = nullptr;
    padded.q = pad(x.q.data(), x.heads, Lq), padded.k = pad(x.k_data(), x.kv_heads, x.length), padded.v = pad(x.v_data(), x.kv_heads, x.length);
    use = &padded;
  }
  const int64_t d = use->dims;
  // K transposed block by block: [Hkv][nk][d][block], so each block's tile is
  // contiguous. The buffer is kept between calls (planning calls the kernel
  // for a few rows at every step; fresh pages would cost more than the work).
  thread_local std::vector<float> kt_buffer;
  const size_t kt_size = static_cast<size_t>(use->kv_heads * nk * d * kTile);
  if (kt_buffer.size() < kt_size) kt_buffer.resize(kt_size);
  float* kt = kt_buffer.data();
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < use->kv_heads; ++g) {
    for (int64_t b = 0; b < nk; ++b) {
      float* tile = kt + (g * nk + b) * d * kTile;
      const int64_t n = std::min(block, use->length - b * block);
      for (int64_t c = 0; c < d; ++c) std::fill(tile + c * kTile + n, tile + (c + 1) * kTile, 0.0f);  // padding columns
      for (int64_t i = 0; i < n; ++i) {
        const float* k = use->k_row(g, b * block + i);
        for (int64_t c = 0; c < d; ++c) tile[c * kTile + i] = k[c];
      }
    }
  }
  std::vector<float> padded_out;
  float* target = out;
  if (use != &x && out) {
    padded_out.resize(static_cast<size_t>(x.heads * Lq * d));
    target = padded_out.data();
  }
  // block_mass is [H, L, nk] floats for the caller; the kernel keeps (sum, max) pairs.
  std::vector<float> pairs;
  if (block_mass) pairs.resize(static_cast<size_t>(x.heads * Lq * nk * 2), 0.0f);
  const Task task{use, mask, kt, block, lpad, nk, scale, target, block_mass ? pairs.data() : nullptr};
  const bool avx2 = !g_force_generic && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const int64_t tasks = x.heads * nq;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t id = 0; id < tasks; ++id) {
    if (avx2) task_avx2(task, id / nq, id % nq);
    else task_generic(task, id / nq, id % nq);
  }
  if (use != &x && out) {
    for (int64_t r = 0; r < x.heads * Lq; ++r) std::copy_n(target + r * d, x.dims, out + r * x.dims);
  }
  if (block_mass) {
    for (int64_t i = 0; i < x.heads * Lq * nk; ++i) block_mass[i] = pairs[static_cast<size_t>(2 * i)];
  }
  return avx2 ? "avx2+fma" : "generic";
}

void attention_unfused(const Qkv& x, float scale, float* out) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t L = x.length, d = x.dims;
  Mat scores(L, L);
  for (int64_t h = 0; h < x.heads; ++h) {
    const int64_t g = x.kv_of[h];
    const Eigen::Map<const Mat> q(x.q_row(h, 0), L, d), k(x.k_row(g, 0), L, d), v(x.v_row(g, 0), L, d);
    scores.noalias() = (q * k.transpose()) * scale;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < L; ++i) {
      auto row = scores.row(i).array();
      const float mx = row.maxCoeff();
      row = (row - mx).exp();
      row /= row.sum();
    }
    Eigen::Map<Mat> o(out + h * L * d, L, d);
    o.noalias() = scores * v;
  }
}

void attention_reference(const Qkv& x, const BlockMask* mask, int64_t block, double scale, double* out) {
  const int64_t L = x.length, d = x.dims;
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t hi = 0; hi < x.heads * L; ++hi) {
    const int64_t h = hi / L, i = hi % L, g = x.kv_of[h];
    std::vector<int64_t> keys;
    for (int64_t j = 0; j < L; ++j)
      if (!mask || mask->at(h, i / block, j / block)) keys.push_back(j);
    std::vector<double> logits(keys.size());
    nk::kernels::attention_row(x.q_row(h, i), x.k_row(g, 0), x.v_row(g, 0), d, d, scale, keys.data(),
                               static_cast<int64_t>(keys.size()), logits.data(), out + hi * d);
  }
}

}  // namespace nk::dllm
