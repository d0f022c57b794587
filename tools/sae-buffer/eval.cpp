// eval.cpp - the eval verb: an SAE on held-out activations.
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "sae-buffer/metrics.hpp"
#include "sae-buffer/probe.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace sb {

namespace {

Matrix<float> read_dictionary(const std::string& path, int64_t dim) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require("/truth/dictionary");
  const auto d = f.read_matrix<float>("/truth/dictionary");
  if (d.cols() != dim)
    throw nk::input_error(path, "/truth/dictionary",
                          "features of width " + std::to_string(d.cols()) + ", the SAE's is " + std::to_string(dim));
  if (d.rows() < 1) throw nk::input_error(path, "/truth/dictionary", "holds no features");
  if (!d.allFinite()) throw nk::input_error(path, "/truth/dictionary", "holds NaN or Inf");
  return d;
}

}  // namespace

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  const Sae sae = read_sae(o.input);
  const Activations acts = Activations::open(o.acts, o.hook);
  if (acts.dim() != sae.dim())
    throw nk::input_error(o.acts, acts.dataset(),
                          "activations of width " + std::to_string(acts.dim()) + ", the SAE '" + o.input + "' has width " +
                              std::to_string(sae.dim()));
  const int64_t rows = o.rows > 0 ? std::min(o.rows, acts.stored_rows()) : acts.stored_rows();
  const Matrix<float> x = acts.read_range(0, rows);
  CodesT<float> codes;
  const bool judged = !o.judge.command.empty();
  if (judged && o.judge.model.empty()) throw nk::usage_error("--judge-cmd needs --model (the tokenizer that made the capture)");
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets;
  if (judged) {
    tokens = acts.tokens();
    if (tokens.empty()) throw nk::input_error(o.acts, "/capture/tokens", "missing: --judge-cmd needs an nk-lm capture (token contexts)");
    offsets = acts.row_offsets();
    tokens.resize(static_cast<size_t>(rows));
    while (offsets.size() > 1 && offsets[offsets.size() - 2] >= rows) offsets.pop_back();
    offsets.back() = rows;
  }
  const Reconstruction rec = reconstruct(sae, x, o.labels.empty() && !judged ? nullptr : &codes);

  nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
  out.attr("/", "ev", rec.ev);
  out.attr("/", "mse", rec.mse);
  out.attr("/", "l0", rec.l0);
  out.attr("/", "dead_fraction", rec.dead_fraction);
  out.attr("/", "rows", rows);
  out.attr("/", "acts", o.acts);
  std::string extra;
  if (!o.truth.empty()) {
    const Recovery r = recovery(sae, read_dictionary(o.truth, sae.dim()));
    out.attr("/", "mmcs", r.mmcs);
    out.attr("/", "recovered", r.recovered);
    out.write("/eval/best_cosine", r.best.data(), {static_cast<int64_t>(r.best.size())}, "F");
    extra += fmt::format(", mmcs {:.4f}, recovered {:.3f}", r.mmcs, r.recovered);
  }
  if (!o.labels.empty()) {
    const TokenLabels labels = read_labels(o.labels, rows);
    const ProbeScores p = score_probes(prepare_probes(x, labels, env.seed), codes, sae.latents());
    out.attr("/", "probe_f1_k1", p.f1_k1);
    out.attr("/", "probe_f1_k5", p.f1_k5);
    out.attr("/", "probe_f1_raw", p.f1_raw);
    out.attr("/", "probe_tasks", p.tasks);
    out.attr("/", "absorption", p.absorption);
    out.attr("/", "absorption_letters", p.letters);
    extra += fmt::format(", probe F1 k=1 {:.3f} k=5 {:.3f} raw {:.3f}, absorption {:.3f}", p.f1_k1, p.f1_k5, p.f1_raw,
                         p.absorption);
  }
  if (judged) {
    const JudgeScores j = judge_latents(o.judge, tokens, offsets, codes, sae.latents(), env.seed);
    const int64_t count = static_cast<int64_t>(j.latent.size());
    out.write("/eval/autointerp/latent", j.latent.data(), {count}, "J");
    out.write("/eval/autointerp/score", j.score.data(), {count}, "J");
    out.attr("/", "autointerp_score", j.mean);
    out.attr("/", "autointerp_latents", count);
    extra += fmt::format(", autointerp {:.3f} over {} latents", j.mean, count);
  }
  out.commit();
  spdlog::info("eval: {} rows: ev {:.4f}, mse {:.4g}, L0 {:.2f}, dead {:.3f}{}", rows, rec.ev, rec.mse, rec.l0,
               rec.dead_fraction, extra);
}

}  // namespace sb
