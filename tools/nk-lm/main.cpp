// main.cpp - nk-lm: the toolkit's own small Llama-architecture language model,
// causal or masked diffusion (LLaDA), trained on Debian's English text.
#include "nk-lm/nk_lm.hpp"
#include "nk/cli.hpp"

namespace {

void add_sources(CLI::App& verb, nklm::TextSources& in) {
  verb.add_option("--source", in.sources, "Debian text by name: fortunes, wordnet, gcide (default: all three, without --text)")
      ->check(CLI::IsMember({"fortunes", "wordnet", "gcide"}))
      ->delimiter(',');
  verb.add_option("--text", in.text, "Plain text files (each a document, or see --paragraphs)");
  verb.add_flag("--paragraphs", in.paragraphs, "Split --text files into a document per paragraph (blank lines)");
}

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("nk-lm", "A small Llama-architecture language model (causal or masked diffusion), trained on Debian's text");
  cli.app().require_subcommand(1);
  using nk::cli::App;
  const auto positive = CLI::Range(int64_t{1}, int64_t{1} << 30);

  nklm::CorpusOptions corpus;
  CLI::App* corpus_verb = cli.add_verb("corpus", "Tokenised corpus (nk-lm.corpus/1) from Debian's text or text files");
  add_sources(*corpus_verb, corpus.input);
  corpus_verb->add_option("--tokenizer", corpus.tokenizer, "Use this file's /tokenizer (a tokenizer, corpus or model) instead of learning one");
  corpus_verb->add_option("--vocab", corpus.vocab, "Vocabulary of the tokenizer learned from the training split")
      ->check(CLI::Range(int64_t{260}, int64_t{1} << 20));
  corpus_verb->add_option("--validation", corpus.validation, "Share of documents held out for validation (by a hash of the name)")
      ->check(CLI::Range(0.0, 0.5));
  corpus_verb->add_option("--exclude", corpus.exclude, "File of document names (one per line) kept out of the corpus")
      ->check(CLI::ExistingFile);
  corpus_verb->add_flag("--list", corpus.list, "Print each document's name, bytes and split (tab-separated) and stop");
  App::add_optional_output(*corpus_verb, corpus.output, corpus.no_clobber, "the corpus (required unless --list)");

  nklm::TokenizerOptions tok;
  CLI::App* tok_verb = cli.add_verb("tokenizer", "Learn a byte-level BPE tokenizer (nk-lm.tokenizer/1)");
  add_sources(*tok_verb, tok.input);
  tok_verb->add_option("--vocab", tok.vocab, "Vocabulary: 256 bytes + merges + BOS EOS MASK PAD")
      ->check(CLI::Range(int64_t{260}, int64_t{1} << 20));
  tok_verb->add_option("--validation", tok.validation, "Share of documents held out (not learned from; compression reported)")
      ->check(CLI::Range(0.0, 0.5));
  App::add_output(*tok_verb, tok.output, tok.no_clobber);

  nklm::TrainOptions train;
  CLI::App* train_verb = cli.add_verb("train", "Pretrain or fine-tune on a corpus (causal or diffusion)", nk::cli::Randomness::seeded);
  train_verb->add_option("--corpus", train.corpus, "Corpus from nk-lm corpus")->required()->check(CLI::ExistingFile);
  App::add_output(*train_verb, train.output, train.no_clobber, "the trained model");
  train_verb->add_option("--mode", train.mode, "causal (next token) or diffusion (LLaDA masked tokens)")
      ->check(CLI::IsMember({"causal", "diffusion"}));
  train_verb->add_option("--init", train.init, "Fine-tune this model (its shape and mode; the corpus must use its tokenizer)")
      ->check(CLI::ExistingFile);
  train_verb->add_option("--resume", train.resume, "Continue a --checkpoint file exactly where it stopped")->check(CLI::ExistingFile);
  nk::cli::App::output(train_verb->add_option("--checkpoint", train.checkpoint, "Write float32 weights + optimiser state here (atomically) for --resume"));
  train_verb->add_option("--checkpoint-every", train.checkpoint_every, "Steps between checkpoints (0: only at the end)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  train_verb->add_option("--layers", train.layers, "Transformer blocks")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  train_verb->add_option("--d-model", train.d_model, "Residual width")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  train_verb->add_option("--heads", train.heads, "Query heads")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  train_verb->add_option("--kv-heads", train.kv_heads, "Key/value heads (GQA; = --heads for MHA)")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  train_verb->add_option("--head-dim", train.head_dim, "Head width (0: d-model / heads)")->check(CLI::Range(int64_t{0}, int64_t{4096}));
  train_verb->add_option("--d-ff", train.d_ff, "SwiGLU hidden width")->check(CLI::Range(int64_t{1}, int64_t{1} << 18));
  CLI::Option* context_opt = train_verb->add_option("--context", train.context, "Tokens per training window (the model's context; with --init it replaces the model's)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  CLI::Option* rope_opt = train_verb->add_option("--rope-theta", train.rope_theta, "RoPE base (with --init it replaces the model's: raise it for a longer context)")->check(CLI::Range(1.0 + 1e-9, 1e12));
  CLI::Option* attention_opt = train_verb->add_option("--attention", train.attention,
                         "gqa (Llama's q,k,v), sparse-gqa (gqa reading only the InfLLM-v2 selector's KV blocks: --sparse-*) or mla (DeepSeek-V2's latent attention: --kv-rank, --rope-dim; --kv-heads = --heads); with --init, gqa <-> sparse-gqa")
      ->check(CLI::IsMember({"gqa", "sparse-gqa", "mla"}));
  train_verb->add_option("--sparse-block", train.sparse_block, "sparse-gqa: tokens per KV block")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  train_verb->add_option("--sparse-init", train.sparse_init, "sparse-gqa: leading blocks every query reads")->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  train_verb->add_option("--sparse-local", train.sparse_local, "sparse-gqa: blocks of the local window (ending with the query's own)")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  train_verb->add_option("--sparse-topk", train.sparse_topk, "sparse-gqa: further blocks by the selector's group score")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  train_verb->add_option("--kv-rank", train.kv_rank, "mla: the latent's width d_c (0: 4 x head width)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  train_verb->add_option("--rope-dim", train.rope_dim, "mla: the decoupled RoPE key's width d_R (0: kv-rank / 8, DeepSeek's ratio)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  train_verb->add_flag("--untied", train.untied, "A separate output head (default: tied to the embedding)");
  train_verb->add_option("--steps", train.steps, "Optimiser steps (the schedule's length)")->check(positive);
  train_verb->add_option("--stop-at", train.stop_at, "Pause after this step (with --checkpoint: --resume continues the same schedule)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  train_verb->add_option("--batch", train.batch, "Windows per micro-batch")->check(positive);
  train_verb->add_option("--accum", train.accum, "Micro-batches per step (gradient accumulation)")->check(positive);
  train_verb->add_option("--lr", train.lr, "Peak learning rate (AdamW)")->check(CLI::Range(0.0, 10.0));
  train_verb->add_option("--warmup", train.warmup, "Linear warm-up steps")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  train_verb->add_option("--min-lr", train.min_lr, "The cosine ends at this share of --lr")->check(CLI::Range(0.0, 1.0));
  train_verb->add_option("--weight-decay", train.weight_decay, "AdamW's decoupled weight decay (not on norms)")->check(CLI::Range(0.0, 1.0));
  train_verb->add_option("--beta2", train.beta2, "AdamW's second-moment decay")->check(CLI::Range(0.0, 1.0));
  train_verb->add_option("--clip", train.clip, "Clip the global gradient norm to this (0: off)")->check(CLI::NonNegativeNumber);
  train_verb->add_option("--freeze", train.freeze, "Tensors that do not train (shell globs over transformers' names)");
  train_verb->add_option("--eval-every", train.eval_every, "Steps between validation losses (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  train_verb->add_option("--eval-batches", train.eval_batches, "Validation batches per evaluation")->check(positive);
  nk::cli::App::output(train_verb->add_option("--log", train.log, "Write step, tokens, loss, lr, grad_norm, tokens_per_s, val_loss here (TSV)"));
  train_verb->add_option("--log-every", train.log_every, "Steps between log lines")->check(positive);
  train_verb->add_option("--dtype", train.dtype, "Weights of the output file: float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}));

  nklm::GenerateOptions gen;
  CLI::App* gen_verb = cli.add_verb("generate", "Continue prompts (text lines, or token ids) causally or by masked diffusion",
                                    nk::cli::Randomness::seeded);
  gen_verb->add_option("-m,--model", gen.model, "Model file")->required()->check(CLI::ExistingFile);
  gen_verb->add_option("--prompts", gen.prompts, "Text prompts, one per line (default: standard input)");
  gen_verb->add_option("--token-ids", gen.token_ids, "Prompts as /tokens int32 [B,T] (or [T]); -1 pads")->check(CLI::ExistingFile);
  App::add_optional_output(*gen_verb, gen.output, gen.no_clobber, "/tokens [B,T+N] (prompt, continuation, -1 after EOS)");
  gen_verb->add_option("--max-new", gen.max_new, "New tokens per prompt (diffusion: the answer length)")->check(positive);
  gen_verb->add_flag("--greedy", gen.greedy, "Most likely token (diffusion: argmax predictions)");
  gen_verb->add_option("--temperature", gen.temperature, "Sampling temperature")->check(CLI::Range(1e-6, 100.0));
  gen_verb->add_option("--top-k", gen.top_k, "Sample from the k most likely tokens (0: all)")->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  gen_verb->add_option("--top-p", gen.top_p, "Nucleus: the smallest set with this probability")->check(CLI::Range(1e-9, 1.0));
  gen_verb->add_flag("--jsonl", gen.jsonl, "Print one JSON object per prompt, {\"prompt\": ..., \"completion\": ...} (text with newlines stays one line)");
  gen_verb->add_flag("--ignore-eos", gen.ignore_eos, "Keep decoding past an EOS (exactly --max-new tokens each: benchmarks)");
  gen_verb->add_option("--batch", gen.batch, "Sequences decoded together (causal)")->check(positive);
  gen_verb->add_option("--steps", gen.steps, "Diffusion: denoising steps (default: --max-new)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  gen_verb->add_option("--block", gen.block, "Diffusion: semi-autoregressive block length (default: --max-new)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  gen_verb->add_flag("--random-remasking", gen.random_remasking, "Diffusion: unmask random positions instead of the most confident");
  CLI::Option* policy = gen_verb->add_option("--sparse-policy", gen.sparse.name,
      "Diffusion: every layer's attention at every step through Step-dLLM's block masks (dllm-sparse's policies: step, "
      "once-uniform, every-uniform, oracle; dense: the same fused kernel over every block)")
      ->check(CLI::IsMember({"step", "once-uniform", "every-uniform", "oracle", "dense"}));
  gen_verb->add_option("--sparsity", gen.sparse.sparsity, "--sparse-policy: share of blocks dropped, over all heads")
      ->check(CLI::Range(0.0, 1.0))->needs(policy);
  gen_verb->add_option("--sparse-block", gen.sparse.block, "--sparse-policy: block size (16, 32, 48 or 64)")->needs(policy);
  gen_verb->add_option("--anchor-every", gen.sparse.anchor_every, "--sparse-policy step: re-score at least every R steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->needs(policy);
  gen_verb->add_option("--drift", gen.sparse.drift, "--sparse-policy step: also re-score when the probed mass kept falls by more than this")
      ->check(CLI::Range(0.0, 1.0))->needs(policy);
  gen_verb->add_option("--probe", gen.sparse.probe, "--sparse-policy step: share of query blocks probed between anchors")
      ->check(CLI::Range(0.0, 1.0))->needs(policy);
  gen_verb->add_option("--sparse-score", gen.sparse.score, "--sparse-policy: block scores, sampled or pooled")
      ->check(CLI::IsMember({"sampled", "pooled"}))->needs(policy);
  gen_verb->add_option("--sparse-samples", gen.sparse.samples, "--sparse-policy, sampled scores: query rows per block")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))->needs(policy);
  gen_verb->add_flag("--teacher-forced", gen.teacher_forced,
                     "--sparse-policy: generate with the model's own attention and run the policy beside it at every step, "
                     "reporting how often its predictions agree and their KL divergence")
      ->needs(policy);
  gen_verb->add_option("--head-budget", gen.sparse.head_budget,
                       "--sparse-policy: global (one ranking over all heads) or uniform (budget/H each); default: global for step and oracle")
      ->check(CLI::IsMember({"global", "uniform"}))->needs(policy);

  gen_verb->add_flag("--reference", gen.reference,
                     "Diffusion: each --token-ids row is a prompt and the answer after it; the sampler unmasks where it is most "
                     "confident but writes the answer's tokens, and scores its predictions there (reference_accuracy)");
  gen_verb->add_option("--prompt-length", gen.prompt_length,
                       "--reference: tokens of each row that are the prompt (default: the token file's /prompt_lengths, else 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  CLI::Option* key_index = gen_verb->add_option("--key-index", gen.keys.method,
      "Causal: every layer's decoding attention reads only the cached keys this index returns (louver: every key with "
      "q.k >= T, built over the prompt and appended to per token; quest: top pages; ivf: k-means lists; dense: every key, "
      "through the same code)")
      ->check(CLI::IsMember({"dense", "louver", "quest", "ivf"}));
  CLI::Option* threshold = gen_verb->add_option("--threshold", gen.keys.threshold, "--key-index louver: T on q.k (unscaled; below every score, e.g. -1e30: every key)")
      ->needs(key_index);
  gen_verb->add_option("--mass", gen.keys.mass, "--key-index louver: per query, the T that keeps at least this share of the softmax mass")
      ->check(CLI::Range(1e-9, 1.0 - 1e-12))->needs(key_index);
  gen_verb->add_option("--topk-oracle", gen.keys.topk, "--key-index louver: T = the k-th largest score (the top-k oracle)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))->needs(key_index);
  gen_verb->add_option("--mass-sample", gen.keys.mass_sample, "--mass: keys sampled (evenly strided) besides the first 4 and last 32 (default 256)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))->needs(key_index);
  gen_verb->add_option("--budget", gen.keys.budget, "--key-index quest|ivf: share of the keys each query reads (default 0.1)")
      ->check(CLI::Range(1e-9, 1.0))->needs(key_index);
  gen_verb->add_option("--page-size", gen.keys.page_size, "--key-index quest: keys per page (default 16)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))->needs(key_index);
  gen_verb->add_option("--lists", gen.keys.lists, "--key-index ivf: k-means lists (default: sqrt of the prompt's keys)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))->needs(key_index);
  gen_verb->add_option("--subspaces", gen.keys.subspaces, "--key-index louver: subspaces S (default head_dim/4)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}))->needs(key_index);
  gen_verb->add_option("--leaf-size", gen.keys.leaf_size, "--key-index louver: keys per cluster at build (default 16)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 16))->needs(key_index);
  gen_verb->add_option("--index-buffer", gen.keys.buffer, "--key-index louver: new keys scanned exactly before they get codes (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->needs(key_index);
  gen_verb->add_flag("--measure-missed", gen.measure_missed,
                     "--key-index: also score every key of each query to measure the softmax mass the selection left out (slower)")
      ->needs(key_index);
  gen_verb->add_flag("--divergence", gen.divergence,
                     "Causal: after generating, score the sequences with the model's own dense attention and write each step's "
                     "KL(dense || generated distribution), /kl, and the spikes above --spike-level");
  gen_verb->add_option("--spike-level", gen.spike_level, "--divergence: KL (nats) above which a step is a spike (default 0.1)")
      ->check(CLI::Range(0.0, 1e6));
  gen.keys.has_threshold = false;
  threshold->each([&gen](const std::string&) { gen.keys.has_threshold = true; });

  nklm::ScoreOptions score;
  CLI::App* score_verb = cli.add_verb("score", "Per-token log-probabilities, perplexity and bits per byte; logits and top-K "
                                      "(diffusion models: LLaDA's Monte-Carlo likelihood bound of each row's answer)",
                                      nk::cli::Randomness::seeded);
  score_verb->add_option("-m,--model", score.model, "Model file")->required()->check(CLI::ExistingFile);
  score_verb->add_option("--text", score.text, "A text file (rows of the context, each starting with BOS)")->check(CLI::ExistingFile);
  score_verb->add_option("--token-ids", score.token_ids, "/tokens int32 [T] or [B,T]; -1 pads")->check(CLI::ExistingFile);
  score_verb->add_option("--corpus", score.corpus, "A corpus's documents (see --split, --shard)")->check(CLI::ExistingFile);
  score_verb->add_option("--split", score.split, "With --corpus: validation or train")->check(CLI::IsMember({"validation", "train"}));
  score_verb->add_flag("--logits", score.logits, "Also write /logits [B,T,V] (the raw output-head logits)");
  score_verb->add_option("--top-k", score.top_k, "Also write /topk/ids and /topk/logits [B,T,K]")->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  score_verb->add_option("--batch", score.batch, "Rows per forward pass")->check(positive);
  score_verb->add_option("--samples", score.samples, "Diffusion: Monte-Carlo draws of the likelihood bound per row")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  score_verb->add_option("--prompt-length", score.prompt_length,
                         "Diffusion: tokens of each row that are given, not scored (default: the token file's /prompt_lengths, else 1, the BOS)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  App::add_output(*score_verb, score.output, score.no_clobber);
  cli.add_shard(*score_verb);

  nklm::CaptureOptions cap;
  CLI::App* cap_verb = cli.add_verb("capture", "Residual stream, attention input and post-RoPE q/k/v per layer, for other tools",
                                    nk::cli::Randomness::seeded);
  cap_verb->add_option("-m,--model", cap.model, "Model file")->required()->check(CLI::ExistingFile);
  cap_verb->add_option("--text", cap.text, "A text file (encoded after BOS; must fit the context)")->check(CLI::ExistingFile);
  cap_verb->add_option("--token-ids", cap.token_ids, "/tokens int32 [T] or [1,T]")->check(CLI::ExistingFile);
  cap_verb->add_option("--corpus", cap.corpus, "Every row of a corpus's documents (see --split, --shard; -o only)")->check(CLI::ExistingFile);
  cap_verb->add_flag("--resid-only", cap.resid_only, "With --corpus: keep only the residual stream (activation studies)");
  cap_verb->add_flag("--stream", cap.stream, "With --corpus: rows are whole context windows of the split's documents concatenated (EOS between), not each document's");
  cap_verb->add_option("--max-rows", cap.max_rows, "With --corpus: keep the first N rows of this shard (0: all)")->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cap_verb->add_option("--split", cap.split, "With --corpus: validation or train")->check(CLI::IsMember({"validation", "train"}));
  cap_verb->add_option("--layers", cap.layers, "Layers to keep (0..n_layers; n_layers = the final residual; default all)")
      ->delimiter(',');
  App::add_optional_output(*cap_verb, cap.output, cap.no_clobber, "nk-lm.capture/1 (/capture/tokens, /capture/layer_LL/...)");
  cap_verb->add_option("--trajectory", cap.trajectory,
                       "Diffusion model: denoise --max-new tokens after the prompt and write every step's q/k/v (dllm-sparse.trajectory/1)");
  cap_verb->add_option("--max-new", cap.max_new, "With --trajectory: answer tokens")->check(positive);
  cap_verb->add_option("--steps", cap.steps, "With --trajectory: denoising steps (default --max-new)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cap_verb->add_option("--block", cap.block, "With --trajectory: block length (default --max-new)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cap_verb->add_option("--louver", cap.louver, "Also write one layer's keys, values and queries (louver-index.kv/1)");
  cap_verb->add_option("--louver-layer", cap.louver_layer, "The layer for --louver")->check(CLI::Range(int64_t{0}, int64_t{1023}));
  cap_verb->add_option("--louver-queries", cap.louver_queries, "Queries: the last M positions (0: all)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cli.add_shard(*cap_verb);

  nklm::InfoOptions info;
  CLI::App* info_verb = cli.add_verb("info", "Architecture, mode, sizes, parameters and tokenizer of a model");
  info_verb->add_option("-m,--model", info.model, "Model file")->required()->check(CLI::ExistingFile);

  nklm::ImportOptions imp;
  CLI::App* import_verb = cli.add_verb("import", "A Hugging Face Llama folder (config.json, model.safetensors) as a model file");
  import_verb->add_option("dir", imp.input, "The folder (model.safetensors or shards with their index; tokenizer.json optional)")
      ->required()
      ->check(CLI::ExistingDirectory);
  App::add_output(*import_verb, imp.output, imp.no_clobber, "model file")->required();
  import_verb->add_option("--dtype", imp.dtype, "Weights of the output file: float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}));

  nklm::ExportOptions exp;
  CLI::App* export_verb = cli.add_verb("export", "A causal model as a Hugging Face Llama folder (config.json, model.safetensors, tokenizer.json) or a GGUF file");
  export_verb->add_option("-m,--model", exp.model, "Model file")->required()->check(CLI::ExistingFile);
  export_verb->add_option("-o,--output", exp.output, "The folder (created when missing), or the .gguf file")->required();
  App::add_no_clobber(*export_verb, exp.no_clobber);
  export_verb->add_option("--format", exp.format, "safetensors (a folder, the default) or gguf (-o names the .gguf file, for llama.cpp)")
      ->check(CLI::IsMember({"safetensors", "gguf"}));

  return cli.run(argc, argv, [&] {
    if (*corpus_verb) nklm::corpus(corpus);
    if (*tok_verb) nklm::tokenizer(tok);
    if (*train_verb) {
      train.context_given = context_opt->count() > 0;
      train.rope_given = rope_opt->count() > 0;
      train.attention_given = attention_opt->count() > 0;
      nklm::train(train, cli.env());
    }
    if (*gen_verb) nklm::generate(gen, cli.env());
    if (*score_verb) nklm::score(score, cli.env());
    if (*info_verb) nklm::info(info);
    if (*cap_verb) nklm::capture(cap, cli.env());
    if (*import_verb) nklm::import_model(imp);
    if (*export_verb) nklm::export_model(exp);
  });
}
