// kernel.hpp - paged MLA decode attention on the CPU over any row layout:
// each batch row's pages split into --splits parts (split-K), each part an
// online softmax in FP32 over its 64-token pages, the parts merged by their
// maxima and sums. A page's rows are decoded once for all heads; scores and
// PV are small register-blocked products (AVX2+FMA+F16C picked at run time,
// NK_KERNELS_ISA=generic forces the portable copy).
#pragma once
#include <cstdint>
#include <vector>

#include "snapmla-decode/format.hpp"

namespace snapmla {

/// A paged cache as quant writes it (the arrays are the caller's).
struct PagedView {
  Layout layout = Layout::bf16;
  int64_t dc = 0, dr = 0, row_bytes = 0;
  const uint8_t* pages = nullptr;  ///< [page_count, 64, row_bytes]
  int64_t page_count = 0;
  const int32_t* block_table = nullptr;  ///< [batch, max_pages], -1 unused
  int64_t max_pages = 0;
  const int32_t* lengths = nullptr;  ///< [batch], each >= 1
  int64_t batch = 0;
};

struct AttendOptions {
  Pv pv = Pv::fp32;
  int64_t splits = 0;  ///< parts of each row's pages; 0 = enough for every thread
  float softmax_scale = 0;
  bool q_fp32 = false;   ///< snapmla644: keep the query unquantized
  bool pre_posed = true;  ///< false: scores as s_q s_t qc.c + (q_R).(k_R) (the check of (ii)); portable copy
  bool portable = false;  ///< the portable copy even where AVX2 runs (tests compare the two)
  int threads = 1;
};

/// The parts each of 'rows' batch rows is split into for 'threads' threads
/// (options.splits when > 0, at most the row's pages).
int64_t auto_splits(int64_t rows, int64_t pages_per_row, int threads);

/// Attention of rows [row_begin, row_end) of the view: queries [B, H, dc+dr]
/// (float32, rows of the whole batch), out [rows, H, dc], lse [rows, H]
/// (natural log of the sum of exp of the scaled scores).
void attend(const PagedView& kv, const float* queries, int64_t heads, int64_t row_begin, int64_t row_end,
            const AttendOptions& options, float* out, float* lse);

/// The copy that runs for pages of 'heads' query heads: "avx512bf16" (at
/// most 2 heads, where the CPU has AVX-512 BF16), "avx2" or "generic".
const char* kernel_isa(int64_t heads);

/// Whether the GPU kernel (kernels/cuda/mla) runs this configuration: bf16
/// rows with FP32 PV (its MMA rounds P to BF16, as FlashMLA) or snapmla644
/// with FP8 PV, pre-posed scores, a quantized query; d_c 128/256/512, d_R a
/// multiple of 16 up to 256.
bool cuda_supports(Layout layout, Pv pv, const AttendOptions& options, int64_t dc, int64_t dr);
/// attend on the GPU (options.splits 0: enough parts for a large GPU); the
/// kernel's own milliseconds (the fastest of one run) in compute_ms.
/// Exit 1 naming the CUDA error when the device fails.
void attend_cuda(const PagedView& kv, const float* queries, int64_t heads, int64_t row_begin, int64_t row_end,
                 const AttendOptions& options, float* out, float* lse, double* compute_ms = nullptr);

namespace detail {

/// One (row, part)'s running softmax state and its scratch.
struct PageScratch {
  std::vector<float> c, kr, st, st_chunk, scores, probs, sp;
};

/// Per (row, head) query in kernel form: qc [H, dc], qr [H, dr], and factor
/// [H] = softmax_scale * s_q.
struct QueryBlock {
  const float* qc;
  const float* qr;
  const float* factor;
  int64_t heads;
  bool fp32 = false;  ///< the query parts are plain floats (--q-fp32), not BF16/E4M3 values
};

/// Folds one page of n <= 64 rows into (m, l, acc) for every head.
using PageStep = void (*)(const PagedView& kv, const uint8_t* rows, int64_t n, const QueryBlock& q, Pv pv,
                          bool pre_posed, float* m, float* l, float* acc, PageScratch& scratch);
PageStep page_step_generic();
PageStep page_step_avx2();  ///< null where the build has no AVX2 copy
PageStep page_step_avx512();  ///< null where the build or the CPU has no AVX-512 BF16 (decodes E4M3 in the AVX2 copy's unit)
/// The unit in which a copy's page step decodes E4M3 values (1 or 2^-8); the
/// driver multiplies the query parts that meet codes by its inverse.
float code_unit_avx2();
/// The AVX2 copy's E4M3 rounding of P' (values in [0, 448], n a multiple of
/// 8) and its code decode, for the tests; false where there is no AVX2 copy.
bool round_e4m3_avx2(const float* in, float* out, int64_t n);
/// A copy's query rounding: out = E4M3 (or BF16) values of x / s.
using RoundScaled = void (*)(const float* x, float s, float* out, int64_t n);
RoundScaled round_e4m3_scaled_generic();
RoundScaled round_bf16_scaled_generic();
RoundScaled round_e4m3_scaled_avx2();  ///< null without the AVX2 copy
RoundScaled round_bf16_scaled_avx2();
bool decode_e4m3_avx2(const uint8_t* codes, float* out, int64_t n);

}  // namespace detail

}  // namespace snapmla
