// main.cpp - speedscale-sim: energy-minimising speed scaling with machine-speed predictions.
#include "nk/cli.hpp"
#include "speedscale-sim/speedscale.hpp"

namespace {

void add_params(CLI::App& verb, ss::OnlineParams& p) {
  verb.add_option("--alpha", p.alpha, "Power exponent: power = speed^alpha (> 1)")->check(CLI::Range(1.0 + 1e-9, 100.0));
  verb.add_option("--eps", p.eps, "pred-*: follow (1 + eps) times the predicted speed")->check(CLI::Range(0.0, 100.0));
  verb.add_option("--gamma", p.gamma, "pred-*: trust the prediction while energy + cost-to-go <= gamma x OPT(released)")
      ->check(CLI::Range(1.0, 1e12));
  verb.add_option("--q", p.q, "qOA factor (0: 2 - 1/alpha)")->check(CLI::Range(0.0, 1e6));
  verb.add_option("--dt", p.dt, "Re-evaluation step of qOA and BKP (0: horizon / (8 n))")->check(CLI::NonNegativeNumber);
}

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("speedscale-sim", "Speed scaling for energy with deadlines: YDS, online algorithms, speed predictions");
  cli.app().require_subcommand(1);

  ss::GenOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen", "Random, adversarial or CSV instances: /instances/NNNNNN/{release,deadline,work}",
                                        nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--jobs", gen.jobs, "Jobs per instance")->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  gen_verb->add_option("--instances", gen.instances, "Instances")->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  gen_verb->add_option("--arrivals", gen.arrivals, "poisson:RATE | uniform:RATE | bursty:RATE,FACTOR,PHASE | diurnal:RATE,PERIOD");
  gen_verb->add_option("--work", gen.work, "Work of a job: lognormal:MEDIAN,SIGMA | uniform:A,B | fixed:W | pareto:XM,SHAPE (neurkit(7))");
  gen_verb->add_option("--slack", gen.slack, "Window / work (d = r + w * slack), same forms as --work");
  gen_verb->add_option("--adversarial", gen.adversarial, "A bad family instead: oa (for OA, qOA, BKP) or avr")
      ->check(CLI::IsMember({"oa", "avr"}));
  gen_verb->add_option("--alpha", gen.alpha, "Power exponent the adversarial family targets")->check(CLI::Range(1.0 + 1e-9, 100.0));
  gen_verb->add_option("--from-csv", gen.from_csv, "One instance from a CSV file with columns release,deadline,work[,id]");

  ss::SolveOptions solve;
  CLI::App* solve_verb = cli.add_verb("solve", "Run algorithms on every instance; check, write profiles and a ratio table");
  nk::cli::App::add_input(*solve_verb, solve.input, "instances file");
  nk::cli::App::add_output(*solve_verb, solve.output, solve.no_clobber);
  solve_verb->add_option("--algo", solve.algos,
                         "Comma-separated: yds, yds-naive, avr, oa, qoa, bkp, las, pred-dynamic, pred-offline, pred-jobspeed");
  solve_verb->add_option("--predictions", solve.predictions, "Predictions file (from predict) for las and pred-*");
  solve_verb->add_flag("--no-profiles", solve.no_profiles, "Write only /summary (no per-instance profiles)");
  add_params(*solve_verb, solve.params);
  cli.add_shard(*solve_verb);

  ss::PredictOptions predict;
  CLI::App* predict_verb = cli.add_verb("predict", "Speed predictions: an oracle (noisy, adversarial) or learned from past instances",
                                            nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*predict_verb, predict.input, "instances file (the training set for mean/quantile)");
  nk::cli::App::add_output(*predict_verb, predict.output, predict.no_clobber);
  predict_verb->add_option("--method", predict.method, "oracle (each instance's own optimum), mean or quantile (learned)")
      ->check(CLI::IsMember({"oracle", "mean", "quantile"}));
  predict_verb->add_option("--noise", predict.noise, "Multiply each predicted value by exp(noise * N(0,1))")
      ->check(CLI::Range(0.0, 100.0));
  predict_verb->add_option("--adversarial", predict.adversarial, "oracle: replace the prediction by zero, x10 or random")
      ->check(CLI::IsMember({"zero", "x10", "random"}));
  predict_verb->add_option("--quantile", predict.quantile, "quantile: which one (0..1)")->check(CLI::Range(0.0, 1.0));
  predict_verb->add_option("--grid", predict.grid, "mean/quantile: cells of the learned profile")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  predict_verb->add_option("--alpha", predict.alpha, "Power exponent")->check(CLI::Range(1.0 + 1e-9, 100.0));

  ss::EvalOptions eval;
  CLI::App* eval_verb = cli.add_verb("eval", "Energy ratio vs prediction error and eps: table, HDF5 and SVG plots",
                                         nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*eval_verb, eval.input, "instances file");
  nk::cli::App::add_output(*eval_verb, eval.output, eval.no_clobber);
  eval_verb->add_option("--algo", eval.algos, "Comma-separated algorithms (as for solve)");
  eval_verb->add_option("--noise", eval.noise, "Comma-separated noise levels of the oracle prediction");
  eval_verb->add_option("--eps-list", eval.eps, "Comma-separated eps values");
  nk::cli::App::output(eval_verb->add_option("--plot", eval.plot, "SVG: mean energy ratio vs prediction error, one line per algorithm"));
  nk::cli::App::output(eval_verb->add_option("--profile-plot", eval.profile_plot, "SVG: speed profiles of the first instance"));
  add_params(*eval_verb, eval.params);

  return cli.run(argc, argv, [&] {
    if (*gen_verb) ss::gen(gen, cli.env());
    if (*solve_verb) ss::solve(solve, cli.env());
    if (*predict_verb) ss::predict(predict, cli.env());
    if (*eval_verb) ss::eval(eval, cli.env());
  });
}
