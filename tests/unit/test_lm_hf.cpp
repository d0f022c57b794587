// test_lm_hf.cpp - Hugging Face import/export (nk::lm::import_hf, export_hf):
// round trips bit for bit, the logits of exported and of Python-written
// float16/bfloat16 folders against an independent numpy + PyTorch reader
// (tests/unit/lm_hf_reference.py), hostile headers and configs (exit 3
// naming the file and the tensor or key), and a seeded fuzz loop.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "nk/h5.hpp"
#include "nk/lm/hf.hpp"
#include "nk/lm/model.hpp"
#include "nk/lm/tokenizer.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

nk::lm::Config small(bool tied) {
  nk::lm::Config c;
  c.vocab = 61;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.d_ff = 48;
  c.max_seq = 16;
  c.rope_theta = 500;
  c.norm_eps = 1e-5;
  c.tied_head = tied;
  return c;
}

/// init(seed), with the norm gains moved off 1 so that a swapped norm shows.
nk::lm::Checkpoint random_model(const nk::lm::Config& c, uint64_t seed) {
  nk::lm::Checkpoint ck{nk::lm::ParameterStore(c), std::nullopt, std::nullopt};
  ck.weights.init(seed);
  nk::Rng rng(seed + 1);
  for (const auto& t : ck.weights.tensors())
    if (t.shape.size() == 1)
      for (float& x : ck.weights.tensor(t.name)) x += static_cast<float>(0.1 * rng.normal());
  return ck;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Safetensors {
  ordered_json header;
  std::string data;
};

Safetensors read_st(const std::string& path) {
  const std::string raw = slurp(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[static_cast<size_t>(i)]);
  return {ordered_json::parse(raw.substr(8, n)), raw.substr(8 + n)};
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
  return s;
}

void write_st(const std::string& path, const Safetensors& st) {
  std::string text = st.header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  spit(path, le64(text.size()) + text + st.data);
}

/// exit code and message of import_hf(dir)
std::pair<int, std::string> import_result(const std::string& dir) {
  try {
    nk::lm::import_hf(dir);
  } catch (const nk::Error& e) {
    return {static_cast<int>(e.code()), e.what()};
  }
  return {0, ""};
}

std::vector<float> logits_of(const nk::lm::ParameterStore& w, const std::vector<int32_t>& tokens,
                             const std::vector<int64_t>& offsets) {
  const nk::lm::Model model(w);
  int64_t longest = 0;
  for (size_t s = 0; s + 1 < offsets.size(); ++s) longest = std::max(longest, offsets[s + 1] - offsets[s]);
  nk::lm::Workspace ws(w.config(), {static_cast<int64_t>(tokens.size()), longest, false});
  model.forward({tokens, offsets}, ws);
  return {ws.logits(), ws.logits() + tokens.size() * static_cast<size_t>(w.config().vocab)};
}

/// Our logits of the imported model over two segments, checked by the Python reference reading 'dir' itself.
int python_check(const std::string& dir, const nk::lm::ParameterStore& w, const std::string& h5, bool exported) {
  nk::Rng rng(11);
  std::vector<int32_t> tokens(13);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.below(static_cast<uint64_t>(w.config().vocab)));
  const std::vector<int64_t> offsets{0, 8, 13};
  const std::vector<float> logits = logits_of(w, tokens, offsets);
  {
    nk::h5::Writer out(h5, "nk-lm.test-hf/1");
    out.write("/tokens", tokens.data(), {13}, "N");
    out.write("/offsets", offsets.data(), {3}, "S1");
    out.write("/logits", logits.data(), {13, w.config().vocab}, "N,V");
    out.commit();
  }
  const std::string command = "/usr/bin/python3 " NK_SOURCE_DIR "/tests/unit/lm_hf_reference.py check " + dir + " " +
                              h5 + (exported ? " --exported" : "");
  return std::system(command.c_str());
}

void require_same(const nk::lm::Checkpoint& a, const nk::lm::Checkpoint& b) {
  const nk::lm::Config &x = a.weights.config(), &y = b.weights.config();
  CHECK(x.mode == y.mode);
  CHECK(x.vocab == y.vocab);
  CHECK(x.d_model == y.d_model);
  CHECK(x.n_layers == y.n_layers);
  CHECK(x.n_heads == y.n_heads);
  CHECK(x.n_kv_heads == y.n_kv_heads);
  CHECK(x.head_dim == y.head_dim);
  CHECK(x.d_ff == y.d_ff);
  CHECK(x.max_seq == y.max_seq);
  CHECK(x.rope_theta == y.rope_theta);
  CHECK(x.norm_eps == y.norm_eps);
  CHECK(x.tied_head == y.tied_head);
  REQUIRE(a.weights.size() == b.weights.size());
  CHECK(std::memcmp(a.weights.data(), b.weights.data(), static_cast<size_t>(a.weights.size()) * sizeof(float)) == 0);
}

/// A copy of the folder 'good' as 'name', for one hostile variant.
std::string variant(const nk::test::ScratchDir& scratch, const std::string& name) {
  const std::string dir = scratch.file(name);
  fs::copy(scratch.file("good"), dir, fs::copy_options::recursive);
  return dir;
}

}  // namespace

TEST_SUITE("lm_hf") {
  TEST_CASE(
      "export then import: the same config and bit-identical weights, untied and tied; a second export is "
      "byte-identical") {
    nk::test::ScratchDir scratch;
    for (bool tied : {false, true}) {
      CAPTURE(tied);
      const nk::lm::Checkpoint model = random_model(small(tied), tied ? 3 : 2);
      const std::string dir = scratch.file(tied ? "tied" : "untied");
      nk::lm::export_hf(model, dir);
      for (const char* file : {"config.json", "model.safetensors"}) CHECK(fs::exists(dir + "/" + file));
      CHECK(!fs::exists(dir + "/tokenizer.json"));
      const nk::lm::Checkpoint back = nk::lm::import_hf(dir);
      require_same(model, back);
      CHECK(!back.tokenizer);
      nk::lm::export_hf(back, dir + "2");
      CHECK(slurp(dir + "/model.safetensors") == slurp(dir + "2/model.safetensors"));
      CHECK(slurp(dir + "/config.json") == slurp(dir + "2/config.json"));
      const Safetensors st = read_st(dir + "/model.safetensors");
      CHECK(st.header.size() == model.weights.tensors().size() + 1);  // + __metadata__
      CHECK(st.header.contains("lm_head.weight") == !tied);
    }
  }

  TEST_CASE("the exported folder, read by numpy + json, gives PyTorch's logits; ours from the import agree to 1e-4") {
    nk::test::ScratchDir scratch;
    for (bool tied : {false, true}) {
      CAPTURE(tied);
      const nk::lm::Checkpoint model = random_model(small(tied), 5);
      const std::string dir = scratch.file(tied ? "tied" : "untied");
      nk::lm::export_hf(model, dir);
      const nk::lm::Checkpoint back = nk::lm::import_hf(dir);
      CHECK(python_check(dir, back.weights, scratch.file("ours.h5"), true) == 0);
    }
  }

  TEST_CASE("float16 and bfloat16 folders written by the Python script load and give the reference logits") {
    nk::test::ScratchDir scratch;
    for (const char* dtype : {"float16", "bfloat16"}) {
      const std::string dtype_name = dtype;
      CAPTURE(dtype_name);
      const std::string dir = scratch.file(dtype);
      const std::string write =
          "/usr/bin/python3 " NK_SOURCE_DIR "/tests/unit/lm_hf_reference.py write " + dir + " " + dtype + " 9";
      REQUIRE(std::system(write.c_str()) == 0);
      const nk::lm::Checkpoint m = nk::lm::import_hf(dir);
      const nk::lm::Config& c = m.weights.config();
      if (std::string(dtype) == "float16") {  // explicit head_dim != hidden / heads, untied
        CHECK(c.head_dim == 8);
        CHECK(c.d_model == 24);
        CHECK(!c.tied_head);
        CHECK(c.rope_theta == 321.0);
      } else {  // defaults: head_dim = hidden / heads, rope_theta 10000; lm_head in the file ignored (tied)
        CHECK(c.head_dim == 4);
        CHECK(c.tied_head);
        CHECK(c.rope_theta == 1e4);
        CHECK(c.norm_eps == 1e-6);
      }
      CHECK(python_check(dir, m.weights, scratch.file("ours.h5"), false) == 0);
    }
  }

  TEST_CASE("a tokenizer survives export and import; a foreign tokenizer.json is skipped") {
    nk::test::ScratchDir scratch;
    // 256 't' 'h' -> "th", 257 "th" 'e' -> "the", 258 ' ' "the" -> " the", 259 ' ' 'c' -> " c"
    const nk::lm::Tokenizer tok = nk::lm::Tokenizer::from_merges({{'t', 'h'}, {256, 'e'}, {' ', 257}, {' ', 'c'}});
    nk::lm::Config c = small(true);
    c.vocab = tok.size();
    nk::lm::Checkpoint model = random_model(c, 4);
    model.tokenizer = tok;
    const std::string dir = scratch.file("tok");
    nk::lm::export_hf(model, dir);
    REQUIRE(fs::exists(dir + "/tokenizer.json"));
    CHECK(fs::exists(dir + "/tokenizer_config.json"));
    const nk::lm::Checkpoint back = nk::lm::import_hf(dir);
    require_same(model, back);
    REQUIRE(back.tokenizer);
    CHECK(back.tokenizer->merges() == tok.merges());
    const std::string text = "the cat sat on the mat \xff\x01";
    CHECK(back.tokenizer->encode(text) == tok.encode(text));
    const nlohmann::json t = nlohmann::json::parse(slurp(dir + "/tokenizer.json"));
    CHECK(t["model"]["vocab"]["\xc4\xa0the"] == 258);  // ' ' is U+0120 in GPT-2's byte alphabet
    CHECK(t["model"]["merges"][2] == "\xc4\xa0 the");
    CHECK(python_check(dir, back.weights, scratch.file("ours.h5"), true) == 0);  // the script checks tokenizer.json too

    // A trained tokenizer: exported when no two ids stand for the same bytes, and then read back.
    const std::vector<std::string_view> docs{"the cat and the hat and the bat sat on the mat, the cat sat"};
    nk::lm::Tokenizer trained = nk::lm::Tokenizer::train(docs, 280);
    c.vocab = trained.size();
    nk::lm::Checkpoint other = random_model(c, 6);
    other.tokenizer = trained;
    nk::lm::export_hf(other, scratch.file("trained"));
    const nk::lm::Checkpoint trained_back = nk::lm::import_hf(scratch.file("trained"));
    CHECK(fs::exists(scratch.file("trained") + "/tokenizer.json") == trained_back.tokenizer.has_value());
    if (trained_back.tokenizer) CHECK(trained_back.tokenizer->merges() == trained.merges());

    // Foreign: bytes in another order (as real tokenizers have them): the model imports, token ids only.
    nlohmann::json foreign = t;
    foreign["model"]["vocab"]["!"] = 1;
    foreign["model"]["vocab"]["\""] = 0;
    spit(dir + "/tokenizer.json", foreign.dump());
    const nk::lm::Checkpoint no_tok = nk::lm::import_hf(dir);
    CHECK(!no_tok.tokenizer);
    require_same(model, no_tok);
    // Exporting a model without a tokenizer over the folder removes the stale tokenizer files.
    nk::lm::Checkpoint bare = random_model(c, 7);
    nk::lm::export_hf(bare, dir);
    CHECK(!fs::exists(dir + "/tokenizer.json"));
    // Damaged (not JSON): exit 3.
    spit(dir + "/tokenizer.json", "{\"model\":");
    const auto [code, message] = import_result(dir);
    CHECK(code == 3);
    CHECK(message.find("tokenizer.json") != std::string::npos);
  }

  TEST_CASE("a sharded folder (index + two shards) loads like one file") {
    nk::test::ScratchDir scratch;
    const nk::lm::Checkpoint model = random_model(small(false), 8);
    nk::lm::export_hf(model, scratch.file("one"));
    const Safetensors all = read_st(scratch.file("one") + "/model.safetensors");
    const std::string dir = scratch.file("sharded");
    fs::create_directory(dir);
    fs::copy(scratch.file("one") + "/config.json", dir + "/config.json");
    Safetensors shard[2];
    ordered_json weight_map = ordered_json::object();
    int k = 0;
    for (const auto& [name, info] : all.header.items()) {
      if (name == "__metadata__") continue;
      Safetensors& s = shard[k % 2];
      const uint64_t b = info["data_offsets"][0], e = info["data_offsets"][1];
      ordered_json entry = info;
      entry["data_offsets"] = {s.data.size(), s.data.size() + (e - b)};
      s.header[name] = entry;
      s.data += all.data.substr(b, e - b);
      const std::string file = "model-0000" + std::to_string(k % 2 + 1) + "-of-00002.safetensors";
      weight_map[name] = file;
      ++k;
    }
    write_st(dir + "/model-00001-of-00002.safetensors", shard[0]);
    write_st(dir + "/model-00002-of-00002.safetensors", shard[1]);
    spit(dir + "/model.safetensors.index.json",
         ordered_json{{"metadata", {{"total_size", all.data.size()}}}, {"weight_map", weight_map}}.dump());
    require_same(model, nk::lm::import_hf(dir));
    // An index naming a shard outside the folder, or a tensor in the wrong shard: exit 3.
    ordered_json bad = weight_map;
    bad["model.norm.weight"] = "../model.safetensors";
    spit(dir + "/model.safetensors.index.json", ordered_json{{"weight_map", bad}}.dump());
    CHECK(import_result(dir).first == 3);
    bad = weight_map;
    bad["model.norm.weight"] = bad["model.norm.weight"] == "model-00001-of-00002.safetensors"
                                   ? "model-00002-of-00002.safetensors"
                                   : "model-00001-of-00002.safetensors";
    spit(dir + "/model.safetensors.index.json", ordered_json{{"weight_map", bad}}.dump());
    const auto [code, message] = import_result(dir);
    CHECK(code == 3);
    CHECK(message.find("model.norm.weight") != std::string::npos);
  }

  TEST_CASE("hostile safetensors: exit 3 naming the file and the tensor") {
    nk::test::ScratchDir scratch;
    nk::lm::export_hf(random_model(small(false), 1), scratch.file("good"));
    const std::string st_name = "/model.safetensors";
    const Safetensors good = read_st(scratch.file("good") + st_name);
    const std::string raw = slurp(scratch.file("good") + st_name);
    REQUIRE(import_result(scratch.file("good")).first == 0);
    struct Case {
      const char* name;
      const char* tensor;  // named in the message ("" : none)
      std::function<void(const std::string& path)> mutate;
    };
    const auto edit = [&](const std::function<void(Safetensors&)>& f) {
      return [&good, f](const std::string& path) {
        Safetensors st = good;
        f(st);
        write_st(path, st);
      };
    };
    const char* norm = "model.norm.weight";
    const std::vector<Case> cases = {
        {"shorter than 8 bytes", "", [&](const std::string& p) { spit(p, raw.substr(0, 5)); }},
        {"header length past the end", "", [&](const std::string& p) { spit(p, le64(raw.size()) + raw.substr(8)); }},
        {"header length 2^64 - 1", "", [&](const std::string& p) { spit(p, le64(~uint64_t{0}) + raw.substr(8)); }},
        {"header not JSON", "",
         [&](const std::string& p) { spit(p, le64(16) + "{\"a\": not json} " + raw.substr(24)); }},
        {"header a JSON list", "", [&](const std::string& p) { spit(p, le64(8) + "[1,2,3] " + good.data); }},
        {"header nested 100000 deep", "",
         [&](const std::string& p) { spit(p, le64(100000) + std::string(100000, '[') + good.data); }},
        {"truncated data", "", [&](const std::string& p) { spit(p, raw.substr(0, raw.size() - 100)); }},
        {"offsets past the end", norm,
         edit([&](Safetensors& s) { s.header[norm]["data_offsets"][1] = uint64_t{1} << 40; })},
        {"negative offset", norm, edit([&](Safetensors& s) { s.header[norm]["data_offsets"][0] = -4; })},
        {"offsets reversed", norm, edit([&](Safetensors& s) {
           s.header[norm]["data_offsets"] = ordered_json::array({128, 0});
         })},
        {"overlapping offsets", "model.layers.0.", edit([&](Safetensors& s) {
           s.header["model.layers.0.post_attention_layernorm.weight"]["data_offsets"] =
               s.header["model.layers.0.input_layernorm.weight"]["data_offsets"];
         })},
        {"bytes not shape * dtype", norm,
         edit([&](Safetensors& s) { s.header[norm]["shape"] = ordered_json::array({31}); })},
        {"negative dimension", norm,
         edit([&](Safetensors& s) { s.header[norm]["shape"] = ordered_json::array({-32}); })},
        {"fractional dimension", norm,
         edit([&](Safetensors& s) { s.header[norm]["shape"] = ordered_json::array({32.5}); })},
        {"dimensions whose product overflows", norm, edit([&](Safetensors& s) {
           s.header[norm]["shape"] = ordered_json::array({uint64_t{1} << 32, uint64_t{1} << 32, 16});
         })},
        {"unknown dtype", norm, edit([&](Safetensors& s) { s.header[norm]["dtype"] = "F33"; })},
        {"an integer dtype", norm, edit([&](Safetensors& s) { s.header[norm]["dtype"] = "I32"; })},
        {"wrong shape for the config", norm, edit([&](Safetensors& s) {
           s.header[norm]["shape"] = ordered_json::array({16, 2});
         })},
        {"missing tensor", norm, edit([&](Safetensors& s) {
           ordered_json h;
           for (const auto& [k, v] : s.header.items()) h[k == norm ? std::string("model.norm.weighx") : k] = v;
           s.header = h;
         })},
        {"a tensor the architecture lacks", "q_proj.bias", edit([&](Safetensors& s) {
           const uint64_t end = s.data.size();
           s.header["model.layers.0.self_attn.q_proj.bias"] = {{"dtype", "F32"},
                                                               {"shape", ordered_json::array({0})},
                                                               {"data_offsets", ordered_json::array({end, end})}};
         })},
        {"tensor entry not an object", norm, edit([&](Safetensors& s) { s.header[norm] = 7; })},
        {"NaN weight", norm, edit([&](Safetensors& s) {
           const uint64_t b = s.header[norm]["data_offsets"][0];
           const float nan = std::nanf("");
           std::memcpy(&s.data[b + 12], &nan, 4);
         })},
        {"infinite weight", "lm_head.weight", edit([&](Safetensors& s) {
           const uint64_t b = s.header["lm_head.weight"]["data_offsets"][0];
           const float inf = INFINITY;
           std::memcpy(&s.data[b], &inf, 4);
         })},
    };
    for (const Case& c : cases) {
      const std::string name = c.name;
      CAPTURE(name);
      const std::string dir = variant(scratch, c.name);
      c.mutate(dir + st_name);
      const auto [code, message] = import_result(dir);
      CAPTURE(message);
      CHECK(code == 3);
      CHECK(message.find(dir + st_name) != std::string::npos);
      CHECK(message.find(c.tensor) != std::string::npos);
      CHECK(message.find('\n') == std::string::npos);
    }
  }

  TEST_CASE("hostile config.json: exit 3 naming the key") {
    nk::test::ScratchDir scratch;
    nk::lm::export_hf(random_model(small(false), 1), scratch.file("good"));
    const nlohmann::json good = nlohmann::json::parse(slurp(scratch.file("good") + "/config.json"));
    const std::vector<std::pair<const char*, std::function<void(nlohmann::json&)>>> cases = {
        {"architectures",
         [](nlohmann::json& j) { j["architectures"] = nlohmann::json::array({"MistralForCausalLM"}); }},
        {"model_type",
         [](nlohmann::json& j) {
           j.erase("architectures");
           j["model_type"] = "gpt2";
         }},
        {"rope_scaling",
         [](nlohmann::json& j) {
           j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
         }},
        {"attention_bias", [](nlohmann::json& j) { j["attention_bias"] = true; }},
        {"mlp_bias", [](nlohmann::json& j) { j["mlp_bias"] = true; }},
        {"hidden_act", [](nlohmann::json& j) { j["hidden_act"] = "gelu"; }},
        {"vocab_size", [](nlohmann::json& j) { j["vocab_size"] = "61"; }},
        {"hidden_size", [](nlohmann::json& j) { j.erase("hidden_size"); }},
        {"num_hidden_layers", [](nlohmann::json& j) { j["num_hidden_layers"] = 2.5; }},
        {"intermediate_size", [](nlohmann::json& j) { j["intermediate_size"] = uint64_t{1} << 62; }},
        {"n_kv_heads", [](nlohmann::json& j) { j["num_key_value_heads"] = 3; }},  // Config::validate's words
        {"parameters",
         [](nlohmann::json& j) {
           j["vocab_size"] = 1 << 22;
           j["hidden_size"] = 1 << 16;
         }},  // refused before allocating
        {"head_dim",
         [](nlohmann::json& j) {
           j.erase("head_dim");
           j["hidden_size"] = 30;
         }},
        {"tie_word_embeddings", [](nlohmann::json& j) { j["tie_word_embeddings"] = "yes"; }},
    };
    for (const auto& [key, mutate] : cases) {
      const std::string key_name = key;
      CAPTURE(key_name);
      const std::string dir = variant(scratch, key);
      nlohmann::json j = good;
      mutate(j);
      spit(dir + "/config.json", j.dump());
      const auto [code, message] = import_result(dir);
      CAPTURE(message);
      CHECK(code == 3);
      CHECK(message.find(dir + "/config.json") != std::string::npos);
      CHECK(message.find(key) != std::string::npos);
    }
    const std::string dir = variant(scratch, "not-json");
    spit(dir + "/config.json", "{\"hidden_size\": 32,");
    CHECK(import_result(dir).first == 3);
    fs::remove(dir + "/config.json");
    CHECK(import_result(dir).first == 3);
    CHECK(import_result(scratch.file("no-such-folder")).first == 4);
  }

  TEST_CASE("fuzz: 300 seeded mutations of a valid file's first 200 bytes and random headers give exit 0 or 3 only") {
    nk::test::ScratchDir scratch;
    nk::lm::export_hf(random_model(small(false), 1), scratch.file("good"));
    const std::string path = scratch.file("good") + "/model.safetensors";
    const std::string raw = slurp(path);
    const std::vector<std::string> pieces = {"{",
                                             "}",
                                             "[",
                                             "]",
                                             ",",
                                             ":",
                                             "\"dtype\"",
                                             "\"shape\"",
                                             "\"data_offsets\"",
                                             "\"F32\"",
                                             "\"BF16\"",
                                             "\"F16\"",
                                             "\"model.norm.weight\"",
                                             "\"lm_head.weight\"",
                                             "\"__metadata__\"",
                                             "0",
                                             "32",
                                             "128",
                                             "-1",
                                             "1e400",
                                             "18446744073709551615",
                                             "99999999999999999999",
                                             "null",
                                             "true",
                                             "\"\\u0000\"",
                                             " "};
    nk::Rng rng(2024);
    const auto start = std::chrono::steady_clock::now();
    int ok = 0, refused = 0;
    std::vector<std::string> other;
    for (int i = 0; i < 300; ++i) {
      std::string bytes = raw;
      if (i % 2 == 0) {
        for (uint64_t k = 0, n = 1 + rng.below(4); k < n; ++k)
          bytes[rng.below(200)] = static_cast<char>(rng.below(256));
      } else {
        std::string header;
        for (uint64_t k = 0, n = rng.below(60); k < n; ++k) header += pieces[rng.below(pieces.size())];
        const uint64_t declared = rng.below(4) == 0 ? rng() : header.size();
        bytes = le64(declared) + header + raw.substr(8 + rng.below(raw.size() - 8));
      }
      spit(path, bytes);
      try {
        const auto [code, message] = import_result(scratch.file("good"));
        if (code == 0)
          ++ok;
        else if (code == 3)
          ++refused;
        else
          other.push_back(std::to_string(i) + ": exit " + std::to_string(code) + " " + message);
      } catch (const std::exception& e) {
        other.push_back(std::to_string(i) + ": " + e.what());
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("fuzz: " << ok << " loaded, " << refused << " refused in " << seconds << " s");
    CHECK(other.empty());
    for (const std::string& o : other) MESSAGE(o);
    CHECK(refused > 200);
    CHECK(seconds < 2.0);
  }

  TEST_CASE("export refuses a diffusion model (exit 2) and, with no_clobber, an existing file (exit 4)") {
    nk::test::ScratchDir scratch;
    nk::lm::Config c = small(true);
    c.mode = nk::lm::Mode::diffusion;
    CHECK(nk::test::exit_code([&] { nk::lm::export_hf(random_model(c, 1), scratch.file("diff")); }) == 2);
    CHECK(!fs::exists(scratch.file("diff") + "/config.json"));
    const nk::lm::Checkpoint model = random_model(small(true), 1);
    nk::lm::export_hf(model, scratch.file("out"));
    CHECK(nk::test::exit_code([&] { nk::lm::export_hf(model, scratch.file("out"), true); }) == 4);
    size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(scratch.file("out"))) ++entries;
    CHECK(entries == 2);  // config.json, model.safetensors: no temporary file left
  }
}
