// hf_verbs.cpp - nk-lm import and export: Hugging Face Llama folders
// (config.json, model.safetensors, tokenizer.json) to and from model files,
// and GGUF files for llama.cpp.
#include <spdlog/spdlog.h>

#include "nk-lm/nk_lm.hpp"
#include "nk/error.hpp"
#include "nk/lm/gguf.hpp"
#include "nk/lm/hf.hpp"

namespace nklm {

void import_model(const ImportOptions& o) {
  check_writable(o.output, o.no_clobber);
  const nk::lm::Checkpoint ck = nk::lm::import_hf(o.input);
  const nk::lm::StoreAs store_as = o.dtype == "bfloat16" ? nk::lm::StoreAs::bf16 : nk::lm::StoreAs::f32;
  nk::lm::save_checkpoint(o.output, ck.weights, ck.tokenizer ? &*ck.tokenizer : nullptr, nullptr, store_as);
  spdlog::info("import: {} -> {}: {} parameters, {}", o.input, o.output, ck.weights.config().parameter_count(),
               ck.tokenizer ? "with its tokenizer" : "token ids only");
}

void export_model(const ExportOptions& o) {
  const nk::lm::Checkpoint ck = load_model(o.model);
  if (o.format == "gguf") {
    nk::lm::export_gguf(ck, o.output, o.no_clobber);
    spdlog::info("export: {} -> {} (GGUF, float32, {} tensors, vocabulary: {})", o.model, o.output,
                 ck.weights.tensors().size(), ck.tokenizer ? "byte-level BPE" : "placeholders: token ids only");
    return;
  }
  nk::lm::export_hf(ck, o.output, o.no_clobber);
  spdlog::info("export: {} -> {}/ (config.json, model.safetensors{})", o.model, o.output,
               ck.tokenizer ? ", tokenizer.json" : "");
}

}  // namespace nklm
