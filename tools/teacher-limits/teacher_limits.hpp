// teacher_limits.hpp - the verbs of teacher-limits: a hierarchical teacher
// (teacher), its noisy queries (data) and the Bayes-optimal fixed-point
// equations over a range of n (theory).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nk/run_env.hpp"
#include "teacher-limits/items.hpp"
#include "teacher-limits/model.hpp"
#include "teacher-limits/sampler.hpp"
#include "teacher-limits/student.hpp"
#include "teacher-limits/state_evolution.hpp"

namespace tl {

inline constexpr const char* kTeacherSchema = "teacher-limits.teacher/1";
inline constexpr const char* kDataSchema = "teacher-limits.data/1";
inline constexpr const char* kTheorySchema = "teacher-limits.theory/1";
inline constexpr const char* kHmcSchema = "teacher-limits.hmc/1";
inline constexpr const char* kAmpSchema = "teacher-limits.amp/1";
inline constexpr const char* kAdamSchema = "teacher-limits.adam/1";
inline constexpr const char* kReportSchema = "teacher-limits.report/1";

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

struct HmcOptions {
  std::string input, output = "-";
  bool no_clobber = false;
  ItemOptions items;
  HmcConfig config;
  std::string init = "informed";
};
/// /hmc/{n, seed, eps_bo, eps_bo_se, eps_gibbs, overlap, acceptance, step,
/// gradients, gradient_seconds} per item, /hmc/pred_test for a data file.
void hmc(const HmcOptions& options, const nk::RunEnv& env);

struct AmpResult {
  std::vector<double> q, q_se;  ///< [T] |w_hat.w*|/|w*|^2 after each iteration, and the state evolution's q
  double eps = 0, eps_se = 0;   ///< test error of the posterior predictive mean; the state evolution's
  Vector w_hat;                 ///< [d]
};
/// GAMP for k = 1 from overlap 'init_overlap' (0: w_hat = 0).
AmpResult run_amp(const Data& data, int iterations, double init_overlap, uint64_t seed);

struct AmpOptions {
  std::string input, output = "-";
  bool no_clobber = false;
  int iterations = 30;
  double init_overlap = 0;
};
void amp(const AmpOptions& options, const nk::RunEnv& env);

struct AdamOptions {
  std::string input, output = "-";
  bool no_clobber = false;
  ItemOptions items;
  std::vector<std::string> widths{"kc/2", "kc", "2kc", "k"};
  AdamTraining training;
  int64_t ridge_features = 8;  ///< random features per input dimension (0: no baseline)
};
/// /adam/{n, seed, widths, width, k_c, eps, overlap, lr, val_mse, epochs,
/// ridge_eps} and /adam/students/NNNNNN/<width>/{W,a}.
void adam(const AdamOptions& options, const nk::RunEnv& env);

struct ReportOptions {
  std::string input, output;
  bool no_clobber = false;
  std::vector<std::string> results;  ///< hmc and adam outputs
  std::string svg;                   ///< figure prefix (empty: none)
};
/// The fitted slopes and ranges (stdout; /fit/* when -o is given) and the figures.
void report(const ReportOptions& options, const nk::RunEnv& env);

}  // namespace tl
