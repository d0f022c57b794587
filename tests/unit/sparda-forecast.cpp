// sparda-forecast.cpp - the block selector against brute force (forced
// blocks, top-k with ties to the lower index, padding), pooled keys, and the
// full and top-k KL gradients against central finite differences; on a GPU,
// the offload family (block scores, sparse decode attention, the copy
// stream, the own-block append) against its CPU twins.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "nk/kernels/cuda_call.hpp"
#include "nk/lm/block_select.hpp"
#include "nk/rng.hpp"
#include "sparda-forecast/engine.hpp"
#include "sparda-forecast/forecast.hpp"
#include "test_support.hpp"

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
  TEST_CASE("CUDA offload family: scores, copies, own-block rows and sparse decode equal the CPU twins") {
    if (!nk::test::cuda_or_skip()) return;
    const auto& gpu = nk::kernels::cuda_family<nk_cuda_offload>("unit test");
    nk::Rng rng(11);
    for (const int64_t d : {16, 80, 128}) {
      const int64_t Hq = 8, Hkv = 2, G = Hq / Hkv, B = 16, T = 200, rows = 3;
      INFO("head_dim " << d);
      const auto normal = [&](size_t n, double sd) {
        std::vector<float> x(n);
        for (auto& v : x) v = static_cast<float>(sd * rng.normal());
        return x;
      };
      // rows sequences of T tokens: K, V [row][Hkv][T][d]; queries [row][Hq][d] at position t.
      const std::vector<float> k = normal(static_cast<size_t>(rows * Hkv * T * d), 1.0),
                               v = normal(k.size(), 1.0), q = normal(static_cast<size_t>(rows * Hq * d), 0.5);
      const int64_t t = T - 1, nb = T / B;
      std::vector<float> pooled(static_cast<size_t>(rows * Hkv * nb * d));
      for (int64_t r = 0; r < rows; ++r)
        nk::lm::pool_keys(k.data() + r * Hkv * T * d, Hkv, T, d, B, pooled.data() + r * Hkv * nb * d);
      sparda::Engine engine(gpu, d, B, 64, rows * Hkv);
      void* state = engine.gpu_state();
      nk::kernels::cuda_call("pooled", gpu.resident, state, 1L, pooled.data(), static_cast<long>(pooled.size()));
      const double scale = 1.0 / std::sqrt(static_cast<double>(d));
      // Scores: the selector's group sums (softmax) and the Forecast's plain products (one query per group).
      {
        std::vector<long> ref, nbs(rows, nb), ncs(rows);
        for (int64_t r = 0; r < rows; ++r) ref.insert(ref.end(), {1L, static_cast<long>(r * Hkv * nb * d)});
        for (int64_t r = 0; r < rows; ++r) ncs[r] = static_cast<long>(nb - r);  // ragged candidates
        std::vector<float> got(static_cast<size_t>(rows * Hkv * nb), -7.0f);
        nk_cuda_timing timing{};
        nk::kernels::cuda_call("score", gpu.score, state, q.data(), static_cast<long>(rows), static_cast<long>(Hq),
                               static_cast<long>(Hkv), ref.data(), nbs.data(), ncs.data(), static_cast<long>(nb), 1,
                               static_cast<float>(scale), got.data(), &timing);
        BlockSelectorConfig c;
        c.block = B;
        std::vector<double> want(static_cast<size_t>(nb)), scratch(want.size());
        double worst = 0;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t g = 0; g < Hkv; ++g) {
            // group_scores_at scores the candidates of position (nc) * B.
            nk::lm::group_scores_at(c, q.data() + r * Hq * d, d, Hq, ncs[r] * B, pooled.data() + r * Hkv * nb * d, Hkv,
                                    nb, d, g, want.data(), scratch.data());
            for (int64_t j = 0; j < ncs[r]; ++j)
              worst = std::max(worst, std::fabs(got[(r * Hkv + g) * nb + j] - want[j]));
            for (int64_t j = ncs[r]; j < nb; ++j) CHECK(got[(r * Hkv + g) * nb + j] == 0.0f);  // defined past nc
          }
        MESSAGE("selector scores: largest difference " << worst);
        CHECK(worst < 1e-5 * G);
        // One query per group, no softmax.
        const std::vector<float> f = normal(static_cast<size_t>(rows * Hkv * d), 1.0);
        nk::kernels::cuda_call("score", gpu.score, state, f.data(), static_cast<long>(rows), static_cast<long>(Hkv),
                               static_cast<long>(Hkv), ref.data(), nbs.data(), ncs.data(), static_cast<long>(nb), 0,
                               static_cast<float>(scale), got.data(), &timing);
        worst = 0;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t g = 0; g < Hkv; ++g)
            for (int64_t j = 0; j < ncs[r]; ++j) {
              double dot = 0;
              for (int64_t i = 0; i < d; ++i)
                dot += double(f[(r * Hkv + g) * d + i]) * pooled[((r * Hkv + g) * nb + j) * d + i];
              worst = std::max(worst, std::fabs(got[(r * Hkv + g) * nb + j] - dot * scale) / (1 + std::fabs(dot * scale)));
            }
        MESSAGE("forecast scores: largest relative difference " << worst);
        CHECK(worst < 1e-5);
      }
      // Sparse decode: each (row, group) reads 5 random complete blocks through the engine (copy stream) and its
      // own partial block through append, against sparda::sparse_attend over the host rows.
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < Hkv; ++g) {
          const float* base = k.data() + (r * Hkv + g) * T * d;
          engine.set_host(r, 0, g, base, v.data() + (r * Hkv + g) * T * d);
        }
      engine.pin(k.data(), k.size() * sizeof(float));
      engine.pin(v.data(), v.size() * sizeof(float));
      std::vector<sparda::Engine::Key> keys;
      std::vector<std::vector<int32_t>> chosen(static_cast<size_t>(rows * Hkv));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < Hkv; ++g) {
          std::set<int32_t> pick;
          while (pick.size() < 5) pick.insert(static_cast<int32_t>(rng.below(static_cast<uint64_t>(nb - 1))));
          for (int32_t j : pick) {
            chosen[static_cast<size_t>(r * Hkv + g)].push_back(j);
            keys.push_back({static_cast<int32_t>(r), 0, static_cast<int32_t>(g), j});
          }
        }
      sparda::Engine::Ticket ticket = engine.fetch(keys);
      engine.wait(ticket);
      const int64_t own = t / B, own_rows = t + 1 - own * B;
      std::vector<long> app_slots, app_rows, offsets{0}, refs;
      std::vector<float> kv;
      size_t key = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < Hkv; ++g) {
          for (size_t e = 0; e < chosen[static_cast<size_t>(r * Hkv + g)].size(); ++e) {
            const long slot = static_cast<long>(engine.slot(ticket, key++));
            refs.insert(refs.end(), {0L, slot * 2 * B * d, slot * 2 * B * d + B * d, static_cast<long>(B)});
          }
          const long tail = static_cast<long>(64 + r * Hkv + g);
          for (int64_t i = 0; i < own_rows; ++i) {
            app_slots.push_back(tail), app_rows.push_back(static_cast<long>(i));
            const float* kr = k.data() + ((r * Hkv + g) * T + own * B + i) * d;
            const float* vr = v.data() + ((r * Hkv + g) * T + own * B + i) * d;
            kv.insert(kv.end(), kr, kr + d);
            kv.insert(kv.end(), vr, vr + d);
          }
          refs.insert(refs.end(), {0L, tail * 2 * B * d, tail * 2 * B * d + B * d, static_cast<long>(own_rows)});
          offsets.push_back(static_cast<long>(refs.size() / 4));
        }
      nk::kernels::cuda_call("append", gpu.append, state, static_cast<long>(app_slots.size()), app_slots.data(),
                             app_rows.data(), kv.data());
      std::vector<float> got(q.size()), want(q.size());
      nk_cuda_timing timing{};
      nk::kernels::cuda_call("attend", gpu.attend, state, q.data(), static_cast<long>(rows), static_cast<long>(Hq),
                             static_cast<long>(Hkv), offsets.data(), refs.data(), static_cast<float>(scale), got.data(),
                             &timing);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<std::vector<sparda::BlockRef>> lists(static_cast<size_t>(Hkv));
        for (int64_t g = 0; g < Hkv; ++g) {
          const float* hk = k.data() + (r * Hkv + g) * T * d;
          const float* hv = v.data() + (r * Hkv + g) * T * d;
          for (int32_t j : chosen[static_cast<size_t>(r * Hkv + g)])
            lists[static_cast<size_t>(g)].push_back({hk + j * B * d, hv + j * B * d, B, j * B});
          lists[static_cast<size_t>(g)].push_back({hk + own * B * d, hv + own * B * d, B, own * B});
        }
        sparda::sparse_attend(q.data() + r * Hq * d, Hq, Hkv, d, t, lists, want.data() + r * Hq * d);
      }
      double err = 0, norm = 0;
      for (size_t i = 0; i < got.size(); ++i) err += (got[i] - want[i]) * (got[i] - want[i]), norm += want[i] * want[i];
      MESSAGE("sparse decode: relative L2 difference " << std::sqrt(err / norm));
      CHECK(std::sqrt(err / norm) < 1e-5);
      engine.release(ticket);
      CHECK(engine.stats().misses == static_cast<int64_t>(keys.size()));
      CHECK(engine.stats().bytes == static_cast<int64_t>(keys.size()) * engine.block_bytes());
      // The same keys again: all hits, no transfer to wait for.
      sparda::Engine::Ticket again = engine.fetch(keys);
      CHECK(again.transfer == 0);
      CHECK(engine.stats().hits == static_cast<int64_t>(keys.size()));
      engine.release(again);
    }
  }
}
