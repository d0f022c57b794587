// shred-unlearn.cpp - SHRED's selection (bottom-P, ties, skip, P = 100,
// random), its demoted targets (gold below every other entry, the others'
// ratios unchanged), every method's loss gradient against finite differences
// through a small model, SHRED untouched by retain rows, the batch order, and
// the metrics (KS against scipy's values, AUC ties, ROUGE-L, Min-K%).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nk/rng.hpp"
#include "shred-unlearn/metrics.hpp"
#include "shred-unlearn/select.hpp"
#include "shred-unlearn/unlearn.hpp"

using namespace shred;

namespace {

nk::lm::Config tiny_config() {
  nk::lm::Config c;
  c.vocab = 48;
  c.d_model = 16;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 8;
  c.d_ff = 24;
  c.max_seq = 32;
  return c;
}

std::vector<Sequence> random_sequences(int64_t n, int64_t vocab, nk::Rng& rng) {
  std::vector<Sequence> out;
  for (int64_t i = 0; i < n; ++i) {
    Sequence s;
    const int64_t len = 9 + static_cast<int64_t>(rng.below(5));
    for (int64_t t = 0; t < len; ++t)
      s.tokens.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab - 4))));
    s.answer_start = 4;
    out.push_back(s);
  }
  return out;
}

}  // namespace

TEST_SUITE("shred-unlearn") {
  TEST_CASE("bottom-P selection: lowest log-probabilities, ties to the earlier position, skip, P = 100") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // positions:              0    1     2     3     4     5     6     7     8     9
    const std::vector<float> lp{nan, -1.0f, -9.0f, -0.5f, -2.0f, -0.1f, -2.0f, -3.0f, -2.0f, -0.2f};
    SelectConfig c;
    c.percent = 50;  // answer 3..9: n = 7 -> floor(3.5 + 0.5) = 4
    CHECK(pick_positions(lp, 3, 10, c, 0) == std::vector<int64_t>{4, 6, 7, 8});
    c.percent = 30;  // floor(2.1 + 0.5) = 2: -3 at 7, then the first -2 (4)
    CHECK(pick_positions(lp, 3, 10, c, 0) == std::vector<int64_t>{4, 7});
    c.percent = 1;  // at least one
    CHECK(pick_positions(lp, 3, 10, c, 0) == std::vector<int64_t>{7});
    c.percent = 100;
    CHECK(pick_positions(lp, 3, 10, c, 0) == std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9});
    c.percent = 30;
    c.skip = 2;  // candidates 5..9: n = 5 -> 2: -3 (7), -2 (6)
    CHECK(pick_positions(lp, 3, 10, c, 0) == std::vector<int64_t>{6, 7});
    c.skip = 7;
    CHECK_THROWS(pick_positions(lp, 3, 10, c, 0));
    c.skip = 0;
    c.pick = Pick::all;
    CHECK(pick_positions(lp, 3, 10, c, 0).size() == 7);
    c.pick = Pick::random;
    const std::vector<int64_t> r = pick_positions(lp, 3, 10, c, 5);
    CHECK(r.size() == 2);
    CHECK(std::is_sorted(r.begin(), r.end()));
    CHECK(r == pick_positions(lp, 3, 10, c, 5));
    for (int64_t p : r) CHECK((p >= 3 && p < 10));
  }

  TEST_CASE("demoted targets: gold below every other entry, the others' ratios kept") {
    const std::vector<float> z{3.0f, 1.5f, 7.0f, -2.0f, 0.25f};
    const auto softmax = [](const std::vector<float>& v) {
      double best = -1e300, s = 0;
      for (float x : v) best = std::max(best, static_cast<double>(x));
      std::vector<double> p;
      for (float x : v) p.push_back(std::isinf(x) ? 0.0 : std::exp(x - best)), s += p.back();
      for (double& x : p) x /= s;
      return p;
    };
    for (const char* mode : {"min", "shift:4", "zero"}) {
      SelectConfig c;
      parse_demote(mode, c);
      std::vector<float> out(z.size());
      demote_logits(z.data(), 5, 2, c, out.data());
      const std::vector<double> p = softmax(out);
      if (std::string(mode) == "min") {
        for (int j : {0, 1, 3, 4}) CHECK(out[2] <= out[static_cast<size_t>(j)] - 1.0f + 1e-6f);
        CHECK(out[2] == doctest::Approx(-3.0));
      }
      if (std::string(mode) == "shift:4") CHECK(out[2] == doctest::Approx(3.0));
      if (std::string(mode) == "zero") CHECK(p[2] == 0.0);
      for (int j : {1, 3, 4})
        CHECK(p[static_cast<size_t>(j)] / p[0] ==
              doctest::Approx(std::exp(z[static_cast<size_t>(j)] - z[0])).epsilon(1e-6));
    }
    SelectConfig c;
    CHECK_THROWS(parse_demote("shift:-1", c));
    CHECK_THROWS(parse_demote("shift:x", c));
    CHECK_THROWS(parse_demote("lower", c));
  }

  TEST_CASE("select: supports hold the gold token, benign targets are the original's distribution on S") {
    nk::lm::ParameterStore w(tiny_config());
    w.init(3);
    nk::Rng rng(11);
    const std::vector<Sequence> seqs = random_sequences(4, 48, rng);
    const nk::lm::Model model(w);
    SelectConfig c;
    c.topk = 6;
    c.percent = 34;
    const Selection s = select(model, seqs, c);
    CHECK(s.forget_positions > 0);
    for (int64_t i = 0; i < s.N; ++i)
      for (int64_t t = 1; t < seqs[static_cast<size_t>(i)].size(); ++t) {
        const size_t at = static_cast<size_t>((i * s.T + t) * s.K);
        const int32_t gold = s.tokens[static_cast<size_t>(i * s.T + t)];
        const auto* sup = s.support.data() + at;
        const int64_t g = std::find(sup, sup + s.K, gold) - sup;
        REQUIRE(g < s.K);
        double total = 0;
        for (int64_t j = 0; j < s.K; ++j) total += s.target[at + static_cast<size_t>(j)];
        CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
        if (s.forget_mask[static_cast<size_t>(i * s.T + t)] == 0) {
          double zs = 0;
          for (int64_t j = 0; j < s.K; ++j) zs += std::exp(s.support_logits[at + static_cast<size_t>(j)]);
          for (int64_t j = 0; j < s.K; ++j)
            CHECK(s.target[at + static_cast<size_t>(j)] ==
                  doctest::Approx(std::exp(s.support_logits[at + static_cast<size_t>(j)]) / zs).epsilon(1e-4));
        } else {
          for (int64_t j = 0; j < s.K; ++j)
            if (j != g) CHECK(s.target[at + static_cast<size_t>(g)] < s.target[at + static_cast<size_t>(j)]);
        }
      }
  }

  TEST_CASE("every method's gradient equals finite differences of its loss") {
    for (Method m : {Method::shred, Method::shred_random, Method::ga, Method::npo}) {
      CAPTURE(method_name(m));
      nk::lm::ParameterStore w(tiny_config());
      w.init(5);
      nk::Rng rng(7);
      UnlearnConfig uc;
      uc.method = m;
      uc.npo_beta = 0.7;  // NPO's sigmoid away from 1/2: its weight matters
      uc.select.topk = 8;
      uc.select.percent = 30;
      uc.select.margin = 0.5;
      Unlearner un(w, random_sequences(3, 48, rng), {}, uc);
      // Move the weights off the original, so NPO's ratio is not 1.
      for (int64_t i = 0; i < w.size(); i += 7) w.data()[i] += 0.01f * static_cast<float>(rng.normal());
      const nk::lm::Model model(w);
      nk::lm::Workspace ws(w.config(), {64, 32, true});
      const std::vector<int64_t> idx{0, 1, 2};
      un.forget_loss(idx, ws, model, 1.0f);
      nk::lm::ParameterStore grads(w.config());
      grads.zero();
      // forget_loss ran the forward on the same batch; backward needs it.
      std::vector<int32_t> tokens;
      std::vector<int64_t> offsets{0};
      nk::Rng again(7);
      const std::vector<Sequence> seqs = random_sequences(3, 48, again);
      for (const Sequence& s : seqs)
        tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end()),
            offsets.push_back(static_cast<int64_t>(tokens.size()));
      model.backward({tokens, offsets}, ws, nk::lm::ParameterMask::all(w), grads);
      std::vector<int64_t> order(static_cast<size_t>(w.size()));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + 6, order.end(),
                        [&](int64_t a, int64_t b) { return std::fabs(grads.data()[a]) > std::fabs(grads.data()[b]); });
      nk::lm::Workspace probe(w.config(), {64, 32, true});
      for (int k = 0; k < 6; ++k) {
        const int64_t i = order[static_cast<size_t>(k)];
        const float keep = w.data()[i], h = 2e-3f;
        w.data()[i] = keep + h;
        const double up = un.forget_loss(idx, probe, model, 1.0f);
        w.data()[i] = keep - h;
        const double down = un.forget_loss(idx, probe, model, 1.0f);
        w.data()[i] = keep;
        const double fd = (up - down) / (2.0 * h);
        CAPTURE(i);
        CHECK(fd == doctest::Approx(grads.data()[i]).epsilon(0.03).scale(1e-3));
      }
    }
  }

  TEST_CASE("SHRED reads no retain rows: the same weights with and without them") {
    nk::lm::ParameterStore a(tiny_config());
    a.init(9);
    nk::lm::ParameterStore b = a;
    nk::Rng r1(4), r2(4), r3(5);
    UnlearnConfig uc;
    uc.steps = 3;
    uc.batch = 2;
    uc.lr = 1e-3;
    uc.select.topk = 8;
    Unlearner with(a, random_sequences(3, 48, r1), random_sequences(5, 48, r3), uc);
    Unlearner without(b, random_sequences(3, 48, r2), {}, uc);
    with.run({});
    without.run({});
    CHECK(std::equal(a.data(), a.data() + a.size(), b.data()));
    UnlearnConfig gd = uc;
    gd.method = Method::graddiff;
    nk::Rng r4(4);
    CHECK_THROWS(Unlearner(b, random_sequences(3, 48, r4), {}, gd));
  }

  TEST_CASE("batches: a permutation per epoch, every item once per epoch") {
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < 5; ++step) {
      const std::vector<int64_t> b = batch_indices(10, 4, step, 3);
      seen.insert(seen.end(), b.begin(), b.end());
    }
    for (int e = 0; e < 2; ++e) {
      std::vector<int64_t> epoch(seen.begin() + e * 10, seen.begin() + (e + 1) * 10);
      std::sort(epoch.begin(), epoch.end());
      std::vector<int64_t> all(10);
      std::iota(all.begin(), all.end(), 0);
      CHECK(epoch == all);
    }
  }

  TEST_CASE("metrics: KS against scipy, AUC with ties, ROUGE-L recall, Min-K%, harmonic mean") {
    const std::vector<double> a{0.345584,  0.821618, 0.330437, -1.303157, 0.905356,  0.446375,  -0.536953,
                                0.581118,  0.364572, 0.294132, 0.028422,  0.546713,  -0.736454, -0.16291,
                                -0.482119, 0.598846, 0.039722, -0.292457, -0.781908, -0.257192};
    const std::vector<double> b{0.808142, 0.524397, 2.094064, 1.806724,  -1.911162, -1.089013, 0.625228,
                                0.37781,  1.013643, 1.017322, 2.917839,  -0.312021, 0.422395,  2.842772,
                                1.446703, 1.463063, 0.285994, -0.848075, 0.967465,  0.909014};
    // scipy 1.10 ks_2samp(a, b): statistic 0.5, pvalue 0.012298612583953778
    const KsResult r = ks_2samp_equal(a, b);
    CHECK(r.statistic == doctest::Approx(0.5));
    CHECK(r.pvalue == doctest::Approx(0.012298612583953778).epsilon(1e-12));
    CHECK(ks_2samp_equal({1, 2, 3}, {1, 2, 3}).pvalue == 1.0);
    CHECK(ks_2samp_equal({1, 2, 3, 4}, {5, 6, 7, 8}).pvalue == doctest::Approx(0.028571428571428577).epsilon(1e-12));
    CHECK_THROWS(ks_2samp_equal({1, 2}, {1, 2, 3}));
    CHECK(auc({3, 2}, {1, 2}) == doctest::Approx((1 + 1 + 1 + 0.5) / 4));
    CHECK(rouge_l_recall("Born in LISBON, 1950!", "he was born in Lisbon in 1950") == doctest::Approx(4.0 / 7));
    CHECK(rouge_words("It's a-b") == std::vector<std::string>{"it", "s", "a", "b"});
    CHECK(rouge_l_recall("anything", "") == 0.0);
    CHECK(min_k_mean({-1, -5, -2, -0.5, -3}, 0.2) == -5.0);
    CHECK(min_k_mean({-1, -5, -2, -0.5, -3, -4, -6, -7, -8, -9}, 0.2) == doctest::Approx(-8.5));
    CHECK(harmonic_mean({0.5, 1.0}) == doctest::Approx(2.0 / 3));
    CHECK(harmonic_mean({0.5, 0.0}) == 0.0);
  }
}
