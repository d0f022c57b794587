// gguf.cpp - GGUF version 3 export (the file layout of ggml's gguf.h:
// header, key-value metadata, tensor infos, then the data, each tensor at a
// multiple of general.alignment from the data's start).
#include "nk/lm/gguf.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "byte_level.hpp"
#include "nk/atomic_file.hpp"
#include "nk/error.hpp"

namespace nk::lm {

namespace {

constexpr uint32_t kAlignment = 32;  // GGUF's default general.alignment
enum ValueType : uint32_t { u8 = 0, u32 = 4, i32 = 5, f32 = 6, boolean = 7, str = 8, array = 9 };
constexpr uint32_t kGgmlF32 = 0;
constexpr int32_t kTokenNormal = 1, kTokenControl = 3, kTokenUnused = 5;  // llama.cpp's token types

/// Little-endian writer into one byte buffer (metadata is small; tensors go straight to the stream).
struct Bytes {
  std::string out;
  template <class T>
  void le(T v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // x86-64 and aarch64 are little-endian; GGUF is too
    out.append(reinterpret_cast<const char*>(b), sizeof(T));
  }
  void text(std::string_view s) {
    le<uint64_t>(s.size());
    out.append(s);
  }
  void key(std::string_view k, ValueType t) {
    text(k);
    le<uint32_t>(t);
    ++count;
  }
  void kv_u32(std::string_view k, int64_t v) {
    key(k, u32);
    le<uint32_t>(static_cast<uint32_t>(v));
  }
  void kv_f32(std::string_view k, double v) {
    key(k, f32);
    le<float>(static_cast<float>(v));
  }
  void kv_bool(std::string_view k, bool v) {
    key(k, boolean);
    le<uint8_t>(v ? 1 : 0);
  }
  void kv_str(std::string_view k, std::string_view v) {
    key(k, str);
    text(v);
  }
  void kv_strings(std::string_view k, const std::vector<std::string>& v) {
    key(k, array);
    le<uint32_t>(str);
    le<uint64_t>(v.size());
    for (const std::string& s : v) text(s);
  }
  void kv_i32s(std::string_view k, const std::vector<int32_t>& v) {
    key(k, array);
    le<uint32_t>(i32);
    le<uint64_t>(v.size());
    for (int32_t x : v) le<int32_t>(x);
  }
  uint64_t count = 0;
};

struct Tensor {
  std::string name;
  const TensorInfo* info;
  int64_t permute_heads = 0;  ///< > 0: q or k, rows permuted per head (see gguf.hpp)
};

/// llama.cpp's name of a transformers tensor.
std::string gguf_name(const std::string& hf, int64_t& layer) {
  layer = -1;
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  const size_t dot = hf.find('.', prefix.size());
  layer = std::stoll(hf.substr(prefix.size(), dot - prefix.size()));
  const std::string rest = hf.substr(dot + 1);
  static const std::pair<const char*, const char*> names[] = {
      {"input_layernorm.weight", "attn_norm.weight"},   {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},     {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"}};
  for (const auto& [from, to] : names)
    if (rest == from) return "blk." + std::to_string(layer) + "." + to;
  throw std::logic_error("gguf: no llama.cpp name for " + hf);
}

/// The vocabulary as llama.cpp's "gpt2" model takes it.
void write_vocabulary(Bytes& kv, const Config& c, const Tokenizer* tok) {
  std::vector<std::string> tokens(static_cast<size_t>(c.vocab));
  std::vector<int32_t> types(static_cast<size_t>(c.vocab), kTokenNormal);
  std::vector<std::string> merges;
  if (tok) {
    const std::vector<std::string> text = internal_symbols(*tok);
    for (size_t t = 0; t < text.size(); ++t)
      if (const int32_t id = tok->vocab_id(static_cast<int32_t>(t)); id >= 0) tokens[static_cast<size_t>(id)] = text[t];
    const int32_t specials[4] = {tok->bos(), tok->eos(), tok->mask(), tok->pad()};
    for (int k = 0; k < 4; ++k)
      if (specials[k] >= 0) {
        tokens[static_cast<size_t>(specials[k])] = tok->special_name(k);
        types[static_cast<size_t>(specials[k])] = kTokenControl;
      }
    for (size_t id = 0; id < tokens.size(); ++id)  // ids no token stands on (another layout's spare rows)
      if (tokens[id].empty()) tokens[id] = "<|unused_" + std::to_string(id) + "|>", types[id] = kTokenUnused;
    for (const auto& [left, right] : tok->merges())
      merges.push_back(text[static_cast<size_t>(left)] + " " + text[static_cast<size_t>(right)]);
  } else {
    for (int64_t id = 0; id < c.vocab; ++id) tokens[static_cast<size_t>(id)] = "<|id_" + std::to_string(id) + "|>";
  }
  kv.kv_str("tokenizer.ggml.model", "gpt2");
  kv.kv_str("tokenizer.ggml.pre", "gpt-2");
  kv.kv_strings("tokenizer.ggml.tokens", tokens);
  kv.kv_i32s("tokenizer.ggml.token_type", types);
  kv.kv_strings("tokenizer.ggml.merges", merges);
  if (tok) {
    kv.kv_u32("tokenizer.ggml.bos_token_id", tok->bos());
    if (tok->eos() >= 0) kv.kv_u32("tokenizer.ggml.eos_token_id", tok->eos());
    if (tok->pad() >= 0) kv.kv_u32("tokenizer.ggml.padding_token_id", tok->pad());
    kv.kv_bool("tokenizer.ggml.add_bos_token", true);  // nk-lm generate and score begin every text with BOS
    kv.kv_bool("tokenizer.ggml.add_eos_token", false);
  }
}

uint64_t padded(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void export_gguf(const Checkpoint& model, const std::string& path, bool no_clobber) {
  const Config& c = model.weights.config();
  if (c.mode != Mode::causal)
    throw usage_error("export: a diffusion model has bidirectional attention; llama.cpp's Llama is causal");
  if (c.mla()) throw usage_error("export: an mla model is not a Llama; it stays an nk-lm checkpoint");
  if (c.sparse)
    throw usage_error("export: a sparse-gqa model reads only its selected KV blocks; llama.cpp would run it dense: it "
                      "stays an nk-lm checkpoint");
  const Tokenizer* tok = model.tokenizer ? &*model.tokenizer : nullptr;
  if (tok && tok->size() != c.vocab)  // load_checkpoint and import_hf refuse such a pair
    throw std::logic_error("export_gguf: the tokenizer's vocabulary differs from the model's");

  Bytes kv;
  kv.kv_str("general.architecture", "llama");
  kv.kv_str("general.name", "nk-lm");
  kv.kv_u32("general.alignment", kAlignment);
  kv.kv_u32("general.file_type", 0);  // all float32
  kv.kv_u32("llama.vocab_size", c.vocab);
  kv.kv_u32("llama.context_length", c.max_seq);
  kv.kv_u32("llama.embedding_length", c.d_model);
  kv.kv_u32("llama.block_count", c.n_layers);
  kv.kv_u32("llama.feed_forward_length", c.d_ff);
  kv.kv_u32("llama.attention.head_count", c.n_heads);
  kv.kv_u32("llama.attention.head_count_kv", c.n_kv_heads);
  kv.kv_u32("llama.attention.key_length", c.head_dim);
  kv.kv_u32("llama.attention.value_length", c.head_dim);
  kv.kv_u32("llama.rope.dimension_count", c.head_dim);
  kv.kv_f32("llama.rope.freq_base", c.rope_theta);
  kv.kv_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  write_vocabulary(kv, c, tok);

  std::vector<Tensor> tensors;
  for (const TensorInfo& t : model.weights.tensors()) {
    int64_t layer = 0;
    Tensor x{gguf_name(t.name, layer), &t, 0};
    if (t.name.ends_with("q_proj.weight")) x.permute_heads = c.n_heads;
    if (t.name.ends_with("k_proj.weight")) x.permute_heads = c.n_kv_heads;
    tensors.push_back(std::move(x));
  }
  Bytes header;
  header.le<uint32_t>(0x46554747);  // "GGUF"
  header.le<uint32_t>(3);
  header.le<uint64_t>(tensors.size());
  header.le<uint64_t>(kv.count);
  header.out += kv.out;
  uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    header.text(t.name);
    header.le<uint32_t>(static_cast<uint32_t>(t.info->shape.size()));
    for (auto d = t.info->shape.rbegin(); d != t.info->shape.rend(); ++d)  // ggml's ne[0] is the row length
      header.le<uint64_t>(static_cast<uint64_t>(*d));
    header.le<uint32_t>(kGgmlF32);
    header.le<uint64_t>(offset);
    offset += padded(4 * static_cast<uint64_t>(t.info->size));
  }
  header.out.append(padded(header.out.size()) - header.out.size(), '\0');

  AtomicFile file(path, no_clobber);
  {
    std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
    out.write(header.out.data(), static_cast<std::streamsize>(header.out.size()));
    std::vector<float> rows;
    for (const Tensor& t : tensors) {
      const float* x = model.weights.data() + t.info->offset;
      const auto n = static_cast<size_t>(t.info->size);
      rows.assign(x, x + n);
      if (t.permute_heads > 0) {
        const int64_t cols = t.info->shape[1], half = c.head_dim / 2;
        for (int64_t h = 0; h < t.permute_heads; ++h)
          for (int64_t i = 0; i < half; ++i)
            for (int64_t j = 0; j < 2; ++j) {
              const int64_t to = h * c.head_dim + 2 * i + j, from = h * c.head_dim + j * half + i;
              std::memcpy(&rows[static_cast<size_t>(to * cols)], x + from * cols, 4 * static_cast<size_t>(cols));
            }
      }
      out.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(4 * n));
      const std::string pad(padded(4 * n) - 4 * n, '\0');
      out.write(pad.data(), static_cast<std::streamsize>(pad.size()));
    }
    out.flush();
    if (!out) throw io_error(path, "cannot write (disk full?)");
  }
  file.commit();
  spdlog::debug("gguf: {} tensors, {} metadata keys, {} bytes", tensors.size(), kv.count, header.out.size() + offset);
}

}  // namespace nk::lm
