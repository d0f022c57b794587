// ssd-distill.cpp - the task generators (counts, answers in their documents,
// no test question among the training questions, the eval and warm-up pools
// disjoint), the switch rule and the loss at each position (identical rows,
// near-disjoint supports, logits of +-80, the gradient against central
// differences), and the answer scoring.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "nk/lm/answers.hpp"
#include "nk/lm/qa.hpp"
#include "nk/lm/train.hpp"
#include "nk/rng.hpp"
#include "ssd-distill/rollout.hpp"
#include "ssd-distill/ssd.hpp"

using namespace ssd;

namespace {

Tasks make(const std::string& task, Pool pool, int64_t docs, uint64_t seed = 1) {
  TaskSpec spec;
  spec.task = task;
  spec.docs = docs;
  spec.seed = seed;
  spec.pool = pool;
  return generate_tasks(spec);
}

std::set<std::string> questions(const QaSplit& s) {
  return {s.question.begin(), s.question.end()};
}

/// Capitalised words of the documents, without the templates' own.
std::set<std::string> names(const Tasks& t) {
  static const std::set<std::string> fixed = {"Memo",      "The",     "It",       "We",      "January", "February",
                                              "March",     "April",   "May",      "June",    "July",    "August",
                                              "September", "October", "November", "December"};
  std::set<std::string> out;
  for (const std::string& d : t.docs) {
    std::string w;
    for (char c : d + " ") {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        w += c;
      } else {
        if (!w.empty() && std::isupper(static_cast<unsigned char>(w[0])) && !fixed.count(w)) out.insert(w);
        w.clear();
      }
    }
  }
  return out;
}

std::set<std::string> quoted(const Tasks& t) {
  std::set<std::string> out;
  for (const std::string& q : t.train.question) {
    const size_t a = q.find('\''), b = q.rfind('\'');
    if (a != std::string::npos && b > a) out.insert(q.substr(a + 1, b - a - 1));
  }
  return out;
}

std::vector<float> random_logits(int64_t n, double scale, nk::Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(scale * rng.normal());
  return v;
}

}  // namespace

TEST_SUITE("ssd-distill") {
  TEST_CASE("memo: 7 facts a document, two training wordings and one held out; answers in the document") {
    const Tasks t = make("memo", Pool::eval, 5);
    CHECK(t.size() == 5);
    CHECK(t.train.size() == 5 * 14);
    CHECK(t.test.size() == 5 * 7);
    const std::set<std::string> train = questions(t.train);
    for (int64_t i = 0; i < t.test.size(); ++i) {
      CHECK(train.count(t.test.question[static_cast<size_t>(i)]) == 0);
      const std::string& doc = t.docs[static_cast<size_t>(t.test.doc[static_cast<size_t>(i)])];
      CHECK(doc.find(t.test.answer[static_cast<size_t>(i)]) != std::string::npos);
    }
    // Same seed, same tasks; another seed, other names.
    CHECK(make("memo", Pool::eval, 5).docs == t.docs);
    CHECK(make("memo", Pool::eval, 5, 2).docs != t.docs);
  }

  TEST_CASE("update: held-out glosses and contradicted words; skill: the rule applied to new inputs") {
    const Tasks u = make("update", Pool::eval, 4);
    CHECK(u.train.size() == 4 * 4 * 2);
    CHECK(u.test.size() == 4 * 4);
    for (int64_t i = 0; i < u.test.size(); ++i) {
      const std::string& doc = u.docs[static_cast<size_t>(u.test.doc[static_cast<size_t>(i)])];
      CHECK(doc.find(u.test.answer[static_cast<size_t>(i)]) != std::string::npos);
    }
    CHECK(u.docs[0].find("From now on") != std::string::npos);

    const Tasks s = make("skill", Pool::eval, 6);
    CHECK(s.train.size() == 6 * 8);
    CHECK(s.test.size() == 6 * 3);
    const std::set<std::string> train = questions(s.train);
    for (const std::string& q : s.test.question) CHECK(train.count(q) == 0);
    // The test inputs are new: no test answer is a training answer of its document.
    for (int64_t i = 0; i < s.test.size(); ++i)
      for (int64_t j = 0; j < s.train.size(); ++j)
        if (s.train.doc[static_cast<size_t>(j)] == s.test.doc[static_cast<size_t>(i)])
          CHECK(s.train.answer[static_cast<size_t>(j)] != s.test.answer[static_cast<size_t>(i)]);
    // A unit conversion's answer is the product.
    for (int64_t i = 0; i < s.train.size(); ++i) {
      const std::string& q = s.train.question[static_cast<size_t>(i)];
      if (q.rfind("How many", 0) != 0) continue;
      const std::string& doc = s.docs[static_cast<size_t>(s.train.doc[static_cast<size_t>(i)])];
      const int64_t k = std::stoll(doc.substr(doc.find(" is ") + 4));
      const size_t at = q.find(" are ") + 5;
      const int64_t n = std::stoll(q.substr(at));
      CHECK(std::stoll(s.train.answer[static_cast<size_t>(i)]) == k * n);
    }
  }

  TEST_CASE("the warm-up pool shares no name, word or rule with the eval pool") {
    for (uint64_t seed : {1, 2, 3}) {
      std::set<std::string> a = names(make("memo", Pool::eval, 20, seed)),
                            b = names(make("memo", Pool::warmup, 20, seed));
      for (const std::string& w : a) CHECK_MESSAGE(b.count(w) == 0, w);
      a = quoted(make("update", Pool::eval, 20, seed));
      b = quoted(make("update", Pool::warmup, 20, seed));
      for (const std::string& w : a) CHECK_MESSAGE(b.count(w) == 0, w);
      const Tasks se = make("skill", Pool::eval, 12, seed), sw = make("skill", Pool::warmup, 12, seed);
      const std::set<std::string> de(se.docs.begin(), se.docs.end());
      for (const std::string& d : sw.docs) CHECK(de.count(d) == 0);
    }
  }

  TEST_CASE("switch rule and loss: identical rows, near-disjoint supports, large logits") {
    const int64_t V = 6;
    nk::Rng rng(7);
    std::vector<float> s = random_logits(3 * V, 2.0, rng), t = s;
    // Row 1: near-disjoint supports (JSD -> ln 2); row 2: logits of +-80.
    for (int64_t v = 0; v < V; ++v) {
      s[static_cast<size_t>(V + v)] = v == 0 ? 80.0f : -80.0f;
      t[static_cast<size_t>(V + v)] = v == 1 ? 80.0f : -80.0f;
      s[static_cast<size_t>(2 * V + v)] = (v % 2 ? 80.0f : -80.0f);
      t[static_cast<size_t>(2 * V + v)] = (v % 3 ? -80.0f : 79.0f);
    }
    std::vector<double> delta(3), loss(3);
    std::vector<int8_t> writer(3);
    std::vector<float> grad(static_cast<size_t>(3 * V));
    positions({nk::lm::Divergence::jsd, 0.3}, nk::lm::Divergence::jsd, s.data(), t.data(), 3, V, delta.data(),
              writer.data(), loss.data(), grad.data());
    CHECK(delta[0] == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(writer[0] == 0);
    CHECK(loss[0] == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(delta[1] == doctest::Approx(std::log(2.0)).epsilon(1e-9));
    CHECK(writer[1] == 1);
    for (double d : delta) CHECK(std::isfinite(d));
    for (float g : grad) CHECK(std::isfinite(g));
    // tau >= ln 2: the student writes everywhere (JSD <= ln 2).
    positions({nk::lm::Divergence::jsd, std::log(2.0)}, nk::lm::Divergence::forward_kl, s.data(), t.data(), 3, V,
              delta.data(), writer.data(), loss.data(), nullptr);
    for (int8_t w : writer) CHECK(w == 0);
  }

  TEST_CASE("the loss's gradient against central differences (fkl, rkl, jsd)") {
    const int64_t N = 3, V = 7;
    nk::Rng rng(11);
    const std::vector<float> t = random_logits(N * V, 1.5, rng);
    std::vector<float> s = random_logits(N * V, 1.5, rng);
    for (const char* name : {"fkl", "rkl", "jsd"}) {
      const nk::lm::Divergence d = parse_divergence(name);
      std::vector<double> delta(N), loss(N);
      std::vector<int8_t> writer(N);
      std::vector<float> grad(static_cast<size_t>(N * V));
      positions({d, 0.3}, d, s.data(), t.data(), N, V, delta.data(), writer.data(), loss.data(), grad.data());
      double worst = 0;
      for (int64_t i = 0; i < N * V; ++i) {
        const float keep = s[static_cast<size_t>(i)];
        const double h = 1e-2;
        std::vector<double> lp(N), lm(N);
        s[static_cast<size_t>(i)] = static_cast<float>(keep + h);
        positions({d, 0.3}, d, s.data(), t.data(), N, V, delta.data(), writer.data(), lp.data(), nullptr);
        s[static_cast<size_t>(i)] = static_cast<float>(keep - h);
        positions({d, 0.3}, d, s.data(), t.data(), N, V, delta.data(), writer.data(), lm.data(), nullptr);
        s[static_cast<size_t>(i)] = keep;
        const int64_t r = i / V;
        const double fd = (lp[static_cast<size_t>(r)] - lm[static_cast<size_t>(r)]) / (2 * h);
        worst = std::max(worst, std::abs(fd - grad[static_cast<size_t>(i)]));
      }
      CHECK_MESSAGE(worst < 2e-4, name << ": worst gradient error " << worst);
    }
  }

  TEST_CASE("answer scoring: normalisation, exact match, word F1") {
    CHECK(nk::lm::answer_words("It's 4,300 Crowns!") == std::vector<std::string>{"it", "s", "4", "300", "crowns"});
    CHECK(nk::lm::exact_match("12 March 2031.", "12 march 2031"));
    CHECK_FALSE(nk::lm::exact_match("12 March", "12 march 2031"));
    CHECK(nk::lm::word_f1("a b b c", "b b d") == doctest::Approx(2 * (2.0 / 4) * (2.0 / 3) / (2.0 / 4 + 2.0 / 3)));
    CHECK(nk::lm::word_f1("", "x") == 0.0);
    CHECK(nk::lm::word_f1("", "") == 1.0);
  }
}

namespace {

struct Shipped {
  nk::lm::CausalModel m = nk::lm::load_causal_model(std::string(NK_SOURCE_DIR) + "/data/lm/causal.h5");
  nk::lm::Model model{m.checkpoint.weights};
};

std::vector<Rollout> rollouts(const Shipped& s, const Tasks& t, RolloutConfig c, int64_t n) {
  Roller roller(s.model, s.model, s.m.tokenizer(), c);
  std::vector<Rollout> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(roller.run(t.train.question[static_cast<size_t>(i)], t.train.doc[static_cast<size_t>(i)],
                             t.docs[static_cast<size_t>(t.train.doc[static_cast<size_t>(i)])],
                             static_cast<uint64_t>(i)));
  return out;
}

}  // namespace

TEST_SUITE("ssd-distill") {
  TEST_CASE(
      "rollouts: speculative ssd equals token by token; tau 0 is the teacher's rollout, tau >= ln 2 the student's") {
    const Shipped s;
    const Tasks t = make("memo", Pool::eval, 2);
    RolloutConfig c;
    c.max_new = 12;
    c.seed = 5;
    c.rule = {nk::lm::Divergence::jsd, 0.005};  // the shipped model barely reads its context: small deltas
    c.method = Method::ssd;
    c.chunk = 0;
    const std::vector<Rollout> plain = rollouts(s, t, c, 6);
    int64_t teacher = 0, total = 0;
    for (int64_t chunk : {1, 3, 5}) {
      c.chunk = chunk;
      const std::vector<Rollout> spec = rollouts(s, t, c, 6);
      for (size_t i = 0; i < plain.size(); ++i) {
        CHECK(spec[i].tokens == plain[i].tokens);
        CHECK(spec[i].writer == plain[i].writer);
        CHECK(spec[i].delta == plain[i].delta);
        // Dropped drafts cost the teacher more forward tokens, never fewer.
        CHECK(spec[i].teacher_forward >= plain[i].teacher_forward);
      }
    }
    for (const Rollout& r : plain) {
      for (int8_t w : r.writer) teacher += w;
      total += r.size();
      CHECK(r.student_logits.size() == static_cast<size_t>(r.size() * s.model.config().vocab));
      for (size_t j = 0; j < r.writer.size(); ++j) CHECK((r.writer[j] == 1) == (r.delta[j] > 0.005));
    }
    CHECK(teacher > 0);
    CHECK(teacher < total);  // a real mix at this tau

    c.chunk = 4;
    c.rule.tau = 0;
    const std::vector<Rollout> t0 = rollouts(s, t, c, 4);
    c.method = Method::off_fkl;
    const std::vector<Rollout> off = rollouts(s, t, c, 4);
    c.method = Method::ssd;
    c.rule.tau = std::log(2.0);
    const std::vector<Rollout> ln2 = rollouts(s, t, c, 4);
    c.method = Method::on_policy;
    const std::vector<Rollout> on = rollouts(s, t, c, 4);
    for (size_t i = 0; i < 4; ++i) {
      CHECK(t0[i].tokens == off[i].tokens);
      CHECK(ln2[i].tokens == on[i].tokens);
      CHECK(std::all_of(on[i].writer.begin(), on[i].writer.end(), [](int8_t w) { return w == 0; }));
      CHECK(std::all_of(off[i].writer.begin(), off[i].writer.end(), [](int8_t w) { return w == 1; }));
      // The model that did not write scored the rollout afterwards: both distributions at every position.
      CHECK(on[i].teacher_logits.size() == on[i].tokens.size() * static_cast<size_t>(s.model.config().vocab));
      CHECK(off[i].student_logits.size() == off[i].tokens.size() * static_cast<size_t>(s.model.config().vocab));
    }
  }

  TEST_CASE("sweep: the grid of runs (off-sft once per seed, the others per loss, ssd per loss and tau)") {
    SweepOptions o;
    o.taus = {0.1, 0.3};
    o.losses = {"fkl", "rkl"};
    o.seeds = 2;
    const std::vector<SweepRun> g = sweep_grid(o);
    CHECK(g.size() == 2 * (1 + 2 + 2 + 2 + 2 * 2));
    CHECK(g[0].method == "off-sft");
    CHECK(g[0].loss == "ce");
    CHECK(std::isnan(g[0].tau));
    int64_t ssd_runs = 0;
    for (const SweepRun& r : g) {
      if (r.method == "ssd") {
        ++ssd_runs;
        CHECK((r.tau == 0.1 || r.tau == 0.3));
      }
      if (r.method != "ssd") CHECK(std::isnan(r.tau));
    }
    CHECK(ssd_runs == 8);
    CHECK(g.back().seed == 1);
    o.methods = {"ssd"};
    o.losses = {"fkl"};
    o.seeds = 1;
    CHECK(sweep_grid(o).size() == 2);
  }

  TEST_CASE("rollouts decoded side by side (lanes) equal the same rollouts one at a time, for every method") {
    const Shipped s;
    const Tasks t = make("memo", Pool::eval, 3);
    RolloutConfig c;
    c.max_new = 10;
    c.seed = 11;
    c.rule = {nk::lm::Divergence::jsd, 0.005};
    std::vector<RolloutRequest> requests;
    for (int64_t i = 0; i < 7; ++i) {
      const size_t u = static_cast<size_t>(i);
      requests.push_back({&t.train.question[u], t.train.doc[u], &t.docs[static_cast<size_t>(t.train.doc[u])],
                          static_cast<uint64_t>(i)});
    }
    for (const Method m : {Method::off_sft, Method::off_fkl, Method::on_policy, Method::skd, Method::ssd}) {
      for (const int64_t chunk : {int64_t{0}, int64_t{3}}) {
        if (chunk > 0 && m != Method::ssd) continue;
        c.method = m;
        c.chunk = chunk;
        c.skd_topk = 5;
        const std::vector<Rollout> one = rollouts(s, t, c, 7);
        Roller side(s.model, s.model, s.m.tokenizer(), c, 3);  // groups of 3, 3 and 1
        const std::vector<Rollout> many = side.run_batch(requests);
        REQUIRE(many.size() == one.size());
        for (size_t i = 0; i < one.size(); ++i) {
          CAPTURE(method_name(m));
          CAPTURE(chunk);
          CAPTURE(i);
          CHECK(many[i].tokens == one[i].tokens);
          CHECK(many[i].writer == one[i].writer);
          CHECK(many[i].teacher_forward == one[i].teacher_forward);
          CHECK(many[i].student_forward == one[i].student_forward);
          REQUIRE(many[i].delta.size() == one[i].delta.size());
          for (size_t j = 0; j < one[i].delta.size(); ++j)
            CHECK(many[i].delta[j] == doctest::Approx(one[i].delta[j]).epsilon(1e-4));
        }
      }
    }
  }

  TEST_CASE("rollouts: both distributions equal a one-pass forward over prompt + rollout; forward tokens add up") {
    const Shipped s;
    const Tasks t = make("memo", Pool::eval, 1);
    RolloutConfig c;
    c.max_new = 10;
    c.seed = 2;
    c.rule = {nk::lm::Divergence::jsd, 0.005};
    c.method = Method::ssd;
    c.chunk = 3;
    Roller roller(s.model, s.model, s.m.tokenizer(), c);
    const Rollout r = roller.run(t.train.question[0], 0, t.docs[0], 0);
    const int64_t V = s.model.config().vocab, n = r.size();
    for (int which = 0; which < 2; ++which) {
      std::vector<int32_t> seq = which == 0 ? r.student_prefix : r.teacher_prefix;
      const int64_t p = static_cast<int64_t>(seq.size());
      seq.insert(seq.end(), r.tokens.begin(), r.tokens.end());
      nk::lm::Workspace ws(s.model.config(),
                           {static_cast<int64_t>(seq.size()), static_cast<int64_t>(seq.size()), false});
      const std::vector<int64_t> offsets{0, static_cast<int64_t>(seq.size())};
      s.model.forward({seq, offsets}, ws);
      const std::vector<float>& got = which == 0 ? r.student_logits : r.teacher_logits;
      double worst = 0;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t v = 0; v < V; ++v)
          worst = std::max(worst, static_cast<double>(std::abs(got[static_cast<size_t>(j * V + v)] -
                                                               ws.logits()[(p - 1 + j) * V + v])));
      CHECK_MESSAGE(worst < 2e-3, (which == 0 ? "student" : "teacher") << " logits within " << worst);
    }
    // Token by token, the teacher runs the question and every token but the last; the student its
    // whole prompt and the same (the document's prefill is counted apart).
    c.chunk = 0;
    Roller plain(s.model, s.model, s.m.tokenizer(), c);
    const Rollout q = plain.run(t.train.question[0], 0, t.docs[0], 0);
    const int64_t qn = static_cast<int64_t>(r.student_prefix.size()) - 1;
    CHECK(q.teacher_forward == qn + q.size() - 1);
    CHECK(q.student_forward == qn + 1 + q.size() - 1);
    CHECK(plain.document_prefill() == static_cast<int64_t>(document_tokens(s.m.tokenizer(), t.docs[0]).size()));
  }
}

TEST_SUITE("ssd-distill") {
  TEST_CASE("one training step on fixed rollouts lowers their loss (fkl, rkl, jsd, off-sft's cross-entropy)") {
    const Shipped s;
    const Tasks t = make("memo", Pool::eval, 1);
    RolloutConfig c;
    c.max_new = 8;
    c.seed = 9;
    c.method = Method::on_policy;
    std::vector<Rollout> rolls = rollouts(s, t, c, 4);
    c.method = Method::off_sft;
    const std::vector<Rollout> off = rollouts(s, t, c, 4);
    // A student that differs from the teacher: the teacher's logits stay those of the shipped model.
    for (const auto& [method, name] : std::vector<std::pair<Method, const char*>>{{Method::on_policy, "fkl"},
                                                                                  {Method::on_policy, "rkl"},
                                                                                  {Method::on_policy, "jsd"},
                                                                                  {Method::off_sft, "fkl"}}) {
      nk::lm::ParameterStore w = s.m.checkpoint.weights;
      const DistillBatch d = distill_batch(method == Method::off_sft ? off : rolls);
      const int64_t V = s.model.config().vocab, T = s.model.config().max_seq;
      nk::lm::AdamWConfig adamw;
      adamw.weight_decay = 0;
      nk::lm::Trainer trainer(w, nk::lm::ParameterMask::all(w), {1e-4, 1.0, 1, 2}, adamw, {4 * T, T, true});
      const nk::lm::Divergence div = parse_divergence(name);
      const auto loss_now = [&]() {
        nk::lm::Workspace ws(s.model.config(), {4 * T, T, false});
        trainer.model().forward(d.packed.batch(), ws);
        return distill_loss(ws, d, method, div, V, false);
      };
      const double before = loss_now();
      for (int k = 0; k < 3; ++k)
        trainer.step(1, [&](int64_t, nk::lm::Workspace& ws, nk::lm::TokenBatch& tb) {
          tb = d.packed.batch();
          trainer.model().forward(tb, ws);
          return std::pair<double, int64_t>{distill_loss(ws, d, method, div, V, true), d.packed.rows()};
        });
      const double after = loss_now();
      CHECK_MESSAGE(after < before, method_name(method) << " " << name << ": " << before << " -> " << after);
      if (method != Method::off_sft) CHECK(before < 1.0);  // student = teacher's weights without the document
    }
  }
}
