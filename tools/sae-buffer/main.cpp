// main.cpp - sae-buffer: SAE training from a replayed activation buffer, the
// diversity-repetition law and the buffer-sizing rule.
#include "nk/cli.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace {

const int64_t kMaxRows = int64_t{1} << 40;

// The SAE and its optimiser, shared by train and grid.
void add_sae_options(CLI::App& verb, sb::TrainConfig& c, std::string& arch) {
  verb.add_option("--arch", arch, "topk, batchtopk or jumprelu")->check(CLI::IsMember({"topk", "batchtopk", "jumprelu"}));
  verb.add_option("--latents", c.latents, "Dictionary size n (0: 16 x the activation width)")->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  verb.add_option("--k", c.k, "Active latents (topk, batchtopk); the L0 that jumprelu's penalty steers to")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  verb.add_option("--batch", c.batch, "Rows per optimiser step")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  verb.add_option("--lr", c.learning_rate, "AdamW learning rate")->check(CLI::Range(1e-8, 10.0));
  verb.add_option("--weight-decay", c.weight_decay, "AdamW's decoupled decay of W_enc and W_dec")->check(CLI::Range(0.0, 10.0));
  verb.add_option("--warmup", c.warmup, "Share of steps with a linear warm-up")->check(CLI::Range(0.0, 1.0));
  verb.add_option("--decay", c.decay, "Share of steps at the end with a linear decay to 0")->check(CLI::Range(0.0, 1.0));
  verb.add_option("--aux-coef", c.loss.aux_coef, "TopK/BatchTopK aux-K loss coefficient (0: off)")->check(CLI::Range(0.0, 100.0));
  verb.add_option("--aux-k", c.loss.aux_k, "Dead latents in the aux-K reconstruction (0: m/2)")->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  verb.add_option("--dead-window", c.dead_window, "Samples without firing that make a latent dead (0: max(B/8, 4 batches))")
      ->check(CLI::Range(int64_t{0}, kMaxRows));
  verb.add_option("--l0-coef", c.l0_coef, "JumpReLU L0 coefficient (0: steered so that L0 reaches --k)")->check(CLI::Range(0.0, 1e6));
  verb.add_option("--bandwidth", c.loss.bandwidth, "JumpReLU straight-through kernel width (in units where E||x||^2 = m)")
      ->check(CLI::Range(1e-9, 10.0));
  verb.add_option("--b-dec-init", c.b_dec_init, "median (geometric) or mean of the buffer")->check(CLI::IsMember({"median", "mean"}));
}

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("sae-buffer", "SAE activation-buffer replay: the diversity-repetition law and the buffer-sizing rule");
  cli.app().require_subcommand(1);

  sb::GenOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen", "Synthetic activations with a known dictionary: /acts, /truth/{dictionary,frequency}",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--dim", gen.spec.dim, "Activation width m")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  gen_verb->add_option("--features", gen.spec.features, "True features F (F > m: superposition)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  gen_verb->add_option("--active", gen.spec.active, "Zipf draws per row (a feature drawn twice is active once)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  gen_verb->add_option("--zipf", gen.spec.zipf, "Zipf exponent of the feature frequencies")->check(CLI::Range(0.0, 10.0));
  gen_verb->add_option("--noise", gen.spec.noise, "Standard deviation of the isotropic noise per coordinate")->check(CLI::Range(0.0, 1e6));
  gen_verb->add_option("--magnitude-sigma", gen.spec.magnitude_sigma, "Log-normal spread of the feature magnitudes")->check(CLI::Range(0.0, 10.0));
  gen_verb->add_option("--rows", gen.rows, "Rows N to store")->check(CLI::Range(int64_t{1}, kMaxRows));
  gen_verb->add_option("--first-row", gen.first_row, "Generator row of the first stored row (held-out data: a large value)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 60));

  sb::LabelsOptions lab;
  CLI::App* lab_verb = cli.add_verb("labels", "Token labels of an nk-lm capture: WordNet part of speech, first letter");
  nk::cli::App::add_input(*lab_verb, lab.input, "nk-lm capture file");
  nk::cli::App::add_output(*lab_verb, lab.output, lab.no_clobber);
  lab_verb->add_option("-m,--model", lab.model, "The nk-lm model whose tokenizer made the capture")->required();
  lab_verb->add_option("--wordnet", lab.wordnet, "WordNet's dict folder (index.noun, ...)");

  sb::TrainOptions train;
  std::string train_arch = "topk";
  CLI::App* train_verb = cli.add_verb("train", "Train an SAE on a buffer of U rows replayed until B samples are seen",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*train_verb, train.input, "activations (/acts [N,m], an nk-lm capture, or gen's file)");
  nk::cli::App::add_output(*train_verb, train.output, train.no_clobber);
  train_verb->add_option("--hook", train.hook, "Capture files: early, middle, last or a layer number (default middle)");
  train_verb->add_option("--buffer", train.config.buffer, "U: unique rows in the buffer")->required();
  train_verb->add_option("--budget", train.config.budget, "B: samples seen in all (B >= U)")->required();
  add_sae_options(*train_verb, train.config, train_arch);

  sb::EvalOptions eval;
  CLI::App* eval_verb = cli.add_verb("eval", "Score an SAE on held-out activations: EV, MSE, L0, dead; recovery; probes",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*eval_verb, eval.input, "SAE file (train)");
  nk::cli::App::add_output(*eval_verb, eval.output, eval.no_clobber);
  eval_verb->add_option("--acts", eval.acts, "Held-out activations")->required();
  eval_verb->add_option("--hook", eval.hook, "Capture files: early, middle, last or a layer number");
  eval_verb->add_option("--truth", eval.truth, "A file with /truth/dictionary [F,m] (gen's): mmcs and recovered");
  eval_verb->add_option("--labels", eval.labels, "Token labels of --acts (labels): sparse probing and absorption");
  eval_verb->add_option("--judge-cmd", eval.judge.command, "Automated interpretability: a command (an LLM judge) run per latent");
  eval_verb->add_option("-m,--model", eval.judge.model, "With --judge-cmd: the nk-lm model whose tokenizer made the capture");
  eval_verb->add_option("--judge-latents", eval.judge.latents, "Latents judged (a seeded sample of those that fire enough)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  eval_verb->add_option("--rows", eval.rows, "Only the first N rows of --acts (0: all)")->check(CLI::Range(int64_t{0}, kMaxRows));

  sb::GridOptions grid;
  std::string grid_arch = "topk";
  CLI::App* grid_verb = cli.add_verb("grid", "Train and score an SAE at every (U, B) with B >= U", nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*grid_verb, grid.input, "training activations");
  nk::cli::App::add_output(*grid_verb, grid.output, grid.no_clobber);
  grid_verb->add_option("--hook", grid.hook, "Capture files: early, middle, last or a layer number");
  grid_verb->add_option("--buffers", grid.buffers, "Comma-separated U values")->delimiter(',')->required();
  grid_verb->add_option("--budgets", grid.budgets, "Comma-separated B values")->delimiter(',')->required();
  grid_verb->add_option("--latents-list", grid.latents, "Comma-separated dictionary sizes (default: --latents)")->delimiter(',');
  grid_verb->add_option("--heldout", grid.heldout, "Held-out activations (default: generator rows, or the input's last rows)");
  grid_verb->add_option("--heldout-rows", grid.heldout_rows, "Held-out rows scored")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  grid_verb->add_option("--heldout-fraction", grid.heldout_fraction, "Share of grid points kept out of the law's fit")
      ->check(CLI::Range(0.0, 0.9));
  grid_verb->add_option("--truth", grid.truth, "A /truth/dictionary file (default: the input's own, if synthetic)");
  grid_verb->add_option("--labels", grid.labels, "Token labels of the held-out rows: probe_f1 and absorption");
  add_sae_options(*grid_verb, grid.config, grid_arch);
  cli.add_shard(*grid_verb);

  sb::FitOptions fit;
  CLI::App* fit_verb = cli.add_verb("fit", "Fit the data-constrained law and two power laws to a grid");
  nk::cli::App::add_input(*fit_verb, fit.input, "grid file (grid, or any file with /grid/{U,B,heldout_ev,heldout})");
  nk::cli::App::add_output(*fit_verb, fit.output, fit.no_clobber);
  nk::cli::App::output(fit_verb->add_option("--plot", fit.plot, "SVG of held-out EV vs U per B, with the law's curves"));
  fit_verb->add_option("--min-buffer", fit.min_buffer, "Leave points with U below this out of the fit and the error (0: none)")
      ->check(CLI::Range(0.0, 1e15));

  sb::SizeOptions size;
  CLI::App* size_verb = cli.add_verb("size", "The buffer-sizing rule: the smallest U within --tolerance of fresh data at B");
  size_verb->add_option("--fit", size.fit, "fit file")->required();
  size_verb->add_option("--budget", size.budget, "B: the training budget in samples")->required()->check(CLI::Range(int64_t{1}, kMaxRows));
  size_verb->add_option("--tolerance", size.tolerance, "Relative EV loss allowed")->check(CLI::Range(0.0, 0.99));
  size_verb->add_option("--latents", size.latents, "Dictionary size (needed when the law spans dictionary sizes)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  size_verb->add_option("--grid", size.grid, "Also the smallest measured U of this grid");
  nk::cli::App::add_optional_output(*size_verb, size.output, size.no_clobber);

  return cli.run(argc, argv, [&] {
    if (*gen_verb) sb::gen(gen, cli.env());
    if (*lab_verb) sb::labels(lab, cli.env());
    if (*train_verb) {
      train.config.arch = sb::parse_arch(train_arch, "--arch");
      sb::train(train, cli.env());
    }
    if (*eval_verb) sb::eval(eval, cli.env());
    if (*grid_verb) {
      grid.config.arch = sb::parse_arch(grid_arch, "--arch");
      sb::grid(grid, cli.env());
    }
    if (*fit_verb) sb::fit(fit, cli.env());
    if (*size_verb) sb::size(size, cli.env());
  });
}
