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
  void build(const FlowShop& s, const std::vector<double>& p, const std::vector<int64_t>& seq) {
    const int64_t len = static_cast<int64_t>(seq.size()), m = s.m;
    e.assign(static_cast<size_t>((len + 1) * m), 0.0);
    q.assign(static_cast<size_t>((len + 1) * m), 0.0);
    for (int64_t i = 0; i < len; ++i) {
      std::copy_n(&e[i * m], m, &e[(i + 1) * m]);
      step(s, p, seq[i], &e[(i + 1) * m]);
    }
    for (int64_t i = len - 1; i >= 0; --i) {
      const double* pj = &p[static_cast<size_t>(seq[i] * m)];
      double* qi = &q[i * m];
      const double* qn = &q[(i + 1) * m];
      qi[m - 1] = qn[m - 1] + pj[m - 1];
      for (int64_t k = m - 2; k >= 0; --k) qi[k] = std::max(qn[k], qi[k + 1]) + pj[k];
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

/// The makespan of seq with positions [from, seq.size()) replaced by 'tail',
/// forward from the heads of the unchanged prefix: the same operations as a
/// full evaluation, so the same bits.
double forward_from(const FlowShop& s, const std::vector<double>& p, const double* head, const int64_t* tail,
                    int64_t count, std::vector<double>& c) {
  std::copy_n(head, s.m, c.begin());
  for (int64_t i = 0; i < count; ++i) step(s, p, tail[i], c.data());
  return c[s.m - 1];
}

/// One swap pass then one relocate pass, first improvement against
/// 'threshold' (the published local search). positions: the swap pass's
/// first positions (all when empty); jobs: the relocate pass's jobs (1..n-1
/// when empty, as published). Uses heads and tails when 'exact_fast'.
std::vector<int64_t> ls_pass(const FlowShop& s, const std::vector<double>& p, std::vector<int64_t> seq,
                             double threshold, const std::vector<int64_t>* positions, const std::vector<int64_t>* jobs,
                             bool exact_fast) {
  const int64_t n = s.n, m = s.m;
  std::vector<double> c(static_cast<size_t>(m)), head(static_cast<size_t>(m));
  std::vector<int64_t> tmp(static_cast<size_t>(n));
  HeadsTails ht;
  // swap pass
  const int64_t swap_count = positions ? static_cast<int64_t>(positions->size()) : n;
  for (int64_t a = 0; a < swap_count; ++a) {
    const int64_t i = positions ? (*positions)[a] : a;
    if (exact_fast) ht.build(s, p, seq);
    std::fill(head.begin(), head.end(), 0.0);
    for (int64_t t = 0; t < i; ++t) step(s, p, seq[t], head.data());
    for (int64_t j = i + 1; j < n; ++j) {
      double cmax;
      if (exact_fast) {
        std::copy(head.begin(), head.end(), c.begin());
        step(s, p, seq[j], c.data());
        for (int64_t t = i + 1; t < j; ++t) step(s, p, seq[t], c.data());
        step(s, p, seq[i], c.data());
        cmax = 0;
        const double* qj = &ht.q[(j + 1) * m];
        for (int64_t k = 0; k < m; ++k) cmax = std::max(cmax, c[k] + qj[k]);
      } else {
        tmp.assign(seq.begin() + i, seq.end());
        std::swap(tmp[0], tmp[j - i]);
        cmax = forward_from(s, p, head.data(), tmp.data(), n - i, c);
      }
      if (cmax < threshold) {
        std::swap(seq[i], seq[j]);
        threshold = cmax;
        if (exact_fast) ht.build(s, p, seq);
      }
    }
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
    if (exact_fast) {
      ht.build(s, p, base);
      for (int64_t j = 1; j < n; ++j) {
        const double cmax = ht.insert(s, p, v, j);
        if (cmax < threshold) {
          threshold = cmax;
          seq.assign(base.begin(), base.begin() + j);
          seq.push_back(v);
          seq.insert(seq.end(), base.begin() + j, base.end());
        }
      }
    } else {
      std::fill(head.begin(), head.end(), 0.0);
      step(s, p, base[0], head.data());
      for (int64_t j = 1; j < n; ++j) {
        tmp.assign(1, v);
        tmp.insert(tmp.end(), base.begin() + j, base.end());
        const double cmax = forward_from(s, p, head.data(), tmp.data(), n - j, c);
        if (cmax < threshold) {
          threshold = cmax;
          seq.assign(base.begin(), base.begin() + j);
          seq.push_back(v);
          seq.insert(seq.end(), base.begin() + j, base.end());
        }
        if (j < n - 1) step(s, p, base[j], head.data());
      }
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
