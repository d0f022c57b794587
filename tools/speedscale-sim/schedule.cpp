// schedule.cpp - speed profiles: energy, the exact EDF check, envelopes and sums.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#include "speedscale-sim/speedscale.hpp"

namespace ss {

double Profile::at(double x) const {
  if (speed.empty() || x < t.front() || x >= t.back()) return 0;
  const auto it = std::upper_bound(t.begin(), t.end(), x);
  return speed[static_cast<size_t>(it - t.begin() - 1)];
}

double energy(const Profile& p, double alpha) {
  double e = 0;
  for (size_t i = 0; i < p.speed.size(); ++i) {
    if (p.speed[i] > 0) e += std::pow(p.speed[i], alpha) * (p.t[i + 1] - p.t[i]);
  }
  return e;
}

std::vector<int64_t> release_order(const Instance& inst) {
  std::vector<int64_t> order(static_cast<size_t>(inst.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return inst.release[a] < inst.release[b]; });
  return order;
}

Profile simplify(const Profile& p) {
  Profile out;
  for (size_t i = 0; i < p.speed.size(); ++i) {
    if (!(p.t[i + 1] > p.t[i])) continue;
    if (!out.speed.empty() && out.t.back() == p.t[i] && out.speed.back() == p.speed[i]) {
      out.t.back() = p.t[i + 1];
      continue;
    }
    if (out.t.empty() || out.t.back() != p.t[i]) {
      if (!out.t.empty()) out.speed.push_back(0);  // a gap becomes an explicit idle piece
      out.t.push_back(p.t[i]);
    }
    out.speed.push_back(p.speed[i]);
    out.t.push_back(p.t[i + 1]);
  }
  return out;
}

Check edf_check(const Instance& inst, const Profile& p, double rel_tol) {
  Check check;
  const int64_t n = inst.size();
  const std::vector<int64_t> by_release = release_order(inst);
  std::vector<double> left(inst.work);
  auto later = [&](int64_t a, int64_t b) {
    return inst.deadline[a] != inst.deadline[b] ? inst.deadline[a] > inst.deadline[b] : a > b;
  };
  std::priority_queue<int64_t, std::vector<int64_t>, decltype(later)> ready(later);
  // Every deadline is an event, so shortfalls are measured exactly at d_j.
  std::vector<double> deadlines(inst.deadline);
  std::sort(deadlines.begin(), deadlines.end());
  size_t next_job = 0, next_deadline = 0, piece = 0;
  double now = n ? std::min(inst.release[by_release[0]], p.t.empty() ? inst.release[by_release[0]] : p.t.front()) : 0;
  auto fail = [&](int64_t j) {
    const double shortfall = left[j] / inst.work[j];
    check.feasible = false;
    ++check.late_jobs;
    if (shortfall > check.worst_shortfall) check.worst_shortfall = shortfall, check.worst_job = j;
  };
  while (true) {
    while (next_job < by_release.size() && inst.release[by_release[next_job]] <= now) ready.push(by_release[next_job++]);
    // Drop finished jobs and judge those whose deadline has come.
    while (!ready.empty()) {
      const int64_t j = ready.top();
      if (left[j] <= rel_tol * inst.work[j]) {
        ready.pop();
        continue;
      }
      if (inst.deadline[j] <= now) {
        fail(j);
        ready.pop();
        continue;
      }
      break;
    }
    while (piece < p.speed.size() && p.t[piece + 1] <= now) ++piece;
    double horizon = std::numeric_limits<double>::infinity();
    if (next_job < by_release.size()) horizon = inst.release[by_release[next_job]];
    while (next_deadline < deadlines.size() && deadlines[next_deadline] <= now) ++next_deadline;
    if (next_deadline < deadlines.size()) horizon = std::min(horizon, deadlines[next_deadline]);
    if (ready.empty() && next_job >= by_release.size()) break;
    double speed = 0;
    if (piece < p.speed.size()) {
      if (p.t[piece] > now) {
        horizon = std::min(horizon, p.t[piece]);
      } else {
        speed = p.speed[piece];
        horizon = std::min(horizon, p.t[piece + 1]);
      }
    }
    if (!std::isfinite(horizon)) {  // work left but the profile has ended
      while (!ready.empty()) {
        const int64_t j = ready.top();
        ready.pop();
        if (left[j] > rel_tol * inst.work[j]) fail(j);
      }
      break;
    }
    if (ready.empty() || speed <= 0) {
      now = horizon;
      continue;
    }
    const int64_t j = ready.top();
    const double finish = now + left[j] / speed;
    const double end = std::min(finish, horizon);
    if (end > now) check.pieces.push_back({j, now, end});
    if (finish <= horizon) {
      left[j] = 0;
    } else {
      left[j] -= speed * (end - now);
    }
    now = end;
  }
  return check;
}

namespace {

/// Sweeps open/close events of [start_j, end_j) carrying 'value_j' and lets
/// 'combine' turn the open set into a speed.
template <class Open, class Close, class Value>
Profile sweep(const std::vector<double>& start, const std::vector<double>& end, Open open, Close close, Value value) {
  struct Event {
    double t;
    int64_t job;
    bool opens;
  };
  std::vector<Event> events;
  events.reserve(start.size() * 2);
  for (size_t j = 0; j < start.size(); ++j) {
    if (!(end[j] > start[j])) continue;
    events.push_back({start[j], static_cast<int64_t>(j), true});
    events.push_back({end[j], static_cast<int64_t>(j), false});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
  Profile out;
  for (size_t i = 0; i < events.size();) {
    const double t = events[i].t;
    for (; i < events.size() && events[i].t == t; ++i) {
      if (events[i].opens) open(events[i].job);
      else close(events[i].job);
    }
    if (!out.t.empty()) out.t.push_back(t);
    if (i < events.size()) {
      if (out.t.empty()) out.t.push_back(t);
      out.speed.push_back(value());
    }
  }
  if (out.t.size() != out.speed.size() + 1) out.t.resize(out.speed.size() + (out.speed.empty() ? 0 : 1));
  return simplify(out);
}

}  // namespace

Profile envelope(const Instance& inst, const std::vector<double>& job_speed) {
  std::multiset<double> open;
  std::vector<std::multiset<double>::iterator> where(job_speed.size());
  return sweep(
      inst.release, inst.deadline, [&](int64_t j) { where[j] = open.insert(job_speed[j]); },
      [&](int64_t j) { open.erase(where[j]); }, [&] { return open.empty() ? 0.0 : *open.rbegin(); });
}

Profile rate_sum(const std::vector<double>& start, const std::vector<double>& end, const std::vector<double>& rate) {
  // Kahan-free but re-summed from scratch at every event would be O(n^2);
  // a running sum in long double keeps the drift far below the 1e-9 check.
  long double total = 0;
  int64_t open_count = 0;
  return sweep(
      start, end, [&](int64_t j) { total += rate[j], ++open_count; },
      [&](int64_t j) {
        total -= rate[j];
        if (--open_count == 0) total = 0;
      },
      [&] { return static_cast<double>(std::max<long double>(total, 0)); });
}

Profile add(const Profile& a, const Profile& b) {
  std::vector<double> times(a.t);
  times.insert(times.end(), b.t.begin(), b.t.end());
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  Profile out;
  if (times.size() < 2) return a.speed.empty() ? b : a;
  out.t = times;
  for (size_t i = 0; i + 1 < times.size(); ++i) {
    const double mid = times[i];
    out.speed.push_back(a.at(mid) + b.at(mid));
  }
  return simplify(out);
}

double relative_error(const Profile& a, const Profile& b, double alpha) {
  std::vector<double> times(a.t);
  times.insert(times.end(), b.t.begin(), b.t.end());
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  double diff = 0, base = 0;
  for (size_t i = 0; i + 1 < times.size(); ++i) {
    const double len = times[i + 1] - times[i];
    diff += std::pow(std::abs(a.at(times[i]) - b.at(times[i])), alpha) * len;
    base += std::pow(b.at(times[i]), alpha) * len;
  }
  return base > 0 ? std::pow(diff / base, 1.0 / alpha) : (diff > 0 ? INFINITY : 0.0);
}

}  // namespace ss
