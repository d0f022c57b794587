// simple-evol.cpp - Taillard's generator and bound against his table (all 120
// checksums), Held-Karp against brute force, the heuristics' and solvers'
// invariants (tours are permutations, routes feasible, NEH's published
// values, ig/ils never worse than their start), the GLS with a C++
// perturbation, and the sandboxed evaluator on small Python heuristics
// (answers, exceptions, invalid answers, timeouts); AHI, token counts, reply
// splitting; the surrogates' grammars (code parses back, the seeds are the
// published seed heuristics, bugs fail) and their determinism.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/rng.hpp"
#include "simple-evol/cvrp.hpp"
#include "simple-evol/evaluator.hpp"
#include "simple-evol/frameworks.hpp"
#include "simple-evol/fssp.hpp"
#include "simple-evol/llm.hpp"
#include "nk/sandbox.hpp"
#include "simple-evol/surrogate.hpp"
#include "simple-evol/taillard.hpp"
#include "simple-evol/tsp.hpp"

using namespace sevol;

namespace {

Instance random_tsp(int64_t n, uint64_t seed) {
  nk::Rng rng(seed);
  Instance item;
  item.id = "000000";
  item.coords.resize(static_cast<size_t>(2 * n));
  for (double& c : item.coords) c = rng.uniform();
  return item;
}

Instance random_cvrp(int64_t customers, uint64_t seed) {
  nk::Rng rng(seed);
  Instance item;
  item.id = "000000";
  item.coords = {0.5, 0.5};
  item.demand = {0};
  for (int64_t v = 0; v < customers; ++v) {
    item.coords.push_back(rng.uniform());
    item.coords.push_back(rng.uniform());
    item.demand.push_back(static_cast<int32_t>(1 + rng.below(9)));
  }
  item.capacity = 50;
  return item;
}

bool is_tour(const std::vector<int64_t>& t, int64_t n) {
  std::vector<int64_t> s = t;
  std::sort(s.begin(), s.end());
  for (int64_t i = 0; i < n; ++i) {
    if (s[i] != i) return false;
  }
  return static_cast<int64_t>(t.size()) == n && t[0] == 0;
}

double brute_force(const std::vector<double>& d, int64_t n) {
  std::vector<int64_t> perm(static_cast<size_t>(n - 1));
  std::iota(perm.begin(), perm.end(), 1);
  double best = INFINITY;
  do {
    std::vector<int64_t> t = {0};
    t.insert(t.end(), perm.begin(), perm.end());
    best = std::min(best, tour_length(d, t));
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

InstanceSet one_set(Problem p, Instance item) {
  InstanceSet set;
  set.problem = p;
  set.items.push_back(std::move(item));
  return set;
}

EvalConfig trusted(const std::string& code) {
  EvalConfig c;
  c.code = code;
  c.sandbox = SandboxMode::none;
  c.timeout = 20;
  return c;
}

}  // namespace

TEST_SUITE("simple-evol") {
  TEST_CASE("Taillard's generator gives his first values and every instance's checksum; the bound his table") {
    const std::vector<int32_t> p = taillard_processing(873654221, 20, 5);
    CHECK(p[0] == 54);
    CHECK(p[1] == 83);
    CHECK(p[2] == 15);
    CHECK(p[3] == 71);
    for (const TaillardEntry& e : taillard_table()) {
      const Instance item = taillard_instance(e);
      const int64_t sum = std::accumulate(item.processing.begin(), item.processing.end(), int64_t{0});
      CAPTURE(e.name);
      CHECK(sum == e.sum_p);
      CHECK(item.lower_bound == e.lower_bound);
      CHECK(item.lower_bound <= item.upper_bound);
    }
    CHECK(taillard_select("all").size() == 110);
    CHECK(taillard_select("all500").size() == 120);
    CHECK(taillard_select("20x5,ta011").size() == 11);
    CHECK_THROWS(taillard_select("ta121"));
  }

  TEST_CASE("Held-Karp equals brute force; nn, fi and ils give tours no shorter than it") {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      const int64_t n = 4 + static_cast<int64_t>(seed % 5);
      const Instance item = random_tsp(n, seed);
      const std::vector<double> d = distance_matrix(item.coords);
      const std::vector<int64_t> exact = tsp_held_karp(d, n);
      REQUIRE(is_tour(exact, n));
      const double opt = tour_length(d, exact);
      CHECK(opt == doctest::Approx(brute_force(d, n)).epsilon(1e-12));
      nk::Rng rng(seed);
      for (const auto& t : {tsp_nearest_neighbor(d, n), tsp_farthest_insertion(d, n), tsp_ils(d, n, 50, rng)}) {
        REQUIRE(is_tour(t, n));
        CHECK(tour_length(d, t) >= opt - 1e-12);
      }
    }
  }

  TEST_CASE("the distance matrix rounds as numpy: sqrt(dx*dx + dy*dy) with the square rounded first") {
    const std::vector<double> c = {0.1, 0.7, 0.3, 0.25, 0.9, 0.05};
    const std::vector<double> d = distance_matrix(c);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        const double dx = c[2 * i] - c[2 * j], dy = c[2 * i + 1] - c[2 * j + 1];
        const double sx = dx * dx, sy = dy * dy;
        CHECK(d[i * 3 + j] == std::sqrt(sx + sy));
      }
    }
  }

  TEST_CASE("ils improves on farthest insertion at n = 100") {
    const Instance item = random_tsp(100, 7);
    const std::vector<double> d = distance_matrix(item.coords);
    nk::Rng rng(3);
    const std::vector<int64_t> t = tsp_ils(d, 100, 2000, rng);
    REQUIRE(is_tour(t, 100));
    const double fi = tour_length(d, tsp_farthest_insertion(d, 100));
    const double nn = tour_length(d, tsp_nearest_neighbor(d, 100));
    CHECK(tour_length(d, t) < fi);
    CHECK(tour_length(d, t) < 0.85 * nn);
  }

  TEST_CASE("savings and ils give feasible routes; ils no longer than savings; the ACO feasible") {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const Instance item = random_cvrp(30, seed);
      const std::vector<double> d = distance_matrix(item.coords);
      const std::vector<int64_t> sav = cvrp_savings(item, d);
      CHECK(check_routes(item, sav).empty());
      nk::Rng rng(seed);
      const std::vector<int64_t> ils = cvrp_ils(item, d, 50, rng);
      CHECK(check_routes(item, ils).empty());
      CHECK(routes_length(d, item.nodes(), ils) <= routes_length(d, item.nodes(), sav) + 1e-12);
      std::vector<double> eta(d.size());
      for (size_t i = 0; i < d.size(); ++i) eta[i] = d[i] > 0 ? 1.0 / d[i] : 1.0;
      AcoConfig aco;
      aco.ants = 5;
      aco.iterations = 5;
      const std::vector<int64_t> ants = cvrp_aco(item, d, eta, aco, rng);
      CHECK(check_routes(item, ants).empty());
    }
    Instance tight = random_cvrp(10, 4);
    CHECK(check_routes(tight, {0, 1, 2, 0}).find("not visited") != std::string::npos);
  }

  TEST_CASE("NEH gives the literature's values on ta001 and ta002; ig no worse than NEH") {
    const std::vector<TaillardEntry> ta = taillard_select("ta001,ta002");
    const double neh_known[2] = {1286, 1365};
    for (int i = 0; i < 2; ++i) {
      const FlowShop shop = FlowShop::from(taillard_instance(ta[i]));
      const double neh = makespan(shop, fssp_neh(shop));
      CHECK(neh == neh_known[i]);
      nk::Rng rng(1);
      IgConfig ig;
      ig.iterations = 200;
      const double best = makespan(shop, fssp_ig(shop, ig, rng));
      CHECK(best <= neh);
      CHECK(best >= ta[i].lower_bound);
    }
  }

  TEST_CASE("the GLS keeps the best sequence, never worse than NEH; unusable answers are invalid") {
    const FlowShop shop = FlowShop::from(taillard_instance(taillard_select("ta011")[0]));
    const double neh = makespan(shop, fssp_neh(shop));
    int calls = 0;
    GlsConfig cfg;
    cfg.iterations = 20;
    const GlsResult r =
        fssp_gls(shop, cfg, [&](const std::vector<int64_t>& seq, std::vector<double>& m, std::vector<int64_t>& jobs) {
          ++calls;
          m = shop.p;
          for (int64_t j = 0; j < shop.n; ++j) m[j * shop.m + (calls % shop.m)] *= 1.5;
          jobs = {seq[0], seq[1], seq[2]};
          return std::string();
        });
    CHECK(calls == 20);
    CHECK(r.invalid.empty());
    CHECK(r.best_makespan <= neh);
    CHECK(makespan(shop, r.best) == r.best_makespan);
    const GlsResult bad =
        fssp_gls(shop, cfg, [&](const std::vector<int64_t>&, std::vector<double>& m, std::vector<int64_t>& jobs) {
          m = shop.p;
          jobs = {0};
          return std::string();
        });
    CHECK(bad.invalid.find("at least 2") != std::string::npos);
  }

  TEST_CASE("the evaluator runs a Python heuristic: answers, exceptions, invalid answers, timeouts") {
    const Instance item = random_tsp(9, 5);
    const InstanceSet set = one_set(Problem::tsp, item);
    const std::vector<double> d = distance_matrix(item.coords);
    EvalReport nn = evaluate(
        set, trusted("import numpy as np\n"
                     "def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):\n"
                     "    return unvisited_nodes[np.argmin(distance_matrix[current_node][unvisited_nodes])]\n"));
    REQUIRE(nn.items[0].status == Status::ok);
    CHECK(nn.items[0].solution == tsp_nearest_neighbor(d, 9));
    CHECK(nn.items[0].objective == tour_length(d, tsp_nearest_neighbor(d, 9)));
    // ReEvo's versioned names are found, and a heuristic that writes into the matrix still works
    EvalReport v2 = evaluate(
        set, trusted("def select_next_node_v2(current_node, destination_node, unvisited_nodes, distance_matrix):\n"
                     "    distance_matrix[current_node, current_node] = 1e9\n"
                     "    return int(unvisited_nodes[-1])\n"));
    CHECK(v2.items[0].status == Status::ok);
    EvalReport raises = evaluate(set, trusted("def select_next_node(a, b, c, d):\n    return 1 / 0\n"));
    CHECK(raises.items[0].status == Status::exception);
    CHECK(raises.items[0].error.find("ZeroDivisionError") != std::string::npos);
    EvalReport invalid = evaluate(set, trusted("def select_next_node(a, b, c, d):\n    return 0\n"));
    CHECK(invalid.items[0].status == Status::invalid);
    EvalReport syntax = evaluate(set, trusted("def select_next_node(a, b, c, d)\n    return 0\n"));
    CHECK(syntax.items[0].status == Status::exception);
    CHECK(syntax.items[0].error.find("SyntaxError") != std::string::npos);
    EvalConfig slow = trusted("def select_next_node(a, b, c, d):\n    while True:\n        pass\n");
    slow.timeout = 0.3;
    EvalReport hang = evaluate(set, slow);
    CHECK(hang.items[0].status == Status::timeout);
  }

  TEST_CASE("the namespace sandbox, where it runs, stops writes outside scratch and connections") {
    if (!namespace_sandbox_unavailable().empty()) {
      MESSAGE("namespace sandbox unavailable here: " << namespace_sandbox_unavailable());
      return;
    }
    const InstanceSet set = one_set(Problem::tsp, random_tsp(6, 2));
    EvalConfig write = trusted(
        "def select_next_node(a, b, c, d):\n"
        "    open('/tmp/simple-evol-unit-escape', 'w').write('x')\n"
        "    return int(c[0])\n");
    write.sandbox = SandboxMode::namespaces;
    EvalReport w = evaluate(set, write);
    CHECK(w.items[0].status == Status::exception);
    CHECK(w.items[0].error.find("PermissionError") != std::string::npos);
    EvalConfig scratch = trusted(
        "import os\n"
        "def select_next_node(a, b, c, d):\n"
        "    open('here.txt', 'w').write('x')\n"
        "    return int(c[0])\n");
    scratch.sandbox = SandboxMode::namespaces;
    CHECK(evaluate(set, scratch).items[0].status == Status::ok);
    EvalConfig net = trusted(
        "import socket\n"
        "def select_next_node(a, b, c, d):\n"
        "    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
        "    return int(c[0])\n");
    net.sandbox = SandboxMode::namespaces;
    EvalReport n = evaluate(set, net);
    CHECK(n.items[0].status == Status::exception);
    CHECK(n.items[0].error.find("unreachable") != std::string::npos);
  }
}

TEST_SUITE("simple-evol") {
  TEST_CASE("AHI = M + K + log10(1 + Q) reproduces the paper's SimpleEvol value") {
    CHECK(std::round(ahi(1, 2, 1001) * 1000) / 1000 == doctest::Approx(6.001));
    CHECK(ahi(0, 1, 0) == 1.0);
    CHECK(framework_shape("simpleevol").m == 1);
    CHECK(framework_shape("simpleevol").k == 2);
    CHECK_THROWS(framework_shape("nope"));
  }

  TEST_CASE("tokens are counted by a fixed rule; replies split into description and code") {
    CHECK(count_tokens("def f(x): return x+1") == 10);
    CHECK(count_tokens("") == 0);
    std::string code, description;
    split_reply(
        "Some thoughts.\nDescription: nearest first\n```python\nimport numpy as np\n```\ntrailing\n```python\nx\n```\n",
        code, description);
    CHECK(description == "nearest first");
    CHECK(code == "import numpy as np\n");
    split_reply("def select_next_node(a, b, c, d):\n    return c[0]\n", code, description);
    CHECK(code.find("def select_next_node") == 0);
    // EoH's and MCTS-AHD's format: the idea in braces before the code
    split_reply("{Prefer near cities.}\n```python\nx = {1: 2}\n```\n", code, description);
    CHECK(description == "Prefer near cities.");
    CHECK(code == "x = {1: 2}\n");
  }

  TEST_CASE("MCTS-AHD: M 1, K 6; its layout's objective values read; a re-describe request describes the code") {
    CHECK(framework_shape("mctsahd").m == 1);
    CHECK(framework_shape("mctsahd").k == 6);
    CHECK(std::round(ahi(1, 6, 1640) * 1000) / 1000 == doctest::Approx(10.215));
    const Grammar g(Problem::tsp);
    nk::Rng rng(3);
    const Genome a = g.random(rng), b = g.random(rng);
    const std::string prompt = "### user\nHere are 2 algorithms (select_next_node):\n\nNo.1: description\nx\n```python\n" +
                               g.emit(a) + "```\nObjective value: 6.25\n\nNo.2: description\ny\n```python\n" +
                               g.emit(b) + "```\n\nObjective value: 5.5\nCreate a new algorithm.\n";
    const std::vector<ShownProgram> shown = shown_programs(g, prompt);
    REQUIRE(shown.size() == 2);
    CHECK(shown[0].score == 6.25);
    CHECK(std::isnan(shown[1].score));  // only the line right below the code scores it
    const std::string reply = surrogate_reply(
        2, "### user\nselect_next_node\n```python\n" + g.emit(b) + "```\nRe-describe the algorithm.\n", 1, 1.0);
    CHECK(reply == "Description: " + g.describe(b) + "\n");
  }

  TEST_CASE("the grammars' code parses back, and their seeds are the published seed heuristics") {
    for (Problem p : {Problem::tsp, Problem::cvrp, Problem::fssp}) {
      const Grammar g(p);
      nk::Rng rng(static_cast<uint64_t>(p) + 3);
      for (int i = 0; i < 20; ++i) {
        Genome x = g.random(rng);
        g.mutate(x, rng, 0.1, -1, false);
        const std::optional<Genome> back = g.parse(g.emit(x));
        REQUIRE(back.has_value());
        for (const auto& [name, v] : x.weights) CHECK(back->weights.at(name) == doctest::Approx(v).epsilon(1e-3));
        CHECK(back->rules == x.rules);
        const std::optional<Genome> from_line = g.parse("- score 1.5: " + g.describe(x));
        REQUIRE(from_line.has_value());
        CHECK(from_line->rules == x.rules);
      }
      CHECK_FALSE(g.parse("import numpy as np").has_value());
    }
    // the TSP seed is nearest neighbour, the CVRP seed 1/d
    const Instance item = random_tsp(20, 9);
    const std::vector<double> d = distance_matrix(item.coords);
    EvalReport r = evaluate(one_set(Problem::tsp, item), trusted(seed_code(Problem::tsp)));
    REQUIRE(r.items[0].status == Status::ok);
    CHECK(r.items[0].solution == tsp_nearest_neighbor(d, 20));
    const Instance c = random_cvrp(12, 2);
    EvalConfig greedy = trusted(seed_code(Problem::cvrp));
    greedy.aco.greedy = true;
    greedy.aco.ants = 2;
    greedy.aco.iterations = 3;
    EvalConfig inverse = greedy;
    inverse.code = "def heuristics(distance_matrix, coordinates, demands, capacity):\n    return 1 / distance_matrix\n";
    const EvalReport a = evaluate(one_set(Problem::cvrp, c), greedy), b = evaluate(one_set(Problem::cvrp, c), inverse);
    REQUIRE(a.items[0].status == Status::ok);
    CHECK(a.items[0].solution == b.items[0].solution);
  }

  TEST_CASE("buggy replies fail; surrogate replies depend on rung, prompt and seed only") {
    const Grammar g(Problem::tsp);
    const InstanceSet set = one_set(Problem::tsp, random_tsp(8, 4));
    nk::Rng rng(5);
    for (int i = 0; i < 6; ++i) {
      const EvalReport r = evaluate(set, trusted(g.emit_with_bug(g.seed(), rng)));
      CHECK(r.items[0].status != Status::ok);
    }
    const std::string prompt =
        "### user\n## Interface\ndef select_next_node(...)\n### Candidate 1 (score 0.2)\n```python\n" +
        g.emit(g.seed()) + "```\n## Request\nWrite a better heuristic.\n";
    CHECK(surrogate_reply(4, prompt, 7, 1.0) == surrogate_reply(4, prompt, 7, 1.0));
    CHECK(surrogate_reply(4, prompt, 7, 1.0) != surrogate_reply(4, prompt, 8, 1.0));
    CHECK(surrogate_reply(4, prompt, 7, 1.0) != surrogate_reply(3, prompt, 7, 1.0));
    const std::vector<ShownProgram> shown = shown_programs(g, prompt);
    REQUIRE(shown.size() == 1);
    CHECK(shown[0].score == 0.2);
    CHECK(shown[0].genome.has_value());
    CHECK(surrogate_reply(5, prompt + "### user\nCompress this history into working notes.\n", 1, 1.0)
              .find("score 0.2") != std::string::npos);
    CHECK(surrogate_bug_rate(0) == doctest::Approx(0.3));
    CHECK(surrogate_bug_rate(9) == 0.0);
    CHECK(surrogate_trials(9) == 16);
  }
}

TEST_SUITE("simple-evol") {
  TEST_CASE("a prompt's problem is found by its interface, FunSearch's versioned names included") {
    CHECK(prompt_problem("You write heuristics.\n```python\ndef heuristics_v1(d, c, q, cap):\n```") == Problem::cvrp);
    CHECK(prompt_problem("You write heuristics.\ndef select_next_node_v0(a, b, c, d):") == Problem::tsp);
    CHECK(prompt_problem("You write heuristics.\nget_matrix_and_jobs(s, t, m, n)") == Problem::fssp);
    CHECK_FALSE(prompt_problem("You write heuristics in Python.").has_value());
  }
}
