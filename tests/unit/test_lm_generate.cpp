// test_lm_generate.cpp - nk::lm's KV cache (cached decoding equals the full
// forward, fork/truncate equal recomputation, pages come back), the sampler,
// batched causal decoding, LLaDA's sampler and its training-time masking.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <vector>

#include "nk/kernels/dllm.hpp"
#include "nk/lm/block_mask_attention.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/key_subset_attention.hpp"
#include "nk/kernels/louver_search.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/train.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

nk::lm::Config config(nk::lm::Mode mode) {
  nk::lm::Config c;
  c.mode = mode;
  c.vocab = 53;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.d_ff = 48;
  c.max_seq = 40;
  return c;
}

std::vector<int32_t> random_tokens(int64_t n, uint64_t seed, int64_t vocab) {
  nk::Rng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab)));
  return t;
}

/// Logits of every position of one sequence by the plain (uncached) forward.
std::vector<float> full_logits(const nk::lm::Model& m, const std::vector<int32_t>& seq) {
  nk::lm::Workspace ws(m.config(), {static_cast<int64_t>(seq.size()), static_cast<int64_t>(seq.size()), false});
  const std::vector<int64_t> off{0, static_cast<int64_t>(seq.size())};
  m.forward({seq, off, {}}, ws);
  return {ws.logits(), ws.logits() + seq.size() * static_cast<size_t>(m.config().vocab)};
}

}  // namespace

TEST_SUITE("lm_generate") {
  TEST_CASE("KV cache: chunked prefill and token-by-token decoding give the full forward's logits") {
    const nk::lm::Config c = config(nk::lm::Mode::causal);
    nk::lm::ParameterStore w(c);
    w.init(2);
    const nk::lm::Model m(w);
    const std::vector<int32_t> seq = random_tokens(30, 5, c.vocab);
    const std::vector<float> ref = full_logits(m, seq);
    nk::lm::KvCache cache(c, {4, 0, 2});  // pages of 4 tokens: chunks cross page boundaries
    nk::lm::Workspace ws(c, {11, 11, false});
    const int32_t slot = cache.open();
    int64_t done = 0;
    for (int64_t chunk : {11, 1, 5, 1, 1, 7, 1, 3}) {
      std::vector<int32_t> part(seq.begin() + done, seq.begin() + done + chunk);
      const std::vector<int64_t> off{0, chunk};
      const std::vector<int32_t> slots{slot};
      m.forward({part, off, {}, slots}, ws, {nk::lm::LogitRows::all, &cache});
      for (int64_t i = 0; i < chunk * c.vocab; ++i) REQUIRE(ws.logits()[i] == doctest::Approx(ref[done * c.vocab + i]).epsilon(1e-4));
      done += chunk;
      CHECK(cache.length(slot) == done);
    }
    // Fork at 30, truncate the fork to 20 and feed a different continuation:
    // its logits equal a fresh full forward over that sequence; the parent's are unchanged.
    const int32_t child = cache.fork(slot);
    cache.truncate(child, 18);  // inside a shared page: copy-on-write on the next write
    std::vector<int32_t> alt(seq.begin(), seq.begin() + 18);
    const std::vector<int32_t> tail = random_tokens(6, 9, c.vocab);
    alt.insert(alt.end(), tail.begin(), tail.end());
    const std::vector<float> alt_ref = full_logits(m, alt);
    {
      const std::vector<int64_t> off{0, 6};
      const std::vector<int32_t> slots{child};
      m.forward({tail, off, {}, slots}, ws, {nk::lm::LogitRows::last, &cache});
      CHECK(ws.logit_rows() == 1);
      for (int64_t i = 0; i < c.vocab; ++i) REQUIRE(ws.logits()[i] == doctest::Approx(alt_ref[23 * c.vocab + i]).epsilon(1e-4));
    }
    {
      const std::vector<int32_t> one{seq[29]};
      const std::vector<int64_t> off{0, 1};
      const std::vector<int32_t> slots{slot};
      cache.truncate(slot, 29);
      m.forward({one, off, {}, slots}, ws, {nk::lm::LogitRows::last, &cache});
      for (int64_t i = 0; i < c.vocab; ++i) REQUIRE(ws.logits()[i] == doctest::Approx(ref[29 * c.vocab + i]).epsilon(1e-4));
    }
    // Pages: every page comes back when both sequences close.
    cache.close(slot);
    cache.close(child);
    CHECK(cache.free_pages() == cache.pages());
    // A full cache says so instead of overwriting.
    nk::lm::KvCache small(c, {4, 3, 2});
    const int32_t s = small.open();
    CHECK(small.reserve(s, 12));
    CHECK_FALSE(small.reserve(s, 13));
    CHECK(small.free_pages() == 0);
    CHECK(small.free_pages() == 0);
    CHECK_FALSE(small.reserve(small.open(), c.max_seq + 1));
  }

  TEST_CASE("sparse-gqa: cached prefill and decoding select the full forward's blocks (same logits, unlike dense)") {
    nk::lm::Config c = config(nk::lm::Mode::causal);
    c.sparse = true;
    c.selector = {3, 1, 1, 2};
    nk::lm::ParameterStore w(c);
    w.init(4);
    for (const auto& t : w.tensors())  // sharper attention than the init's, so that the blocks matter
      if (t.name.find("q_proj") != std::string::npos || t.name.find("k_proj") != std::string::npos)
        for (int64_t i = 0; i < t.size; ++i) w.data()[t.offset + i] *= 20.0f;
    const nk::lm::Model m(w);
    const std::vector<int32_t> seq = random_tokens(36, 6, c.vocab);
    const std::vector<float> ref = full_logits(m, seq);
    nk::lm::Config dense_c = c;
    dense_c.sparse = false;
    nk::lm::ParameterStore dense_w(dense_c);
    std::copy_n(w.data(), w.size(), dense_w.data());
    const std::vector<float> dense = full_logits(nk::lm::Model(dense_w), seq);
    double differs = 0;
    for (size_t i = 0; i < ref.size(); ++i) differs = std::max(differs, double(std::abs(ref[i] - dense[i])));
    CHECK(differs > 1e-2);
    for (int64_t i = 0; i < 12 * c.vocab; ++i) CHECK(ref[i] == doctest::Approx(dense[i]).epsilon(1e-4));  // all blocks read
    nk::lm::KvCache cache(c, {4, 0, 1});
    nk::lm::Workspace ws(c, {10, 10, false});
    const int32_t slot = cache.open();
    int64_t done = 0;
    for (int64_t chunk : {10, 1, 5, 1, 1, 7, 1, 1, 1, 8}) {
      std::vector<int32_t> part(seq.begin() + done, seq.begin() + done + chunk);
      const std::vector<int64_t> off{0, chunk};
      const std::vector<int32_t> slots{slot};
      m.forward({part, off, {}, slots}, ws, {nk::lm::LogitRows::all, &cache});
      for (int64_t i = 0; i < chunk * c.vocab; ++i)
        REQUIRE(ws.logits()[i] == doctest::Approx(ref[done * c.vocab + i]).epsilon(1e-4));
      done += chunk;
    }
    CHECK(done == 36);
  }

  TEST_CASE("gqa attention backend: a dense cache written in the test gives the full forward's logits (chunked, token by token)") {
    const nk::lm::Config c = config(nk::lm::Mode::causal);
    nk::lm::ParameterStore w(c);
    w.init(8);
    const nk::lm::Model m(w);
    const std::vector<int32_t> seq = random_tokens(29, 9, c.vocab);
    const std::vector<float> ref = full_logits(m, seq);
    // The reference backend: every key of the slot, softmax in double.
    struct Dense : nk::lm::AttentionBackend {
      std::vector<std::vector<float>> k, v;  // per layer: rows of kv_heads*hd
      int64_t len = 0, layers = 0, calls = 0;
      double xmax = 0;
      int64_t length(int32_t) const override { return len; }
      void attend(const nk::lm::AttentionCall& a, float* out) override {
        const int64_t n = a.batch->rows(), kvd = a.kv_heads * a.head_dim, G = a.heads / a.kv_heads, hd = a.head_dim;
        auto& K = k[static_cast<size_t>(a.layer)];
        auto& V = v[static_cast<size_t>(a.layer)];
        K.insert(K.end(), a.k, a.k + n * kvd);
        V.insert(V.end(), a.v, a.v + n * kvd);
        ++calls;
        xmax = std::max(xmax, double(std::abs(a.x[0])));
        for (int64_t r = 0; r < n; ++r)
          for (int64_t h = 0; h < a.heads; ++h) {
            const int64_t g = h / G, upto = a.positions[r];
            std::vector<double> p(static_cast<size_t>(upto + 1));
            double most = -1e300, sum = 0;
            for (int64_t j = 0; j <= upto; ++j) {
              double dot = 0;
              for (int64_t i = 0; i < hd; ++i) dot += double(a.q[(r * a.heads + h) * hd + i]) * K[static_cast<size_t>(j * kvd + g * hd + i)];
              most = std::max(most, p[static_cast<size_t>(j)] = dot * a.scale);
            }
            for (double& x : p) sum += (x = std::exp(x - most));
            for (int64_t i = 0; i < hd; ++i) {
              double acc = 0;
              for (int64_t j = 0; j <= upto; ++j) acc += p[static_cast<size_t>(j)] * V[static_cast<size_t>(j * kvd + g * hd + i)];
              out[(r * a.heads + h) * hd + i] = static_cast<float>(acc / sum);
            }
          }
        if (a.layer == layers - 1) len += n;
      }
    } dense;
    dense.layers = c.n_layers;
    dense.k.resize(static_cast<size_t>(c.n_layers));
    dense.v.resize(static_cast<size_t>(c.n_layers));
    nk::lm::Workspace ws(c, {9, 9, false});
    int64_t done = 0;
    for (int64_t chunk : {9, 1, 1, 5, 1, 9, 3}) {
      const std::vector<int32_t> part(seq.begin() + done, seq.begin() + done + chunk);
      const std::vector<int64_t> off{0, chunk};
      const std::vector<int32_t> slots{0};
      nk::lm::ForwardOptions o;
      o.attention = &dense;
      m.forward({part, off, {}, slots}, ws, o);
      for (int64_t i = 0; i < chunk * c.vocab; ++i) REQUIRE(ws.logits()[i] == doctest::Approx(ref[done * c.vocab + i]).epsilon(1e-4));
      done += chunk;
    }
    CHECK(done == 29);
    CHECK(dense.calls == 7 * c.n_layers);
    CHECK(dense.xmax > 0);
    // With a KvCache beside it, or on a training workspace: usage errors.
    nk::lm::KvCache cache(c, {4, 0, 1});
    const std::vector<int32_t> one{1};
    const std::vector<int64_t> off{0, 1};
    const std::vector<int32_t> slots{0};
    nk::lm::ForwardOptions both;
    both.attention = &dense, both.cache = &cache;
    CHECK(nk::test::exit_code([&] { m.forward({one, off, {}, slots}, ws, both); }) == 2);
    nk::lm::Workspace train(c, {4, 4, true});
    nk::lm::ForwardOptions plain;
    plain.attention = &dense;
    CHECK(nk::test::exit_code([&] { m.forward({one, off, {}, slots}, train, plain); }) == 2);
  }

  TEST_CASE("mla: absorbed decoding (chunked, token by token, packed slots) and the KV cache give the unabsorbed forward's logits") {
    nk::lm::Config c = config(nk::lm::Mode::causal);
    c.attention = nk::lm::AttentionKind::mla;
    c.n_kv_heads = c.n_heads;
    c.head_dim = 12, c.rope_dim = 4, c.kv_rank = 16;
    nk::lm::ParameterStore w(c);
    w.init(4);
    for (const auto& t : w.tensors())  // sharper attention than the init's
      if (t.name.find("self_attn") != std::string::npos && t.shape.size() == 2)
        for (int64_t i = 0; i < t.size; ++i) w.data()[t.offset + i] *= 12.0f;
    const nk::lm::Model m(w);
    const std::vector<int32_t> seq = random_tokens(30, 5, c.vocab), seq2 = random_tokens(17, 6, c.vocab);
    const std::vector<float> ref = full_logits(m, seq), ref2 = full_logits(m, seq2);
    struct Capture : nk::lm::Observer {
      int64_t calls = 0;
      double qmax = 0;
      void mla(const nk::lm::Site&, const float*, const float*, const float* q) override {
        ++calls;
        qmax = std::max(qmax, double(std::abs(q[0])));
      }
    } capture;
    nk::lm::DenseMlaCache absorbed(c, 2);
    nk::lm::KvCache cache(c, {4, 0, 2});
    const int32_t kv_slot = cache.open();
    nk::lm::Workspace ws(c, {11, 11, false});
    int64_t done = 0;
    double worst = 0;
    for (int64_t chunk : {11, 1, 5, 1, 1, 7, 1, 3}) {
      std::vector<int32_t> part(seq.begin() + done, seq.begin() + done + chunk);
      const std::vector<int64_t> off{0, chunk};
      const std::vector<int32_t> slots{0};
      nk::lm::ForwardOptions absorbed_options;
      absorbed_options.mla = &absorbed;
      absorbed_options.observer = &capture;
      m.forward({part, off, {}, slots}, ws, absorbed_options);
      for (int64_t i = 0; i < chunk * c.vocab; ++i) {
        REQUIRE(ws.logits()[i] == doctest::Approx(ref[done * c.vocab + i]).epsilon(1e-4));
        worst = std::max(worst, double(std::abs(ws.logits()[i] - ref[done * c.vocab + i])));
      }
      const std::vector<int32_t> kv_slots{kv_slot};
      m.forward({part, off, {}, kv_slots}, ws, {nk::lm::LogitRows::all, &cache});
      for (int64_t i = 0; i < chunk * c.vocab; ++i) REQUIRE(ws.logits()[i] == doctest::Approx(ref[done * c.vocab + i]).epsilon(1e-4));
      done += chunk;
      CHECK(absorbed.length(0) == done);
    }
    MESSAGE("absorbed vs unabsorbed logits: largest difference " << worst);
    CHECK(capture.calls == 8 * c.n_layers);
    CHECK(capture.qmax > 0);
    // Two slots in one packed batch: slot 1 starts fresh beside slot 0's next token.
    {
      std::vector<int32_t> both(seq2.begin(), seq2.end());
      both.push_back(seq[0]);
      nk::lm::DenseMlaCache fresh(c, 2);
      const std::vector<int64_t> off{0, 17, 18};
      const std::vector<int32_t> slots{1, 0};
      nk::lm::Workspace big(c, {18, 17, false});
      nk::lm::ForwardOptions o;
      o.mla = &fresh;
      m.forward({both, off, {}, slots}, big, o);
      for (int64_t i = 0; i < 17 * c.vocab; ++i) REQUIRE(big.logits()[i] == doctest::Approx(ref2[i]).epsilon(1e-4));
      for (int64_t i = 0; i < c.vocab; ++i) REQUIRE(big.logits()[17 * c.vocab + i] == doctest::Approx(ref[i]).epsilon(1e-4));
    }
    // A backend with a KvCache, on a training workspace, or for a gqa model: usage errors.
    const std::vector<int32_t> one{1};
    const std::vector<int64_t> off{0, 1};
    const std::vector<int32_t> slots{0};
    nk::lm::ForwardOptions both;
    both.mla = &absorbed, both.cache = &cache;
    CHECK(nk::test::exit_code([&] { m.forward({one, off, {}, slots}, ws, both); }) == 2);
    nk::lm::Workspace train(c, {4, 4, true});
    nk::lm::ForwardOptions o;
    o.mla = &absorbed;
    CHECK(nk::test::exit_code([&] { m.forward({one, off, {}, slots}, train, o); }) == 2);
  }

  TEST_CASE("sampler: greedy is argmax, top-k 1 and a tiny top-p are greedy, the inverse CDF follows the probabilities") {
    const std::vector<float> z{0.0f, 2.0f, 1.0f, 2.0f, -1.0f};
    nk::lm::SamplerOptions greedy;
    greedy.greedy = true;
    CHECK(nk::lm::sample(z.data(), 5, greedy, 0.99) == 1);  // ties to the lower id
    nk::lm::SamplerOptions k1;
    k1.top_k = 1;
    CHECK(nk::lm::sample(z.data(), 5, k1, 0.99) == 1);
    nk::lm::SamplerOptions p;
    p.top_p = 1e-6;
    CHECK(nk::lm::sample(z.data(), 5, p, 0.99) == 1);
    // Frequencies over a uniform grid of u equal softmax(z / T) (T = 2) to the grid's resolution.
    nk::lm::SamplerOptions t;
    t.temperature = 2.0;
    std::map<int32_t, int> counts;
    const int n = 100000;
    for (int i = 0; i < n; ++i) ++counts[nk::lm::sample(z.data(), 5, t, (i + 0.5) / n)];
    double total = 0;
    for (float x : z) total += std::exp(x / 2.0);
    for (int32_t id = 0; id < 5; ++id) CHECK(counts[id] / double(n) == doctest::Approx(std::exp(z[id] / 2.0) / total).epsilon(1e-3));
    // top-k 2 keeps ids 1 and 3 only, equally likely.
    nk::lm::SamplerOptions k2;
    k2.top_k = 2;
    CHECK(nk::lm::sample(z.data(), 5, k2, 0.25) == 1);
    CHECK(nk::lm::sample(z.data(), 5, k2, 0.75) == 3);
  }

  TEST_CASE("causal generation: batched equals one at a time, seeded, stops after EOS, refuses a prompt past the context") {
    const nk::lm::Config c = config(nk::lm::Mode::causal);
    nk::lm::ParameterStore w(c);
    w.init(3);
    const nk::lm::Model m(w);
    std::vector<std::vector<int32_t>> prompts;
    for (int b = 0; b < 5; ++b) prompts.push_back(random_tokens(3 + 2 * b, 100 + static_cast<uint64_t>(b), c.vocab));
    nk::lm::GenerateOptions o;
    o.max_new = 12;
    o.seed = 4;
    o.sampler.temperature = 1.0;
    o.batch = 5;
    const auto together = nk::lm::generate_causal(m, prompts, o);
    o.batch = 1;
    const auto alone = nk::lm::generate_causal(m, prompts, o);
    CHECK(together == alone);
    for (const auto& seq : together) CHECK(seq.size() == 12);
    // Greedy continuations equal argmax of the full forward, token by token.
    o.sampler.greedy = true;
    o.batch = 3;
    const auto greedy = nk::lm::generate_causal(m, prompts, o);
    for (size_t b = 0; b < prompts.size(); ++b) {
      std::vector<int32_t> seq = prompts[b];
      for (int32_t t : greedy[b]) {
        const std::vector<float> z = full_logits(m, seq);
        const float* last = z.data() + (seq.size() - 1) * static_cast<size_t>(c.vocab);
        CHECK(t == static_cast<int32_t>(std::max_element(last, last + c.vocab) - last));
        seq.push_back(t);
      }
    }
    // EOS: take the first greedy token of prompt 0 as "EOS": that sequence stops at once.
    o.eos = greedy[0][0];
    const auto stopped = nk::lm::generate_causal(m, prompts, o);
    CHECK(stopped[0] == std::vector<int32_t>{o.eos});
    o.max_new = 40;
    CHECK(nk::test::exit_code([&] { nk::lm::generate_causal(m, prompts, o); }) == 2);
  }

  TEST_CASE("causal generation: a logit bias shifts every row before sampling") {
    const nk::lm::Config c = config(nk::lm::Mode::causal);
    nk::lm::ParameterStore w(c);
    w.init(3);
    const nk::lm::Model m(w);
    const std::vector<std::vector<int32_t>> prompts{random_tokens(4, 1, c.vocab), random_tokens(6, 2, c.vocab)};
    nk::lm::GenerateOptions o;
    o.max_new = 8;
    o.seed = 5;
    const auto plain = nk::lm::generate_causal(m, prompts, o);
    std::vector<float> bias(static_cast<size_t>(c.vocab), 0.0f);
    o.logit_bias = bias;
    CHECK(nk::lm::generate_causal(m, prompts, o) == plain);  // a zero bias changes nothing
    bias[7] = 100.0f;  // token 7 then takes all the mass
    for (const auto& seq : nk::lm::generate_causal(m, prompts, o)) CHECK(seq == std::vector<int32_t>(8, 7));
    // Greedy with a bias equals argmax of logits + bias on the full forward.
    for (size_t v = 0; v < bias.size(); ++v) bias[v] = static_cast<float>(0.3 * std::sin(1.7 * static_cast<double>(v)));
    o.sampler.greedy = true;
    const auto greedy = nk::lm::generate_causal(m, prompts, o);
    for (size_t b = 0; b < prompts.size(); ++b) {
      std::vector<int32_t> seq = prompts[b];
      for (int32_t t : greedy[b]) {
        std::vector<float> z = full_logits(m, seq);
        float* last = z.data() + (seq.size() - 1) * static_cast<size_t>(c.vocab);
        for (int64_t v = 0; v < c.vocab; ++v) last[v] += bias[static_cast<size_t>(v)];
        CHECK(t == static_cast<int32_t>(std::max_element(last, last + c.vocab) - last));
        seq.push_back(t);
      }
    }
    bias.pop_back();
    o.logit_bias = bias;
    CHECK(nk::test::exit_code([&] { nk::lm::generate_causal(m, prompts, o); }) == 2);
  }

  TEST_CASE("key index (Louver in the model): every key equals the model's own decoding; Louver returns exactly the keys >= T; budgets; divergence") {
    nk::lm::Config c = config(nk::lm::Mode::causal);
    c.max_seq = 96;
    nk::lm::ParameterStore w(c);
    w.init(13);
    const nk::lm::Model m(w);
    std::vector<std::vector<int32_t>> prompts;
    for (int b = 0; b < 3; ++b) prompts.push_back(random_tokens(10 + 10 * b, 200 + static_cast<uint64_t>(b), c.vocab));
    nk::lm::GenerateOptions o;
    o.max_new = 40, o.seed = 7, o.batch = 2;
    std::map<std::pair<size_t, int64_t>, std::vector<float>> logits;
    o.on_logits = [&](size_t b, int64_t t, const float* row) { logits[{b, t}].assign(row, row + c.vocab); };
    auto run = [&](nk::lm::AttentionBackend* backend) {
      logits.clear();
      o.attention = backend;
      auto tokens = nk::lm::generate_causal(m, prompts, o);
      return std::make_pair(tokens, logits);
    };
    auto max_diff = [](const std::map<std::pair<size_t, int64_t>, std::vector<float>>& a,
                       const std::map<std::pair<size_t, int64_t>, std::vector<float>>& b) {
      double d = a.size() == b.size() ? 0.0 : INFINITY;
      for (const auto& [key, row] : a)
        for (size_t v = 0; v < row.size(); ++v) d = std::max(d, double(std::abs(row[v] - b.at(key)[v])));
      return d;
    };
    const auto own = run(nullptr);
    // Every key through the backend, and Louver below every score: the model's own decoding.
    nk::lm::KeySubsetAttention every(c, nullptr, 2);
    const auto dense = run(&every);
    CHECK(dense.first == own.first);
    CHECK(max_diff(dense.second, own.second) < 1e-4);
    CHECK(every.stats().density() == 1.0);
    CHECK(every.stats().queries == 3 * 39 * c.n_layers * c.n_heads);  // the first new token comes from the prefill
    nk::lm::KeySelectorOptions ko;
    ko.method = "louver", ko.has_threshold = true, ko.threshold = -1e30, ko.leaf_size = 4, ko.buffer = 8, ko.subspaces = 4;
    auto all = nk::lm::make_key_selector(ko, c.head_dim);
    nk::lm::KeySubsetAttention through_all(c, all.get(), 2);
    const auto louver_all = run(&through_all);
    CHECK(louver_all.first == own.first);
    CHECK(max_diff(louver_all.second, own.second) < 1e-4);
    // Louver at a real threshold, inside decoding (index over the prompt,
    // appends through a buffer of 8 with flushes and rebuilds): each
    // selection is exactly {j <= position : q.k_j >= T}, checked against the
    // keys a wrapper keeps.
    struct Checking : nk::lm::KeySelector {
      nk::lm::KeySelector& inner;
      int64_t dims;
      std::map<int64_t, std::vector<float>> keys;
      mutable std::atomic<int64_t> checked{0}, wrong{0}, returned{0}, total{0};
      Checking(nk::lm::KeySelector& i, int64_t d) : inner(i), dims(d) {}
      void build(int64_t st, const float* k, int64_t n) override {
        keys[st].assign(k, k + n * dims);
        inner.build(st, k, n);
      }
      void append(int64_t st, const float* k, int64_t n) override {
        keys[st].insert(keys[st].end(), k, k + n * dims);
        inner.append(st, k, n);
      }
      void select(int64_t st, const float* q, int64_t position, double scale, uint64_t draw, std::vector<int64_t>& ids) const override {
        inner.select(st, q, position, scale, draw, ids);
        std::vector<int64_t> truth;
        for (int64_t j = 0; j <= position; ++j)
          if (nk::louver::exact_score(q, keys.at(st).data() + j * dims, dims) >= 0.05) truth.push_back(j);
        ++checked;
        if (ids != truth) ++wrong;
        returned += static_cast<int64_t>(ids.size()), total += position + 1;
      }
    };
    ko.threshold = 0.05;
    auto at_t = nk::lm::make_key_selector(ko, c.head_dim);
    Checking checking(*at_t, c.head_dim);
    nk::lm::KeySubsetAttention through_t(c, &checking, 2);
    const auto sparse = run(&through_t);
    CHECK(checking.checked.load() == 3 * 39 * c.n_layers * c.n_heads);
    CHECK(checking.wrong.load() == 0);
    CHECK(checking.returned.load() < checking.total.load());
    CHECK(checking.returned.load() > 0);
    CHECK(through_t.stats().density() == doctest::Approx(double(checking.returned.load()) / double(checking.total.load())));
    CHECK(max_diff(sparse.second, own.second) > 1e-3);
    // --mass p: the softmax mass each selection leaves out is at most 1 - p.
    // An untrained model attends almost uniformly; with its query weights
    // scaled up (sharper attention, as a trained model's) some keys drop out.
    {
      nk::lm::ParameterStore sharp = w;
      for (int64_t l = 0; l < c.n_layers; ++l)
        for (float& x : sharp.tensor("model.layers." + std::to_string(l) + ".self_attn.q_proj.weight")) x *= 80.0f;
      const nk::lm::Model ms(sharp);
      ko.has_threshold = false, ko.mass = 0.9, ko.mass_sample = 8;
      auto by_mass = nk::lm::make_key_selector(ko, c.head_dim);
      nk::lm::KeySubsetAttention measured(c, by_mass.get(), 2, true);
      o.attention = &measured;
      o.on_logits = {};
      nk::lm::generate_causal(ms, prompts, o);
      CHECK(measured.stats().missed_max <= 0.1);
      CHECK(measured.stats().missed_max > 0);
      CHECK(measured.stats().density() < 0.99);
      MESSAGE("--mass 0.9: density " << measured.stats().density() << ", largest mass left out " << measured.stats().missed_max);
      o.on_logits = [&](size_t b, int64_t t, const float* row) { logits[{b, t}].assign(row, row + c.vocab); };
    }
    // Quest and IVF read about their budget: Quest whole pages (the current one among them), IVF whole lists.
    for (const char* method : {"quest", "ivf"}) {
      nk::lm::KeySelectorOptions bo;
      bo.method = method, bo.budget = 0.25, bo.page_size = 4;
      auto sel = nk::lm::make_key_selector(bo, c.head_dim);
      nk::lm::KeySubsetAttention backend(c, sel.get(), 2, true);
      run(&backend);
      INFO(method);
      CHECK(backend.stats().density() > 0.2);
      CHECK(backend.stats().density() < 0.6);
      CHECK(backend.stats().missed_max > 0);
    }
    // The divergence from the model's own scoring: ~0 for its own decoding, not for a sparse one.
    auto logprobs = [&](const std::map<std::pair<size_t, int64_t>, std::vector<float>>& rows) {
      std::vector<std::vector<float>> lp(prompts.size());
      for (const auto& [key, row] : rows) {
        std::vector<float>& out = lp[key.first];
        out.resize(out.size() + static_cast<size_t>(c.vocab));
        nk::lm::log_softmax_rows(row.data(), 1, c.vocab, out.data() + out.size() - static_cast<size_t>(c.vocab));
      }
      return lp;
    };
    double own_max = 0, sparse_max = 0;
    for (const auto& row : nk::lm::divergence_from_dense(m, prompts, own.first, logprobs(own.second)))
      for (double v : row) own_max = std::max(own_max, v);
    for (const auto& row : nk::lm::divergence_from_dense(m, prompts, sparse.first, logprobs(sparse.second)))
      for (double v : row) sparse_max = std::max(sparse_max, v);
    CHECK(own_max < 1e-5);
    CHECK(sparse_max > 1e-4);
    // Refusals: a diffusion model, an unknown method, Louver without one T, a budget out of range.
    CHECK(nk::test::exit_code([&] { nk::lm::KeySubsetAttention(config(nk::lm::Mode::diffusion), nullptr, 1); }) == 2);
    nk::lm::KeySelectorOptions bad;
    bad.method = "hnsw";
    CHECK(nk::test::exit_code([&] { nk::lm::make_key_selector(bad, 8); }) == 2);
    bad.method = "louver";
    CHECK(nk::test::exit_code([&] { nk::lm::make_key_selector(bad, 8); }) == 2);
    bad.method = "quest", bad.budget = 0;
    CHECK(nk::test::exit_code([&] { nk::lm::make_key_selector(bad, 8); }) == 2);
  }

  TEST_CASE("diffusion: LLaDA's transfer counts; the sampler unmasks block by block, deterministic for a seed") {
    CHECK(nk::lm::transfer_counts(10, 4) == std::vector<int64_t>{3, 3, 2, 2});
    CHECK(nk::lm::transfer_counts(8, 8) == std::vector<int64_t>(8, 1));
    const nk::lm::Config c = config(nk::lm::Mode::diffusion);
    nk::lm::ParameterStore w(c);
    w.init(6);
    const nk::lm::Model m(w);
    const std::vector<int32_t> prompt = random_tokens(6, 1, c.vocab - 1);
    nk::lm::DiffusionOptions o;
    o.gen_length = 16, o.steps = 8, o.block = 8, o.mask = static_cast<int32_t>(c.vocab - 1), o.seed = 3, o.temperature = 0.7;
    std::vector<std::vector<int32_t>> states;
    const auto out = nk::lm::sample_diffusion(m, prompt, o, [&](int64_t step, std::span<const int32_t> x) {
      CHECK(step == static_cast<int64_t>(states.size()));
      states.emplace_back(x.begin(), x.end());
    });
    REQUIRE(states.size() == 8);
    CHECK(std::equal(prompt.begin(), prompt.end(), out.begin()));
    for (size_t s = 0; s < states.size(); ++s) {
      int64_t masked_first = 0, masked_second = 0;
      for (int64_t i = 6; i < 14; ++i) masked_first += states[s][static_cast<size_t>(i)] == o.mask;
      for (int64_t i = 14; i < 22; ++i) masked_second += states[s][static_cast<size_t>(i)] == o.mask;
      // 4 steps per block, 2 tokens each: the first block empties first, the second waits.
      CHECK(masked_first == std::max<int64_t>(0, 8 - 2 * static_cast<int64_t>(s + 1)));
      CHECK(masked_second == (s < 4 ? 8 : 8 - 2 * static_cast<int64_t>(s - 3)));
    }
    CHECK(nk::lm::sample_diffusion(m, prompt, o) == out);
    o.seed = 4;
    CHECK(nk::lm::sample_diffusion(m, prompt, o) != out);
    o.steps = 3;
    CHECK(nk::test::exit_code([&] { nk::lm::sample_diffusion(m, prompt, o); }) == 2);
    // A causal model is refused.
    nk::lm::ParameterStore cw(config(nk::lm::Mode::causal));
    const nk::lm::Model causal(cw);
    o.steps = 8;
    CHECK(nk::test::exit_code([&] { nk::lm::sample_diffusion(causal, prompt, o); }) == 2);
  }

  TEST_CASE("block-mask attention (Step-dLLM in the model): sparsity 0 and dense equal the model's own attention; masks match a float64 reference") {
    nk::lm::Config c = config(nk::lm::Mode::diffusion);
    c.max_seq = 64;
    nk::lm::ParameterStore w(c);
    w.init(11);
    const nk::lm::Model m(w);
    const std::vector<int32_t> seq = random_tokens(64, 5, c.vocab - 1);
    const std::vector<float> own = full_logits(m, seq);
    const std::vector<int64_t> off{0, 64};
    const std::vector<int32_t> slots{0};
    auto logits_with = [&](nk::lm::AttentionBackend& backend) {
      nk::lm::Workspace ws(c, {64, 64, false});
      nk::lm::ForwardOptions fo;
      fo.attention = &backend;
      m.forward({seq, off, {}, slots}, ws, fo);
      return std::vector<float>(ws.logits(), ws.logits() + 64 * c.vocab);
    };
    auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
      double d = 0;
      for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
      return d;
    };
    nk::dllm::PolicyOptions policy;
    policy.block = 16;
    for (const char* name : {"dense", "step", "every-uniform", "oracle"}) {
      policy.name = name, policy.sparsity = 0;
      nk::lm::BlockMaskAttention backend(c, policy);
      CHECK_MESSAGE(max_diff(logits_with(backend), own) < 1e-4, name);
      CHECK(backend.stats().density() == 1.0);
      CHECK(backend.stats().calls == c.n_layers);
    }
    // Half the blocks: the model's output through the kernel equals the same
    // planner's masks applied by a float64 softmax, row by row.
    struct Reference : nk::lm::AttentionBackend {
      nk::dllm::MaskPlanner planner;
      explicit Reference(const nk::dllm::PolicyOptions& p) : planner(p) {}
      int64_t length(int32_t) const override { return 0; }
      void attend(const nk::lm::AttentionCall& a, float* out) override {
        const int64_t L = a.batch->rows(), H = a.heads, G = a.kv_heads, hd = a.head_dim;
        nk::dllm::Qkv x;
        x.heads = H, x.kv_heads = G, x.length = L, x.dims = hd;
        x.q.resize(static_cast<size_t>(H * L * hd)), x.k.resize(static_cast<size_t>(G * L * hd)), x.v.resize(x.k.size());
        for (int64_t h = 0; h < H; ++h) x.kv_of.push_back(static_cast<int32_t>(h / (H / G)));
        for (int64_t i = 0; i < L; ++i)
          for (int64_t e = 0; e < hd; ++e) {
            for (int64_t h = 0; h < H; ++h) x.q[static_cast<size_t>((h * L + i) * hd + e)] = a.q[(i * H + h) * hd + e];
            for (int64_t g = 0; g < G; ++g) {
              x.k[static_cast<size_t>((g * L + i) * hd + e)] = a.k[(i * G + g) * hd + e];
              x.v[static_cast<size_t>((g * L + i) * hd + e)] = a.v[(i * G + g) * hd + e];
            }
          }
        const nk::dllm::BlockMask* mask = planner.next(a.layer, x, static_cast<float>(a.scale));
        std::vector<double> o(static_cast<size_t>(H * L * hd));
        nk::dllm::attention_reference(x, mask, planner.options().block, a.scale, o.data());
        for (int64_t i = 0; i < L; ++i)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t e = 0; e < hd; ++e) out[(i * H + h) * hd + e] = static_cast<float>(o[static_cast<size_t>((h * L + i) * hd + e)]);
      }
    };
    for (const char* name : {"step", "once-uniform", "every-uniform", "oracle"}) {
      policy.name = name, policy.sparsity = 0.5;
      nk::lm::BlockMaskAttention backend(c, policy);
      Reference reference(policy);
      const std::vector<float> sparse = logits_with(backend);
      CHECK_MESSAGE(max_diff(sparse, logits_with(reference)) < 1e-4, name);
      CHECK_MESSAGE(max_diff(sparse, own) > 1e-3, name);  // the mask changed the output
      CHECK(backend.stats().density() == doctest::Approx(0.5));
    }
    // Inside the sampler: at sparsity 0 the tokens are the model's own, step
    // by step; the step policy anchors every R steps at each layer (no drift).
    nk::lm::DiffusionOptions d;
    d.gen_length = 48, d.steps = 12, d.block = 16, d.mask = static_cast<int32_t>(c.vocab - 1), d.seed = 2;
    const std::vector<int32_t> prompt = random_tokens(16, 3, c.vocab - 1);
    const auto plain = nk::lm::sample_diffusion(m, prompt, d);
    policy.name = "step", policy.sparsity = 0, policy.anchor_every = 3, policy.drift = 0;
    nk::lm::BlockMaskAttention backend(c, policy);
    d.attention = &backend;
    CHECK(nk::lm::sample_diffusion(m, prompt, d) == plain);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      CHECK(backend.planner().steps(l) == 12);
      CHECK(backend.planner().anchors(l) == 4);
    }
    d.temperature = 0.8;
    backend.reset();
    policy.name = "dense";
    nk::lm::BlockMaskAttention dense(c, policy);
    auto sampled = [&](nk::lm::AttentionBackend* b) {
      d.attention = b;
      return nk::lm::sample_diffusion(m, prompt, d);
    };
    CHECK(sampled(&dense) == sampled(nullptr));
    // Forced along a reference answer: the model's own greedy answer as the
    // reference takes the same trajectory, every prediction right; another
    // answer is written as given and scored position by position.
    {
      nk::lm::DiffusionOptions r = d;
      r.temperature = 0, r.attention = nullptr, r.shadow = nullptr;
      const auto own_answer = nk::lm::sample_diffusion(m, prompt, r);
      const std::vector<int32_t> answer(own_answer.begin() + 16, own_answer.end());
      nk::lm::ReferenceStats stats;
      r.reference = answer, r.reference_stats = &stats;
      CHECK(nk::lm::sample_diffusion(m, prompt, r) == own_answer);
      CHECK(stats.committed == 48);
      CHECK(stats.correct == 48);
      std::vector<int32_t> other = random_tokens(48, 9, c.vocab - 1);
      nk::lm::ReferenceStats other_stats;
      r.reference = other, r.reference_stats = &other_stats;
      std::vector<int32_t> expect(prompt);
      expect.insert(expect.end(), other.begin(), other.end());
      CHECK(nk::lm::sample_diffusion(m, prompt, r) == expect);
      CHECK(other_stats.committed == 48);
      CHECK(other_stats.correct < 48);
      r.reference = std::span<const int32_t>(other.data(), 47);
      CHECK(nk::test::exit_code([&] { nk::lm::sample_diffusion(m, prompt, r); }) == 2);
    }
    // Teacher-forced: the tokens stay the model's own; a shadow at sparsity 0
    // agrees everywhere, one at half the blocks does not. Compared: every
    // masked position of the current block at every step (16 + 12 + 8 + 4
    // per block of 16 in 4 steps, 3 blocks).
    const auto forced = sampled(nullptr);
    for (double sparsity : {0.0, 0.5}) {
      policy.name = "step", policy.sparsity = sparsity;
      nk::lm::BlockMaskAttention shadow(c, policy);
      nk::lm::ShadowStats stats;
      d.shadow = &shadow, d.shadow_stats = &stats;
      CHECK(nk::lm::sample_diffusion(m, prompt, d) == forced);
      CHECK(stats.predictions == 3 * (16 + 12 + 8 + 4));
      if (sparsity == 0) {
        CHECK(stats.agreements == stats.predictions);
        CHECK(stats.kl < 1e-8);
      } else {
        CHECK(stats.kl > 1e-4);
      }
      d.shadow = nullptr, d.shadow_stats = nullptr;
    }
    // Refused: a causal model, a sparsity the grid cannot hold (4 diagonal blocks of 16 per head at 64 tokens).
    CHECK(nk::test::exit_code([&] { nk::lm::BlockMaskAttention(config(nk::lm::Mode::causal), policy); }) == 2);
    policy.name = "step", policy.sparsity = 0.9;
    nk::lm::BlockMaskAttention tight(c, policy);
    CHECK(nk::test::exit_code([&] { logits_with(tight); }) == 2);
  }

  TEST_CASE("diffusion likelihood: LLaDA's bound is the masked cross-entropy for one answer token, stratified over l for two") {
    const nk::lm::Config c = config(nk::lm::Mode::diffusion);
    nk::lm::ParameterStore w(c);
    w.init(12);
    const nk::lm::Model m(w);
    const int32_t mask = static_cast<int32_t>(c.vocab - 1);
    const std::vector<int32_t> row = random_tokens(9, 8, c.vocab - 1);
    // -log p(row[pos] | row with 'masked' replaced by [MASK]), from the plain forward.
    auto ce = [&](const std::vector<int64_t>& masked, int64_t pos) {
      std::vector<int32_t> x = row;
      for (int64_t i : masked) x[static_cast<size_t>(i)] = mask;
      const std::vector<float> z = full_logits(m, x);
      const float* r = z.data() + pos * c.vocab;
      double top = -1e300, sum = 0;
      for (int64_t v = 0; v < c.vocab; ++v) top = std::max(top, double(r[v]));
      for (int64_t v = 0; v < c.vocab; ++v) sum += std::exp(double(r[v]) - top);
      return top + std::log(sum) - r[row[static_cast<size_t>(pos)]];
    };
    // One answer token: every draw masks it, weight 1.
    const auto one = nk::lm::diffusion_nll(m, {row}, {8}, mask, 5, 1);
    CHECK(one[0] == doctest::Approx(ce({8}, 8)).epsilon(1e-5));
    // Two: draw 0 masks l = 1 (either position, weight 2), draw 1 both (weight 1); the mean of the two.
    const auto two = nk::lm::diffusion_nll(m, {row, row}, {7, 7}, mask, 2, 3, 1);
    const double both = ce({7, 8}, 7) + ce({7, 8}, 8);
    const double a = 0.5 * (2 * ce({7}, 7) + both), b = 0.5 * (2 * ce({8}, 8) + both);
    for (double x : two) CHECK((std::abs(x - a) < 1e-4 * a || std::abs(x - b) < 1e-4 * b));
    // Seeded; packing draws into one forward changes nothing; rows are independent of each other.
    const auto again = nk::lm::diffusion_nll(m, {row, row}, {7, 7}, mask, 2, 3, 4);
    CHECK(again[0] == doctest::Approx(two[0]).epsilon(1e-5));
    CHECK(again[1] == doctest::Approx(two[1]).epsilon(1e-5));
    const auto many = nk::lm::diffusion_nll(m, {row}, {2}, mask, 64, 9);
    CHECK(many[0] > 0);
    CHECK(nk::lm::diffusion_nll(m, {row}, {2}, mask, 64, 9, 7)[0] == doctest::Approx(many[0]).epsilon(1e-5));
    // No answer, or a causal model: usage errors.
    CHECK(nk::test::exit_code([&] { nk::lm::diffusion_nll(m, {row}, {9}, mask, 2, 1); }) == 2);
    nk::lm::ParameterStore cw(config(nk::lm::Mode::causal));
    const nk::lm::Model causal(cw);
    CHECK(nk::test::exit_code([&] { nk::lm::diffusion_nll(causal, {row}, {2}, mask, 2, 1); }) == 2);
  }

  TEST_CASE("diffusion training mask: masked share tracks t per row, weights 1/(t B T), targets the clean tokens") {
    const int64_t B = 64, T = 200;
    const std::vector<int32_t> clean = random_tokens(B * T, 2, 50);
    nk::lm::DiffusionBatch batch;
    nk::lm::diffusion_mask(clean.data(), B, T, 50, 7, 3, batch);
    std::vector<int64_t> masked(B, 0);
    std::vector<float> weight(B, 0);
    for (size_t r = 0; r < batch.rows.size(); ++r) {
      const int64_t row = batch.rows[r];
      CHECK(batch.noisy[static_cast<size_t>(row)] == 50);
      CHECK(batch.targets[r] == clean[static_cast<size_t>(row)]);
      ++masked[row / T];
      weight[row / T] = batch.weights[r];
    }
    for (int64_t b = 0; b < B; ++b) {
      if (masked[b] < 10) continue;  // rows with t near 0: too few to estimate
      const double t = 1.0 / (weight[b] * B * T);
      CHECK(std::abs(masked[b] / double(T) - t) < 4 * std::sqrt(t * (1 - t) / T) + 1e-9);
    }
    nk::lm::DiffusionBatch again;
    nk::lm::diffusion_mask(clean.data(), B, T, 50, 7, 3, again);
    CHECK(again.rows == batch.rows);
    nk::lm::diffusion_mask(clean.data(), B, T, 50, 7, 4, again);
    CHECK(again.rows != batch.rows);
  }
}
