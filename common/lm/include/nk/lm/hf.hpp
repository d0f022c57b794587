// hf.hpp - Hugging Face transformers' Llama folders, in and out:
//
//   DIR/config.json            LlamaForCausalLM (model_type "llama"): hidden_size,
//                              intermediate_size, num_hidden_layers, num_attention_heads,
//                              num_key_value_heads, head_dim, rms_norm_eps, rope_theta,
//                              vocab_size, max_position_embeddings, tie_word_embeddings
//   DIR/model.safetensors      the weights, in transformers' names and [out, in] shapes
//                              (import also reads model.safetensors.index.json and its shards)
//   DIR/tokenizer.json         a byte-level BPE in nk's id layout (optional)
//   DIR/tokenizer_config.json  (export, with the tokenizer) its special tokens
//
// safetensors: an 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
// then the data buffer the offsets index (from its start, no gaps, no overlaps).
#pragma once
#include <string>

#include "nk/lm/checkpoint.hpp"

namespace nk::lm {

/// Reads a Llama folder into a causal model. The config and every header are
/// checked before anything is allocated for them: a foreign architecture,
/// rope_scaling, biases, an activation other than silu, sizes that cannot
/// be, a header past the end of its file or not JSON, offsets outside the
/// buffer or overlapping, a dtype other than F32/F16/BF16/F64, a missing,
/// extra or misshapen tensor, or a non-finite weight: exit 3 naming the file
/// and the key or tensor. A tokenizer.json that is not a byte-level BPE in
/// nk's layout (see Tokenizer; what export_hf writes) is skipped with a
/// warning: the model then takes token ids only.
Checkpoint import_hf(const std::string& dir);

/// Writes config.json, model.safetensors (float32, tensors sorted by name,
/// header padded with spaces to 8 bytes) and, with a tokenizer,
/// tokenizer.json and tokenizer_config.json into DIR (created when missing),
/// each file atomically. A diffusion model is a usage error (exit 2):
/// transformers' LlamaForCausalLM is causal. no_clobber: exit 4 before
/// writing anything when one of the files exists.
void export_hf(const Checkpoint& model, const std::string& dir, bool no_clobber = false);

}  // namespace nk::lm
