// population_frameworks.cpp - EoH, ReEvo and FunSearch as their authors'
// code runs them (llm4ad's EoH and FunSearch, ReEvo's repository): their
// populations, selections and prompts, over the shared run.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "simple-evol/framework_run.hpp"
#include "simple-evol/surrogate.hpp"

namespace sevol::detail {

namespace {

// ---------------------------------------------------------------------------
// EoH (llm4ad): i1 until 2N, then e1, e2, m1, m2 in turn; rank selection
// p ~ 1/(r + N); survival of the best N when N offspring are waiting.

struct Individual {
  std::string code, thought;
  double score;  ///< mean objective; +inf for failures and duplicates
};

const char* kEohFormat =
    "1. First, describe your new algorithm and main steps in one sentence. The description must be inside braces { }.\n"
    "2. Next, implement the following Python function:\n";

std::string eoh_task(Problem p) {
  return task_text(p) + "\n";
}

std::string eoh_individuals(const std::vector<const Individual*>& parents) {
  std::string out;
  for (size_t i = 0; i < parents.size(); ++i) {
    out += "No. " + std::to_string(i + 1) + " algorithm and the corresponding code are:\n" + parents[i]->thought +
           "\n" + fenced(parents[i]->code);
  }
  return out;
}

}  // namespace

void run_eoh(Run& run) {
  const Problem p = run.problem();
  const int64_t budget = run.config().budget;
  const size_t pop_size = budget >= 1000 ? 20 : budget >= 200 ? 10 : 5;
  std::vector<Individual> population, waiting;
  const std::string format = std::string(kEohFormat) + signature_only(p) + "\nDo not give additional explanations.";
  auto duplicate = [&](const Candidate& c) {
    for (const auto* set : {&population, &waiting}) {
      for (const Individual& i : *set) {
        if (i.code == c.code || i.score == c.score) return true;
      }
    }
    return false;
  };
  auto survival = [&] {
    population.insert(population.end(), waiting.begin(), waiting.end());
    waiting.clear();
    std::stable_sort(population.begin(), population.end(),
                     [](const auto& a, const auto& b) { return a.score < b.score; });
    if (population.size() > pop_size) population.resize(pop_size);
  };
  auto register_candidate = [&](const Candidate& c, bool initial) {
    if (initial && c.status != Status::ok) return;  // generation 0 keeps only working code
    Individual i{c.code, c.description, c.status == Status::ok ? c.score : INFINITY};
    if (duplicate(c)) i.score = INFINITY;
    waiting.push_back(i);
    if (waiting.size() >= pop_size) survival();
  };
  auto select = [&]() -> const Individual* {
    std::vector<const Individual*> live;
    for (const Individual& i : population) {
      if (std::isfinite(i.score)) live.push_back(&i);
    }
    if (live.empty()) return nullptr;
    std::vector<double> w;
    for (size_t r = 0; r < live.size(); ++r) w.push_back(1.0 / static_cast<double>(r + live.size()));
    return live[draw(w, run.rng())];
  };
  const std::string i1 = eoh_task(p) + format;
  const int64_t initial = std::min<int64_t>(budget, 2 * static_cast<int64_t>(pop_size));
  while (static_cast<int64_t>(run.out().size()) < initial) register_candidate(run.sample("i1", {{"user", i1}}), true);
  if (!waiting.empty()) survival();
  while (!run.done()) {
    for (const char* op : {"e1", "e2", "m1", "m2"}) {
      if (run.done()) break;
      const std::string o = op;
      std::vector<const Individual*> parents;
      const size_t count = o[0] == 'e' ? 2 : 1;
      for (size_t k = 0; k < count; ++k) {
        if (const Individual* s = select()) parents.push_back(s);
      }
      std::string prompt;
      if (parents.empty()) {
        prompt = i1;  // nothing alive yet: initialise again
      } else if (o == "e1") {
        prompt = eoh_task(p) + "I have " + std::to_string(parents.size()) +
                 " existing algorithms with their codes as follows:\n" + eoh_individuals(parents) +
                 "Please help me create a new algorithm that has a totally different form from the given ones.\n" +
                 format;
      } else if (o == "e2") {
        prompt = eoh_task(p) + "I have " + std::to_string(parents.size()) +
                 " existing algorithms with their codes as follows:\n" + eoh_individuals(parents) +
                 "Please help me create a new algorithm that has a totally different form from the given ones but can "
                 "be motivated from them. First identify the common backbone idea in the provided algorithms, then "
                 "describe your new algorithm and implement it.\n" +
                 format;
      } else {
        prompt = eoh_task(p) + "I have one algorithm with its code as follows. Algorithm description:\n" +
                 parents[0]->thought + "\nCode:\n" + fenced(parents[0]->code) +
                 (o == "m1" ? "Please assist me in creating a new algorithm that has a different form but can be a "
                              "modified version of the algorithm provided.\n"
                            : "Please identify the main algorithm parameters and assist me in creating a new algorithm "
                              "that has different parameter settings of the score function provided.\n") +
                 format;
      }
      register_candidate(run.sample(o, {{"user", prompt}}), false);
    }
  }
}

// ---------------------------------------------------------------------------
// ReEvo: 30 initial samples (0.3 warmer), then per generation 10 parent pairs
// of unequal objective (uniform), a short-term reflection and a crossover per
// pair, a long-term reflection, 5 mutations of the elitist.

void run_reevo(Run& run) {
  const Problem p = run.problem();
  const std::string name = function_name(p);
  constexpr size_t kPop = 10, kInit = 30, kMutations = 5;
  const std::string generator = "Write a " + name + " function for " + task_text(p) + "\n" + interface_text(p) + "\n";
  const std::string system_gen = kSystem;
  const std::string system_ref =
      "You are an expert in the domain of optimization heuristics. Your task is to give hints to design better "
      "heuristics.";
  struct Ind {
    std::string code;
    double score;
  };
  std::vector<Ind> population;
  Ind elitist{"", INFINITY};
  std::string long_term;
  auto add = [&](const Candidate& c, std::vector<Ind>& to) {
    if (c.status == Status::ok) {
      to.push_back({c.code, c.score});
      if (c.score < elitist.score) elitist = {c.code, c.score};
    }
  };
  const std::string init_prompt =
      generator + "\n" + fenced(seed_code(p)) +
      "\nRefer to the format of a trivial design above. Be very creative and give `" + name +
      "_v2`. Output code only and enclose your code with Python code block: ```python ... ```.";
  for (size_t k = 0; k < kInit && !run.done(); ++k)
    add(run.sample("init", {{"system", system_gen}, {"user", init_prompt}}, run.config().temperature + 0.3),
        population);
  while (!run.done()) {
    std::vector<Ind> pool = population;
    if (std::isfinite(elitist.score) &&
        std::none_of(pool.begin(), pool.end(), [&](const Ind& i) { return i.code == elitist.code; })) {
      pool.insert(pool.begin(), elitist);
    }
    std::vector<std::pair<Ind, Ind>> pairs;
    for (int trial = 0; pairs.size() < kPop && trial < 1000 && pool.size() >= 2; ++trial) {
      const size_t a = run.rng().below(pool.size());
      size_t b = run.rng().below(pool.size() - 1);
      if (b >= a) ++b;
      if (pool[a].score != pool[b].score) pairs.emplace_back(pool[a], pool[b]);
    }
    if (pairs.size() < kPop) {
      // selection fails (fewer than two distinct working heuristics): sample the initial prompt again
      add(run.sample("init", {{"system", system_gen}, {"user", init_prompt}}, run.config().temperature + 0.3),
          population);
      continue;
    }
    std::vector<std::string> reflections;
    std::vector<Ind> offspring;
    for (const auto& [x, y] : pairs) {
      const Ind& worse = x.score > y.score ? x : y;
      const Ind& better = x.score > y.score ? y : x;
      const std::string st = "Below are two " + name + " functions for " + task_text(p) + "\n" + interface_text(p) +
                             "\n\nYou are provided with two code versions below, where the second version performs "
                             "better than the first one.\n\n[Worse code]\n" +
                             fenced(worse.code) + "\n[Better code]\n" + fenced(better.code) +
                             "\nYou respond with some hints for designing better heuristics, based on the two code "
                             "versions and using less than 20 words. Reflect.";
      reflections.push_back(run.ask("short-term reflection", {{"system", system_ref}, {"user", st}}));
      if (run.done()) break;
      const std::string cross = generator + "\n[Worse code]\n" + fenced(worse.code) + "\n[Better code]\n" +
                                fenced(better.code) + "\n[Reflection]\n" + reflections.back() +
                                "\n\n[Improved code]\nPlease write an improved function `" + name +
                                "_v2`, according to the reflection. Output code only and enclose your code with "
                                "Python code block: ```python ... ```.";
      add(run.sample("crossover", {{"system", system_gen}, {"user", cross}}), offspring);
    }
    population = offspring;
    if (run.done()) break;
    std::string joined;
    for (const std::string& r : reflections) joined += r + "\n";
    const std::string lt = "Below is your prior long-term reflection on designing heuristics for " + task_text(p) +
                           "\n" + long_term + "\n\nBelow are some newly gained insights.\n" + joined +
                           "\nWrite constructive hints for designing better heuristics, based on prior reflections and "
                           "new insights and using less than 50 words.";
    long_term = run.ask("long-term reflection", {{"system", system_ref}, {"user", lt}});
    if (!std::isfinite(elitist.score)) continue;
    const std::string mutation = generator + "\n[Prior reflection]\n" + long_term + "\n\n[Code]\n" +
                                 fenced(elitist.code) + "\n[Improved code]\nPlease write a mutated function `" + name +
                                 "_v2`, according to the reflection. Output code only and enclose your code with "
                                 "Python code block: ```python ... ```.";
    for (size_t k = 0; k < kMutations && !run.done(); ++k) {
      add(run.sample("mutation", {{"system", system_gen}, {"user", mutation}}), population);
    }
  }
}

// ---------------------------------------------------------------------------
// FunSearch (llm4ad): 10 islands seeded with the seed heuristic; a prompt
// shows 2 programs of a random island (clusters by score signature drawn by
// softmax of their scores at temperature 0.1 (1 - n mod 30000 / 30000),
// shorter programs preferred within a cluster) as versions v0, v1 in
// increasing score, and asks for v2; 4 samples per prompt; the worse half of
// the islands restarts from the best of the others every budget/4 samples.

namespace {

struct Program {
  std::string code;
  size_t length;
};
struct Cluster {
  double score;  ///< higher is better: minus the mean objective
  std::vector<Program> programs;
};
struct Island {
  std::map<std::vector<double>, Cluster> clusters;
  int64_t programs = 0;
  double best() const {
    double b = -INFINITY;
    for (const auto& [sig, c] : clusters) b = std::max(b, c.score);
    return b;
  }
};

std::vector<double> softmax(const std::vector<double>& x, double temperature) {
  const double top = *std::max_element(x.begin(), x.end());
  std::vector<double> out;
  for (double v : x) out.push_back(std::exp((v - top) / temperature));
  return out;
}

/// "def NAME(" renamed "def NAME_vK(".
std::string versioned(const std::string& code, const std::string& name, int k) {
  std::string out = code;
  const std::string from = "def " + name + "(";
  const size_t at = out.find(from);
  if (at != std::string::npos) out.replace(at, from.size(), "def " + name + "_v" + std::to_string(k) + "(");
  return out;
}

}  // namespace

void run_funsearch(Run& run) {
  const Problem p = run.problem();
  const std::string name = function_name(p);
  constexpr int kIslands = 10, kPerPrompt = 2, kSamples = 4;
  std::vector<Island> islands(kIslands);
  auto register_in = [&](Island& island, const std::string& code, const std::vector<double>& signature, double score) {
    auto it = island.clusters.find(signature);
    if (it == island.clusters.end()) it = island.clusters.emplace(signature, Cluster{score, {}}).first;
    it->second.programs.push_back({code, code.size()});
    ++island.programs;
  };
  const Candidate seed = run.score_seed();
  if (seed.status == Status::ok) {
    for (Island& island : islands) register_in(island, seed.code, seed.objectives, -seed.score);
  }
  const int64_t reset_every = std::max<int64_t>(1, run.config().budget / 4);
  int64_t next_reset = reset_every;
  while (!run.done()) {
    const int id = static_cast<int>(run.rng().below(kIslands));
    Island& island = islands[id];
    std::vector<std::pair<double, std::string>> shown;
    if (!island.clusters.empty()) {
      std::vector<const Cluster*> clusters;
      std::vector<double> scores;
      for (const auto& [sig, c] : island.clusters) {
        clusters.push_back(&c);
        scores.push_back(c.score);
      }
      double top = 0;
      for (double s : scores) top = std::max(top, std::fabs(s));
      if (top > 1) {
        for (double& s : scores) s /= top;
      }
      const double temperature = 0.1 * (1.0 - static_cast<double>(island.programs % 30000) / 30000.0);
      const std::vector<double> w = softmax(scores, temperature);
      const int count = std::min<int>(kPerPrompt, static_cast<int>(clusters.size()));
      for (int k = 0; k < count; ++k) {
        const Cluster& c = *clusters[draw(w, run.rng())];
        size_t shortest = c.programs[0].length, longest = shortest;
        for (const Program& prog : c.programs) {
          shortest = std::min(shortest, prog.length);
          longest = std::max(longest, prog.length);
        }
        std::vector<double> neg;
        for (const Program& prog : c.programs) {
          neg.push_back(-(static_cast<double>(prog.length - shortest)) / (static_cast<double>(longest) + 1e-6));
        }
        shown.emplace_back(c.score, c.programs[draw(softmax(neg, 1.0), run.rng())].code);
      }
      std::stable_sort(shown.begin(), shown.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    std::string prompt = task_text(p) + "\n\n";
    for (size_t k = 0; k < shown.size(); ++k) {
      prompt += fenced(versioned(shown[k].second, name, static_cast<int>(k)) +
                       (k > 0 ? "# Improved version of `" + name + "_v" + std::to_string(k - 1) + "`.\n" : ""));
    }
    const int next = static_cast<int>(shown.size());
    prompt += "```python\n" + versioned(signature_only(p), name, next) + "\n    \"\"\"Improved version of `" + name +
              "_v" + std::to_string(std::max(0, next - 1)) + "`.\"\"\"\n```\n" + "Complete `" + name + "_v" +
              std::to_string(next) +
              "` as a whole program (imports and constants "
              "included) in one ```python block.";
    for (int s = 0; s < kSamples && !run.done(); ++s) {
      const Candidate& c = run.sample("generate", {{"user", prompt}});
      if (c.status == Status::ok) register_in(island, c.code, c.objectives, -c.score);
      if (static_cast<int64_t>(run.out().size()) >= next_reset) {
        next_reset += reset_every;
        std::vector<int> order(kIslands);
        std::iota(order.begin(), order.end(), 0);
        std::vector<double> key;
        for (const Island& isl : islands) key.push_back(isl.best() + 1e-6 * run.rng().normal());
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[a] < key[b]; });
        for (int r = 0; r < kIslands / 2; ++r) {
          const Island& founder = islands[order[kIslands / 2 + static_cast<int>(run.rng().below(kIslands / 2))]];
          Island fresh;
          const Cluster* best = nullptr;
          std::vector<double> best_sig;
          for (const auto& [sig, cl] : founder.clusters) {
            if (!best || cl.score > best->score) {
              best = &cl;
              best_sig = sig;
            }
          }
          if (best) register_in(fresh, best->programs[0].code, best_sig, best->score);
          islands[order[r]] = std::move(fresh);
        }
      }
    }
  }
}

}  // namespace sevol::detail
