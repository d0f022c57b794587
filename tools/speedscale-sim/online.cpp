// online.cpp - online speed scaling: AVR, OA, qOA, BKP, LAS and the rule that
// follows a machine-speed prediction (pred-dynamic, pred-offline, pred-jobspeed).
//
// All rules except AVR and LAS run in one event-driven simulator: the machine
// knows the jobs released so far, runs EDF, and re-decides its speed at every
// release, whenever the densest group of pending work reaches its deadline,
// whenever the prediction changes, and every 'dt' for rules whose speed varies
// continuously (qOA, BKP, the prediction rule). Every rule runs at least at
// rho(t) = max_k (pending work due by d_k) / (d_k - t), the OA speed, which
// keeps the pending work feasible (see the man page), so no deadline is missed.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/rng.hpp"
#include "speedscale-sim/speedscale.hpp"

namespace ss {

namespace {

struct Pending {
  double deadline, left, work;
  int64_t job;
};

/// Appends speed v on [t0, t1) to a profile built left to right (a gap becomes an idle piece).
void append_piece(Profile& out, double t0, double t1, double v) {
  if (!(t1 > t0)) return;
  if (out.t.empty()) out.t.push_back(t0);
  else if (out.t.back() != t0) out.speed.push_back(0), out.t.push_back(t0);
  out.speed.push_back(v);
  out.t.push_back(t1);
}

/// Inserts released job j into the pending work, kept sorted by deadline.
void admit(std::vector<Pending>& pending, const Instance& inst, int64_t j) {
  const Pending p{inst.deadline[j], inst.work[j], inst.work[j], j};
  pending.insert(std::upper_bound(pending.begin(), pending.end(), p,
                                  [](const Pending& x, const Pending& y) { return x.deadline < y.deadline; }),
                 p);
}

/// Drops finished jobs; work past its deadline can only be rounding residue
/// (every rule runs at least at rho).
void drop_settled(std::vector<Pending>& pending, double now) {
  pending.erase(std::remove_if(pending.begin(), pending.end(),
                               [&](const Pending& p) { return p.left <= 1e-12 * p.work || p.deadline <= now; }),
                pending.end());
}

/// The state the rules see at time 'now'.
struct View {
  double now;
  double rho;            ///< OA speed
  double group_deadline;  ///< deadline of the densest prefix (OA holds rho until then)
  const std::vector<Pending>* pending;
};

/// 'rule' gives the speed for the current view; 'next_change' the next time
/// the rule itself changes (prediction breakpoints), 'continuous' whether the
/// speed must be re-sampled every dt.
template <class Rule, class NextChange>
Profile simulate(const Instance& inst, Rule rule, NextChange next_change, bool continuous, double dt_option) {
  const int64_t n = inst.size();
  Profile out;
  if (n == 0) return out;
  const std::vector<int64_t> by_release = release_order(inst);
  const double first = inst.release[by_release.front()];
  const double last = *std::max_element(inst.deadline.begin(), inst.deadline.end());
  const double dt = dt_option > 0 ? dt_option : (last - first) / (8.0 * static_cast<double>(n));
  std::vector<Pending> pending;
  size_t next = 0;
  double now = first;
  auto push_piece = [&](double t0, double t1, double v) { append_piece(out, t0, t1, v); };
  while (next < by_release.size() || !pending.empty()) {
    while (next < by_release.size() && inst.release[by_release[next]] <= now) {
      const int64_t j = by_release[next++];
      admit(pending, inst, j);
    }
    drop_settled(pending, now);
    const double next_release = next < by_release.size() ? inst.release[by_release[next]] : INFINITY;
    if (pending.empty()) {
      if (!std::isfinite(next_release)) break;
      now = next_release;
      continue;
    }
    View view{now, 0, 0, &pending};
    double cumulative = 0;
    for (const Pending& p : pending) {
      cumulative += p.left;
      const double density = cumulative / (p.deadline - now);
      if (density >= view.rho) view.rho = density, view.group_deadline = p.deadline;
    }
    const double v = std::max(rule(view), view.rho);
    double end = std::min({next_release, view.group_deadline, next_change(now)});
    if (continuous) end = std::min(end, now + dt);
    if (!(end > now)) end = std::nextafter(now, INFINITY);
    // EDF at speed v over [now, end).
    const double budget = v * (end - now);
    double used = 0;
    bool all_done = true;
    for (Pending& p : pending) {
      const double take = std::min(p.left, budget - used);
      if (take < p.left) {
        p.left -= take;
        used = budget;
        all_done = false;
        break;
      }
      used += p.left;
      p.left = 0;
    }
    if (end == view.group_deadline) {  // OA's group is due: clear rounding residue
      for (Pending& p : pending) {
        if (p.deadline <= end && p.left <= 1e-9 * p.work) p.left = 0;
      }
    }
    if (all_done) {  // everything pending finished by now + used / v <= end
      const double stop = std::min(end, now + used / v);
      push_piece(now, stop, v);
      now = stop > now ? stop : end;
    } else {
      push_piece(now, end, v);
      now = end;
    }
  }
  return simplify(out);
}

double oa_rule(const View& v) { return v.rho; }
double never(double) { return INFINITY; }

}  // namespace

Profile avr(const Instance& inst) {
  std::vector<double> density(static_cast<size_t>(inst.size()));
  for (int64_t j = 0; j < inst.size(); ++j) density[j] = inst.work[j] / (inst.deadline[j] - inst.release[j]);
  return rate_sum(inst.release, inst.deadline, density);
}

Profile oa(const Instance& inst) { return simulate(inst, oa_rule, never, false, 0); }

Profile qoa(const Instance& inst, const OnlineParams& p) {
  const double q = p.q > 0 ? p.q : 2.0 - 1.0 / p.alpha;
  return simulate(inst, [q](const View& v) { return q * v.rho; }, never, true, p.dt);
}

Profile bkp(const Instance& inst, const OnlineParams& p) {
  // s(t) = max_{t2 > t} w(t, e t - (e-1) t2, t2) / (t2 - t), where w(t, t1, t2)
  // is the work released in [t1, t] with deadline <= t2. Job j counts for t2 >=
  // tau_j = max(d_j, (e t - r_j) / (e - 1)), so the max is over the sorted tau_j.
  const double e = std::exp(1.0);
  const std::vector<int64_t> by_release = release_order(inst);
  std::vector<std::pair<double, double>> tau;
  auto rule = [&](const View& v) {
    tau.clear();
    for (int64_t j : by_release) {
      if (inst.release[j] > v.now) break;
      tau.emplace_back(std::max(inst.deadline[j], (e * v.now - inst.release[j]) / (e - 1)), inst.work[j]);
    }
    std::sort(tau.begin(), tau.end());
    double work = 0, best = 0;
    for (const auto& [t2, w] : tau) {
      work += w;
      if (t2 > v.now) best = std::max(best, work / (t2 - v.now));
    }
    return best;
  };
  return simulate(inst, rule, never, true, p.dt);
}

namespace {

struct Stair {
  double end, speed;
};

/// The OA plan of the pending work from 'now': the least concave majorant of
/// cumulative work against deadline, as constant-speed groups (YDS when every
/// job is already released).
std::vector<Stair> staircase(const std::vector<Pending>& pending, double now) {
  struct Point {
    double x, y;
  };
  std::vector<Point> hull{{now, 0}};
  double cumulative = 0;
  for (size_t k = 0; k < pending.size(); ++k) {
    cumulative += pending[k].left;
    if (k + 1 < pending.size() && pending[k + 1].deadline == pending[k].deadline) continue;
    const Point p{pending[k].deadline, cumulative};
    while (hull.size() >= 2) {
      const Point& a = hull[hull.size() - 2];
      const Point& b = hull.back();
      // Drop b when it lies on or below the chord a-p.
      if ((b.y - a.y) * (p.x - a.x) <= (p.y - a.y) * (b.x - a.x)) hull.pop_back();
      else break;
    }
    hull.push_back(p);
  }
  std::vector<Stair> out;
  for (size_t i = 1; i < hull.size(); ++i) {
    out.push_back({hull[i].x, (hull[i].y - hull[i - 1].y) / (hull[i].x - hull[i - 1].x)});
  }
  return out;
}

double staircase_energy(const std::vector<Stair>& stairs, double now, double alpha) {
  double e = 0, t = now;
  for (const Stair& s : stairs) e += std::pow(s.speed, alpha) * (s.end - t), t = s.end;
  return e;
}

/// EDF at speed v for 'span' on 'pending'; returns the busy time.
double run_edf(std::vector<Pending>& pending, double v, double span) {
  double budget = v * span;
  for (Pending& p : pending) {
    if (p.left <= budget) {
      budget -= p.left;
      p.left = 0;
    } else {
      p.left -= budget;
      return span;
    }
  }
  return span - budget / v;
}

}  // namespace

FollowStats follow(const Instance& inst, const std::function<double(double)>& predicted,
                   const std::function<double(double)>& next_change, const OnlineParams& prm, Profile& out) {
  FollowStats stats;
  out = Profile{};
  const int64_t n = inst.size();
  if (n == 0) return stats;
  const std::vector<int64_t> by_release = release_order(inst);
  auto push_piece = [&](double t0, double t1, double v) { append_piece(out, t0, t1, v); };
  std::vector<Pending> pending;
  size_t next = 0;
  double now = inst.release[by_release.front()];
  double spent = 0;        // energy so far
  double psi = 0;          // OPT of the jobs released so far (a lower bound on OPT), maybe stale
  bool psi_stale = false;
  Instance released;
  auto current_psi = [&] {
    if (psi_stale) psi = energy(yds(released), prm.alpha), psi_stale = false;
    return psi;
  };
  // Phase 1: follow the prediction while phi = spent + cost-to-go < gamma *
  // OPT(released); when that budget is used up, run OA (phi stays constant)
  // until a release raises the budget. Only a release can push phi past the
  // hard limit; then phase 2 takes over for good.
  bool switched = false, exhausted = false;
  const double hard = prm.hard_factor * prm.gamma;
  while (next < by_release.size() || !pending.empty()) {
    if (next < by_release.size() && inst.release[by_release[next]] <= now) exhausted = false;
    while (next < by_release.size() && inst.release[by_release[next]] <= now) {
      const int64_t j = by_release[next++];
      admit(pending, inst, j);
      released.release.push_back(inst.release[j]);
      released.deadline.push_back(inst.deadline[j]);
      released.work.push_back(inst.work[j]);
      psi_stale = true;
    }
    drop_settled(pending, now);
    const double next_release = next < by_release.size() ? inst.release[by_release[next]] : INFINITY;
    if (pending.empty()) {
      if (!std::isfinite(next_release)) break;
      now = next_release;
      continue;
    }
    const std::vector<Stair> stairs = staircase(pending, now);
    const double phi = spent + staircase_energy(stairs, now, prm.alpha);
    if (phi > hard * psi && phi > hard * current_psi()) {
      switched = true;
      break;
    }
    const bool trusting = !exhausted && (phi < prm.gamma * psi || phi < prm.gamma * current_psi());
    const double rho = stairs.front().speed;
    const double wanted = (1 + prm.eps) * predicted(now);
    if (!trusting && wanted > rho) stats.budget_bound = true;
    const double v = trusting ? std::max(rho, wanted) : rho;
    double end = std::min(next_release, next_change(now));
    if (v <= rho) end = std::min(end, stairs.front().end);
    if (!std::isfinite(end)) end = pending.back().deadline;
    if (!(end > now)) end = std::nextafter(now, INFINITY);
    std::vector<Pending> trial = pending;
    double busy = run_edf(trial, v, end - now);
    double step = end - now;
    if (v > rho) {
      // phi is non-decreasing while the speed is constant (v^a >= rho^a + a rho^(a-1) (v - rho)),
      // so the moment it reaches the budget is found by bisection.
      const double budget = prm.gamma * psi;
      const double phi_end = spent + std::pow(v, prm.alpha) * busy + staircase_energy(staircase(trial, now + busy), now + busy, prm.alpha);
      if (phi_end > budget) {
        double lo = 0, hi = end - now;
        for (int it = 0; it < 60; ++it) {
          const double mid = 0.5 * (lo + hi);
          std::vector<Pending> probe = pending;
          const double b = run_edf(probe, v, mid);
          const double phi_mid = spent + std::pow(v, prm.alpha) * b + staircase_energy(staircase(probe, now + b), now + b, prm.alpha);
          (phi_mid > budget ? hi : lo) = mid;
        }
        trial = pending;
        busy = run_edf(trial, v, lo);
        step = lo;
        exhausted = true;
        stats.budget_bound = true;
      }
      stats.trusted_time += step;
    }
    pending.swap(trial);
    push_piece(now, now + busy, v);
    spent += std::pow(v, prm.alpha) * busy;
    if (v <= rho && end == stairs.front().end) {  // the OA group is due: clear rounding residue
      for (Pending& p : pending) {
        if (p.deadline <= end && p.left <= 1e-9 * p.work) p.left = 0;
      }
    }
    now = busy < step ? now + busy : now + step;
  }
  if (!switched) return stats;
  // Phase 2: the pending work follows its OA plan fixed at the switch; later
  // jobs run OA on their own; the machine runs the sum of both.
  stats.switched = true;
  stats.budget_bound = true;
  stats.switch_time = now;
  pending.erase(std::remove_if(pending.begin(), pending.end(), [&](const Pending& p) { return p.left <= 1e-12 * p.work; }),
                pending.end());
  Profile plan;
  double t = now;
  for (const Stair& s : staircase(pending, now)) {
    if (plan.t.empty()) plan.t.push_back(t);
    plan.speed.push_back(s.speed);
    plan.t.push_back(s.end);
    t = s.end;
  }
  Instance later;
  for (; next < by_release.size(); ++next) {
    const int64_t j = by_release[next];
    later.release.push_back(inst.release[j]);
    later.deadline.push_back(inst.deadline[j]);
    later.work.push_back(inst.work[j]);
  }
  const Profile rest = add(plan, oa(later));
  for (size_t i = 0; i < rest.speed.size(); ++i) push_piece(rest.t[i], rest.t[i + 1], rest.speed[i]);
  out = simplify(out);
  return stats;
}

Profile follow(const Instance& inst, const std::function<double(double)>& predicted,
               const std::function<double(double)>& next_change, const OnlineParams& p) {
  Profile out;
  follow(inst, predicted, next_change, p, out);
  return simplify(out);
}

Profile follow_job_speeds(const Instance& inst, const std::vector<double>& job_speed, const OnlineParams& p) {
  const std::vector<int64_t> by_release = release_order(inst);
  // s_hat(t) = max over released jobs whose window holds t of their predicted speed.
  auto predicted = [&](double now) {
    double best = 0;
    for (int64_t j : by_release) {
      if (inst.release[j] > now) break;
      if (inst.deadline[j] > now) best = std::max(best, job_speed[j]);
    }
    return best;
  };
  // The prediction changes only at releases (already events) and deadlines.
  std::vector<double> deadlines(inst.deadline);
  std::sort(deadlines.begin(), deadlines.end());
  auto next_change = [&](double now) {
    const auto it = std::upper_bound(deadlines.begin(), deadlines.end(), now);
    return it == deadlines.end() ? INFINITY : *it;
  };
  return follow(inst, predicted, next_change, p);
}

Profile las(const Instance& inst, const std::vector<double>& work_pred, const OnlineParams& p) {
  const int64_t n = inst.size();
  Instance predicted = inst;
  for (int64_t j = 0; j < n; ++j) predicted.work[j] = std::max(work_pred[j], 0.0);
  // Jobs predicted empty get no share; YDS needs positive work, so give them a trace.
  double smallest = INFINITY;
  for (double w : predicted.work) if (w > 0) smallest = std::min(smallest, w);
  if (!std::isfinite(smallest)) smallest = 1;
  for (double& w : predicted.work) if (!(w > 0)) w = 1e-12 * smallest;
  const Profile plan = yds(predicted);
  const Check shares = edf_check(predicted, plan);
  std::vector<double> start, end, rate, planned(static_cast<size_t>(n), 0);
  std::vector<size_t> first_piece;
  for (const Piece& piece : shares.pieces) {
    const double density = predicted.work[piece.job] / (inst.deadline[piece.job] - inst.release[piece.job]);
    const double cap = p.eps > 0 ? density / (p.eps * p.eps) : INFINITY;
    const double v = std::min(plan.at(piece.start), cap);
    start.push_back(piece.start);
    end.push_back(piece.end);
    rate.push_back(v);
    planned[piece.job] += v * (piece.end - piece.start);
  }
  // Online: at r_j the true work is known; the planned share shrinks to it,
  // any excess runs at AVR density over the job's window.
  for (size_t i = 0; i < shares.pieces.size(); ++i) {
    const int64_t j = shares.pieces[i].job;
    if (planned[j] > inst.work[j]) rate[i] *= inst.work[j] / planned[j];
  }
  for (int64_t j = 0; j < n; ++j) {
    const double excess = inst.work[j] - planned[j];
    if (excess > 0) {
      start.push_back(inst.release[j]);
      end.push_back(inst.deadline[j]);
      rate.push_back(excess / (inst.deadline[j] - inst.release[j]));
    }
  }
  return rate_sum(start, end, rate);
}

const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names{"yds", "yds-naive", "avr", "oa", "qoa", "bkp", "las",
                                              "pred-dynamic", "pred-offline", "pred-jobspeed"};
  return names;
}

bool algorithm_needs_prediction(const std::string& name) {
  return name == "las" || name.rfind("pred-", 0) == 0;
}

Profile run_algorithm(const std::string& name, const Instance& inst, const Prediction* pred, const OnlineParams& p) {
  if (name == "yds") return yds(inst);
  if (name == "yds-naive") return yds_naive(inst);
  if (name == "avr") return avr(inst);
  if (name == "oa") return oa(inst);
  if (name == "qoa") return qoa(inst, p);
  if (name == "bkp") return bkp(inst, p);
  if (!pred) throw nk::usage_error("algorithm '" + name + "' needs --predictions");
  if (name == "las") return las(inst, pred->work, p);
  if (name == "pred-jobspeed") return follow_job_speeds(inst, pred->job_speed, p);
  if (name == "pred-dynamic" || name == "pred-offline") {
    const Profile& s = pred->profile;
    auto next_change = [&s](double now) {
      const auto it = std::upper_bound(s.t.begin(), s.t.end(), now);
      return it == s.t.end() ? INFINITY : *it;
    };
    return follow(inst, [&s](double t) { return s.at(t); }, next_change, p);
  }
  throw nk::usage_error("unknown algorithm '" + name + "'");
}

Prediction oracle_prediction(const Instance& inst, double noise, const std::string& adversarial, uint64_t seed,
                             double alpha) {
  (void)alpha;
  Prediction pred;
  pred.job_speed = yds_job_speeds(inst);
  pred.profile = envelope(inst, pred.job_speed);
  pred.work = inst.work;
  nk::Rng rng(seed);
  auto factor = [&] { return noise > 0 ? std::exp(noise * rng.normal()) : 1.0; };
  for (double& s : pred.profile.speed) s *= factor();
  for (double& s : pred.job_speed) s *= factor();
  for (double& w : pred.work) w *= factor();
  if (adversarial.empty()) return pred;
  double top = 0;
  for (double s : pred.profile.speed) top = std::max(top, s);
  auto corrupt = [&](double& x, double scale) {
    if (adversarial == "zero") x = 0;
    else if (adversarial == "x10") x *= 10;
    else if (adversarial == "random") x = scale * 2 * rng.uniform();
    else throw nk::usage_error("--adversarial must be zero, x10 or random");
  };
  for (double& s : pred.profile.speed) corrupt(s, top);
  for (double& s : pred.job_speed) corrupt(s, top);
  double mean_work = 0;
  for (double w : inst.work) mean_work += w / static_cast<double>(inst.size());
  for (double& w : pred.work) corrupt(w, mean_work);
  return pred;
}

}  // namespace ss
