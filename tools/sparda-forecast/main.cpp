// main.cpp - sparda-forecast: a Forecast projection that predicts the next
// layer's KV blocks of block-sparse attention, for lookahead prefetch (SparDA).
#include "nk/cli.hpp"
#include "sparda-forecast/sparda.hpp"

namespace {

std::vector<CLI::Option*> add_selector(CLI::App& verb, nk::lm::BlockSelectorConfig& sel) {
  return {verb.add_option("--block", sel.block, "Tokens per KV block")->check(CLI::Range(int64_t{1}, int64_t{1} << 20)),
          verb.add_option("--init-blocks", sel.init_blocks, "Leading blocks every query reads")
              ->check(CLI::Range(int64_t{0}, int64_t{1} << 20)),
          verb.add_option("--local-blocks", sel.local_blocks, "Blocks ending with the query's own that it reads")
              ->check(CLI::Range(int64_t{1}, int64_t{1} << 20)),
          verb.add_option("--topk", sel.topk, "Other complete blocks picked by score")
              ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))};
}

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("sparda-forecast", "Forecast projections that predict the next layer's KV blocks (SparDA)");
  cli.app().require_subcommand(1);

  sparda::GenOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen", "Synthetic traces (attention input, post-RoPE q, k, v per layer)",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--layers", gen.layers, "Layers L")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  gen_verb->add_option("--heads", gen.heads, "Query heads Hq (a multiple of --kv-heads)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  gen_verb->add_option("--kv-heads", gen.kv_heads, "KV heads Hkv (GQA groups)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  gen_verb->add_option("--head-dim", gen.head_dim, "Head dimension d (even)")
      ->check(CLI::Range(int64_t{2}, int64_t{1024}));
  gen_verb->add_option("--d-model", gen.d_model, "Width D of the attention input")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  gen_verb->add_option("--tokens", gen.tokens, "Tokens T per sequence")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  gen_verb->add_option("--batch", gen.batch, "Sequences B (a leading batch axis when > 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  gen_verb->add_option("--block", gen.block, "Tokens per block of the planted key topics")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  gen_verb->add_option("--rope-theta", gen.rope_theta, "RoPE base")->check(CLI::Range(1.0 + 1e-9, 1e12));
  gen_verb->add_flag("--planted", gen.planted,
                     "The next layer's group queries a linear map of this layer's attention input");
  gen_verb->add_option("--noise", gen.noise, "Per-head query noise, relative to the group's query")
      ->check(CLI::Range(0.0, 100.0));

  sparda::SelectOptions select;
  CLI::App* select_verb = cli.add_verb("select", "Each group's blocks per query: /layer_LL/blocks [Hkv,T,K]");
  nk::cli::App::add_input(*select_verb, select.input, "trace (nk-lm capture or sparda-forecast gen)");
  nk::cli::App::add_output(*select_verb, select.output, select.no_clobber);
  select_verb
      ->add_option("--by", select.by,
                   "selector (the layer's own queries), forecast (the previous layer's input) or infinigen (that input "
                   "times this "
                   "layer's wq, skewed)")
      ->check(CLI::IsMember({"selector", "forecast", "infinigen"}));
  select_verb->add_option("--rank", select.rank, "infinigen: skewed channels r per head")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  select_verb->add_option("--forecast", select.forecast, "Forecast file (sparda-forecast train), for --by forecast");
  add_selector(*select_verb, select.selector);

  sparda::TrainOptions train;
  CLI::App* train_verb = cli.add_verb(
      "train", "Fit the Forecast projections by KL to the selector's block distribution", nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*train_verb, train.input, "trace (nk-lm capture or sparda-forecast gen)");
  nk::cli::App::add_output(*train_verb, train.output, train.no_clobber);
  train_verb->add_option("--steps", train.steps, "Adam steps per layer")
      ->check(CLI::Range(int64_t{0}, int64_t{10000000}));
  train_verb->add_option("--queries", train.queries, "Sampled queries per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  train_verb->add_option("--lr", train.lr, "Adam learning rate (cosine decay to a tenth)")
      ->check(CLI::Range(1e-9, 10.0));
  train_verb
      ->add_option("--kl", train.kl, "full (all complete blocks) or topk (the selector's blocks plus one rest bucket)")
      ->check(CLI::IsMember({"full", "topk"}));
  train_verb->add_option("--init", train.init, "lstsq (regression on the group-mean query) or zero")
      ->check(CLI::IsMember({"lstsq", "zero"}));
  train_verb->add_option("--model", train.model,
                         "Write this nk-lm model (the trace's) with its Forecast under /forecast instead of a forecast file")
      ->check(CLI::ExistingFile);
  add_selector(*train_verb, train.selector);

  sparda::EvalOptions eval;
  CLI::App* eval_verb =
      cli.add_verb("eval", "Recall and attention coverage of the Forecast's blocks against the selector's, per layer");
  nk::cli::App::add_input(*eval_verb, eval.input, "trace (nk-lm capture or sparda-forecast gen)");
  nk::cli::App::add_output(*eval_verb, eval.output, eval.no_clobber);
  eval_verb->add_option("--by", eval.by, "forecast (--forecast) or infinigen (the trace's wq, skewed)")
      ->check(CLI::IsMember({"forecast", "infinigen"}));
  eval_verb->add_option("--forecast", eval.forecast, "Forecast file (sparda-forecast train), for --by forecast");
  eval_verb->add_option("--rank", eval.rank, "infinigen: skewed channels r per head")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  eval_verb->add_option("--positions", eval.positions, "Query positions A:B (A..B-1; default all)");
  cli.add_shard(*eval_verb);
  const std::vector<CLI::Option*> eval_selector = add_selector(*eval_verb, eval.selector);
  eval_verb->add_option("--model", eval.model,
                        "Run the methods inside this model (nk-lm checkpoint; a sparse-gqa one brings its selector): "
                        "perplexity and needle accuracy for dense, selector, forecast, infinigen (-i is then unused)")
      ->check(CLI::ExistingFile);
  eval_verb->add_option("--corpus", eval.corpus, "--model: held-out text (nk-lm corpus; its validation split)")
      ->check(CLI::ExistingFile);
  eval_verb->add_option("--windows", eval.windows, "--model: validation windows scored")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  eval_verb->add_option("--window", eval.window, "--model: tokens per window (0: the model's context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  eval_verb->add_option("--needles", eval.needles, "--model: needle documents (one fact, asked at the end; 0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  eval_verb->add_option("--needle-seed", eval.needle_seed, "--model: which needle documents");
  eval_verb->add_option("--needle-tokens", eval.needle_tokens, "--model: longest needle document (0: the model's context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));

  sparda::DecodeOptions decode;
  CLI::App* decode_verb = cli.add_verb(
      "decode",
      "Decode through the offload engine (host and device KV pools, a capped copy thread; a GPU over PCIe with --device "
      "cuda), replayed over a trace",
      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*decode_verb, decode.input, "trace with v (nk-lm capture or sparda-forecast gen)");
  nk::cli::App::add_output(*decode_verb, decode.output, decode.no_clobber);
  decode_verb
      ->add_option("--mode", decode.mode,
                   "sync (select, fetch, attend), forecast (lookahead), infinigen (lookahead) or resident")
      ->check(CLI::IsMember({"sync", "forecast", "infinigen", "resident"}));
  decode_verb->add_option("--forecast", decode.forecast, "Forecast file (sparda-forecast train), for --mode forecast");
  decode_verb->add_flag("--verify", decode.verify,
                        "Lookahead modes: also run the selector and fetch its misses at the layer (output = sync)");
  decode_verb->add_option("--positions", decode.positions,
                          "Decoded positions A:B (default all; NaN past a sequence's end)");
  decode_verb->add_option("--device-mem", decode.device_mib, "Device pool capacity, MiB")->check(CLI::Range(1e-3, 1e7));
  decode_verb->add_option(
      "--bandwidth", decode.bandwidth,
      "Copy bandwidth cap in GB/s (0: uncapped), or auto (transfer time = resident's compute time)");
  decode_verb->add_option("--rank", decode.rank, "infinigen: skewed channels r per head")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  decode_verb->add_option("--model", decode.model,
                          "Decode this nk-lm model (generation through the engine) instead of a trace");
  decode_verb->add_flag("--bench-shapes", decode.bench_shapes,
                        "Decode a random-weight model of the paper's shapes (Hq 32, Hkv 8, d 128, D 4096, MLP 14336, 4 "
                        "layers) over a synthetic prompt cache");
  decode_verb->add_option("--prompt-tokens", decode.prompt_tokens, "Model decoding: prompt length N")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  decode_verb->add_option("--batch", decode.batch, "Model decoding: sequences decoded together")
      ->check(CLI::Range(int64_t{1}, int64_t{64}));
  decode_verb->add_option("--steps", decode.steps, "Model decoding: tokens generated per sequence")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  decode_verb->add_option("--prefill-tokens", decode.prefill_tokens,
                          "--bench-shapes: prefill the prompt's last N tokens in --chunk pieces through the engine (the rest "
                          "synthesised); timed as /stats/prefill_seconds")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  decode_verb->add_option("--chunk", decode.chunk, "Model decoding: prefill chunk (tokens per forward per sequence)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  decode_verb
      ->add_option("--calibrate-steps", decode.calibrate_steps, "Model decoding: steps timed for --bandwidth auto")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cli.add_shard(*decode_verb);
  add_selector(*decode_verb, decode.selector);

  sparda::PlotOptions plot;
  CLI::App* plot_verb =
      cli.add_verb("plot", "SVG: recall and coverage per layer (eval files) or the step time by part (decode files)");
  plot_verb->add_option("-i,--input", plot.inputs, "eval files, or decode files (one line or bar each)")
      ->required()
      ->check(CLI::ExistingFile);
  nk::cli::App::output(plot_verb->add_option("-o,--output", plot.output, "The SVG file")->required());
  nk::cli::App::add_no_clobber(*plot_verb, plot.no_clobber);

  sparda::NeedleOptions needle;
  CLI::App* needle_verb = cli.add_verb(
      "needle", "Needle-task documents as text (facts hidden in GCIDE text, asked later), for nk-lm corpus --text",
      nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*needle_verb, needle.output, needle.no_clobber);
  needle_verb->add_option("--docs", needle.docs, "Documents (one paragraph each)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  needle_verb->add_option("--chars", needle.chars, "Bytes of filler per document (about 3.4 per token)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 26));
  needle_verb->add_option("--facts", needle.facts, "Facts per document, each asked at least 20% of it later")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  needle_verb->add_option("--split", needle.split, "train or eval: which keys (WordNet nouns, split by a hash)")
      ->check(CLI::IsMember({"train", "eval"}));

  return cli.run(argc, argv, [&] {
    if (*gen_verb) sparda::gen(gen, cli.env());
    if (*select_verb) sparda::select(select, cli.env());
    if (*train_verb) sparda::train(train, cli.env());
    if (*eval_verb) {
      for (const CLI::Option* opt : eval_selector) eval.selector_given = eval.selector_given || opt->count() > 0;
      sparda::eval(eval, cli.env());
    }
    if (*decode_verb) sparda::decode(decode, cli.env());
    if (*plot_verb) sparda::plot(plot);
    if (*needle_verb) sparda::needle(needle, cli.env());
  });
}
