// main.cpp - spike-sft: spiking-network training, selective fine-tuning and merging (Spike-SFT).
#include "nk/cli.hpp"
#include "spike-sft/spike_sft.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("spike-sft", "Spiking networks: LIF training by BPTT with surrogate gradients (pretrain, eval)");
  cli.app().require_subcommand(1);

  spike::TrainOptions train;
  CLI::App* pretrain = cli.add_verb("pretrain", "Train a LIF network on labelled images (/images, /labels from nk-data)",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*pretrain, train.input, "training data");
  nk::cli::App::add_output(*pretrain, train.output, train.no_clobber);
  pretrain->add_option("--test", train.test, "Test data (default: hold out --holdout of the input)");
  pretrain->add_option("--holdout", train.holdout, "Share of the input held out for testing without --test")->check(CLI::Range(0.0, 0.9));
  pretrain->add_option("--limit", train.limit, "Use at most this many input examples (a seeded random subset)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  CLI::Option* hidden_option = pretrain->add_option("--hidden", train.hidden, "Hidden LIF layer sizes, e.g. 256 or 512,256")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  CLI::Option* conv_option =
      pretrain->add_option("--conv", train.conv, "A convolutional network: channels of its conv-LIF-pool blocks, e.g. 8,16 (3x3 kernels, 2x2 average pooling; instead of --hidden)")
          ->delimiter(',')
          ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  conv_option->excludes(hidden_option);
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

  spike::TasksOptions tasks;
  CLI::App* tasks_verb = cli.add_verb("tasks", "Derive adaptation tasks (rotated, inverted, permuted, noisy, relabelled) with train/test splits",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*tasks_verb, tasks.input, "labelled images (nk-data)");
  nk::cli::App::add_output(*tasks_verb, tasks.output, tasks.no_clobber);
  tasks_verb->add_option("--kinds", tasks.kinds, "Tasks: identity, rotate90, invert, permute, noise, shift, contrast, blur, relabel")->delimiter(',');
  tasks_verb->add_option("--train", tasks.train, "Training examples per task")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  tasks_verb->add_option("--test", tasks.test, "Test examples per task")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  tasks_verb->add_option("--noise", tasks.noise, "Standard deviation of the noise task")->check(CLI::Range(0.0, 10.0));

  spike::SpeOptions spe;
  CLI::App* spe_verb = cli.add_verb("spe", "Stage 1: fine-tune the smallest-magnitude weights on a task (or a baseline mask, or fully)",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*spe_verb, spe.input, "base model");
  nk::cli::App::add_output(*spe_verb, spe.output, spe.no_clobber);
  spe_verb->add_option("--task", spe.task, "FILE:NAME: a task from spike-sft tasks")->required();
  spe_verb->add_option("--method", spe.method, "spe (smallest |w|), random, large (largest |w|), lora (low-rank adapters of equal size) or full")
      ->check(CLI::IsMember({"spe", "random", "large", "lora", "full"}));
  spe_verb->add_option("--fraction", spe.fraction, "q: trainable share of each weight layer, in (0, 1)");
  spe_verb->add_option("--epochs", spe.epochs, "Passes over the task's training data")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  spe_verb->add_option("--batch", spe.batch, "Examples per Adam step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  spe_verb->add_option("--lr", spe.learning_rate, "Adam learning rate (default 1e-3 for full, 1e-2 for masks)")->check(CLI::Range(0.0, 10.0));
  spe_verb->add_option("--reselect-every", spe.reselect_every, "Re-select the mask every E epochs (0: never)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  spe_verb->add_option("--low-rank", spe.low_rank, "Nuclear-norm shrinkage of the delta per epoch, relative to its largest singular value (0: off)")
      ->check(CLI::Range(0.0, 1.0));
  spe_verb->add_flag("!--no-base-cache", spe.base_cache,
                     "Compute the first layer's currents densely every batch, instead of the frozen base's cached per example plus the delta's");

  spike::PickitOptions pick;
  CLI::App* pickit_verb = cli.add_verb("pickit", "Stage 2: merge adapted models (neuron alignment, TIES, spike-rate calibration)",
                                      nk::cli::Randomness::seeded);
  pickit_verb->add_option("-i,--input", pick.inputs, "Adapted models (from spe), two or more")->required()->expected(2, 1 << 16);
  nk::cli::App::add_output(*pickit_verb, pick.output, pick.no_clobber);
  pickit_verb->add_option("--tasks", pick.tasks, "The tasks file the models were adapted on (calibration data)");
  pickit_verb->add_option("--method", pick.method, "pickit, ties (no calibration), average or task-arithmetic")
      ->check(CLI::IsMember({"pickit", "ties", "average", "task-arithmetic"}));
  pickit_verb->add_option("--trim", pick.trim, "Share of each delta's nonzero entries kept before sign election, in (0, 1] (default 1 for pickit, 0.2 for ties)");
  pickit_verb->add_option("--scale", pick.scale,
                          "Scale of the merged delta (task arithmetic: of the summed deltas; default 1; pickit: fixes it instead of choosing from --scale-grid)")
      ->check(CLI::Range(0.0, 100.0));
  pickit_verb->add_option("--scale-grid", pick.scale_grid,
                          "PickIt: the scales tried, each calibrated; kept is the one whose merged model agrees most with the task models on the calibration set")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 100.0));
  pickit_verb->add_option("--calibration", pick.calibration, "Calibration examples per task")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  pickit_verb->add_option("--calibrate", pick.calibrate,
                          "PickIt's calibration: neuron (a scale per neuron matching its firing rate), affine (scale and shift per "
                          "neuron matching its input current's mean and spread) or layer (one scale per layer)")
      ->check(CLI::IsMember({"neuron", "affine", "layer"}));
  pickit_verb->add_flag("!--no-align", pick.align, "Merge models of another base without aligning their neurons first");

  spike::StatsOptions stats;
  CLI::App* stats_verb = cli.add_verb("stats", "Weight-magnitude histograms and accuracy after silencing the smallest synapses",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*stats_verb, stats.input, "model file");
  nk::cli::App::add_output(*stats_verb, stats.output, stats.no_clobber);
  stats_verb->add_option("--data", stats.data, "Labelled data for the silencing curve")->required();
  stats_verb->add_option("--fractions", stats.fractions, "Shares of each layer's smallest weights to silence, in [0, 1)")->delimiter(',');
  stats_verb->add_option("--bins", stats.bins, "Histogram bins")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  nk::cli::App::output(stats_verb->add_option("--plot", stats.plot, "Also write the silencing curve as SVG"));

  spike::EvalOptions eval;
  CLI::App* eval_verb = cli.add_verb("eval", "Accuracy, loss and firing rates of a model on labelled data",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*eval_verb, eval.input, "model file");
  eval_verb->add_option("--data", eval.data, "Labelled data (/images or /vectors, /labels)");
  eval_verb->add_option("--task", eval.task, "FILE:NAME: the test split of a task from spike-sft tasks");
  nk::cli::App::add_optional_output(*eval_verb, eval.output, eval.no_clobber, "the figures as HDF5");
  eval_verb->add_option("--batch", eval.batch, "Examples per forward pass")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));

  spike::ServeOptions serve;
  CLI::App* serve_verb = cli.add_verb("serve", "The model as a program: float32 frames in, log-probabilities out (proxy-certify --model-cmd)",
                                       nk::cli::Randomness::seeded);
  serve_verb->add_option("-i,--input", serve.input, "model file (frames come on standard input)")->required();

  return cli.run(argc, argv, [&] {
    if (*serve_verb) spike::serve(serve, cli.env());
    if (*pretrain) spike::pretrain(train, cli.env());
    if (*tasks_verb) spike::tasks(tasks, cli.env());
    if (*spe_verb) spike::spe(spe, cli.env());
    if (*pickit_verb) spike::pickit(pick, cli.env());
    if (*stats_verb) spike::stats(stats, cli.env());
    if (*eval_verb) spike::eval(eval, cli.env());
  });
}
