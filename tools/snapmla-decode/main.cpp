// main.cpp - snapmla-decode: FP8 MLA decoding with RoPE-aware per-token KV quantization.
#include "nk/cli.hpp"
#include "snapmla-decode/snapmla.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("snapmla-decode", "FP8 MLA decoding with RoPE-aware per-token KV quantization (SnapMLA)");
  cli.app().require_subcommand(1);
  using CLI::Range;

  snapmla::GenOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen", "Synthetic MLA caches and queries: /ckv, /kpe, /q, /lengths", nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--batch", gen.batch, "Sequences, B")->check(Range(int64_t{1}, int64_t{4096}));
  gen_verb->add_option("--tokens", gen.tokens, "Cached tokens per sequence, N")->check(Range(int64_t{1}, int64_t{1} << 24));
  gen_verb->add_option("--heads", gen.heads, "Query heads, H")->check(Range(int64_t{1}, int64_t{4096}));
  gen_verb->add_option("--d-c", gen.dc, "Latent width d_c")->check(Range(int64_t{8}, int64_t{16384}));
  gen_verb->add_option("--d-r", gen.dr, "RoPE key width d_R (even)")->check(Range(int64_t{2}, int64_t{4096}));
  gen_verb->add_option("--profile", gen.profile, "deepseek (content near zero, heavy-tailed RoPE) or iid (all N(0,1))")
      ->check(CLI::IsMember({"deepseek", "iid"}));
  gen_verb->add_flag("--ragged", gen.ragged, "Lengths uniform in [N/2, N] instead of N");
  gen_verb->add_option("--content-scale", gen.content_scale, "deepseek: typical |c|")->check(Range(1e-30, 1e30));
  gen_verb->add_option("--channel-sigma", gen.channel_sigma, "deepseek: lognormal sigma of c's channel scales")->check(Range(0.0, 10.0));
  gen_verb->add_option("--heavy-pairs", gen.heavy_pairs, "deepseek: RoPE pairs (lowest frequencies) with massive values")
      ->check(Range(int64_t{0}, int64_t{2048}));
  gen_verb->add_option("--heavy-scale", gen.heavy_scale, "deepseek: their typical magnitude")->check(Range(0.0, 1e30));
  gen_verb->add_option("--heavy-sigma", gen.heavy_sigma, "deepseek: lognormal sigma of that magnitude per token")->check(Range(0.0, 10.0));
  gen_verb->add_option("--query-content", gen.query_content, "deepseek: deviation of q_c")->check(Range(0.0, 1e30));
  gen_verb->add_option("--query-rope", gen.query_rope, "deepseek: deviation of q_R")->check(Range(0.0, 1e30));
  gen_verb->add_option("--query-heavy", gen.query_heavy, "deepseek: q_R's heavy channels, relative")->check(Range(0.0, 1e30));
  gen_verb->add_option("--theta", gen.theta, "RoPE base")->check(Range(1.0, 1e12));
  gen_verb->add_option("--softmax-scale", gen.softmax_scale, "Written as the softmax_scale attribute (0: 1/sqrt(192))")->check(Range(0.0, 1e6));

  snapmla::CastOptions cast;
  CLI::App* cast_verb = cli.add_verb("cast", "float32 /x -> /codes: E4M3 (uint8) or BF16 (uint16), same shape");
  nk::cli::App::add_input(*cast_verb, cast.input);
  nk::cli::App::add_output(*cast_verb, cast.output, cast.no_clobber);
  cast_verb->add_option("--to", cast.to, "e4m3 or bf16")->required()->check(CLI::IsMember({"e4m3", "bf16"}));

  snapmla::QuantOptions quant;
  std::string layout = "snapmla644";
  CLI::App* quant_verb = cli.add_verb("quant", "A float cache into 64-token pages of one row layout");
  nk::cli::App::add_input(*quant_verb, quant.input, "the float cache (gen's or a capture)");
  nk::cli::App::add_output(*quant_verb, quant.output, quant.no_clobber);
  quant_verb->add_option("--layout", layout, "bf16, flashmla656, snapmla644 or fp8-naive")
      ->check(CLI::IsMember({"bf16", "flashmla656", "snapmla644", "fp8-naive"}));

  snapmla::AttendOptionsCli attend;
  CLI::App* attend_verb = cli.add_verb("attend", "Paged decode attention: /out [B,H,d_c] (latent) and /lse [B,H]");
  nk::cli::App::add_input(*attend_verb, attend.input, "the paged cache (quant's)");
  attend_verb->add_option("--queries", attend.queries, "A file with /q [B,H,d_c+d_R] (gen's)")->required();
  nk::cli::App::add_output(*attend_verb, attend.output, attend.no_clobber);
  attend_verb->add_option("--pv", attend.pv, "fp8 (default for snapmla644, fp8-naive) or fp32")->check(CLI::IsMember({"fp8", "fp32"}));
  attend_verb->add_option("--splits", attend.splits, "Parts of each sequence's pages (split-K; 0: enough for every thread)")
      ->check(Range(int64_t{0}, int64_t{1} << 20));
  attend_verb->add_option("--softmax-scale", attend.softmax_scale, "Score scale (0: the queries file's softmax_scale)")->check(Range(0.0, 1e6));
  attend_verb->add_flag("--q-fp32", attend.q_fp32, "snapmla644: keep the query in float32 (no E4M3/BF16 rounding)");
  attend_verb->add_flag("--plain-scores", attend.plain_scores,
                        "snapmla644: scores with the RoPE part dequantized (the check of the pre-posed form; portable copy)");
  nk::cli::App::add_repeats(*attend_verb, attend.repeats);
  cli.add_shard(*attend_verb);

  snapmla::CaptureOptions capture;
  CLI::App* capture_verb =
      cli.add_verb("capture", "An mla checkpoint's own cache under gen's names: one layer's /ckv, /kpe of held-out windows, /q of their last token");
  capture_verb->add_option("--model", capture.model, "An mla checkpoint (nk-lm train --attention mla)")->required()->check(CLI::ExistingFile);
  capture_verb->add_option("--corpus", capture.corpus, "Held-out text = this nk-lm corpus's validation split")->check(CLI::ExistingFile);
  capture_verb->add_option("--text", capture.text, "Held-out text = this file")->check(CLI::ExistingFile);
  capture_verb->add_option("--layer", capture.layer, "The layer whose cache is taken (0-based)")->check(Range(int64_t{0}, int64_t{1023}));
  capture_verb->add_option("--windows", capture.windows, "Windows = batch rows B")->check(Range(int64_t{1}, int64_t{4096}));
  capture_verb->add_option("--context", capture.context, "Tokens a window, N (0: the model's context)")->check(Range(int64_t{0}, int64_t{1} << 20));
  nk::cli::App::add_output(*capture_verb, capture.output, capture.no_clobber);

  snapmla::PlotOptions plot;
  CLI::App* plot_verb = cli.add_verb("plot", "An SVG of each layout's error against the cache length N, from eval tables");
  plot_verb->add_option("inputs", plot.inputs, "eval -o tables of caches of several lengths")->required()->check(CLI::ExistingFile);
  plot_verb->add_option("--measure", plot.measure, "rel_l2, max_rel or lse_abs")->check(CLI::IsMember({"rel_l2", "max_rel", "lse_abs"}));
  nk::cli::App::add_output(*plot_verb, plot.output, plot.no_clobber, "the SVG");

  snapmla::EvalOptions eval;
  CLI::App* eval_verb = cli.add_verb("eval", "Each layout's error against float64 attention over the float cache");
  nk::cli::App::add_input(*eval_verb, eval.input, "the float cache with /q (gen's)");
  nk::cli::App::add_optional_output(*eval_verb, eval.output, eval.no_clobber, "the table as HDF5");
  eval_verb->add_option("--layouts", eval.layouts, "LAYOUT[:fp8|fp32], comma-separated (default: every layout, snapmla644 both ways)")
      ->delimiter(',');
  eval_verb->add_flag("--q-fp32", eval.q_fp32, "snapmla644 rows with the query in float32 (what query quantization costs)");
  eval_verb->add_option("--splits", eval.splits, "Parts of each sequence's pages (0: enough for every thread)")->check(Range(int64_t{0}, int64_t{1} << 20));
  eval_verb->add_option("--model", eval.model, "An mla checkpoint (nk-lm train --attention mla): its perplexity with its cache in each layout")
      ->check(CLI::ExistingFile);
  eval_verb->add_option("--corpus", eval.corpus, "--model: held-out text = this nk-lm corpus's validation split")->check(CLI::ExistingFile);
  eval_verb->add_option("--text", eval.text, "--model: held-out text = this file")->check(CLI::ExistingFile);
  eval_verb->add_option("--windows", eval.windows, "--model: windows of the context scored")->check(Range(int64_t{1}, int64_t{1} << 20));
  eval_verb->add_option("--context", eval.context, "--model: tokens per window (0: the model's context)")
      ->check(Range(int64_t{0}, int64_t{1} << 20));
  eval_verb->add_flag("--check-decode", eval.check_decode,
                      "--model: decode the first window again token by token per layout; the largest logit difference");

  snapmla::SpeedOptions speed;
  CLI::App* speed_verb = cli.add_verb("speed", "The decode kernel's time per layout: ms, tokens/s, GB/s, GFLOP/s, x bf16");
  nk::cli::App::add_input(*speed_verb, speed.input, "the float cache with /q (gen's)");
  nk::cli::App::add_optional_output(*speed_verb, speed.output, speed.no_clobber, "the table as HDF5");
  speed_verb->add_option("--layouts", speed.layouts, "LAYOUT[:fp8|fp32], comma-separated (default: every layout, its default PV)")
      ->delimiter(',');
  speed_verb->add_option("--splits", speed.splits, "Parts of each sequence's pages (0: enough for every thread)")->check(Range(int64_t{0}, int64_t{1} << 20));
  nk::cli::App::add_repeats(*speed_verb, speed.repeats);

  snapmla::ServeOptions serve;
  CLI::App* serve_verb = cli.add_verb("serve", "Long-output decoding under a KV memory budget: tokens/s and concurrency per layout",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_optional_output(*serve_verb, serve.output_file, serve.no_clobber, "the table as HDF5");
  serve_verb->add_option("--layouts", serve.layouts, "Comma-separated layouts (default bf16,snapmla644)")->delimiter(',');
  serve_verb->add_option("--budget-mib", serve.budget_mib, "KV memory budget in MiB")->check(Range(0.01, 1e7));
  serve_verb->add_option("--requests", serve.requests, "Requests")->check(Range(int64_t{1}, int64_t{1} << 20));
  serve_verb->add_option("--prompt-tokens", serve.prompt, "Prompt tokens per request")->check(Range(int64_t{1}, int64_t{1} << 20));
  serve_verb->add_option("--output-tokens", serve.output, "Generated tokens per request")->check(Range(int64_t{1}, int64_t{1} << 22));
  serve_verb->add_option("--heads", serve.heads, "Query heads")->check(Range(int64_t{1}, int64_t{4096}));
  serve_verb->add_option("--d-c", serve.dc, "Latent width")->check(Range(int64_t{8}, int64_t{16384}));
  serve_verb->add_option("--d-r", serve.dr, "RoPE key width (even)")->check(Range(int64_t{2}, int64_t{4096}));
  serve_verb->add_option("--max-batch", serve.max_batch, "Running sequences at most")->check(Range(int64_t{1}, int64_t{1} << 20));

  return cli.run(argc, argv, [&] {
    if (*gen_verb) snapmla::gen(gen, cli.env());
    if (*cast_verb) snapmla::cast(cast, cli.env());
    if (*quant_verb) {
      quant.layout = snapmla::parse_layout(layout, "--layout");
      snapmla::quant(quant, cli.env());
    }
    if (*attend_verb) snapmla::attend_verb(attend, cli.env());
    if (*capture_verb) snapmla::capture(capture, cli.env());
    if (*plot_verb) snapmla::plot(plot, cli.env());
    if (*eval_verb) snapmla::eval(eval, cli.env());
    if (*speed_verb) snapmla::speed(speed, cli.env());
    if (*serve_verb) snapmla::serve(serve, cli.env());
  });
}
