// test_lm_train.cpp - nk::lm's checkpoints (round trips, bfloat16 rounding,
// damaged files refused), AdamW against torch.optim.AdamW, the schedule, and
// training itself: resume equals an uninterrupted run bit for bit, frozen
// tensors stay, a tiny model learns a sentence.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/train.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

nk::lm::Config small_config() {
  nk::lm::Config c;
  c.vocab = 260;  // the bytes-only tokenizer
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.d_ff = 64;
  c.max_seq = 32;
  return c;
}

/// Trains 'steps' steps of next-token CE on one sentence (two copies per batch).
std::vector<double> train_on_sentence(nk::lm::ParameterStore& w, nk::lm::Trainer& trainer, int64_t steps) {
  static const std::string text = "the quick brown fox jumps over the lazy dog";
  std::vector<int32_t> tokens;
  for (int copy = 0; copy < 2; ++copy)
    for (char ch : text.substr(0, 24)) tokens.push_back(static_cast<unsigned char>(ch));
  const std::vector<int64_t> offsets = nk::lm::uniform_offsets(2, 24);
  std::vector<int64_t> rows;
  std::vector<int32_t> targets;
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t i = 0; i + 1 < 24; ++i) {
      rows.push_back(s * 24 + i);
      targets.push_back(tokens[static_cast<size_t>(s * 24 + i + 1)]);
    }
  const std::vector<float> weights(rows.size(), 1.0f / static_cast<float>(rows.size()));
  std::vector<double> losses;
  for (int64_t s = 0; s < steps; ++s) {
    const nk::lm::StepStats st = trainer.step(1, [&](int64_t, nk::lm::Workspace& ws, nk::lm::TokenBatch& batch) {
      batch = {tokens, offsets, {}};
      trainer.model().forward(batch, ws);
      nk::lm::Target t;
      t.token = targets.data();
      const double loss = nk::lm::loss_and_grad(nk::lm::Divergence::cross_entropy, ws.logits(), batch.rows(),
                                                w.config().vocab, t, {rows, weights}, nullptr, ws.dlogits());
      return std::pair<double, int64_t>{loss, batch.rows()};
    });
    losses.push_back(st.loss);
  }
  return losses;
}

}  // namespace

TEST_SUITE("lm_train") {
  TEST_CASE("bfloat16: round to nearest even, NaN kept, exact for bf16 values") {
    CHECK(nk::lm::to_bf16(1.0f) == 0x3f80);
    float x;
    uint32_t u = 0x3f808000u;  // halfway between 0x3f80 and 0x3f81: to even (0x3f80)
    std::memcpy(&x, &u, 4);
    CHECK(nk::lm::to_bf16(x) == 0x3f80);
    u = 0x3f818000u;  // halfway between 0x3f81 and 0x3f82: to even (0x3f82)
    std::memcpy(&x, &u, 4);
    CHECK(nk::lm::to_bf16(x) == 0x3f82);
    u = 0x3f808001u;  // just above halfway: up
    std::memcpy(&x, &u, 4);
    CHECK(nk::lm::to_bf16(x) == 0x3f81);
    CHECK(std::isnan(nk::lm::from_bf16(nk::lm::to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    CHECK(nk::lm::from_bf16(nk::lm::to_bf16(-2.5f)) == -2.5f);
  }

  TEST_CASE("checkpoint: float32 round trip is exact, bfloat16 rounds each weight, train state and tokenizer kept") {
    nk::test::ScratchDir dir;
    nk::lm::Config c = small_config();
    c.mode = nk::lm::Mode::diffusion;
    c.tied_head = false;
    nk::lm::ParameterStore w(c);
    w.init(9);
    nk::lm::TrainState st;
    st.step = 12, st.tokens = 3456, st.seed = 18446744073709551557ull, st.recipe = "nk-lm train --steps 12";
    st.m.assign(static_cast<size_t>(w.size()), 0.25f);
    st.v.assign(static_cast<size_t>(w.size()), 0.5f);
    const nk::lm::Tokenizer tok;
    nk::lm::save_checkpoint(dir.file("f32.h5"), w, &tok, &st, nk::lm::StoreAs::f32);
    nk::lm::save_checkpoint(dir.file("bf16.h5"), w, nullptr, nullptr, nk::lm::StoreAs::bf16);
    const nk::lm::Checkpoint a = nk::lm::load_checkpoint(dir.file("f32.h5"));
    CHECK(a.weights.config().mode == nk::lm::Mode::diffusion);
    CHECK_FALSE(a.weights.config().tied_head);
    CHECK(std::memcmp(a.weights.data(), w.data(), static_cast<size_t>(w.size()) * 4) == 0);
    REQUIRE(a.train.has_value());
    CHECK(a.train->seed == st.seed);
    CHECK(a.train->step == 12);
    CHECK(a.train->recipe == st.recipe);
    CHECK(a.train->m == st.m);
    REQUIRE(a.tokenizer.has_value());
    CHECK(a.tokenizer->size() == 260);
    const nk::lm::Checkpoint b = nk::lm::load_checkpoint(dir.file("bf16.h5"));
    CHECK_FALSE(b.train.has_value());
    CHECK_FALSE(b.tokenizer.has_value());
    for (int64_t i = 0; i < w.size(); ++i) REQUIRE(b.weights.data()[i] == nk::lm::from_bf16(nk::lm::to_bf16(w.data()[i])));
    CHECK(nk::lm::load_config(dir.file("bf16.h5")).d_ff == 64);
  }

  TEST_CASE("checkpoint: foreign schema, missing or misshapen tensor, NaN weight, absurd sizes: exit 3 naming it") {
    nk::test::ScratchDir dir;
    const nk::lm::Config c = small_config();
    nk::lm::ParameterStore w(c);
    w.init(1);
    const std::string good = dir.file("good.h5");
    nk::lm::save_checkpoint(good, w, nullptr, nullptr, nk::lm::StoreAs::f32);
    // Rewrites the good file with one change.
    const auto variant = [&](const std::string& name, const std::string& schema, const std::string& skip,
                             const std::map<std::string, double>& attrs, bool nan_in_norm, bool bad_shape) {
      const nk::h5::File in = nk::h5::File::open(good);
      nk::h5::Writer out(dir.file(name), schema);
      for (const auto& a : in.attrs("/"))
        if (a.name.rfind("nk_", 0) != 0) {
          if (attrs.count(a.name)) out.attr("/", a.name, attrs.at(a.name));
          else if (a.numeric) out.attr("/", a.name, std::stod(a.text));
          else out.attr("/", a.name, a.text);
        }
      for (const auto& t : w.tensors()) {
        const std::string d = "/params/" + t.name;
        if (d == skip) continue;
        nk::h5::Array<float> v = in.read<float>(d);
        if (nan_in_norm && t.name == "model.norm.weight") v.data[3] = std::numeric_limits<float>::quiet_NaN();
        if (bad_shape && t.name == "model.norm.weight") v.shape = {4, 8};
        out.allow_nonfinite(d);  // the test writes a bad checkpoint on purpose
        out.write(d, v, "");
      }
      out.commit();
      return dir.file(name);
    };
    const auto fails_naming = [](const std::string& path, const std::string& what) {
      try {
        nk::lm::load_checkpoint(path);
      } catch (const nk::Error& e) {
        CHECK(static_cast<int>(e.code()) == 3);
        CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
        return;
      }
      FAIL("accepted " << path);
    };
    CHECK(nk::test::exit_code([&] { nk::lm::load_checkpoint(good); }) == 0);
    fails_naming(variant("schema.h5", "nk-data.images/1", "", {}, false, false), "nk_schema");
    fails_naming(variant("missing.h5", "nk-lm.model/1", "/params/model.layers.1.mlp.up_proj.weight", {}, false, false),
                 "model.layers.1.mlp.up_proj.weight");
    fails_naming(variant("nan.h5", "nk-lm.model/1", "", {}, true, false), "model.norm.weight");
    fails_naming(variant("shape.h5", "nk-lm.model/1", "", {}, false, true), "model.norm.weight");
    fails_naming(variant("huge.h5", "nk-lm.model/1", "", {{"n_layers", 1000}, {"d_ff", 262144}}, false, false), "parameters");
    fails_naming(variant("heads.h5", "nk-lm.model/1", "", {{"n_kv_heads", 3}}, false, false), "n_kv_heads");
    // Not HDF5 at all, truncated.
    {
      FILE* f = std::fopen(dir.file("trunc.h5").c_str(), "wb");
      std::fwrite("\x89HDF\r\n\x1a\n", 1, 8, f);
      std::fclose(f);
    }
    CHECK(nk::test::exit_code([&] { nk::lm::load_checkpoint(dir.file("trunc.h5")); }) == 3);
  }

  TEST_CASE("schedule: linear warm-up then cosine to the floor") {
    const nk::lm::Schedule s{1e-3, 0.1, 10, 110};
    CHECK(nk::lm::learning_rate(s, 0) == doctest::Approx(1e-4));
    CHECK(nk::lm::learning_rate(s, 9) == doctest::Approx(1e-3));
    CHECK(nk::lm::learning_rate(s, 10) == doctest::Approx(1e-3));
    CHECK(nk::lm::learning_rate(s, 60) == doctest::Approx(0.55e-3));
    CHECK(nk::lm::learning_rate(s, 110) == doctest::Approx(1e-4));
    CHECK(nk::lm::learning_rate(s, 500) == doctest::Approx(1e-4));
  }

  TEST_CASE("AdamW with clipping and weight decay equals torch.optim.AdamW + clip_grad_norm_") {
    nk::test::ScratchDir dir;
    const nk::lm::Config c = small_config();
    nk::lm::ParameterStore w(c), g(c);
    w.init(4);
    const std::vector<float> w0(w.data(), w.data() + w.size());
    nk::lm::AdamWConfig cfg;
    cfg.clip_norm = 0.5;
    nk::lm::AdamW opt(w, cfg);
    nk::lm::ParameterMask all = nk::lm::ParameterMask::all(w);
    const int64_t steps = 5;
    std::vector<float> grads;
    std::vector<double> lrs;
    nk::Rng rng(2);
    for (int64_t s = 0; s < steps; ++s) {
      for (int64_t i = 0; i < g.size(); ++i) g.data()[i] = static_cast<float>((s == 2 ? 1e-4 : 0.01) * rng.normal());
      grads.insert(grads.end(), g.data(), g.data() + g.size());
      lrs.push_back(1e-2 / static_cast<double>(s + 1));
      opt.step(w, g, all, lrs.back());
    }
    std::vector<float> decay(static_cast<size_t>(w.size()));
    for (const auto& t : w.tensors()) std::fill(decay.begin() + t.offset, decay.begin() + t.offset + t.size, t.decay ? 1.0f : 0.0f);
    {
      nk::h5::Writer out(dir.file("adamw.h5"), "nk-lm.test-adamw/1");
      out.write("/w0", w0.data(), {w.size()}, "P");
      out.write("/grads", grads.data(), {steps, w.size()}, "S,P");
      out.write("/lr", lrs.data(), {steps}, "S");
      out.write("/decay", decay.data(), {w.size()}, "P");
      out.write("/ours", w.data(), {w.size()}, "P");
      out.attr("/", "beta1", cfg.beta1);
      out.attr("/", "beta2", cfg.beta2);
      out.attr("/", "eps", cfg.eps);
      out.attr("/", "weight_decay", cfg.weight_decay);
      out.attr("/", "clip", cfg.clip_norm);
      out.commit();
    }
    const std::string command = "/usr/bin/python3 " NK_SOURCE_DIR "/tests/unit/lm_adamw_reference.py " + dir.file("adamw.h5");
    CHECK(std::system(command.c_str()) == 0);
  }

  TEST_CASE("training: a tiny model learns a sentence; frozen tensors stay; resume equals the uninterrupted run") {
    nk::test::ScratchDir dir;
    const nk::lm::Config c = small_config();
    const nk::lm::Schedule sched{2e-2, 0.1, 5, 60};
    const nk::lm::WorkspaceLimits limits{48, 24, false};
    nk::lm::ParameterStore w(c);
    w.init(21);
    nk::lm::Trainer trainer(w, nk::lm::ParameterMask::all(w), sched, {}, limits);
    const std::vector<double> losses = train_on_sentence(w, trainer, 60);
    CHECK(losses.front() > 5.0);   // ln 260 = 5.56 at the start
    MESSAGE("loss " << losses.front() << " -> " << losses[20] << " -> " << losses.back());
    CHECK(losses.back() < 0.5);    // 23 next-byte predictions of one sentence, memorised

    // Frozen: the embedding and layer 0 do not move; the rest does.
    nk::lm::ParameterStore f(c);
    f.init(21);
    const std::vector<float> before(f.data(), f.data() + f.size());
    nk::lm::ParameterMask mask = nk::lm::ParameterMask::all(f);
    mask.freeze("model.embed_tokens.weight");
    mask.freeze("model.layers.0.*");
    nk::lm::Trainer frozen(f, mask, sched, {}, limits);
    train_on_sentence(f, frozen, 3);
    for (size_t t = 0; t < f.tensors().size(); ++t) {
      const auto& info = f.tensors()[t];
      const bool same = std::memcmp(f.data() + info.offset, before.data() + info.offset, static_cast<size_t>(info.size) * 4) == 0;
      CAPTURE(info.name);
      CHECK(same == !mask.trainable(t));
    }

    // 8 steps straight, or 4, a float32 checkpoint with the optimiser's state, then 4: the same bits.
    nk::lm::ParameterStore straight(c), resumed(c);
    straight.init(8);
    resumed.init(8);
    nk::lm::Trainer t1(straight, nk::lm::ParameterMask::all(straight), sched, {}, limits);
    train_on_sentence(straight, t1, 8);
    {
      nk::lm::Trainer t2(resumed, nk::lm::ParameterMask::all(resumed), sched, {}, limits);
      train_on_sentence(resumed, t2, 4);
      nk::lm::TrainState st;
      t2.optimiser().save(st);
      nk::lm::save_checkpoint(dir.file("mid.h5"), resumed, nullptr, &st, nk::lm::StoreAs::f32);
    }
    nk::lm::Checkpoint mid = nk::lm::load_checkpoint(dir.file("mid.h5"));
    nk::lm::Trainer t3(mid.weights, nk::lm::ParameterMask::all(mid.weights), sched, {}, limits);
    t3.optimiser().load(*mid.train, dir.file("mid.h5"));
    CHECK(t3.steps() == 4);
    train_on_sentence(mid.weights, t3, 4);
    CHECK(std::memcmp(mid.weights.data(), straight.data(), static_cast<size_t>(straight.size()) * 4) == 0);
  }
}
