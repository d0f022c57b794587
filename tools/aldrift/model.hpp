// model.hpp - the learners' model families over strings of length n:
// position-dependent first-order Markov chains (markov), homogeneous ones
// (markov-h, the misspecified control) and a full table of A^n
// probabilities; weighted maximum-likelihood fits with add-alpha smoothing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "aldrift/problem.hpp"
#include "nk/h5.hpp"
#include "nk/rng.hpp"

namespace ald {

enum class Learner { markov, markov_h, table };
Learner parse_learner(const std::string& name);
const char* learner_name(Learner l);

struct Model {
  Learner kind = Learner::markov;
  int A = 2, n = 1;
  std::vector<double> init;   ///< [A]
  std::vector<double> trans;  ///< markov: [(n-1)*A*A] (position j -> j+1); markov-h: [A*A]
  std::vector<double> table;  ///< table: [A^n]
  std::vector<double> cdf;    ///< table: running sums for sampling (prepare())

  /// The prior as a model (markov-h).
  static Model from_prior(const Problem& p);
  /// The transition row from symbol a at position j to position j + 1.
  const double* row(int j, int a) const {
    return kind == Learner::markov ? &trans[(static_cast<size_t>(j) * A + a) * A] : &trans[static_cast<size_t>(a) * A];
  }
  /// Fills cdf (table models); call after changing 'table'.
  void prepare();
  double log_prob(const int* s) const;
  void sample(nk::Rng& rng, int* s) const;
  /// log q(s) of every string, in lexicographic order.
  std::vector<double> log_prob_all() const;
  /// The same distribution in the position-dependent family (markov from markov-h).
  Model as_markov() const;
};

/// Weighted maximum likelihood in a family: 'samples' holds m strings of
/// length n back to back; weights (m of them, or empty for all 1) are scaled
/// to sum to m; each count gets 'alpha' added before normalising.
Model fit(Learner kind, int A, int n, const std::vector<int>& samples, const std::vector<double>& weights, double alpha);
/// (1 - rate) old + rate fresh, parameter by parameter (same family).
Model blend(const Model& old, const Model& fresh, double rate);
/// GROUP/init, GROUP/trans ([n-1,A,A] or [A,A]) or GROUP/table ([A^n]).
void write_model(nk::h5::Writer& out, const std::string& group, const Model& m);

}  // namespace ald
