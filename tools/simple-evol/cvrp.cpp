// cvrp.cpp - CVRP routes, savings, iterated local search and the ACO.
#include "simple-evol/cvrp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

namespace sevol {

double routes_length(const std::vector<double>& dist, int64_t nodes, const std::vector<int64_t>& routes) {
  double total = 0;
  for (size_t i = 0; i + 1 < routes.size(); ++i) total += dist[static_cast<size_t>(routes[i] * nodes + routes[i + 1])];
  return total;
}

std::string check_routes(const Instance& item, const std::vector<int64_t>& routes) {
  const int64_t n = item.nodes();
  if (routes.size() < 2 || routes.front() != 0 || routes.back() != 0)
    return "the sequence must start and end at the depot 0";
  std::vector<char> seen(static_cast<size_t>(n), 0);
  int64_t load = 0;
  for (size_t i = 1; i < routes.size(); ++i) {
    const int64_t v = routes[i];
    if (v < 0 || v >= n) return "node " + std::to_string(v) + " does not exist";
    if (v == 0) {
      if (routes[i - 1] == 0) return "an empty route at position " + std::to_string(i);
      load = 0;
      continue;
    }
    if (seen[v]) return "customer " + std::to_string(v) + " is visited twice";
    seen[v] = 1;
    load += item.demand[v];
    if (load > item.capacity) return "a route exceeds the capacity at customer " + std::to_string(v);
  }
  for (int64_t v = 1; v < n; ++v) {
    if (!seen[v]) return "customer " + std::to_string(v) + " is not visited";
  }
  return "";
}

namespace {

using Routes = std::vector<std::vector<int64_t>>;  // customers only

std::vector<int64_t> flatten(const Routes& routes) {
  std::vector<int64_t> out = {0};
  for (const auto& r : routes) {
    if (r.empty()) continue;
    out.insert(out.end(), r.begin(), r.end());
    out.push_back(0);
  }
  return out;
}

Routes split(const std::vector<int64_t>& flat) {
  Routes routes;
  std::vector<int64_t> cur;
  for (size_t i = 1; i < flat.size(); ++i) {
    if (flat[i] == 0) {
      if (!cur.empty()) routes.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(flat[i]);
    }
  }
  return routes;
}

class Search {
 public:
  Search(const Instance& item, const std::vector<double>& dist) : item_(item), dist_(dist), n_(item.nodes()) {}
  double d(int64_t a, int64_t b) const { return a == b ? 0.0 : dist_[static_cast<size_t>(a * n_ + b)]; }

  int64_t load(const std::vector<int64_t>& r) const {
    int64_t s = 0;
    for (int64_t v : r) s += item_.demand[v];
    return s;
  }
  double length(const std::vector<int64_t>& r) const {
    if (r.empty()) return 0;
    double s = d(0, r.front()) + d(r.back(), 0);
    for (size_t i = 0; i + 1 < r.size(); ++i) s += d(r[i], r[i + 1]);
    return s;
  }
  int64_t at(const std::vector<int64_t>& r, int64_t i) const {
    return i < 0 || i >= static_cast<int64_t>(r.size()) ? 0 : r[i];
  }

  /// Relocate, swap and 2-opt, first improvement, until none improves.
  void improve(Routes& routes) const {
    bool improved = true;
    while (improved) {
      improved = false;
      std::vector<int64_t> loads;
      for (const auto& r : routes) loads.push_back(load(r));
      // relocate customer a = routes[ra][i] to routes[rb] before position j
      for (size_t ra = 0; ra < routes.size() && !improved; ++ra) {
        for (int64_t i = 0; i < static_cast<int64_t>(routes[ra].size()) && !improved; ++i) {
          const auto& A = routes[ra];
          const int64_t a = A[i], p = at(A, i - 1), q = at(A, i + 1);
          const double gain = d(p, a) + d(a, q) - d(p, q);
          for (size_t rb = 0; rb <= routes.size() && !improved; ++rb) {
            if (rb == routes.size()) {  // a new route of its own
              if (A.size() > 1 && d(0, a) * 2 < gain - 1e-12) {
                routes[ra].erase(routes[ra].begin() + i);
                routes.push_back({a});
                improved = true;
              }
              break;
            }
            if (rb != ra && loads[rb] + item_.demand[a] > item_.capacity) continue;
            const auto& B = routes[rb];
            for (int64_t j = 0; j <= static_cast<int64_t>(B.size()); ++j) {
              if (rb == ra && (j == i || j == i + 1)) continue;
              const int64_t u = at(B, j - 1), v = at(B, j);
              const double add = d(u, a) + d(a, v) - d(u, v);
              if (add < gain - 1e-12) {
                if (rb == ra) {
                  auto& R = routes[ra];
                  R.erase(R.begin() + i);
                  R.insert(R.begin() + (j > i ? j - 1 : j), a);
                } else {
                  routes[rb].insert(routes[rb].begin() + j, a);
                  routes[ra].erase(routes[ra].begin() + i);
                }
                improved = true;
                break;
              }
            }
          }
        }
      }
      if (improved) {
        routes.erase(std::remove_if(routes.begin(), routes.end(), [](const auto& r) { return r.empty(); }),
                     routes.end());
        continue;
      }
      // swap customers of two routes
      for (size_t ra = 0; ra < routes.size() && !improved; ++ra) {
        for (size_t rb = ra + 1; rb < routes.size() && !improved; ++rb) {
          for (size_t i = 0; i < routes[ra].size() && !improved; ++i) {
            for (size_t j = 0; j < routes[rb].size(); ++j) {
              const int64_t a = routes[ra][i], b = routes[rb][j];
              if (loads[ra] - item_.demand[a] + item_.demand[b] > item_.capacity ||
                  loads[rb] - item_.demand[b] + item_.demand[a] > item_.capacity) {
                continue;
              }
              const auto& A = routes[ra];
              const auto& B = routes[rb];
              const int64_t pa = at(A, static_cast<int64_t>(i) - 1), qa = at(A, static_cast<int64_t>(i) + 1);
              const int64_t pb = at(B, static_cast<int64_t>(j) - 1), qb = at(B, static_cast<int64_t>(j) + 1);
              const double before = d(pa, a) + d(a, qa) + d(pb, b) + d(b, qb);
              const double after = d(pa, b) + d(b, qa) + d(pb, a) + d(a, qb);
              if (after < before - 1e-12) {
                std::swap(routes[ra][i], routes[rb][j]);
                improved = true;
                break;
              }
            }
          }
        }
      }
      if (improved) continue;
      // 2-opt inside a route
      for (auto& R : routes) {
        const int64_t len = static_cast<int64_t>(R.size());
        for (int64_t i = 0; i < len && !improved; ++i) {
          for (int64_t j = i + 1; j < len; ++j) {
            const int64_t p = at(R, i - 1), q = at(R, j + 1);
            if (d(p, R[j]) + d(R[i], q) < d(p, R[i]) + d(R[j], q) - 1e-12) {
              std::reverse(R.begin() + i, R.begin() + j + 1);
              improved = true;
              break;
            }
          }
        }
        if (improved) break;
      }
    }
  }

  /// Cheapest feasible insertion of each customer in 'removed' (in order).
  void recreate(Routes& routes, const std::vector<int64_t>& removed) const {
    for (int64_t a : removed) {
      double best = std::numeric_limits<double>::infinity();
      size_t br = routes.size();
      int64_t bj = 0;
      for (size_t r = 0; r < routes.size(); ++r) {
        if (load(routes[r]) + item_.demand[a] > item_.capacity) continue;
        for (int64_t j = 0; j <= static_cast<int64_t>(routes[r].size()); ++j) {
          const int64_t u = at(routes[r], j - 1), v = at(routes[r], j);
          const double add = d(u, a) + d(a, v) - d(u, v);
          if (add < best) {
            best = add;
            br = r;
            bj = j;
          }
        }
      }
      if (br == routes.size()) {
        routes.push_back({a});
      } else {
        routes[br].insert(routes[br].begin() + bj, a);
      }
    }
  }

  double total(const Routes& routes) const {
    double s = 0;
    for (const auto& r : routes) s += length(r);
    return s;
  }

 private:
  const Instance& item_;
  const std::vector<double>& dist_;
  int64_t n_;
};

}  // namespace

std::vector<int64_t> cvrp_savings(const Instance& item, const std::vector<double>& dist) {
  const int64_t n = item.nodes();
  auto d = [&](int64_t a, int64_t b) { return dist[static_cast<size_t>(a * n + b)]; };
  std::vector<std::tuple<double, int64_t, int64_t>> savings;
  for (int64_t i = 1; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) savings.emplace_back(d(0, i) + d(0, j) - d(i, j), i, j);
  }
  std::stable_sort(savings.begin(), savings.end(), [](const auto& x, const auto& y) {
    if (std::get<0>(x) != std::get<0>(y)) return std::get<0>(x) > std::get<0>(y);
    return std::make_pair(std::get<1>(x), std::get<2>(x)) < std::make_pair(std::get<1>(y), std::get<2>(y));
  });
  Routes routes(static_cast<size_t>(n));
  std::vector<int64_t> route_of(static_cast<size_t>(n)), loads(static_cast<size_t>(n), 0);
  for (int64_t v = 1; v < n; ++v) {
    routes[v] = {v};
    route_of[v] = v;
    loads[v] = item.demand[v];
  }
  for (const auto& [s, i, j] : savings) {
    if (s <= 0) break;
    const int64_t ri = route_of[i], rj = route_of[j];
    if (ri == rj || loads[ri] + loads[rj] > item.capacity) continue;
    auto& A = routes[ri];
    auto& B = routes[rj];
    // join so that i and j become neighbours: i at an end of A, j at an end of B
    if (A.back() != i && A.front() != i) continue;
    if (B.back() != j && B.front() != j) continue;
    if (A.back() != i) std::reverse(A.begin(), A.end());
    if (B.front() != j) std::reverse(B.begin(), B.end());
    A.insert(A.end(), B.begin(), B.end());
    loads[ri] += loads[rj];
    for (int64_t v : B) route_of[v] = ri;
    B.clear();
  }
  return flatten(routes);
}

std::vector<int64_t> cvrp_ils(const Instance& item, const std::vector<double>& dist, int64_t kicks, nk::Rng& rng) {
  const int64_t n = item.nodes();
  Search search(item, dist);
  Routes best = split(cvrp_savings(item, dist));
  search.improve(best);
  double best_len = search.total(best);
  Routes current = best;
  double current_len = best_len;
  const int64_t customers = n - 1;
  const int64_t ruin_lo = std::max<int64_t>(2, customers / 20), ruin_hi = std::max<int64_t>(3, customers / 6);
  std::vector<int64_t> order(static_cast<size_t>(customers));
  std::vector<char> gone(static_cast<size_t>(n));
  for (int64_t k = 0; k < kicks; ++k) {
    const int64_t ruin =
        std::min(customers, ruin_lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(ruin_hi - ruin_lo + 1))));
    std::iota(order.begin(), order.end(), 1);
    if (rng.uniform() < 0.5) {  // a neighbourhood: the customers nearest a random one
      const int64_t seed_customer = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(customers)));
      std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return search.d(seed_customer, x) < search.d(seed_customer, y) ||
               (search.d(seed_customer, x) == search.d(seed_customer, y) && x < y);
      });
    } else {  // scattered customers
      nk::shuffle_prefix(order, static_cast<size_t>(ruin), rng);
    }
    std::vector<int64_t> removed(order.begin(), order.begin() + ruin);
    nk::shuffle(removed, rng);
    std::fill(gone.begin(), gone.end(), 0);
    for (int64_t v : removed) gone[v] = 1;
    Routes cand = current;
    for (auto& r : cand) r.erase(std::remove_if(r.begin(), r.end(), [&](int64_t v) { return gone[v] != 0; }), r.end());
    cand.erase(std::remove_if(cand.begin(), cand.end(), [](const auto& r) { return r.empty(); }), cand.end());
    search.recreate(cand, removed);
    search.improve(cand);
    const double len = search.total(cand);
    // record-to-record travel: within a threshold of the best, shrinking to 0 over the kicks
    const double threshold = 0.02 * (1.0 - static_cast<double>(k) / static_cast<double>(kicks));
    if (len < current_len - 1e-12 || len < best_len * (1.0 + threshold)) {
      current = cand;
      current_len = len;
      if (len < best_len - 1e-12) {
        best_len = len;
        best = cand;
      }
    }
  }
  return flatten(best);
}

std::vector<int64_t> cvrp_aco(const Instance& item, const std::vector<double>& dist, const std::vector<double>& eta,
                              const AcoConfig& config, nk::Rng& rng) {
  const int64_t n = item.nodes();
  std::vector<double> tau(static_cast<size_t>(n * n), 1.0);
  std::vector<int64_t> best;
  double best_len = std::numeric_limits<double>::infinity();
  std::vector<std::vector<int64_t>> paths(static_cast<size_t>(config.ants));
  std::vector<double> lengths(static_cast<size_t>(config.ants));
  std::vector<char> visited(static_cast<size_t>(n));
  std::vector<double> weight(static_cast<size_t>(n));
  const bool unit_powers = config.alpha == 1 && config.beta == 1;
  for (int64_t it = 0; it < config.iterations; ++it) {
    for (int64_t a = 0; a < config.ants; ++a) {
      std::vector<int64_t>& path = paths[a];
      path.assign(1, 0);
      std::fill(visited.begin(), visited.end(), 0);
      int64_t cur = 0, left = n - 1, load = 0;
      while (left > 0 || cur != 0) {
        double total = 0;
        for (int64_t j = 0; j < n; ++j) {
          bool allowed;
          if (j == 0) {
            allowed = !(cur == 0 && left > 0);
          } else {
            allowed = !visited[j] && item.demand[j] <= item.capacity - load;
          }
          double w = 0;
          if (allowed) {
            const size_t e = static_cast<size_t>(cur * n + j);
            w = unit_powers ? tau[e] * eta[e] : std::pow(tau[e], config.alpha) * std::pow(eta[e], config.beta);
          }
          weight[j] = w;
          total += w;
        }
        int64_t next = 0;
        if (config.greedy) {
          for (int64_t j = 1; j < n; ++j) {
            if (weight[j] > weight[next]) next = j;
          }
        } else {
          double u = rng.uniform() * total;
          next = -1;
          for (int64_t j = 0; j < n; ++j) {
            if (weight[j] <= 0) continue;
            next = j;
            u -= weight[j];
            if (u < 0) break;
          }
        }
        if (next == 0) {
          load = 0;
        } else {
          visited[next] = 1;
          load += item.demand[next];
          --left;
        }
        path.push_back(next);
        cur = next;
      }
      lengths[a] = routes_length(dist, n, path);
    }
    for (int64_t a = 0; a < config.ants; ++a) {
      if (lengths[a] < best_len) {
        best_len = lengths[a];
        best = paths[a];
      }
    }
    for (double& t : tau) t *= config.decay;
    for (int64_t a = 0; a < config.ants; ++a) {
      const double deposit = 1.0 / lengths[a];
      for (size_t s = 0; s + 1 < paths[a].size(); ++s)
        tau[static_cast<size_t>(paths[a][s] * n + paths[a][s + 1])] += deposit;
    }
    for (double& t : tau) t = std::max(t, 1e-10);
  }
  return best;
}

}  // namespace sevol
