// louver-index.cpp - the index returns exactly the keys with score >= T:
// against brute force on iid and llm-like keys, ties at T, duplicates, zero
// vectors, d not a multiple of S, after appends; unsafe bounds are caught.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "nk/kernels/louver_codes.hpp"
#include "nk/kernels/louver_ivf.hpp"
#include "nk/kernels/louver_quest.hpp"
#include "nk/rng.hpp"
#include "nk/kernels/louver_search.hpp"
#include "test_support.hpp"

using namespace nk::louver;

namespace {

HeadIndex make_head(std::vector<float> keys, int64_t dims, const IndexParams& params, int64_t coded_keys = -1) {
  HeadIndex head;
  head.keys = std::move(keys);
  const int64_t n = head.size(dims);
  const Subspaces sub = Subspaces::split(dims, params.subspaces);
  if (coded_keys < 0) coded_keys = n;
  // Build on the first coded_keys, then treat the rest as appended keys.
  std::vector<float> later(head.keys.begin() + coded_keys * dims, head.keys.end());
  head.keys.resize(static_cast<size_t>(coded_keys * dims));
  build_codes(head, sub, params);
  for (int64_t first = 0; first < static_cast<int64_t>(later.size()) / dims; first += 37) {
    const int64_t count = std::min<int64_t>(37, static_cast<int64_t>(later.size()) / dims - first);
    head.keys.insert(head.keys.end(), later.begin() + first * dims, later.begin() + (first + count) * dims);
    if (head.size(dims) - head.coded >= params.buffer) code_buffer(head, sub);
  }
  finish_head(head, dims);
  return head;
}

/// Brute force with the score of record: the set the index must return.
std::vector<int64_t> brute_force(const HeadIndex& head, const float* q, int64_t dims, double threshold) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < head.size(dims); ++i) {
    if (exact_score(q, head.keys.data() + i * dims, dims) >= threshold) ids.push_back(i);
  }
  return ids;
}

std::vector<int64_t> ids_of(const SearchResult& result) {
  std::vector<int64_t> ids;
  for (const Hit& hit : result.hits) ids.push_back(hit.id);
  return ids;
}

/// Counts queries whose result differs from brute force (missed or extra keys).
int64_t mismatches(const HeadIndex& head, const IndexParams& params, int64_t dims, const std::vector<float>& queries,
                   const std::vector<double>& thresholds, Bound bound = Bound::safe) {
  const Subspaces sub = Subspaces::split(dims, params.subspaces);
  int64_t wrong = 0;
  for (size_t m = 0; m < thresholds.size(); ++m) {
    const float* q = queries.data() + m * static_cast<size_t>(dims);
    const SearchResult progressive = search(head, sub, q, thresholds[m], bound);
    if (ids_of(progressive) != brute_force(head, q, dims, thresholds[m])) ++wrong;
    // The progressive pass drops keys early only where the full bound is
    // below the cut: it scores exactly the keys the full pass (and the GPU) scores.
    const SearchResult full = search(head, sub, q, thresholds[m], bound, false);
    CHECK(full.scanned == progressive.scanned);
    CHECK(ids_of(full) == ids_of(progressive));
  }
  return wrong;
}

std::vector<float> gaussian(int64_t count, nk::Rng rng, double scale = 1.0) {
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = static_cast<float>(scale * rng.normal());
  return v;
}

/// Keys like those of 'gen --profile llm': clusters with a low-rank spread and
/// uneven channel scales.
std::vector<float> llm_like_keys(int64_t n, int64_t dims, nk::Rng rng) {
  const int64_t clusters = 12, rank = 4;
  const std::vector<float> centers = gaussian(clusters * dims, rng.split(1));
  const std::vector<float> basis = gaussian(dims * rank, rng.split(2), 0.5);
  std::vector<float> keys = gaussian(n * dims, rng.split(3), 0.1);
  nk::Rng pick = rng.split(4), latent = rng.split(5);
  for (int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<int64_t>(pick.below(clusters));
    double z[rank];
    for (double& value : z) value = latent.normal();
    for (int64_t j = 0; j < dims; ++j) {
      double value = keys[static_cast<size_t>(i * dims + j)] + centers[static_cast<size_t>(c * dims + j)];
      for (int64_t r = 0; r < rank; ++r) value += basis[static_cast<size_t>(j * rank + r)] * z[r];
      const double slowness = static_cast<double>(j) / static_cast<double>(dims);
      keys[static_cast<size_t>(i * dims + j)] = static_cast<float>((0.1 + 1.5 * slowness * slowness) * value);
    }
  }
  return keys;
}

/// The same hits (ids and scores, bit for bit) and, if asked, the same scanned count.
bool identical(const SearchResult& a, const SearchResult& b, bool scanned) {
  if (a.hits.size() != b.hits.size() || (scanned && a.scanned != b.scanned)) return false;
  for (size_t i = 0; i < a.hits.size(); ++i) {
    if (a.hits[i].id != b.hits[i].id || a.hits[i].score != b.hits[i].score) return false;
  }
  return true;
}

/// Thresholds at the k-th largest score of each query (the top-k oracle).
std::vector<double> topk_thresholds(const HeadIndex& head, const std::vector<float>& queries, int64_t dims, int64_t k) {
  std::vector<double> t;
  for (size_t m = 0; m < queries.size() / static_cast<size_t>(dims); ++m) t.push_back(kth_score(head, queries.data() + m * dims, dims, k));
  return t;
}

/// Keys and queries where the norm test of the late dimensions decides:
/// d = 24 in S = 8 subspaces of 3; the first four have the widest
/// coordinates, so they are the warm ones and R is dimensions 12..23.
/// Integer coordinates; for each query, keys whose R part is a positive
/// multiple of q_R (Cauchy-Schwarz is tight there), and T at the exact
/// score of one of them.
struct NormCase {
  int64_t dims = 24, queries_count = 40;
  IndexParams params;
  std::vector<float> keys, queries;
  std::vector<int64_t> tight;  ///< per query, the first of its three parallel keys
  std::vector<double> thresholds;
};

NormCase norm_case() {
  NormCase out;
  const int64_t dims = out.dims, queries_count = out.queries_count;
  out.params.subspaces = 8;
  out.params.leaf_size = 8;
  std::vector<float>& keys = out.keys;
  std::vector<float>& queries = out.queries;
  std::vector<int64_t>& tight = out.tight;
  nk::Rng rng(23);
  auto random_key = [&] {
    std::vector<float> k;
    for (int64_t j = 0; j < dims; ++j) {
      const int range = j < 12 ? 20 - static_cast<int>(j / 3) : 4;
      k.push_back(static_cast<float>(static_cast<int>(rng.below(static_cast<uint64_t>(2 * range + 1))) - range));
    }
    return k;
  };
  for (int64_t i = 0; i < 1500; ++i) {
    const std::vector<float> k = random_key();
    keys.insert(keys.end(), k.begin(), k.end());
  }
  for (int64_t m = 0; m < queries_count; ++m)
    for (int64_t j = 0; j < dims; ++j) queries.push_back(static_cast<float>(static_cast<int>(rng.below(7)) - 3));
  for (int64_t m = 0; m < queries_count; ++m) {
    tight.push_back(static_cast<int64_t>(keys.size()) / dims);
    for (int c = 1; c <= 3; ++c) {
      std::vector<float> k = random_key();
      for (int64_t j = 12; j < dims; ++j) k[static_cast<size_t>(j)] = static_cast<float>(c) * queries[static_cast<size_t>(m * dims + j)];
      keys.insert(keys.end(), k.begin(), k.end());
    }
  }
  for (int64_t m = 0; m < queries_count; ++m) {
    out.thresholds.push_back(exact_score(queries.data() + m * dims, keys.data() + (tight[static_cast<size_t>(m)] + m % 3) * dims, dims));
  }
  return out;
}

}  // namespace

TEST_SUITE("louver-index") {
  TEST_CASE("recall is exactly 1 and nothing below T is returned: iid, structured, d not a multiple of S, appends") {
    struct Case {
      const char* name;
      int64_t n, dims, subspaces, leaf, coded;
    };
    for (const Case& c : {Case{"iid d=64 S=8", 3000, 64, 8, 16, -1}, Case{"d=67 S=8 (uneven)", 2000, 67, 8, 8, -1},
                          Case{"S=1", 1500, 32, 1, 32, -1}, Case{"S=d", 800, 16, 16, 4, -1},
                          Case{"after appends (buffer and coded tail)", 3000, 48, 6, 16, 1000},
                          Case{"S=32: 4 warm subspaces and a key-major tail of 28", 5000, 64, 32, 16, -1},
                          Case{"S=20 (16 late subspaces), appends", 4000, 60, 20, 8, 2500}}) {
      INFO(c.name);
      IndexParams params;
      params.subspaces = c.subspaces;
      params.leaf_size = c.leaf;
      params.buffer = 100;
      // Structured keys: a few clusters with a low-rank spread, so bounds prune.
      nk::Rng rng(static_cast<uint64_t>(c.n + c.dims));
      std::vector<float> keys = gaussian(c.n * c.dims, rng.split(1), 0.2);
      const std::vector<float> centers = gaussian(8 * c.dims, rng.split(2));
      for (int64_t i = 0; i < c.n; ++i)
        for (int64_t j = 0; j < c.dims; ++j) keys[static_cast<size_t>(i * c.dims + j)] += centers[static_cast<size_t>((i % 8) * c.dims + j)];
      const HeadIndex head = make_head(keys, c.dims, params, c.coded);
      const std::vector<float> queries = gaussian(40 * c.dims, rng.split(3));
      CHECK(mismatches(head, params, c.dims, queries, topk_thresholds(head, queries, c.dims, c.n / 100 + 1)) == 0);
      CHECK(mismatches(head, params, c.dims, queries, topk_thresholds(head, queries, c.dims, c.n / 5)) == 0);
      const std::vector<double> extremes = {-1e30, 1e30, 0.0};
      CHECK(mismatches(head, params, c.dims, std::vector<float>(queries.begin(), queries.begin() + 3 * c.dims), extremes) == 0);
      // Pruning happens at all on structured keys at a top-1% threshold.
      const Subspaces sub = Subspaces::split(c.dims, params.subspaces);
      const double t = kth_score(head, queries.data(), c.dims, c.n / 100 + 1);
      if (c.subspaces > 1) CHECK(search(head, sub, queries.data(), t).scanned < c.n);
    }
  }

  TEST_CASE("ties at T, duplicates and zero vectors (exact integer scores)") {
    const int64_t dims = 16;
    IndexParams params;
    params.subspaces = 4;
    params.leaf_size = 4;
    nk::Rng rng(99);
    std::vector<float> keys;
    for (int64_t i = 0; i < 600; ++i) {
      for (int64_t j = 0; j < dims; ++j) keys.push_back(static_cast<float>(static_cast<int>(rng.below(7)) - 3));
    }
    keys.insert(keys.end(), keys.begin(), keys.begin() + 50 * dims);  // 50 duplicates
    keys.insert(keys.end(), 20 * dims, 0.0f);                        // 20 zero keys
    const HeadIndex head = make_head(keys, dims, params);
    std::vector<float> queries;
    std::vector<double> thresholds;
    for (int m = 0; m < 60; ++m) {
      for (int64_t j = 0; j < dims; ++j) queries.push_back(static_cast<float>(static_cast<int>(rng.below(5)) - 2));
      // T equal to some key's exact (integer) score: that key sits exactly on T.
      const int64_t on_boundary = static_cast<int64_t>(rng.below(650));
      thresholds.push_back(exact_score(queries.data() + m * dims, head.keys.data() + on_boundary * dims, dims));
    }
    CHECK(mismatches(head, params, dims, queries, thresholds) == 0);
    // A zero query: every key scores exactly 0.
    const std::vector<float> zero(dims, 0.0f);
    const Subspaces sub = Subspaces::split(dims, params.subspaces);
    CHECK(search(head, sub, zero.data(), 0.0).hits.size() == static_cast<size_t>(head.size(dims)));
    CHECK(search(head, sub, zero.data(), 1e-300).hits.empty());
  }

  TEST_CASE("the checker catches an unsafe variant (centroid scores without radii)") {
    const int64_t dims = 32;
    IndexParams params;
    params.subspaces = 4;
    params.leaf_size = 16;
    nk::Rng rng(7);
    const HeadIndex head = make_head(gaussian(4000 * dims, rng.split(1)), dims, params);
    const std::vector<float> queries = gaussian(30 * dims, rng.split(2));
    const std::vector<double> t = topk_thresholds(head, queries, dims, 40);
    CHECK(mismatches(head, params, dims, queries, t, Bound::centroid_only) > 0);
    CHECK(mismatches(head, params, dims, queries, t, Bound::safe) == 0);
  }

  TEST_CASE("the norm test of the late dimensions: upper bounds, exact when tight, and caught when unsafe") {
    const NormCase data = norm_case();
    const int64_t dims = data.dims, queries_count = data.queries_count;
    const IndexParams& params = data.params;
    const std::vector<float>& keys = data.keys;
    const std::vector<float>& queries = data.queries;
    const std::vector<double>& thresholds = data.thresholds;
    HeadIndex head = make_head(keys, dims, params);
    const Subspaces sub = Subspaces::split(dims, params.subspaces);
    REQUIRE(head.warm == 4);
    std::vector<int64_t> late_dims;
    for (int64_t t = head.warm; t < sub.count(); ++t) {
      const int64_t s = head.order[static_cast<size_t>(t)];
      for (int64_t j = sub.begin[static_cast<size_t>(s)]; j < sub.begin[static_cast<size_t>(s) + 1]; ++j) late_dims.push_back(j);
    }
    std::sort(late_dims.begin(), late_dims.end());
    REQUIRE(late_dims.front() == 12);
    REQUIRE(late_dims.size() == 12);
    // rest_norm and rest_q_norm bound the norms over R from above.
    for (int64_t i = 0; i < head.coded; ++i) {
      long double squares = 0;
      for (int64_t j : late_dims) squares += std::pow(static_cast<long double>(head.keys[static_cast<size_t>(i * dims + j)]), 2);
      REQUIRE(static_cast<long double>(head.rest_norm[static_cast<size_t>(i)]) >= std::sqrt(squares));
    }
    for (int64_t m = 0; m < queries_count; ++m) {
      const float* q = queries.data() + m * dims;
      long double squares = 0;
      for (int64_t j : late_dims) squares += std::pow(static_cast<long double>(q[j]), 2);
      CHECK(static_cast<long double>(prepare_query(head, sub, q, 0.0).rest_q_norm) >= std::sqrt(squares));
    }
    CHECK(mismatches(head, params, dims, queries, thresholds) == 0);
    // The test prunes: the keys scanned are fewer than without it.
    const std::vector<float> kept_norm = head.rest_norm;
    int64_t scanned = 0, scanned_without = 0;
    for (int64_t m = 0; m < queries_count; ++m) scanned += search(head, sub, queries.data() + m * dims, thresholds[static_cast<size_t>(m)]).scanned;
    std::fill(head.rest_norm.begin(), head.rest_norm.end(), 1e30f);
    for (int64_t m = 0; m < queries_count; ++m) scanned_without += search(head, sub, queries.data() + m * dims, thresholds[static_cast<size_t>(m)]).scanned;
    CHECK(scanned < scanned_without);
    // An unsafe variant (norms over R scaled down by 10%) loses keys, and the checker sees it.
    for (size_t i = 0; i < kept_norm.size(); ++i) head.rest_norm[i] = 0.9f * kept_norm[i];
    CHECK(mismatches(head, params, dims, queries, thresholds) > 0);
  }

  TEST_CASE("Quest baselines: the threshold variant is exact, top-K at a budget may miss keys") {
    const int64_t dims = 32;
    IndexParams params;
    nk::Rng rng(11);
    const HeadIndex head = make_head(gaussian(3000 * dims, rng.split(1)), dims, params);
    const Pages pages = build_pages(head, dims, 16);
    const std::vector<float> queries = gaussian(20 * dims, rng.split(2));
    int64_t found = 0, expected = 0;
    for (int m = 0; m < 20; ++m) {
      const float* q = queries.data() + m * dims;
      const double t = kth_score(head, q, dims, 30);
      const std::vector<int64_t> truth = brute_force(head, q, dims, t);
      CHECK(ids_of(quest_threshold(head, pages, q, dims, t)) == truth);
      const SearchResult topk = quest_topk(head, pages, q, dims, t, 150);
      CHECK(topk.scanned <= 160);
      found += static_cast<int64_t>(topk.hits.size());
      expected += static_cast<int64_t>(truth.size());
      for (const Hit& hit : topk.hits) CHECK(hit.score >= t);
    }
    CHECK(found < expected);  // 5% of the keys cannot hold every top-1% key of iid data
  }

  TEST_CASE("decoding appends: key by key through the buffer, its flushes and rebuilds, search stays exact") {
    const int64_t dims = 24;
    IndexParams params;
    params.subspaces = 6, params.leaf_size = 8, params.buffer = 16;
    const Subspaces sub = Subspaces::split(dims, params.subspaces);
    nk::Rng rng(21);
    const std::vector<float> keys = gaussian(600 * dims, rng.split(1));
    HeadIndex head;
    head.keys.assign(keys.begin(), keys.begin() + 40 * dims);
    build_codes(head, sub, params);
    finish_head(head, dims);
    int64_t coded = 0, rebuilt = 0;
    const std::vector<float> queries = gaussian(3 * dims, rng.split(2));
    for (int64_t i = 40; i < 600; ++i) {
      const AppendReport report = append_keys(head, sub, params, keys.data() + i * dims, nullptr, 1, 0, RebuildRule{});
      coded += report.coded ? 1 : 0, rebuilt += report.rebuilt ? 1 : 0;
      CHECK(head.size(dims) == i + 1);
      CHECK(head.size(dims) - head.coded < params.buffer);
      if (i % 50 == 0 || i == 599) {
        for (int m = 0; m < 3; ++m) {
          const float* q = queries.data() + m * dims;
          const double t = kth_score(head, q, dims, 12);
          CHECK(ids_of(search(head, sub, q, t)) == brute_force(head, q, dims, t));
        }
      }
    }
    CHECK(coded == 560 / 16);
    CHECK(rebuilt >= 3);  // 40 built keys: growth 2 rebuilds at 80, 160, 320
    CHECK(head.built >= 320);
  }

  TEST_CASE("the --mass sample is a set: distinct ids, all of them when few") {
    const std::vector<int64_t> all = mass_sample(5, 8, nk::Rng(1));
    CHECK(all == std::vector<int64_t>{0, 1, 2, 3, 4});
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const std::vector<int64_t> ids = mass_sample(300, 256, nk::Rng(seed));
      CHECK(ids.size() == 256);
      CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());  // sorted, so a duplicate would be adjacent
      CHECK(std::is_sorted(ids.begin(), ids.end()));
      CHECK(ids.back() < 300);
      CHECK(ids.front() >= 0);
    }
    CHECK(mass_sample(1000, 10, nk::Rng(3)) == mass_sample(1000, 10, nk::Rng(3)));
    CHECK(mass_sample(1000, 10, nk::Rng(3)) != mass_sample(1000, 10, nk::Rng(4)));
  }

  TEST_CASE("IVF baseline: every key in one list, a full budget is exact, a small one reads about its budget") {
    const int64_t dims = 16, n = 900;
    nk::Rng rng(31);
    std::vector<float> keys = gaussian(n * dims, rng.split(1), 0.3);
    const std::vector<float> centers = gaussian(6 * dims, rng.split(2));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < dims; ++j) keys[static_cast<size_t>(i * dims + j)] += centers[static_cast<size_t>((i % 6) * dims + j)];
    Ivf ivf = build_ivf(keys.data(), 600, dims, default_lists(600), 10, 5);
    CHECK(ivf.count() == 24);
    ivf_add(ivf, keys.data() + 600 * dims, 300);
    std::vector<int64_t> seen;
    for (const auto& list : ivf.lists) {
      CHECK(std::is_sorted(list.begin(), list.end()));
      seen.insert(seen.end(), list.begin(), list.end());
    }
    std::sort(seen.begin(), seen.end());
    CHECK(seen.size() == static_cast<size_t>(n));
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    HeadIndex head;
    head.keys = keys;
    const std::vector<float> queries = gaussian(10 * dims, rng.split(3));
    int64_t found = 0, expected = 0;
    for (int m = 0; m < 10; ++m) {
      const float* q = queries.data() + m * dims;
      const double t = kth_score(head, q, dims, 20);
      const std::vector<int64_t> truth = brute_force(head, q, dims, t);
      CHECK(ids_of(ivf_search(ivf, keys.data(), q, t, n)) == truth);
      const SearchResult some = ivf_search(ivf, keys.data(), q, t, 90);
      CHECK(some.scanned >= 90);
      CHECK(some.scanned < n);
      found += static_cast<int64_t>(some.hits.size()), expected += static_cast<int64_t>(truth.size());
    }
    CHECK(found <= expected);
    CHECK(build_ivf(keys.data(), 600, dims, 24, 10, 5).centroid == build_ivf(keys.data(), 600, dims, 24, 10, 5).centroid);
  }

  TEST_CASE("Quest pages: the budget's pages by bound, a forced page always among them, pages extend key by key") {
    const int64_t dims = 8;
    nk::Rng rng(41);
    const std::vector<float> keys = gaussian(100 * dims, rng.split(1));
    HeadIndex head;
    head.keys = keys;
    const Pages whole = build_pages(head, dims, 16);
    Pages grown;
    grown.page_size = 16;
    extend_pages(grown, keys.data(), 0, 37, dims);
    for (int64_t i = 37; i < 100; ++i) extend_pages(grown, keys.data() + i * dims, i, 1, dims);
    CHECK(grown.low == whole.low);
    CHECK(grown.high == whole.high);
    const std::vector<float> q = gaussian(dims, rng.split(2));
    const std::vector<int64_t> free_pick = quest_pages(whole, 100, q.data(), dims, 32);
    CHECK(free_pick.size() == 2);
    for (int64_t forced = 0; forced < 7; ++forced) {
      const std::vector<int64_t> pick = quest_pages(whole, 100, q.data(), dims, 32, forced);
      CHECK(pick.size() == 2);
      CHECK(std::find(pick.begin(), pick.end(), forced) != pick.end());
    }
  }

  TEST_CASE("residuals are upper bounds and codes stay in range after appends") {
    const int64_t dims = 24;
    IndexParams params;
    params.subspaces = 3;
    params.leaf_size = 8;
    params.buffer = 50;
    nk::Rng rng(5);
    const HeadIndex head = make_head(gaussian(900 * dims, rng), dims, params, 300);
    const Subspaces sub = Subspaces::split(dims, params.subspaces);
    CHECK(head.coded >= 850);
    for (int64_t s = 0; s < sub.count(); ++s) {
      const Codebook& book = head.books[static_cast<size_t>(s)];
      for (int64_t i = 0; i < head.coded; ++i) {
        const int32_t c = head.code[static_cast<size_t>(s)][static_cast<size_t>(i)];
        REQUIRE(c >= 0);
        REQUIRE(c < book.clusters());
        double sum = 0;
        for (int64_t j = 0; j < book.width; ++j) {
          sum += std::pow(static_cast<double>(head.keys[static_cast<size_t>(i * dims + sub.begin[static_cast<size_t>(s)] + j)]) -
                              book.centroid[static_cast<size_t>(c * book.width + j)], 2);
        }
        CHECK(static_cast<double>(head.residual[static_cast<size_t>(s)][static_cast<size_t>(i)]) >= std::sqrt(sum));
      }
    }
  }

  TEST_CASE("CUDA search returns exactly the CPU's hits and scanned counts (and the dense scan too)") {
    if (!nk::test::cuda_or_skip()) return;
    struct Case {
      const char* name;
      bool llm;
      int64_t n, dims, subspaces, leaf, coded;  // coded >= 0: the rest appended (1200: a coded tail and 201 in the buffer)
    };
    // Covers both table paths (shared memory up to 4096 floats, global beyond)
    // and both load paths (float4 when d % 4 == 0, scalar otherwise).
    for (const Case& c : {Case{"iid d=67 S=8, appends", false, 3000, 67, 8, 16, 1800},
                          Case{"llm-like d=67 S=8, appends", true, 5000, 67, 8, 16, 3800},
                          Case{"llm-like d=128 S=32", true, 4000, 128, 32, 64, -1},
                          Case{"llm-like d=130 S=16, large tables, appends", true, 12000, 130, 16, 8, 10800},
                          Case{"iid d=96 S=12, large tables", false, 8000, 96, 12, 8, -1},
                          Case{"S=d=16", true, 800, 16, 16, 4, -1}}) {
      INFO(c.name);
      IndexParams params;
      params.subspaces = c.subspaces;
      params.leaf_size = c.leaf;
      params.buffer = 300;
      nk::Rng rng(static_cast<uint64_t>(c.n * 7 + c.dims));
      const std::vector<float> keys = c.llm ? llm_like_keys(c.n, c.dims, rng.split(1)) : gaussian(c.n * c.dims, rng.split(1));
      const HeadIndex head = make_head(keys, c.dims, params, c.coded);
      if (c.coded >= 0) REQUIRE(head.coded < c.n);  // an exact buffer remains
      const Subspaces sub = Subspaces::split(c.dims, params.subspaces);
      const int64_t count = 40;
      std::vector<float> queries = gaussian(count * c.dims, rng.split(2));
      std::fill(queries.end() - c.dims, queries.end(), 0.0f);  // a zero query: every score is 0
      // Several thresholds in one batch: top 1%, top 20%, a key's own score (a tie at T), 0, +-1e30.
      std::vector<double> thresholds;
      for (int64_t m = 0; m < count; ++m) {
        const float* q = queries.data() + m * c.dims;
        switch (m % 6) {
          case 0: thresholds.push_back(kth_score(head, q, c.dims, c.n / 100 + 1)); break;
          case 1: thresholds.push_back(kth_score(head, q, c.dims, c.n / 5)); break;
          case 2: thresholds.push_back(exact_score(q, head.keys.data() + (m * 97 % c.n) * c.dims, c.dims)); break;
          case 3: thresholds.push_back(0.0); break;
          case 4: thresholds.push_back(m == 4 ? -1e30 : 1e30); break;
          default: thresholds.push_back(kth_score(head, q, c.dims, 3)); break;
        }
      }
      GpuTiming timing;
      const std::vector<SearchResult> gpu = search_cuda(head, sub, queries.data(), count, thresholds.data(), false, 3, &timing);
      const std::vector<SearchResult> gpu_dense = search_cuda(head, sub, queries.data(), count, thresholds.data(), true);
      REQUIRE(gpu.size() == static_cast<size_t>(count));
      REQUIRE(gpu_dense.size() == static_cast<size_t>(count));
      CHECK(timing.compute > 0);
      int64_t differ = 0, dense_differ = 0, scanned = 0;
      for (int64_t m = 0; m < count; ++m) {
        const float* q = queries.data() + m * c.dims;
        const SearchResult cpu = search(head, sub, q, thresholds[static_cast<size_t>(m)]);
        const SearchResult dense = dense_scan(head, q, c.dims, thresholds[static_cast<size_t>(m)]);
        const auto at = static_cast<size_t>(m);
        if (!identical(gpu[at], cpu, true)) {
          ++differ;
          MESSAGE("query " << m << ": GPU " << gpu[at].hits.size() << " hits, " << gpu[at].scanned << " scanned; CPU "
                           << cpu.hits.size() << " hits, " << cpu.scanned << " scanned");
        }
        if (!identical(gpu_dense[at], dense, true)) ++dense_differ;
        scanned += cpu.scanned;
      }
      CHECK(differ == 0);
      CHECK(dense_differ == 0);
      if (c.subspaces > 1) CHECK(scanned < count * c.n);  // the bound pass skipped keys at all

      // Every key a hit for every query: more hits than the first buffer holds (it grows and runs again).
      const std::vector<double> everything(static_cast<size_t>(count), -1e30);
      const std::vector<SearchResult> all = search_cuda(head, sub, queries.data(), count, everything.data(), false);
      REQUIRE(all.size() == static_cast<size_t>(count));
      int64_t incomplete = 0;
      for (int64_t m = 0; m < count; ++m) {
        const SearchResult& result = all[static_cast<size_t>(m)];
        if (result.hits.size() != static_cast<size_t>(c.n) || !identical(result, search(head, sub, queries.data() + m * c.dims, -1e30), true)) ++incomplete;
      }
      CHECK(incomplete == 0);
    }
  }

  TEST_CASE("CUDA search applies the norm test as the CPU does (same hits and scanned counts, and it prunes)") {
    if (!nk::test::cuda_or_skip()) return;
    const NormCase data = norm_case();
    HeadIndex head = make_head(data.keys, data.dims, data.params);
    const Subspaces sub = Subspaces::split(data.dims, data.params.subspaces);
    auto scanned_alike = [&](int64_t& scanned) {
      const std::vector<SearchResult> gpu = search_cuda(head, sub, data.queries.data(), data.queries_count, data.thresholds.data(), false);
      REQUIRE(gpu.size() == static_cast<size_t>(data.queries_count));
      int64_t differ = 0;
      scanned = 0;
      for (int64_t m = 0; m < data.queries_count; ++m) {
        const SearchResult cpu = search(head, sub, data.queries.data() + m * data.dims, data.thresholds[static_cast<size_t>(m)]);
        differ += !identical(gpu[static_cast<size_t>(m)], cpu, true);
        scanned += gpu[static_cast<size_t>(m)].scanned;
      }
      return differ;
    };
    int64_t scanned = 0, scanned_without = 0;
    CHECK(scanned_alike(scanned) == 0);
    std::fill(head.rest_norm.begin(), head.rest_norm.end(), 1e30f);  // the norm test off
    CHECK(scanned_alike(scanned_without) == 0);
    CHECK(scanned < scanned_without);
  }
}
