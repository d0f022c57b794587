// speedscale.hpp - energy-minimising speed scaling on one preemptive machine
// (power s^alpha): instances, speed profiles, the exact EDF check, the offline
// optimum (YDS), the classic online algorithms and the speed-prediction family.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nk/run_env.hpp"

namespace ss {

inline constexpr const char* kInstancesSchema = "speedscale.instances/1";
inline constexpr const char* kResultsSchema = "speedscale.results/1";
inline constexpr const char* kPredictionsSchema = "speedscale.predictions/1";
inline constexpr const char* kEvalSchema = "speedscale.eval/1";

/// Jobs j = 0..n-1 with release r_j < deadline d_j and work w_j > 0.
struct Instance {
  std::string name;  ///< "000042": the group under /instances
  std::vector<double> release, deadline, work;
  int64_t size() const { return static_cast<int64_t>(work.size()); }
};

/// A piecewise-constant speed: speed[i] on [t[i], t[i+1]); t.size() == speed.size() + 1.
struct Profile {
  std::vector<double> t, speed;
  int64_t pieces() const { return static_cast<int64_t>(speed.size()); }
  /// The speed at time x (0 outside the profile).
  double at(double x) const;
};

/// Job 'job' runs on [start, end) (inside one constant-speed piece of the profile).
struct Piece {
  int64_t job;
  double start, end;
};

/// The EDF run of an instance on a profile.
struct Check {
  bool feasible = true;
  int64_t late_jobs = 0;
  int64_t worst_job = -1;          ///< the job with the largest relative shortfall
  double worst_shortfall = 0;      ///< unfinished work at its deadline / its work
  std::vector<Piece> pieces;       ///< the job-to-interval assignment
};

double energy(const Profile& p, double alpha);
/// Job indices sorted by release (stable: ties keep input order).
std::vector<int64_t> release_order(const Instance& inst);
/// Runs EDF on 'p'; a job is late when more than rel_tol of its work is left at its deadline.
Check edf_check(const Instance& inst, const Profile& p, double rel_tol = 1e-9);
/// Joins equal neighbouring speeds and drops empty pieces.
Profile simplify(const Profile& p);
/// s(t) = max{ speed_j : r_j <= t < d_j } (0 where no window is open).
Profile envelope(const Instance& inst, const std::vector<double>& job_speed);
/// s(t) = sum{ rate_j : r_j <= t < d_j }.
Profile rate_sum(const std::vector<double>& start, const std::vector<double>& end, const std::vector<double>& rate);
/// Pointwise sum of two profiles.
Profile add(const Profile& a, const Profile& b);
/// Relative alpha-norm distance ||a - b||_alpha / ||b||_alpha.
double relative_error(const Profile& a, const Profile& b, double alpha);

// --- offline optimum -------------------------------------------------------
/// YDS speed of every job, by recursive splitting at the average density with
/// an EDF max-flow / min-cut at that speed (see the man page). O(n log n) per level.
std::vector<double> yds_job_speeds(const Instance& inst);
Profile yds(const Instance& inst);
/// Textbook YDS: the densest interval, collapse, repeat. O(n^3); the baseline.
Profile yds_naive(const Instance& inst, std::vector<double>* job_speed = nullptr);

// --- online algorithms -----------------------------------------------------
struct OnlineParams {
  double alpha = 3;
  double q = 0;        ///< qOA factor; 0 = 2 - 1/alpha
  double eps = 0;      ///< pred-*: follow (1 + eps) x the prediction
  double gamma = 2;    ///< pred-*: trust while energy + cost-to-go < gamma * OPT(released so far)
  double hard_factor = 4;  ///< pred-*: phase 2 for good once that exceeds hard_factor * gamma * OPT(released)
  double dt = 0;       ///< re-evaluation step of continuous rules; 0 = horizon / (8 n)
};

Profile avr(const Instance& inst);
Profile oa(const Instance& inst);
Profile qoa(const Instance& inst, const OnlineParams& p);
Profile bkp(const Instance& inst, const OnlineParams& p);
/// The speed-prediction rule (trust, then guard): while the energy spent plus
/// the cost of finishing the pending work on its OA plan stays within gamma x
/// OPT(jobs released so far), run EDF at v(t) = max(rho(t), (1 + eps) s_hat(t));
/// once it does not, pending work follows its OA plan and later jobs run OA,
/// on top of each other. 'predicted' gives s_hat at the current time only;
/// 'next_change' the next time after t at which s_hat may change.
struct FollowStats {
  bool switched = false;
  double switch_time = 0;
  double trusted_time = 0;  ///< time spent above rho(t) following the prediction
  bool budget_bound = false;  ///< the trust budget ran out at least once
};
FollowStats follow(const Instance& inst, const std::function<double(double)>& predicted,
                   const std::function<double(double)>& next_change, const OnlineParams& p, Profile& out);
Profile follow(const Instance& inst, const std::function<double(double)>& predicted,
               const std::function<double(double)>& next_change, const OnlineParams& p);
/// pred-jobspeed: s_hat(t) = max over released jobs with t in their window of the predicted job speed.
Profile follow_job_speeds(const Instance& inst, const std::vector<double>& job_speed, const OnlineParams& p);
/// LAS (Bamas et al. 2020) for general deadlines: YDS of the predicted works,
/// each job's share capped at its predicted density / eps^2, scaled down when
/// the job is smaller than predicted, the excess run at AVR density.
Profile las(const Instance& inst, const std::vector<double>& work_pred, const OnlineParams& p);

// --- verbs -------------------------------------------------------------------
struct GenOptions {
  std::string output = "-";
  bool no_clobber = false;
  int64_t jobs = 100, instances = 1;
  std::string arrivals = "poisson:1", work = "lognormal:1,0.5", slack = "lognormal:2.718281828459045,0.5";
  std::string adversarial, from_csv;
  double alpha = 3;
};
struct SolveOptions {
  std::string input = "-", output = "-", predictions, algos = "yds,avr,oa,qoa,bkp";
  bool no_clobber = false;
  bool no_profiles = false;
  OnlineParams params;
};
struct PredictOptions {
  std::string input = "-", output = "-", method = "oracle", adversarial;
  bool no_clobber = false;
  double noise = 0, quantile = 0.5, alpha = 3;
  int64_t grid = 256;
};
struct EvalOptions {
  std::string input = "-", output = "-", plot, profile_plot, noise = "0,0.05,0.1,0.2,0.5,1,2", eps = "0",
              algos = "avr,oa,qoa,bkp,las,pred-dynamic,pred-jobspeed";
  bool no_clobber = false;
  OnlineParams params;
};

void gen(const GenOptions& o, const nk::RunEnv& env);
/// The instances of env.shard.
void solve(const SolveOptions& o, const nk::RunEnv& env);
void predict(const PredictOptions& o, const nk::RunEnv& env);
void eval(const EvalOptions& o, const nk::RunEnv& env);

// --- files ---------------------------------------------------------------
/// "000042": the group name of instance 42.
std::string instance_name(int64_t i);
/// Every instance of a file (all of them, or [begin, end) of the sorted names).
std::vector<Instance> read_instances(const std::string& path, int64_t begin = 0, int64_t end = -1,
                                     int64_t* total = nullptr);
/// Throws exit 3 naming the instance and job when the jobs are not valid.
void validate(const std::string& file, const Instance& inst);

/// Algorithms by name, with the predictions they need.
struct Prediction {
  Profile profile;                     ///< s_hat (pred-dynamic, pred-offline)
  std::vector<double> job_speed, work;  ///< pred-jobspeed, las
};
Profile run_algorithm(const std::string& name, const Instance& inst, const Prediction* pred, const OnlineParams& p);
bool algorithm_needs_prediction(const std::string& name);
const std::vector<std::string>& algorithm_names();

/// Prediction of instance 'inst' as an oracle (its own optimum) corrupted by
/// multiplicative log-normal noise of this sigma, or an adversarial rule.
Prediction oracle_prediction(const Instance& inst, double noise, const std::string& adversarial, uint64_t seed,
                             double alpha);

}  // namespace ss
