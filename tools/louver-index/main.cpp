// main.cpp - louver-index: KV-cache index for halfspace range search with zero false negatives.
#include "louver-index/louver.hpp"
#include "nk/cli.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("louver-index", "KV-cache index returning exactly the keys with q.k >= T");
  cli.app().require_subcommand(1);

  louver::GenOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen", "Synthetic KV cache and decode queries (llm-like or iid)", nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--n", gen.keys, "Keys per KV head, N")->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  gen_verb->add_option("--d", gen.dims, "Head dimension, d")->check(CLI::Range(1, 1 << 16));
  gen_verb->add_option("--queries", gen.queries, "Decode queries per query head, M")->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  gen_verb->add_option("--heads", gen.kv_heads, "KV heads, Hkv")->check(CLI::Range(1, 1 << 12));
  gen_verb->add_option("--query-heads", gen.query_heads, "Query heads, Hq (a multiple of Hkv; default Hkv)")->check(CLI::Range(0, 1 << 12));
  gen_verb->add_option("--dv", gen.value_dims, "Value dimension (0 = no /values)")->check(CLI::Range(0, 1 << 16));
  gen_verb->add_option("--profile", gen.profile, "llm or iid")->check(CLI::IsMember({"llm", "iid"}));

  louver::BuildOptions build;
  CLI::App* build_verb = cli.add_verb("build", "Index /keys (and /values) of a KV file");
  nk::cli::App::add_input(*build_verb, build.input, "KV file with /keys [N,d] or [Hkv,N,d]");
  nk::cli::App::add_output(*build_verb, build.output, build.no_clobber);
  build_verb->add_option("--subspaces", build.params.subspaces, "Contiguous subspaces S of the d dimensions");
  build_verb->add_option("--branching", build.params.branching, "Parts per split when clustering a subspace, bf");
  build_verb->add_option("--leaf-size", build.params.leaf_size, "Keys per cluster at most");
  build_verb->add_option("--buffer", build.params.buffer, "Appended keys scanned exactly before they are indexed");

  louver::AppendOptions append;
  CLI::App* append_verb = cli.add_verb("append", "Append /keys (and /values) of a file to an index");
  nk::cli::App::add_input(*append_verb, append.input, "index file");
  append_verb->add_option("--keys", append.keys, "File with the new /keys [n,d] or [Hkv,n,d]")->required();
  append_verb->add_option("--rebuild-ratio", append.rebuild_ratio,
                          "Rebuild the codebooks when appended keys' mean residual exceeds this multiple of the built keys' (0: never)")
      ->check(CLI::Range(0.0, 1e6));
  append_verb->add_option("--rebuild-growth", append.rebuild_growth,
                          "Rebuild the codebooks when the indexed keys reach this multiple of those they were made from (0: never)")
      ->check(CLI::Range(0.0, 1e6));
  nk::cli::App::add_output(*append_verb, append.output, append.no_clobber);

  louver::QueryOptions query;
  CLI::App* query_verb = cli.add_verb("query", "Every key with q.k >= T, per query: CSR /offsets, /ids, /scores",
                                          nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*query_verb, query.input, "index file")->required();
  query_verb->add_option("--queries", query.queries, "File with /queries [M,d] or [Hq,M,d]")->required();
  nk::cli::App::add_output(*query_verb, query.output, query.no_clobber);
  CLI::Option* threshold = query_verb->add_option("--threshold", query.threshold, "The score threshold T");
  query_verb->add_option("--topk-oracle", query.topk_oracle, "T = the k-th largest exact score of each query")
      ->check(CLI::PositiveNumber)
      ->excludes(threshold);
  query_verb->add_option("--mass", query.mass, "T keeping at least this softmax mass of scale * q.k (provable; see man page)")
      ->check(CLI::Range(0.0, 1.0))
      ->excludes(threshold);
  query_verb->add_option("--mass-sample", query.mass_sample, "Keys sampled per query for --mass")->check(CLI::Range(1, 1 << 24));
  query_verb->add_option("--scale", query.scale, "Softmax scale for --mass (default 1/sqrt(d))")->check(CLI::NonNegativeNumber);
  query_verb->add_flag("--compare-dense", query.compare_dense,
                       "Also time a dense exact scan: exact methods must agree with it; quest-topk reports its recall");
  nk::cli::App::add_repeats(*query_verb, query.repeats);  // rounds: the search, then the dense scan, alternating
  query_verb->add_option("--method", query.method, "louver (the index), quest-threshold (exact), quest-topk or ivf (approximate)")
      ->check(CLI::IsMember({"louver", "quest-threshold", "quest-topk", "ivf"}));
  query_verb->add_option("--budget", query.budget, "quest-topk, ivf: fraction of the keys to scan")->check(CLI::Range(0.0, 1.0));
  query_verb->add_option("--lists", query.lists, "ivf: k-means lists per KV head (default sqrt N)")->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  query_verb->add_option("--page-size", query.page_size, "quest-*: keys per page")->check(CLI::Range(1, 1 << 20));
  cli.add_shard(*query_verb);

  louver::QueryOptions attend;
  CLI::App* attend_verb = cli.add_verb("attend", "Attention over each query's hits vs dense attention: outputs, error, mass",
                                           nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*attend_verb, attend.input, "index file (built with /values)")->required();
  attend_verb->add_option("--queries", attend.queries, "File with /queries [M,d] or [Hq,M,d]")->required();
  nk::cli::App::add_output(*attend_verb, attend.output, attend.no_clobber);
  CLI::Option* attend_threshold = attend_verb->add_option("--threshold", attend.threshold, "The score threshold T");
  attend_verb->add_option("--topk-oracle", attend.topk_oracle, "T = the k-th largest exact score of each query")
      ->check(CLI::PositiveNumber)
      ->excludes(attend_threshold);
  attend_verb->add_option("--mass", attend.mass, "T keeping at least this softmax mass (provable; see man page)")
      ->check(CLI::Range(0.0, 1.0))
      ->excludes(attend_threshold);
  attend_verb->add_option("--mass-sample", attend.mass_sample, "Keys sampled per query for --mass")->check(CLI::Range(1, 1 << 24));
  attend_verb->add_option("--scale", attend.scale, "Softmax scale of q.k (default 1/sqrt(d))")->check(CLI::NonNegativeNumber);
  cli.add_shard(*attend_verb);

  louver::PlotOptions plot;
  CLI::App* plot_verb = cli.add_verb("plot", "SVG: KL per decoding step of generations through an index (nk-lm generate --divergence)");
  plot_verb->add_option("inputs", plot.inputs, "nk-lm generate outputs with /kl")->required()->check(CLI::ExistingFile);
  nk::cli::App::add_output(*plot_verb, plot.output, plot.no_clobber, "the plot (SVG)")->required();
  plot_verb->add_option("--row", plot.row, "Which generation of each file (default 0)")->check(CLI::Range(int64_t{0}, int64_t{1} << 30));

  return cli.run(argc, argv, [&] {
    if (*plot_verb) louver::plot(plot);
    if (*gen_verb) louver::gen(gen, cli.env());
    if (*build_verb) louver::build(build);
    if (*append_verb) louver::append(append);
    if (*query_verb) {
      query.has_threshold = threshold->count() > 0;
      louver::query(query, cli.env());
    }
    if (*attend_verb) {
      attend.has_threshold = attend_threshold->count() > 0;
      louver::attend(attend, cli.env());
    }
  });
}
