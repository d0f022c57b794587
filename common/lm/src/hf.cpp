// hf.cpp - Hugging Face Llama folders: config.json, safetensors (read
// strictly: every header checked against its file before anything is
// allocated from it) and a byte-level BPE tokenizer.json.
#include "nk/lm/hf.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "byte_level.hpp"

namespace nk::lm {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr uint64_t kMostHeader = uint64_t{100} << 20;  // safetensors' own limit
constexpr uintmax_t kMostJson = uintmax_t{512} << 20;  // config.json, the index, tokenizer.json
constexpr int kMostDepth = 64;                         // JSON nesting: real files use 4

std::string in_dir(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

/// Text from a hostile file, fit for a one-line message.
std::string printable(std::string_view s, size_t most = 60) {
  std::string out;
  for (char ch : s.substr(0, most)) out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  if (s.size() > most) out += "...";
  return out;
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) throw io_error(path, "cannot read: " + ec.message());
  if (size > kMostJson) throw input_error(path, "", std::to_string(size) + " bytes is too large for a JSON file here");
  std::string text(static_cast<size_t>(size), '\0');
  std::ifstream f(path, std::ios::binary);
  if (!f || !f.read(text.data(), static_cast<std::streamsize>(size))) throw io_error(path, "cannot read");
  return text;
}

json parse_json(const std::string& path, const std::string& text) {
  // A callback bounds the nesting, so that "[[[[..." cannot grow the parser's stack without end.
  const json::parser_callback_t depth = [&](int level, json::parse_event_t, json&) {
    if (level > kMostDepth)
      throw input_error(path, "", "JSON nested more than " + std::to_string(kMostDepth) + " deep");
    return true;
  };
  try {
    return json::parse(text, depth);
  } catch (const json::exception& e) {
    throw input_error(path, "", "not valid JSON (" + printable(e.what(), 200) + ")");
  }
}

// --- config.json ----------------------------------------------------------------

Config read_config(const std::string& path) {
  const json j = parse_json(path, read_text(path));
  if (!j.is_object()) throw input_error(path, "", "not a JSON object");
  const auto bad = [&](const std::string& key, const std::string& why) {
    return input_error(path, "", "key '" + key + "' " + why);
  };
  const auto has = [&](const char* key) { return j.contains(key) && !j.at(key).is_null(); };
  const auto shown = [](const json& v) { return printable(v.dump()); };
  const auto text_value = [&](const char* key, const std::string& fallback) {
    if (!has(key)) return fallback;
    if (!j.at(key).is_string()) throw bad(key, "must be a string, got " + shown(j.at(key)));
    return j.at(key).get<std::string>();
  };
  const auto integer = [&](const char* key, std::optional<int64_t> fallback) -> int64_t {
    if (!has(key)) {
      if (fallback) return *fallback;
      throw bad(key, "is missing");
    }
    const json& v = j.at(key);
    if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t{1} << 40))
      throw bad(key, "is absurdly large: " + shown(v));
    if (v.is_number_integer()) return v.get<int64_t>();
    throw bad(key, "must be an integer, got " + shown(v));
  };
  const auto number = [&](const char* key, double fallback) {
    if (!has(key)) return fallback;
    if (!j.at(key).is_number()) throw bad(key, "must be a number, got " + shown(j.at(key)));
    return j.at(key).get<double>();
  };
  const auto boolean = [&](const char* key, bool fallback) {
    if (!has(key)) return fallback;
    if (!j.at(key).is_boolean()) throw bad(key, "must be true or false, got " + shown(j.at(key)));
    return j.at(key).get<bool>();
  };

  if (has("architectures")) {
    const json& a = j.at("architectures");
    bool llama = false;
    if (a.is_array())
      for (const json& name : a) llama = llama || (name.is_string() && name.get<std::string>() == "LlamaForCausalLM");
    if (!llama) throw bad("architectures", "is " + shown(a) + "; only LlamaForCausalLM is supported");
  }
  const std::string model_type = text_value("model_type", "");
  if (model_type != "llama" && (!model_type.empty() || !has("architectures")))
    throw bad("model_type", "is \"" + printable(model_type) + "\"; only llama is supported");
  if (has("rope_scaling"))
    throw bad("rope_scaling", "is " + shown(j.at("rope_scaling")) + "; only plain RoPE (null) is supported");
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (boolean(key, false)) throw bad(key, "is true; this Llama has no biases");
  const std::string act = text_value("hidden_act", "silu");
  if (act != "silu") throw bad("hidden_act", "is \"" + printable(act) + "\"; only silu (SwiGLU) is supported");

  Config c;
  c.mode = Mode::causal;
  c.d_model = integer("hidden_size", std::nullopt);
  c.d_ff = integer("intermediate_size", std::nullopt);
  c.n_layers = integer("num_hidden_layers", std::nullopt);
  c.n_heads = integer("num_attention_heads", std::nullopt);
  c.n_kv_heads = integer("num_key_value_heads", c.n_heads);
  if (!has("head_dim") && (c.n_heads < 1 || c.d_model % c.n_heads != 0))
    throw bad("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
  c.head_dim = integer("head_dim", c.n_heads > 0 ? c.d_model / c.n_heads : 0);
  c.vocab = integer("vocab_size", std::nullopt);
  c.max_seq = integer("max_position_embeddings", 2048);  // transformers' LlamaConfig defaults
  c.norm_eps = number("rms_norm_eps", 1e-6);
  c.rope_theta = number("rope_theta", 1e4);
  c.tied_head = boolean("tie_word_embeddings", false);
  try {
    c.validate("the model's shape");
  } catch (const Error& e) {  // sizes that cannot be are the file's fault: exit 3, before allocating
    throw input_error(path, "", e.what());
  }
  return c;
}

ordered_json config_json(const Config& c, const Tokenizer* tok) {
  const auto id = [&](int32_t v) { return tok && v >= 0 ? ordered_json(v) : ordered_json(nullptr); };
  return ordered_json{{"architectures", ordered_json::array({"LlamaForCausalLM"})},
                      {"model_type", "llama"},
                      {"attention_bias", false},
                      {"mlp_bias", false},
                      {"bos_token_id", id(tok ? tok->bos() : 0)},
                      {"eos_token_id", id(tok ? tok->eos() : 0)},
                      {"pad_token_id", id(tok ? tok->pad() : 0)},
                      {"head_dim", c.head_dim},
                      {"hidden_act", "silu"},
                      {"hidden_size", c.d_model},
                      {"initializer_range", 0.02},
                      {"intermediate_size", c.d_ff},
                      {"max_position_embeddings", c.max_seq},
                      {"num_attention_heads", c.n_heads},
                      {"num_hidden_layers", c.n_layers},
                      {"num_key_value_heads", c.n_kv_heads},
                      {"pretraining_tp", 1},
                      {"rms_norm_eps", c.norm_eps},
                      {"rope_scaling", nullptr},
                      {"rope_theta", c.rope_theta},
                      {"tie_word_embeddings", c.tied_head},
                      {"torch_dtype", "float32"},
                      {"use_cache", true},
                      {"vocab_size", c.vocab}};
}

// --- safetensors -----------------------------------------------------------------

enum class DType { f64, f32, f16, bf16 };

struct Entry {
  std::string file;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  ///< absolute offsets in 'file'
};

uint64_t dtype_bytes(DType d) {
  return d == DType::f64 ? 8 : d == DType::f32 ? 4 : 2;
}

float from_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float x = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -x : x;
  }
  const uint32_t bits =
      sign | (exponent == 31 ? 0x7f800000u | (mantissa << 13) : ((exponent + 112) << 23) | (mantissa << 13));
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

uint64_t load_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/// Adds one file's tensors to 'entries' after checking its header against its size.
void read_header(const std::string& path, std::map<std::string, Entry>& entries) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) throw io_error(path, "cannot read: " + ec.message());
  if (size < 8)
    throw input_error(
        path, "",
        "a safetensors file starts with an 8-byte header length; this one has " + std::to_string(size) + " bytes");
  std::ifstream f(path, std::ios::binary);
  unsigned char length[8];
  if (!f.read(reinterpret_cast<char*>(length), 8)) throw io_error(path, "cannot read");
  const uint64_t n = load_le(length, 8);
  if (n > size - 8)
    throw input_error(
        path, "",
        "header length " + std::to_string(n) + " passes the end of the file (" + std::to_string(size) + " bytes)");
  if (n > kMostHeader)
    throw input_error(path, "", "header length " + std::to_string(n) + " is over safetensors' limit of 100 MB");
  std::string text(static_cast<size_t>(n), '\0');
  if (!f.read(text.data(), static_cast<std::streamsize>(n))) throw io_error(path, "cannot read");
  const json header = parse_json(path, text);
  if (!header.is_object()) throw input_error(path, "", "the header is not a JSON object");
  const uint64_t data_start = 8 + n, buffer = size - data_start;
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> spans;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw input_error(path, "", "__metadata__ is not an object");
      continue;
    }
    const auto bad = [&](const std::string& why) {
      return input_error(path, "", "tensor " + printable(name) + ": " + why);
    };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw bad("needs dtype, shape and data_offsets");
    Entry e;
    e.file = path;
    const json& dtype = v.at("dtype");
    const std::string d = dtype.is_string() ? dtype.get<std::string>() : dtype.dump();
    if (d == "F32")
      e.dtype = DType::f32;
    else if (d == "F16")
      e.dtype = DType::f16;
    else if (d == "BF16")
      e.dtype = DType::bf16;
    else if (d == "F64")
      e.dtype = DType::f64;
    else
      throw bad("dtype " + printable(d) + "; weights must be F32, F16, BF16 or F64");
    const json& shape = v.at("shape");
    if (!shape.is_array() || shape.size() > 8)
      throw bad("shape must be a list of at most 8 sizes, got " + printable(shape.dump()));
    uint64_t count = 1;
    constexpr uint64_t kMostCount = uint64_t{1} << 60;  // count * 8 bytes cannot overflow
    for (const json& s : shape) {
      if (!s.is_number_unsigned())
        throw bad("shape " + printable(shape.dump()) + " holds something that is not a size >= 0");
      const uint64_t dim = s.get<uint64_t>();
      if (dim > kMostCount || (dim != 0 && count > kMostCount / dim))
        throw bad("shape " + printable(shape.dump()) + " is absurdly large");
      count *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    const json& offsets = v.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      throw bad("data_offsets must be [begin, end], got " + printable(offsets.dump()));
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > buffer)
      throw bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                "] are not inside the data buffer of " + std::to_string(buffer) + " bytes");
    if (end - begin != count * dtype_bytes(e.dtype))
      throw bad(std::to_string(end - begin) + " bytes of data for shape " + printable(shape.dump()) + " of " + d +
                ", which needs " + std::to_string(count * dtype_bytes(e.dtype)));
    e.begin = data_start + begin;
    e.end = data_start + end;
    if (entries.count(name)) throw bad("appears in two files");
    spans.push_back({{begin, end}, name});
    entries.emplace(name, std::move(e));
  }
  // The buffer must be indexed entirely, without gaps or overlaps (no polyglot files), as the reference reader demands.
  std::sort(spans.begin(), spans.end());
  uint64_t cursor = 0;
  for (const auto& [span, name] : spans) {
    if (span.first != cursor)
      throw input_error(path, "",
                        "tensor " + printable(name) + ": data_offsets begin at " + std::to_string(span.first) +
                            (span.first < cursor ? ", inside the tensor before it" : ", leaving a gap") +
                            " (the previous ends at " + std::to_string(cursor) + ")");
    cursor = span.second;
  }
  if (cursor != buffer)
    throw input_error(path, "",
                      std::to_string(buffer - cursor) + " bytes at the end of the data buffer belong to no tensor");
}

bool plain_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos;
}

/// Every tensor of model.safetensors, or of the shards model.safetensors.index.json names.
/// 'source' becomes the file that names them (for messages about a missing tensor).
std::map<std::string, Entry> read_tensor_table(const std::string& dir, std::string& source) {
  std::map<std::string, Entry> entries;
  const std::string single = in_dir(dir, "model.safetensors"), index = in_dir(dir, "model.safetensors.index.json");
  source = fs::exists(single) ? single : index;
  if (fs::exists(single)) {
    read_header(single, entries);
    return entries;
  }
  if (!fs::exists(index))
    throw input_error(dir, "",
                      "no model.safetensors (nor model.safetensors.index.json): not a Hugging Face model folder");
  const json ix = parse_json(index, read_text(index));
  if (!ix.is_object() || !ix.contains("weight_map") || !ix.at("weight_map").is_object())
    throw input_error(index, "", "needs an object weight_map {tensor: file}");
  std::set<std::string> shards;
  for (const auto& [name, file] : ix.at("weight_map").items()) {
    if (!file.is_string() || !plain_name(file.get<std::string>()))
      throw input_error(
          index, "",
          "tensor " + printable(name) + ": the shard must be a file name in the folder, got " + printable(file.dump()));
    shards.insert(file.get<std::string>());
  }
  for (const std::string& shard : shards) {
    if (!fs::exists(in_dir(dir, shard))) throw input_error(index, "", "shard " + printable(shard) + " is missing");
    read_header(in_dir(dir, shard), entries);
  }
  for (const auto& [name, file] : ix.at("weight_map").items()) {
    const auto e = entries.find(name);
    if (e == entries.end() || e->second.file != in_dir(dir, file.get<std::string>()))
      throw input_error(index, "", "tensor " + printable(name) + " is not in " + printable(file.get<std::string>()));
  }
  return entries;
}

/// Names and shapes of a Llama of this config: ParameterStore's layout, known before allocating it.
std::vector<std::pair<std::string, std::vector<int64_t>>> llama_layout(const Config& c) {
  const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> layout{{"model.embed_tokens.weight", {c.vocab, c.d_model}}};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (const char* norm : {"input_layernorm.weight", "post_attention_layernorm.weight"})
      layout.push_back({layer_tensor(l, norm), {c.d_model}});
    layout.push_back({layer_tensor(l, "self_attn.q_proj.weight"), {q, c.d_model}});
    layout.push_back({layer_tensor(l, "self_attn.k_proj.weight"), {kv, c.d_model}});
    layout.push_back({layer_tensor(l, "self_attn.v_proj.weight"), {kv, c.d_model}});
    layout.push_back({layer_tensor(l, "self_attn.o_proj.weight"), {c.d_model, q}});
    layout.push_back({layer_tensor(l, "mlp.gate_proj.weight"), {c.d_ff, c.d_model}});
    layout.push_back({layer_tensor(l, "mlp.up_proj.weight"), {c.d_ff, c.d_model}});
    layout.push_back({layer_tensor(l, "mlp.down_proj.weight"), {c.d_model, c.d_ff}});
  }
  layout.push_back({"model.norm.weight", {c.d_model}});
  if (!c.tied_head) layout.push_back({"lm_head.weight", {c.vocab, c.d_model}});
  return layout;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Checks the table against the config: every tensor present with its shape, nothing foreign.
void check_table(const std::map<std::string, Entry>& entries, const Config& c, const std::string& source) {
  std::set<std::string> known;
  for (const auto& [name, shape] : llama_layout(c)) {
    const auto e = entries.find(name);
    if (e == entries.end()) throw input_error(source, "", "tensor " + name + " is missing");
    if (e->second.shape != shape)
      throw input_error(
          e->second.file, "",
          "tensor " + name + ": shape " + shape_text(e->second.shape) + ", config.json needs " + shape_text(shape));
    known.insert(name);
  }
  for (const auto& [name, e] : entries) {
    // Tied models may carry lm_head anyway; old exports carry RoPE's inverse frequencies. Both are recomputed.
    const bool derived = (c.tied_head && name == "lm_head.weight") || name.ends_with(".rotary_emb.inv_freq");
    if (!known.count(name) && !derived)
      throw input_error(e.file, "",
                        "tensor " + printable(name) + " is not part of a LlamaForCausalLM of this config.json");
  }
}

void read_tensor(std::ifstream& f, const Entry& e, const std::string& name, float* out,
                 std::vector<unsigned char>& raw) {
  raw.resize(static_cast<size_t>(e.end - e.begin));  // within the file's size, checked in read_header
  f.seekg(static_cast<std::streamoff>(e.begin));
  if (!f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
    throw input_error(e.file, "", "tensor " + name + ": the file ends inside its data");
  const uint64_t width = dtype_bytes(e.dtype), count = raw.size() / width;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t bits = load_le(raw.data() + i * width, static_cast<int>(width));
    float x;
    if (e.dtype == DType::f32) {
      const auto u = static_cast<uint32_t>(bits);
      std::memcpy(&x, &u, 4);
    } else if (e.dtype == DType::f64) {
      double d;
      std::memcpy(&d, &bits, 8);
      if (!(std::abs(d) <= std::numeric_limits<float>::max()))
        throw input_error(e.file, "",
                          "tensor " + name + ": weight at index " + std::to_string(i) + " is not a finite float32");
      x = static_cast<float>(d);
    } else {
      x = e.dtype == DType::f16 ? from_f16(static_cast<uint16_t>(bits)) : from_bf16(static_cast<uint16_t>(bits));
    }
    if (!std::isfinite(x))
      throw input_error(e.file, "", "tensor " + name + ": non-finite weight at index " + std::to_string(i));
    out[i] = x;
  }
}

void write_safetensors(std::ostream& out, const ParameterStore& w) {
  std::vector<const TensorInfo*> order;
  for (const TensorInfo& t : w.tensors()) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->name < b->name; });
  ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const TensorInfo* t : order) {
    const uint64_t end = offset + 4 * static_cast<uint64_t>(t->size);
    header[t->name] = {{"dtype", "F32"}, {"shape", t->shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-aligned, as the reference writer pads it
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<unsigned char> bytes;
  for (const TensorInfo* t : order) {
    bytes.resize(4 * static_cast<size_t>(t->size));
    const float* x = w.data() + t->offset;
    for (int64_t i = 0; i < t->size; ++i) {
      uint32_t u;
      std::memcpy(&u, &x[i], 4);
      for (int k = 0; k < 4; ++k)
        bytes[4 * static_cast<size_t>(i) + static_cast<size_t>(k)] = static_cast<unsigned char>(u >> (8 * k));
    }
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
}

// --- tokenizer.json ---------------------------------------------------------------

/// tokenizer.json of Hugging Face tokenizers for our BPE, in its vocabulary layout; empty when two ids stand for
/// the same bytes (a vocabulary maps strings to ids, so it cannot hold both).
std::optional<ordered_json> tokenizer_json(const Tokenizer& tok) {
  const std::vector<std::string> text = internal_symbols(tok);
  std::vector<std::pair<int32_t, const std::string*>> entries;
  std::unordered_map<std::string, int32_t> seen;
  for (size_t t = 0; t < text.size(); ++t) {
    const int32_t id = tok.vocab_id(static_cast<int32_t>(t));
    if (id < 0) continue;
    const auto [at, fresh] = seen.emplace(text[t], id);
    if (!fresh) {
      spdlog::warn("export: tokenizer.json not written: tokens {} and {} stand for the same bytes", at->second, id);
      return std::nullopt;
    }
    entries.emplace_back(id, &text[t]);
  }
  std::sort(entries.begin(), entries.end());
  ordered_json vocab = ordered_json::object();
  // Texts are unique (checked above): append in id order without ordered_map's linear look-up.
  auto& object = vocab.get_ref<ordered_json::object_t&>();
  for (const auto& [id, s] : entries) object.emplace_back(*s, id);
  ordered_json merges = ordered_json::array();
  for (const auto& [left, right] : tok.merges())
    merges.push_back(text[static_cast<size_t>(left)] + " " + text[static_cast<size_t>(right)]);
  ordered_json added = ordered_json::array();
  std::set<int32_t> specials;
  for (int k = 0; k < 4; ++k) {
    const int32_t id = std::array{tok.bos(), tok.eos(), tok.mask(), tok.pad()}[static_cast<size_t>(k)];
    if (id < 0 || !specials.insert(id).second) continue;  // absent, or BOS that is EOS
    added.push_back({{"id", id},
                     {"content", tok.special_name(k)},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  const ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  return ordered_json{{"version", "1.0"},
                      {"truncation", nullptr},
                      {"padding", nullptr},
                      {"added_tokens", added},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", byte_level},
                      {"post_processor", nullptr},
                      {"decoder", byte_level},
                      {"model",
                       {{"type", "BPE"},
                        {"dropout", nullptr},
                        {"unk_token", nullptr},
                        {"continuing_subword_prefix", nullptr},
                        {"end_of_word_suffix", nullptr},
                        {"fuse_unk", false},
                        {"byte_fallback", false},
                        {"ignore_merges", false},
                        {"vocab", vocab},
                        {"merges", merges}}}};
}

/// A config.json token id (an integer, a list whose first entry is one, or absent/null: -1).
int32_t config_token(const json& config, const char* key) {
  if (!config.contains(key)) return -1;
  const json& v = config.at(key);
  const json& x = v.is_array() && !v.empty() ? v.at(0) : v;
  return x.is_number_integer() ? static_cast<int32_t>(x.get<int64_t>()) : -1;
}

/// The merges and vocabulary layout of a tokenizer.json that is a byte-level BPE (ByteLevel pre-tokenizer without
/// a prefix space and with GPT-2's pattern, ByteLevel decoder, no normalizer, no byte fallback), or why it is not
/// one. Any id layout: bytes, merge results and specials where the vocabulary puts them; BOS, EOS and PAD from
/// config.json's ids, MASK the special whose text holds "mask". json errors (a missing key) are the caller's.
std::string layout_of(const json& t, const json& config, int64_t vocab, std::vector<std::pair<int32_t, int32_t>>& merges,
                      Tokenizer::Layout& layout) {
  const json& model = t.at("model");
  if (model.value("type", "") != "BPE") return "model.type is not BPE";
  if (model.value("byte_fallback", false)) return "byte_fallback is set";
  const auto byte_level = [&](const char* key) {
    const json& p = t.at(key);
    return p.is_object() && p.value("type", "") == "ByteLevel" && !p.value("add_prefix_space", true) &&
           p.value("use_regex", true);
  };
  if (!byte_level("pre_tokenizer") || t.at("decoder").value("type", "") != "ByteLevel")
    return "not a byte-level BPE with pre_tokenizer ByteLevel (no prefix space) and decoder ByteLevel";
  if (t.contains("normalizer") && !t.at("normalizer").is_null()) return "it has a normalizer";
  if (model.contains("continuing_subword_prefix") && !model.at("continuing_subword_prefix").is_null())
    return "it has a continuing_subword_prefix";
  std::unordered_map<std::string, int32_t> id_of;
  for (const auto& [text, id] : model.at("vocab").items()) {
    if (!id.is_number_integer()) return "a vocabulary id is not an integer";
    const int64_t i = id.get<int64_t>();
    if (i < 0 || i >= vocab) return "vocabulary id " + std::to_string(i) + " is outside config.json's vocab_size";
    id_of.emplace(text, static_cast<int32_t>(i));
  }
  // Internal tokens: the 256 bytes, then one per merge; each text once.
  std::unordered_map<std::string, int32_t> internal;
  for (int b = 0; b < 256; ++b) {
    const std::string& sym = byte_symbols()[static_cast<size_t>(b)];
    internal.emplace(sym, b);
    const auto found = id_of.find(sym);
    layout.ids.push_back(found == id_of.end() ? -1 : found->second);
  }
  const json& m = model.at("merges");
  if (!m.is_array() || static_cast<int64_t>(m.size()) > vocab) return "its merges are not a list that fits the vocabulary";
  for (size_t k = 0; k < m.size(); ++k) {
    std::string left, right;
    if (m[k].is_string()) {
      const std::string s = m[k].get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        return "merge " + std::to_string(k) + " is not \"a b\"";
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else {
      left = m[k].at(0).get<std::string>();
      right = m[k].at(1).get<std::string>();
    }
    const auto l = internal.find(left), r = internal.find(right);
    if (l == internal.end() || r == internal.end())
      return "merge " + std::to_string(k) + " joins a token that neither a byte nor an earlier merge makes";
    const auto made = id_of.find(left + right);
    if (made == id_of.end()) return "merge " + std::to_string(k) + " makes a token the vocabulary lacks";
    if (!internal.emplace(left + right, static_cast<int32_t>(256 + k)).second)
      return "merge " + std::to_string(k) + " makes a token an earlier merge made";
    merges.emplace_back(l->second, r->second);
    layout.ids.push_back(made->second);
  }
  layout.vocab = vocab;
  const int32_t from_config[4] = {config_token(config, "bos_token_id"), config_token(config, "eos_token_id"), -1,
                                  config_token(config, "pad_token_id")};
  for (const json& a : t.at("added_tokens")) {
    if (!a.at("special").get<bool>()) return "it adds a token that is not special";
    const auto id = static_cast<int32_t>(a.at("id").get<int64_t>());
    std::string content = a.at("content").get<std::string>();
    std::string lower = content;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    // config.json's ids where it gives them, else the token's text (nk's <|bos|>..., <s>, </s>, <|endoftext|>).
    const bool named[4] = {lower.find("bos") != std::string::npos || lower == "<s>",
                           lower.find("eos") != std::string::npos || lower == "</s>" ||
                               lower.find("endoftext") != std::string::npos,
                           lower.find("mask") != std::string::npos, lower.find("pad") != std::string::npos};
    for (int k = 0; k < 4; ++k) {
      const bool is_k = from_config[k] >= 0 ? id == from_config[k] : named[k];
      if (is_k && layout.specials[static_cast<size_t>(k)] < 0) {
        layout.specials[static_cast<size_t>(k)] = id;
        layout.names[static_cast<size_t>(k)] = content;
      }
    }
  }
  return "";
}

std::optional<Tokenizer> read_tokenizer(const std::string& path, const json& config, int64_t vocab) {
  const json t = parse_json(path, read_text(path));
  std::vector<std::pair<int32_t, int32_t>> merges;
  Tokenizer::Layout layout;
  std::string problem;
  try {
    problem = layout_of(t, config, vocab, merges, layout);
    if (problem.empty()) {
      Tokenizer tok = Tokenizer::from_layout(std::move(merges), std::move(layout));
      if (!tok.native())
        spdlog::info("{}: a byte-level BPE in its own id layout (BOS {}, EOS {}, MASK {}, PAD {})", path, tok.bos(),
                     tok.eos(), tok.mask(), tok.pad());
      return tok;
    }
  } catch (const json::exception&) {
    problem = "an unexpected structure";
  } catch (const Error& e) {  // from_layout: ids that collide or merges that reference ids not yet defined
    problem = e.what();
  }
  spdlog::warn("{}: tokenizer not imported ({}): --token-ids only", path, problem);
  return std::nullopt;
}

/// Writes 'path' through a temporary file in its folder, renamed when complete.
void publish(const std::string& path, bool no_clobber, const std::function<void(std::ostream&)>& write) {
  AtomicFile file(path, no_clobber);
  {
    std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
    write(out);
    out.flush();
    if (!out) throw io_error(path, "cannot write (disk full?)");
  }
  file.commit();
}

}  // namespace

Checkpoint import_hf(const std::string& dir) {
  if (!fs::is_directory(dir)) throw io_error(dir, "is not a folder");
  const std::string config_path = in_dir(dir, "config.json");
  if (!fs::exists(config_path)) throw input_error(dir, "", "no config.json: not a Hugging Face model folder");
  const Config config = read_config(config_path);
  std::string source;
  const std::map<std::string, Entry> entries = read_tensor_table(dir, source);
  check_table(entries, config,
              source);  // every tensor is in its file at its size: the store below is at most 2x the files
  Checkpoint ck{ParameterStore(config), std::nullopt, std::nullopt};
  std::map<std::string, std::ifstream> files;
  std::vector<unsigned char> raw;
  for (const TensorInfo& t : ck.weights.tensors()) {
    const Entry& e = entries.at(t.name);
    auto f = files.find(e.file);
    if (f == files.end()) f = files.emplace(e.file, std::ifstream(e.file, std::ios::binary)).first;
    if (!f->second) throw io_error(e.file, "cannot read");
    read_tensor(f->second, e, t.name, ck.weights.data() + t.offset, raw);
  }
  const std::string tokenizer_path = in_dir(dir, "tokenizer.json");
  if (fs::exists(tokenizer_path))
    ck.tokenizer = read_tokenizer(tokenizer_path, parse_json(config_path, read_text(config_path)), config.vocab);
  else
    spdlog::info("{}: no tokenizer.json: token ids only", dir);
  return ck;
}

void export_hf(const Checkpoint& model, const std::string& dir, bool no_clobber) {
  const Config& c = model.weights.config();
  if (c.mode != Mode::causal)
    throw usage_error(
        "export: a diffusion model has bidirectional attention; transformers' LlamaForCausalLM is causal");
  if (c.mla())
    throw usage_error("export: an mla model is not a Llama (transformers' DeepSeek-V2 classes rotate RoPE pairs "
                      "interleaved, nk-lm rotates halves); it stays an nk-lm checkpoint");
  if (c.sparse)
    throw usage_error("export: a sparse-gqa model reads only its selected KV blocks; transformers' Llama would run it "
                      "dense, another model: it stays an nk-lm checkpoint");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw io_error(dir, "cannot create the folder" + (ec ? ": " + ec.message() : std::string()));
  const Tokenizer* tok = model.tokenizer ? &*model.tokenizer : nullptr;
  const std::optional<ordered_json> tokenizer = tok ? tokenizer_json(*tok) : std::nullopt;
  const std::vector<std::string> tokenizer_files{in_dir(dir, "tokenizer.json"), in_dir(dir, "tokenizer_config.json")};
  std::vector<std::string> outputs{in_dir(dir, "model.safetensors"), in_dir(dir, "config.json")};
  if (tokenizer) outputs.insert(outputs.end(), tokenizer_files.begin(), tokenizer_files.end());
  if (no_clobber)
    for (const std::string& path : outputs)
      if (fs::exists(path)) throw io_error(path, "output exists and --no-clobber is set");
  publish(outputs[0], no_clobber, [&](std::ostream& out) { write_safetensors(out, model.weights); });
  if (tokenizer) {
    publish(tokenizer_files[0], no_clobber, [&](std::ostream& out) { out << tokenizer->dump(1) << '\n'; });
    ordered_json config = {{"tokenizer_class", "PreTrainedTokenizerFast"}};
    const char* keys[] = {"bos_token", "eos_token", "mask_token", "pad_token"};
    const int32_t ids[] = {tok->bos(), tok->eos(), tok->mask(), tok->pad()};
    for (int k = 0; k < 4; ++k)
      if (ids[k] >= 0) config[keys[k]] = tok->special_name(k);
    config["model_max_length"] = c.max_seq;
    config["clean_up_tokenization_spaces"] = false;
    publish(tokenizer_files[1], no_clobber, [&](std::ostream& out) { out << config.dump(2) << '\n'; });
  } else {
    for (const std::string& stale : tokenizer_files)  // another model's tokenizer must not pass for this one's
      if (fs::remove(stale, ec)) spdlog::info("export: removed {} (the model has no tokenizer)", stale);
  }
  // config.json last: it is what makes the folder a model.
  publish(outputs[1], no_clobber, [&](std::ostream& out) { out << config_json(c, tok).dump(2) << '\n'; });
}

}  // namespace nk::lm
