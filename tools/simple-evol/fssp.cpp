// fssp.cpp - makespan evaluations (plain, prefix-cached, accelerated), NEH,
// iterated greedy and the published GLS.
#include "simple-evol/fssp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sevol {

FlowShop FlowShop::from(const Instance& item) {
  FlowShop s;
  s.n = item.jobs;
  s.m = item.machines;
  s.p.resize(static_cast<size_t>(s.n * s.m));
  for (int64_t j = 0; j < s.n; ++j) {
    for (int64_t k = 0; k < s.m; ++k) s.p[j * s.m + k] = item.p(j, k);
  }
  return s;
}

bool FlowShop::integral() const {
  return std::all_of(p.begin(), p.end(), [](double x) { return x == std::floor(x) && std::fabs(x) < 1e15; });
}

namespace {

/// c <- c after job j (c holds m completion times).
inline void step(const FlowShop& s, const std::vector<double>& p, int64_t j, double* c) {
  const double* pj = &p[static_cast<size_t>(j * s.m)];
  c[0] += pj[0];
  for (int64_t k = 1; k < s.m; ++k) {
    if (c[k] < c[k - 1]) c[k] = c[k - 1];
    c[k] += pj[k];
  }
}

/// Heads e[pos] (completion after the first pos jobs) and tails q[pos]
/// (least time from the start of job seq[pos] on machine k to the end), for
/// the matrix p. e has n+1 rows, q has n+1 rows (q[n] = 0).
struct HeadsTails {
  std::vector<double> e, q;
  /// Heads and tails in one sweep (two independent chains side by side);
  /// tails only when 'heads' is false.
  void build(const FlowShop& s, const std::vector<double>& p, const std::vector<int64_t>& seq, bool heads = true) {
    const int64_t len = static_cast<int64_t>(seq.size()), m = s.m;
    e.resize(static_cast<size_t>((len + 1) * m));
    q.resize(static_cast<size_t>((len + 1) * m));
    std::fill_n(e.begin(), m, 0.0);
    std::fill_n(q.begin() + len * m, m, 0.0);
    for (int64_t a = 0; a < len; ++a) {
      if (heads) {
        const double* pj = &p[static_cast<size_t>(seq[a] * m)];
        const double* ei = &e[a * m];
        double* en = &e[(a + 1) * m];
        en[0] = ei[0] + pj[0];
        for (int64_t k = 1; k < m; ++k) en[k] = std::max(ei[k], en[k - 1]) + pj[k];
      }
      const int64_t i = len - 1 - a;
      const double* pi = &p[static_cast<size_t>(seq[i] * m)];
      double* qi = &q[i * m];
      const double* qn = &q[(i + 1) * m];
      qi[m - 1] = qn[m - 1] + pi[m - 1];
      for (int64_t k = m - 2; k >= 0; --k) qi[k] = std::max(qn[k], qi[k + 1]) + pi[k];
    }
  }
  /// Makespan of inserting job j between positions pos-1 and pos.
  double insert(const FlowShop& s, const std::vector<double>& p, int64_t j, int64_t pos) const {
    const int64_t m = s.m;
    const double* ep = &e[pos * m];
    const double* qp = &q[pos * m];
    const double* pj = &p[static_cast<size_t>(j * m)];
    double f = 0, best = 0;
    for (int64_t k = 0; k < m; ++k) {
      f = std::max(f, ep[k]) + pj[k];
      best = std::max(best, f + qp[k]);
    }
    return best;
  }
};

/// Candidate sequences advanced side by side, a lane each: c is
/// machine-major [m][width], so that one job's step over a range of lanes is
/// a loop over contiguous lanes (independent, so it vectorises and is not
/// bound by the max-then-add chain of one sequence). Each lane's operations
/// are those of step(), in the same order: the same bits.
struct Lanes {
  int64_t m = 0, width = 0;
  std::vector<double> c, cmax;  ///< states; each lane's makespan
  void reset(int64_t machines, int64_t lanes) {
    m = machines;
    width = lanes;
    c.assign(static_cast<size_t>(m * width), 0.0);
  }
  double* row(int64_t k) { return &c[static_cast<size_t>(k * width)]; }
  /// Lanes [lo, hi) step the job whose times are pj.
  void step(const double* pj, int64_t lo, int64_t hi) {
    double* r0 = row(0);
    for (int64_t l = lo; l < hi; ++l) r0[l] += pj[0];
    for (int64_t k = 1; k < m; ++k) {
      double* r = row(k);
      const double* up = row(k - 1);
      const double pk = pj[k];
      for (int64_t l = lo; l < hi; ++l) r[l] = std::max(r[l], up[l]) + pk;
    }
  }
  /// Lane l alone steps the job whose times are pj.
  void step_one(const double* pj, int64_t l) {
    c[static_cast<size_t>(l)] += pj[0];
    for (int64_t k = 1; k < m; ++k) {
      double& x = row(k)[l];
      x = std::max(x, row(k - 1)[l]) + pj[k];
    }
  }
  void set(int64_t l, const double* v) {
    for (int64_t k = 0; k < m; ++k) row(k)[l] = v[k];
  }
};

/// Heads and tails machine-major ([k][position], len + 1 positions), and
/// the makespans of one job inserted at every position, lane by lane with
/// HeadsTails::insert's operations.
struct HeadsTailsT {
  int64_t w = 0;
  std::vector<double> e, q, f, best;
  void build(const FlowShop& s, const std::vector<double>& p, const int64_t* seq, int64_t len) {
    const int64_t m = s.m;
    w = len + 1;
    e.resize(static_cast<size_t>(m * w));
    q.resize(static_cast<size_t>(m * w));
    for (int64_t k = 0; k < m; ++k) {
      e[k * w] = 0;
      q[k * w + len] = 0;
    }
    for (int64_t a = 0; a < len; ++a) {
      const double* pj = &p[static_cast<size_t>(seq[a] * m)];
      e[a + 1] = e[a] + pj[0];
      for (int64_t k = 1; k < m; ++k) e[k * w + a + 1] = std::max(e[k * w + a], e[(k - 1) * w + a + 1]) + pj[k];
      const int64_t i = len - 1 - a;
      const double* pi = &p[static_cast<size_t>(seq[i] * m)];
      q[(m - 1) * w + i] = q[(m - 1) * w + i + 1] + pi[m - 1];
      for (int64_t k = m - 2; k >= 0; --k) q[k * w + i] = std::max(q[k * w + i + 1], q[(k + 1) * w + i]) + pi[k];
    }
  }
  /// best[pos] for pos in [lo, hi): the makespan with the job of times pv inserted before position pos.
  void insert_all(const double* pv, int64_t m, int64_t lo, int64_t hi) {
    f.assign(static_cast<size_t>(w), 0.0);
    best.assign(static_cast<size_t>(w), 0.0);
    for (int64_t k = 0; k < m; ++k) {
      const double* ek = &e[k * w];
      const double* qk = &q[k * w];
      const double pk = pv[k];
      for (int64_t pos = lo; pos < hi; ++pos) {
        f[pos] = std::max(f[pos], ek[pos]) + pk;
        best[pos] = std::max(best[pos], f[pos] + qk[pos]);
      }
    }
  }
};

/// The swap pass at position i, first improvement against 'threshold':
/// every j > i is a lane (i and j swapped); from the first lane after an
/// accepted swap on, the lanes start again from the new sequence. With
/// 'tails' (exact arithmetic), lane j stops after position j and adds the
/// unchanged suffix's tails; else it runs to the end, as a full evaluation.
void swap_at(const FlowShop& s, const std::vector<double>& p, std::vector<int64_t>& seq, int64_t i, double& threshold,
             bool tails, HeadsTails& ht, Lanes& lanes, std::vector<double>& head) {
  const int64_t n = s.n, m = s.m;
  std::fill(head.begin(), head.end(), 0.0);
  for (int64_t t = 0; t < i; ++t) step(s, p, seq[t], head.data());
  auto row = [&](int64_t j) { return &p[static_cast<size_t>(j * m)]; };
  std::vector<double>& cmax = lanes.cmax;
  cmax.resize(static_cast<size_t>(n));
  for (int64_t start = i + 1; start < n;) {
    if (tails) ht.build(s, p, seq, false);
    lanes.reset(m, n);
    for (int64_t l = start; l < n; ++l) lanes.set(l, head.data());
    // position i: each lane's own job seq[l]
    for (int64_t l = start; l < n; ++l) lanes.step_one(row(seq[l]), l);
    // positions i+1 .. : lane t takes seq[i] at t, the others seq[t]
    for (int64_t t = i + 1; t < n; ++t) {
      const int64_t lo = tails ? std::max(t, start) : start;
      if (lo > t) {
        lanes.step(row(seq[t]), lo, n);
        continue;
      }
      lanes.step(row(seq[t]), lo, t);
      lanes.step(row(seq[t]), t + 1, n);
      lanes.step_one(row(seq[i]), t);  // lane t: seq[i] at position t
      if (tails) {
        const double* q = &ht.q[static_cast<size_t>((t + 1) * m)];
        double best = 0;
        for (int64_t k = 0; k < m; ++k) best = std::max(best, lanes.row(k)[t] + q[k]);
        cmax[t] = best;
      }
    }
    if (!tails) {
      for (int64_t l = start; l < n; ++l) cmax[l] = lanes.row(m - 1)[l];
    }
    int64_t taken = -1;
    for (int64_t l = start; l < n; ++l) {
      if (cmax[l] < threshold) {
        taken = l;
        break;
      }
    }
    if (taken < 0) break;
    std::swap(seq[i], seq[taken]);
    threshold = cmax[taken];
    start = taken + 1;
  }
}

/// One swap pass then one relocate pass, first improvement against
/// 'threshold' (the published local search). positions: the swap pass's
/// first positions (all when empty); jobs: the relocate pass's jobs (1..n-1
/// when empty, as published). Uses heads and tails when 'exact_fast'.
std::vector<int64_t> ls_pass(const FlowShop& s, const std::vector<double>& p, std::vector<int64_t> seq,
                             double threshold, const std::vector<int64_t>* positions, const std::vector<int64_t>* jobs,
                             bool exact_fast) {
  const int64_t n = s.n, m = s.m;
  std::vector<double> head(static_cast<size_t>(m));
  HeadsTails ht;
  HeadsTailsT htt;
  Lanes lanes;
  // swap pass
  const int64_t swap_count = positions ? static_cast<int64_t>(positions->size()) : n;
  for (int64_t a = 0; a < swap_count; ++a) {
    const int64_t i = positions ? (*positions)[a] : a;
    swap_at(s, p, seq, i, threshold, exact_fast, ht, lanes, head);
  }
  // relocate pass: remove job v, insert it at position j (1..n-1) of the rest
  const int64_t reloc_count = jobs ? static_cast<int64_t>(jobs->size()) : n - 1;
  std::vector<int64_t> base(static_cast<size_t>(n - 1));
  for (int64_t a = 0; a < reloc_count; ++a) {
    const int64_t v = jobs ? (*jobs)[a] : a + 1;
    int64_t w = 0;
    for (int64_t t = 0; t < n; ++t) {
      if (seq[t] != v) base[w++] = seq[t];
    }
    // the first position of least makespan (the published first-improvement
    // scan keeps exactly that one), taken when below the threshold
    const double* pv = &p[static_cast<size_t>(v * m)];
    const double* cm;
    if (exact_fast) {
      htt.build(s, p, base.data(), n - 1);
      htt.insert_all(pv, m, 1, n);
      cm = htt.best.data();
    } else {
      // lanes j = 1..n-1 (v before base[j]) forward to the end, as a full evaluation
      lanes.reset(m, n);
      std::fill(head.begin(), head.end(), 0.0);
      step(s, p, base[0], head.data());
      for (int64_t j = 1; j < n; ++j) lanes.set(j, head.data());
      for (int64_t t = 1; t < n; ++t) {
        if (t > 1) lanes.step(&p[static_cast<size_t>(base[t - 1] * m)], 1, t);
        lanes.step_one(pv, t);
        if (t < n - 1) lanes.step(&p[static_cast<size_t>(base[t] * m)], t + 1, n);
      }
      cm = lanes.row(m - 1);
    }
    int64_t where = -1;
    for (int64_t j = 1; j < n; ++j) {
      if (cm[j] < threshold) {
        threshold = cm[j];
        where = j;
      }
    }
    if (where > 0) {
      seq.assign(base.begin(), base.begin() + where);
      seq.push_back(v);
      seq.insert(seq.end(), base.begin() + where, base.end());
    }
  }
  return seq;
}

/// The first position of least makespan for inserting j into seq.
std::pair<int64_t, double> best_insertion(const FlowShop& s, HeadsTails& ht, const std::vector<int64_t>& seq,
                                          int64_t j) {
  ht.build(s, s.p, seq);
  int64_t where = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t pos = 0; pos <= static_cast<int64_t>(seq.size()); ++pos) {
    const double c = ht.insert(s, s.p, j, pos);
    if (c < best) {
      best = c;
      where = pos;
    }
  }
  return {where, best};
}

}  // namespace

double makespan(const FlowShop& shop, const std::vector<int64_t>& seq) {
  std::vector<double> c(static_cast<size_t>(shop.m), 0.0);
  for (int64_t j : seq) step(shop, shop.p, j, c.data());
  return c[shop.m - 1];
}

std::vector<int64_t> fssp_neh(const FlowShop& shop) {
  std::vector<double> total(static_cast<size_t>(shop.n), 0.0);
  for (int64_t j = 0; j < shop.n; ++j) {
    for (int64_t k = 0; k < shop.m; ++k) total[j] += shop.p[j * shop.m + k];
  }
  std::vector<int64_t> order(static_cast<size_t>(shop.n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return total[a] > total[b]; });
  std::vector<int64_t> seq = {order[0]};
  HeadsTails ht;
  for (int64_t i = 1; i < shop.n; ++i) {
    const auto [where, c] = best_insertion(shop, ht, seq, order[i]);
    seq.insert(seq.begin() + where, order[i]);
  }
  return seq;
}

std::vector<int64_t> fssp_ig(const FlowShop& shop, const IgConfig& config, nk::Rng& rng) {
  double sum = 0;
  for (double x : shop.p) sum += x;
  const double temp = config.temperature * sum / (10.0 * static_cast<double>(shop.n * shop.m));
  HeadsTails ht;
  // insertion local search: each job, in random order, to its best position, until no gain
  auto local_search = [&](std::vector<int64_t>& seq, double& cmax) {
    bool improved = true;
    while (improved) {
      improved = false;
      std::vector<int64_t> order = seq;
      nk::shuffle(order, rng);
      for (int64_t j : order) {
        std::vector<int64_t> rest;
        rest.reserve(seq.size());
        for (int64_t x : seq) {
          if (x != j) rest.push_back(x);
        }
        const auto [where, c] = best_insertion(shop, ht, rest, j);
        if (c < cmax) {
          rest.insert(rest.begin() + where, j);
          seq = rest;
          cmax = c;
          improved = true;
        }
      }
    }
  };
  std::vector<int64_t> cur = fssp_neh(shop);
  double cur_c = makespan(shop, cur);
  local_search(cur, cur_c);
  std::vector<int64_t> best = cur;
  double best_c = cur_c;
  const int64_t d = std::min<int64_t>(config.destruction, shop.n - 1);
  for (int64_t it = 0; it < config.iterations; ++it) {
    std::vector<int64_t> partial = cur, removed;
    for (int64_t r = 0; r < d; ++r) {
      const size_t at = rng.below(partial.size());
      removed.push_back(partial[at]);
      partial.erase(partial.begin() + static_cast<std::ptrdiff_t>(at));
    }
    for (int64_t j : removed) {
      const auto [where, c] = best_insertion(shop, ht, partial, j);
      partial.insert(partial.begin() + where, j);
    }
    double c = makespan(shop, partial);
    local_search(partial, c);
    if (c < cur_c) {
      cur = partial;
      cur_c = c;
      if (c < best_c) {
        best = partial;
        best_c = c;
      }
    } else if (rng.uniform() <= std::exp(-(c - cur_c) / temp)) {
      cur = partial;
      cur_c = c;
    }
  }
  return best;
}

GlsResult fssp_gls(const FlowShop& shop, const GlsConfig& config, const Perturbation& perturb) {
  GlsResult out;
  const bool fast = shop.integral();
  std::vector<int64_t> pi = fssp_neh(shop);
  double cmax = makespan(shop, pi);
  out.best = pi;
  out.best_makespan = cmax;
  std::vector<double> matrix;
  std::vector<int64_t> jobs;
  for (int64_t it = 1; it <= config.iterations; ++it) {
    pi = ls_pass(shop, shop.p, pi, cmax, nullptr, nullptr, fast);
    cmax = makespan(shop, pi);
    if (cmax < out.best_makespan) {
      out.best = pi;
      out.best_makespan = cmax;
    }
    matrix.clear();
    jobs.clear();
    std::string why = perturb(pi, matrix, jobs);
    if (why.empty() && static_cast<int64_t>(matrix.size()) != shop.n * shop.m) {
      why = "the matrix has " + std::to_string(matrix.size()) + " values, expected " + std::to_string(shop.n) + " x " +
            std::to_string(shop.m);
    }
    if (why.empty() && jobs.size() <= 1)
      why = "the job list has " + std::to_string(jobs.size()) + " entries (at least 2)";
    if (!why.empty()) {
      out.invalid = why;
      return out;
    }
    if (static_cast<int64_t>(jobs.size()) > config.perturb_jobs) jobs.resize(static_cast<size_t>(config.perturb_jobs));
    for (int64_t j : jobs) {
      if (j < 0 || j >= shop.n) {
        out.invalid = "job " + std::to_string(j) + " is outside 0.." + std::to_string(shop.n - 1);
        return out;
      }
    }
    for (double x : matrix) {
      if (!std::isfinite(x)) {
        out.invalid = "the perturbed matrix holds a non-finite value";
        return out;
      }
    }
    FlowShop perturbed = shop;
    perturbed.p = matrix;
    cmax = makespan(perturbed, pi);
    pi = ls_pass(perturbed, perturbed.p, pi, cmax, &jobs, &jobs, false);
    if (it % config.reset_every == 0) {
      pi = out.best;
      cmax = out.best_makespan;
    }
  }
  return out;
}

}  // namespace sevol
