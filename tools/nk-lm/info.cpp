// info.cpp - nk-lm info: what a model file holds.
#include <cstdio>

#include "nk-lm/nk_lm.hpp"
#include "nk/h5.hpp"

namespace nklm {

void info(const InfoOptions& o) {
  const nk::lm::Checkpoint ck = load_model(o.model);
  const nk::lm::Config& c = ck.weights.config();
  const nk::h5::File in = nk::h5::File::open(o.model);
  std::printf("model        %s\n", o.model.c_str());
  std::printf("architecture llama (pre-norm RMSNorm, RoPE rotate-half, %s, SwiGLU, %s head)\n",
              c.mla()                      ? "multi-head latent attention (DeepSeek-V2's MLA)"
              : c.n_kv_heads == c.n_heads ? "multi-head attention"
                                          : "grouped-query attention",
              c.tied_head ? "tied" : "untied");
  if (c.mla())
    std::printf("mla          kv_rank (d_c) %lld, rope_dim (d_R) %lld, nope %lld; a cached token %lld values\n",
                static_cast<long long>(c.kv_rank), static_cast<long long>(c.rope_dim), static_cast<long long>(c.nope_dim()),
                static_cast<long long>(c.kv_rank + c.rope_dim));
  if (c.sparse)
    std::printf("sparse       InfLLM-v2 block-sparse attention: block %lld, init %lld, local %lld, top-%lld (a query reads %lld blocks)\n",
                static_cast<long long>(c.selector.block), static_cast<long long>(c.selector.init_blocks),
                static_cast<long long>(c.selector.local_blocks), static_cast<long long>(c.selector.topk),
                static_cast<long long>(c.selector.width()));
  std::printf("mode         %s\n", nk::lm::mode_name(c.mode).c_str());
  std::printf("parameters   %lld\n", static_cast<long long>(c.parameter_count()));
  std::printf("layers       %lld\n", static_cast<long long>(c.n_layers));
  std::printf("d_model      %lld\n", static_cast<long long>(c.d_model));
  std::printf("heads        %lld (kv %lld, head_dim %lld)\n", static_cast<long long>(c.n_heads),
              static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.head_dim));
  std::printf("d_ff         %lld\n", static_cast<long long>(c.d_ff));
  std::printf("context      %lld\n", static_cast<long long>(c.max_seq));
  std::printf("rope_theta   %g\n", c.rope_theta);
  std::printf("norm_eps     %g\n", c.norm_eps);
  std::printf("vocab        %lld\n", static_cast<long long>(c.vocab));
  std::printf("weights      %s\n", in.attr_string("/", "weights").value_or("float32").c_str());
  if (ck.tokenizer)
    std::printf("tokenizer    byte-level BPE, %zu merges%s; BOS %d EOS %d MASK %d PAD %d\n", ck.tokenizer->merges().size(),
                ck.tokenizer->native() ? "" : " (its own id layout)", ck.tokenizer->bos(), ck.tokenizer->eos(),
                ck.tokenizer->mask(), ck.tokenizer->pad());
  else
    std::printf("tokenizer    none (token ids only)\n");
  if (ck.train)
    std::printf("trained      %lld steps, %lld tokens, seed %llu\nrecipe       %s\n", static_cast<long long>(ck.train->step),
                static_cast<long long>(ck.train->tokens), static_cast<unsigned long long>(ck.train->seed), ck.train->recipe.c_str());
  const auto command = in.attr_string("/", "nk_command");
  if (command) std::printf("written by   %s\n", command->c_str());
}

}  // namespace nklm
