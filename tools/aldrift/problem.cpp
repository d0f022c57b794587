// problem.cpp - reading, checking and enumerating an enumerable problem.
#include "aldrift/problem.hpp"

#include <cmath>
#include <limits>

#include "nk/error.hpp"

namespace ald {

int64_t count_states(int A, int n) {
  if (A < 1 || n < 1) return -1;
  int64_t N = 1;
  for (int j = 0; j < n; ++j) {
    if (N > kMaxStates / A) return -1;
    N *= A;
  }
  return N;
}

void decode(int64_t index, int A, int n, int* s) {
  for (int j = n - 1; j >= 0; --j) {
    s[j] = static_cast<int>(index % A);
    index /= A;
  }
}

int64_t encode(const int* s, int A, int n) {
  int64_t index = 0;
  for (int j = 0; j < n; ++j) index = index * A + s[j];
  return index;
}

namespace {

void check_distribution(const std::string& file, const std::string& dataset, const double* p, int A,
                        const std::string& row) {
  double sum = 0;
  for (int a = 0; a < A; ++a) {
    if (!std::isfinite(p[a]) || p[a] < 0)
      throw nk::input_error(file, dataset,
                            "entry " + row + std::to_string(a) + " is " + std::to_string(p[a]) +
                                " (probabilities must be finite and >= 0)");
    sum += p[a];
  }
  if (std::abs(sum - 1.0) > 1e-9)
    throw nk::input_error(file, dataset,
                          (row.empty() ? std::string("the entries") : "row " + row.substr(0, row.size() - 1)) +
                              " sum to " + std::to_string(sum) + ", not 1 (tolerance 1e-9)");
}

}  // namespace

Problem read_problem(const nk::h5::File& in) {
  const std::string& file = in.path();
  for (const char* d : {"/prior/init", "/prior/trans", "/cost"}) in.require(d);
  Problem p;
  const auto init = in.read<double>("/prior/init", 1, "A");
  const int64_t A = init.shape[0];
  if (A < 2 || A > 1024) throw nk::input_error(file, "/prior/init", "alphabet size " + std::to_string(A) + " (expected 2..1024)");
  const auto trans = in.read<double>("/prior/trans", 2, "A,A");
  if (trans.shape[0] != A || trans.shape[1] != A)
    throw nk::input_error(file, "/prior/trans",
                          "shape " + nk::h5::shape_text(trans.shape) + ", expected [" + std::to_string(A) + "," +
                              std::to_string(A) + "] (the alphabet of /prior/init)");
  check_distribution(file, "/prior/init", init.data.data(), static_cast<int>(A), "");
  for (int64_t a = 0; a < A; ++a)
    check_distribution(file, "/prior/trans", trans.data.data() + a * A, static_cast<int>(A), std::to_string(a) + ",");
  const nk::h5::DatasetInfo info = in.info("/cost");
  if (info.shape.size() != 1) throw nk::input_error(file, "/cost", "rank " + std::to_string(info.shape.size()) + ", expected 1 ([A^n])");
  const int64_t N = info.shape[0];
  int n = 0;
  int64_t power = 1;
  while (power < N && power <= kMaxStates) {
    power *= A;
    ++n;
  }
  if (power != N || n < 1 || N > kMaxStates)
    throw nk::input_error(file, "/cost",
                          "size " + std::to_string(N) + " is not A^n for alphabet A = " + std::to_string(A) +
                              ", n >= 1 (at most " + std::to_string(kMaxStates) + " strings)");
  const auto cost = in.read<double>("/cost", 1, "S");
  nk::h5::require_finite(file, "/cost", cost);
  p.A = static_cast<int>(A);
  p.n = n;
  p.N = N;
  p.init = init.data;
  p.trans = trans.data;
  p.cost = cost.data;
  return p;
}

void write_problem(nk::h5::Writer& out, const Problem& p) {
  out.write("/prior/init", p.init.data(), {p.A}, "A");
  out.write("/prior/trans", p.trans.data(), {p.A, p.A}, "A,A");
  out.write("/cost", p.cost.data(), {p.N}, "S");
  out.attr("/", "alphabet", int64_t{p.A});
  out.attr("/", "length", int64_t{p.n});
}

std::vector<double> log_target(const Problem& p, const std::vector<double>& log_prior, double T) {
  std::vector<double> lt(p.N);
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t s = 0; s < p.N; ++s) {
    lt[s] = log_prior[s] - T * p.cost[s];
    top = std::max(top, lt[s]);
  }
  if (!std::isfinite(top)) throw nk::Error(nk::Exit::input, "the prior gives every string probability 0");
  double z = 0;
  for (int64_t s = 0; s < p.N; ++s) z += std::exp(lt[s] - top);
  const double log_z = top + std::log(z);
  for (auto& v : lt) v -= log_z;
  return lt;
}

}  // namespace ald
