// main.cpp - aldrift: sample-efficient optimisation over generative priors by
// coarse learnability (stages of independence-MH correction and refits).
#include "aldrift/aldrift.hpp"
#include "aldrift/global.hpp"
#include "aldrift/lm.hpp"
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

  ald::GlobalOptions gl;
  CLI::App* gl_verb = cli.add_verb("global", "Minimise a shifted test function in R^n to eps-optimality: evaluations vs ln(1/eps)",
                                   nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gl_verb, gl.output, gl.no_clobber);
  gl_verb->add_option("--function", gl.functions, "rastrigin, levy, ackley or styblinski-tang (a comma list: items)")
      ->delimiter(',')
      ->check(CLI::IsMember({"rastrigin", "levy", "ackley", "styblinski-tang"}));
  gl_verb->add_option("--dim", gl.dims, "Dimensions n (a comma list: items)")->delimiter(',')->check(CLI::Range(1, 1000));
  gl_verb->add_option("--seeds", gl.seeds, "Item seeds: A-B ranges and comma lists (default: --seed)");
  gl_verb->add_option("--amplitude", gl.amplitude, "rastrigin's A")->check(CLI::Range(0.0, 1e6));
  gl_verb->add_option("--x-star", gl.x_star_file, "HDF5 file with /x_star [n] (default: uniform in [-2,2]^n from the item seed)");
  gl_verb->add_option("--envelope", gl.envelope, "C1,C2: an assumed envelope for ackley or styblinski-tang (optimistic, doo)");
  gl_verb->add_option("--eps", gl.eps, "Stop once the best d - d* is <= eps")->check(CLI::Range(0.0, 1e6));
  gl_verb->add_option("--budget", gl.budget, "Cost evaluations allowed per run")->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  gl_verb->add_option("--method", gl.method, "aldrift, random, cem, cbas, soo or doo")
      ->check(CLI::IsMember({"aldrift", "random", "cem", "cbas", "soo", "doo"}));
  gl_verb->add_option("--learner", gl.learner, "aldrift: gauss, kde, optimistic or product (one KDE per coordinate)")->check(CLI::IsMember({"gauss", "kde", "optimistic", "product"}));
  gl_verb->add_option("--chains", gl.chains, "aldrift: chains per stage (0: 3 n + 6 for optimistic, 4 n + 8 for gauss and kde, 10 n + 10 for product)")->check(CLI::Range(0, 1000000));
  gl_verb->add_option("--steps", gl.steps, "aldrift: MH moves per chain and stage")->check(CLI::Range(1, 100000));
  gl_verb->add_option("--burn-in", gl.burn_in, "aldrift: moves before a chain's states are kept")->check(CLI::Range(0, 100000));
  gl_verb->add_option("--ess", gl.ess, "aldrift: effective-sample share that sets each temperature step")->check(CLI::Range(0.01, 0.99));
  gl_verb->add_option("--max-ratio", gl.max_ratio, "aldrift: largest T_{i+1}/T_i")->check(CLI::Range(1.01, 1e6));
  gl_verb->add_option("--energy", gl.energy, "aldrift: T_{i+1} <= energy n / (2 mean gap of the chain states)")->check(CLI::Range(0.01, 1e6));
  gl_verb->add_option("--inflate", gl.learning.inflate, "gauss: covariance multiplier")->check(CLI::Range(1.0, 1e6));
  gl_verb->add_option("--bandwidth", gl.learning.bandwidth, "kde, product: multiple of Silverman's bandwidth")->check(CLI::Range(0.01, 1e6));
  gl_verb->add_option("--eta", gl.learning.eta, "optimistic, product: widening 1 + eta of the envelope's variance")->check(CLI::Range(0.0, 1e6));
  gl_verb->add_option("--wide-share", gl.learning.wide_share, "product: each coordinate's share of Silverman-wide kernels (with an envelope)")->check(CLI::Range(0.0, 0.99));
  gl_verb->add_option("--population", gl.population, "cem, cbas: draws per iteration (0: 20 n)")->check(CLI::Range(0, 100000000));
  gl_verb->add_option("--elite", gl.elite, "cem: share refitted")->check(CLI::Range(1e-9, 1.0));
  gl_verb->add_option("--cem-rate", gl.cem_rate, "cem: weight of the new fit")->check(CLI::Range(1e-9, 1.0));
  gl_verb->add_option("--quantile", gl.quantile, "cbas: cost quantile of the threshold")->check(CLI::Range(1e-9, 1.0));
  gl_verb->add_option("--box", gl.box, "soo, doo: search box [-box, box]^n")->check(CLI::Range(1e-9, 1e9));
  cli.add_shard(*gl_verb);

  ald::EvaluateOptions ev;
  CLI::App* ev_verb = cli.add_verb("evaluate", "d(x) - d* of the rows of /x [m,n] as global sees them: /d [m]",
                                   nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*ev_verb, ev.input, "points file with /x [m,n]")->required();
  nk::cli::App::add_output(*ev_verb, ev.output, ev.no_clobber);
  ev_verb->add_option("--function", ev.function, "rastrigin, levy, ackley or styblinski-tang")
      ->check(CLI::IsMember({"rastrigin", "levy", "ackley", "styblinski-tang"}));
  ev_verb->add_option("--amplitude", ev.amplitude, "rastrigin's A")->check(CLI::Range(0.0, 1e6));
  ev_verb->add_option("--x-star", ev.x_star_file, "HDF5 file with /x_star [n] (default: drawn from --seed as global does)");

  ald::LmOptions lmo;
  CLI::App* lm_verb = cli.add_verb("lm", "Experiment C: ALDRIFT, SIR and CEM over a causal language model's strings, against pi_T's reference point",
                                   nk::cli::Randomness::seeded);
  lm_verb->add_option("--prior", lmo.prior, "Causal nk-lm checkpoint: the prior L (e.g. data/lm/causal.h5)")
      ->required()
      ->check(CLI::ExistingFile);
  nk::cli::App::add_output(*lm_verb, lmo.output, lmo.no_clobber);
  lm_verb->add_option("--cost", lmo.cost, "letter:L (share of letters that are L), wordnet:SYNSET (1 - share of words naming a hyponym) or cmd:PROG (one string per line in, one cost per line out)");
  lm_verb->add_option("--wordnet", lmo.wordnet_root, "WordNet folder for wordnet: costs (default /usr/share/wordnet)");
  lm_verb->add_option("--prompt", lmo.prompt, "Text every string continues (after BOS; default none)");
  lm_verb->add_option("--T", lmo.T, "Final inverse temperature T (>= 0)")->check(CLI::Range(0.0, 1e6));
  lm_verb->add_option("--stages", lmo.stages, "Stages K (temperatures T k/K; cem: iterations)")->check(CLI::Range(1, 10000));
  lm_verb->add_option("--chains", lmo.chains, "Chains per stage (cem: population chains x (steps + 1))")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  lm_verb->add_option("--steps", lmo.steps, "MH moves per chain and stage")->check(CLI::Range(1, 100000));
  lm_verb->add_option("--burn-in", lmo.burn_in, "Moves before a chain's states are kept")->check(CLI::Range(0, 100000));
  lm_verb->add_option("--length", lmo.length, "Tokens per string")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  lm_verb->add_option("--methods", lmo.methods, "Comma list of aldrift, sir, cem")
      ->delimiter(',')
      ->check(CLI::IsMember({"aldrift", "sir", "cem"}));
  lm_verb->add_option("--fit-epochs", lmo.fit_epochs, "full: fine-tuning passes over each stage's samples")->check(CLI::Range(1, 10000));
  lm_verb->add_option("--fit-lr", lmo.fit_lr, "full: fine-tuning learning rate (AdamW, constant)")->check(CLI::Range(1e-9, 1.0));
  lm_verb->add_option("--fit-batch", lmo.fit_batch, "full: strings per fine-tuning step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  lm_verb->add_option("--learner", lmo.learner, "bias (a logit-bias adapter over the frozen prior, convex MLE) or full (fine-tune every weight)")
      ->check(CLI::IsMember({"bias", "full"}));
  lm_verb
      ->add_option_function<std::string>(
          "--bias-l2",
          [&lmo](const std::string& v) {
            if (v == "cv") {
              lmo.bias_l2_cv = true;
              return;
            }
            size_t used = 0;
            double x = NAN;
            try {
              x = std::stod(v, &used);
            } catch (const std::exception&) {
              used = 0;
            }
            if (used != v.size() || !(x >= 1e-9 && x <= 1e6)) throw CLI::ValidationError("--bias-l2", "takes cv or a number in [1e-9, 1e6], not '" + v + "'");
            lmo.bias_l2 = x, lmo.bias_l2_cv = false;
          },
          "bias: precision of the adapter's Gaussian prior (the smoothing that keeps coverage finite; default 10), or cv: chosen per fit by cross-validation over --bias-l2-grid")
      ->type_name("L2|cv");
  lm_verb->add_option("--bias-l2-grid", lmo.bias_l2_grid, "bias, --bias-l2 cv: the precisions tried (default 1,3,10,30,100)")
      ->delimiter(',')
      ->check(CLI::Range(1e-9, 1e6));
  lm_verb->add_option("--bias-folds", lmo.bias_folds, "bias, --bias-l2 cv: folds (default 4)")->check(CLI::Range(2, 100));
  lm_verb->add_option("--elite", lmo.elite, "cem: share of each population fine-tuned on")->check(CLI::Range(1e-9, 1.0));
  lm_verb->add_option("--kl-samples", lmo.kl_samples, "Draws of each fitted model for KL(q||L) and E_q[d] (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  lm_verb->add_option("--reference", lmo.reference, "Prior draws of the importance-sampling reference point (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 26));
  lm_verb->add_option("--batch", lmo.batch, "Sequences per forward pass")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  nk::cli::App::output(lm_verb->add_option("--save-model", lmo.save_model, "Also write ALDRIFT's final fine-tuned model (nk-lm checkpoint, float32)"));

  ald::PlotOptions pl;
  CLI::App* plot_verb = cli.add_verb("plot", "SVG of one or more outputs of one kind: exact (tv_law, coverage per stage), global (evals vs ln(1/eps)), lm (cost vs KL per stage)");
  nk::cli::App::add_input(*plot_verb, pl.input, "exact, global or lm output")->required();
  plot_verb->add_option("more", pl.more, "further outputs of the same kind drawn beside it");
  nk::cli::App::add_output(*plot_verb, pl.output, pl.no_clobber);

  return cli.run(argc, argv, [&] {
    if (*gen_verb) ald::gen_exact(gen, cli.env());
    if (*ex_verb) ald::exact(ex, cli.env());
    if (*gl_verb) ald::global(gl, cli.env());
    if (*ev_verb) ald::evaluate(ev, cli.env());
    if (*lm_verb) ald::lm(lmo, cli.env());
    if (*plot_verb) ald::plot(pl, cli.env());
  });
}
