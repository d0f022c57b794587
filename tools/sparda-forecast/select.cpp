// select.cpp - the blocks each GQA group's query reads, by the selector (the
// layer's own queries) or by the Forecast (the previous layer's input).
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/progress.hpp"
#include "sparda-forecast/forecast.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

void select(const SelectOptions& o, const nk::RunEnv&) {
  const Trace trace = Trace::open(o.input);
  require_selector(trace, o.selector);
  const bool by_forecast = o.by == "forecast", by_infinigen = o.by == "infinigen";
  if (by_forecast && o.forecast.empty())
    throw nk::usage_error("--by forecast needs --forecast FILE (sparda-forecast train)");
  if (!by_forecast && !o.forecast.empty()) throw nk::usage_error("--forecast applies to --by forecast");
  const Forecast fc = by_forecast ? Forecast::read(o.forecast, trace) : Forecast{};
  nk::h5::Writer out(o.output, kSelectionSchema, o.no_clobber);
  const int64_t S = trace.sequences(), Hkv = trace.kv_heads, K = o.selector.width();
  nk::Progress progress("select", trace.layers * S);
  for (int64_t m = 0; m < trace.layers; ++m) {
    const Target tg = load_target(trace, m, o.selector.block, !by_forecast);
    Speculator sp;
    if (by_infinigen) sp = make_speculator(trace, tg, o.rank);
    const Scorer by{by_forecast ? &fc.wf[m] : nullptr, by_infinigen ? &sp : nullptr};
    std::vector<int32_t> blocks;
    for (int64_t s = 0; s < S; ++s) {
      const std::vector<int32_t> one = select_layer(trace, tg, o.selector, by, s, 0, trace.length(s));
      blocks.insert(blocks.end(), one.begin(), one.end());
      progress.update(m * S + s + 1);
    }
    char name[40];
    std::snprintf(name, sizeof name, "/layer_%02lld/blocks", static_cast<long long>(m));
    out.write(name, trace.to_layout(blocks, Hkv, K).data(), trace.output_shape(Hkv, K), trace.output_dims("K"));
  }
  if (trace.layout == Trace::Layout::packed)
    out.write("/offsets", trace.offsets.data(), {trace.sequences() + 1}, "R+1");
  progress.finish();
  out.attr("/", "by", o.by);
  if (by_infinigen) out.attr("/", "rank", std::min(o.rank, trace.head_dim));
  write_selector_attrs(out, o.selector);
  out.attr("/", "layers", trace.layers);
  out.commit();
}

}  // namespace sparda
