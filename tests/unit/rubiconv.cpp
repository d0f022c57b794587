// rubiconv.cpp - every rubiconv method against the float64 direct
// reference on awkward packings, the leak test, and exact gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "rubiconv/engine.hpp"
#include "rubiconv/filters.hpp"
#include "nk/error.hpp"
#include "nk/rng.hpp"
#include "rubiconv/packing.hpp"
#include "rubiconv/plan.hpp"
#include "test_support.hpp"

using namespace rubiconv;

namespace {

/// A packed problem with data of precision Real, built from document lengths per row.
template <class Real>
struct Case {
  int64_t batch, length, channels, taps;
  Packing packing;
  std::vector<Real> x, k, bias;
  Case(const std::vector<std::vector<int64_t>>& lengths, int64_t channels_, int64_t taps_, uint64_t seed,
       bool with_bias = false)
      : batch(static_cast<int64_t>(lengths.size())), channels(channels_), taps(taps_) {
    length = 0;
    for (int64_t n : lengths[0]) length += n;
    packing.batch = batch;
    packing.length = length;
    for (const auto& row : lengths) {
      std::vector<Document> docs;
      int64_t at = 0;
      for (int64_t n : row) {
        docs.push_back({at, at + n});
        at += n;
      }
      REQUIRE(at == length);
      packing.rows.push_back(docs);
    }
    nk::Rng rng(seed);
    x.resize(static_cast<size_t>(batch * length * channels));
    for (Real& v : x) v = static_cast<Real>(rng.normal());
    k.resize(static_cast<size_t>(channels * taps));
    for (Real& v : k) v = static_cast<Real>(rng.normal() / std::sqrt(static_cast<double>(taps)));
    if (with_bias) {
      bias.resize(static_cast<size_t>(channels));
      for (Real& v : bias) v = static_cast<Real>(rng.normal());
    }
  }
  Problem<Real> problem() const {
    Problem<Real> p;
    p.packing = &packing;
    p.batch = batch;
    p.length = length;
    p.channels = channels;
    p.filter_length = taps;
    p.x = x.data();
    p.k = k.data();
    p.bias = bias.empty() ? nullptr : bias.data();
    return p;
  }
  std::vector<Real> run(Method method, PlanOptions options = {}) const {
    std::vector<Real> y(x.size());
    apply(problem(), make_plan(method, packing, taps, options), y.data());
    return y;
  }
};

template <class Real>
double relative_error(const std::vector<Real>& got, const std::vector<Real>& reference) {
  double worst = 0, scale = 1e-300;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - static_cast<double>(reference[i])));
    scale = std::max(scale, std::abs(static_cast<double>(reference[i])));
  }
  return worst / scale;
}

/// Independent reference: the definition, in long double, straight from the packing.
template <class Real>
std::vector<double> definition(const Case<Real>& c) {
  std::vector<double> y(c.x.size());
  for (int64_t b = 0; b < c.batch; ++b)
    for (const Document& d : c.packing.rows[static_cast<size_t>(b)])
      for (int64_t t = d.begin; t < d.end; ++t)
        for (int64_t h = 0; h < c.channels; ++h) {
          long double sum = 0;
          for (int64_t s = 0; s <= t - d.begin && s < c.taps; ++s) {
            sum += static_cast<long double>(c.k[static_cast<size_t>(h * c.taps + s)]) *
                   c.x[static_cast<size_t>((b * c.length + t - s) * c.channels + h)];
          }
          if (!c.bias.empty()) sum += static_cast<long double>(c.bias[static_cast<size_t>(h)]) * c.x[static_cast<size_t>((b * c.length + t) * c.channels + h)];
          y[static_cast<size_t>((b * c.length + t) * c.channels + h)] = static_cast<double>(sum);
        }
  return y;
}

std::vector<std::vector<int64_t>> random_lengths(int64_t rows, int64_t length, double median, uint64_t seed) {
  nk::Rng rng(seed);
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(rows));
  for (auto& row : out) {
    for (int64_t at = 0; at < length;) {
      const int64_t n = std::clamp<int64_t>(std::llround(std::exp(std::log(median) + rng.normal())), 1, length - at);
      row.push_back(n);
      at += n;
    }
  }
  return out;
}

const Method kExact[] = {Method::rubiconv, Method::perdoc, Method::padded, Method::direct};

template <class Real>
void check_all_methods(const Case<Real>& c, double tolerance, PlanOptions options = {}) {
  const std::vector<double> reference = definition(c);
  for (Method method : kExact) {
    const std::vector<Real> y = c.run(method, options);
    const std::vector<double> widened(y.begin(), y.end());
    INFO("method " << method_name(method));
    CHECK(relative_error(widened, reference) <= tolerance);
  }
}

}  // namespace

TEST_SUITE("rubiconv") {
  TEST_CASE("every exact method equals the definition on awkward packings (float32 and float64)") {
    struct Shape {
      const char* name;
      std::vector<std::vector<int64_t>> lengths;
      int64_t taps;
    };
    const std::vector<Shape> shapes = {
        {"one document", {{1000}}, 1000},
        {"every document of length 1", {std::vector<int64_t>(300, 1)}, 300},
        {"documents longer than Lk", {{400, 700, 3, 900}}, 37},
        {"Lk = L, L not a power of two", {{129, 1, 64, 77, 500, 2}}, 773},
        {"ragged batch", random_lengths(3, 3001, 150, 11), 3001},
        {"short filter, mixed lengths", random_lengths(2, 5003, 300, 12), 5},
    };
    for (const Shape& shape : shapes) {
      INFO(shape.name);
      check_all_methods(Case<float>(shape.lengths, 5, shape.taps, 1), 1e-5);
      check_all_methods(Case<double>(shape.lengths, 5, shape.taps, 2), 1e-12);
    }
  }

  TEST_CASE("overlap-save tiles: boundaries on tile edges, documents of many tiles") {
    PlanOptions tiles;
    tiles.tile = 256;
    tiles.direct_max = 8;
    const int64_t taps = 64, hop = 256 - taps + 1;
    // Documents of exactly 1, 2 and 3 hops, one hop +- 1, and a long one.
    const std::vector<std::vector<int64_t>> lengths = {{hop, 2 * hop, 3 * hop, hop + 1, hop - 1, 2000, 300}};
    const Case<double> c(lengths, 3, taps, 5);
    const Plan plan = make_plan(Method::rubiconv, c.packing, taps, tiles);
    bool tiled = false;
    for (const Bucket& b : plan.buckets) tiled = tiled || b.tiled;
    CHECK(tiled);
    check_all_methods(c, 1e-12, tiles);
    check_all_methods(Case<float>(lengths, 3, taps, 6), 1e-5, tiles);
  }

  TEST_CASE("with the skip term (bias) every method still equals the definition") {
    check_all_methods(Case<double>(random_lengths(2, 2000, 100, 7), 4, 2000, 8, true), 1e-12);
  }

  TEST_CASE("leak test: changing one document leaves every other output bit-identical") {
    Case<float> c(random_lengths(2, 4000, 200, 13), 4, 4000, 9);
    const Document target = c.packing.rows[1][3];
    for (Method method : {Method::rubiconv, Method::perdoc, Method::padded}) {
      const std::vector<float> before = c.run(method);
      Case<float> changed = c;
      for (int64_t t = target.begin; t < target.end; ++t)
        for (int64_t h = 0; h < c.channels; ++h) changed.x[static_cast<size_t>((c.length + t) * c.channels + h)] += 1.0f;
      const std::vector<float> after = changed.run(method);
      int64_t changed_outside = 0, changed_inside = 0;
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t t = 0; t < c.length; ++t)
          for (int64_t h = 0; h < c.channels; ++h) {
            const size_t i = static_cast<size_t>((b * c.length + t) * c.channels + h);
            const bool inside = b == 1 && t >= target.begin && t < target.end;
            if (before[i] != after[i]) ++(inside ? changed_inside : changed_outside);
          }
      INFO("method " << method_name(method));
      CHECK(changed_outside == 0);
      CHECK(changed_inside > 0);
    }
  }

  TEST_CASE("the checker can fail: fullfft leaks across boundaries") {
    const Case<double> c({{300, 300, 300}}, 2, 900, 3);
    const std::vector<double> reference = definition(c);
    const std::vector<double> y = c.run(Method::fullfft);
    CHECK(relative_error(y, reference) > 1e-3);
    const Case<double> single({{900}}, 2, 900, 3);
    CHECK(relative_error(single.run(Method::fullfft), definition(single)) < 1e-12);
  }

  TEST_CASE("gradients equal the direct ones, satisfy the adjoint identity and finite differences") {
    for (bool with_bias : {false, true}) {
      PlanOptions tiles;
      tiles.tile = 512;
      tiles.direct_max = 16;
      for (int64_t taps : {int64_t{1500}, int64_t{40}}) {
        Case<double> c(random_lengths(2, 1500, 120, 21), 3, taps, 22, with_bias);
        nk::Rng rng(23);
        std::vector<double> dy(c.x.size());
        for (double& v : dy) v = rng.normal();
        std::vector<double> dx_ref(c.x.size()), dk_ref(c.k.size()), db_ref(3), dx(c.x.size()), dk(c.k.size()), db(3);
        grad(c.problem(), make_plan(Method::direct, c.packing, taps, tiles), dy.data(), dx_ref.data(), dk_ref.data(), db_ref.data());
        for (Method method : {Method::rubiconv, Method::perdoc, Method::padded}) {
          grad(c.problem(), make_plan(method, c.packing, taps, tiles), dy.data(), dx.data(), dk.data(), db.data());
          INFO("method " << method_name(method) << " taps " << taps << " bias " << with_bias);
          CHECK(relative_error(dx, dx_ref) < 1e-12);
          CHECK(relative_error(dk, dk_ref) < 1e-12);
          if (with_bias) CHECK(relative_error(db, db_ref) < 1e-12);
        }
        // <dy, conv(x)> = <dx, x> (the convolution is linear in x) and = <dk, k> + <dbias, bias>.
        const std::vector<double> y = c.run(Method::rubiconv, tiles);
        double lhs = 0, via_x = 0, via_k = 0;
        for (size_t i = 0; i < y.size(); ++i) lhs += dy[i] * y[i];
        for (size_t i = 0; i < y.size(); ++i) via_x += dx[i] * c.x[i];
        for (size_t i = 0; i < c.k.size(); ++i) via_k += dk[i] * c.k[i];
        for (size_t i = 0; i < c.bias.size(); ++i) via_k += db[i] * c.bias[i];
        CHECK(via_x == doctest::Approx(lhs).epsilon(1e-11));
        CHECK(via_k == doctest::Approx(lhs).epsilon(1e-11));
        // Finite differences of <dy, y> in one tap and one input.
        const double step = 1e-6;
        Case<double> bumped = c;
        bumped.k[7] += step;
        double moved = 0;
        const std::vector<double> y_k = bumped.run(Method::rubiconv, tiles);
        for (size_t i = 0; i < y.size(); ++i) moved += dy[i] * (y_k[i] - y[i]);
        CHECK(moved / step == doctest::Approx(dk[7]).epsilon(1e-6));
        bumped = c;
        bumped.x[1000] += step;
        moved = 0;
        const std::vector<double> y_x = bumped.run(Method::rubiconv, tiles);
        for (size_t i = 0; i < y.size(); ++i) moved += dy[i] * (y_x[i] - y[i]);
        CHECK(moved / step == doctest::Approx(dx[1000]).epsilon(1e-6));
      }
    }
  }

  TEST_CASE("cu_seqlens are checked with the offending index") {
    auto code_and_text = [](const std::vector<int64_t>& cu, std::vector<int64_t> shape, int64_t batch) {
      try {
        packing_from_cu_seqlens(cu, shape, batch, 10, "in.h5");
      } catch (const nk::Error& e) {
        return std::pair{static_cast<int>(e.code()), std::string(e.what())};
      }
      return std::pair{0, std::string()};
    };
    CHECK(code_and_text({0, 4, 10}, {3}, 2).first == 0);
    CHECK(code_and_text({0, 4, 4, 10}, {4}, 1).first == 0);
    CHECK(code_and_text({1, 4, 10}, {3}, 1).second.find("must start at 0") != std::string::npos);
    CHECK(code_and_text({0, 6, 4, 10}, {4}, 1).second.find("must not decrease (index 2: 4 < 6)") != std::string::npos);
    CHECK(code_and_text({0, 4, 9}, {3}, 1).second.find("must end at L = 10") != std::string::npos);
    CHECK(code_and_text({0, 10, -1, 0, 3, 10}, {2, 3}, 2).first == 0);
    CHECK(code_and_text({0, 10, -1, 0, 3, 11}, {2, 3}, 2).second.find("row 1 must end at L") != std::string::npos);
    CHECK(code_and_text({0, 10, 0, 10}, {2, 2}, 3).second.find("has 2 rows but /x has B = 3") != std::string::npos);
    CHECK(code_and_text({0, 4, 10}, {3}, 1).first == 0);
    const Packing p = packing_from_cu_seqlens({0, 4, 10, -1, 0, 2, 5, 10}, {2, 4}, 2, 10, "in.h5");
    CHECK(p.rows[0].size() == 2);
    CHECK(p.rows[1].size() == 3);
    CHECK(p.longest() == 6);
  }

  TEST_CASE("STU filters: Lanczos with the FFT Hankel product equals the dense eigensolver") {
    const nk::Rng rng(31);
    const Eigenpairs dense = stu_eigenpairs(600, 12, true, rng);
    const Eigenpairs lanczos = stu_eigenpairs(600, 12, false, rng);
    REQUIRE(lanczos.values.size() == 12);
    for (size_t j = 0; j < 8; ++j) {
      CHECK(lanczos.values[j] == doctest::Approx(dense.values[j]).epsilon(1e-9));
      double dot = 0;
      for (size_t i = 0; i < 600; ++i) dot += lanczos.vectors[j][i] * dense.vectors[j][i];
      CHECK(dot == doctest::Approx(1.0).epsilon(1e-8));
    }
    CHECK(dense.values[0] > dense.values[1]);
    CHECK(dense.values[5] < 1e-3 * dense.values[0]);  // the spectrum decays fast
  }

  TEST_CASE("the bucket rule admits exactly the sizes whose circular convolution is exact") {
    for (int64_t lk : {1, 5, 64, 1000}) {
      for (int64_t n = 1; n <= 300; n += 7) {
        const int64_t size = whole_bucket_size(n, lk);
        CHECK(fits_whole(n, size, lk));
        CHECK(size >= n + std::min(n, lk) - 1);
        CHECK(size < 4 * (n + std::min(n, lk)));
      }
    }
  }

  TEST_CASE("CUDA: every method's plan on the GPU equals the CPU engine and the definition, gradients too") {
    if (!nk::test::cuda_or_skip()) return;
    PlanOptions tiles;
    tiles.tile = 256;
    tiles.direct_max = 8;
    struct Shape {
      const char* name;
      std::vector<std::vector<int64_t>> lengths;
      int64_t channels, taps;
      PlanOptions options;
      bool bias;
    };
    const std::vector<Shape> shapes = {
        {"one document", {{1000}}, 5, 1000, {}, false},
        {"every document of length 1", {std::vector<int64_t>(300, 1)}, 3, 300, {}, false},
        {"Lk = L, L not a power of two, many channels", {{129, 1, 64, 77, 500, 2}}, 70, 773, {}, true},
        {"ragged batch", random_lengths(3, 3001, 150, 11), 33, 3001, {}, false},
        {"overlap-save tiles", {{193, 386, 579, 194, 192, 2000, 300}}, 3, 64, tiles, true},
        {"short filter, mixed lengths", random_lengths(2, 5003, 300, 12), 64, 5, {}, false},
    };
    for (const Shape& shape : shapes) {
      const Case<float> c32(shape.lengths, shape.channels, shape.taps, 21, shape.bias);
      const Case<double> c64(shape.lengths, shape.channels, shape.taps, 22, shape.bias);
      const std::vector<double> ref32 = definition(c32), ref64 = definition(c64);
      for (Method method : {Method::rubiconv, Method::perdoc, Method::padded, Method::fullfft, Method::direct}) {
        INFO(shape.name << ", method " << method_name(method));
        const Plan p32 = make_plan(method, c32.packing, shape.taps, shape.options);
        std::vector<float> gpu32(c32.x.size()), cpu32(c32.x.size());
        apply_cuda(c32.problem(), p32, gpu32.data());
        apply(c32.problem(), p32, cpu32.data());
        CHECK(relative_error(gpu32, cpu32) <= 1e-5);
        const Plan p64 = make_plan(method, c64.packing, shape.taps, shape.options);
        std::vector<double> gpu64(c64.x.size()), cpu64(c64.x.size());
        apply_cuda(c64.problem(), p64, gpu64.data(), 2);
        apply(c64.problem(), p64, cpu64.data());
        CHECK(relative_error(gpu64, cpu64) <= 1e-12);
        if (method != Method::fullfft) {
          CHECK(relative_error(std::vector<double>(gpu32.begin(), gpu32.end()), ref32) <= 1e-5);
          CHECK(relative_error(gpu64, ref64) <= 1e-12);
        }
        // Gradients: dx, dk (and dbias) on the GPU against the CPU engine.
        nk::Rng rng(31);
        std::vector<double> dy64(c64.x.size());
        for (double& v : dy64) v = rng.normal();
        std::vector<float> dy32(dy64.begin(), dy64.end());
        const size_t taps32 = c32.k.size(), taps64 = c64.k.size();
        std::vector<float> dx_g(c32.x.size()), dk_g(taps32), db_g(static_cast<size_t>(shape.channels));
        std::vector<float> dx_c(c32.x.size()), dk_c(taps32), db_c(static_cast<size_t>(shape.channels));
        grad_cuda(c32.problem(), p32, dy32.data(), dx_g.data(), dk_g.data(), shape.bias ? db_g.data() : nullptr);
        grad(c32.problem(), p32, dy32.data(), dx_c.data(), dk_c.data(), shape.bias ? db_c.data() : nullptr);
        CHECK(relative_error(dx_g, dx_c) <= 1e-5);
        CHECK(relative_error(dk_g, dk_c) <= 1e-5);
        if (shape.bias) CHECK(relative_error(db_g, db_c) <= 1e-5);
        std::vector<double> dx_g64(c64.x.size()), dk_g64(taps64), db_g64(static_cast<size_t>(shape.channels));
        std::vector<double> dx_c64(c64.x.size()), dk_c64(taps64), db_c64(static_cast<size_t>(shape.channels));
        grad_cuda(c64.problem(), p64, dy64.data(), dx_g64.data(), dk_g64.data(), shape.bias ? db_g64.data() : nullptr, 2);
        grad(c64.problem(), p64, dy64.data(), dx_c64.data(), dk_c64.data(), shape.bias ? db_c64.data() : nullptr);
        CHECK(relative_error(dx_g64, dx_c64) <= 1e-12);
        CHECK(relative_error(dk_g64, dk_c64) <= 1e-12);
        if (shape.bias) CHECK(relative_error(db_g64, db_c64) <= 1e-12);
      }
    }
  }
}
