// speed.cpp - the decode kernel's time per layout on one cache: seconds (the
// fastest of --repeats), decoded tokens per second (B per call), cache bytes
// per second and FLOP/s (2 H (d_c + d_R + d_c) per cached token and head),
// each layout's speed-up over bf16.
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "snapmla-decode/io.hpp"
#include "snapmla-decode/kernel.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

void speed(const SpeedOptions& o, const nk::RunEnv& env) {
  std::vector<std::pair<Layout, Pv>> every;
  for (Layout l : all_layouts()) every.push_back({l, resolve_pv(l, "")});
  const std::vector<std::pair<Layout, Pv>> configs = parse_layout_specs(o.layouts, "--layouts", every);
  const nk::h5::File file = nk::h5::File::open(o.input);
  const Cache cache = read_cache(file);
  const Queries q = read_queries(file, 0);
  if (q.batch != cache.batch || q.dim != cache.dc + cache.dr)
    throw nk::input_error(file.path(), "/q", "shape " + std::to_string(q.batch) + "," + std::to_string(q.heads) + "," + std::to_string(q.dim) +
                                                 " does not fit the cache's B and d_c + d_R");
  const int64_t B = cache.batch, H = q.heads, dc = cache.dc, dr = cache.dr;
  int64_t tokens = 0;
  for (int32_t l : cache.lengths) tokens += l;
  struct Row {
    Layout layout;
    Pv pv;
    int64_t bytes;
    double seconds;
  };
  std::vector<Row> rows;
  std::vector<float> out(static_cast<size_t>(B * H * dc)), lse(static_cast<size_t>(B * H));
  for (const auto& [layout, pv] : configs) {
    if (layout == Layout::flashmla656 && dc % kFlashTile != 0) continue;
    const Paged paged = paginate(cache, layout);
    AttendOptions ao;
    ao.pv = pv;
    ao.splits = o.splits;
    ao.softmax_scale = static_cast<float>(q.softmax_scale);
    ao.threads = env.threads;
    attend(paged.view(), q.q.data(), H, 0, B, ao, out.data(), lse.data());  // warm: pages resident, threads up
    const double s = nk::best_seconds(o.repeats, [&] { attend(paged.view(), q.q.data(), H, 0, B, ao, out.data(), lse.data()); });
    rows.push_back({layout, pv, paged.row_bytes, s});
  }
  double bf16_seconds = 0;
  for (const Row& r : rows)
    if (r.layout == Layout::bf16) bf16_seconds = r.seconds;
  const double flops_per_call = 2.0 * static_cast<double>(H) * static_cast<double>(tokens) * static_cast<double>(dc + dr + dc);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> names, pvs;
  std::vector<int64_t> bytes;
  std::vector<double> secs, tps, gbs, gfl, speedup;
  for (const Row& r : rows) {
    const double bytes_per_s = static_cast<double>(tokens * r.bytes) / r.seconds;
    names.push_back(layout_name(r.layout)), pvs.push_back(pv_name(r.pv)), bytes.push_back(r.bytes), secs.push_back(r.seconds);
    tps.push_back(static_cast<double>(B) / r.seconds), gbs.push_back(bytes_per_s / 1e9), gfl.push_back(flops_per_call / r.seconds / 1e9);
    speedup.push_back(bf16_seconds > 0 ? bf16_seconds / r.seconds : std::nan(""));
    cells.push_back({names.back(), pvs.back(), nk::cell(static_cast<long long>(r.bytes)), nk::cell(r.seconds * 1e3, "%.3f"),
                     nk::cell(tps.back(), "%.1f"), nk::cell(gbs.back(), "%.2f"), nk::cell(gfl.back(), "%.1f"), nk::cell(speedup.back(), "%.2f")});
  }
  nk::Table::print(stdout, {"layout", "pv", "bytes/token", "ms", "tokens/s", "GB/s", "GFLOP/s", "x bf16"}, cells, nk::Table::Layout::automatic, {0, 1});
  if (!o.output.empty()) {
    nk::h5::Writer w(o.output, kSpeedSchema, o.no_clobber);
    const int64_t n = static_cast<int64_t>(rows.size());
    w.write_strings("/table/layout", names, "R");
    w.write_strings("/table/pv", pvs, "R");
    w.write("/table/row_bytes", bytes.data(), {n}, "R");
    w.write("/table/seconds", secs.data(), {n}, "R");
    w.write("/table/tokens_per_s", tps.data(), {n}, "R");
    w.write("/table/gb_per_s", gbs.data(), {n}, "R");
    w.write("/table/gflop_per_s", gfl.data(), {n}, "R");
    w.write("/table/speedup_vs_bf16", speedup.data(), {n}, "R");
    w.allow_nonfinite("/table/speedup_vs_bf16");
    w.attr("/", "batch", B);
    w.attr("/", "heads", H);
    w.attr("/", "cached_tokens", tokens);
    w.attr("/", "threads", static_cast<int64_t>(env.threads));
    w.attr("/", "isa", kernel_isa(H));
    w.commit();
  }
}

}  // namespace snapmla
