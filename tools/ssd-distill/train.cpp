// train.cpp - the distillation loop: rollouts by the method, then one AdamW
// step on the mean per-position loss against the teacher; the same loss code,
// optimiser, batch and schedule for every method.
#include "nk/lm/train.hpp"

#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/qa.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "ssd-distill/rollout.hpp"

namespace ssd {

namespace {

inline constexpr const char* kCurveDims = "E";

/// Rows of /train in a seeded order, epoch after epoch: batch 'step' is the
/// next 'batch' of them.
std::vector<int64_t> batch_rows(int64_t n, int64_t batch, int64_t step, uint64_t seed) {
  std::vector<int64_t> out;
  for (int64_t k = step * batch; k < (step + 1) * batch; ++k) {
    const int64_t epoch = k / n;
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    nk::Rng rng = nk::Rng(seed).split(0xE90C).split(static_cast<uint64_t>(epoch));
    nk::shuffle(order, rng);
    out.push_back(order[static_cast<size_t>(k % n)]);
  }
  return out;
}

}  // namespace

const std::vector<std::pair<const char*, std::vector<double> Curve::*>>& curve_columns() {
  static const std::vector<std::pair<const char*, std::vector<double> Curve::*>> cols = {
      {"step", &Curve::step},
      {"supervised_tokens", &Curve::supervised},
      {"teacher_forward_tokens", &Curve::teacher_forward},
      {"student_forward_tokens", &Curve::student_forward},
      {"teacher_fraction", &Curve::teacher_fraction},
      {"train_loss", &Curve::train_loss},
      {"test_accuracy", &Curve::test_accuracy},
      {"wall_s", &Curve::wall}};
  return cols;
}

void check_train(const nk::lm::CausalModel& m, const Tasks& t, const TrainOptions& o) {
  if (t.train.size() == 0) throw nk::input_error(t.path, "/train/question", "has no questions to train on");
  const nk::lm::Tokenizer& tok = m.tokenizer();
  for (int64_t i = 0; i < t.train.size(); ++i) {
    const size_t u = static_cast<size_t>(i);
    const int64_t p = static_cast<int64_t>(document_tokens(tok, t.docs[static_cast<size_t>(t.train.doc[u])]).size() +
                                           question_tokens(tok, t.train.question[u]).size());
    check_room(t, "train", i, p, m.config().max_seq, true);
  }
  if (o.skd_topk > m.config().vocab)
    throw nk::input_error(o.model, "/",
                          "--skd-topk " + std::to_string(o.skd_topk) + " is above the vocabulary (" +
                              std::to_string(m.config().vocab) + ")");
  parse_method(o.method);
  parse_divergence(o.loss);
  parse_divergence(o.switch_name);
}

TrainRun distill(nk::lm::ParameterStore& weights, const nk::lm::Tokenizer& tok, const Tasks& t, const TrainOptions& o,
                 uint64_t seed, bool show_progress) {
  const nk::lm::Config& config = weights.config();
  const int64_t context = config.max_seq, V = config.vocab;
  const Method method = parse_method(o.method);
  const nk::lm::Divergence loss_div = parse_divergence(o.loss);
  // The teacher: the initial weights, frozen; the student trains 'weights'.
  const nk::lm::ParameterStore teacher_weights = weights;
  const nk::lm::Model teacher(teacher_weights);
  const nk::lm::Schedule schedule{o.lr, 1.0, 1, std::max<int64_t>(o.steps, 2)};  // constant after one step
  nk::lm::AdamWConfig adamw;
  adamw.weight_decay = 0.0;
  nk::lm::Trainer trainer(weights, nk::lm::ParameterMask::all(weights), schedule, adamw,
                          {o.batch * context, context, true});
  RolloutConfig rc;
  rc.method = method;
  rc.rule = {parse_divergence(o.switch_name), o.tau};
  rc.temperature = o.temperature;
  rc.max_new = o.max_new;
  rc.chunk = o.chunk;
  rc.skd_topk = o.skd_topk;
  rc.seed = seed;
  Roller roller(trainer.model(), teacher, tok, rc, o.batch);  // the batch's rollouts decode side by side

  TrainRun run;
  Curve& c = run.curve;
  int64_t written = 0, window_sup = 0, window_steps = 0;
  double window_loss = 0, wall = 0;
  const auto record = [&](int64_t step) {
    const double acc = accuracy(trainer.model(), tok, t, "test", false, o.max_new);
    c.step.push_back(static_cast<double>(step));
    c.supervised.push_back(static_cast<double>(run.supervised));
    c.teacher_forward.push_back(static_cast<double>(run.teacher_forward));
    c.student_forward.push_back(static_cast<double>(run.student_forward));
    c.teacher_fraction.push_back(window_sup ? static_cast<double>(written) / static_cast<double>(window_sup)
                                            : std::nan(""));
    c.train_loss.push_back(window_steps ? window_loss / static_cast<double>(window_steps) : std::nan(""));
    c.test_accuracy.push_back(acc);
    c.wall.push_back(wall);
    spdlog::log(show_progress ? spdlog::level::info : spdlog::level::debug,
                "train {} step {}: test accuracy {:.3f}, loss {:.4f}, teacher fraction {:.3f}, supervised tokens {}",
                o.method, step, acc, c.train_loss.back(), c.teacher_fraction.back(), run.supervised);
    written = window_sup = window_steps = 0;
    window_loss = 0;
  };
  if (o.eval_every > 0) record(0);
  std::optional<nk::Progress> progress;
  if (show_progress) progress.emplace("train", o.steps);
  std::vector<Rollout> rolls;
  DistillBatch db;
  for (int64_t step = 0; step < o.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int64_t> batch = batch_rows(t.train.size(), o.batch, step, seed);
    std::vector<RolloutRequest> requests;
    for (int64_t b = 0; b < o.batch; ++b) {
      const size_t u = static_cast<size_t>(batch[static_cast<size_t>(b)]);
      const int64_t d = t.train.doc[u];
      requests.push_back(
          {&t.train.question[u], d, &t.docs[static_cast<size_t>(d)], static_cast<uint64_t>(step * o.batch + b)});
    }
    rolls = roller.run_batch(requests);
    run.rollout_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    db = distill_batch(rolls);
    run.trained += db.packed.rows();
    for (const Rollout& r : rolls) {
      run.supervised += r.size();
      window_sup += r.size();
      run.teacher_forward += r.teacher_forward;
      run.student_forward += r.student_forward + static_cast<int64_t>(r.student_prefix.size()) + r.size();
      for (int8_t wr : r.writer) written += wr;
    }
    const nk::lm::StepStats st = trainer.step(1, [&](int64_t, nk::lm::Workspace& ws, nk::lm::TokenBatch& tb) {
      tb = db.packed.batch();
      trainer.model().forward(tb, ws);
      return std::pair<double, int64_t>{distill_loss(ws, db, method, loss_div, V, true), db.packed.rows()};
    });
    if (!std::isfinite(st.loss))
      throw nk::Error(nk::Exit::runtime, "train: the loss became " + std::to_string(st.loss) + " at step " +
                                             std::to_string(step) + " (lower --lr)");
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    window_loss += st.loss;
    ++window_steps;
    if (progress) progress->update(step + 1);
    if (o.eval_every > 0 && ((step + 1) % o.eval_every == 0 || step + 1 == o.steps)) record(step + 1);
  }
  if (progress) progress->finish();
  run.prefill = roller.document_prefill();
  run.seconds_per_step = o.steps ? wall / static_cast<double>(o.steps) : 0.0;
  run.rollout_seconds /= static_cast<double>(std::max<int64_t>(1, o.steps));
  return run;
}

void train_verb(const TrainOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  nk::lm::CausalModel m = nk::lm::load_causal_model(o.model);
  const Tasks t = read_tasks(o.input);
  check_train(m, t, o);
  const nk::lm::Tokenizer& tok = m.tokenizer();
  const TrainRun run = distill(m.checkpoint.weights, tok, t, o, env.seed, true);
  const Curve& c = run.curve;
  const auto curve = [&](nk::h5::Writer& w) {
    for (const auto& [name, member] : curve_columns()) {
      const std::vector<double>* v = &(c.*member);
      const std::string path = std::string("/curve/") + name;
      w.allow_nonfinite(path);
      w.write(path, v->data(), {static_cast<int64_t>(v->size())}, kCurveDims);
    }
    w.attr("/curve", "method", o.method);
    w.attr("/curve", "loss", o.loss);
    w.attr("/curve", "switch", o.switch_name);
    w.attr("/curve", "tau", o.tau);
    w.attr("/curve", "lr", o.lr);
    w.attr("/curve", "batch", o.batch);
    w.attr("/curve", "steps", o.steps);
    w.attr("/curve", "supervised_tokens", run.supervised);
    w.attr("/curve", "teacher_forward_tokens", run.teacher_forward);
    w.attr("/curve", "student_forward_tokens", run.student_forward);
    w.attr("/curve", "document_prefill_tokens", run.prefill);
    w.attr("/curve", "training_tokens", run.trained);
    w.attr("/curve", "seconds_per_step", run.seconds_per_step);
    w.attr("/curve", "rollout_seconds_per_step", run.rollout_seconds);
    w.attr("/curve", "tasks", t.path);
  };
  nk::lm::save_checkpoint(o.output, m.checkpoint.weights, &tok, nullptr, nk::lm::StoreAs::f32, curve);
  spdlog::info(
      "train {}: {} steps, {} supervised tokens, teacher forward {}, student forward {}, {:.3f} s a step ({:.3f} s of "
      "rollouts){}",
      o.method, o.steps, run.supervised, run.teacher_forward, run.student_forward, run.seconds_per_step,
      run.rollout_seconds,
      c.test_accuracy.empty() ? std::string() : fmt::format(", test accuracy {:.3f}", c.test_accuracy.back()));
}

}  // namespace ssd
