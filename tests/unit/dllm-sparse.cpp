// dllm-sparse.cpp - the fused kernel against float64 masked softmax (dense,
// masked, ragged L, GQA, d not a multiple of 16, every block size), block
// masses sum to one, plan budgets add up exactly and keep the diagonal.
#include <doctest/doctest.h>

#include <cmath>

#include "dllm-sparse/dllm.hpp"
#include "nk/kernels/dllm_plan.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

using namespace dllm;

namespace {

Qkv random_qkv(int64_t heads, int64_t kv_heads, int64_t length, int64_t dims, uint64_t seed, double spread = 2.0) {
  Qkv x;
  x.heads = heads, x.kv_heads = kv_heads, x.length = length, x.dims = dims;
  nk::Rng rng(seed);
  auto fill = [&](std::vector<float>& v, int64_t n, double s) {
    v.resize(static_cast<size_t>(n));
    for (float& f : v) f = static_cast<float>(s * rng.normal());
  };
  fill(x.q, heads * length * dims, spread), fill(x.k, kv_heads * length * dims, spread), fill(x.v, kv_heads * length * dims, 1.0);
  for (int64_t h = 0; h < heads; ++h) x.kv_of.push_back(static_cast<int32_t>(h / (heads / kv_heads)));
  return x;
}

BlockMask random_mask(int64_t heads, int64_t nb, int64_t block, double keep, uint64_t seed) {
  BlockMask m;
  m.heads = heads, m.blocks = nb, m.block = block;
  m.keep.assign(static_cast<size_t>(heads * nb * nb), 0);
  nk::Rng rng(seed);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < nb; ++i) {
      for (int64_t j = 0; j < nb; ++j) m.at(h, i, j) = i == j || rng.uniform() < keep;
    }
  }
  return m;
}

double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::abs(got[i] - want[i])), scale = std::max(scale, std::abs(want[i]));
  return err / scale;
}

}  // namespace

TEST_SUITE("dllm-sparse") {
  TEST_CASE("long rows keep float32 accuracy: each block's P V joins the running sum once") {
    // 2048 keys, values with a common offset (every output near 3): summing
    // P V key by key onto the row's running sum rounds each of the 2048
    // products against |3|; per block it rounds against the block's share.
    Qkv x = random_qkv(1, 1, 2048, 64, 5, 0.6);
    for (float& v : x.v) v += 3.0f;
    const float scale = 0.125f;
    std::vector<float> out(static_cast<size_t>(2048 * 64));
    attention(x, nullptr, 64, scale, out.data());
    std::vector<double> ref(out.size());
    attention_reference(x, nullptr, 64, scale, ref.data());
    MESSAGE("relative error " << max_rel_error(out, ref));
    CHECK(max_rel_error(out, ref) < 1e-6);
  }

  TEST_CASE("dense fused kernel = float64 softmax attention (ragged L, GQA, odd d, every block size)") {
    struct Case {
      int64_t h, g, l, d, block;
    };
    for (const Case c : {Case{2, 2, 64, 64, 64}, Case{4, 2, 200, 64, 64}, Case{3, 1, 131, 40, 32}, Case{2, 1, 97, 128, 16},
                         Case{1, 1, 5, 8, 64}, Case{2, 2, 300, 256, 48}}) {
      const Qkv x = random_qkv(c.h, c.g, c.l, c.d, static_cast<uint64_t>(c.l * 7 + c.d));
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
      std::vector<float> out(static_cast<size_t>(c.h * c.l * c.d));
      attention(x, nullptr, c.block, scale, out.data());
      std::vector<double> ref(out.size());
      attention_reference(x, nullptr, c.block, scale, ref.data());
      INFO("H " << c.h << " Hkv " << c.g << " L " << c.l << " d " << c.d << " block " << c.block);
      CHECK(max_rel_error(out, ref) < 1e-5);
      BlockMask all = BlockMask::full(c.h, block_count(c.l, c.block), c.block);
      std::vector<float> via_mask(out.size());
      attention(x, &all, c.block, scale, via_mask.data());
      CHECK(via_mask == out);
    }
  }

  TEST_CASE("masked fused kernel = float64 masked softmax") {
    for (int64_t l : {64, 257, 1000}) {
      const Qkv x = random_qkv(4, 2, l, 64, static_cast<uint64_t>(l));
      const int64_t block = 64, nb = block_count(l, block);
      const BlockMask mask = random_mask(4, nb, block, 0.3, static_cast<uint64_t>(l) + 1);
      const float scale = 0.125f;
      std::vector<float> out(static_cast<size_t>(4 * l * 64));
      attention(x, &mask, block, scale, out.data());
      std::vector<double> ref(out.size());
      attention_reference(x, &mask, block, scale, ref.data());
      CHECK(max_rel_error(out, ref) < 1e-5);
    }
  }

  TEST_CASE("large scores (peaked softmax) stay exact") {
    const Qkv x = random_qkv(2, 2, 300, 64, 3, 6.0);  // logits in the hundreds
    std::vector<float> out(static_cast<size_t>(2 * 300 * 64));
    attention(x, nullptr, 64, 0.125f, out.data());
    std::vector<double> ref(out.size());
    attention_reference(x, nullptr, 64, 0.125, ref.data());
    CHECK(max_rel_error(out, ref) < 1e-5);
  }

  TEST_CASE("the baseline-ISA build of the kernel gives the same answers") {
    const Qkv x = random_qkv(3, 3, 257, 64, 8);
    const BlockMask mask = random_mask(3, block_count(257, 64), 64, 0.4, 9);
    std::vector<float> fast(static_cast<size_t>(3 * 257 * 64)), plain(fast.size());
    attention(x, &mask, 64, 0.125f, fast.data());
    force_generic_isa(true);
    const std::string isa = attention(x, &mask, 64, 0.125f, plain.data());
    force_generic_isa(false);
    CHECK(isa == "generic");
    std::vector<double> ref(fast.size());
    attention_reference(x, &mask, 64, 0.125, ref.data());
    CHECK(max_rel_error(plain, ref) < 1e-5);
    CHECK(max_rel_error(fast, ref) < 1e-5);
  }

  TEST_CASE("the unfused dense reference agrees") {
    const Qkv x = random_qkv(2, 1, 150, 32, 4);
    std::vector<float> a(static_cast<size_t>(2 * 150 * 32)), b(a.size());
    attention(x, nullptr, 64, 0.2f, a.data());
    attention_unfused(x, 0.2f, b.data());
    std::vector<double> bd(b.begin(), b.end());
    CHECK(max_rel_error(a, bd) < 1e-5);
  }

  TEST_CASE("block masses of every row sum to one and match the reference") {
    const Qkv x = random_qkv(2, 2, 200, 64, 5);
    const int64_t nb = block_count(200, 64);
    std::vector<float> out(static_cast<size_t>(2 * 200 * 64)), mass(static_cast<size_t>(2 * 200 * nb));
    attention(x, nullptr, 64, 0.125f, out.data(), mass.data());
    for (int64_t r = 0; r < 2 * 200; ++r) {
      double total = 0;
      for (int64_t j = 0; j < nb; ++j) total += mass[r * nb + j];
      REQUIRE(total == doctest::Approx(1.0).epsilon(1e-5));
    }
    // Mass of block 1 for row 0 of head 0, directly.
    std::vector<double> s(200);
    double mx = -INFINITY, sum = 0, block1 = 0;
    for (int64_t j = 0; j < 200; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < 64; ++c) dot += static_cast<double>(x.q_row(0, 0)[c]) * x.k_row(0, j)[c];
      s[j] = dot * 0.125;
      mx = std::max(mx, s[j]);
    }
    for (int64_t j = 0; j < 200; ++j) sum += std::exp(s[j] - mx), block1 += j / 64 == 1 ? std::exp(s[j] - mx) : 0.0;
    CHECK(mass[1] == doctest::Approx(block1 / sum).epsilon(1e-5));
    // Masses only (no output): the same numbers.
    std::vector<float> mass_only(mass.size());
    attention(x, nullptr, 64, 0.125f, nullptr, mass_only.data());
    CHECK(mass_only == mass);
  }

  TEST_CASE("plan budgets add up exactly, keep every diagonal, and refuse impossible sparsity") {
    const Qkv x = random_qkv(8, 4, 1000, 64, 6);
    const int64_t nb = block_count(1000, 64);
    const std::vector<float> p = sampled_scores(x, 64, 0.125, 4, nullptr);
    for (double s : {0.0, 0.5, 0.9, 0.93}) {
      const int64_t budget = total_budget(8, nb, s);
      CHECK(budget == std::llround((1 - s) * 8 * nb * nb));
      for (bool global : {true, false}) {
        const BlockMask m = select_blocks(p, 8, nb, 64, budget, global);
        CHECK(m.kept() == budget);
        for (int64_t h = 0; h < 8; ++h) {
          for (int64_t i = 0; i < nb; ++i) CHECK(m.at(h, i, i));
        }
        if (!global) {
          for (int64_t h = 0; h < 8; ++h) {
            int64_t kept = 0;
            for (int64_t e = h * nb * nb; e < (h + 1) * nb * nb; ++e) kept += m.keep[static_cast<size_t>(e)];
            CHECK(std::abs(kept - budget / 8) <= 1);
          }
        }
      }
    }
    CHECK_THROWS(total_budget(8, nb, 0.99));
  }

  TEST_CASE("block scores are distributions and the exact ones beat the pooled estimate") {
    const Qkv x = random_qkv(4, 4, 512, 64, 7);
    const int64_t nb = block_count(512, 64);
    const std::vector<float> exact = exact_block_mass(x, 64, 0.125f);
    const std::vector<float> sampled = sampled_scores(x, 64, 0.125, 64, nullptr);  // every row: exact
    const std::vector<float> pooled = pooled_scores(x, 64, 0.125, nullptr);
    double err_sampled = 0, err_pooled = 0;
    for (int64_t r = 0; r < 4 * nb; ++r) {
      double a = 0, b = 0;
      for (int64_t j = 0; j < nb; ++j) a += exact[r * nb + j], b += pooled[r * nb + j];
      REQUIRE(a == doctest::Approx(1.0).epsilon(1e-4));
      REQUIRE(b == doctest::Approx(1.0).epsilon(1e-4));
      for (int64_t j = 0; j < nb; ++j) {
        err_sampled = std::max(err_sampled, static_cast<double>(std::abs(sampled[r * nb + j] - exact[r * nb + j])));
        err_pooled = std::max(err_pooled, static_cast<double>(std::abs(pooled[r * nb + j] - exact[r * nb + j])));
      }
    }
    CHECK(err_sampled < 1e-5);
    CHECK(err_pooled > err_sampled);
  }

  TEST_CASE("CUDA block-sparse kernel matches the CPU kernel and float64 (dense, masked, ragged, GQA, every block)") {
    if (!nk::test::cuda_or_skip()) return;
    struct Case {
      int64_t h, g, l, d, block;
      double keep;
    };
    for (const Case c : {Case{2, 2, 64, 64, 64, 1.0}, Case{4, 2, 200, 64, 64, 0.3}, Case{3, 1, 131, 40, 32, 0.4},
                         Case{2, 1, 97, 128, 16, 0.2}, Case{1, 1, 5, 8, 64, 1.0}, Case{2, 2, 300, 256, 48, 0.3},
                         Case{4, 4, 1000, 128, 64, 0.1}, Case{2, 1, 777, 96, 64, 0.25}}) {
      const Qkv x = random_qkv(c.h, c.g, c.l, c.d, static_cast<uint64_t>(c.l * 11 + c.d));
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
      const int64_t nb = block_count(c.l, c.block);
      const BlockMask mask = random_mask(c.h, nb, c.block, c.keep, static_cast<uint64_t>(c.l) + 3);
      const BlockMask* m = c.keep < 1 ? &mask : nullptr;
      std::vector<float> cpu(static_cast<size_t>(c.h * c.l * c.d)), gpu(cpu.size());
      attention(x, m, c.block, scale, cpu.data());
      attention_cuda(x, m, c.block, scale, gpu.data());
      std::vector<double> ref(cpu.size());
      attention_reference(x, m, c.block, scale, ref.data());
      INFO("H " << c.h << " Hkv " << c.g << " L " << c.l << " d " << c.d << " block " << c.block << " keep " << c.keep);
      CHECK(max_rel_error(gpu, ref) < 1e-5);
      std::vector<double> cpu64(cpu.begin(), cpu.end());
      CHECK(max_rel_error(gpu, cpu64) < 1e-5);
      if (!m) {
        std::vector<float> blas(cpu.size());
        attention_cublas(x, scale, blas.data());
        CHECK(max_rel_error(blas, ref) < 1e-5);
      }
    }
  }
}
