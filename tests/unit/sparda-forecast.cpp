// sparda-forecast.cpp - the block selector against brute force (forced
// blocks, top-k with ties to the lower index, padding), pooled keys, and the
// full and top-k KL gradients against central finite differences.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "nk/lm/block_select.hpp"
#include "nk/rng.hpp"
#include "sparda-forecast/forecast.hpp"

using nk::lm::BlockSelectorConfig;

TEST_SUITE("sparda-forecast") {
  TEST_CASE("forced blocks: init and local window, clipped and without repeats") {
    BlockSelectorConfig c;
    c.block = 4, c.init_blocks = 1, c.local_blocks = 2, c.topk = 3;
    std::vector<int32_t> out(8);
    CHECK(nk::lm::forced_blocks(c, 0, out.data()) == 1);  // block 0 is both init and local
    CHECK(out[0] == 0);
    CHECK(nk::lm::forced_blocks(c, 5, out.data()) == 2);  // blocks 0 and 1
    CHECK((out[0] == 0 && out[1] == 1));
    CHECK(nk::lm::forced_blocks(c, 30, out.data()) == 3);  // 0, then 6 and 7
    CHECK((out[0] == 0 && out[1] == 6 && out[2] == 7));
    c.init_blocks = 3;
    CHECK(nk::lm::forced_blocks(c, 9, out.data()) == 3);  // 0 1 2 (2 is also local)
    CHECK((out[0] == 0 && out[1] == 1 && out[2] == 2));
  }

  TEST_CASE("select_blocks equals a brute-force sort, ties to the lower index") {
    nk::Rng rng(7);
    for (int trial = 0; trial < 300; ++trial) {
      BlockSelectorConfig c;
      c.block = 1 + static_cast<int64_t>(rng.below(8));
      c.init_blocks = static_cast<int64_t>(rng.below(3));
      c.local_blocks = 1 + static_cast<int64_t>(rng.below(3));
      c.topk = 1 + static_cast<int64_t>(rng.below(6));
      const int64_t t = static_cast<int64_t>(rng.below(200));
      const int64_t nc = c.candidates(t);
      std::vector<double> scores(static_cast<size_t>(nc + 1));
      for (double& s : scores) s = static_cast<double>(rng.below(5));  // many ties
      std::vector<int32_t> out(static_cast<size_t>(c.width()));
      const int64_t got = nk::lm::select_blocks(c, t, scores.data(), out.data());
      // Brute force.
      std::set<int64_t> forced;
      for (int64_t j = 0; j < c.init_blocks && j <= t / c.block; ++j) forced.insert(j);
      for (int64_t j = t / c.block - c.local_blocks + 1; j <= t / c.block; ++j)
        if (j >= 0) forced.insert(j);
      std::vector<int64_t> pool;
      for (int64_t j = 0; j < nc; ++j)
        if (!forced.count(j)) pool.push_back(j);
      CHECK(static_cast<int64_t>(pool.size()) == c.free_candidates(t));
      std::stable_sort(pool.begin(), pool.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
      pool.resize(std::min<size_t>(pool.size(), static_cast<size_t>(c.topk)));
      std::vector<int32_t> want(forced.begin(), forced.end());
      want.insert(want.end(), pool.begin(), pool.end());
      CHECK(got == static_cast<int64_t>(want.size()));
      want.resize(static_cast<size_t>(c.width()), -1);
      CHECK(out == want);
    }
  }

  TEST_CASE("pooled keys are block means; group scores sum the heads' softmaxes") {
    const int64_t H = 2, T = 10, d = 4, block = 3;
    nk::Rng rng(3);
    std::vector<float> k(static_cast<size_t>(H * T * d));
    for (float& x : k) x = static_cast<float>(rng.normal());
    std::vector<float> pooled(static_cast<size_t>(H * (T / block) * d));
    nk::lm::pool_keys(k.data(), H, T, d, block, pooled.data());
    for (int64_t h = 0; h < H; ++h)
      for (int64_t j = 0; j < T / block; ++j)
        for (int64_t i = 0; i < d; ++i) {
          double m = 0;
          for (int64_t s = 0; s < block; ++s) m += k[static_cast<size_t>((h * T + j * block + s) * d + i)];
          CHECK(pooled[static_cast<size_t>((h * (T / block) + j) * d + i)] == doctest::Approx(m / block).epsilon(1e-6));
        }
    // 4 query heads over 2 KV heads: group 1 = heads 2 and 3.
    std::vector<float> q(static_cast<size_t>(4 * T * d));
    for (float& x : q) x = static_cast<float>(rng.normal());
    BlockSelectorConfig c;
    c.block = block;
    const int64_t t = 9, nb = T / block;
    std::vector<double> s(3), scratch(3);
    nk::lm::group_scores(c, q.data(), 4, T, t, pooled.data(), H, nb, d, 1, s.data(), scratch.data());
    double total = 0;
    for (int64_t j = 0; j < 3; ++j) {
      double want = 0;
      for (int64_t h = 2; h < 4; ++h) {
        std::vector<double> z(3);
        double mx = -1e300, sum = 0;
        for (int64_t jj = 0; jj < 3; ++jj) {
          double dot = 0;
          for (int64_t i = 0; i < d; ++i)
            dot += static_cast<double>(q[static_cast<size_t>((h * T + t) * d + i)]) *
                   pooled[static_cast<size_t>((nb + jj) * d + i)];
          z[jj] = dot / 2.0;
          mx = std::max(mx, z[jj]);
        }
        for (double& v : z) sum += std::exp(v - mx);
        want += std::exp(z[j] - mx) / sum;
      }
      CHECK(s[j] == doctest::Approx(want).epsilon(1e-12));
      total += s[j];
    }
    CHECK(total == doctest::Approx(2.0));
  }

  TEST_CASE("KL gradients (full and top-k + rest) match central differences") {
    nk::Rng rng(11);
    for (int trial = 0; trial < 20; ++trial) {
      const int64_t n = 2 + static_cast<int64_t>(rng.below(9));
      std::vector<double> p(static_cast<size_t>(n)), z(p.size()), dz(p.size()), dz2(p.size()), zp, zm, tmp(p.size());
      for (double& v : p) v = std::exp(2 * rng.normal());
      if (trial % 4 == 0) p[0] = 0;  // a block the target never reads
      double sum = 0;
      for (double v : p) sum += v;
      for (double& v : p) v /= sum;
      for (double& v : z) v = 2 * rng.normal();
      std::vector<char> sel(p.size());
      for (auto& s : sel) s = rng.below(2) ? 1 : 0;
      sel[0] = 1;
      sel[static_cast<size_t>(n - 1)] = 0;
      sparda::kl_full(p.data(), z.data(), n, dz.data());
      sparda::kl_topk(p.data(), z.data(), n, sel.data(), dz2.data());
      const double h = 1e-6;
      for (int64_t j = 0; j < n; ++j) {
        zp = z, zm = z;
        zp[static_cast<size_t>(j)] += h, zm[static_cast<size_t>(j)] -= h;
        const double full = (sparda::kl_full(p.data(), zp.data(), n, tmp.data()) -
                             sparda::kl_full(p.data(), zm.data(), n, tmp.data())) /
                            (2 * h);
        const double top = (sparda::kl_topk(p.data(), zp.data(), n, sel.data(), tmp.data()) -
                            sparda::kl_topk(p.data(), zm.data(), n, sel.data(), tmp.data())) /
                           (2 * h);
        CHECK(dz[static_cast<size_t>(j)] == doctest::Approx(full).epsilon(1e-5).scale(1e-6));
        CHECK(dz2[static_cast<size_t>(j)] == doctest::Approx(top).epsilon(1e-5).scale(1e-6));
      }
      // KL is zero at the target itself, and the top-k KL never exceeds the full one.
      std::vector<double> logp(p.size());
      for (int64_t j = 0; j < n; ++j)
        logp[static_cast<size_t>(j)] = std::log(std::max(p[static_cast<size_t>(j)], 1e-300));
      CHECK(sparda::kl_full(p.data(), logp.data(), n, tmp.data()) == doctest::Approx(0.0).scale(1e-9));
      CHECK(sparda::kl_topk(p.data(), z.data(), n, sel.data(), tmp.data()) <=
            sparda::kl_full(p.data(), z.data(), n, tmp.data()) + 1e-12);
    }
  }
}
