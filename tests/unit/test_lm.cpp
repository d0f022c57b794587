// test_lm.cpp - nk::lm, first increment: the model's shape, its named weights,
// and the block's element-wise layers against finite differences and against
// properties that hold whatever the implementation (RoPE's relative angles).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "nk/error.hpp"
#include "nk/lm/config.hpp"
#include "nk/lm/layers.hpp"
#include "nk/lm/params.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

std::vector<double> randn(size_t n, uint64_t seed, double scale = 1.0) {
  nk::Rng rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = scale * rng.normal();
  return v;
}

/// d/dv of loss() by central differences at every entry of v (h = 1e-6 in
/// double: truncation ~h^2, rounding ~1e-16/h, both far below the 1e-7 checked).
std::vector<double> numeric_gradient(std::vector<double>& v, const std::function<double()>& loss) {
  std::vector<double> g(v.size());
  const double h = 1e-6;
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = loss();
    v[i] = keep - h;
    const double down = loss();
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-7) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

TEST_SUITE("lm") {
  TEST_CASE("Config: parameter count by hand, absurd shapes refused before allocating") {
    nk::lm::Config c;  // 2048 vocab, d 256, 4 layers, 8 heads, 4 KV heads, head_dim 32, d_ff 704, tied
    const int64_t per_layer = 2 * 256 + 2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 704;
    CHECK(c.parameter_count() == 2048 * 256 + 4 * per_layer + 256);
    c.tied_head = false;
    CHECK(c.parameter_count() == 2 * 2048 * 256 + 4 * per_layer + 256);
    c.validate("test");
    for (const auto& bad : std::vector<std::function<void(nk::lm::Config&)>>{
             [](nk::lm::Config& x) { x.n_kv_heads = 3; },          // 8 heads do not group by 3
             [](nk::lm::Config& x) { x.head_dim = 31; },           // odd: RoPE pairs
             [](nk::lm::Config& x) { x.d_model = 0; },
             [](nk::lm::Config& x) { x.vocab = -5; },
             [](nk::lm::Config& x) { x.rope_theta = 1; },
             [](nk::lm::Config& x) { x.norm_eps = 0; },
             [](nk::lm::Config& x) { x.d_model = 65536, x.n_layers = 1024, x.d_ff = 262144; }}) {
      nk::lm::Config x;
      bad(x);
      CHECK(nk::test::exit_code([&] { x.validate("model.h5"); }) == 2);
      CHECK(nk::test::exit_code([&] { nk::lm::ParameterStore s(x); }) == 2);
    }
  }

  TEST_CASE("ParameterStore: transformers' names and shapes, contiguous, initialised from the seed") {
    nk::lm::Config c;
    c.vocab = 64, c.d_model = 16, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 4, c.d_ff = 40;
    c.tied_head = false;
    nk::lm::ParameterStore p(c);
    CHECK(p.size() == c.parameter_count());
    int64_t next = 0;
    std::set<std::string> names;
    for (const nk::lm::TensorInfo& t : p.tensors()) {
      CHECK(t.offset == next);
      next += t.size;
      names.insert(t.name);
    }
    CHECK(next == p.size());
    CHECK(names.size() == p.tensors().size());
    CHECK(p.info("model.layers.1.self_attn.k_proj.weight").shape == std::vector<int64_t>{8, 16});
    CHECK(p.info("model.layers.0.mlp.down_proj.weight").shape == std::vector<int64_t>{16, 40});
    CHECK(p.info("lm_head.weight").shape == std::vector<int64_t>{64, 16});
    CHECK_FALSE(p.info("model.norm.weight").decay);
    CHECK(nk::test::exit_code([&] { (void)p.tensor("model.layers.9.mlp.up_proj.weight"); }) == 2);
    p.init(5);
    nk::lm::ParameterStore q(c);
    q.init(5);
    CHECK(std::equal(p.data(), p.data() + p.size(), q.data()));
    for (float w : p.tensor("model.layers.0.input_layernorm.weight")) CHECK(w == 1.0f);
    const auto sd = [&](std::string_view name) {
      double s = 0;
      const auto t = p.tensor(name);
      for (float w : t) s += double(w) * w;
      return std::sqrt(s / static_cast<double>(t.size()));
    };
    CHECK(sd("model.embed_tokens.weight") == doctest::Approx(0.02).epsilon(0.1));
    CHECK(sd("model.layers.0.mlp.down_proj.weight") == doctest::Approx(0.01).epsilon(0.1));  // 0.02 / sqrt(2 * 2)
  }

  TEST_CASE("RMSNorm: the formula, and the backward against finite differences") {
    const int64_t n = 3, d = 7;
    std::vector<double> x = randn(n * d, 1), w = randn(d, 2), g = randn(n * d, 3), out(n * d), rstd(n);
    nk::lm::rmsnorm_forward(x.data(), w.data(), n, d, 1e-5, out.data(), rstd.data());
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += x[i] * x[i];
    CHECK(out[2] == doctest::Approx(x[2] / std::sqrt(ss / d + 1e-5) * w[2]).epsilon(1e-14));
    const auto loss = [&] {
      std::vector<double> o(n * d), r(n);
      nk::lm::rmsnorm_forward(x.data(), w.data(), n, d, 1e-5, o.data(), r.data());
      return dot(o, g);
    };
    std::vector<double> dx(n * d), dw(d, 0.0);
    nk::lm::rmsnorm_backward(g.data(), x.data(), w.data(), rstd.data(), n, d, dx.data(), dw.data());
    check_close(dx, numeric_gradient(x, loss));
    check_close(dw, numeric_gradient(w, loss));
    // dweight accumulates: a second call doubles it.
    std::vector<double> dw2 = dw;
    nk::lm::rmsnorm_backward(g.data(), x.data(), w.data(), rstd.data(), n, d, dx.data(), dw2.data());
    for (int64_t i = 0; i < d; ++i) CHECK(dw2[i] == doctest::Approx(2 * dw[i]));
  }

  TEST_CASE("RoPE: position 0 is the identity, norms kept, q.k depends only on the distance, inverse undoes it") {
    const int64_t heads = 2, hd = 8;
    const std::vector<double> q0 = randn(heads * hd, 4), k0 = randn(heads * hd, 5);
    const auto turned = [&](std::vector<double> v, int32_t pos) {
      nk::lm::rope(v.data(), &pos, 1, heads, hd, 10000.0);
      return v;
    };
    check_close(turned(q0, 0), q0, 1e-15);
    const std::vector<double> q7 = turned(q0, 7);
    CHECK(dot(q7, q7) == doctest::Approx(dot(q0, q0)).epsilon(1e-13));
    // Relative position: <R(m) q, R(n) k> per head = <R(m - n) q, k>.
    const std::vector<double> a = turned(q0, 12), b = turned(k0, 5), c = turned(q0, 7);
    for (int64_t h = 0; h < heads; ++h) {
      double ab = 0, ck = 0;
      for (int64_t i = 0; i < hd; ++i) ab += a[h * hd + i] * b[h * hd + i], ck += c[h * hd + i] * k0[h * hd + i];
      CHECK(ab == doctest::Approx(ck).epsilon(1e-12));
    }
    // The rotate-half pairing: with only entries 0 and hd/2 set, the turn stays in that plane.
    std::vector<double> e(heads * hd, 0.0);
    e[0] = 1;
    int32_t one = 1;
    nk::lm::rope(e.data(), &one, 1, heads, hd, 10000.0);
    CHECK(e[0] == doctest::Approx(std::cos(1.0)));
    CHECK(e[hd / 2] == doctest::Approx(std::sin(1.0)));
    // Backward = inverse rotation: finite differences of <rope(x), g> give it.
    const int64_t n = 3;
    std::vector<double> x = randn(n * heads * hd, 6), g = randn(n * heads * hd, 7);
    const std::vector<int32_t> pos = {0, 3, 250};
    const auto loss = [&] {
      std::vector<double> y = x;
      nk::lm::rope(y.data(), pos.data(), n, heads, hd, 500000.0);
      return dot(y, g);
    };
    std::vector<double> dx = g;
    nk::lm::rope(dx.data(), pos.data(), n, heads, hd, 500000.0, true);
    check_close(dx, numeric_gradient(x, loss));
  }

  TEST_CASE("SwiGLU: silu(gate) * up and its backward against finite differences") {
    const int64_t count = 40;
    std::vector<double> gate = randn(count, 8, 3.0), up = randn(count, 9), g = randn(count, 10), out(count);
    nk::lm::swiglu_forward(gate.data(), up.data(), count, out.data());
    CHECK(out[3] == doctest::Approx(gate[3] / (1 + std::exp(-gate[3])) * up[3]).epsilon(1e-14));
    const auto loss = [&] {
      std::vector<double> o(count);
      nk::lm::swiglu_forward(gate.data(), up.data(), count, o.data());
      return dot(o, g);
    };
    std::vector<double> dgate(count), dup(count);
    nk::lm::swiglu_backward(g.data(), gate.data(), up.data(), count, dgate.data(), dup.data());
    check_close(dgate, numeric_gradient(gate, loss));
    check_close(dup, numeric_gradient(up, loss));
    // The float instantiation the model runs agrees with double to float precision.
    std::vector<float> gf(gate.begin(), gate.end()), uf(up.begin(), up.end()), of(count);
    nk::lm::swiglu_forward(gf.data(), uf.data(), count, of.data());
    for (int64_t e = 0; e < count; ++e) CHECK(of[e] == doctest::Approx(out[e]).epsilon(1e-5));
  }
}
