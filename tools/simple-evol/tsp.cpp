// tsp.cpp - distance matrix, tour length and the TSP reference solvers.
#include "simple-evol/tsp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sevol {

// Rounded term by term as numpy does: a fused multiply-add (-march=native)
// would differ in the last bit, so the square is stored before the sum.
std::vector<double> distance_matrix(const std::vector<double>& coords) {
  const size_t n = coords.size() / 2;
  std::vector<double> d(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const double dx = coords[2 * i] - coords[2 * j];
      const double dy = coords[2 * i + 1] - coords[2 * j + 1];
      const volatile double sq = dx * dx;  // keeps the product rounded before the sum
      d[i * n + j] = std::sqrt(sq + dy * dy);
    }
  }
  return d;
}

double tour_length(const std::vector<double>& dist, const std::vector<int64_t>& tour) {
  const size_t n = tour.size();
  const size_t stride = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(dist.size()))));
  double total = 0;
  for (size_t i = 0; i < n; ++i)
    total += dist[static_cast<size_t>(tour[i]) * stride + static_cast<size_t>(tour[(i + 1) % n])];
  return total;
}

std::vector<int64_t> tsp_held_karp(const std::vector<double>& dist, int64_t n) {
  if (n <= 3) {
    std::vector<int64_t> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), 0);
    return t;
  }
  const int64_t m = n - 1;  // nodes 1..n-1 as bits 0..m-1
  const size_t subsets = size_t{1} << m;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> cost(subsets * static_cast<size_t>(m), inf);
  std::vector<int8_t> parent(subsets * static_cast<size_t>(m), -1);
  auto d = [&](int64_t a, int64_t b) { return dist[static_cast<size_t>(a * n + b)]; };
  for (int64_t j = 0; j < m; ++j) cost[(size_t{1} << j) * m + j] = d(0, j + 1);
  for (size_t s = 1; s < subsets; ++s) {
    for (int64_t j = 0; j < m; ++j) {
      if (!(s >> j & 1)) continue;
      const double here = cost[s * m + j];
      if (here == inf) continue;
      for (int64_t k = 0; k < m; ++k) {
        if (s >> k & 1) continue;
        const size_t t = s | (size_t{1} << k);
        const double c = here + d(j + 1, k + 1);
        if (c < cost[t * m + k]) {
          cost[t * m + k] = c;
          parent[t * m + k] = static_cast<int8_t>(j);
        }
      }
    }
  }
  const size_t full = subsets - 1;
  int64_t last = 0;
  double best = inf;
  for (int64_t j = 0; j < m; ++j) {
    const double c = cost[full * m + j] + d(j + 1, 0);
    if (c < best) {
      best = c;
      last = j;
    }
  }
  std::vector<int64_t> rev;
  size_t s = full;
  int64_t j = last;
  while (j >= 0) {
    rev.push_back(j + 1);
    const int64_t p = parent[s * m + j];
    s &= ~(size_t{1} << j);
    j = p;
  }
  std::vector<int64_t> tour = {0};
  tour.insert(tour.end(), rev.rbegin(), rev.rend());
  return tour;
}

std::vector<int64_t> tsp_nearest_neighbor(const std::vector<double>& dist, int64_t n) {
  std::vector<int64_t> tour = {0};
  std::vector<char> seen(static_cast<size_t>(n), 0);
  seen[0] = 1;
  int64_t cur = 0;
  for (int64_t step = 1; step < n; ++step) {
    int64_t next = -1;
    double best = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      if (!seen[j] && dist[static_cast<size_t>(cur * n + j)] < best) {
        best = dist[static_cast<size_t>(cur * n + j)];
        next = j;
      }
    }
    seen[next] = 1;
    tour.push_back(next);
    cur = next;
  }
  return tour;
}

std::vector<int64_t> tsp_farthest_insertion(const std::vector<double>& dist, int64_t n) {
  auto d = [&](int64_t a, int64_t b) { return dist[static_cast<size_t>(a * n + b)]; };
  std::vector<char> in(static_cast<size_t>(n), 0);
  std::vector<double> gap(static_cast<size_t>(n));  // distance to the tour
  int64_t far = 1;
  for (int64_t j = 1; j < n; ++j) {
    if (d(0, j) > d(0, far)) far = j;
  }
  std::vector<int64_t> tour = {0, far};
  in[0] = in[far] = 1;
  for (int64_t j = 0; j < n; ++j) gap[j] = std::min(d(0, j), d(far, j));
  for (int64_t added = 2; added < n; ++added) {
    int64_t pick = -1;
    for (int64_t j = 0; j < n; ++j) {
      if (!in[j] && (pick < 0 || gap[j] > gap[pick])) pick = j;
    }
    size_t where = 0;
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < tour.size(); ++i) {
      const int64_t a = tour[i], b = tour[(i + 1) % tour.size()];
      const double delta = d(a, pick) + d(pick, b) - d(a, b);
      if (delta < best) {
        best = delta;
        where = i + 1;
      }
    }
    tour.insert(tour.begin() + static_cast<std::ptrdiff_t>(where), pick);
    in[pick] = 1;
    for (int64_t j = 0; j < n; ++j) gap[j] = std::min(gap[j], d(pick, j));
  }
  return tour;
}

namespace {

/// Array tour with positions, 2-opt and Or-opt moves over neighbour lists.
class LocalSearch {
 public:
  LocalSearch(const std::vector<double>& dist, int64_t n) : dist_(dist), n_(n) {
    const int64_t k = std::min<int64_t>(12, n - 1);
    near_.resize(static_cast<size_t>(n * k));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t a = 0; a < n; ++a) {
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k + 1, order.end(),
                        [&](int64_t x, int64_t y) { return d(a, x) < d(a, y) || (d(a, x) == d(a, y) && x < y); });
      int64_t w = 0;
      for (int64_t i = 0; w < k && i <= k; ++i) {
        if (order[i] != a) near_[a * k + w++] = order[i];
      }
    }
    k_ = k;
  }

  void run(std::vector<int64_t>& tour) {
    tour_ = tour;
    pos_.assign(static_cast<size_t>(n_), 0);
    for (int64_t i = 0; i < n_; ++i) pos_[tour_[i]] = i;
    bool improved = true;
    while (improved) {
      improved = false;
      for (int64_t a = 0; a < n_; ++a) {
        if (two_opt(a) || or_opt(a)) improved = true;
      }
    }
    tour = tour_;
  }

 private:
  double d(int64_t a, int64_t b) const { return dist_[static_cast<size_t>(a * n_ + b)]; }
  int64_t succ(int64_t a) const { return tour_[(pos_[a] + 1) % n_]; }
  int64_t pred(int64_t a) const { return tour_[(pos_[a] + n_ - 1) % n_]; }

  /// Reverses the tour between positions i and j inclusive (cyclically).
  void reverse(int64_t i, int64_t j) {
    int64_t len = (j - i + n_) % n_ + 1;
    if (2 * len > n_ && len < n_) {  // the complement gives the same cycle, shorter
      const int64_t ni = (j + 1) % n_, nj = (i + n_ - 1) % n_;
      i = ni;
      j = nj;
      len = n_ - len;
    }
    for (int64_t s = 0; s < len / 2; ++s) {
      const int64_t x = (i + s) % n_, y = (j - s + n_) % n_;
      std::swap(tour_[x], tour_[y]);
      pos_[tour_[x]] = x;
      pos_[tour_[y]] = y;
    }
  }

  bool two_opt(int64_t a) {
    for (int dir = 0; dir < 2; ++dir) {
      const int64_t b = dir == 0 ? succ(a) : pred(a);
      const double dab = d(a, b);
      for (int64_t t = 0; t < k_; ++t) {
        const int64_t c = near_[a * k_ + t];
        const double dac = d(a, c);
        if (dac >= dab) break;
        const int64_t e = dir == 0 ? succ(c) : pred(c);
        if (c == b || e == a) continue;
        if (dac + d(b, e) < dab + d(c, e) - 1e-12) {
          // a-b ... c-e  ->  a-c ... b-e
          if (dir == 0) {
            reverse(pos_[b], pos_[c]);
          } else {
            reverse(pos_[c], pos_[b]);
          }
          return true;
        }
      }
    }
    return false;
  }

  bool or_opt(int64_t a) {
    // move the segment starting at a (length 1..3, in tour order) between c and succ(c)
    for (int64_t len = 1; len <= 3 && len < n_ - 2; ++len) {
      const int64_t i = pos_[a];
      const int64_t first = a, last = tour_[(i + len - 1) % n_];
      const int64_t p = pred(first), nx = succ(last);
      const double removed = d(p, first) + d(last, nx) - d(p, nx);
      for (int end = 0; end < 2; ++end) {
        const int64_t from = end == 0 ? first : last;
        for (int64_t t = 0; t < k_; ++t) {
          const int64_t c = near_[from * k_ + t];
          if (d(from, c) >= removed) break;
          const int64_t off = (pos_[c] - i + n_) % n_;
          if (off < len) continue;  // inside the segment
          for (int side = 0; side < 2; ++side) {
            const int64_t u = side == 0 ? c : pred(c), v = side == 0 ? succ(c) : c;
            const int64_t ou = (pos_[u] - i + n_) % n_, ov = (pos_[v] - i + n_) % n_;
            if (ou < len || ov < len) continue;
            // insert between u and v, either orientation
            const double fwd = d(u, first) + d(last, v) - d(u, v);
            const double bwd = d(u, last) + d(first, v) - d(u, v);
            const bool reversed = bwd < fwd;
            if (std::min(fwd, bwd) < removed - 1e-12) {
              move_segment(i, len, u, reversed);
              return true;
            }
          }
        }
      }
    }
    return false;
  }

  /// Moves the segment at positions i..i+len-1 to just after node u.
  void move_segment(int64_t i, int64_t len, int64_t u, bool reversed) {
    std::vector<int64_t> seg(static_cast<size_t>(len));
    for (int64_t s = 0; s < len; ++s) seg[s] = tour_[(i + s) % n_];
    if (reversed) std::reverse(seg.begin(), seg.end());
    std::vector<int64_t> rest;
    rest.reserve(static_cast<size_t>(n_ - len));
    for (int64_t s = 0; s < n_ - len; ++s) rest.push_back(tour_[(i + len + s) % n_]);
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(n_));
    for (int64_t x : rest) {
      out.push_back(x);
      if (x == u) out.insert(out.end(), seg.begin(), seg.end());
    }
    tour_ = out;
    for (int64_t s = 0; s < n_; ++s) pos_[tour_[s]] = s;
  }

  const std::vector<double>& dist_;
  int64_t n_, k_ = 0;
  std::vector<int64_t> near_, tour_, pos_;
};

std::vector<int64_t> from_zero(const std::vector<int64_t>& tour) {
  std::vector<int64_t> out(tour.size());
  const auto z = std::find(tour.begin(), tour.end(), 0) - tour.begin();
  for (size_t s = 0; s < tour.size(); ++s) out[s] = tour[(static_cast<size_t>(z) + s) % tour.size()];
  return out;
}

}  // namespace

std::vector<int64_t> tsp_local_search(const std::vector<double>& dist, int64_t n, std::vector<int64_t> tour) {
  if (n < 5) return tour;
  LocalSearch ls(dist, n);
  ls.run(tour);
  return from_zero(tour);
}

std::vector<int64_t> tsp_ils(const std::vector<double>& dist, int64_t n, int64_t kicks, nk::Rng& rng) {
  std::vector<int64_t> best = tsp_farthest_insertion(dist, n);
  if (n < 8) return n < 5 ? best : tsp_local_search(dist, n, best);
  LocalSearch ls(dist, n);
  ls.run(best);
  double best_len = tour_length(dist, best);
  const int64_t window = std::max<int64_t>(1, std::min<int64_t>(30, n / 4));
  std::vector<int64_t> cand(static_cast<size_t>(n));
  for (int64_t k = 0; k < kicks; ++k) {
    // double bridge on segments inside a random window: A B C -> B A C after rotation
    const int64_t start = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
    const int64_t p1 = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(window)));
    const int64_t p2 = p1 + 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(window)));
    const int64_t p3 =
        std::min<int64_t>(n - 1, p2 + 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(window))));
    if (p2 >= p3) continue;
    std::vector<int64_t> rot(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) rot[s] = best[(start + s) % n];
    int64_t w = 0;
    for (int64_t s = 0; s < p1; ++s) cand[w++] = rot[s];
    for (int64_t s = p2; s < p3; ++s) cand[w++] = rot[s];
    for (int64_t s = p1; s < p2; ++s) cand[w++] = rot[s];
    for (int64_t s = p3; s < n; ++s) cand[w++] = rot[s];
    ls.run(cand);
    const double len = tour_length(dist, cand);
    if (len < best_len - 1e-12) {
      best_len = len;
      best = cand;
    }
  }
  return from_zero(best);
}

}  // namespace sevol
