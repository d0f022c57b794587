// serve.cpp - long-output decoding under a KV memory budget: requests with
// short prompts and long outputs share a pool of 64-token pages; a request is
// admitted (first come, first served) when the free pages hold its whole
// prompt + output; every step appends one token to each running sequence,
// quantized on append into its page, then runs the paged decode attention of
// all running sequences at once; finished sequences free their pages.
// Tokens' latents, RoPE keys and queries cycle through pools drawn from the
// deepseek profile, so that drawing them costs no time in the loop.
#include <algorithm>
#include <cmath>
#include <deque>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "snapmla-decode/io.hpp"
#include "snapmla-decode/kernel.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

namespace {

/// Rows and queries drawn once from the deepseek profile (gen's knobs at their defaults).
struct Pools {
  int64_t rows = 4099, queries = 257;  // primes: the cycles do not line up
  std::vector<float> c, kr, q;
};

Pools make_pools(const ServeOptions& o, uint64_t seed) {
  Pools p;
  const GenOptions g;  // the defaults' magnitudes
  nk::Rng r(seed);
  std::vector<double> scale(static_cast<size_t>(o.dc));
  for (double& v : scale) v = g.content_scale * std::exp(g.channel_sigma * r.normal());
  p.c.resize(static_cast<size_t>(p.rows * o.dc));
  p.kr.resize(static_cast<size_t>(p.rows * o.dr));
  const int64_t half = o.dr / 2;
  for (int64_t t = 0; t < p.rows; ++t) {
    for (int64_t j = 0; j < o.dc; ++j) p.c[static_cast<size_t>(t * o.dc + j)] = static_cast<float>(scale[static_cast<size_t>(j)] * r.normal());
    for (int64_t i = 0; i < half; ++i) {
      const bool heavy = i >= half - g.heavy_pairs;
      const double a = heavy ? g.heavy_scale * std::exp(g.heavy_sigma * r.normal()) : 1.0, phase = 2 * M_PI * r.uniform();
      p.kr[static_cast<size_t>(t * o.dr + i)] = static_cast<float>(heavy ? a * std::cos(phase) : r.normal());
      p.kr[static_cast<size_t>(t * o.dr + i + half)] = static_cast<float>(heavy ? a * std::sin(phase) : r.normal());
    }
  }
  p.q.resize(static_cast<size_t>(p.queries * o.heads * (o.dc + o.dr)));
  for (int64_t k = 0; k < p.queries * o.heads; ++k) {
    float* row = p.q.data() + k * (o.dc + o.dr);
    for (int64_t j = 0; j < o.dc; ++j) row[j] = static_cast<float>(g.query_content * r.normal());
    for (int64_t j = 0; j < o.dr; ++j)
      row[o.dc + j] = static_cast<float>(g.query_rope * ((j % half) >= half - g.heavy_pairs ? g.query_heavy : 1.0) * r.normal());
  }
  return p;
}

struct Result {
  Layout layout;
  int64_t row_bytes, pages, steps = 0, generated = 0, peak = 0;
  double seconds = 0, attention_seconds = 0, append_seconds = 0, concurrency_sum = 0;
};

Result run_layout(const ServeOptions& o, Layout layout, const Pools& pools, int threads) {
  Result res;
  res.layout = layout;
  res.row_bytes = row_bytes(layout, o.dc, o.dr);
  res.pages = static_cast<int64_t>(std::floor(o.budget_mib * 1048576.0 / static_cast<double>(kPageTokens * res.row_bytes)));
  const int64_t total = o.prompt + o.output, need = (total + kPageTokens - 1) / kPageTokens;
  if (res.pages < need)
    throw nk::usage_error("--budget-mib " + std::to_string(o.budget_mib) + " holds " + std::to_string(res.pages) + " pages of " +
                          layout_name(layout) + ", fewer than one request's " + std::to_string(need));
  std::vector<uint8_t> pool(static_cast<size_t>(res.pages * kPageTokens * res.row_bytes));
  std::vector<int32_t> free_pages(static_cast<size_t>(res.pages));
  for (int64_t i = 0; i < res.pages; ++i) free_pages[static_cast<size_t>(i)] = static_cast<int32_t>(res.pages - 1 - i);
  struct Seq {
    int64_t id, length = 0;
    std::vector<int32_t> pages;
  };
  std::deque<int64_t> waiting;
  for (int64_t i = 0; i < o.requests; ++i) waiting.push_back(i);
  std::vector<Seq> running;
  auto append = [&](Seq& s) {  // one token of sequence s, quantized into its page
    const int64_t k = (s.id * 7919 + s.length) % pools.rows;
    uint8_t* row = pool.data() + (static_cast<int64_t>(s.pages[static_cast<size_t>(s.length / kPageTokens)]) * kPageTokens + s.length % kPageTokens) * res.row_bytes;
    encode_row(layout, pools.c.data() + k * o.dc, pools.kr.data() + k * o.dr, o.dc, o.dr, row);
    ++s.length;
  };
  AttendOptions ao;
  ao.pv = resolve_pv(layout, "");
  ao.softmax_scale = static_cast<float>(1.0 / std::sqrt(192.0));
  ao.threads = threads;
  std::vector<int32_t> table, lengths;
  std::vector<float> queries, out, lse;
  nk::Progress progress(std::string("serve ") + layout_name(layout), o.requests * o.output);
  const nk::Stopwatch wall;
  while (!waiting.empty() || !running.empty()) {
    // Admission: whole requests while their pages are free (prefill: the prompt's rows appended).
    nk::Stopwatch watch;
    while (!waiting.empty() && static_cast<int64_t>(free_pages.size()) >= need && static_cast<int64_t>(running.size()) < o.max_batch) {
      Seq s;
      s.id = waiting.front();
      waiting.pop_front();
      for (int64_t j = 0; j < need; ++j) s.pages.push_back(free_pages.back()), free_pages.pop_back();
      for (int64_t t = 0; t < o.prompt; ++t) append(s);
      running.push_back(std::move(s));
    }
    // One decode step: append each sequence's new token, then attend over all.
    for (Seq& s : running) append(s);
    res.append_seconds += watch.lap();
    const int64_t n = static_cast<int64_t>(running.size());
    table.assign(static_cast<size_t>(n * need), -1);
    lengths.resize(static_cast<size_t>(n));
    queries.resize(static_cast<size_t>(n * o.heads * (o.dc + o.dr)));
    for (int64_t b = 0; b < n; ++b) {
      const Seq& s = running[static_cast<size_t>(b)];
      std::copy(s.pages.begin(), s.pages.end(), table.begin() + b * need);
      lengths[static_cast<size_t>(b)] = static_cast<int32_t>(s.length);
      const int64_t k = (s.id * 31 + s.length) % pools.queries;
      std::copy_n(pools.q.data() + k * o.heads * (o.dc + o.dr), o.heads * (o.dc + o.dr), queries.data() + b * o.heads * (o.dc + o.dr));
    }
    out.resize(static_cast<size_t>(n * o.heads * o.dc));
    lse.resize(static_cast<size_t>(n * o.heads));
    PagedView v;
    v.layout = layout;
    v.dc = o.dc, v.dr = o.dr, v.row_bytes = res.row_bytes;
    v.pages = pool.data(), v.page_count = res.pages;
    v.block_table = table.data(), v.max_pages = need;
    v.lengths = lengths.data(), v.batch = n;
    attend(v, queries.data(), o.heads, 0, n, ao, out.data(), lse.data());
    res.attention_seconds += watch.lap();
    res.steps += 1;
    res.generated += n;
    res.concurrency_sum += static_cast<double>(n);
    res.peak = std::max(res.peak, n);
    // Finished sequences free their pages.
    for (size_t i = 0; i < running.size();) {
      if (running[i].length >= total) {
        for (int32_t p : running[i].pages) free_pages.push_back(p);
        running[i] = std::move(running.back());
        running.pop_back();
      } else {
        ++i;
      }
    }
    progress.update(res.generated);
  }
  progress.finish();
  res.seconds = wall.seconds();
  return res;
}

}  // namespace

void serve(const ServeOptions& o, const nk::RunEnv& env) {
  if (o.dr % 2 != 0) throw nk::usage_error("--d-r must be even, got " + std::to_string(o.dr));
  std::vector<Layout> layouts;
  for (const std::string& name : o.layouts) layouts.push_back(parse_layout(name, "--layouts"));
  if (layouts.empty()) layouts = {Layout::bf16, Layout::snapmla644};
  for (Layout l : layouts)
    if (l == Layout::flashmla656 && o.dc % kFlashTile != 0) throw nk::usage_error("flashmla656 needs --d-c a multiple of 128");
  if (o.budget_mib * 1048576.0 * 1.2 > nk::h5::available_memory_bytes()) throw nk::usage_error("--budget-mib is more than the memory available");
  const Pools pools = make_pools(o, env.seed);
  std::vector<Result> results;
  for (Layout l : layouts) results.push_back(run_layout(o, l, pools, env.threads));
  double base = 0;
  for (const Result& r : results)
    if (r.layout == Layout::bf16) base = static_cast<double>(r.generated) / r.seconds;
  std::vector<std::vector<std::string>> cells;
  for (const Result& r : results) {
    const double tps = static_cast<double>(r.generated) / r.seconds;
    cells.push_back({layout_name(r.layout), nk::cell(static_cast<long long>(r.row_bytes)), nk::cell(static_cast<long long>(r.pages)),
                     nk::cell(r.concurrency_sum / static_cast<double>(r.steps), "%.1f"), nk::cell(static_cast<long long>(r.peak)),
                     nk::cell(tps, "%.1f"), nk::cell(r.seconds, "%.2f"), nk::cell(r.attention_seconds, "%.2f"), nk::cell(r.append_seconds, "%.2f"),
                     nk::cell(base > 0 ? tps / base : std::nan(""), "%.2f")});
  }
  nk::Table::print(stdout, {"layout", "bytes/token", "pages", "mean batch", "peak batch", "tokens/s", "seconds", "attention s", "append s", "x bf16"},
                   cells, nk::Table::Layout::automatic, {0});
  if (!o.output_file.empty()) {
    nk::h5::Writer w(o.output_file, kServeSchema, o.no_clobber);
    const int64_t n = static_cast<int64_t>(results.size());
    std::vector<std::string> names;
    std::vector<int64_t> bytes, pages, steps, generated, peak;
    std::vector<double> tps, secs, att, app, mean;
    for (const Result& r : results) {
      names.push_back(layout_name(r.layout)), bytes.push_back(r.row_bytes), pages.push_back(r.pages), steps.push_back(r.steps),
          generated.push_back(r.generated), peak.push_back(r.peak), tps.push_back(static_cast<double>(r.generated) / r.seconds),
          secs.push_back(r.seconds), att.push_back(r.attention_seconds), app.push_back(r.append_seconds),
          mean.push_back(r.concurrency_sum / static_cast<double>(r.steps));
    }
    w.write_strings("/table/layout", names, "R");
    w.write("/table/row_bytes", bytes.data(), {n}, "R");
    w.write("/table/pages", pages.data(), {n}, "R");
    w.write("/table/steps", steps.data(), {n}, "R");
    w.write("/table/generated", generated.data(), {n}, "R");
    w.write("/table/peak_batch", peak.data(), {n}, "R");
    w.write("/table/mean_batch", mean.data(), {n}, "R");
    w.write("/table/tokens_per_s", tps.data(), {n}, "R");
    w.write("/table/seconds", secs.data(), {n}, "R");
    w.write("/table/attention_seconds", att.data(), {n}, "R");
    w.write("/table/append_seconds", app.data(), {n}, "R");
    w.attr("/", "budget_mib", o.budget_mib);
    w.attr("/", "requests", o.requests);
    w.attr("/", "prompt", o.prompt);
    w.attr("/", "output", o.output);
    w.attr("/", "heads", o.heads);
    w.attr("/", "threads", static_cast<int64_t>(env.threads));
    w.commit();
  }
}

}  // namespace snapmla
