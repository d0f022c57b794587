// llm_verb.cpp - a surrogate as a command (stdin prompt, stdout reply), and
// the exam that measures each rung's capability I.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "simple-evol/cvrp.hpp"
#include "simple-evol/frameworks.hpp"
#include "simple-evol/fssp.hpp"
#include "simple-evol/python.hpp"
#include "simple-evol/simple_evol.hpp"
#include "simple-evol/surrogate.hpp"
#include "simple-evol/taillard.hpp"
#include "simple-evol/tsp.hpp"

namespace sevol {

namespace {

/// The exam's instances of one problem, with references from the tool's solvers.
InstanceSet exam_instances(Problem p, uint64_t seed, int count) {
  nk::Rng root(seed);
  InstanceSet set;
  set.problem = p;
  for (int k = 0; k < count; ++k) {
    nk::Rng rng = root.split(static_cast<uint64_t>(k));
    Instance item;
    item.id = instance_id(k);
    if (p == Problem::tsp) {
      for (int v = 0; v < 2 * 50; ++v) item.coords.push_back(rng.uniform());
      const std::vector<double> d = distance_matrix(item.coords);
      item.reference = tour_length(d, tsp_ils(d, 50, 1000, rng));
    } else if (p == Problem::cvrp) {
      item.coords = {0.5, 0.5};
      item.demand = {0};
      for (int v = 0; v < 30; ++v) {
        item.coords.push_back(rng.uniform());
        item.coords.push_back(rng.uniform());
        item.demand.push_back(static_cast<int32_t>(1 + rng.below(9)));
      }
      item.capacity = 50;
      const std::vector<double> d = distance_matrix(item.coords);
      item.reference = routes_length(d, item.nodes(), cvrp_ils(item, d, 100, rng));
    } else {
      item.jobs = 50;
      item.machines = 10;
      item.processing = taillard_processing(1 + static_cast<int64_t>(rng.below(2147483646)), 50, 10);
      const FlowShop shop = FlowShop::from(item);
      IgConfig ig;
      ig.iterations = 300;
      item.reference = makespan(shop, fssp_ig(shop, ig, rng));
    }
    set.items.push_back(std::move(item));
  }
  return set;
}

/// The exam's prompt: no framework, the seed and two fixed other attempts with their scores.
std::string exam_prompt(Problem p, const InstanceSet& practice, const EvalConfig& eval) {
  const Grammar grammar(p);
  nk::Rng rng(nk::mix64(0xe4a3 + static_cast<uint64_t>(p)));
  std::string prompt =
      "### system\nYou are an expert in algorithm design. You write heuristics in Python 3 with numpy.\n\n";
  prompt += "### user\n## Task\n" + task_text(p) + "\n\n## Interface\n```python\n" + interface_text(p) + "\n```\n";
  prompt += "\n## Attempts so far\n";
  // the seed and two fair attempts: each the best of 8 edits of the seed on the practice instances
  std::vector<std::string> codes = {grammar.emit(grammar.seed())};
  for (int i = 0; i < 2; ++i) {
    double best = INFINITY;
    std::string best_code;
    for (int t = 0; t < 8; ++t) {
      Genome g = grammar.seed();
      grammar.mutate(g, rng, 0.2, -1, false);
      const std::string code = grammar.emit(g);
      const Candidate c = score_code(practice, code, eval);
      if (c.status == Status::ok && c.gap < best) {
        best = c.gap;
        best_code = code;
      }
    }
    if (!best_code.empty()) codes.push_back(best_code);
  }
  for (size_t i = 0; i < codes.size(); ++i) {
    const Candidate c = score_code(practice, codes[i], eval);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", c.gap);
    prompt += "### Attempt " + std::to_string(i + 1) + " (score " + buf + ", mean gap; lower is better)\n```python\n" +
              codes[i] + "```\n";
  }
  prompt +=
      "\n## Request\nWrite a better heuristic. Reply with one line \"Description: ...\" saying what the heuristic "
      "does, then the complete code in one ```python block.\n\n";
  return prompt;
}

void run_exam(const LlmVerbOptions& o, const nk::RunEnv& env) {
  py::start();
  const std::vector<int> rungs = parse_rungs(o.rungs);
  const Problem problems[] = {Problem::tsp, Problem::cvrp, Problem::fssp};
  constexpr double eps = 0.01;
  const int64_t nr = static_cast<int64_t>(rungs.size());
  std::vector<double> gap(static_cast<size_t>(nr * 3)), failures(static_cast<size_t>(nr * 3)), perf(gap.size());
  nk::Progress progress("llm --exam", nr * 3 * o.samples);
  int64_t done = 0;
  for (int pi = 0; pi < 3; ++pi) {
    const Problem p = problems[pi];
    EvalConfig eval;
    eval.sandbox = SandboxMode::namespaces;
    if (!namespace_sandbox_unavailable().empty())
      eval.sandbox = SandboxMode::none;  // replies come from the surrogate itself
    eval.workers = env.threads;
    eval.timeout = 60;
    eval.aco.ants = 10;
    eval.aco.iterations = 20;
    eval.gls.iterations = 40;
    const InstanceSet practice = exam_instances(p, 0xe0 + static_cast<uint64_t>(pi), p == Problem::tsp ? 8 : 2);
    const InstanceSet held_out = exam_instances(p, 0xf0 + static_cast<uint64_t>(pi), p == Problem::tsp ? 16 : 4);
    const std::string prompt = exam_prompt(p, practice, eval);
    // one virtual reply with the seed heuristic keeps the performance above 0 when every reply fails
    const double seed_usefulness = 1.0 / (score_code(held_out, seed_code(p), eval).gap + eps);
    for (int64_t r = 0; r < nr; ++r) {
      double sum = 0, usefulness = 0;
      int64_t failed = 0, ok_count = 0;
      for (int64_t s = 0; s < o.samples; ++s) {
        const std::string reply =
            surrogate_reply(rungs[r], prompt, nk::mix64(env.seed ^ (0x1000 + static_cast<uint64_t>(s))), o.temperature);
        std::string code, description;
        split_reply(reply, code, description);
        const Candidate c = score_code(held_out, code, eval);
        const bool ok = c.status == Status::ok && !std::isnan(c.gap);
        failed += !ok;
        ok_count += ok;
        if (ok) {
          sum += c.gap;
          usefulness += 1.0 / (c.gap + eps);  // a failed reply is worth nothing
        }
        progress.update(++done);
      }
      gap[r * 3 + pi] = ok_count > 0 ? sum / static_cast<double>(ok_count) : NAN;
      failures[r * 3 + pi] = static_cast<double>(failed) / static_cast<double>(o.samples);
      perf[r * 3 + pi] = (usefulness + seed_usefulness) / static_cast<double>(o.samples + 1);
    }
  }
  progress.finish();
  std::vector<double> intelligence(static_cast<size_t>(nr));
  for (int64_t r = 0; r < nr; ++r) {
    double log_sum = 0;
    for (int pi = 0; pi < 3; ++pi) log_sum += std::log(perf[r * 3 + pi] / perf[pi]);
    intelligence[r] = std::exp(log_sum / 3.0);
  }
  std::vector<int64_t> rung_ids(rungs.begin(), rungs.end());
  nk::h5::Writer out(o.output, "simple-evol.exam/1", o.no_clobber);
  out.write("/exam/rung", rung_ids.data(), {nr}, "R");
  out.write_strings("/exam/problem", {"tsp", "cvrp", "fssp"}, "P");
  out.allow_nonfinite("/exam/gap");
  out.allow_nonfinite("/exam/intelligence");
  out.write("/exam/gap", gap.data(), {nr, 3}, "R,P");
  out.write("/exam/failures", failures.data(), {nr, 3}, "R,P");
  out.write("/exam/performance", perf.data(), {nr, 3}, "R,P");
  out.write("/exam/intelligence", intelligence.data(), {nr}, "R");
  out.attr("/", "eps", eps);
  out.attr("/", "samples", o.samples);
  out.commit();
  for (int64_t r = 0; r < nr; ++r) {
    spdlog::info("rung {}: I = {:.3f} (gaps tsp {:.4f}, cvrp {:.4f}, fssp {:.4f})", rungs[r], intelligence[r],
                 gap[r * 3], gap[r * 3 + 1], gap[r * 3 + 2]);
  }
}

}  // namespace

std::vector<int> parse_rungs(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int a = -1, b = -1;
    char dash = 0;
    std::istringstream in(part);
    if ((in >> a) && (in >> dash) && dash == '-' && (in >> b)) {
    } else {
      b = a;
    }
    if (a < 0 || b > 9 || a > b)
      throw nk::usage_error("--rungs: '" + part + "' (expected rungs 0..9 such as 0-9 or 0,3,9)");
    for (int r = a; r <= b; ++r) out.push_back(r);
  }
  if (out.empty()) throw nk::usage_error("--rungs: empty");
  return out;
}

uint64_t surrogate_command_seed(uint64_t seed, int64_t sample) {
  return nk::mix64(seed ^ static_cast<uint64_t>(sample) * 0x632be59bd9b4e019ULL);
}

void llm_verb(const LlmVerbOptions& o, const nk::RunEnv& env) {
  if (!o.seed_heuristic.empty()) {
    std::cout << seed_code(parse_problem(o.seed_heuristic, "--seed-heuristic"));
    return;
  }
  if (o.exam) {
    if (o.output.empty()) throw nk::usage_error("llm --exam: -o/--output is required");
    run_exam(o, env);
    return;
  }
  std::stringstream ss;
  ss << std::cin.rdbuf();
  std::string prompt = ss.str();
  if (prompt.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw nk::input_error("-", "", "the prompt on standard input is empty");
  }
  int64_t sample = 0;
  const size_t first = prompt.find_first_not_of(" \t\r\n");
  if (prompt[first] == '{') {  // --llm-format chat-json
    try {
      const nlohmann::json j = nlohmann::json::parse(prompt);
      std::vector<Message> messages;
      for (const auto& m : j.at("messages"))
        messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
      if (j.contains("sample")) sample = j["sample"].get<int64_t>();
      prompt = render_text(messages);
    } catch (const std::exception& e) {
      throw nk::input_error("-", "", std::string("the chat-json prompt cannot be read: ") + e.what());
    }
  }
  py::start();  // the higher rungs try their edits on instances of their own
  std::cout << surrogate_reply(o.rung, prompt, surrogate_command_seed(env.seed, sample), o.temperature);
}

}  // namespace sevol
