// verbs.cpp - tofu, finetune, select, eval and run: files in, files out.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/text.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "shred-unlearn/shred.hpp"

namespace shred {

namespace {

/// Sequences of the rows of /qa, one per row.
std::vector<Sequence> rows_to_sequences(const LoadedModel& m, const Tofu& t, const std::vector<int64_t>& rows) {
  return qa_sequences(m.tokenizer(), t.qa, rows, m.config().max_seq, t.path, "/qa");
}

}  // namespace

void check_output(const std::string& path, bool no_clobber) {
  if (no_clobber && path != "-" && std::filesystem::exists(path))
    throw nk::io_error(path, "exists, and --no-clobber was given");
}

Tofu open_tofu(const std::string& path) {
  return read_tofu(path);
}

void tofu(const TofuOptions& o, const nk::RunEnv& env) {
  TofuSpec spec = o.spec;
  spec.seed = env.seed;
  const Tofu t = o.from_jsonl.empty() ? generate_tofu(spec) : read_tofu_jsonl(o.from_jsonl);
  write_tofu(t, o.output, o.no_clobber);
  spdlog::info("tofu: {} authors, {} QA rows, {} world facts; forget05 {} rows, holdout {} rows", t.authors.size(),
               t.qa.size(), t.world.size(), t.splits.count("forget05") ? t.splits.at("forget05").size() : 0,
               t.splits.count("holdout") ? t.splits.at("holdout").size() : 0);
}

void finetune_verb(const FinetuneOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  LoadedModel m = load_model(o.model);
  const Tofu t = open_tofu(o.input);
  std::vector<char> skip(static_cast<size_t>(t.qa.size()), 0);
  if (t.splits.count("holdout"))
    for (int64_t r : t.splits.at("holdout")) skip[static_cast<size_t>(r)] = 1;
  if (!o.exclude.empty())
    for (int64_t r : t.split(o.exclude)) skip[static_cast<size_t>(r)] = 1;
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < t.qa.size(); ++r)
    if (!skip[static_cast<size_t>(r)]) rows.push_back(r);
  std::vector<Sequence> data = rows_to_sequences(m, t, rows);
  int64_t bios = 0;
  for (int64_t a : t.authors_of(rows)) {
    if (t.bios[static_cast<size_t>(a)].empty()) continue;
    data.push_back(text_sequence(m.tokenizer(), t.bios[static_cast<size_t>(a)], m.config().max_seq));
    ++bios;
  }
  if (o.replay_world > 0) {
    const std::set<std::string> exclude(t.world.question.begin(), t.world.question.end());
    const QaSet replay = wordnet_qa(o.wordnet, o.replay_world, env.seed ^ 0x5e71a7ull, exclude);
    std::vector<int64_t> all(static_cast<size_t>(replay.size()));
    std::iota(all.begin(), all.end(), 0);
    const std::vector<Sequence> r = qa_sequences(m.tokenizer(), replay, all, m.config().max_seq, "WordNet", "replay");
    data.insert(data.end(), r.begin(), r.end());
  }
  // General text for the replay windows: the fortunes nk-lm's corpus trains on.
  std::vector<int32_t> general;
  if (o.config.replay_windows > 0) general = nk::lm::replay_stream(m.tokenizer());
  FinetuneConfig c = o.config;
  c.seed = env.seed;
  spdlog::info(
      "finetune: {} QA rows and {} biographies{}, {} WordNet QA; {} epochs of batch {}, {} replay windows of {} tokens "
      "a step",
      rows.size(), bios, o.exclude.empty() ? "" : " (without " + o.exclude + ": the retain model)", o.replay_world,
      c.epochs, c.batch, c.replay_windows, c.replay_length);
  nk::Progress progress("finetune", c.epochs);
  nk::lm::ParameterStore& w = m.checkpoint.weights;
  finetune(w, data, general, m.tokenizer().bos(), c, [&](int64_t epoch, double loss) {
    progress.update(epoch);
    spdlog::debug("finetune: epoch {} loss {:.4f}", epoch, loss);
    if (epoch == c.epochs) spdlog::info("finetune: last epoch's mean answer loss {:.4f}", loss);
  });
  progress.finish();
  nk::lm::save_checkpoint(o.output, w, &m.tokenizer(), nullptr, nk::lm::StoreAs::f32);
}

void select_verb(const SelectOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  const LoadedModel m = load_model(o.model);
  const Tofu t = open_tofu(o.input);
  (void)env;
  SelectConfig c = o.config;
  parse_demote(o.demote, c);
  const std::vector<Sequence> seqs = rows_to_sequences(m, t, t.split(o.split));
  const nk::lm::Model model(m.checkpoint.weights);
  const Selection s = select(model, seqs, c);
  nk::h5::Writer w(o.output, kSelectSchema, o.no_clobber);
  w.write("/tokens", s.tokens.data(), {s.N, s.T}, "N,T");
  w.write("/answer_start", s.answer_start.data(), {s.N}, "N");
  w.allow_nonfinite("/logprob");
  w.write("/logprob", s.logprob.data(), {s.N, s.T}, "N,T");
  w.write("/forget_mask", s.forget_mask.data(), {s.N, s.T}, "N,T");
  w.write("/support", s.support.data(), {s.N, s.T, s.K}, "N,T,K");
  w.write("/support_logits", s.support_logits.data(), {s.N, s.T, s.K}, "N,T,K");
  w.write("/target", s.target.data(), {s.N, s.T, s.K}, "N,T,K");
  const std::vector<int64_t>& rows = t.split(o.split);
  w.write("/rows", rows.data(), {static_cast<int64_t>(rows.size())}, "N");
  w.attr("/", "split", o.split);
  w.attr("/", "percent", c.percent);
  w.attr("/", "topk", c.topk);
  w.attr("/", "skip_tokens", c.skip);
  w.attr("/", "demote", o.demote);
  w.attr("/", "margin", c.margin);
  w.attr("/", "coverage_mean", s.coverage_mean);
  w.attr("/", "coverage_min", s.coverage_min);
  w.attr("/", "forget_positions", s.forget_positions);
  w.attr("/", "benign_positions", s.benign_positions);
  w.attr("/", "model", o.model);
  w.commit();
  spdlog::info(
      "select: {} instances, {} forget and {} benign positions; top-{} support holds {:.2f}% of the mass (min {:.2f}%)",
      s.N, s.forget_positions, s.benign_positions, s.K, 100 * s.coverage_mean, 100 * s.coverage_min);
}

void eval_verb(const EvalOptions& o, const nk::RunEnv& env) {
  (void)env;
  check_output(o.output, o.no_clobber);
  const LoadedModel m = load_model(o.model);
  const Tofu t = open_tofu(o.input);
  const Reference ref = o.reference.empty() ? Reference{} : read_reference(o.reference);
  const nk::lm::Model model(m.checkpoint.weights);
  const EvalResult r =
      evaluate(model, m.tokenizer(), t, o.config, ref, general_text(o.config.ppl_text, o.config.ppl_docs));
  nk::h5::Writer w(o.output, kEvalSchema, o.no_clobber);
  write_eval(w, r);
  w.attr("/", "split", o.config.split);
  w.attr("/", "model", o.model);
  w.commit();
  spdlog::info(
      "eval: forget ROUGE-L {:.3f} prob {:.3f}; retain prob {:.3f}; utility {:.4f}; forget quality {:.3g}; "
      "MIA AUC {:.3f}; privleak {:.3f}; verbmem {:.3f}; ppl {:.2f}",
      r.forget_rouge(), r.forget_prob(), r.retain_prob(), r.model_utility, r.forget_quality, r.mia_auc_mink, r.privleak,
      r.verbmem, r.ppl_general);
}

void run_verb(const RunOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  if (!o.curve.empty()) check_output(o.curve, o.no_clobber);
  if (o.eval_every > 0 && o.curve.empty()) throw nk::usage_error("run: --eval-every writes a curve: give --curve FILE");
  LoadedModel m = load_model(o.model);
  const Tofu t = open_tofu(o.input);
  UnlearnConfig c = o.config;
  c.method = parse_method(o.method);
  c.seed = env.seed;
  c.select.seed = env.seed;
  parse_demote(o.demote, c.select);
  // SHRED's function receives the forget instances only.
  std::vector<Sequence> forget = rows_to_sequences(m, t, t.split(o.split));
  std::vector<Sequence> retain;
  if (needs_retain(c.method)) {
    const std::vector<int64_t> rows = t.retain_rows(o.split);
    if (rows.empty())
      throw nk::input_error(t.path, "/splits/" + o.split,
                            "leaves no retain rows (with holdout), and --method " + o.method + " needs them");
    retain = rows_to_sequences(m, t, rows);
  }
  const Reference ref = o.reference.empty() ? Reference{} : read_reference(o.reference);
  std::vector<std::string> general;
  if (o.eval_every > 0) general = general_text(o.eval.ppl_text, o.eval.ppl_docs);
  nk::lm::ParameterStore& weights = m.checkpoint.weights;
  Unlearner un(weights, std::move(forget), std::move(retain), c);
  if (is_shred(c.method))
    spdlog::info("run: {} on {} ({} instances): {} forget and {} benign positions, top-{} mass {:.2f}%", o.method,
                 o.split, un.selection().N, un.selection().forget_positions, un.selection().benign_positions,
                 un.selection().K, 100 * un.selection().coverage_mean);
  std::vector<double> cs, cq, cd, cu, cr, cp, crp, cl, ca, cv, cg, ct, closs;
  const nk::lm::Model model(weights);
  EvalConfig ec = o.eval;
  ec.split = o.split;
  const auto record = [&](int64_t step, double loss, double seconds) {
    const EvalResult r = evaluate(model, m.tokenizer(), t, ec, ref, general);
    cs.push_back(static_cast<double>(step)), cq.push_back(r.forget_quality), cd.push_back(r.forget_ks_d);
    cu.push_back(r.model_utility), cr.push_back(r.forget_rouge()), cp.push_back(r.forget_prob());
    crp.push_back(r.retain_prob()), ca.push_back(r.mia_auc_mink), cl.push_back(r.privleak), cv.push_back(r.verbmem);
    cg.push_back(r.ppl_general), ct.push_back(seconds), closs.push_back(loss);
    spdlog::info("run: step {} forget ROUGE-L {:.3f} prob {:.3f}, utility {:.4f}, forget quality {:.3g}", step,
                 r.forget_rouge(), r.forget_prob(), r.model_utility, r.forget_quality);
  };
  if (o.eval_every > 0) record(0, std::nan(""), 0);
  nk::Progress progress("run", c.steps);
  double train_seconds = 0;
  un.run([&](const StepRecord& s) {
    progress.update(s.step);
    train_seconds = s.seconds;
    spdlog::debug("run: step {} loss {:.5f} grad norm {:.4f}", s.step, s.loss, s.grad_norm);
    if (o.eval_every > 0 && (s.step % o.eval_every == 0 || s.step == c.steps)) record(s.step, s.loss, s.seconds);
  });
  progress.finish();
  spdlog::info("run: {} steps of {} in {:.3f} s of training ({:.4f} s a step, evaluations apart)", c.steps, o.method,
               train_seconds, c.steps ? train_seconds / static_cast<double>(c.steps) : 0.0);
  if (!o.curve.empty()) {
    nk::h5::Writer w(o.curve, kCurveSchema, o.no_clobber);
    write_columns(w, "/curve",
                  {{"step", &cs},
                   {"forget_quality", &cq},
                   {"forget_ks_d", &cd},
                   {"model_utility", &cu},
                   {"forget_rouge_l", &cr},
                   {"forget_prob", &cp},
                   {"retain_prob", &crp},
                   {"mia_auc_mink", &ca},
                   {"privleak", &cl},
                   {"verbmem", &cv},
                   {"ppl_general", &cg},
                   {"seconds", &ct},
                   {"loss", &closs}});
    w.attr("/", "method", o.method);
    w.attr("/", "split", o.split);
    w.attr("/", "lr", c.lr);
    w.attr("/", "steps", c.steps);
    w.attr("/", "batch", c.batch);
    if (is_shred(c.method)) w.attr("/", "percent", c.select.percent);
    w.attr("/", "model", o.model);
    w.commit();
  }
  nk::lm::save_checkpoint(o.output, weights, &m.tokenizer(), nullptr, nk::lm::StoreAs::f32);
}

}  // namespace shred
