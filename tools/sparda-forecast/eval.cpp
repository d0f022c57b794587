// eval.cpp - how well the Forecast's blocks stand in for the selector's, per
// layer. For each GQA group and query t in --positions with more non-forced
// complete blocks than --topk: recall = |F n S| / |S| over the non-forced
// blocks (F the Forecast's top-k, S the selector's), and coverage = the
// dense attention mass (causal softmax over all keys <= t, averaged over the
// group's heads) inside F and the forced blocks over that inside S and the
// forced blocks. Both are averaged over the counted (group, query) pairs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "sparda-forecast/forecast.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  if (!o.model.empty()) {
    if (!env.shard.whole()) throw nk::usage_error("eval: --shard splits a trace's sequences; eval --model runs whole");
    return eval_model(o, env);
  }
  const Trace trace = Trace::open(o.input);
  require_selector(trace, o.selector);
  const auto [begin, end_arg] = parse_positions(o.positions, trace.longest());
  const bool infinigen = o.by == "infinigen";
  if (!infinigen && o.forecast.empty())
    throw nk::usage_error("eval --by forecast needs --forecast FILE (sparda-forecast train)");
  if (infinigen && !o.forecast.empty()) throw nk::usage_error("--forecast applies to --by forecast");
  const Forecast fc = infinigen ? Forecast{} : Forecast::read(o.forecast, trace);
  nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
  const nk::lm::BlockSelectorConfig sel = o.selector;
  const int64_t L = trace.layers, S = trace.sequences(), Hq = trace.heads, Hkv = trace.kv_heads, G = trace.group(),
                d = trace.head_dim, K = sel.width();
  // --shard: this run's sequences; per-sequence results merge by concatenation (nk-data merge).
  const auto [s0, s1] = nk::shard_range(env.shard, S);
  const int64_t Sn = s1 - s0;
  std::vector<double> recall(static_cast<size_t>(L)), coverage(static_cast<size_t>(L));
  std::vector<int64_t> counted(static_cast<size_t>(L));
  std::vector<double> seq_recall(static_cast<size_t>(Sn * L), std::nan("")), seq_coverage(seq_recall);
  std::vector<int64_t> seq_queries(static_cast<size_t>(Sn * L), 0);
  nk::Progress progress("eval", L * Sn);
  for (int64_t m = 0; m < L; ++m) {
    const Target tg = load_target(trace, m, sel.block, true, true);
    Speculator sp;
    if (infinigen) sp = make_speculator(trace, tg, o.rank);
    const Scorer by{infinigen ? nullptr : &fc.wf[m], infinigen ? &sp : nullptr};
    double rtotal = 0, ctotal = 0;
    int64_t ctotal_count = 0;
    for (int64_t seq = s0; seq < s1; ++seq) {
      const int64_t T = trace.length(seq), end = std::min(end_arg, T), n = end - begin;
      progress.update(m * Sn + seq - s0 + 1);
      if (n <= 0) continue;
      double rsum = 0, csum = 0;
      int64_t count = 0;
      const std::vector<int32_t> Sel = select_layer(trace, tg, sel, Scorer{}, seq, begin, end);
      const std::vector<int32_t> F = select_layer(trace, tg, sel, by, seq, begin, end);
      const float* q = tg.q.data() + Hq * trace.offsets[seq] * d;
      const float* k = tg.k.data() + Hkv * trace.offsets[seq] * d;
#pragma omp parallel reduction(+ : rsum, csum, count)
      {
        std::vector<double> mass(static_cast<size_t>(T / sel.block + 1)), score(static_cast<size_t>(T));
        std::vector<char> in_s(mass.size()), in_f(mass.size());
        std::vector<int32_t> forced(static_cast<size_t>(K));
#pragma omp for collapse(2) schedule(dynamic, 16)
        for (int64_t g = 0; g < Hkv; ++g)
          for (int64_t t = begin; t < end; ++t) {
            if (sel.free_candidates(t) <= sel.topk) continue;
            const int32_t* s = Sel.data() + (g * n + t - begin) * K;
            const int32_t* f = F.data() + (g * n + t - begin) * K;
            const int64_t own = t / sel.block;
            std::fill(in_s.begin(), in_s.begin() + own + 1, 0);
            std::fill(in_f.begin(), in_f.begin() + own + 1, 0);
            for (int64_t e = 0; e < K; ++e) {
              if (s[e] >= 0) in_s[static_cast<size_t>(s[e])] = 1;
              if (f[e] >= 0) in_f[static_cast<size_t>(f[e])] = 1;
            }
            // Forced blocks come first and are the same in both: recall counts the rest.
            const int64_t nf = nk::lm::forced_blocks(sel, t, forced.data());
            int64_t hits = 0;
            for (int64_t e = nf; e < K; ++e)
              if (s[e] >= 0 && in_f[static_cast<size_t>(s[e])]) ++hits;
            rsum += static_cast<double>(hits) / static_cast<double>(sel.topk);
            // Dense attention mass per block, the group's mean.
            std::fill(mass.begin(), mass.begin() + own + 1, 0.0);
            for (int64_t h = g * G; h < (g + 1) * G; ++h) {
              const float* qt = q + (h * T + t) * d;
              double most = -std::numeric_limits<double>::infinity();
              for (int64_t u = 0; u <= t; ++u) {
                double dot = 0;
                for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(qt[i]) * k[(g * T + u) * d + i];
                score[static_cast<size_t>(u)] = dot / std::sqrt(static_cast<double>(d));
                most = std::max(most, score[static_cast<size_t>(u)]);
              }
              double sum = 0;
              for (int64_t u = 0; u <= t; ++u)
                sum += (score[static_cast<size_t>(u)] = std::exp(score[static_cast<size_t>(u)] - most));
              for (int64_t u = 0; u <= t; ++u)
                mass[static_cast<size_t>(u / sel.block)] +=
                    score[static_cast<size_t>(u)] / sum / static_cast<double>(G);
            }
            double ms = 0, mf = 0;
            for (int64_t j = 0; j <= own; ++j) {
              if (in_s[static_cast<size_t>(j)]) ms += mass[static_cast<size_t>(j)];
              if (in_f[static_cast<size_t>(j)]) mf += mass[static_cast<size_t>(j)];
            }
            csum += ms > 0 ? mf / ms : 1.0;
            ++count;
          }
      }
      const size_t at = static_cast<size_t>((seq - s0) * L + m);
      seq_queries[at] = count;
      if (count) seq_recall[at] = rsum / static_cast<double>(count), seq_coverage[at] = csum / static_cast<double>(count);
      rtotal += rsum, ctotal += csum, ctotal_count += count;
    }
    counted[static_cast<size_t>(m)] = ctotal_count;
    recall[static_cast<size_t>(m)] = ctotal_count ? rtotal / static_cast<double>(ctotal_count) : std::nan("");
    coverage[static_cast<size_t>(m)] = ctotal_count ? ctotal / static_cast<double>(ctotal_count) : std::nan("");
  }
  progress.finish();
  std::vector<int64_t> index(static_cast<size_t>(Sn));
  for (int64_t i = 0; i < Sn; ++i) index[static_cast<size_t>(i)] = s0 + i;
  out.allow_nonfinite("/sequences/recall");
  out.allow_nonfinite("/sequences/coverage");
  out.write("/sequences/index", index.data(), {Sn}, "S");
  out.write("/sequences/recall", seq_recall.data(), {Sn, L}, "S,L");
  out.write("/sequences/coverage", seq_coverage.data(), {Sn, L}, "S,L");
  out.write("/sequences/queries", seq_queries.data(), {Sn, L}, "S,L");
  // A shard's means would not merge: a sharded run writes the per-sequence results only.
  if (env.shard.whole()) {
    out.allow_nonfinite("/recall");
    out.allow_nonfinite("/coverage");
    out.write("/recall", recall.data(), {L}, "L");
    out.write("/coverage", coverage.data(), {L}, "L");
    out.write("/queries", counted.data(), {L}, "L");
  }
  double rm = 0, cm = 0;
  int64_t used = 0;
  for (int64_t m = 0; m < L; ++m)
    if (counted[static_cast<size_t>(m)])
      rm += recall[static_cast<size_t>(m)], cm += coverage[static_cast<size_t>(m)], ++used;
  if (env.shard.whole()) {
    out.attr("/", "mean_recall", used ? rm / static_cast<double>(used) : std::nan(""));
    out.attr("/", "mean_coverage", used ? cm / static_cast<double>(used) : std::nan(""));
  }
  out.attr("/", "by", o.by);
  if (infinigen) out.attr("/", "rank", std::min(o.rank, d));
  out.attr("/", "positions", std::to_string(begin) + ":" + std::to_string(end_arg));
  write_selector_attrs(out, sel);
  out.commit();
  if (o.output != "-") {
    std::cout << "layer\trecall\tcoverage\tqueries\n";
    for (int64_t m = 0; m < L; ++m) {
      char line[128];
      std::snprintf(line, sizeof line, "%lld\t%.4f\t%.4f\t%lld\n", static_cast<long long>(m),
                    recall[static_cast<size_t>(m)], coverage[static_cast<size_t>(m)],
                    static_cast<long long>(counted[static_cast<size_t>(m)]));
      std::cout << line;
    }
  }
}

}  // namespace sparda
