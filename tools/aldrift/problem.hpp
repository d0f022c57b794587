// problem.hpp - an enumerable problem: a first-order Markov prior L over
// strings of length n on an alphabet of A symbols, and a cost d on all A^n
// strings (lexicographic order, first position most significant).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"

namespace ald {

inline constexpr const char* kProblemSchema = "aldrift.problem/1";
/// The most strings an enumerable problem may have (the cost table and a few
/// vectors of this length are held in memory).
inline constexpr int64_t kMaxStates = int64_t{1} << 24;

struct Problem {
  int A = 2;                  ///< alphabet size
  int n = 1;                  ///< string length
  int64_t N = 2;              ///< A^n
  std::vector<double> init;   ///< [A] prior over the first symbol
  std::vector<double> trans;  ///< [A*A] prior transition rows (row a: next symbol given a)
  std::vector<double> cost;   ///< [N] d(s)
  // log L(s): Model::from_prior(problem).log_prob / log_prob_all (model.hpp).
};

/// A^n, or -1 when it exceeds kMaxStates.
int64_t count_states(int A, int n);
/// The string of index 'index' (first position most significant).
void decode(int64_t index, int A, int n, int* s);
int64_t encode(const int* s, int A, int n);

/// Reads and checks /prior/init, /prior/trans, /cost (exit 3 naming file,
/// dataset and index: negative or non-finite probabilities, rows not summing
/// to 1 within 1e-9, a cost table whose size is not a power A^n, NaN costs).
Problem read_problem(const nk::h5::File& in);
void write_problem(nk::h5::Writer& out, const Problem& p);

/// The log target log pi_T(s) (normalised) of every string.
std::vector<double> log_target(const Problem& p, const std::vector<double>& log_prior, double T);

}  // namespace ald
