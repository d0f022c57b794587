// imh.hpp - the independence Metropolis-Hastings correction: chains that
// propose from q and accept s' with min(1, pi(s') q(s) / (pi(s) q(s'))),
// and the exact law of their states, propagated by enumeration.
#pragma once
#include <cstdint>
#include <vector>

#include "aldrift/model.hpp"
#include "aldrift/problem.hpp"
#include "nk/rng.hpp"

namespace ald {

/// The independence-MH kernel P on all A^n strings for proposal q and target
/// pi, both given as normalised logs. step() is mu -> mu P in O(N log N)
/// (states sorted by w = pi/q; prefix sums replace the N x N matrix).
class IndependenceKernel {
 public:
  IndependenceKernel(const std::vector<double>& log_q, const std::vector<double>& log_pi);
  std::vector<double> step(const std::vector<double>& mu) const;
  /// M = max over s of pi(s)/q(s): the sampler converges at rate 1 - 1/M.
  double coverage() const { return coverage_; }
  const std::vector<double>& q() const { return q_; }

 private:
  std::vector<int64_t> order_;       ///< states by increasing w
  std::vector<int64_t> group_end_;   ///< per sorted position: one past the end of its tie group
  std::vector<int64_t> group_begin_; ///< per sorted position: the start of its tie group
  std::vector<double> q_, pi_, inv_w_, accept_;
  double coverage_ = 0;
};

/// The law of one stored sample: the chain starts at mu0, makes 'steps' moves
/// and keeps its states after moves burn_in + 1 .. steps; their marginals
/// averaged.
std::vector<double> sample_law(const IndependenceKernel& P, const std::vector<double>& mu0, int steps, int burn_in);

/// Total variation distance 1/2 sum |a - b|.
double total_variation(const std::vector<double>& a, const std::vector<double>& b);
/// exp of a normalised log vector.
std::vector<double> exp_all(const std::vector<double>& log_p);

/// What a stage of chains produced.
struct ChainRun {
  std::vector<int> samples;  ///< chains * (steps - burn_in) strings of length n
  int64_t evaluations = 0;   ///< d calls: chains * (steps + 1)
  double acceptance = 0;     ///< accepted moves / moves
};

/// 'chains' independence-MH chains targeting L(s) exp(-T d(s)) with proposal
/// q; chain c draws from rng.split(c), so the result does not depend on the
/// thread count.
ChainRun run_chains(const Problem& p, const Model& q, double T, int64_t chains, int steps, int burn_in,
                    const nk::Rng& rng);

}  // namespace ald
