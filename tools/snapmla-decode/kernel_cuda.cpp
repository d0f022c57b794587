// kernel_cuda.cpp - attend on the GPU (the mla family of libnk-cuda.so):
// the queries prepared on the host exactly as the CPU kernel prepares them
// (prepare_query), handed over as the codes and BF16 bits the MMAs multiply.
#include <algorithm>
#include <cstring>
#include <vector>

#include "nk/error.hpp"
#include "nk/kernels/cuda_call.hpp"
#include "nk/kernels/lowp.hpp"
#include "snapmla-decode/kernel.hpp"

namespace snapmla {

bool cuda_supports(Layout layout, Pv pv, const AttendOptions& o, int64_t dc, int64_t dr) {
  const bool shape = (dc == 128 || dc == 256 || dc == 512) && dr >= 16 && dr <= 256 && dr % 16 == 0;
  if (!shape || o.q_fp32 || !o.pre_posed) return false;
  return (layout == Layout::bf16 && pv == Pv::fp32) || (layout == Layout::snapmla644 && pv == Pv::fp8);
}

void attend_cuda(const PagedView& kv, const float* queries, int64_t heads, int64_t row_begin, int64_t row_end,
                 const AttendOptions& o, float* out, float* lse, double* compute_ms) {
  if (!cuda_supports(kv.layout, o.pv, o, kv.dc, kv.dr))
    throw std::logic_error("attend_cuda: unsupported configuration");
  const int64_t rows = row_end - row_begin, dc = kv.dc, dr = kv.dr, dk = dc + dr;
  if (rows < 1) return;
  const bool fp8 = kv.layout == Layout::snapmla644;
  std::vector<uint8_t> q_content(static_cast<size_t>(rows * heads * dc) * (fp8 ? 1 : 2));
  std::vector<uint16_t> q_rope(static_cast<size_t>(rows * heads * dr));
  std::vector<float> factor(static_cast<size_t>(rows * heads)), qc(static_cast<size_t>(dc)),
      qr(static_cast<size_t>(dr));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t i = r * heads + h;
      const float sq =
          prepare_query(kv.layout, queries + ((row_begin + r) * heads + h) * dk, dc, dr, false, qc.data(), qr.data());
      factor[static_cast<size_t>(i)] = o.softmax_scale * sq;
      for (int64_t e = 0; e < dc; ++e) {
        if (fp8) {
          q_content[static_cast<size_t>(i * dc + e)] =
              nk::kernels::to_e4m3(qc[static_cast<size_t>(e)]);  // exact: qc holds E4M3 values
        } else {
          const uint16_t bits = nk::kernels::to_bf16(qc[static_cast<size_t>(e)]);  // exact: qc holds BF16 values
          std::memcpy(q_content.data() + 2 * (i * dc + e), &bits, 2);
        }
      }
      for (int64_t e = 0; e < dr; ++e)
        q_rope[static_cast<size_t>(i * dr + e)] = nk::kernels::to_bf16(qr[static_cast<size_t>(e)]);
    }
  int64_t most_pages = 1;
  for (int64_t r = row_begin; r < row_end; ++r)
    most_pages = std::max<int64_t>(most_pages, (kv.lengths[r] + kPageTokens - 1) / kPageTokens);
  // Enough CTAs for a large GPU (132 SMs, two each) unless told.
  const int64_t groups = (heads + 15) / 16;
  const int64_t splits = o.splits > 0 ? std::min(o.splits, most_pages)
                                      : std::clamp<int64_t>(264 / std::max<int64_t>(1, rows * groups), 1, most_pages);
  const nk_cuda_mla& api = nk::kernels::cuda_family<nk_cuda_mla>("snapmla-decode attend");
  nk_cuda_timing timing{};
  nk::kernels::cuda_call("snapmla-decode attend", api.decode_f32, kv.pages, static_cast<long>(kv.page_count),
                         static_cast<long>(kv.row_bytes), fp8 ? 1 : 0, static_cast<long>(dc), static_cast<long>(dr),
                         kv.block_table + row_begin * kv.max_pages, static_cast<long>(kv.max_pages),
                         kv.lengths + row_begin, static_cast<long>(rows), q_content.data(), q_rope.data(),
                         factor.data(), static_cast<long>(heads), static_cast<long>(splits), 1, out, lse, &timing);
  if (compute_ms) *compute_ms = timing.compute_ms;
}

}  // namespace snapmla
