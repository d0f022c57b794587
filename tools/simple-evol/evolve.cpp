// evolve.cpp - one framework run: candidates, the best-so-far curve, every LLM
// call, the best heuristic and its gaps on the test files, AHI.
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "simple-evol/frameworks.hpp"
#include "simple-evol/simple_evol.hpp"

namespace sevol {

void evolve_verb(const EvolveOptions& o, const nk::RunEnv& env) {
  const FrameworkShape shape = framework_shape(o.framework);
  if (!o.llm_cmd.empty() && o.llm != "surrogate:5") {
    throw nk::usage_error("--llm and --llm-cmd: give one of them");
  }
  const InstanceSet train = read_instances(o.input);
  std::vector<InstanceSet> tests;
  for (const std::string& t : o.tests) {
    tests.push_back(read_instances(t));
    if (tests.back().problem != train.problem) {
      throw nk::input_error(t, "",
                            "holds " + problem_name(tests.back().problem) + " instances, the training file " +
                                problem_name(train.problem));
    }
  }
  LlmOptions lo;
  lo.spec = o.llm_cmd.empty() ? o.llm : o.llm_cmd;
  if (o.llm_cmd.empty() && surrogate_rung(lo.spec) < 0) {
    throw nk::usage_error("--llm: '" + lo.spec + "' (expected surrogate:0 .. surrogate:9, or use --llm-cmd)");
  }
  lo.format = o.llm_format;
  lo.cache_dir = o.cache_dir;
  lo.temperature = o.temperature;
  lo.timeout = o.llm_timeout;
  lo.seed = env.seed;
  LlmClient llm(lo);
  EvolveConfig config;
  config.framework = o.framework;
  config.budget = o.budget;
  config.compress_every = o.compress_every;
  config.best_so_far = !o.no_best_so_far;
  config.seed = env.seed;
  config.temperature = o.temperature;
  config.eval = eval_config(o.eval, env);

  nk::Progress progress("evolve " + o.framework, o.budget);
  const std::vector<Candidate> cands = run_framework(train, llm, config, [&](int64_t done) { progress.update(done); });
  progress.finish();

  const int64_t c = static_cast<int64_t>(cands.size());
  std::vector<std::string> code, description, operation;
  std::vector<double> score, gap, runtime, curve;
  std::vector<int8_t> status;
  int64_t best = -1;
  for (int64_t i = 0; i < c; ++i) {
    const Candidate& k = cands[i];
    code.push_back(k.code);
    description.push_back(k.description);
    operation.push_back(k.operation);
    score.push_back(k.score);
    gap.push_back(k.gap);
    runtime.push_back(k.runtime);
    status.push_back(static_cast<int8_t>(k.status));
    if (k.status == Status::ok && (best < 0 || k.score < cands[best].score)) best = i;
    curve.push_back(best < 0 ? NAN : cands[best].score);
  }
  std::vector<double> test_gap;
  for (const InstanceSet& t : tests) {
    if (best < 0) {
      test_gap.push_back(NAN);
      continue;
    }
    const Candidate on_test = score_code(t, cands[best].code, config.eval);
    test_gap.push_back(on_test.gap);
  }
  std::vector<std::string> ops;
  std::vector<int64_t> prompt_tokens, reply_tokens;
  std::vector<int8_t> cached;
  for (const LlmCall& call : llm.calls()) {
    ops.push_back(call.operation);
    prompt_tokens.push_back(call.prompt_tokens);
    reply_tokens.push_back(call.reply_tokens);
    cached.push_back(call.cached ? 1 : 0);
  }
  const int64_t q = static_cast<int64_t>(llm.calls().size());

  nk::h5::Writer out(o.output, "simple-evol.run/1", o.no_clobber);
  for (const char* d :
       {"/candidates/score", "/candidates/gap", "/curve/best_so_far", "/best/score", "/best/test_gap"}) {
    out.allow_nonfinite(d);
  }
  out.write_strings("/candidates/code", code, "C");
  out.write_strings("/candidates/description", description, "C");
  out.write_strings("/candidates/operator", operation, "C");
  out.write("/candidates/score", score.data(), {c}, "C");
  out.write("/candidates/gap", gap.data(), {c}, "C");
  out.write("/candidates/runtime", runtime.data(), {c}, "C", "s");
  out.write("/candidates/status", status.data(), {c}, "C");
  out.write("/curve/best_so_far", curve.data(), {c}, "C");
  out.write_strings("/llm/operation", ops, "Q");
  out.write("/llm/prompt_tokens", prompt_tokens.data(), {q}, "Q");
  out.write("/llm/reply_tokens", reply_tokens.data(), {q}, "Q");
  out.write("/llm/cached", cached.data(), {q}, "Q");
  out.write_strings("/best/code", {best < 0 ? std::string() : cands[best].code}, "1");
  const double best_score = best < 0 ? NAN : cands[best].score;
  out.write("/best/score", &best_score, {1}, "1");
  out.write("/best/test_gap", test_gap.data(), {static_cast<int64_t>(test_gap.size())}, "S");
  out.write_strings("/best/test_files", o.tests, "S");
  out.attr("/", "problem", problem_name(train.problem));
  out.attr("/", "framework", o.framework);
  out.attr("/", "llm", lo.spec);
  out.attr("/", "M", static_cast<int64_t>(shape.m));
  out.attr("/", "K", static_cast<int64_t>(shape.k));
  out.attr("/", "Q", q);
  out.attr("/", "llm_invocations", llm.invocations());
  out.attr("/", "AHI", ahi(shape.m, shape.k, static_cast<double>(q)));
  out.attr("/", "budget", o.budget);
  out.attr("/", "best_index", best);
  out.attr("/", "run_seed", static_cast<int64_t>(env.seed & 0x7fffffffffffffffULL));
  out.commit();
  spdlog::info("{} with {}: best score {:.6g} after {} candidates, {} LLM calls ({} reached the model), AHI {:.3f}",
               o.framework, lo.spec, best_score, c, q, llm.invocations(),
               ahi(shape.m, shape.k, static_cast<double>(q)));
}

}  // namespace sevol
