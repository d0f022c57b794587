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

  return cli.run(argc, argv, [&] {
    if (*teacher_verb) tl::teacher(teacher, cli.env());
    if (*data_verb) tl::data(data, cli.env());
    if (*th_verb) {
      th.widths_given = widths->count() > 0;
      tl::theory(th, cli.env());
    }
  });
}
