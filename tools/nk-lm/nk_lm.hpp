// nk_lm.hpp - the verbs of nk-lm, the toolkit's own small Llama-architecture
// language model (causal or masked diffusion): corpus, tokenizer, train,
// generate, score, info, import, export. The model itself is the shared library nk::lm.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/checkpoint.hpp"
#include "nk/kernels/dllm_plan.hpp"
#include "nk/lm/key_subset_attention.hpp"
#include "nk/run_env.hpp"

namespace nklm {

inline constexpr const char* kTokenizerSchema = "nk-lm.tokenizer/1";
inline constexpr const char* kScoreSchema = "nk-lm.score/1";
inline constexpr const char* kTokensSchema = "nk-lm.tokens/1";
inline constexpr const char* kCaptureSchema = "nk-lm.capture/1";

struct TextSources {
  std::vector<std::string> sources;   ///< fortunes, wordnet, gcide
  std::vector<std::string> text;      ///< plain text files
  bool paragraphs = false;            ///< split text files at blank lines
};

struct CorpusOptions {
  TextSources input;
  std::string tokenizer;              ///< a file with /tokenizer (tokenizer, corpus or model); empty: train one
  int64_t vocab = 2048;
  double validation = 0.02;
  std::string exclude;                ///< file of document names, one per line
  bool list = false;                  ///< print the documents' names and sizes instead
  std::string output;
  bool no_clobber = false;
};
void corpus(const CorpusOptions& o);

struct TokenizerOptions {
  TextSources input;
  int64_t vocab = 2048;
  double validation = 0.02;
  std::string output;
  bool no_clobber = false;
};
void tokenizer(const TokenizerOptions& o);

struct TrainOptions {
  std::string corpus, output, init, resume, checkpoint, log;
  bool no_clobber = false;
  std::string mode = "causal";
  int64_t layers = 4, d_model = 256, heads = 8, kv_heads = 4, head_dim = 0, d_ff = 704, context = 256;
  double rope_theta = 1e4;
  bool untied = false;
  std::string attention = "gqa";
  int64_t kv_rank = 0, rope_dim = 0;
  int64_t sparse_block = 64, sparse_init = 1, sparse_local = 2, sparse_topk = 16;
  // Given on the command line: with --init they reshape the loaded model's context, RoPE base and attention.
  bool context_given = false, rope_given = false, attention_given = false;
  int64_t steps = 1000, stop_at = 0, batch = 16, accum = 1, warmup = 100, checkpoint_every = 0, eval_every = 0, eval_batches = 8,
          log_every = 10;
  double lr = 3e-3, min_lr = 0.1, weight_decay = 0.1, clip = 1.0, beta2 = 0.95;
  std::vector<std::string> freeze;
  std::string dtype = "float32";
};
void train(const TrainOptions& o, const nk::RunEnv& env);

struct CaptureOptions {
  std::string model, text, token_ids, corpus, split = "validation", output, trajectory, louver;
  bool no_clobber = false, resid_only = false, stream = false;
  std::vector<int64_t> layers;
  int64_t max_rows = 0;  ///< --corpus: keep the first rows only (0: all)
  int64_t max_new = 32, steps = 0, block = 0, louver_layer = 0, louver_queries = 0;
};
void capture(const CaptureOptions& o, const nk::RunEnv& env);

struct InfoOptions {
  std::string model;
};
void info(const InfoOptions& o);

struct ScoreOptions {
  std::string model, text, token_ids, corpus, split = "validation", output;
  bool no_clobber = false, logits = false;
  int64_t top_k = 0, batch = 16;
  int64_t samples = 16;        ///< diffusion: Monte-Carlo draws of the likelihood bound per row
  int64_t prompt_length = -1;  ///< diffusion: tokens of each row given, not scored (-1: the file's /prompt_lengths, else 1)
};
void score(const ScoreOptions& o, const nk::RunEnv& env);

struct GenerateOptions {
  std::string model, prompts, token_ids, output;
  bool no_clobber = false, greedy = false, random_remasking = false, ignore_eos = false, jsonl = false;
  bool teacher_forced = false;  ///< diffusion, --sparse-policy: the model's own tokens; the policy runs beside it and is compared
  int64_t max_new = 64, top_k = 0, batch = 8, steps = 0, block = 0;
  double temperature = 1.0, top_p = 1.0;
  /// Diffusion: Step-dLLM's block masks in every layer at every step (name "": the model's own attention).
  nk::dllm::PolicyOptions sparse = [] {
    nk::dllm::PolicyOptions p;
    // The shipped models' 256-token context holds 16 blocks of 16; sampled
    // scores read a quarter of each block's rows, as dllm-sparse's 16 of 64.
    p.name.clear(), p.block = 16, p.samples = 4;
    return p;
  }();
  /// Causal: every layer's decoding attention reads only the keys this index
  /// returns (method "": the model's own KV cache).
  nk::lm::KeySelectorOptions keys = [] {
    nk::lm::KeySelectorOptions k;
    k.method.clear();
    return k;
  }();
  bool reference = false;       ///< diffusion: forced along each row's answer after its prompt, scoring the predictions
  int64_t prompt_length = -1;   ///< --reference: tokens of each row given (-1: the file's /prompt_lengths, else 1)
  bool measure_missed = false;  ///< --key-index: also measure the softmax mass each selection leaves out
  bool divergence = false;      ///< KL of each step's distribution from the dense model's on the same tokens
  double spike_level = 0.1;     ///< --divergence: a step whose KL passes this is a spike
};
void generate(const GenerateOptions& o, const nk::RunEnv& env);

struct ImportOptions {
  std::string input;                  ///< a Hugging Face Llama folder
  std::string output, dtype = "float32";
  bool no_clobber = false;
};
void import_model(const ImportOptions& o);

struct ExportOptions {
  std::string model, output;          ///< output: the folder
  std::string format = "safetensors";
  bool no_clobber = false;
};
void export_model(const ExportOptions& o);

// --- shared by the verbs (io.cpp) ---------------------------------------------
/// A model file, with the message users need when it is not one.
nk::lm::Checkpoint load_model(const std::string& path);
/// Token rows from /tokens int32 [T] or [B,T] of FILE.h5; a row ends at its
/// first -1 (padding). Ids outside 0..vocab-1 or rows longer than 'context': exit 3.
std::vector<std::vector<int32_t>> read_token_rows(const std::string& path, int64_t vocab, int64_t context);
/// The prompt length of each of 'rows' token rows: 'given' when >= 0, else
/// the token file's /prompt_lengths (checked against the rows: exit 3), else 1 (the BOS).
std::vector<int64_t> prompt_lengths(const std::string& token_ids, size_t rows, int64_t given);
/// Fails now (exit 4), not after hours of work, when 'path' cannot be
/// written: a missing folder, or an existing file under --no-clobber.
void check_writable(const std::string& path, bool no_clobber);
/// Appends the rows of one token sequence: BOS, then up to context - 1 of its
/// tokens, as many rows as it takes (one BOS-only row when it is empty).
void add_windows(const std::vector<int32_t>& ids, int32_t bos, int64_t context, std::vector<std::vector<int32_t>>& rows);
/// Appends the rows (add_windows) of the documents of a corpus's split
/// ("validation" or "train") that 'shard' takes, and returns the bytes of
/// text they hold. Another tokenizer than 'tok', or no documents: usage
/// error naming 'verb'.
int64_t corpus_rows(const std::string& path, const std::string& split, const nk::lm::Tokenizer& tok, int64_t context,
                    const nk::Shard& shard, const std::string& verb, std::vector<std::vector<int32_t>>& rows);
/// Writes rows padded with -1 to [B, width] as dataset 'name'.
std::vector<int32_t> pad_rows(const std::vector<std::vector<int32_t>>& rows, int64_t width);

}  // namespace nklm
