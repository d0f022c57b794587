// checkpoint.cpp - writing and strictly reading nk-lm.model/1 files.
#include "nk/lm/checkpoint.hpp"

#include <cmath>
#include <cstring>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/kernels/lowp.hpp"

namespace nk::lm {

namespace {

constexpr const char* kModelSchema = "nk-lm.model/1";

const char* kIntKeys[] = {"vocab", "d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "d_ff", "max_seq"};

int64_t* int_field(Config& c, const std::string& key) {
  if (key == "vocab") return &c.vocab;
  if (key == "d_model") return &c.d_model;
  if (key == "n_layers") return &c.n_layers;
  if (key == "n_heads") return &c.n_heads;
  if (key == "n_kv_heads") return &c.n_kv_heads;
  if (key == "head_dim") return &c.head_dim;
  if (key == "d_ff") return &c.d_ff;
  return &c.max_seq;
}

Config read_config(const h5::File& in) {
  in.require_schema("nk-lm.model/");
  Config c;
  const auto number = [&](const std::string& key) {
    const auto v = in.attr_number("/", key);
    if (!v || !std::isfinite(*v)) throw input_error(in.path(), "", "root attribute '" + key + "' is missing or not a number");
    return *v;
  };
  for (const char* key : kIntKeys) {
    const double v = number(key);
    if (v != std::floor(v) || v < 1 || v > 1e12)
      throw input_error(in.path(), "", std::string("root attribute '") + key + "' must be a positive integer");
    *int_field(c, key) = static_cast<int64_t>(v);
  }
  c.rope_theta = number("rope_theta");
  c.norm_eps = number("norm_eps");
  c.tied_head = number("tied_head") != 0;
  const auto mode = in.attr_string("/", "mode");
  if (!mode || (*mode != "causal" && *mode != "diffusion"))
    throw input_error(in.path(), "", "root attribute 'mode' must be causal or diffusion");
  c.mode = *mode == "causal" ? Mode::causal : Mode::diffusion;
  // Files before MLA have no 'attention' attribute: they are gqa.
  if (const auto attention = in.attr_string("/", "attention")) {
    if (*attention != "gqa" && *attention != "mla" && *attention != "sparse-gqa")
      throw input_error(in.path(), "", "root attribute 'attention' must be gqa, sparse-gqa or mla, got '" + *attention + "'");
    if (*attention == "sparse-gqa") {
      c.sparse = true;
      for (const char* key : {"sparse_block", "sparse_init_blocks", "sparse_local_blocks", "sparse_topk"}) {
        const double v = number(key);
        if (v != std::floor(v) || v < 0 || v > 1e9)
          throw input_error(in.path(), "", std::string("root attribute '") + key + "' must be a non-negative integer");
        const std::string k(key);
        (k == "sparse_block" ? c.selector.block : k == "sparse_init_blocks" ? c.selector.init_blocks
                                              : k == "sparse_local_blocks"  ? c.selector.local_blocks
                                                                            : c.selector.topk) = static_cast<int64_t>(v);
      }
    }
    if (*attention == "mla") {
      c.attention = AttentionKind::mla;
      for (const char* key : {"kv_rank", "rope_dim"}) {
        const double v = number(key);
        if (v != std::floor(v) || v < 1 || v > 1e12)
          throw input_error(in.path(), "", std::string("root attribute '") + key + "' must be a positive integer");
        (std::string(key) == "kv_rank" ? c.kv_rank : c.rope_dim) = static_cast<int64_t>(v);
      }
    }
  }
  try {
    c.validate(in.path());
  } catch (const Error& e) {  // a config that cannot be is the file's fault: exit 3, before allocating
    throw input_error(in.path(), "", e.what());
  }
  return c;
}

/// Reads one tensor of the store's layout from 'dataset' (float32 or bf16 bits).
void read_tensor(const h5::File& in, const std::string& dataset, const TensorInfo& t, float* out) {
  if (!in.has(dataset)) throw input_error(in.path(), dataset, "missing tensor");
  const h5::DatasetInfo info = in.info(dataset);
  if (info.shape != t.shape)
    throw input_error(in.path(), dataset, "shape " + h5::shape_text(info.shape) + ", the config needs " + h5::shape_text(t.shape));
  if (info.dtype == h5::DType::u16) {
    const auto dtype = in.attr_string(dataset, "dtype");
    if (!dtype || *dtype != "bfloat16") throw input_error(in.path(), dataset, "uint16 without attribute dtype = bfloat16");
    const h5::Array<uint16_t> bits = in.read<uint16_t>(dataset);
    for (int64_t i = 0; i < t.size; ++i) out[i] = from_bf16(bits.data[static_cast<size_t>(i)]);
  } else if (info.dtype == h5::DType::f32 || info.dtype == h5::DType::f64) {
    const h5::Array<float> values = in.read<float>(dataset);
    std::memcpy(out, values.data.data(), static_cast<size_t>(t.size) * sizeof(float));
  } else {
    throw input_error(in.path(), dataset, "type " + info.type_text + "; weights are float32 or bfloat16");
  }
  // Beyond +-1e6 no trained model has weights, and float32 activations overflow.
  for (int64_t i = 0; i < t.size; ++i)
    if (!std::isfinite(out[i]) || std::abs(out[i]) > 1e6f)
      throw input_error(in.path(), dataset, "weight " + std::to_string(out[i]) + " at index " + std::to_string(i) +
                                                " (weights must be finite, within +-1e6)");
}

}  // namespace

uint16_t to_bf16(float x) { return kernels::to_bf16(x); }

float from_bf16(uint16_t bits) { return kernels::from_bf16(bits); }

std::string mode_name(Mode mode) { return mode == Mode::causal ? "causal" : "diffusion"; }

void save_checkpoint(const std::string& path, const ParameterStore& weights, const Tokenizer* tokenizer,
                     const TrainState* train, StoreAs store_as, const std::function<void(h5::Writer&)>& extra) {
  const Config& c = weights.config();
  h5::Writer out(path, kModelSchema);
  out.attr("/", "mode", mode_name(c.mode));
  Config copy = c;
  for (const char* key : kIntKeys) out.attr("/", key, *int_field(copy, key));
  out.attr("/", "rope_theta", c.rope_theta);
  out.attr("/", "norm_eps", c.norm_eps);
  out.attr("/", "tied_head", int64_t{c.tied_head ? 1 : 0});
  out.attr("/", "attention", c.mla() ? "mla" : c.sparse ? "sparse-gqa" : "gqa");
  if (c.sparse) {
    out.attr("/", "sparse_block", c.selector.block);
    out.attr("/", "sparse_init_blocks", c.selector.init_blocks);
    out.attr("/", "sparse_local_blocks", c.selector.local_blocks);
    out.attr("/", "sparse_topk", c.selector.topk);
  }
  if (c.mla()) {
    out.attr("/", "kv_rank", c.kv_rank);
    out.attr("/", "rope_dim", c.rope_dim);
  }
  out.attr("/", "parameters", c.parameter_count());
  out.attr("/", "weights", store_as == StoreAs::bf16 ? "bfloat16" : "float32");
  std::vector<uint16_t> bits;
  for (const TensorInfo& t : weights.tensors()) {
    const std::string dataset = "/params/" + t.name;
    const std::string dims = t.shape.size() == 2 ? "out,in" : "D";
    const float* w = weights.data() + t.offset;
    if (store_as == StoreAs::bf16) {
      bits.resize(static_cast<size_t>(t.size));
      for (int64_t i = 0; i < t.size; ++i) bits[static_cast<size_t>(i)] = to_bf16(w[i]);
      out.write(dataset, bits.data(), t.shape, dims);
      out.attr(dataset, "dtype", "bfloat16");
    } else {
      out.write(dataset, w, t.shape, dims);
    }
  }
  if (tokenizer) tokenizer->save(out, "/tokenizer");
  if (train) {
    if (static_cast<int64_t>(train->m.size()) != weights.size() || static_cast<int64_t>(train->v.size()) != weights.size())
      throw usage_error("checkpoint: the optimiser state does not match the model's size");
    for (const TensorInfo& t : weights.tensors()) {
      out.write("/train/m/" + t.name, train->m.data() + t.offset, t.shape, "");
      out.write("/train/v/" + t.name, train->v.data() + t.offset, t.shape, "");
    }
    out.attr("/train", "step", train->step);
    out.attr("/train", "tokens", train->tokens);
    out.attr("/train", "seed", std::to_string(train->seed));  // text: a double would round seeds over 2^53
    out.attr("/train", "recipe", train->recipe);
  }
  if (extra) extra(out);
  out.commit();
}

Config load_config(const std::string& path) { return read_config(h5::File::open(path)); }

Checkpoint load_checkpoint(const std::string& path) {
  const h5::File in = h5::File::open(path);
  const Config config = read_config(in);
  Checkpoint ck{ParameterStore(config), std::nullopt, std::nullopt};
  for (const TensorInfo& t : ck.weights.tensors()) read_tensor(in, "/params/" + t.name, t, ck.weights.data() + t.offset);
  // Tensors the config does not name: a different architecture, not ours to guess.
  for (const std::string& d : in.datasets())
    if (d.rfind("/params/", 0) == 0) {
      bool known = false;
      for (const TensorInfo& t : ck.weights.tensors()) known = known || d == "/params/" + t.name;
      if (!known) throw input_error(in.path(), d, "a tensor this config does not have");
    }
  bool has_tokenizer = false;
  for (const std::string& d : in.datasets()) has_tokenizer = has_tokenizer || d.rfind("/tokenizer/", 0) == 0;
  if (has_tokenizer) {
    ck.tokenizer = Tokenizer::load(in, "/tokenizer");
    if (ck.tokenizer->size() != config.vocab)
      throw input_error(in.path(), "/tokenizer", "a tokenizer of " + std::to_string(ck.tokenizer->size()) +
                                                     " tokens for a model of vocab " + std::to_string(config.vocab));
  }
  if (in.has("/train/m/model.embed_tokens.weight")) {
    TrainState st;
    const auto attr = [&](const char* key) {
      const auto v = in.attr_number("/train", key);
      if (!v || *v < 0) throw input_error(in.path(), "/train", std::string("attribute '") + key + "' missing or negative");
      return *v;
    };
    st.step = static_cast<int64_t>(attr("step"));
    st.tokens = static_cast<int64_t>(attr("tokens"));
    const std::string seed = in.attr_string("/train", "seed").value_or("");
    if (seed.empty() || seed.find_first_not_of("0123456789") != std::string::npos)
      throw input_error(in.path(), "/train", "attribute 'seed' missing or not a decimal number");
    st.seed = std::stoull(seed);
    st.recipe = in.attr_string("/train", "recipe").value_or("");
    st.m.assign(static_cast<size_t>(ck.weights.size()), 0.0f);
    st.v.assign(static_cast<size_t>(ck.weights.size()), 0.0f);
    for (const TensorInfo& t : ck.weights.tensors()) {
      read_tensor(in, "/train/m/" + t.name, t, st.m.data() + t.offset);
      read_tensor(in, "/train/v/" + t.name, t, st.v.data() + t.offset);
    }
    ck.train = std::move(st);
  }
  return ck;
}

}  // namespace nk::lm
