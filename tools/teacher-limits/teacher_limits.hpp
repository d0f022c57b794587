// teacher_limits.hpp - the verbs of teacher-limits: a hierarchical teacher
// (teacher), its noisy queries (data) and the Bayes-optimal fixed-point
// equations over a range of n (theory).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nk/run_env.hpp"
#include "teacher-limits/model.hpp"
#include "teacher-limits/state_evolution.hpp"

namespace tl {

inline constexpr const char* kTeacherSchema = "teacher-limits.teacher/1";
inline constexpr const char* kDataSchema = "teacher-limits.data/1";
inline constexpr const char* kTheorySchema = "teacher-limits.theory/1";

struct TeacherOptions {
  std::string output = "-";
  bool no_clobber = false;
  int64_t d = 64, k = 0;
  double kappa = 1, beta = 1, noise = 0.1;
  std::string activation = "he3";
};
/// /teacher/W [k,d] float64, /teacher/v [k]; root attributes activation, noise, beta.
void teacher(const TeacherOptions& options, const nk::RunEnv& env);

struct DataOptions {
  std::string input, output = "-";
  bool no_clobber = false;
  int64_t n = 1024, test = 2000;
};
/// /teacher copied, /train/{X,y}, /test/{X,f,y}.
void data(const DataOptions& options, const nk::RunEnv& env);

/// The equations over an increasing list of n.
struct TheoryResult {
  std::vector<double> n, alpha, eps_bo, eps_uninformed, eps_informed, eps_kc, residual;
  std::vector<int64_t> k_c, widths;
  std::vector<double> overlap, overlap_uninformed;  ///< [m, k]
  std::vector<double> onset_n, spinodal_n;          ///< [k]; NaN: outside the n range
  std::vector<double> student_eps;                  ///< [w, m]
  double C = 0;                                     ///< eps_kc's fitted constant
};
/// 'n' must be positive and increasing; widths empty: none.
TheoryResult solve_theory(const TeacherSpec& spec, const std::vector<double>& n, const std::vector<int64_t>& widths,
                          bool progress = true);

struct TheoryOptions {
  std::string input, output = "-";
  bool no_clobber = false;
  std::optional<int64_t> d, k;
  std::optional<double> kappa, beta, noise;
  std::optional<std::string> activation;
  std::vector<double> n;
  std::string n_range;
  std::vector<int64_t> widths;
  bool widths_given = false;
};
void theory(const TheoryOptions& options, const nk::RunEnv& env);

/// "A:B:POINTS" -> POINTS values log-spaced from A to B; usage error otherwise.
std::vector<double> parse_range(const std::string& text, const std::string& option);

}  // namespace tl
