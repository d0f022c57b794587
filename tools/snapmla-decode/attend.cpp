// attend.cpp - paged decode attention of a quantized cache (kernel.hpp).
#include <algorithm>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/shard.hpp"
#include "nk/timer.hpp"
#include "snapmla-decode/io.hpp"
#include "snapmla-decode/kernel.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

const char* pv_name(Pv pv) { return pv == Pv::fp8 ? "fp8" : "fp32"; }

Pv resolve_pv(Layout layout, const std::string& requested) {
  const bool coded = token_scaled(layout);
  if (requested.empty()) return coded ? Pv::fp8 : Pv::fp32;
  if (requested == "fp8" && !coded)
    throw nk::usage_error(std::string("--pv fp8 needs a layout whose values are E4M3 codes under a token scale (snapmla644, fp8-naive); ") +
                          layout_name(layout) + " multiplies BF16 values");
  return requested == "fp8" ? Pv::fp8 : Pv::fp32;
}

std::vector<std::pair<Layout, Pv>> parse_layout_specs(const std::vector<std::string>& specs, const std::string& option,
                                                       const std::vector<std::pair<Layout, Pv>>& fallback) {
  if (specs.empty()) return fallback;
  std::vector<std::pair<Layout, Pv>> out;
  for (const std::string& spec : specs) {
    const size_t colon = spec.find(':');
    const Layout layout = parse_layout(spec.substr(0, colon), option);
    const std::string pv = colon == std::string::npos ? "" : spec.substr(colon + 1);
    if (!pv.empty() && pv != "fp8" && pv != "fp32") throw nk::usage_error(option + ": '" + spec + "': the PV mode is fp8 or fp32");
    out.push_back({layout, resolve_pv(layout, pv)});
  }
  return out;
}

void attend_verb(const AttendOptionsCli& o, const nk::RunEnv& env) {
  const nk::h5::File kv_file = nk::h5::File::open(o.input);
  const Paged paged = read_paged(kv_file);
  const nk::h5::File q_file = nk::h5::File::open(o.queries);
  const Queries q = read_queries(q_file, o.softmax_scale);
  if (q.batch != paged.batch)
    throw nk::input_error(q_file.path(), "/q", "batch " + std::to_string(q.batch) + " differs from the cache's " + std::to_string(paged.batch) +
                                                   " (" + kv_file.path() + ")");
  if (q.dim != paged.dc + paged.dr)
    throw nk::input_error(q_file.path(), "/q", "query width " + std::to_string(q.dim) + " is not d_c + d_R = " + std::to_string(paged.dc + paged.dr) +
                                                   " of " + kv_file.path());
  const Pv pv = resolve_pv(paged.layout, o.pv);
  if (o.q_fp32 && paged.layout != Layout::snapmla644) throw nk::usage_error("--q-fp32 applies to snapmla644 only");
  if (o.plain_scores && paged.layout != Layout::snapmla644) throw nk::usage_error("--plain-scores applies to snapmla644 only");
  const auto [begin, end] = nk::shard_range(env.shard, paged.batch);
  AttendOptions ao;
  ao.pv = pv;
  ao.splits = o.splits;
  ao.softmax_scale = static_cast<float>(q.softmax_scale);
  ao.q_fp32 = o.q_fp32;
  ao.pre_posed = !o.plain_scores;
  ao.threads = env.threads;
  const int64_t rows = end - begin, H = q.heads;
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(rows, 0) * H * paged.dc)), lse(static_cast<size_t>(std::max<int64_t>(rows, 0) * H));
  const PagedView view = paged.view();
  const bool gpu = env.cuda() && cuda_supports(paged.layout, pv, ao, paged.dc, paged.dr);
  if (env.cuda() && !gpu)
    spdlog::info("attend: no CUDA path for {} with {} PV{} (the GPU runs bf16 and snapmla644 with fp8 PV): the CPU decodes",
                 layout_name(paged.layout), pv_name(pv), o.q_fp32 || o.plain_scores ? " and these options" : "");
  double best = 0;
  if (gpu) {
    best = 1e30;
    for (int r = 0; r < std::max(1, o.repeats); ++r) {
      double ms = 0;
      attend_cuda(view, q.q.data(), H, begin, end, ao, out.data(), lse.data(), &ms);
      best = std::min(best, ms / 1e3);
    }
  } else {
    best = nk::best_seconds(o.repeats, [&] { attend(view, q.q.data(), H, begin, end, ao, out.data(), lse.data()); });
  }
  int64_t tokens = 0;
  for (int64_t b = begin; b < end; ++b) tokens += paged.lengths[static_cast<size_t>(b)];
  nk::h5::Writer w(o.output, kAttendSchema, o.no_clobber);
  w.write("/out", out.data(), {rows, H, paged.dc}, "B,H,d_c");
  w.attr("/out", "meaning", "latent output (before W_UV)");
  w.write("/lse", lse.data(), {rows, H}, "B,H");
  w.attr("/lse", "meaning", "natural log of the sum of exp of the scaled scores");
  w.attr("/", "layout", layout_name(paged.layout));
  w.attr("/", "pv", pv_name(pv));
  w.attr("/", "softmax_scale", q.softmax_scale);
  w.attr("/", "rows", std::to_string(begin) + ":" + std::to_string(end));
  w.attr("/", "seconds", best);
  w.attr("/", "isa", gpu ? "cuda" : kernel_isa(H));
  w.attr("/", "cache_bytes", static_cast<int64_t>(tokens * paged.row_bytes));
  w.commit();
  spdlog::info("{} ({} PV{}): rows {}..{}, {} heads, {} tokens in {:.3f} ms ({:.2f} GB/s of cache, {} copy)", layout_name(paged.layout),
               pv_name(pv), o.q_fp32 ? ", fp32 query" : "", begin, end, H, tokens, best * 1e3,
               static_cast<double>(tokens * paged.row_bytes) / best / 1e9, gpu ? "cuda" : kernel_isa(H));
}

}  // namespace snapmla
