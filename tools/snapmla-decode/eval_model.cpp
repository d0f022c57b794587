// eval_model.cpp - eval --model: an MLA checkpoint's perplexity on held-out
// text with its KV cache in each layout. Windows of the model's context are
// cut from the corpus's validation stream (or a text file); each is scored
// teacher-forced, every layer's latent rows quantized on append and every
// query attending through the paged kernel to its own prefix. Rows beside the
// layouts: the unabsorbed float32 forward and absorbed float32 decoding.
#include <cmath>
#include <limits>
#include <memory>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/model.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "snapmla-decode/model_cache.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

namespace {

struct Scored {
  double nats = 0;
  int64_t predicted = 0;
};

/// Teacher-forced negative log-likelihood of every window's next tokens:
/// through 'layout_cache', or absorbed float32 decoding ('absorbed'), or the
/// unabsorbed forward.
Scored score(const nk::lm::Model& model, const std::vector<std::vector<int32_t>>& windows, LayoutMlaCache* layout_cache,
             bool absorbed) {
  const nk::lm::Config& c = model.config();
  const int64_t T = static_cast<int64_t>(windows.front().size()), V = c.vocab;
  nk::lm::Workspace ws(c, {T, T, false});
  std::vector<float> lp(static_cast<size_t>(T));
  const std::vector<int64_t> offsets{0, T};
  const std::vector<int32_t> slots{0};
  Scored s;
  for (size_t w = 0; w < windows.size(); ++w) {
    std::unique_ptr<nk::lm::DenseMlaCache> dense;
    nk::lm::ForwardOptions fo;
    if (layout_cache) layout_cache->clear(), fo.mla = layout_cache;
    if (absorbed) dense = std::make_unique<nk::lm::DenseMlaCache>(c, 1), fo.mla = dense.get();
    const nk::lm::TokenBatch batch{windows[w], offsets, {}, slots};
    model.forward(batch, ws, fo);
    nk::lm::next_token_logprob(ws.logits(), V, batch, lp.data());
    for (int64_t t = 1; t < T; ++t) s.nats -= lp[static_cast<size_t>(t)], ++s.predicted;
  }
  return s;
}

/// Rows a forward computes with the few-row projection kernel (the GEMM,
/// taken from 32 rows on, sums in another order).
constexpr int64_t kCheckChunk = 16;

/// The first window decoded twice through a fresh cache each time: teacher
/// forced in chunks of kCheckChunk tokens (each chunk's rows appended at
/// once, its queries attending together), then one token per forward; the
/// largest logit difference between the two.
template <class MakeCache>
double token_by_token(const nk::lm::Model& model, const std::vector<int32_t>& window, const MakeCache& make_cache) {
  const nk::lm::Config& c = model.config();
  const int64_t T = static_cast<int64_t>(window.size()), V = c.vocab;
  const std::vector<int32_t> slots{0};
  const auto run = [&](int64_t chunk) {
    auto cache = make_cache();
    nk::lm::Workspace ws(c, {chunk, chunk, false});
    std::vector<float> logits(static_cast<size_t>(T * V));
    for (int64_t begin = 0; begin < T; begin += chunk) {
      const int64_t n = std::min(chunk, T - begin);
      const std::vector<int64_t> offsets{0, n};
      nk::lm::ForwardOptions fo;
      fo.mla = cache.get();
      model.forward({std::span<const int32_t>(window.data() + begin, static_cast<size_t>(n)), offsets, {}, slots}, ws,
                    fo);
      std::copy_n(ws.logits(), n * V, logits.begin() + begin * V);
    }
    return logits;
  };
  const std::vector<float> forced = run(kCheckChunk), stepwise = run(1);
  double worst = 0;
  for (size_t i = 0; i < forced.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(forced[i] - stepwise[i])));
  return worst;
}

}  // namespace

void eval_model(const EvalOptions& o, const nk::RunEnv& env) {
  if (!o.text.empty() == !o.corpus.empty()) throw nk::usage_error("eval --model: give exactly one of --corpus, --text");
  const std::vector<std::pair<Layout, Pv>> configs = parse_layout_specs(o.layouts, "--layouts",
                                                                        {{Layout::bf16, Pv::fp32},
                                                                         {Layout::flashmla656, Pv::fp32},
                                                                         {Layout::snapmla644, Pv::fp8},
                                                                         {Layout::snapmla644, Pv::fp32},
                                                                         {Layout::fp8_naive, Pv::fp8}});
  const nk::lm::Checkpoint ck = nk::lm::load_checkpoint(o.model);
  const nk::lm::Config& c = ck.weights.config();
  if (!c.mla())
    throw nk::usage_error("eval: " + o.model + " is not an mla model (train one with nk-lm train --attention mla)");
  if (c.mode != nk::lm::Mode::causal)
    throw nk::usage_error("eval: " + o.model + " is a diffusion model; perplexity needs a causal one");
  const std::vector<std::vector<int32_t>> windows =
      held_out_windows(ck, o.model, o.corpus, o.text, o.windows, o.context, "eval");
  const nk::lm::Model model(ck.weights);
  const int64_t T = static_cast<int64_t>(windows.front().size());
  spdlog::info("eval: {}: {} windows of {} tokens; d_c {}, d_R {}, {} heads, {} layers", o.model, windows.size(), T,
               c.kv_rank, c.rope_dim, c.n_heads, c.n_layers);
  struct Row {
    std::string layout, pv;
    int64_t bytes;
    double nll, ppl, vs_bf16, decode_diff, seconds;
  };
  std::vector<Row> rows;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto add = [&](const std::string& name, const std::string& pv, int64_t bytes, const Scored& s, double diff,
                       double secs) {
    const double nll = s.nats / static_cast<double>(s.predicted);
    rows.push_back({name, pv, bytes, nll, std::exp(nll), nan, diff, secs});
  };
  nk::Progress progress("eval", static_cast<int64_t>(configs.size()) + 2);
  {
    nk::Stopwatch t;
    add("float32", "unabsorbed", 4 * (c.kv_rank + c.rope_dim), score(model, windows, nullptr, false), nan, t.lap());
    progress.update(1);
    const Scored s = score(model, windows, nullptr, true);
    const double secs = t.lap();
    const auto dense = [&] { return std::make_unique<nk::lm::DenseMlaCache>(c, 1); };
    add("float32", "absorbed", 4 * (c.kv_rank + c.rope_dim), s,
        o.check_decode ? token_by_token(model, windows.front(), dense) : nan, secs);
    progress.update(2);
  }
  double c_amax = 0, kr_amax = 0;
  for (const auto& [layout, pv] : configs) {
    LayoutMlaCache cache(c, layout, pv, o.q_fp32, 1, env.threads);
    nk::Stopwatch t;
    const Scored s = score(model, windows, &cache, false);
    const double secs = t.seconds();
    c_amax = cache.c_amax(), kr_amax = cache.kr_amax();
    add(layout_name(layout), pv_name(pv), row_bytes(layout, c.kv_rank, c.rope_dim), s,
        o.check_decode
            ? token_by_token(model, windows.front(),
                             [&] { return std::make_unique<LayoutMlaCache>(c, layout, pv, o.q_fp32, 1, env.threads); })
            : nan,
        secs);
    progress.update(static_cast<int64_t>(rows.size()));
  }
  progress.finish();
  double bf16 = nan;
  for (const Row& r : rows)
    if (r.layout == "bf16") bf16 = r.ppl;
  for (Row& r : rows) r.vs_bf16 = 100.0 * (r.ppl / bf16 - 1.0);
  std::vector<std::vector<std::string>> cells;
  for (const Row& r : rows)
    cells.push_back({r.layout, r.pv, nk::cell(static_cast<long long>(r.bytes)), nk::cell(r.nll, "%.5f"),
                     nk::cell(r.ppl, "%.4f"), std::isnan(r.vs_bf16) ? "-" : nk::cell(r.vs_bf16, "%+.3f%%"),
                     std::isnan(r.decode_diff) ? "-" : nk::cell(r.decode_diff, "%.1e")});
  nk::Table::print(stdout, {"cache", "pv", "bytes/token", "nll", "perplexity", "vs_bf16", "token_by_token"}, cells,
                   nk::Table::Layout::automatic, {0, 1});
  std::printf("the model's own cache: |c| <= %.3g, |k_R| <= %.3g over %zu windows of %lld tokens\n", c_amax, kr_amax,
              windows.size(), static_cast<long long>(T));
  if (!o.output.empty()) {
    nk::h5::Writer w(o.output, kEvalSchema, o.no_clobber);
    std::vector<std::string> names, pvs;
    std::vector<int64_t> bytes;
    std::vector<double> nll, ppl, vs, diff, secs;
    for (const Row& r : rows)
      names.push_back(r.layout), pvs.push_back(r.pv), bytes.push_back(r.bytes), nll.push_back(r.nll),
          ppl.push_back(r.ppl), vs.push_back(r.vs_bf16), diff.push_back(r.decode_diff), secs.push_back(r.seconds);
    const int64_t n = static_cast<int64_t>(rows.size());
    w.write_strings("/table/layout", names, "R");
    w.write_strings("/table/pv", pvs, "R");
    w.write("/table/row_bytes", bytes.data(), {n}, "R");
    w.write("/table/nll", nll.data(), {n}, "R", "nats per token");
    w.write("/table/perplexity", ppl.data(), {n}, "R");
    w.allow_nonfinite("/table/vs_bf16_percent");  // NaN without a bf16 row
    w.write("/table/vs_bf16_percent", vs.data(), {n}, "R");
    w.allow_nonfinite("/table/token_by_token");  // NaN where not checked
    w.write("/table/token_by_token", diff.data(), {n}, "R");
    w.write("/table/seconds", secs.data(), {n}, "R");
    w.attr("/", "model", o.model);
    w.attr("/", "windows", static_cast<int64_t>(windows.size()));
    w.attr("/", "context", T);
    w.attr("/", "c_amax", c_amax);
    w.attr("/", "kr_amax", kr_amax);
    w.commit();
  }
}

}  // namespace snapmla
