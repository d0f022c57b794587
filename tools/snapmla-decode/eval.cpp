// eval.cpp - each layout's decode output against float64 attention over the
// float cache it was quantized from: relative L2 error of the latent outputs,
// their mean cosine, the largest error relative to the largest output, and
// the largest log-sum-exp error.
#include <cmath>
#include <limits>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/kernels/attention.hpp"
#include "nk/log.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "snapmla-decode/io.hpp"
#include "snapmla-decode/kernel.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  if (!o.model.empty()) {
    if (o.input != "-") throw nk::usage_error("eval: --model scores the model's own cache; -i (a float cache) goes without it");
    return eval_model(o, env);
  }
  if (!o.corpus.empty() || !o.text.empty() || o.check_decode)
    throw nk::usage_error("eval: --corpus, --text and --check-decode go with --model");
  const std::vector<std::pair<Layout, Pv>> configs =
      parse_layout_specs(o.layouts, "--layouts",
                         {{Layout::bf16, Pv::fp32}, {Layout::flashmla656, Pv::fp32}, {Layout::snapmla644, Pv::fp8},
                          {Layout::snapmla644, Pv::fp32}, {Layout::fp8_naive, Pv::fp8}});
  const nk::h5::File file = nk::h5::File::open(o.input);
  const Cache cache = read_cache(file);
  const Queries q = read_queries(file, 0);
  if (q.batch != cache.batch) throw nk::input_error(file.path(), "/q", "batch " + std::to_string(q.batch) + " differs from /ckv's " + std::to_string(cache.batch));
  if (q.dim != cache.dc + cache.dr)
    throw nk::input_error(file.path(), "/q", "query width " + std::to_string(q.dim) + " is not d_c + d_R = " + std::to_string(cache.dc + cache.dr));
  const int64_t B = cache.batch, H = q.heads, dc = cache.dc, dr = cache.dr, dk = dc + dr;
  // The float64 reference over the unquantized cache.
  std::vector<double> ref(static_cast<size_t>(B * H * dc)), ref_lse(static_cast<size_t>(B * H));
#pragma omp parallel for schedule(dynamic, 1) num_threads(env.threads)
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = cache.lengths[static_cast<size_t>(b)];
    std::vector<float> keys(static_cast<size_t>(n * dk));
    for (int64_t t = 0; t < n; ++t) {
      std::copy_n(cache.ckv.data() + (b * cache.tokens + t) * dc, dc, keys.data() + t * dk);
      std::copy_n(cache.kpe.data() + (b * cache.tokens + t) * dr, dr, keys.data() + t * dk + dc);
    }
    std::vector<double> logits(static_cast<size_t>(n));
    for (int64_t h = 0; h < H; ++h)
      ref_lse[static_cast<size_t>(b * H + h)] =
          nk::kernels::attention_row(q.q.data() + (b * H + h) * dk, keys.data(), cache.ckv.data() + b * cache.tokens * dc, dk, dc,
                                     q.softmax_scale, nullptr, n, logits.data(), ref.data() + (b * H + h) * dc);
  }
  double ref_max = 0, ref_norm2 = 0;
  for (double v : ref) ref_max = std::max(ref_max, std::fabs(v)), ref_norm2 += v * v;
  struct Row {
    std::string layout, pv;
    int64_t bytes;
    double rel_l2, cosine, max_rel, lse_err, seconds;
  };
  std::vector<Row> rows;
  for (const auto& [layout, pv] : configs) {
    const Paged paged = paginate(cache, layout);
    AttendOptions ao;
    ao.pv = pv;
    ao.splits = o.splits;
    ao.softmax_scale = static_cast<float>(q.softmax_scale);
    ao.threads = env.threads;
    ao.q_fp32 = o.q_fp32 && layout == Layout::snapmla644;
    std::vector<float> out(static_cast<size_t>(B * H * dc)), lse(static_cast<size_t>(B * H));
    const double seconds = nk::best_seconds(1, [&] { attend(paged.view(), q.q.data(), H, 0, B, ao, out.data(), lse.data()); });
    double err2 = 0, worst = 0, lse_err = 0, cos_sum = 0;
    for (int64_t i = 0; i < B * H; ++i) {
      double dot = 0, na = 0, nb = 0;
      for (int64_t d = 0; d < dc; ++d) {
        const double a = out[static_cast<size_t>(i * dc + d)], r = ref[static_cast<size_t>(i * dc + d)];
        err2 += (a - r) * (a - r);
        worst = std::max(worst, std::fabs(a - r));
        dot += a * r, na += a * a, nb += r * r;
      }
      cos_sum += (na > 0 && nb > 0) ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
      lse_err = std::max(lse_err, std::fabs(lse[static_cast<size_t>(i)] - ref_lse[static_cast<size_t>(i)]));
    }
    rows.push_back({layout_name(layout), pv_name(pv), paged.row_bytes, ref_norm2 > 0 ? std::sqrt(err2 / ref_norm2) : std::sqrt(err2),
                    cos_sum / static_cast<double>(B * H), ref_max > 0 ? worst / ref_max : worst, lse_err, seconds});
  }
  std::vector<std::vector<std::string>> cells;
  for (const Row& r : rows)
    cells.push_back({r.layout, r.pv, nk::cell(static_cast<long long>(r.bytes)), nk::cell(r.rel_l2, "%.3e"), nk::cell(r.cosine, "%.6f"),
                     nk::cell(r.max_rel, "%.3e"), nk::cell(r.lse_err, "%.3e")});
  nk::Table::print(stdout, {"layout", "pv", "bytes/token", "rel_l2", "cosine", "max_rel", "lse_abs"}, cells, nk::Table::Layout::automatic, {0, 1});
  if (!o.output.empty()) {
    nk::h5::Writer w(o.output, kEvalSchema, o.no_clobber);
    std::vector<std::string> names, pvs;
    std::vector<int64_t> bytes;
    std::vector<double> l2, cosv, mx, le, secs;
    for (const Row& r : rows) {
      names.push_back(r.layout), pvs.push_back(r.pv), bytes.push_back(r.bytes), l2.push_back(r.rel_l2), cosv.push_back(r.cosine),
          mx.push_back(r.max_rel), le.push_back(r.lse_err), secs.push_back(r.seconds);
    }
    const int64_t n = static_cast<int64_t>(rows.size());
    w.write_strings("/table/layout", names, "R");
    w.write_strings("/table/pv", pvs, "R");
    w.write("/table/row_bytes", bytes.data(), {n}, "R");
    w.write("/table/rel_l2", l2.data(), {n}, "R");
    w.write("/table/cosine", cosv.data(), {n}, "R");
    w.write("/table/max_rel", mx.data(), {n}, "R");
    w.write("/table/lse_abs", le.data(), {n}, "R");
    w.write("/table/seconds", secs.data(), {n}, "R");
    w.attr("/", "batch", B);
    w.attr("/", "heads", H);
    int64_t longest = 0;
    for (int32_t l : cache.lengths) longest = std::max<int64_t>(longest, l);
    w.attr("/", "tokens", longest);
    w.attr("/", "reference", "float64 attention over the float32 cache and queries");
    w.commit();
  }
}

}  // namespace snapmla
