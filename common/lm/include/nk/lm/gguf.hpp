// gguf.hpp - a causal model as a GGUF file (version 3) that llama.cpp runs:
// architecture "llama", float32 tensors under llama.cpp's names
// (token_embd, blk.N.attn_norm / attn_q / attn_k / attn_v / attn_output /
// ffn_norm / ffn_gate / ffn_up / ffn_down, output_norm, output unless tied),
// the hyper-parameters under llama.*, and the byte-level BPE as a "gpt2"
// vocabulary (GPT-2's byte symbols, merges, pre-tokenizer "gpt-2").
//
// llama.cpp's Llama rotates adjacent pairs (x[2i], x[2i+1]) where
// transformers (and nk) rotate halves (x[i], x[i + head_dim/2]); q_proj's and
// k_proj's output rows are permuted within each head so that the exported
// model computes the same attention scores: new row 2i + j = old row
// j * head_dim/2 + i (j = 0, 1), the permutation llama.cpp's own
// convert_hf_to_gguf.py applies.
#pragma once
#include <string>

#include "nk/lm/checkpoint.hpp"

namespace nk::lm {

/// Writes 'path' atomically (exit 4 under no_clobber when it exists). A
/// diffusion model is a usage error (exit 2): llama.cpp's Llama is causal.
/// Without a tokenizer the vocabulary is written as placeholder tokens
/// "<|id_N|>" (token ids only, as the model file).
void export_gguf(const Checkpoint& model, const std::string& path, bool no_clobber = false);

}  // namespace nk::lm
