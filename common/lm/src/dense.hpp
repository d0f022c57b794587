// dense.hpp - the model's hot loops: the projections' matrix products and
// tiled attention, forward and backward, as Eigen GEMMs, except the
// projections of fewer than 32 rows (decoding), which stream W once through
// a register-blocked dot kernel instead of paying the GEMM's copy of W. dense.cpp is
// compiled twice - for the baseline ISA and for AVX2+FMA (dense_avx2.cpp,
// with Eigen renamed so the two copies never share a symbol) - and
// dense_ops() picks one per process from the CPU (x86-64 binaries stay
// portable; the AVX2 copy is 2-4x faster where it runs).
#pragma once
#include <cstdint>

namespace nk::lm {

/// Query rows per attention tile: scores live as [tile, keys], never [T, T].
inline constexpr int64_t kAttentionTile = 64;

struct DenseOps {
  const char* isa;
  /// y[n, out] = x[n, in] W^T, W [out, in] (n < 32: the streaming kernel).
  void (*linear)(const float* x, const float* w, int64_t n, int64_t in, int64_t out, float* y);
  /// dx[n, in] (= or +=) dy[n, out] W.
  void (*linear_dx)(const float* dy, const float* w, int64_t n, int64_t in, int64_t out, float* dx, bool accumulate);
  /// dW[out, in] += dy^T x.
  void (*linear_dw)(const float* dy, const float* x, int64_t n, int64_t in, int64_t out, float* dw);
  /// As nk::lm::attention_forward/backward (attention.hpp); scratch holds
  /// attention_scratch(max_keys) values.
  void (*attention_forward)(const float* q, const float* k, const float* v, const int64_t* offsets, int64_t segments,
                            int64_t heads, int64_t kv_heads, int64_t hd, bool causal, float* out, float* lse,
                            float* scratch, int64_t max_keys);
  void (*attention_backward)(const float* dout, const float* out, const float* q, const float* k, const float* v,
                             const float* lse, const int64_t* offsets, int64_t segments, int64_t heads, int64_t kv_heads,
                             int64_t hd, bool causal, float* dq, float* dk, float* dv, float* scratch, int64_t max_keys);
  /// One tile of block-sparse attention (sparse_attention.cpp builds it):
  /// 'rows' queries of one head (rows qs floats apart) against 'keys'
  /// gathered rows K and V [keys, hd]; allowed [rows, keys] marks the pairs
  /// that count. out rows qs apart, lse rows lse_stride apart; p is scratch
  /// of rows * keys floats.
  void (*sparse_tile_forward)(const float* q, int64_t qs, int64_t rows, const float* K, const float* V, int64_t keys,
                              int64_t hd, const unsigned char* allowed, float scale, float* out, float* lse,
                              int64_t lse_stride, float* p);
  /// Its backward: dq rows overwritten, dK and dV [keys, hd] accumulated;
  /// p and dp scratch of rows * keys floats each.
  void (*sparse_tile_backward)(const float* q, const float* dout, const float* out, int64_t qs, int64_t rows,
                               const float* K, const float* V, int64_t keys, int64_t hd, const unsigned char* allowed,
                               float scale, const float* lse, int64_t lse_stride, float* dq, float* dK, float* dV,
                               float* p, float* dp);
};

/// The AVX-512 copy where the CPU has AVX-512 F/DQ/VL/BW, else the AVX2+FMA
/// copy where it has both, else the baseline copy. NK_LM_ISA = generic,
/// avx2 or avx512 caps the choice (tests run each copy; a copy the CPU lacks
/// is never taken).
const DenseOps& dense_ops();

namespace dense_generic {
extern const DenseOps ops;
}
namespace dense_avx2 {
extern const DenseOps ops;
}
namespace dense_avx512 {
extern const DenseOps ops;
}

}  // namespace nk::lm
