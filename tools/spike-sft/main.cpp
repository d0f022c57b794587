// main.cpp - spike-sft: spiking-network training, selective fine-tuning and merging (Spike-SFT).
#include "nk/cli.hpp"
#include "spike_sft.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("spike-sft", "Spiking networks: LIF training by BPTT with surrogate gradients (pretrain, eval)");
  cli.app().require_subcommand(1);

  spike::TrainOptions train;
  CLI::App* pretrain = cli.add_verb("pretrain", "Train a LIF network on labelled images (/images, /labels from nk-data)");
  nk::cli::App::add_input(*pretrain, train.input, "training data");
  nk::cli::App::add_output(*pretrain, train.output, train.no_clobber);
  pretrain->add_option("--test", train.test, "Test data (default: hold out --holdout of the input)");
  pretrain->add_option("--holdout", train.holdout, "Share of the input held out for testing without --test")->check(CLI::Range(0.0, 0.9));
  pretrain->add_option("--limit", train.limit, "Use at most this many input examples (a seeded random subset)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  pretrain->add_option("--hidden", train.hidden, "Hidden LIF layer sizes, e.g. 256 or 512,256")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  pretrain->add_option("--steps", train.steps, "Simulation steps T")->check(CLI::Range(int64_t{1}, int64_t{10000}));
  pretrain->add_option("--beta", train.beta, "Membrane leak per step")->check(CLI::Range(0.0, 1.0));
  pretrain->add_option("--threshold", train.threshold, "Firing threshold")->check(CLI::Range(1e-6, 1e6));
  pretrain->add_option("--reset", train.reset, "Reset after a spike: subtract or zero")->check(CLI::IsMember({"subtract", "zero"}));
  pretrain->add_option("--surrogate", train.surrogate, "Surrogate gradient: fast-sigmoid, atan (or sigmoid: smooth spikes)")
      ->check(CLI::IsMember({"fast-sigmoid", "atan", "sigmoid"}));
  pretrain->add_option("--slope", train.slope, "Surrogate slope (fast-sigmoid k, atan alpha, sigmoid k)")->check(CLI::Range(1e-6, 1e6));
  pretrain->add_option("--coding", train.coding, "Input coding: direct (analog current every step) or rate (Bernoulli spikes)")
      ->check(CLI::IsMember({"direct", "rate"}));
  pretrain->add_option("--epochs", train.epochs, "Passes over the training data")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  pretrain->add_option("--batch", train.batch, "Examples per Adam step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  pretrain->add_option("--lr", train.learning_rate, "Adam learning rate")->check(CLI::Range(1e-9, 10.0));

  spike::EvalOptions eval;
  CLI::App* eval_verb = cli.add_verb("eval", "Accuracy, loss and firing rates of a model on labelled data");
  nk::cli::App::add_input(*eval_verb, eval.input, "model file");
  eval_verb->add_option("--data", eval.data, "Labelled data (/images or /vectors, /labels)")->required();
  eval_verb->add_option("-o,--output", eval.output, "Also write the figures to this HDF5 file");
  eval_verb->add_flag("--no-clobber", eval.no_clobber, "Fail instead of replacing an existing output file");
  eval_verb->add_option("--batch", eval.batch, "Examples per forward pass")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));

  return cli.run(argc, argv, [&] {
    if (*pretrain) {
      train.seed = cli.common().seed;
      spike::pretrain(train);
    }
    if (*eval_verb) {
      eval.seed = cli.common().seed;
      spike::eval(eval);
    }
  });
}
