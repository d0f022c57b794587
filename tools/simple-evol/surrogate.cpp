// surrogate.cpp - the grammars of the three problems and the rung ladder.
#include "simple-evol/surrogate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "simple-evol/evaluator.hpp"
#include "simple-evol/taillard.hpp"

namespace sevol {

Grammar::Grammar(Problem problem) : problem_(problem) {
  if (problem == Problem::tsp) {
    weights_ = {{"W_CURRENT", 0, 2, 1, "d(current, j)"},
                {"W_DEST", -1, 1, 0, "d(j, destination)"},
                {"W_MEAN", -1, 1, 0, "mean distance from j to the other unvisited"},
                {"W_STD", -1, 1, 0, "their standard deviation"},
                {"W_NEAREST", -1, 1, 0, "j's nearest unvisited neighbour"},
                {"W_SECOND", -1, 1, 0, "j's second nearest"},
                {"W_LATE", -1, 1, 0, "d(j, destination) x the fraction visited"}};
  } else if (problem == Problem::cvrp) {
    weights_ = {{"W_DIST", 0, 3, 1, "-log d(i, j): 1/d to this power"},
                {"W_SAVINGS", -2, 4, 0, "Clarke-Wright saving d(0,i) + d(0,j) - d(i,j), scaled"},
                {"W_DEMAND", -3, 3, 0, "demand of j over the capacity"},
                {"W_DEPOT", -3, 3, 0, "d(0, j), scaled"},
                {"W_NEAR", 0, 3, 0, "j among the 10 nearest of i"},
                {"W_ANGLE", -4, 0, 0, "angle between i and j seen from the depot, over pi"}};
  } else {
    weights_ = {{"FACTOR", 0.5, 3, 1.2, "stretch of the perturbed times"},
                {"N_JOBS", 2, 5, 3, "jobs handed to the perturbed passes"}};
    rules_ = {{"RULE_MACHINE", {"load", "last", "first", "rotate"}, "load", "which machine is stretched"},
              {"RULE_JOBS",
               {"longest_on_machine", "longest_total", "sequence_tail", "sequence_head"},
               "longest_on_machine",
               "which jobs move"},
              {"SCOPE", {"column", "jobs"}, "column", "the machine's column, or the chosen jobs' rows"}};
  }
}

Genome Grammar::seed() const {
  Genome g;
  for (const Weight& w : weights_) g.weights[w.name] = w.seed;
  for (const Rule& r : rules_) g.rules[r.name] = r.seed;
  return g;
}

Genome Grammar::random(nk::Rng& rng) const {
  Genome g;
  for (const Weight& w : weights_) g.weights[w.name] = w.lo + (w.hi - w.lo) * rng.uniform();
  for (const Rule& r : rules_) g.rules[r.name] = r.options[rng.below(r.options.size())];
  return g;
}

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

const char* kTspBody = R"(

def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    nodes = np.asarray(unvisited_nodes, dtype=np.int64)
    if len(nodes) == 1:
        return int(nodes[0])
    sub = distance_matrix[np.ix_(nodes, nodes)]
    others = len(nodes) - 1
    mean = sub.sum(axis=1) / others
    std = np.sqrt(np.maximum((sub * sub).sum(axis=1) / others - mean * mean, 0.0))
    ordered = np.sort(sub + np.diag(np.full(len(nodes), np.inf)), axis=1)
    nearest = ordered[:, 0]
    second = ordered[:, 1] if len(nodes) > 2 else nearest
    to_dest = distance_matrix[destination_node][nodes]
    late = 1.0 - len(nodes) / len(distance_matrix)
    score = (W_CURRENT * distance_matrix[current_node][nodes] + W_DEST * to_dest + W_MEAN * mean + W_STD * std
             + W_NEAREST * nearest + W_SECOND * second + W_LATE * late * to_dest)
    return int(nodes[np.argmin(score)])
)";

const char* kCvrpBody = R"(

def heuristics(distance_matrix, coordinates, demands, capacity):
    d = np.asarray(distance_matrix, dtype=float)
    scale = d[0, 1:].mean()
    savings = (d[0][:, None] + d[0][None, :] - d) / scale
    load = np.asarray(demands, dtype=float)[None, :] / capacity
    depot = d[0][None, :] / scale
    ranks = np.argsort(np.argsort(d, axis=1, kind="stable"), axis=1, kind="stable")
    near = (ranks <= 10).astype(float)
    rel = coordinates - coordinates[0]
    angle = np.arctan2(rel[:, 1], rel[:, 0])
    gap = np.abs(angle[:, None] - angle[None, :])
    gap = np.minimum(gap, 2 * np.pi - gap) / np.pi
    logh = (-W_DIST * np.log(np.maximum(d, 1e-12)) + W_SAVINGS * savings + W_DEMAND * load + W_DEPOT * depot
            + W_NEAR * near + W_ANGLE * gap)
    return np.exp(np.clip(logh - logh.max(), -50.0, 0.0))
)";

const char* kFsspBody = R"(

def get_matrix_and_jobs(current_sequence, time_matrix, m, n):
    p = np.asarray(time_matrix, dtype=float)
    seq = [int(j) for j in current_sequence]
    if RULE_MACHINE == "load":
        machine = int(np.argmax(p.sum(axis=0)))
    elif RULE_MACHINE == "last":
        machine = m - 1
    elif RULE_MACHINE == "first":
        machine = 0
    else:
        machine = int(sum(seq[:3]) % m)
    k = max(2, min(int(round(N_JOBS)), n))
    if RULE_JOBS == "longest_on_machine":
        jobs = np.argsort(-p[:, machine], kind="stable")[:k]
    elif RULE_JOBS == "longest_total":
        jobs = np.argsort(-p.sum(axis=1), kind="stable")[:k]
    elif RULE_JOBS == "sequence_tail":
        jobs = np.array(seq[-k:])
    else:
        jobs = np.array(seq[:k])
    perturbed = p.copy()
    if SCOPE == "column":
        perturbed[:, machine] *= FACTOR
    else:
        perturbed[jobs, :] *= FACTOR
    return perturbed, [int(j) for j in jobs]
)";

}  // namespace

std::string Grammar::emit(const Genome& g) const {
  std::string code = "import numpy as np\n\n";
  if (problem_ == Problem::tsp) {
    code += "# The next city is the unvisited j of least score = sum of W_* x feature:\n";
  } else if (problem_ == Problem::cvrp) {
    code += "# Edge desirability = exp(sum of W_* x feature), scaled to at most 1:\n";
  } else {
    code += "# The perturbation: the perturbed times and the jobs to move:\n";
  }
  for (const Weight& w : weights_) code += "#   " + w.name + ": " + w.meaning + "\n";
  for (const Rule& r : rules_) code += "#   " + r.name + ": " + r.meaning + "\n";
  for (const Weight& w : weights_) code += w.name + " = " + number(g.weights.at(w.name)) + "\n";
  for (const Rule& r : rules_) code += r.name + " = \"" + g.rules.at(r.name) + "\"\n";
  code += problem_ == Problem::tsp ? kTspBody : problem_ == Problem::cvrp ? kCvrpBody : kFsspBody;
  return code;
}

std::string Grammar::emit_with_bug(const Genome& g, nk::Rng& rng) const {
  std::string code = emit(g);
  const uint64_t kind = rng.below(3);
  auto replace_once = [&](const std::string& from, const std::string& to) {
    const size_t at = code.rfind(from);
    if (at != std::string::npos) code.replace(at, from.size(), to);
  };
  if (kind == 0) {  // a syntax error: the def line loses its colon
    const size_t def = code.find("def ");
    const size_t colon = code.find("):", def);
    if (colon != std::string::npos) code.erase(colon + 1, 1);
  } else if (kind == 1) {  // a misspelt constant
    const std::string& name = weights_.front().name;
    replace_once(name + " *", name.substr(0, name.size() - 1) + " *");
    if (problem_ == Problem::fssp) replace_once("*= FACTOR", "*= FACTR");
  } else {  // an answer of the wrong kind
    if (problem_ == Problem::tsp) replace_once("return int(nodes[np.argmin(score)])", "return int(np.argmin(score))");
    if (problem_ == Problem::cvrp) replace_once("return np.exp(", "return np.exp(-d[0]) * np.exp(");
    if (problem_ == Problem::cvrp) replace_once("50.0, 0.0))", "50.0, 0.0))[0]");
    if (problem_ == Problem::fssp) replace_once("[int(j) for j in jobs]", "[int(jobs[0])]");
  }
  return code;
}

std::string Grammar::describe(const Genome& g) const {
  std::string out;
  for (const Weight& w : weights_) out += (out.empty() ? "" : " ") + w.name + "=" + number(g.weights.at(w.name));
  for (const Rule& r : rules_) out += " " + r.name + "=" + g.rules.at(r.name);
  return out;
}

namespace {

bool upper_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// The length of a number (sign, digits, point, exponent) at text[at], 0 if none.
size_t number_length(const std::string& text, size_t at) {
  size_t i = at, digits = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  if (digits == 0) return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    const size_t start = j;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j > start) i = j;
  }
  return i - at;
}

/// NAME = value pairs: an upper-case name, '=', then a number, a "quoted"
/// lower-case word or a bare lower-case word; the first of each name counts.
std::map<std::string, std::string> name_value_pairs(const std::string& text) {
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!(text[i] >= 'A' && text[i] <= 'Z') ||
        (i > 0 && (upper_name_char(text[i - 1]) || std::islower(static_cast<unsigned char>(text[i - 1]))))) {
      continue;
    }
    size_t j = i;
    while (j < text.size() && upper_name_char(text[j])) ++j;
    const std::string name = text.substr(i, j - i);
    size_t k = j;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
    if (k >= text.size() || text[k] != '=' || (k + 1 < text.size() && text[k + 1] == '=')) {
      i = j;
      continue;
    }
    ++k;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
    const bool quoted = k < text.size() && text[k] == '"';
    const size_t v = quoted ? k + 1 : k;
    size_t e = v;
    while (e < text.size() && (std::islower(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
    std::string value;
    if (e > v && (!quoted || (e < text.size() && text[e] == '"'))) {
      value = text.substr(v, e - v);
    } else if (!quoted) {
      const size_t len = number_length(text, k);
      if (len > 0) value = text.substr(k, len);
    }
    if (!value.empty()) found.emplace(name, value);
    i = j;
  }
  return found;
}

}  // namespace

std::optional<Genome> Grammar::parse(const std::string& text) const {
  const std::map<std::string, std::string> found = name_value_pairs(text);
  Genome g;
  for (const Weight& w : weights_) {
    const auto it = found.find(w.name);
    if (it == found.end()) return std::nullopt;
    try {
      g.weights[w.name] = std::clamp(std::stod(it->second), w.lo, w.hi);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  for (const Rule& r : rules_) {
    const auto it = found.find(r.name);
    if (it == found.end() || std::find(r.options.begin(), r.options.end(), it->second) == r.options.end()) {
      return std::nullopt;
    }
    g.rules[r.name] = it->second;
  }
  return g;
}

void Grammar::mutate(Genome& g, nk::Rng& rng, double scale, int count, bool params_only) const {
  std::vector<size_t> which;
  if (count < 0) {
    for (size_t i = 0; i < weights_.size(); ++i) {
      if (rng.uniform() < 0.3) which.push_back(i);
    }
    if (which.empty()) which.push_back(rng.below(weights_.size()));
  } else {
    for (int c = 0; c < count; ++c) which.push_back(rng.below(weights_.size()));
  }
  for (size_t i : which) {
    const Weight& w = weights_[i];
    double& v = g.weights[w.name];
    v = std::clamp(v + scale * (w.hi - w.lo) * rng.normal(), w.lo, w.hi);
  }
  if (!params_only && rng.uniform() < 0.3) {
    if (!rules_.empty() && rng.uniform() < 0.5) {
      const Rule& r = rules_[rng.below(rules_.size())];
      g.rules[r.name] = r.options[rng.below(r.options.size())];
    } else {
      const Weight& w = weights_[rng.below(weights_.size())];
      double& v = g.weights[w.name];
      v = v != w.seed ? w.seed : w.lo + (w.hi - w.lo) * rng.uniform();
    }
  }
}

Genome Grammar::crossover(const Genome& a, const Genome& b, nk::Rng& rng) const {
  Genome g = a;
  for (const Weight& w : weights_) {
    if (rng.uniform() < 0.5) g.weights[w.name] = b.weights.at(w.name);
  }
  for (const Rule& r : rules_) {
    if (rng.uniform() < 0.5) g.rules[r.name] = b.rules.at(r.name);
  }
  return g;
}

std::optional<Problem> prompt_problem(const std::string& prompt) {
  // the interface's name as code writes it (FunSearch versions it: heuristics_v1)
  auto first = [&](std::initializer_list<const char*> names) {
    size_t at = std::string::npos;
    for (const char* n : names) at = std::min(at, prompt.find(n));
    return at;
  };
  const size_t t = first({"select_next_node"}), c = first({"def heuristics", "heuristics(", "heuristics_v"}),
               f = first({"get_matrix_and_jobs"});
  const size_t at = std::min({t, c, f});
  if (at == std::string::npos) return std::nullopt;
  return at == t ? Problem::tsp : at == c ? Problem::cvrp : Problem::fssp;
}

namespace {

double score_of(const std::string& line) {
  // "score" (or "Score"), at most 12 other characters, then a number
  for (size_t at = 0; (at = line.find("core", at)) != std::string::npos; at += 4) {
    if (at == 0 || (line[at - 1] != 's' && line[at - 1] != 'S')) continue;
    for (size_t k = at + 4; k < line.size() && k <= at + 4 + 12; ++k) {
      const size_t len = number_length(line, k);
      if (len > 0) return std::stod(line.substr(k, len));
      if (line[k] == '+' || line[k] == '-' || std::isdigit(static_cast<unsigned char>(line[k]))) break;
    }
  }
  // ReEvo labels instead of scores: the better code ranks first
  if (line.find("[Better code]") != std::string::npos) return 0;
  if (line.find("[Worse code]") != std::string::npos) return 1;
  return NAN;
}

/// FunSearch's versions instead of scores: a higher version is better.
double version_score(const std::string& code) {
  for (size_t at = 0; (at = code.find("def ", at)) != std::string::npos; at += 4) {
    const size_t paren = code.find('(', at);
    if (paren == std::string::npos) break;
    const size_t v = code.rfind("_v", paren);
    if (v == std::string::npos || v < at) continue;
    const std::string digits = code.substr(v + 2, paren - v - 2);
    if (!digits.empty() && digits.size() < 6 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      return -std::stod(digits);
    }
  }
  return NAN;
}

}  // namespace

std::vector<ShownProgram> shown_programs(const Grammar& grammar, const std::string& prompt) {
  std::vector<ShownProgram> out;
  std::istringstream in(prompt);
  std::string line;
  double header_score = NAN;
  int since_header = 99;
  bool in_code = false;
  std::string code;
  double code_score = NAN;
  int since_close = 99;
  while (std::getline(in, line)) {
    const bool fence = line.rfind("```", 0) == 0;
    if (in_code) {
      if (fence) {
        in_code = false;
        out.push_back({grammar.parse(code), std::isnan(code_score) ? version_score(code) : code_score});
        since_close = 0;
      } else {
        code += line + "\n";
      }
      continue;
    }
    // MCTS-AHD's layout: "Objective value: X" on the line after the code it scores
    if (++since_close == 1 && line.rfind("Objective value:", 0) == 0 && std::isnan(out.back().score)) {
      size_t k = 16;
      while (k < line.size() && line[k] == ' ') ++k;
      const size_t len = number_length(line, k);
      if (len > 0) out.back().score = std::stod(line.substr(k, len));
      continue;
    }
    if (fence) {
      in_code = true;
      code.clear();
      code_score = since_header <= 8 ? header_score : NAN;
      continue;
    }
    ++since_header;
    const double s = score_of(line);
    const bool failed = line.find("failed") != std::string::npos && line.rfind("#", 0) == 0;
    if (!std::isnan(s) || failed) {
      header_score = failed ? NAN : s;
      since_header = 0;
      if (!failed && line.find('=') != std::string::npos) {
        if (auto g = grammar.parse(line)) out.push_back({g, s});  // a notes line
      }
    }
  }
  return out;
}

double surrogate_bug_rate(int rung) {
  return 0.30 * (9 - rung) / 9.0;
}
double surrogate_step(int rung) {
  static const double step[10] = {0.25, 0.25, 0.25, 0.25, 0.18, 0.12, 0.10, 0.08, 0.06, 0.05};
  return step[std::clamp(rung, 0, 9)];
}
int surrogate_trials(int rung) {
  return rung <= 5 ? 1 : 1 << (rung - 5);
}

namespace {

/// The surrogate's own small instances for its private trials.
InstanceSet trial_instances(Problem problem, uint64_t seed) {
  nk::Rng rng(seed);
  InstanceSet set;
  set.problem = problem;
  const int count = problem == Problem::tsp ? 6 : 2;
  for (int k = 0; k < count; ++k) {
    Instance item;
    item.id = instance_id(k);
    if (problem == Problem::tsp) {
      for (int v = 0; v < 2 * 30; ++v) item.coords.push_back(rng.uniform());
    } else if (problem == Problem::cvrp) {
      item.coords = {0.5, 0.5};
      item.demand = {0};
      for (int v = 0; v < 20; ++v) {
        item.coords.push_back(rng.uniform());
        item.coords.push_back(rng.uniform());
        item.demand.push_back(static_cast<int32_t>(1 + rng.below(9)));
      }
      item.capacity = 50;
    } else {
      item.jobs = 15;
      item.machines = 5;
      item.processing = taillard_processing(1 + static_cast<int64_t>(rng.below(2147483646)), 15, 5);
    }
    set.items.push_back(std::move(item));
  }
  return set;
}

double trial_score(const InstanceSet& set, const std::string& code) {
  EvalConfig config;
  config.code = code;
  config.sandbox = SandboxMode::none;  // the surrogate's own code, not a candidate's
  config.timeout = 30;
  config.aco.ants = 8;
  config.aco.iterations = 10;
  config.gls.iterations = 20;
  const EvalReport r = evaluate(set, config);
  double sum = 0;
  for (const InstanceResult& item : r.items) {
    if (item.status != Status::ok) return INFINITY;
    sum += item.objective;
  }
  return sum / static_cast<double>(r.items.size());
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The last user message: what is asked now.
std::string request_of(const std::string& prompt) {
  const size_t at = prompt.rfind("### user");
  return lower(at == std::string::npos ? prompt : prompt.substr(at));
}

std::string notes_reply(int rung, const Grammar& grammar, std::vector<ShownProgram> shown) {
  std::string out = "Working notes:\n";
  std::vector<ShownProgram> scored;
  int failed = 0;
  for (const ShownProgram& p : shown) {
    if (p.genome && !std::isnan(p.score)) {
      scored.push_back(p);
    } else {
      ++failed;
    }
  }
  if (rung <= 2) {
    // a weak model keeps the last thing it saw, not the best
    if (!scored.empty()) {
      const ShownProgram& p = scored.back();
      out += "- score " + number(p.score) + ": " + grammar.describe(*p.genome) + "\n";
    }
    out += "- tried several variants.\n";
    return out;
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.score < b.score; });
  const size_t keep = rung <= 5 ? 3 : 6;
  for (size_t i = 0; i < scored.size() && i < keep; ++i) {
    out += "- score " + number(scored[i].score) + ": " + grammar.describe(*scored[i].genome) + "\n";
  }
  if (failed > 0) out += "- " + std::to_string(failed) + " programs failed or were not in my notation.\n";
  return out;
}

}  // namespace

std::string surrogate_reply(int rung, const std::string& prompt, uint64_t seed, double temperature) {
  uint64_t h = nk::mix64(seed ^ 0x5a11e5 ^ (static_cast<uint64_t>(rung) << 40));  // each rung its own model
  for (unsigned char c : prompt) h = nk::mix64(h ^ c);
  nk::Rng rng(h);
  const std::optional<Problem> problem = prompt_problem(prompt);
  if (!problem) return "Description: I cannot tell which interface is wanted.\n```python\npass\n```\n";
  const Grammar grammar(*problem);
  const std::vector<ShownProgram> shown = shown_programs(grammar, prompt);
  const std::string request = request_of(prompt);
  if (request.find("compress") != std::string::npos || request.find("hints for designing") != std::string::npos) {
    return notes_reply(rung, grammar, shown);
  }
  if (request.find("re-describe") != std::string::npos) {
    // MCTS-AHD's refinement: say what the code shown does
    for (const ShownProgram& p : shown) {
      if (p.genome) return "Description: " + grammar.describe(*p.genome) + "\n";
    }
    return "Description: a heuristic outside my notation.\n";
  }
  const bool obeys = rung >= 3;
  auto says = [&](std::initializer_list<const char*> words) {
    return std::any_of(words.begin(), words.end(), [&](const char* w) { return request.find(w) != std::string::npos; });
  };
  const bool params_only = obeys && says({"parameters only", "only the parameters", "parameter settings"});
  const bool combine = obeys && says({"combine", "crossover", "common backbone", "[better code]"});
  const bool novel =
      obeys && !combine && says({"completely different", "new idea", "totally different", "be very creative"});
  std::vector<ShownProgram> usable;
  for (const ShownProgram& p : shown) {
    if (p.genome) usable.push_back(p);
  }
  auto best_first = [](std::vector<ShownProgram>& v) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      const double x = std::isnan(a.score) ? INFINITY : a.score, y = std::isnan(b.score) ? INFINITY : b.score;
      return x < y;
    });
  };
  const double scale = surrogate_step(rung) * temperature;
  auto propose = [&](nk::Rng& r) {
    Genome g;
    if (rung <= 2 || usable.empty() || novel) {
      // ignores the prompt (or is asked for something new): a fresh draw
      g = novel || rung <= 2 ? grammar.random(r) : grammar.seed();
      if (!novel && rung > 2) grammar.mutate(g, r, scale, 1, params_only);
      return g;
    }
    std::vector<ShownProgram> ranked = usable;
    best_first(ranked);
    if (combine && ranked.size() >= 2) {
      g = grammar.crossover(ranked[0].genome.value(), ranked[1].genome.value(), r);
      grammar.mutate(g, r, scale, 1, params_only);
      return g;
    }
    if (rung <= 5) {
      // edits one program: a random one (rung 3), the best with probability 0.5 (4), the best (5)
      const bool best = rung == 5 || (rung == 4 && r.uniform() < 0.5);
      g = best ? ranked[0].genome.value() : usable[r.below(usable.size())].genome.value();
      grammar.mutate(g, r, scale, 1, params_only);
      return g;
    }
    // uses every scored program: the best, crossed with another of the top three half the time
    g = ranked[0].genome.value();
    if (ranked.size() >= 2 && r.uniform() < 0.5) {
      g = grammar.crossover(g, ranked[1 + r.below(std::min<size_t>(2, ranked.size() - 1))].genome.value(), r);
    }
    grammar.mutate(g, r, scale, -1, params_only);
    return g;
  };
  Genome chosen = propose(rng);
  const int trials = surrogate_trials(rung);
  if (trials > 1) {
    const InstanceSet own = trial_instances(*problem, nk::mix64(h ^ 0x7e57));
    double best = trial_score(own, grammar.emit(chosen));
    for (int t = 1; t < trials; ++t) {
      Genome g = propose(rng);
      const double s = trial_score(own, grammar.emit(g));
      if (s < best) {
        best = s;
        chosen = g;
      }
    }
  }
  const bool bug = rng.uniform() < surrogate_bug_rate(rung);
  const std::string code = bug ? grammar.emit_with_bug(chosen, rng) : grammar.emit(chosen);
  return "Description: " + grammar.describe(chosen) + "\n```python\n" + code + "```\n";
}

}  // namespace sevol
