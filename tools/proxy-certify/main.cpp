// main.cpp - proxy-certify: randomized-smoothing certificates (CERTIFY) and a
// one-forward proxy tuned against them by robust conformal risk control.
#include "nk/cli.hpp"
#include "proxy-certify/proxy_certify.hpp"

namespace {

const int64_t kMaxSamples = int64_t{1} << 40;

void add_model(CLI::App* verb, pc::ModelOptions& model) {
  auto* file = verb->add_option("--model", model.model, "Base classifier: an nk-nn.model/1 file (train's output) or a spike-sft model");
  auto* cmd = verb->add_option("--model-cmd", model.model_cmd,
                               "Base classifier as a program: float32 batches in, logits out (proxy-certify(1) MODEL COMMAND)");
  file->excludes(cmd);
  cmd->excludes(file);
  verb->callback([verb, file, cmd] {
    if (file->count() + cmd->count() == 0) throw CLI::RequiredError("--model or --model-cmd");
    (void)verb;
  });
}

void add_sigma(CLI::App* verb, std::optional<double>& sigma) {
  verb->add_option("--sigma", sigma, "Gaussian noise level in [0,1] pixel units (default: the model's)")
      ->check(CLI::Range(1e-6, 100.0));
}

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("proxy-certify", "Randomized-smoothing certificates and a one-forward proxy calibrated by conformal risk control");
  cli.app().require_subcommand(1);

  pc::TrainOptions train;
  CLI::App* train_verb = cli.add_verb("train", "Train a base classifier (MLP or CNN) under Gaussian noise at sigma",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*train_verb, train.input, "labelled nk-data file (/images, /labels)")->required();
  nk::cli::App::add_output(*train_verb, train.output, train.no_clobber, "model file (nk-nn.model/1)");
  train_verb->add_option("--arch", train.arch, "mlp (784-256-256-10) or cnn (conv 8, conv 16, linear 64)")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  train_verb->add_option("--sigma", train.sigma, "Gaussian augmentation noise (the certification sigma)")
      ->check(CLI::Range(0.0, 100.0));
  train_verb->add_option("--epochs", train.epochs, "Passes over the data")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  train_verb->add_option("--batch", train.batch, "Mini-batch size")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  train_verb->add_option("--lr", train.learning_rate, "Peak AdamW learning rate (cosine decay to 0)")->check(CLI::Range(1e-8, 10.0));
  train_verb->add_option("--weight-decay", train.weight_decay, "Decoupled weight decay on linear and conv weights")
      ->check(CLI::Range(0.0, 10.0));
  train_verb->add_option("--test", train.test, "Labelled nk-data file to report clean accuracy on");

  pc::CertifyOptions cert;
  CLI::App* cert_verb = cli.add_verb("certify", "CERTIFY (Cohen et al.): class, n_A and radius sigma Phi^-1(pA) per item",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*cert_verb, cert.input, "nk-data file of the items to certify")->required();
  nk::cli::App::add_output(*cert_verb, cert.output, cert.no_clobber);
  add_model(cert_verb, cert.model);
  add_sigma(cert_verb, cert.sigma);
  cert_verb->add_option("--n0", cert.n0, "Noisy samples that select the class")->check(CLI::Range(int64_t{1}, kMaxSamples));
  cert_verb->add_option("--n", cert.n, "Noisy samples that estimate pA")->check(CLI::Range(int64_t{1}, kMaxSamples));
  cert_verb->add_option("--alpha", cert.alpha, "Failure probability of each certificate, in [1e-12, 0.5]")->check(CLI::Range(1e-12, 0.5));
  cert_verb->add_option("--batch", cert.batch, "Noisy copies per forward")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  cli.add_shard(*cert_verb);

  pc::PredictOptions pred;
  CLI::App* pred_verb = cli.add_verb("predict", "PREDICT (Cohen et al.): the smoothed class, or abstain by a binomial test",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*pred_verb, pred.input, "nk-data file of the items")->required();
  nk::cli::App::add_output(*pred_verb, pred.output, pred.no_clobber);
  add_model(pred_verb, pred.model);
  add_sigma(pred_verb, pred.sigma);
  pred_verb->add_option("--n", pred.n, "Noisy samples")->check(CLI::Range(int64_t{1}, kMaxSamples));
  pred_verb->add_option("--alpha", pred.alpha, "Test level, in [1e-12, 0.5]")->check(CLI::Range(1e-12, 0.5));
  pred_verb->add_option("--batch", pred.batch, "Noisy copies per forward")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  cli.add_shard(*pred_verb);

  pc::CalibrateOptions cal;
  CLI::App* cal_verb = cli.add_verb("calibrate", "Thresholds lambda(r) of a one-forward proxy by robust conformal risk control (labels not read)",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*cal_verb, cal.input, "calibration items (nk-data; exchangeable with the test items)")->required();
  nk::cli::App::add_output(*cal_verb, cal.output, cal.no_clobber, "proxy file");
  add_model(cal_verb, cal.model);
  add_sigma(cal_verb, cal.sigma);
  cal_verb->add_option("--proxy", cal.proxy, "margin (top-1 minus top-2 logit) or head (radius regressor)")
      ->check(CLI::IsMember({"margin", "head"}));
  cal_verb->add_option("--recipe", cal.recipe, "single (one noisy forward per item) or heavy (CERTIFY per item)")
      ->check(CLI::IsMember({"single", "heavy"}));
  cal_verb->add_option("--radii", cal.radii, "Radii to calibrate, comma separated (each separately)")->delimiter(',');
  cal_verb->add_option("--target", cal.target, "Bound on the false-approval rate, in (0, 1)")->check(CLI::Range(0.0, 1.0));
  cal_verb->add_option("--robust-tv", cal.robust_tv, "Stay valid for test laws within this total variation (calibrate at target - rho B)")
      ->check(CLI::Range(0.0, 1.0));
  cal_verb->add_option("--n0", cal.n0, "heavy: CERTIFY's selection samples")->check(CLI::Range(int64_t{1}, kMaxSamples));
  cal_verb->add_option("--n", cal.n, "heavy: CERTIFY's estimation samples")->check(CLI::Range(int64_t{1}, kMaxSamples));
  cal_verb->add_option("--alpha", cal.alpha, "heavy and head: CERTIFY's alpha")->check(CLI::Range(1e-12, 0.5));
  cal_verb->add_option("--head-data", cal.head_data, "head: items whose CERTIFY radii train the head (a split apart from -i)");
  cal_verb->add_option("--head-n", cal.head_n, "head: CERTIFY samples per training item")->check(CLI::Range(int64_t{1}, kMaxSamples));
  cal_verb->add_option("--batch", cal.batch, "Noisy copies per forward")->check(CLI::Range(int64_t{1}, int64_t{65536}));

  pc::ApproveOptions app;
  CLI::App* app_verb = cli.add_verb("approve", "Apply a calibrated proxy: approved radii per item, alone or with CERTIFY as fallback",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*app_verb, app.input, "items (nk-data)")->required();
  nk::cli::App::add_output(*app_verb, app.output, app.no_clobber);
  add_model(app_verb, app.model);
  add_sigma(app_verb, app.sigma);
  app_verb->add_option("--proxy", app.proxy, "proxy file (calibrate's output for this model)")->required();
  app_verb->add_option("--mode", app.mode, "standalone (one forward) or fallback (CERTIFY where the proxy rejects --radius)")
      ->check(CLI::IsMember({"standalone", "fallback"}));
  app_verb->add_option("--radius", app.radius, "fallback: the radius to certify (one of the proxy's; default the smallest)")
      ->check(CLI::Range(1e-9, 1e9));
  app_verb->add_option("--n0", app.n0, "fallback: CERTIFY's selection samples")->check(CLI::Range(int64_t{1}, kMaxSamples));
  app_verb->add_option("--n", app.n, "fallback: CERTIFY's estimation samples")->check(CLI::Range(int64_t{1}, kMaxSamples));
  app_verb->add_option("--alpha", app.alpha, "fallback: CERTIFY's alpha")->check(CLI::Range(1e-12, 0.5));
  app_verb->add_option("--batch", app.batch, "Noisy copies per forward")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  cli.add_shard(*app_verb);

  pc::EvalOptions ev;
  CLI::App* ev_verb = cli.add_verb("eval", "Every method side by side: certified accuracy, false approvals (95% CI), approvals, forwards",
                                   nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*ev_verb, ev.input, "labelled pool (nk-data) split into calibration and test")->required();
  nk::cli::App::add_optional_output(*ev_verb, ev.output, ev.no_clobber, "the tables as /eval/*");
  add_model(ev_verb, ev.model);
  ev_verb->add_option("--reference", ev.reference, "certify's output on the same pool: the reference CERTIFY (the truth FA is judged by)")
      ->required();
  ev_verb->add_option("--radii", ev.radii, "Radii, comma separated")->delimiter(',');
  ev_verb->add_option("--target", ev.target, "FA target of the calibrated proxies, in (0, 1)")->check(CLI::Range(0.0, 1.0));
  ev_verb->add_option("--splits", ev.splits, "Random calibration/test splits (counts computed once)")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  ev_verb->add_option("--calibration", ev.calibration, "Calibration items per split (the rest are test items)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  ev_verb->add_option("--cheap-n", ev.cheap_n, "Samples of the cheap CERTIFY baseline")->check(CLI::Range(int64_t{1}, kMaxSamples));
  ev_verb->add_option("--head-data", ev.head_data, "Items to train the head on (adds head-single, head-heavy, rrise)");
  ev_verb->add_option("--head-n", ev.head_n, "CERTIFY samples per head training item")->check(CLI::Range(int64_t{1}, kMaxSamples));
  ev_verb->add_option("--batch", ev.batch, "Noisy copies per forward")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  nk::cli::App::output(ev_verb->add_option("--svg", ev.svg, "Write certified accuracy against radius per method as SVG"));

  return cli.run(argc, argv, [&] {
    if (*ev_verb) pc::eval(ev, cli.env());
    if (*cal_verb) pc::calibrate(cal, cli.env());
    if (*app_verb) pc::approve(app, cli.env());
    if (*train_verb) pc::train(train, cli.env());
    if (*cert_verb) pc::certify(cert, cli.env());
    if (*pred_verb) pc::predict(pred, cli.env());
  });
}
