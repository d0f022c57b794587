// frameworks.cpp - SimpleEvol and random sampling over one LLM client.
#include "simple-evol/frameworks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "nk/error.hpp"
#include "nk/rng.hpp"
#include "simple-evol/framework_run.hpp"
#include "simple-evol/surrogate.hpp"

namespace sevol {

FrameworkShape framework_shape(const std::string& framework) {
  if (framework == "simpleevol") return {1, 2};  // one trajectory; generate, compress
  if (framework == "random") return {0, 1};      // independent samples; generate
  if (framework == "eoh") return {1, 5};         // the population; i1, e1, e2, m1, m2
  if (framework == "reevo")
    return {1, 5};  // the population; init, short- and long-term reflection, crossover, mutation
  if (framework == "funsearch") return {3, 1};  // islands, score-signature clusters, resets; generate
  if (framework == "mctsahd") return {1, 6};    // the tree; i1, e1, e2, m1, m2, s1 (each with its refinement call)
  throw nk::usage_error("--framework: '" + framework +
                        "' (expected simpleevol, eoh, funsearch, reevo, mctsahd or random)");
}

double ahi(int m, int k, double q) {
  return m + k + std::log10(1.0 + q);
}

std::string task_text(Problem p) {
  switch (p) {
    case Problem::tsp:
      return "The travelling salesman problem, solved constructively: from city 0 a function picks the next "
             "unvisited city until all are visited, then the tour returns to city 0. Cities are uniform in the "
             "unit square; distances are Euclidean. The score is the mean tour length over the training "
             "instances, or its mean gap to reference tours when they exist: lower is better.";
    case Problem::cvrp:
      return "The capacitated vehicle routing problem, solved by ant colony optimisation: a function returns a "
             "matrix of edge desirabilities that, times the pheromone, steers 30 ants for 100 iterations. Node 0 "
             "is the depot; customers have demands and every route carries at most the capacity. The score is "
             "the mean length of the best routes found, or its mean gap to reference routes: lower is better.";
    case Problem::fssp:
      return "The permutation flow shop (makespan), solved by guided local search: from the NEH sequence, each "
             "iteration improves the sequence by swaps and moves on the true processing times, then calls a "
             "function that returns perturbed processing times and the jobs to move, and runs the same moves on "
             "the perturbed times. The score is the mean best makespan, or its mean gap to the best known "
             "makespans: lower is better.";
  }
  return "";
}

std::string interface_text(Problem p) {
  switch (p) {
    case Problem::tsp:
      return "def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):\n"
             "    \"\"\"current_node, destination_node: ints; unvisited_nodes: sorted int64 numpy array;\n"
             "    distance_matrix: float64 numpy array [n, n]. Returns the next node, one of unvisited_nodes.\"\"\"";
    case Problem::cvrp:
      return "def heuristics(distance_matrix, coordinates, demands, capacity):\n"
             "    \"\"\"distance_matrix: float64 [n, n] (diagonal 1); coordinates: float64 [n, 2]; demands: float64\n"
             "    [n] (demands[0] = 0, the depot); capacity: int. Returns a float64 [n, n] matrix of edge\n"
             "    desirabilities (finite, larger is more promising).\"\"\"";
    case Problem::fssp:
      return "def get_matrix_and_jobs(current_sequence, time_matrix, m, n):\n"
             "    \"\"\"current_sequence: list of the n job indices; time_matrix: float64 [n, m] processing times\n"
             "    (job x machine); m machines, n jobs. Returns (perturbed matrix [n, m], list of at least 2 and at\n"
             "    most 5 jobs to move).\"\"\"";
  }
  return "";
}

std::string seed_code(Problem p) {
  return Grammar(p).emit(Grammar(p).seed());
}

void split_reply(const std::string& reply, std::string& code, std::string& description) {
  code.clear();
  description.clear();
  std::istringstream in(reply);
  std::string line;
  bool in_code = false, done = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (in_code) {
        done = true;
        in_code = false;
      } else if (!done) {
        in_code = true;
      }
      continue;
    }
    if (in_code && !done) {
      code += line + "\n";
    } else if (description.empty() && line.rfind("Description:", 0) == 0) {
      description = line.substr(12);
      const size_t a = description.find_first_not_of(' ');
      description = a == std::string::npos ? "" : description.substr(a);
    }
  }
  if (code.empty() && reply.find("def ") != std::string::npos) code = reply;
  if (description.empty()) {
    // EoH's and MCTS-AHD's format: the idea in braces before the code
    const size_t end = std::min(reply.find("```"), reply.find("def "));
    const size_t open = reply.find('{');
    if (open != std::string::npos && open < end) {
      const size_t close = reply.find('}', open);
      if (close != std::string::npos) description = reply.substr(open + 1, close - open - 1);
    }
  }
  if (description.size() > 500) description = description.substr(0, 500);
}

Candidate score_code(const InstanceSet& set, const std::string& code, const EvalConfig& eval) {
  Candidate c;
  c.code = code;
  if (code.find_first_not_of(" \t\r\n") == std::string::npos) {
    c.status = Status::exception;
    c.error = "the reply holds no code";
    return c;
  }
  EvalConfig config = eval;
  config.code = code;
  const EvalReport r = evaluate(set, config);
  double sum = 0, gaps = 0, time = 0, cpu = 0;
  bool all_gaps = true;
  c.status = Status::ok;
  for (size_t i = 0; i < r.items.size(); ++i) {
    const InstanceResult& item = r.items[i];
    time += item.runtime;
    cpu += item.cpu_seconds;
    c.objectives.push_back(item.status == Status::ok ? item.objective : NAN);
    if (item.status != Status::ok) {
      if (c.status == Status::ok) {
        c.status = item.status;
        c.error = item.error;
      }
      continue;
    }
    sum += item.objective;
    const double ref = set.items[i].reference;
    if (std::isnan(ref)) all_gaps = false;
    gaps += item.objective / ref - 1.0;
  }
  const double k = static_cast<double>(r.items.size());
  c.runtime = time / k;
  c.cpu_runtime = cpu / k;
  if (c.status == Status::ok) {
    c.score = sum / k;
    c.gap = all_gaps ? gaps / k : NAN;
  }
  return c;
}

namespace detail {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// What the prompt calls a candidate's score: its gap when references exist.
double shown_score(const Candidate& c) {
  return std::isnan(c.gap) ? c.score : c.gap;
}

/// Runtime as a class of CPU seconds, so that prompts depend neither on the
/// clock's noise nor on the machine's load (a wall-clock class flipped a
/// 1.5 ms candidate to "medium" under a loaded ctest).
std::string runtime_class(double seconds) {
  return seconds < 0.01 ? "fast" : seconds < 0.1 ? "medium" : seconds < 1 ? "slow" : "very slow";
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

const char* const kStatusNames[] = {"ok", "exception", "timeout", "invalid answer", "not run"};

std::string render_candidate(const Candidate& c, int64_t index, bool with_gap_word) {
  std::string out = "### Candidate " + std::to_string(index);
  if (c.status == Status::ok) {
    out += " (score " + fmt(shown_score(c)) + (with_gap_word ? ", mean gap" : ", mean objective") +
           "; lower is better; runtime " + runtime_class(c.cpu_runtime) + ")\n";
  } else {
    out +=
        " (failed: " + std::string(kStatusNames[static_cast<int>(c.status)]) + ")\nError: " + last_line(c.error) + "\n";
  }
  if (!c.description.empty()) out += "Description: " + c.description + "\n";
  out += "```python\n" + c.code + (c.code.empty() || c.code.back() == '\n' ? "" : "\n") + "```\n";
  return out;
}

const char* const kSystem = "You are an expert in algorithm design. You write heuristics in Python 3 with numpy.";

std::string header(Problem p) {
  return "## Task\n" + task_text(p) + "\n\n## Interface\n```python\n" + interface_text(p) + "\n```\n";
}

const char* const kAnswerFormat =
    "Reply with one line \"Description: ...\" saying what the heuristic does, then the complete code in one "
    "```python block.";

std::string function_name(Problem p) {
  return default_function(p);
}

std::string signature_only(Problem p) {
  const std::string text = interface_text(p);
  return text.substr(0, text.find('\n'));
}

size_t draw(const std::vector<double>& weights, nk::Rng& rng) {
  double total = 0;
  for (double w : weights) total += w;
  double u = rng.uniform() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    u -= weights[i];
    if (u < 0) return i;
  }
  return weights.size() - 1;
}

std::string fenced(const std::string& code) {
  return "```python\n" + code + (code.empty() || code.back() == '\n' ? "" : "\n") + "```\n";
}

Run::Run(const InstanceSet& train, LlmClient& llm, const EvolveConfig& config, std::function<void(int64_t)> progress)
    : train_(train), llm_(llm), config_(config), progress_(std::move(progress)), rng_(nk::mix64(config.seed ^ 0xf4a3)) {
  gaps_ =
      std::all_of(train.items.begin(), train.items.end(), [](const Instance& i) { return !std::isnan(i.reference); });
}

const Candidate& Run::sample(const std::string& operation, const std::vector<Message>& messages, double temperature) {
  const std::string reply = llm_.ask(operation, messages, temperature);
  std::string code, description;
  split_reply(reply, code, description);
  return score(operation, code, description);
}

const Candidate& Run::score(const std::string& operation, const std::string& code, const std::string& description) {
  Candidate c = score_code(train_, code, config_.eval);
  c.description = description;
  c.operation = operation;
  out_.push_back(std::move(c));
  progress_(static_cast<int64_t>(out_.size()));
  return out_.back();
}

std::string Run::ask(const std::string& operation, const std::vector<Message>& messages) {
  return llm_.ask(operation, messages);
}

Candidate Run::score_seed() const {
  return score_code(train_, seed_code(train_.problem), config_.eval);
}

}  // namespace detail

namespace {

const char* const kCues[] = {
    "Consider a bolder change than last time.",   "Refine the best heuristic carefully.",
    "Reconsider which information matters most.", "Look at what the failed candidates had in common.",
    "Try to make the heuristic simpler.",         "Think about the instances' structure before you write.",
};

}  // namespace

std::vector<Candidate> run_framework(const InstanceSet& train, LlmClient& llm, const EvolveConfig& config,
                                     const std::function<void(int64_t)>& progress) {
  using namespace detail;
  framework_shape(config.framework);
  Run run(train, llm, config, progress);
  const Problem p = train.problem;
  if (config.framework == "eoh") {
    run_eoh(run);
    return run.out();
  }
  if (config.framework == "reevo") {
    run_reevo(run);
    return run.out();
  }
  if (config.framework == "funsearch") {
    run_funsearch(run);
    return run.out();
  }
  if (config.framework == "mctsahd") {
    run_mcts_ahd(run);
    return run.out();
  }
  if (config.framework == "random") {
    const std::string prompt = header(p) + "\n## Starting point\n" + fenced(seed_code(p)) + "\n## Request\n" +
                               "Write a heuristic for this task. " + kAnswerFormat;
    while (!run.done()) run.sample("generate", {{"system", kSystem}, {"user", prompt}});
    return run.out();
  }

  // SimpleEvol: one trajectory
  std::vector<Candidate>& out = run.out();
  std::string notes;
  int64_t best = -1, since_compress = 0;
  std::vector<int64_t> recent;  // indices of candidates shown as history
  nk::Rng cues(nk::mix64(config.seed ^ 0xc0e5));
  while (!run.done()) {
    std::string prompt = header(p);
    if (out.empty()) prompt += "\n## Starting point\n" + fenced(seed_code(p));
    if (!notes.empty()) prompt += "\n## Working notes\n" + notes + "\n";
    if (config.best_so_far && best >= 0) {
      prompt += "\n## Best so far (score " + fmt(shown_score(out[best])) + ")\n";
      if (!out[best].description.empty()) prompt += "Description: " + out[best].description + "\n";
      prompt += fenced(out[best].code);
    }
    if (!recent.empty()) {
      prompt += "\n## Your recent candidates\n";
      for (int64_t i : recent) prompt += render_candidate(out[i], i + 1, run.gaps());
    }
    prompt += "\n## Request\nWrite a better heuristic. " + std::string(kCues[cues.below(std::size(kCues))]) + " " +
              kAnswerFormat;
    run.sample("generate", {{"system", kSystem}, {"user", prompt}});
    const int64_t index = static_cast<int64_t>(out.size()) - 1;
    if (out[index].status == Status::ok && (best < 0 || out[index].score < out[best].score)) best = index;
    recent.push_back(index);
    ++since_compress;
    if (config.compress_every > 0 && since_compress >= config.compress_every && !run.done()) {
      std::string request = header(p);
      if (!notes.empty()) request += "\n## Working notes so far\n" + notes + "\n";
      request += "\n## Candidates since then\n";
      for (int64_t i : recent) request += render_candidate(out[i], i + 1, run.gaps());
      request +=
          "\n## Request\nCompress this history into working notes for yourself: what was tried, what worked "
          "(with scores), what failed. At most 15 lines, no code.";
      notes = run.ask("compress", {{"system", kSystem}, {"user", request}});
      if (notes.size() > 3000) notes = notes.substr(0, 3000);
      recent.clear();
      since_compress = 0;
    } else if (config.compress_every == 0 && static_cast<int64_t>(recent.size()) > config.history_window) {
      recent.erase(recent.begin());
    }
  }
  return out;
}

}  // namespace sevol
