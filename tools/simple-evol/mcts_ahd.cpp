// mcts_ahd.cpp - MCTS-AHD (Zheng et al., ICML 2025) as its authors' code
// runs it: a tree of heuristics grown by Monte Carlo tree search with
// progressive widening, UCT whose exploration fades with the budget, an
// elite set of 10 for the operators' parents, and six LLM operations (i1,
// e1, e2, m1, m2, s1), each reply followed by a call that re-describes the
// code (simple-evol(1) ALGORITHM).
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "simple-evol/framework_run.hpp"

namespace sevol::detail {

namespace {

struct Heuristic {
  std::string code, description;
  double objective = INFINITY;  ///< mean training objective rounded to 5 decimals
};

struct Node {
  int parent = -1;
  std::vector<int> children;
  int depth = 0, visits = 0;
  double q = 0;
  std::vector<int> subtree;  ///< a depth-1 node: itself and every node added below it
  Heuristic h;
};

// The authors' defaults.
constexpr size_t kElite = 10;     // elite set E
constexpr int kInitial = 4;       // N_I initial nodes under the root
constexpr int kMaxParents = 5;    // e1 shows 2..5 programs
constexpr double kLambda0 = 0.1;  // exploration constant
constexpr double kAlpha = 0.5;    // progressive widening: expand while floor(visits^alpha) > children
constexpr int kMaxDepth = 10;
constexpr int kTries = 3;  // evaluations an expansion may spend
struct Op {
  const char* name;
  int weight;
};
constexpr Op kLeafOps[] = {{"e1", 0}, {"e2", 1}, {"m1", 2}, {"m2", 2}, {"s1", 1}};

double round5(double v) {
  return std::round(v * 1e5) / 1e5;
}

class Tree {
 public:
  Tree() { nodes_.push_back(Node{}); }  // the root, visits 0, Q 0
  Node& at(int i) { return nodes_[static_cast<size_t>(i)]; }
  int add(int parent, const Heuristic& h) {
    Node n;
    n.parent = parent;
    n.depth = at(parent).depth + 1;
    n.visits = 1;
    n.q = -h.objective;
    n.h = h;
    nodes_.push_back(n);
    const int id = static_cast<int>(nodes_.size()) - 1;
    if (parent == 0) at(id).subtree.push_back(id);
    at(parent).children.push_back(id);
    backpropagate(id);
    return id;
  }
  /// Q of every ancestor becomes its best child's; visits count up; the
  /// depth-1 ancestor records the node in its subtree.
  void backpropagate(int id) {
    q_min_ = std::min(q_min_, at(id).q);
    q_max_ = std::max(q_max_, at(id).q);
    for (int p = at(id).parent; p >= 0; p = at(p).parent) {
      double best = -INFINITY;
      for (int c : at(p).children) best = std::max(best, at(c).q);
      at(p).q = best;
      at(p).visits += 1;
      if (at(p).depth == 1) at(p).subtree.push_back(id);
    }
  }
  /// Normalised Q plus lambda0 x (share of the budget left) x sqrt(ln(N_parent + 1) / N).
  double uct(int id, double remain) {
    const Node& n = at(id);
    const double span = q_max_ - q_min_;
    const double exploit = span > 0 ? (n.q - q_min_) / span : 0.0;
    return exploit + kLambda0 * remain * std::sqrt(std::log(static_cast<double>(at(n.parent).visits) + 1.0) / n.visits);
  }

 private:
  std::vector<Node> nodes_;
  double q_min_ = 0, q_max_ = -1e4;  // the authors' starting values
};

/// The elite set: unique objectives, the best 'size' first.
void manage(std::vector<Heuristic>& set, size_t size) {
  std::vector<Heuristic> unique;
  for (const Heuristic& h : set) {
    if (std::none_of(unique.begin(), unique.end(), [&](const Heuristic& u) { return u.objective == h.objective; }))
      unique.push_back(h);
  }
  std::stable_sort(unique.begin(), unique.end(),
                   [](const Heuristic& a, const Heuristic& b) { return a.objective < b.objective; });
  if (unique.size() > size) unique.resize(size);
  set = std::move(unique);
}

class MctsAhd {
 public:
  explicit MctsAhd(Run& run) : run_(run), p_(run.problem()) {}

  void run() {
    // N_I initial nodes under the root: one from i1, the others from e1 over those so far
    std::vector<Heuristic> brothers;
    for (int k = 0; k < kInitial && !run_.done(); ++k) {
      const char* op = k == 0 ? "i1" : "e1";
      if (auto h = initial(op, brothers)) {
        brothers.push_back(*h);
        tree_.add(0, *h);
      }
    }
    elite_ = brothers;
    manage(elite_, std::min(elite_.size(), kElite));
    while (!run_.done()) {
      if (tree_.at(0).children.empty()) {
        // nothing worked yet: the root's first child again
        if (auto h = initial("i1", {})) add(0, *h);
        continue;
      }
      int cur = 0;
      while (!tree_.at(cur).children.empty() && tree_.at(cur).depth < kMaxDepth && !run_.done()) {
        const double remain = std::max(1.0 - used() / static_cast<double>(run_.config().budget), 0.0);
        const std::vector<int> children = tree_.at(cur).children;
        int chosen = children[0];
        double best = -INFINITY;
        for (int c : children) {
          const double u = tree_.uct(c, remain);
          if (u > best) {
            best = u;
            chosen = c;
          }
        }
        const Node& n = tree_.at(cur);
        if (static_cast<size_t>(std::pow(static_cast<double>(n.visits), kAlpha)) > n.children.size()) {
          expand(cur, cur == 0 ? "e1" : "e2");  // progressive widening
        }
        cur = chosen;
      }
      for (const Op& op : kLeafOps) {
        for (int j = 0; j < op.weight && !run_.done(); ++j) expand(cur, op.name);
      }
    }
  }

 private:
  double used() { return static_cast<double>(run_.out().size()); }

  std::string implement() const {
    return "Then implement it in Python as this function (same name and arguments):\n" + signature_only(p_) +
           "\nGive no further explanation.";
  }
  std::string task() const { return task_text(p_) + "\n"; }

  static std::string shown(const std::vector<Heuristic>& set) {
    std::string out;
    for (size_t i = 0; i < set.size(); ++i) {
      out += "No." + std::to_string(i + 1) + ": its description, code and objective value:\n" + set[i].description +
             "\n" + fenced(set[i].code) + "Objective value: " + fmt(set[i].objective) + "\n\n";
    }
    return out;
  }

  std::string prompt(const std::string& op, const std::vector<Heuristic>& parents) const {
    const std::string idea =
        "First describe the design idea and main steps of your algorithm in one sentence, "
        "inside braces { } outside the code. ";
    if (op == "i1") return task() + idea + implement();
    if (op == "e1") {
      return task() + "Here are " + std::to_string(parents.size()) + " existing algorithms:\n\n" + shown(parents) +
             "Create a new algorithm of a totally different form from these: another structure, flow or method, "
             "with a low objective value.\n" +
             idea + implement();
    }
    if (op == "e2") {
      const std::string last = std::to_string(parents.size());
      return task() + "Here are " + last + " existing algorithms with their objective values:\n\n" + shown(parents) +
             "Create a new algorithm that keeps the form of No." + last +
             " and borrows from No.1, with an objective value below both. First list the ideas of No.1 that may "
             "perform well; then, building on No." +
             last + ", " + idea + implement();
    }
    if (op == "m1" || op == "m2") {
      const Heuristic& h = parents.at(0);
      const std::string one = task() + "Here is one algorithm.\n\nIts description: " + h.description + "\nIts code:\n" +
                              fenced(h.code) + "Objective value: " + fmt(h.objective) + "\n\n";
      return one +
             (op == "m1" ? "Create a new algorithm of a different form that is still a modification of this one: "
                           "bring in new mechanisms, equations or program parts.\n"
                         : "Identify the main parameters of this algorithm and create a new one with different "
                           "parameter settings in its equations.\n") +
             idea + implement();
    }
    // s1: the path from the node up to the root's child, worst first
    return task() + "Here are " + std::to_string(parents.size()) +
           " algorithms along one path of the search, with their objective values:\n\n" + shown(parents) +
           "Create a new algorithm inspired by all of them, with an objective value below every one. First list the "
           "ideas in them that clearly help; then " +
           idea + implement();
  }

  /// The authors' re-description: the idea as the model stated it rarely says
  /// what the code does, so a second call describes the code.
  std::string refine(const std::string& code, const std::string& thought) {
    const std::string prompt =
        task() + "Below are the design idea of a heuristic for this problem and its code (the function " +
        function_name(p_) + ").\nDesign idea:\n" + thought + "\n\nCode:\n" + fenced(code) +
        "\nThe design idea does not fully say what the code does. Re-describe the algorithm in at most 3 sentences, "
        "naming its most important design choices: which quantities it favours or penalises, its parameters and "
        "its structure.";
    const std::string reply = run_.ask("refine", {{"user", prompt}});
    std::string unused, description;
    split_reply(reply, unused, description);
    if (description.empty()) description = reply.substr(0, std::min<size_t>(reply.size(), 500));
    while (!description.empty() && (description.back() == '\n' || description.back() == ' ')) description.pop_back();
    return description;
  }

  /// A reply for 'op' (asked again once when its code is already in 'pool'),
  /// re-described; parents are drawn anew for each ask.
  Heuristic offspring(const std::string& op, const std::function<std::vector<Heuristic>()>& parents,
                      const std::vector<Heuristic>& pool) {
    Heuristic h;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::string reply = run_.ask(op, {{"user", prompt(op, parents())}});
      std::string thought;
      split_reply(reply, h.code, thought);
      h.description = refine(h.code, thought);
      if (std::none_of(pool.begin(), pool.end(), [&](const Heuristic& x) { return x.code == h.code; })) break;
    }
    return h;
  }

  /// Scores h as a candidate of 'op'; its objective, or +inf when it failed.
  Status score(const std::string& op, Heuristic& h) {
    const Candidate& c = run_.score(op, h.code, h.description);
    h.objective = c.status == Status::ok ? round5(c.score) : INFINITY;
    return c.status;
  }

  std::vector<Heuristic> e1_parents(const std::vector<Heuristic>& pool) {
    const size_t want = std::min<size_t>(2 + run_.rng().below(kMaxParents - 1), pool.size());
    std::vector<Heuristic> out;
    for (size_t k = 0; k < want; ++k) out.push_back(pool[run_.rng().below(pool.size())]);
    return out;
  }

  /// The initialisation's sampling: until a working heuristic whose objective
  /// no brother has (or the budget ends).
  std::optional<Heuristic> initial(const char* op, const std::vector<Heuristic>& brothers) {
    while (!run_.done()) {
      const bool e1 = std::string(op) == "e1";
      Heuristic h = offspring(
          op, [&] { return e1 ? e1_parents(brothers) : std::vector<Heuristic>{}; }, brothers);
      if (score(op, h) != Status::ok) continue;
      if (std::any_of(brothers.begin(), brothers.end(), [&](const Heuristic& b) { return b.objective == h.objective; }))
        continue;
      return h;
    }
    return std::nullopt;
  }

  void add(int parent, const Heuristic& h) {
    elite_.push_back(h);
    manage(elite_, std::min(elite_.size(), kElite));
    tree_.add(parent, h);
  }

  void expand(int cur, const std::string& op) {
    if (run_.done()) return;
    std::vector<Heuristic> pool;
    std::function<std::vector<Heuristic>()> parents;
    if (op == "s1") {
      for (int n = cur; n > 0; n = tree_.at(n).parent) pool.push_back(tree_.at(n).h);
      // unique descriptions, worst first
      std::vector<Heuristic> unique;
      for (const Heuristic& h : pool) {
        if (std::none_of(unique.begin(), unique.end(),
                         [&](const Heuristic& u) { return u.description == h.description; }))
          unique.push_back(h);
      }
      std::stable_sort(unique.begin(), unique.end(),
                       [](const Heuristic& a, const Heuristic& b) { return a.objective > b.objective; });
      if (unique.size() <= 1) return;  // a path of one: nothing to learn from
      pool = unique;
      parents = [&] { return pool; };
    } else if (op == "e1") {
      for (int c : tree_.at(0).children) {
        const std::vector<int>& sub = tree_.at(c).subtree;
        pool.push_back(tree_.at(sub[run_.rng().below(sub.size())]).h);
      }
      parents = [&] { return e1_parents(pool); };
    } else {
      pool = elite_;
      const Heuristic father = tree_.at(cur).h;
      parents = [&, father] {
        if (op != "e2") return std::vector<Heuristic>{father};
        // one other elite by rank (p ~ 1 / (rank + 1 + |E|)), then the father
        std::vector<Heuristic> other;
        for (const Heuristic& h : pool) {
          if (h.code != father.code || h.objective != father.objective) other.push_back(h);
        }
        std::vector<Heuristic> out;
        if (!other.empty()) {
          std::vector<double> w;
          for (size_t r = 0; r < other.size(); ++r) w.push_back(1.0 / static_cast<double>(r + 1 + other.size()));
          out.push_back(other[draw(w, run_.rng())]);
        }
        out.push_back(father);
        return out;
      };
    }
    for (int t = 0; t < kTries && !run_.done(); ++t) {
      Heuristic h = offspring(op, parents, pool);
      const Status s = score(op, h);
      if (s == Status::timeout) return;  // the authors give up on a timeout
      if (s != Status::ok ||
          std::any_of(pool.begin(), pool.end(), [&](const Heuristic& x) { return x.code == h.code; }))
        continue;
      if (op == "e1") {
        // a root child must bring an objective the root's children lack
        for (int c : tree_.at(0).children) {
          if (tree_.at(c).h.objective == h.objective) return;
        }
      }
      add(cur, h);
      return;
    }
  }

  Run& run_;
  Problem p_;
  Tree tree_;
  std::vector<Heuristic> elite_;
};

}  // namespace

void run_mcts_ahd(Run& run) {
  MctsAhd(run).run();
}

}  // namespace sevol::detail
