// main.cpp - aldrift: sample-efficient optimisation over generative priors by
// coarse learnability (stages of independence-MH correction and refits).
#include "aldrift/aldrift.hpp"
#include "nk/cli.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("aldrift", "ALDRIFT: sample pi_T(s) ~ L(s) exp(-T d(s)) by MH-corrected model refits (coarse learnability)");
  cli.app().require_subcommand(1);

  ald::GenExactOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen-exact", "An enumerable problem: a sticky Markov prior /prior/{init,trans} and /cost [A^n]",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--alphabet", gen.alphabet, "Alphabet size A")->check(CLI::Range(2, 1024));
  gen_verb->add_option("--length", gen.length, "String length n")->check(CLI::Range(1, 24));
  gen_verb->add_option("--stay", gen.stay, "Prior probability of repeating the previous symbol")->check(CLI::Range(0.0, 1.0));
  gen_verb->add_option("--cost", gen.cost, "hamming (distance to --target) or random (uniform in [0, n), from --seed)")
      ->check(CLI::IsMember({"hamming", "random"}));
  gen_verb->add_option("--target", gen.target, "The zero-cost string of hamming: digits, or a comma list of symbols");

  ald::ExactOptions ex;
  CLI::App* ex_verb = cli.add_verb("exact", "ALDRIFT, SIR, CEM or CbAS on an enumerable problem, each stage measured against pi_T",
                                   nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*ex_verb, ex.input, "problem file (gen-exact, or any file with /prior/{init,trans} and /cost)")
      ->required();
  nk::cli::App::add_output(*ex_verb, ex.output, ex.no_clobber);
  ex_verb->add_option("--T", ex.T, "Final inverse temperature T (>= 0)")->check(CLI::Range(0.0, 1e6));
  ex_verb->add_option("--method", ex.method, "aldrift, sir, cem or cbas")->check(CLI::IsMember({"aldrift", "sir", "cem", "cbas"}));
  ex_verb->add_option("--budget", ex.budget, "Cost evaluations allowed")->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  ex_verb->add_option("--stages", ex.stages, "Stages K (aldrift: temperatures T k/K; cem, cbas: iterations)")
      ->check(CLI::Range(1, 100000));
  ex_verb->add_option("--chains", ex.chains, "aldrift: chains per stage (0: as many as the budget allows)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 32));
  ex_verb->add_option("--steps", ex.steps, "aldrift: MH moves per chain")->check(CLI::Range(1, 1000000));
  ex_verb->add_option("--burn-in", ex.burn_in, "aldrift: moves before a chain's states are kept")->check(CLI::Range(0, 1000000));
  ex_verb->add_option("--learner", ex.learner, "markov (position-dependent), markov-h (homogeneous) or table")
      ->check(CLI::IsMember({"markov", "markov-h", "table"}));
  ex_verb->add_option("--smoothing", ex.smoothing, "Add-alpha pseudo-count per model cell")->check(CLI::Range(0.0, 1e6));
  ex_verb->add_option("--elite", ex.elite, "cem: share of the population refitted")->check(CLI::Range(1e-9, 1.0));
  ex_verb->add_option("--cem-rate", ex.cem_rate, "cem: weight of the new fit in each update")->check(CLI::Range(1e-9, 1.0));
  ex_verb->add_option("--quantile", ex.quantile, "cbas: cost quantile of each iteration's threshold")->check(CLI::Range(1e-9, 1.0));
  ex_verb->add_option("--sir-pool", ex.sir_pool, "sir: pooled draws over independent runs for its tv_law")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));

  ald::PlotOptions pl;
  CLI::App* plot_verb = cli.add_verb("plot", "SVG: tv_law and coverage per stage of one or more exact outputs");
  nk::cli::App::add_input(*plot_verb, pl.input, "exact output")->required();
  plot_verb->add_option("more", pl.more, "further exact outputs drawn beside it");
  nk::cli::App::add_output(*plot_verb, pl.output, pl.no_clobber);

  return cli.run(argc, argv, [&] {
    if (*gen_verb) ald::gen_exact(gen, cli.env());
    if (*ex_verb) ald::exact(ex, cli.env());
    if (*plot_verb) ald::plot(pl, cli.env());
  });
}
