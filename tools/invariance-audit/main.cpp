// main.cpp - invariance-audit: diverse inputs in a query's feature fiber,
// sampled by a flow-matching prior guided with the fiber loss.
#include "invariance-audit/invariance_audit.hpp"
#include "nk/cli.hpp"

namespace {

const int64_t kMaxSteps = 1000000;

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("invariance-audit", "Inputs a feature extractor cannot tell from a query, by a guided flow-matching prior");
  cli.app().require_subcommand(1);

  ia::TrainPriorOptions tp;
  CLI::App* tp_verb = cli.add_verb("train-prior", "Train the flow-matching prior (a U-Net velocity model) on images",
                                   nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*tp_verb, tp.input, "nk-data images (/images, values in [0,1])")->required();
  nk::cli::App::add_output(*tp_verb, tp.output, tp.no_clobber, "prior file (invariance-audit.prior/1)");
  tp_verb->add_option("--channels", tp.channels, "U-Net widths per level, comma separated (level l at image / 2^l)");
  tp_verb->add_option("--groups", tp.groups, "GroupNorm groups")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  tp_verb->add_option("--time-dim", tp.time_dim, "Width of the time embedding")->check(CLI::Range(int64_t{2}, int64_t{65536}));
  tp_verb->add_option("--steps", tp.steps, "Optimiser steps")->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  tp_verb->add_option("--batch", tp.batch, "Images per step")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  tp_verb->add_option("--lr", tp.learning_rate, "Peak AdamW learning rate (warm-up, cosine decay to 10%)")->check(CLI::Range(1e-8, 1.0));
  tp_verb->add_option("--ema", tp.ema, "Decay of the parameter average the file keeps")->check(CLI::Range(0.0, 0.999999));

  ia::TrainExtractorOptions te;
  CLI::App* te_verb = cli.add_verb("train-extractor", "Train a feature extractor to audit: cnn, mlp, pca or random-features",
                                   nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*te_verb, te.input, "nk-data images (labelled for cnn and mlp)")->required();
  nk::cli::App::add_output(*te_verb, te.output, te.no_clobber, "extractor (nk-nn.model/1)");
  te_verb->add_option("--kind", te.kind, "cnn, mlp (classifiers), pca (top components) or random-features (relu(R x))")
      ->check(CLI::IsMember({"cnn", "mlp", "pca", "random-features"}));
  te_verb->add_option("--components", te.components, "pca and random-features: number of features")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  te_verb->add_option("--epochs", te.epochs, "cnn and mlp: passes over the data")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  te_verb->add_option("--batch", te.batch, "cnn and mlp: mini-batch size")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  te_verb->add_option("--lr", te.learning_rate, "cnn and mlp: peak AdamW learning rate")->check(CLI::Range(1e-8, 10.0));

  ia::TrainDedicatedOptions td;
  CLI::App* td_verb = cli.add_verb("train-dedicated", "Train the baseline: a flow model conditioned on one extractor's features (timed)",
                                   nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*td_verb, td.input, "nk-data images (/images, values in [0,1])")->required();
  nk::cli::App::add_output(*td_verb, td.output, td.no_clobber, "dedicated model (invariance-audit.dedicated/1)");
  td_verb->add_option("--extractor", td.extractor, "The extractor whose features condition the model (as sample --extractor)")->required();
  td_verb->add_option("--channels", td.channels, "U-Net widths per level, comma separated");
  td_verb->add_option("--groups", td.groups, "GroupNorm groups")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  td_verb->add_option("--time-dim", td.time_dim, "Width of the time (and condition) embedding")->check(CLI::Range(int64_t{2}, int64_t{65536}));
  td_verb->add_option("--steps", td.steps, "Optimiser steps")->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  td_verb->add_option("--batch", td.batch, "Images per step")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  td_verb->add_option("--lr", td.learning_rate, "Peak AdamW learning rate (warm-up, cosine decay to 10%)")->check(CLI::Range(1e-8, 1.0));
  td_verb->add_option("--max-seconds", td.max_seconds, "Stop after this wall time (features included; 0: run every step)")
      ->check(CLI::Range(0.0, 1e9));
  td_verb->add_option("--ema", td.ema, "Decay of the parameter average the file keeps")->check(CLI::Range(0.0, 0.999999));
  td_verb->add_option("--until-frechet", td.until_frechet, "Stop once the model's samples reach this Frechet distance (eval's realism; needs --queries, --reference)")
      ->check(CLI::Range(0.0, 1e12));
  td_verb->add_option("--queries", td.queries, "Realism checks: nk-data images whose features condition the check samples (as eval --queries)");
  td_verb->add_option("--reference", td.reference, "Realism checks: nk-data test images (as eval --reference)");
  td_verb->add_option("--count", td.check_count, "Realism checks: the first COUNT queries (0: all)")->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  td_verb->add_option("--samples", td.check_samples, "Realism checks: samples per query (as eval --samples)")->check(CLI::Range(int64_t{2}, int64_t{4096}));
  td_verb->add_option("--sample-steps", td.check_steps, "Realism checks: Euler steps of a sample (as eval --steps)")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  td_verb->add_option("--check-every", td.check_every, "Realism checks: every this many optimiser steps")->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  td_verb->add_option("--evaluator", td.evaluator, "Realism checks: FILE[:LAYER|:penultimate] (default: the shipped evaluator CNN's penultimate)");

  ia::FeaturesOptions fe;
  CLI::App* fe_verb = cli.add_verb("features", "Features of images; with a query, the fiber loss and its gradient");
  nk::cli::App::add_input(*fe_verb, fe.input, "nk-data images")->required();
  nk::cli::App::add_output(*fe_verb, fe.output, fe.no_clobber);
  auto* fe_ex = fe_verb->add_option("--extractor", fe.extractor, "FILE[:LAYER|:penultimate], planted:mask-left, planted:down4, planted:pca32, planted:flip:SPEC or cmd:COMMAND");
  auto* fe_cmd = fe_verb->add_option("--extractor-cmd", fe.extractor_cmd, "A program as the extractor (protocol in the man page)");
  fe_ex->excludes(fe_cmd);
  fe_verb->callback([fe_ex, fe_cmd] {
    if (fe_ex->count() + fe_cmd->count() == 0) throw CLI::RequiredError("--extractor or --extractor-cmd");
  });
  fe_verb->add_option("--query", fe.query, "nk-data images holding the query");
  fe_verb->add_option("--index", fe.index, "The query's item in --query (0-based)")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));

  ia::SampleOptions sa;
  CLI::App* sa_verb = cli.add_verb("sample", "Samples in each query's fiber: guided prior (ndtm, dps), prior alone, or inversion",
                                   nk::cli::Randomness::seeded);
  sa_verb->add_option("--query", sa.query, "nk-data images holding the queries ('-': standard input)")->required();
  nk::cli::App::add_output(*sa_verb, sa.output, sa.no_clobber, "fiber file (invariance-audit.fiber/1)");
  auto* sa_ex = sa_verb->add_option("--extractor", sa.extractor, "FILE[:LAYER|:penultimate], planted:mask-left, planted:down4, planted:pca32, planted:flip:SPEC or cmd:COMMAND");
  auto* sa_cmd = sa_verb->add_option("--extractor-cmd", sa.extractor_cmd, "A program as the extractor (protocol in the man page)");
  sa_ex->excludes(sa_cmd);
  sa_verb->callback([sa_ex, sa_cmd] {
    if (sa_ex->count() + sa_cmd->count() == 0) throw CLI::RequiredError("--extractor or --extractor-cmd");
  });
  auto* sa_prior = sa_verb->add_option("--prior", sa.prior, "prior file (default: the shipped Fashion-MNIST prior)");
  sa_verb->add_option("--prior-cmd", sa.prior_cmd, "A program as the prior's velocity (protocol in the man page)")->excludes(sa_prior);
  auto* index = sa_verb->add_option("--index", sa.index, "The query's item (0-based)")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  auto* all = sa_verb->add_flag("--all", sa.all, "Every item of --query is a query");
  index->excludes(all);
  sa_verb->add_option("--samples", sa.samples, "Samples per query")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  sa_verb->add_option("--guidance", sa.guidance, "ndtm, dps, none (the prior alone), invert (no prior) or dedicated (--dedicated)")
      ->check(CLI::IsMember({"ndtm", "dps", "none", "invert", "dedicated"}));
  sa_verb->add_option("--dedicated", sa.dedicated, "dedicated: the conditional model (train-dedicated) of --extractor");
  sa_verb->add_option("--steps", sa.steps, "Flow steps (invert: steps x inner gradient steps)")->check(CLI::Range(int64_t{1}, kMaxSteps));
  sa_verb->add_option("--inner", sa.inner, "ndtm: Adam steps on the control per flow step")->check(CLI::Range(int64_t{1}, int64_t{1000}));
  sa_verb->add_option("--lambda", sa.lambda, "ndtm: weight of the relative fiber loss")->check(CLI::Range(1e-9, 1e12));
  sa_verb->add_option("--kappa", sa.kappa, "ndtm: control scale s_t = kappa (1 - t) + kappa-min")->check(CLI::Range(1e-9, 1e6));
  sa_verb->add_option("--kappa-min", sa.kappa_min, "ndtm: floor of the control scale")->check(CLI::Range(0.0, 1e6));
  sa_verb->add_option("--eta", sa.eta, "ndtm: Adam rate as a fraction of s_t")->check(CLI::Range(1e-9, 100.0));
  sa_verb->add_option("--zeta", sa.zeta, "dps: step on the gradient of the relative residual")->check(CLI::Range(0.0, 1e6));
  sa_verb->add_option("--invert-rate", sa.invert_rate, "invert: Adam rate on the pixels")->check(CLI::Range(1e-9, 10.0));
  nk::cli::App::output(sa_verb->add_option("--grid", sa.grid, "PNG: per query a row of the query, its samples and their variance"));
  cli.add_shard(*sa_verb);

  ia::EvalOptions ev;
  CLI::App* ev_verb = cli.add_verb("eval", "Every method on every extractor over the same queries: mismatch, revealed, realism, diversity",
                                   nk::cli::Randomness::seeded);
  ev_verb->add_option("--queries", ev.queries, "nk-data images: the queries (the first --count items)")->required();
  ev_verb->add_option("--reference", ev.reference, "nk-data test images: the realism and coverage reference")->required();
  nk::cli::App::add_output(*ev_verb, ev.output, ev.no_clobber, "table (invariance-audit.eval/1)");
  ev_verb->add_option("--count", ev.count, "Queries (0: every item)")->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  ev_verb->add_option("--methods", ev.methods, "Comma-separated: ndtm, dps, none, invert, dedicated");
  ev_verb->add_option("--extractors", ev.extractors, "Comma-separated extractor specs (as sample --extractor)");
  ev_verb->add_option("--dedicated", ev.dedicated, "SPEC=FILE: the dedicated model of extractor SPEC (repeat per extractor)");
  auto* ev_prior = ev_verb->add_option("--prior", ev.prior, "prior file (default: the shipped Fashion-MNIST prior)");
  ev_verb->add_option("--prior-cmd", ev.prior_cmd, "A program as the prior's velocity (protocol in the man page)")->excludes(ev_prior);
  ev_verb->add_option("--evaluator", ev.evaluator, "Realism features: FILE[:LAYER|:penultimate] (default: the shipped evaluator CNN's penultimate)");
  ev_verb->add_option("--samples", ev.samples, "Samples per query")->check(CLI::Range(int64_t{2}, int64_t{4096}));
  ev_verb->add_option("--steps", ev.steps, "Flow steps (invert: steps x inner gradient steps)")->check(CLI::Range(int64_t{1}, kMaxSteps));
  ev_verb->add_option("--inner", ev.inner, "ndtm: Adam steps on the control per flow step")->check(CLI::Range(int64_t{1}, int64_t{1000}));
  ev_verb->add_option("--lambda", ev.lambda, "ndtm: weight of the relative fiber loss")->check(CLI::Range(1e-9, 1e12));
  ev_verb->add_option("--kappa", ev.kappa, "ndtm: control scale s_t = kappa (1 - t) + kappa-min")->check(CLI::Range(1e-9, 1e6));
  ev_verb->add_option("--kappa-min", ev.kappa_min, "ndtm: floor of the control scale")->check(CLI::Range(0.0, 1e6));
  ev_verb->add_option("--eta", ev.eta, "ndtm: Adam rate as a fraction of s_t")->check(CLI::Range(1e-9, 100.0));
  ev_verb->add_option("--bits-steps", ev.bits_steps, "Heun steps of the bits/dim ODE (0: skip bits/dim)")->check(CLI::Range(int64_t{0}, int64_t{100000}));
  ev_verb->add_option("--probes", ev.probes, "Hutchinson probes per divergence (0: the exact trace, one backward per pixel)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  ev_verb->add_option("--neighbours", ev.neighbours, "k of density and coverage")->check(CLI::Range(int64_t{1}, int64_t{1000}));
  ev_verb->add_option("--grid-dir", ev.grid_dir, "Folder for one PNG grid per extractor and method")->check(CLI::ExistingDirectory);

  return cli.run(argc, argv, [&] {
    if (*tp_verb) ia::train_prior(tp, cli.env());
    if (*td_verb) ia::train_dedicated(td, cli.env());
    if (*te_verb) ia::train_extractor(te, cli.env());
    if (*fe_verb) ia::features(fe, cli.env());
    if (*sa_verb) ia::sample(sa, cli.env());
    if (*ev_verb) ia::eval(ev, cli.env());
  });
}
