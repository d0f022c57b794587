// test_lm_model.cpp - nk::lm's attention, losses and whole model: backward
// against central finite differences, closed forms, and the model's logits,
// loss and every gradient against an independent PyTorch implementation
// (tests/unit/lm_reference.py, Debian's python3-torch, float64 autograd).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/lm/attention.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/model.hpp"
#include "nk/lm/sparse_attention.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"
#include "../../common/lm/src/dense.hpp"  // white box: the ISA copy in use and its kernels

namespace {

template <class T>
std::vector<T> randn(size_t n, uint64_t seed, double scale = 1.0) {
  nk::Rng rng(seed);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(scale * rng.normal());
  return v;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

/// d loss / d x by central differences (step 1e-6), x restored.
template <class Loss>
std::vector<double> central_differences(std::vector<double>& x, const Loss& loss) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + 1e-6;
    const double up = loss();
    x[i] = keep - 1e-6;
    const double down = loss();
    x[i] = keep;
    g[i] = (up - down) / 2e-6;
  }
  return g;
}

nk::lm::Config tiny(nk::lm::Mode mode, bool tied, int64_t kv_heads) {
  nk::lm::Config c;
  c.mode = mode;
  c.vocab = 61;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = kv_heads;
  c.head_dim = 8;
  c.d_ff = 48;
  c.max_seq = 16;
  c.rope_theta = 500;
  c.tied_head = tied;
  return c;
}

/// The sum of w_r * CE over next-token rows, run through the model: loss, and
/// the gradients in 'grads'.
double model_loss(const nk::lm::Model& model, const nk::lm::TokenBatch& batch, nk::lm::Workspace& ws,
                  const std::vector<int64_t>& rows, const std::vector<int32_t>& targets, const std::vector<float>& weights,
                  const nk::lm::ParameterMask& mask, nk::lm::ParameterStore* grads) {
  model.forward(batch, ws);
  nk::lm::Target t;
  t.token = targets.data();
  const int64_t V = model.config().vocab;
  const double loss = nk::lm::loss_and_grad(nk::lm::Divergence::cross_entropy, ws.logits(), batch.rows(), V, t,
                                            {rows, weights}, nullptr, grads ? ws.dlogits() : nullptr);
  if (grads) model.backward(batch, ws, mask, *grads);
  return loss;
}

struct Fixture {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0, 7, 12, 21};
  std::vector<int64_t> rows;
  std::vector<int32_t> targets;
  std::vector<float> weights;
  explicit Fixture(int64_t vocab) {
    nk::Rng rng(7);
    for (int64_t i = 0; i < offsets.back(); ++i) tokens.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab))));
    // Next-token rows of every segment, with signed weights (unlearning uses negative ones).
    for (size_t s = 0; s + 1 < offsets.size(); ++s)
      for (int64_t r = offsets[s]; r + 1 < offsets[s + 1]; ++r) {
        rows.push_back(r);
        targets.push_back(tokens[static_cast<size_t>(r + 1)]);
        weights.push_back(static_cast<float>(0.5 + rng.uniform() - (r % 5 == 0 ? 1.2 : 0.0)));
      }
  }
  nk::lm::TokenBatch batch() const { return {tokens, offsets, {}}; }
};

/// Writes the model, batch and nk's results, and runs the PyTorch reference on them.
int torch_reference(const nk::lm::ParameterStore& w, const nk::lm::ParameterStore& g, const Fixture& fx,
                    const nk::lm::Workspace& ws, double loss, const std::string& path) {
  const nk::lm::Config& c = w.config();
  {
    nk::h5::Writer out(path, "nk-lm.test-reference/1");
    out.attr("/", "vocab", c.vocab);
    out.attr("/", "d_model", c.d_model);
    out.attr("/", "n_layers", c.n_layers);
    out.attr("/", "n_heads", c.n_heads);
    out.attr("/", "n_kv_heads", c.n_kv_heads);
    out.attr("/", "head_dim", c.head_dim);
    out.attr("/", "d_ff", c.d_ff);
    out.attr("/", "rope_theta", c.rope_theta);
    out.attr("/", "norm_eps", c.norm_eps);
    out.attr("/", "tied_head", int64_t{c.tied_head ? 1 : 0});
    out.attr("/", "causal", int64_t{c.mode == nk::lm::Mode::causal ? 1 : 0});
    if (c.mla()) {
      out.attr("/", "kv_rank", c.kv_rank);
      out.attr("/", "rope_dim", c.rope_dim);
    }
    if (c.sparse) {
      out.attr("/", "sparse_block", c.selector.block);
      out.attr("/", "sparse_init_blocks", c.selector.init_blocks);
      out.attr("/", "sparse_local_blocks", c.selector.local_blocks);
      out.attr("/", "sparse_topk", c.selector.topk);
    }
    for (const auto& t : w.tensors()) {
      out.write("/params/" + t.name, w.data() + t.offset, t.shape, "");
      out.write("/grads/" + t.name, g.data() + t.offset, t.shape, "");
    }
    const int64_t n = static_cast<int64_t>(fx.tokens.size()), R = static_cast<int64_t>(fx.rows.size());
    out.write("/batch/tokens", fx.tokens.data(), {n}, "N");
    out.write("/batch/offsets", fx.offsets.data(), {static_cast<int64_t>(fx.offsets.size())}, "S1");
    out.write("/loss/rows", fx.rows.data(), {R}, "R");
    out.write("/loss/targets", fx.targets.data(), {R}, "R");
    out.write("/loss/weights", fx.weights.data(), {R}, "R");
    out.write("/out/logits", ws.logits(), {n, c.vocab}, "N,V");
    out.write("/out/loss", &loss, {1}, "");
    out.commit();
  }
  const std::string command = "/usr/bin/python3 " NK_SOURCE_DIR "/tests/unit/lm_reference.py " + path;
  return std::system(command.c_str());
}

/// Norm gains away from 1 (so that their gradients and uses are checked),
/// attention projections times 'sharpen'; then the loss and every gradient
/// of the Fixture's batch against the PyTorch reference.
void check_against_torch(nk::lm::ParameterStore& w, const std::string& path, float sharpen = 1.0f) {
  const nk::lm::Config& c = w.config();
  nk::lm::ParameterStore g(c);
  for (const auto& t : w.tensors()) {
    if (t.shape.size() == 1) {
      nk::Rng rng(t.offset);
      for (int64_t i = 0; i < t.size; ++i) w.data()[t.offset + i] = static_cast<float>(1 + 0.3 * rng.normal());
    } else if (sharpen != 1.0f && t.name.find("self_attn") != std::string::npos) {
      for (int64_t i = 0; i < t.size; ++i) w.data()[t.offset + i] *= sharpen;
    }
  }
  const Fixture fx(c.vocab);
  nk::lm::Workspace ws(c, {21, 9, true});
  const nk::lm::Model model(w);
  const double loss = model_loss(model, fx.batch(), ws, fx.rows, fx.targets, fx.weights, nk::lm::ParameterMask::all(w), &g);
  CHECK(std::isfinite(loss));
  CHECK(torch_reference(w, g, fx, ws, loss, path) == 0);
}

}  // namespace

TEST_SUITE("lm_model") {
  TEST_CASE("dense linear: y = x W^T against double sums at every row count (few-row decode path and GEMM)") {
    const nk::lm::DenseOps& ops = nk::lm::dense_ops();
    MESSAGE("dense copy in use: " << std::string(ops.isa));
    for (const int64_t in : {5, 16, 37, 768})
      for (const int64_t out : {1, 3, 66, 257})
        for (const int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33}) {
          const std::vector<float> x = randn<float>(static_cast<size_t>(n * in), 3);
          const std::vector<float> w = randn<float>(static_cast<size_t>(out * in), 4);
          std::vector<float> y(static_cast<size_t>(n * out), std::nanf(""));
          ops.linear(x.data(), w.data(), n, in, out, y.data());
          double worst = 0;
          for (int64_t r = 0; r < n; ++r)
            for (int64_t o = 0; o < out; ++o) {
              double want = 0, scale = 0;
              for (int64_t i = 0; i < in; ++i) {
                want += double(x[r * in + i]) * w[o * in + i];
                scale += std::abs(double(x[r * in + i]) * w[o * in + i]);
              }
              worst = std::max(worst, std::abs(y[r * out + o] - want) / (scale + 1e-30));
            }
          INFO("n=" << n << " in=" << in << " out=" << out);
          CHECK(worst < 1e-5);  // float sums: a few ulps of the absolute sum (bound in * 2^-24)
        }
  }

  TEST_CASE("attention: backward against central finite differences (GQA, causal and bidirectional, packed)") {
    const int64_t H = 4, Hkv = 2, hd = 6;
    const std::vector<int64_t> offsets{0, 5, 8};
    const int64_t N = offsets.back(), S = 2, maxseg = 5;
    for (bool causal : {true, false}) {
      CAPTURE(causal);
      std::vector<double> q = randn<double>(N * H * hd, 1), k = randn<double>(N * Hkv * hd, 2),
                          v = randn<double>(N * Hkv * hd, 3), R = randn<double>(N * H * hd, 4);
      std::vector<double> out(N * H * hd), lse(N * H), scratch(nk::lm::attention_scratch(maxseg));
      const auto loss = [&]() {
        nk::lm::attention_forward(q.data(), k.data(), v.data(), offsets.data(), S, H, Hkv, hd, causal, out.data(),
                                  lse.data(), scratch.data(), maxseg);
        double L = 0;
        for (size_t i = 0; i < out.size(); ++i) L += out[i] * R[i];
        return L;
      };
      loss();
      std::vector<double> dq(q.size()), dk(k.size(), 99.0), dv(v.size(), 99.0);  // 99: dk, dv must be zeroed inside
      nk::lm::attention_backward(R.data(), out.data(), q.data(), k.data(), v.data(), lse.data(), offsets.data(), S, H,
                                 Hkv, hd, causal, dq.data(), dk.data(), dv.data(), scratch.data(), maxseg);
      const auto numeric = [&](std::vector<double>& x) { return central_differences(x, loss); };
      CHECK(max_abs_diff(dq, numeric(q)) < 1e-7);
      CHECK(max_abs_diff(dk, numeric(k)) < 1e-7);
      CHECK(max_abs_diff(dv, numeric(v)) < 1e-7);
      // Causal: the first token of each segment attends to itself only, so its output is its value.
      if (causal)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t e = 0; e < hd; ++e) CHECK(out[5 * H * hd + h * hd + e] == doctest::Approx(v[5 * Hkv * hd + (h / 2) * hd + e]));
    }
  }

  TEST_CASE("loss: closed forms - CE gradient p - onehot, JSD of equal rows 0 and of disjoint ones ln 2") {
    const int64_t V = 5;
    std::vector<float> z{1.0f, -2.0f, 0.5f, 3.0f, 0.0f};
    std::vector<int32_t> y{3};
    std::vector<int64_t> rows{0};
    std::vector<float> d(V);
    nk::lm::Target t;
    t.token = y.data();
    const double ce = nk::lm::loss_and_grad(nk::lm::Divergence::cross_entropy, z.data(), 1, V, t, {rows, {}}, nullptr, d.data());
    double lse = 0;
    for (float x : z) lse += std::exp(static_cast<double>(x));
    lse = std::log(lse);
    CHECK(ce == doctest::Approx(lse - 3.0).epsilon(1e-6));  // exp in float (the vectorised path), the sum in double
    for (int64_t i = 0; i < V; ++i) CHECK(d[i] == doctest::Approx(std::exp(z[i] - lse) - (i == 3 ? 1 : 0)).epsilon(1e-6));
    CHECK(nk::lm::divergence(nk::lm::Divergence::jsd, z.data(), z.data(), V) == doctest::Approx(0).epsilon(1e-12));
    std::vector<float> a{80, -80, -80, -80, -80}, b{-80, -80, -80, 80, -80};
    CHECK(nk::lm::divergence(nk::lm::Divergence::jsd, a.data(), b.data(), V) == doctest::Approx(std::log(2.0)).epsilon(1e-9));
    CHECK(nk::lm::divergence(nk::lm::Divergence::forward_kl, a.data(), b.data(), V) == doctest::Approx(160).epsilon(1e-6));
    // The wrong target kind is refused.
    CHECK(nk::test::exit_code([&] {
            nk::lm::loss_and_grad(nk::lm::Divergence::jsd, z.data(), 1, V, t, {rows, {}}, nullptr, nullptr);
          }) == 2);
  }

  TEST_CASE("loss: every divergence x target kind, with signed weights, against finite differences") {
    const int64_t V = 7, R = 3, K = 3;
    std::vector<float> z = randn<float>(R * V, 11, 2.0), tz = randn<float>(R * V, 12, 2.0);
    std::vector<int64_t> rows{2, 0, 1};
    std::vector<float> w{1.5f, -0.7f, 0.3f};
    // Top-K targets: the target's own top 3 ids, values its log-probabilities (topk_rest) or logits (restricted).
    std::vector<int32_t> ids(R * K);
    std::vector<float> tv(R * K), tlp(R * V);
    nk::lm::top_k(tz.data(), R, V, K, ids.data(), tv.data());
    nk::lm::log_softmax_rows(tz.data(), R, V, tlp.data());
    std::vector<float> tlogp(R * K);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < K; ++j) tlogp[r * K + j] = tlp[r * V + ids[r * K + j]];
    using Kind = nk::lm::Target::Kind;
    for (auto div : {nk::lm::Divergence::forward_kl, nk::lm::Divergence::reverse_kl, nk::lm::Divergence::jsd})
      for (auto kind : {Kind::full, Kind::topk_rest, Kind::restricted}) {
        CAPTURE(static_cast<int>(div));
        CAPTURE(static_cast<int>(kind));
        nk::lm::Target t;
        t.kind = kind;
        t.logits = tz.data();
        t.stride = V;
        t.ids = ids.data();
        t.k = K;
        t.values = kind == Kind::topk_rest ? tlogp.data() : tv.data();
        std::vector<float> d(R * V), per(R);
        const double L = nk::lm::loss_and_grad(div, z.data(), R, V, t, {rows, w}, per.data(), d.data());
        double sum = 0;
        for (int64_t r = 0; r < R; ++r) {
          CHECK(per[r] >= -1e-6);
          sum += w[r] * per[r];
        }
        CHECK(L == doctest::Approx(sum).epsilon(1e-6));
        for (int64_t i = 0; i < R * V; ++i) {
          const float keep = z[i];
          z[i] = keep + 1e-2f;
          const float up_x = z[i];
          const double up = nk::lm::loss_and_grad(div, z.data(), R, V, t, {rows, w}, nullptr, nullptr);
          z[i] = keep - 1e-2f;
          const float down_x = z[i];
          const double down = nk::lm::loss_and_grad(div, z.data(), R, V, t, {rows, w}, nullptr, nullptr);
          z[i] = keep;
          CHECK(d[i] == doctest::Approx((up - down) / (static_cast<double>(up_x) - down_x)).epsilon(1e-3).scale(1e-3));
        }
      }
    // With the whole vocabulary as support, both top-K kinds equal the full target.
    std::vector<int32_t> all(R * V);
    std::vector<float> allv(R * V);
    nk::lm::top_k(tz.data(), R, V, V, all.data(), allv.data());
    std::vector<float> alllp(R * V);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < V; ++j) alllp[r * V + j] = tlp[r * V + all[r * V + j]];
    nk::lm::Target full;
    full.kind = Kind::full;
    full.logits = tz.data();
    full.stride = V;
    nk::lm::Target rest = full, restricted = full;
    rest.kind = Kind::topk_rest, rest.ids = all.data(), rest.values = alllp.data(), rest.k = V;
    restricted.kind = Kind::restricted, restricted.ids = all.data(), restricted.values = allv.data(), restricted.k = V;
    const double f = nk::lm::loss_and_grad(nk::lm::Divergence::jsd, z.data(), R, V, full, {rows, w}, nullptr, nullptr);
    CHECK(nk::lm::loss_and_grad(nk::lm::Divergence::jsd, z.data(), R, V, rest, {rows, w}, nullptr, nullptr) ==
          doctest::Approx(f).epsilon(1e-5));
    CHECK(nk::lm::loss_and_grad(nk::lm::Divergence::jsd, z.data(), R, V, restricted, {rows, w}, nullptr, nullptr) ==
          doctest::Approx(f).epsilon(1e-5));
  }

  TEST_CASE("top_k: descending, ties to the lower id, a forced id takes the K-th place; next-token log-probabilities") {
    std::vector<float> z{0, 3, 1, 3, 2, 0};
    std::vector<int32_t> ids(3);
    std::vector<float> vals(3);
    nk::lm::top_k(z.data(), 1, 6, 3, ids.data(), vals.data());
    CHECK(ids == std::vector<int32_t>{1, 3, 4});
    const int32_t force = 5;
    nk::lm::top_k(z.data(), 1, 6, 3, ids.data(), vals.data(), &force);
    CHECK(ids == std::vector<int32_t>{1, 3, 5});
    CHECK(vals[2] == 0.0f);
    const int32_t kept = 3;
    nk::lm::top_k(z.data(), 1, 6, 3, ids.data(), vals.data(), &kept);
    CHECK(ids == std::vector<int32_t>{1, 3, 4});
    // Two segments of 2 and 1 tokens over V = 3.
    std::vector<float> logits{0, 0, 0, 1, 2, 3, 5, 5, 5};
    std::vector<int32_t> tok{0, 2, 1};
    std::vector<int64_t> off{0, 2, 3};
    std::vector<float> lp(3);
    nk::lm::next_token_logprob(logits.data(), 3, {tok, off, {}}, lp.data());
    CHECK(std::isnan(lp[0]));
    CHECK(lp[1] == doctest::Approx(-std::log(3.0)));
    CHECK(std::isnan(lp[2]));
  }

  TEST_CASE("model: logits, loss and every gradient equal an independent PyTorch Llama to 1e-4 relative") {
    nk::test::ScratchDir dir;
    struct Case { nk::lm::Mode mode; bool tied; int64_t kv; };
    for (const Case& k : {Case{nk::lm::Mode::causal, false, 2}, Case{nk::lm::Mode::diffusion, true, 4}}) {
      CAPTURE(static_cast<int>(k.mode));
      const nk::lm::Config c = tiny(k.mode, k.tied, k.kv);
      nk::lm::ParameterStore w(c);
      w.init(3);
      check_against_torch(w, dir.file("ref.h5"));
    }
  }

  TEST_CASE("sparse-gqa model: logits, loss and every gradient equal an independent PyTorch block-sparse Llama") {
    nk::test::ScratchDir dir;
    nk::lm::Config c = tiny(nk::lm::Mode::causal, false, 2);
    c.sparse = true;
    c.selector = {2, 1, 1, 1};  // 2-token blocks: the 9-token segment's last queries choose 1 of 3 free blocks
    nk::lm::ParameterStore w(c);
    w.init(3);
    check_against_torch(w, dir.file("sparse.h5"), 15.0f);
  }

  TEST_CASE("sparse attention: the selection of a packed batch is the selector's on each segment") {
    const int64_t H = 4, Hkv = 2, hd = 6;
    const nk::lm::BlockSelectorConfig c{3, 1, 1, 2};
    const std::vector<int64_t> offsets{0, 17, 30};
    const int64_t N = offsets.back();
    const std::vector<float> q = randn<float>(N * H * hd, 11), k = randn<float>(N * Hkv * hd, 12);
    std::vector<int32_t> sel(static_cast<size_t>(N * Hkv * c.width()), 7);
    nk::lm::select_batch(c, q.data(), k.data(), offsets.data(), 2, H, Hkv, hd, sel.data());
    for (int64_t s = 0; s < 2; ++s) {
      const int64_t b = offsets[s], n = offsets[s + 1] - b, nb = n / c.block;
      // Head-major copies, through the capture layout's functions.
      std::vector<float> qh(static_cast<size_t>(H * n * hd)), kh(static_cast<size_t>(Hkv * n * hd));
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < H; ++h)
          for (int64_t e = 0; e < hd; ++e) qh[(h * n + t) * hd + e] = q[((b + t) * H + h) * hd + e];
        for (int64_t h = 0; h < Hkv; ++h)
          for (int64_t e = 0; e < hd; ++e) kh[(h * n + t) * hd + e] = k[((b + t) * Hkv + h) * hd + e];
      }
      std::vector<float> pooled(static_cast<size_t>(Hkv * nb * hd));
      nk::lm::pool_keys(kh.data(), Hkv, n, hd, c.block, pooled.data());
      std::vector<double> sc(static_cast<size_t>(nb + 1)), scratch(static_cast<size_t>(nb + 1));
      std::vector<int32_t> want(static_cast<size_t>(c.width()));
      for (int64_t t = 0; t < n; ++t)
        for (int64_t g = 0; g < Hkv; ++g) {
          nk::lm::group_scores(c, qh.data(), H, n, t, pooled.data(), Hkv, nb, hd, g, sc.data(), scratch.data());
          nk::lm::select_blocks(c, t, sc.data(), want.data());
          for (int64_t e = 0; e < c.width(); ++e) CHECK(sel[((b + t) * Hkv + g) * c.width() + e] == want[e]);
        }
    }
  }

  TEST_CASE("sparse attention: forward = the softmax over each query's selected keys; backward = finite differences") {
    const int64_t H = 4, Hkv = 2, hd = 6, G = H / Hkv;
    const nk::lm::BlockSelectorConfig c{3, 1, 1, 2};
    const std::vector<int64_t> offsets{0, 17, 30, 31};  // a one-token segment too
    const int64_t N = offsets.back(), S = 3, W = c.width();
    std::vector<double> q = randn<double>(N * H * hd, 1), k = randn<double>(N * Hkv * hd, 2),
                        v = randn<double>(N * Hkv * hd, 3), R = randn<double>(N * H * hd, 4);
    std::vector<int32_t> sel(static_cast<size_t>(N * Hkv * W));
    {
      const std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end());
      nk::lm::select_batch(c, qf.data(), kf.data(), offsets.data(), S, H, Hkv, hd, sel.data());
    }
    std::vector<double> out(N * H * hd), lse(N * H);
    nk::lm::sparse_attention_forward(c, sel.data(), q.data(), k.data(), v.data(), offsets.data(), S, H, Hkv, hd,
                                     out.data(), lse.data());
    // Reference: one query at a time over the keys of its blocks.
    double worst = 0;
    int64_t sparse_rows = 0;
    for (int64_t s = 0; s < S; ++s)
      for (int64_t t = 0; t < offsets[s + 1] - offsets[s]; ++t) {
        const int64_t row = offsets[s] + t;
        for (int64_t h = 0; h < H; ++h) {
          const int64_t g = h / G;
          std::vector<int64_t> keys;
          for (int64_t e = 0; e < W; ++e) {
            const int32_t blk = sel[(row * Hkv + g) * W + e];
            if (blk < 0) continue;
            for (int64_t j = blk * c.block; j < (blk + 1) * c.block && j <= t; ++j) keys.push_back(j);
          }
          if (static_cast<int64_t>(keys.size()) < t + 1) ++sparse_rows;
          std::vector<double> p;
          double most = -INFINITY, sum = 0;
          for (int64_t j : keys) {
            double dot = 0;
            for (int64_t e = 0; e < hd; ++e) dot += q[(row * H + h) * hd + e] * k[((offsets[s] + j) * Hkv + g) * hd + e];
            p.push_back(dot / std::sqrt(double(hd)));
            most = std::max(most, p.back());
          }
          for (double& x : p) sum += (x = std::exp(x - most));
          for (int64_t e = 0; e < hd; ++e) {
            double o = 0;
            for (size_t i = 0; i < keys.size(); ++i) o += p[i] / sum * v[((offsets[s] + keys[i]) * Hkv + g) * hd + e];
            worst = std::max(worst, std::abs(o - out[(row * H + h) * hd + e]));
          }
          worst = std::max(worst, std::abs(most + std::log(sum) - lse[row * H + h]));
        }
      }
    CHECK(worst < 1e-12);
    CHECK(sparse_rows > 20);  // the pattern is sparse for most late queries
    const auto loss = [&]() {
      nk::lm::sparse_attention_forward(c, sel.data(), q.data(), k.data(), v.data(), offsets.data(), S, H, Hkv, hd,
                                       out.data(), lse.data());
      double L = 0;
      for (size_t i = 0; i < out.size(); ++i) L += out[i] * R[i];
      return L;
    };
    loss();
    std::vector<double> dq(q.size(), 99.0), dk(k.size(), 99.0), dv(v.size(), 99.0);  // overwritten inside
    nk::lm::sparse_attention_backward(c, sel.data(), R.data(), out.data(), q.data(), k.data(), v.data(), lse.data(),
                                      offsets.data(), S, H, Hkv, hd, dq.data(), dk.data(), dv.data());
    const auto numeric = [&](std::vector<double>& x) { return central_differences(x, loss); };
    CHECK(max_abs_diff(dq, numeric(q)) < 1e-7);
    CHECK(max_abs_diff(dk, numeric(k)) < 1e-7);
    CHECK(max_abs_diff(dv, numeric(v)) < 1e-7);
  }

  TEST_CASE("sparse attention: with every block selected it is dense causal attention (70 queries: two tiles)") {
    const int64_t H = 4, Hkv = 2, hd = 8;
    const nk::lm::BlockSelectorConfig c{4, 1, 2, 64};
    const std::vector<int64_t> offsets{0, 70, 75};
    const int64_t N = offsets.back(), maxseg = 70;
    const std::vector<float> q = randn<float>(N * H * hd, 5), k = randn<float>(N * Hkv * hd, 6),
                             v = randn<float>(N * Hkv * hd, 7), R = randn<float>(N * H * hd, 8);
    std::vector<int32_t> sel(static_cast<size_t>(N * Hkv * c.width()));
    nk::lm::select_batch(c, q.data(), k.data(), offsets.data(), 2, H, Hkv, hd, sel.data());
    std::vector<float> out(N * H * hd), lse(N * H), out2(out.size()), lse2(lse.size());
    std::vector<float> scratch(static_cast<size_t>(nk::lm::attention_scratch(maxseg)));
    nk::lm::sparse_attention_forward(c, sel.data(), q.data(), k.data(), v.data(), offsets.data(), 2, H, Hkv, hd,
                                     out.data(), lse.data());
    nk::lm::attention_forward(q.data(), k.data(), v.data(), offsets.data(), 2, H, Hkv, hd, true, out2.data(),
                              lse2.data(), scratch.data(), maxseg);
    const auto worst = [](const std::vector<float>& a, const std::vector<float>& b) {
      double w = 0;
      for (size_t i = 0; i < a.size(); ++i) w = std::max(w, double(std::abs(a[i] - b[i])));
      return w;
    };
    CHECK(worst(out, out2) < 1e-5);
    CHECK(worst(lse, lse2) < 1e-5);
    std::vector<float> dq(q.size()), dk(k.size()), dv(v.size()), dq2(q.size()), dk2(k.size()), dv2(v.size());
    nk::lm::sparse_attention_backward(c, sel.data(), R.data(), out.data(), q.data(), k.data(), v.data(), lse.data(),
                                      offsets.data(), 2, H, Hkv, hd, dq.data(), dk.data(), dv.data());
    nk::lm::attention_backward(R.data(), out2.data(), q.data(), k.data(), v.data(), lse2.data(), offsets.data(), 2, H,
                               Hkv, hd, true, dq2.data(), dk2.data(), dv2.data(), scratch.data(), maxseg);
    CHECK(worst(dq, dq2) < 1e-4);
    CHECK(worst(dk, dk2) < 1e-4);
    CHECK(worst(dv, dv2) < 1e-4);
    CHECK(nk::lm::sparse_keys_per_query(c, 70) == doctest::Approx(35.5));  // every key: (1 + ... + 70) / 70
  }

  TEST_CASE("mla model: logits, loss and every gradient equal an independent PyTorch MLA to 1e-4 relative") {
    nk::test::ScratchDir dir;
    for (const nk::lm::Mode mode : {nk::lm::Mode::causal, nk::lm::Mode::diffusion}) {
      CAPTURE(static_cast<int>(mode));
      nk::lm::Config c = tiny(mode, mode == nk::lm::Mode::diffusion, 4);
      c.attention = nk::lm::AttentionKind::mla;
      c.head_dim = 10;  // nope 6 + rope 4
      c.rope_dim = 4;
      c.kv_rank = 12;
      nk::lm::ParameterStore w(c);
      CHECK(w.size() == c.parameter_count());
      w.init(3);
      // Larger attention projections than the init's 0.02, so that attention is far from uniform.
      check_against_torch(w, dir.file("mla.h5"), 15.0f);
    }
    // Shapes that cannot be: usage errors naming the field.
    nk::lm::Config bad = tiny(nk::lm::Mode::causal, true, 2);
    bad.attention = nk::lm::AttentionKind::mla;
    bad.kv_rank = 8, bad.rope_dim = 4;
    CHECK(nk::test::exit_code([&] { bad.validate("x"); }) == 2);  // n_kv_heads != n_heads
    bad.n_kv_heads = bad.n_heads;
    CHECK(nk::test::exit_code([&] { bad.validate("x"); }) == 0);
    bad.rope_dim = 3;
    CHECK(nk::test::exit_code([&] { bad.validate("x"); }) == 2);
    bad.rope_dim = 8;  // = head_dim: no content part
    CHECK(nk::test::exit_code([&] { bad.validate("x"); }) == 2);
  }

  TEST_CASE("model: frozen tensors get no gradient and the rest are unchanged; inference workspace, packing") {
    const nk::lm::Config c = tiny(nk::lm::Mode::causal, true, 2);
    nk::lm::ParameterStore w(c), g_all(c), g_frozen(c);
    w.init(5);
    const Fixture fx(c.vocab);
    const nk::lm::Model model(w);
    nk::lm::Workspace ws(c, {21, 9, true});
    const double a = model_loss(model, fx.batch(), ws, fx.rows, fx.targets, fx.weights, nk::lm::ParameterMask::all(w), &g_all);
    nk::lm::ParameterMask mask = nk::lm::ParameterMask::all(w);
    CHECK(mask.freeze("model.layers.0.*") == 9);
    CHECK(mask.freeze("model.embed_tokens.weight") == 1);
    CHECK_FALSE(mask.trainable("model.layers.0.mlp.up_proj.weight"));
    CHECK(mask.trainable("model.layers.1.mlp.up_proj.weight"));
    const double b = model_loss(model, fx.batch(), ws, fx.rows, fx.targets, fx.weights, mask, &g_frozen);
    CHECK(a == b);
    for (size_t t = 0; t < w.tensors().size(); ++t) {
      const auto& info = w.tensors()[t];
      CAPTURE(info.name);
      for (int64_t i = 0; i < info.size; ++i) {
        const float expect = mask.trainable(t) ? g_all.data()[info.offset + i] : 0.0f;
        REQUIRE(g_frozen.data()[info.offset + i] == expect);
      }
    }
    // An inference workspace (one layer's buffers) gives the same logits; each
    // segment run alone gives the same logits as the packed batch.
    std::vector<float> packed(ws.logits(), ws.logits() + 21 * c.vocab);
    nk::lm::Workspace inf(c, {21, 9, false});
    model.forward(fx.batch(), inf);
    CHECK(std::equal(packed.begin(), packed.end(), inf.logits()));
    for (size_t s = 0; s + 1 < fx.offsets.size(); ++s) {
      const int64_t b0 = fx.offsets[s], n = fx.offsets[s + 1] - b0;
      std::vector<int32_t> tok(fx.tokens.begin() + b0, fx.tokens.begin() + b0 + n);
      std::vector<int64_t> off{0, n};
      model.forward({tok, off, {}}, inf);
      for (int64_t i = 0; i < n * c.vocab; ++i) REQUIRE(inf.logits()[i] == doctest::Approx(packed[b0 * c.vocab + i]).epsilon(1e-5));
    }
    // Over the limits, or outside the vocabulary: usage errors before any work.
    std::vector<int32_t> bad{0, 61};
    std::vector<int64_t> off{0, 2};
    CHECK(nk::test::exit_code([&] { model.forward({bad, off, {}}, inf); }) == 2);
    CHECK(nk::test::exit_code([&] { nk::lm::Workspace too_long(c, {8, 17, false}); }) == 2);
  }
}
