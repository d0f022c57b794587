// main.cpp - teacher-limits: information-theoretic limits of learning a
// hierarchical teacher, its sharp feature transitions and the effective width.
#include "nk/cli.hpp"
#include "teacher-limits/teacher_limits.hpp"

namespace {
const int64_t kMaxSize = int64_t{1} << 24;
const std::vector<std::string> kActivations{"tanh", "relu-centered", "he2", "he3", "linear"};
}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("teacher-limits", "Bayes-optimal limits of learning a hierarchical teacher: feature transitions, effective width");
  cli.app().require_subcommand(1);

  tl::TeacherOptions teacher;
  CLI::App* teacher_verb = cli.add_verb("teacher", "A teacher f*(x) = sum_i v_i sigma(w_i.x/sqrt d): /teacher/{W,v}",
                                        nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*teacher_verb, teacher.output, teacher.no_clobber);
  teacher_verb->add_option("--d", teacher.d, "Input dimension d")->check(CLI::Range(int64_t{1}, kMaxSize));
  auto* kappa = teacher_verb->add_option("--kappa", teacher.kappa, "Width k = kappa d")->check(CLI::Range(1e-6, 1e6));
  teacher_verb->add_option("--k", teacher.k, "Width k (instead of --kappa)")->check(CLI::Range(int64_t{1}, kMaxSize))->excludes(kappa);
  teacher_verb->add_option("--beta", teacher.beta, "Readouts v_i ~ i^-beta (beta > 1/2)")->check(CLI::Range(0.0, 100.0));
  teacher_verb->add_option("--activation", teacher.activation, "tanh, relu-centered, he2, he3 or linear")->check(CLI::IsMember(kActivations));
  teacher_verb->add_option("--noise", teacher.noise, "Label noise variance Delta (> 0)")->check(CLI::PositiveNumber);

  tl::DataOptions data;
  CLI::App* data_verb = cli.add_verb("data", "Noisy queries y = f*(x) + sqrt(Delta) z: /train/{X,y}, /test/{X,f,y}",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*data_verb, data.input, "teacher file (teacher, or any file with /teacher/{W,v})")->required();
  nk::cli::App::add_output(*data_verb, data.output, data.no_clobber);
  data_verb->add_option("--n", data.n, "Training samples n")->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  data_verb->add_option("--test", data.test, "Test samples (noiseless /test/f beside /test/y)")->check(CLI::Range(int64_t{1}, int64_t{1} << 32));

  tl::TheoryOptions th;
  CLI::App* th_verb = cli.add_verb("theory", "The Bayes-optimal fixed-point equations over n: eps_BO, overlaps, k_c, onsets");
  nk::cli::App::add_input(*th_verb, th.input, "teacher file (its d, v, activation and noise; W is not used)");
  nk::cli::App::add_output(*th_verb, th.output, th.no_clobber);
  th_verb->add_option("--d", th.d, "Input dimension d (without -i; default 64)")->check(CLI::Range(int64_t{1}, kMaxSize));
  auto* th_kappa = th_verb->add_option("--kappa", th.kappa, "Width k = kappa d (without -i; default 1)")->check(CLI::Range(1e-6, 1e6));
  th_verb->add_option("--k", th.k, "Width k (without -i)")->check(CLI::Range(int64_t{1}, kMaxSize))->excludes(th_kappa);
  th_verb->add_option("--beta", th.beta, "Readout exponent (without -i; default 1; beta <= 1/2 is refused)");
  th_verb->add_option("--activation", th.activation, "Activation (default he3, or the file's)")->check(CLI::IsMember(kActivations));
  th_verb->add_option("--noise", th.noise, "Delta (default 0.1, or the file's)")->check(CLI::PositiveNumber);
  auto* n_list = th_verb->add_option("--n", th.n, "Sample counts, comma separated")->delimiter(',');
  th_verb->add_option("--n-range", th.n_range, "A:B:POINTS, log-spaced sample counts")->excludes(n_list);
  auto* widths = th_verb->add_option("--widths", th.widths, "Student widths for /theory/student_eps (default 1, 2, 4, ..., k)")
                     ->delimiter(',');

  tl::HmcOptions hmc;
  CLI::App* hmc_verb = cli.add_verb("hmc", "HMC on W from the Bayes-optimal posterior: eps_BO, Gibbs error, overlaps",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*hmc_verb, hmc.input, "data file (data), or a teacher file with --n")->required();
  nk::cli::App::add_output(*hmc_verb, hmc.output, hmc.no_clobber);
  hmc_verb->add_option("--init", hmc.init, "informed (start at the teacher) or random (W ~ N(0, I))")
      ->check(CLI::IsMember({"informed", "random"}));
  hmc_verb->add_option("--chains", hmc.config.chains, "Independent chains")->check(CLI::Range(1, 1024));
  hmc_verb->add_option("--samples", hmc.config.samples, "Samples per chain after warm-up")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  hmc_verb->add_option("--warmup", hmc.config.warmup, "Warm-up transitions per chain (step adaptation)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  hmc_verb->add_option("--leapfrog", hmc.config.leapfrog, "Leapfrog steps per transition")->check(CLI::Range(1, 100000));
  hmc_verb->add_option("--target-acceptance", hmc.config.target_acceptance, "Acceptance the warm-up steers the step to")
      ->check(CLI::Range(0.05, 0.99));
  hmc_verb->add_option("--batches", hmc.config.batches, "Batch means per chain for the standard error")->check(CLI::Range(1, 1000));
  auto add_items = [&](CLI::App* verb, tl::ItemOptions& items) {
    verb->add_option("--n", items.n, "With a teacher file: sample counts, comma separated (data made on the fly)")
        ->delimiter(',');
    verb->add_option("--data-seeds", items.data_seeds, "With --n: data seeds, comma separated (default 0)")->delimiter(',');
    verb->add_option("--test", items.test, "With --n: test rows per item")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    cli.add_shard(*verb);
  };
  add_items(hmc_verb, hmc.items);

  tl::AmpOptions amp;
  CLI::App* amp_verb = cli.add_verb("amp", "GAMP for k = 1 beside its state evolution: /amp/{q, q_se, eps}",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*amp_verb, amp.input, "data file with k = 1")->required();
  nk::cli::App::add_output(*amp_verb, amp.output, amp.no_clobber);
  amp_verb->add_option("--iterations", amp.iterations, "GAMP iterations T")->check(CLI::Range(1, 100000));
  amp_verb->add_option("--init-overlap", amp.init_overlap, "Start at this overlap with w* (0: w_hat = 0)")
      ->check(CLI::Range(0.0, 0.999));

  tl::AdamOptions adam;
  CLI::App* adam_verb = cli.add_verb("adam", "Adam students of several widths beside random-features ridge",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*adam_verb, adam.input, "data file (data), or a teacher file with --n")->required();
  nk::cli::App::add_output(*adam_verb, adam.output, adam.no_clobber);
  adam_verb->add_option("--widths", adam.widths, "Student widths: integers or kc/2, kc, 2kc, k (k_c from the equations)")
      ->delimiter(',');
  adam_verb->add_option("--epochs", adam.training.epochs, "Most epochs per run")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  adam_verb->add_option("--batch", adam.training.batch, "Mini-batch rows")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  adam_verb->add_option("--lr", adam.training.learning_rates, "Learning rates, comma separated (the best on validation is kept)")
      ->delimiter(',')
      ->check(CLI::Range(1e-8, 10.0));
  adam_verb->add_option("--restarts", adam.training.restarts, "Random starts per width and rate")->check(CLI::Range(1, 1000));
  adam_verb->add_option("--patience", adam.training.patience, "Epochs without a better validation error before stopping")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  adam_verb->add_option("--validation", adam.training.validation, "Share of training rows held out for early stopping and lr")
      ->check(CLI::Range(0.0, 0.9));
  adam_verb->add_flag("--teacher-readout", adam.training.teacher_readout, "Fix the readouts to the teacher's v_1..v_w (widths above k are cut to k); train W only");
  adam_verb->add_option("--ridge-features", adam.ridge_features, "Random features per input dimension for the ridge baseline (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  add_items(adam_verb, adam.items);

  tl::ReportOptions report;
  CLI::App* report_verb = cli.add_verb("report", "Fitted slopes and ranges (table, /fit/*) and SVG figures");
  nk::cli::App::add_input(*report_verb, report.input, "theory file")->required();
  report_verb->add_option("results", report.results, "hmc and adam outputs (any number, in any order)");
  nk::cli::App::add_optional_output(*report_verb, report.output, report.no_clobber, "the fits as /fit/* (HDF5; the table then goes to stderr when this is '-')");
  nk::cli::App::output(report_verb->add_option("--svg", report.svg, "Write PREFIX-eps.svg, -overlap.svg, -kc.svg, -onset.svg, -width.svg"), nk::cli::App::OutputKind::prefix);

  return cli.run(argc, argv, [&] {
    if (*teacher_verb) tl::teacher(teacher, cli.env());
    if (*data_verb) tl::data(data, cli.env());
    if (*hmc_verb) tl::hmc(hmc, cli.env());
    if (*amp_verb) tl::amp(amp, cli.env());
    if (*adam_verb) tl::adam(adam, cli.env());
    if (*report_verb) tl::report(report, cli.env());
    if (*th_verb) {
      th.widths_given = widths->count() > 0;
      tl::theory(th, cli.env());
    }
  });
}
