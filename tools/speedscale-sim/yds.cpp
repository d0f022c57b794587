// yds.cpp - the offline optimum of Yao, Demers and Shenker.
//
// Fast version. Every job j gets one speed s_j in the optimum, and the
// optimal profile is s(t) = max{ s_j : t in [r_j, d_j) }. For a speed sigma,
// the jobs with s_j > sigma are the smallest maximiser A of
// f(A) = W(A) - sigma |U(A)| (U(A): union of their windows), i.e. the source
// side of a minimum cut of the job/time transportation network with time
// capacity sigma per unit. EDF at constant speed sigma computes a maximum flow
// (earliest deadline first is optimal for interval bipartite graphs), and the
// minimum cut is what the residual network reaches from the jobs EDF could not
// finish: a job reaches all time in its window, a busy time reaches the job EDF
// ran there. Taking sigma = W(J) / |U(J)| always splits J in two non-empty
// parts unless every job of J has speed sigma: A is solved on its own (its
// windows stay), J \ A on the time line with U(A) cut out (YDS's collapse).
// Each split costs O(m log m) for m jobs, so the whole run is O(n^2 log n) in
// the worst case and O(n log^2 n) when splits are balanced.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

#include "speedscale-sim/speedscale.hpp"

namespace ss {

namespace {

struct Sub {
  std::vector<int64_t> jobs;
  std::vector<double> a, b;  ///< windows in this sub-problem's (collapsed) time
};

struct Interval {
  double lo, hi;
};

std::vector<Interval> union_of(const std::vector<double>& a, const std::vector<double>& b, const std::vector<size_t>& idx) {
  std::vector<size_t> order(idx);
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return a[x] < a[y]; });
  std::vector<Interval> out;
  for (size_t i : order) {
    if (!out.empty() && a[i] <= out.back().hi) {
      out.back().hi = std::max(out.back().hi, b[i]);
    } else {
      out.push_back({a[i], b[i]});
    }
  }
  return out;
}

/// The jobs of 'sub' whose optimal speed exceeds sigma (indices into sub.jobs).
std::vector<size_t> above(const Sub& sub, const std::vector<double>& w, double sigma, double span) {
  const size_t m = sub.jobs.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return sub.a[x] < sub.a[y]; });
  auto later = [&](size_t x, size_t y) { return sub.b[x] != sub.b[y] ? sub.b[x] > sub.b[y] : x > y; };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> ready(later);
  std::vector<double> left(m);
  for (size_t i = 0; i < m; ++i) left[i] = w[static_cast<size_t>(sub.jobs[i])];
  struct Run {
    size_t job;
    double start, end;
  };
  std::vector<Run> runs;
  std::vector<char> unfinished(m, 0);
  const double tol = 1e-12;
  size_t next = 0;
  double now = m ? sub.a[order[0]] : 0;
  while (next < m || !ready.empty()) {
    while (next < m && sub.a[order[next]] <= now) ready.push(order[next++]);
    if (ready.empty()) {
      now = sub.a[order[next]];
      continue;
    }
    const size_t j = ready.top();
    if (sub.b[j] <= now) {  // its deadline passed with work left: a deficient job
      ready.pop();
      unfinished[j] = left[j] > tol * w[static_cast<size_t>(sub.jobs[j])];
      continue;
    }
    const double horizon = std::min(sub.b[j], next < m ? sub.a[order[next]] : INFINITY);
    const double finish = now + left[j] / sigma;
    if (finish <= horizon) {
      if (finish > now) runs.push_back({j, now, finish});
      left[j] = 0;
      ready.pop();
      now = finish;
    } else {
      runs.push_back({j, now, horizon});
      left[j] -= sigma * (horizon - now);
      now = horizon;
    }
  }
  // Residual reachability from the deficient jobs; each run is visited once.
  std::vector<size_t> skip(runs.size() + 1);
  std::iota(skip.begin(), skip.end(), 0);
  auto find = [&](size_t x) {
    while (skip[x] != x) x = skip[x] = skip[skip[x]];
    return x;
  };
  std::vector<double> run_end(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) run_end[i] = runs[i].end;
  std::vector<char> reached(m, 0);
  std::vector<size_t> stack;
  for (size_t i = 0; i < m; ++i) {
    if (unfinished[i]) reached[i] = 1, stack.push_back(i);
  }
  const double overlap = 1e-12 * span;  // runs that only touch a window by rounding do not count
  while (!stack.empty()) {
    const size_t j = stack.back();
    stack.pop_back();
    const double lo = sub.a[j] + overlap, hi = sub.b[j] - overlap;
    size_t r = find(static_cast<size_t>(std::upper_bound(run_end.begin(), run_end.end(), lo) - run_end.begin()));
    while (r < runs.size() && runs[r].start < hi) {
      skip[r] = r + 1;
      const size_t k = runs[r].job;
      if (!reached[k]) reached[k] = 1, stack.push_back(k);
      r = find(r + 1);
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < m; ++i) {
    if (reached[i]) out.push_back(i);
  }
  return out;
}

/// t minus the length of 'cut' (sorted, disjoint) before t.
struct Collapse {
  std::vector<Interval> cut;
  std::vector<double> before;  ///< removed length before cut[i]
  explicit Collapse(std::vector<Interval> c) : cut(std::move(c)), before(cut.size() + 1, 0) {
    for (size_t i = 0; i < cut.size(); ++i) before[i + 1] = before[i] + (cut[i].hi - cut[i].lo);
  }
  double operator()(double t) const {
    const size_t k = static_cast<size_t>(
        std::upper_bound(cut.begin(), cut.end(), t, [](double x, const Interval& iv) { return x < iv.lo; }) - cut.begin());
    if (k == 0) return t;
    const Interval& iv = cut[k - 1];
    return t - before[k - 1] - (std::min(t, iv.hi) - iv.lo);
  }
};

}  // namespace

std::vector<double> yds_job_speeds(const Instance& inst) {
  const int64_t n = inst.size();
  std::vector<double> speed(static_cast<size_t>(n), 0);
  if (n == 0) return speed;
  std::vector<Sub> stack(1);  // sub-problems still to split
  stack[0].jobs.resize(static_cast<size_t>(n));
  std::iota(stack[0].jobs.begin(), stack[0].jobs.end(), 0);
  stack[0].a = inst.release;
  stack[0].b = inst.deadline;
  while (!stack.empty()) {
    Sub sub = std::move(stack.back());
    stack.pop_back();
    const size_t m = sub.jobs.size();
    std::vector<size_t> all(m);
    std::iota(all.begin(), all.end(), 0);
    const std::vector<Interval> u = union_of(sub.a, sub.b, all);
    double length = 0, total = 0;
    for (const Interval& iv : u) length += iv.hi - iv.lo;
    for (int64_t j : sub.jobs) total += inst.work[static_cast<size_t>(j)];
    const double sigma = total / length;
    std::vector<size_t> hot = m > 1 ? above(sub, inst.work, sigma, u.back().hi - u.front().lo) : std::vector<size_t>{};
    if (hot.empty() || hot.size() == m) {
      for (int64_t j : sub.jobs) speed[static_cast<size_t>(j)] = sigma;
      continue;
    }
    Sub high, low;
    std::vector<char> is_hot(m, 0);
    for (size_t i : hot) {
      is_hot[i] = 1;
      high.jobs.push_back(sub.jobs[i]);
      high.a.push_back(sub.a[i]);
      high.b.push_back(sub.b[i]);
    }
    const Collapse collapse(union_of(sub.a, sub.b, hot));
    for (size_t i = 0; i < m; ++i) {
      if (is_hot[i]) continue;
      low.jobs.push_back(sub.jobs[i]);
      low.a.push_back(collapse(sub.a[i]));
      low.b.push_back(collapse(sub.b[i]));
    }
    stack.push_back(std::move(low));
    stack.push_back(std::move(high));
  }
  return speed;
}

Profile yds(const Instance& inst) { return envelope(inst, yds_job_speeds(inst)); }

Profile yds_naive(const Instance& inst, std::vector<double>* job_speed) {
  const int64_t n = inst.size();
  std::vector<double> a(inst.release), b(inst.deadline), speed(static_cast<size_t>(n), 0);
  std::vector<int64_t> alive(static_cast<size_t>(n));
  std::iota(alive.begin(), alive.end(), 0);
  while (!alive.empty()) {
    // Densest interval [a_i, b_k]: for each start, sweep the jobs by deadline.
    std::vector<int64_t> by_deadline(alive);
    std::sort(by_deadline.begin(), by_deadline.end(), [&](int64_t x, int64_t y) { return b[x] < b[y]; });
    double best = -1, lo = 0, hi = 0;
    for (int64_t s : alive) {
      const double start = a[s];
      double work = 0;
      for (int64_t k : by_deadline) {
        if (a[k] < start) continue;
        work += inst.work[k];
        const double density = work / (b[k] - start);
        if (density > best) best = density, lo = start, hi = b[k];
      }
    }
    std::vector<int64_t> rest;
    for (int64_t j : alive) {
      if (a[j] >= lo && b[j] <= hi) {
        speed[j] = best;
      } else {
        rest.push_back(j);
      }
    }
    const double cut = hi - lo;
    for (int64_t j : rest) {
      for (double* t : {&a[j], &b[j]}) {
        if (*t >= hi) *t -= cut;
        else if (*t > lo) *t = lo;
      }
    }
    alive.swap(rest);
  }
  if (job_speed) *job_speed = speed;
  return envelope(inst, speed);
}

}  // namespace ss
