// main.cpp - rubiconv: exact boundary-respecting FFT long convolution on packed sequences.
#include "nk/cli.hpp"
#include "rubiconv/rubiconv.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("rubiconv", "Exact per-document causal FFT convolution of packed sequences");
  cli.app().require_subcommand(1);

  rubiconv::RunOptions run;
  std::string method = "rubiconv";
  int64_t chunk_mib = 1;
  auto add_run_options = [&](CLI::App* verb) {
    nk::cli::App::add_input(*verb, run.input);
    nk::cli::App::add_output(*verb, run.output, run.no_clobber);
    verb->add_option("--method", method, "rubiconv, perdoc, padded, fullfft (ignores boundaries: wrong) or direct")
        ->check(CLI::IsMember({"rubiconv", "perdoc", "padded", "fullfft", "direct"}));
    verb->add_flag("--skip", run.skip, "Add /bias[h] * x (Hyena's D term)");
    verb->add_option("--direct-max", run.plan.direct_max, "Documents up to this length are convolved directly")
        ->check(CLI::Range(0, 1 << 20));
    verb->add_option("--tile", run.plan.tile, "Overlap-save FFT size for long documents with short filters")
        ->check(CLI::Range(64, 1 << 26));
    verb->add_option("--chunk-mib", chunk_mib, "Work buffer per thread and task of FFT rows, in MiB")->check(CLI::Range(1, 1 << 16));
    nk::cli::App::add_repeats(*verb, run.repeats);
    cli.add_shard(*verb);
  };
  CLI::App* apply = cli.add_verb("apply", "y = per-document causal convolution of /x with /k");
  add_run_options(apply);
  CLI::App* grad = cli.add_verb("grad", "Exact /dx, /dk (and /dbias) for a given /dy");
  add_run_options(grad);

  rubiconv::GenOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen", "Realistic packed inputs: /x, /cu_seqlens, /k (and /bias, /dy)",
                                        nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--length", gen.length, "Positions per row, L")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  gen_verb->add_option("--channels", gen.channels, "Channels, H")->check(CLI::Range(1, 1 << 16));
  gen_verb->add_option("--batch", gen.batch, "Rows, B")->check(CLI::Range(1, 1 << 20));
  gen_verb->add_option("--doc-lengths", gen.doc_lengths, "lognormal:MEDIAN,SIGMA, fixed:N or a FILE of lengths");
  gen_verb->add_option("--filter-length", gen.filter_length, "Filter taps Lk (default L)")->check(CLI::NonNegativeNumber);
  gen_verb->add_option("--filter", gen.filter, "hyena, stu or random")->check(CLI::IsMember({"hyena", "stu", "random"}));
  gen_verb->add_option("--dtype", gen.dtype, "float32 or float64")->check(CLI::IsMember({"float32", "float64"}));
  gen_verb->add_flag("--skip", gen.skip, "Also write /bias [H]");
  gen_verb->add_flag("--with-dy", gen.with_dy, "Also write an upstream gradient /dy [B,L,H]");
  gen_verb->add_flag("--shared-packing", gen.shared_packing, "One /cu_seqlens [D+1] for every row");

  return cli.run(argc, argv, [&] {
    run.method = rubiconv::parse_method(method);
    run.plan.task_bytes = chunk_mib << 20;
    if (*apply) rubiconv::run_apply(run, cli.env());
    if (*grad) rubiconv::run_grad(run, cli.env());
    if (*gen_verb) rubiconv::gen(gen, cli.env());
  });
}
