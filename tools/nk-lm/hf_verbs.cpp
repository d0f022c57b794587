// hf_verbs.cpp - nk-lm import and export: Hugging Face Llama folders
// (config.json, model.safetensors, tokenizer.json) to and from model files.
#include <spdlog/spdlog.h>

#include "nk-lm/nk_lm.hpp"
#include "nk/error.hpp"
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
  if (o.format == "gguf") throw nk::usage_error("export: GGUF export is not built yet (--format safetensors)");
  const nk::lm::Checkpoint ck = load_model(o.model);
  nk::lm::export_hf(ck, o.output, o.no_clobber);
  spdlog::info("export: {} -> {}/ (config.json, model.safetensors{})", o.model, o.output,
               ck.tokenizer ? ", tokenizer.json" : "");
}

}  // namespace nklm
