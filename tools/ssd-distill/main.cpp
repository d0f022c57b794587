// main.cpp - ssd-distill: Speculative Self-Distillation, per-token
// mixed-policy self-distillation of documents into a closed-book model.
#include "nk/cli.hpp"
#include "nk/shipped.hpp"
#include "ssd-distill/ssd.hpp"

int main(int argc, char** argv) {
  using CLI::Range;
  nk::cli::App cli("ssd-distill",
                   "Speculative Self-Distillation: per-token mixed-policy self-distillation of documents into a "
                   "closed-book model");
  cli.app().require_subcommand(1);

  ssd::TasksOptions tasks;
  CLI::App* tasks_verb = cli.add_verb(
      "tasks", "The knowledge to internalise: documents, training and held-out questions (memo, update, skill)",
      nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*tasks_verb, tasks.output, tasks.no_clobber);
  tasks_verb->add_option("--task", tasks.spec.task, "memo, update or skill")
      ->check(CLI::IsMember({"memo", "update", "skill"}));
  tasks_verb->add_option("--docs", tasks.spec.docs, "Documents")->check(Range(int64_t{1}, int64_t{1} << 16));
  tasks_verb->add_option("--wordnet", tasks.spec.wordnet, "WordNet's dict folder (default: Debian's wordnet-base)");
  tasks_verb
      ->add_option("--from-jsonl", tasks.from_jsonl,
                   "Convert JSON lines {doc, question, answer, split} instead (see the man page)")
      ->check(CLI::ExistingFile);

  ssd::DivergenceOptions div;
  CLI::App* div_verb =
      cli.add_verb("divergence", "The switch rule and the loss at each position of given student and teacher logits");
  div_verb->add_option("-i,--input", div.input, "HDF5 with /student_logits and /teacher_logits [N, V]")->required();
  nk::cli::App::add_output(*div_verb, div.output, div.no_clobber);
  div_verb->add_option("--switch", div.switch_name, "D_switch(student || teacher): jsd, fkl or rkl")
      ->check(CLI::IsMember({"jsd", "fkl", "rkl"}));
  div_verb->add_option("--tau", div.tau, "The teacher writes where delta > tau (>= 0)")->check(Range(0.0, 1e9));
  div_verb->add_option("--loss", div.loss, "D_loss: fkl = KL(teacher || student), rkl = KL(student || teacher), jsd")
      ->check(CLI::IsMember({"fkl", "rkl", "jsd"}));

  ssd::EvalOptions ev;
  CLI::App* ev_verb = cli.add_verb("eval", "Greedy answers to a split's questions, closed-book or --open-book, scored");
  ev_verb->add_option("-m,--model", ev.model, "A causal nk-lm checkpoint (default: the shipped reader, lm/reader.h5)");
  ev_verb->add_option("-i,--input", ev.input, "The task file (tasks)")->required();
  nk::cli::App::add_output(*ev_verb, ev.output, ev.no_clobber);
  ev_verb->add_option("--split", ev.split, "train or test")->check(CLI::IsMember({"train", "test"}));
  ev_verb->add_flag("--open-book", ev.open_book, "The document in the context (the teacher's view)");
  ev_verb->add_option("--max-new", ev.max_new, "Answer tokens at most")->check(Range(int64_t{1}, int64_t{1} << 16));
  ev_verb->add_flag("--ppl", ev.ppl, "Also the perplexity on held-out general text (forgetting)");
  ev_verb->add_option("--ppl-docs", ev.ppl_docs, "Held-out fortunes for --ppl")
      ->check(Range(int64_t{1}, int64_t{1} << 20));
  ev_verb->add_option("--ppl-text", ev.ppl_text, "A text file (paragraphs) for --ppl instead")
      ->check(CLI::ExistingFile);

  ssd::RolloutOptions ro;
  CLI::App* ro_verb = cli.add_verb(
      "rollout", "Rollouts of a split's questions: who writes each token (off-sft, off-fkl, on-policy, skd, ssd)",
      nk::cli::Randomness::seeded);
  ro_verb->add_option(
      "-m,--model", ro.model,
      "A causal nk-lm checkpoint: the student and, with the document, the teacher (default: lm/reader.h5)");
  ro_verb->add_option("-i,--input", ro.input, "The task file (tasks)")->required();
  nk::cli::App::add_output(*ro_verb, ro.output, ro.no_clobber);
  ro_verb->add_option("--split", ro.split, "train or test")->check(CLI::IsMember({"train", "test"}));
  ro_verb->add_option("--limit", ro.limit, "The first N questions (0: all)")
      ->check(Range(int64_t{0}, int64_t{1} << 30));
  ro_verb->add_option("--method", ro.method, "off-sft, off-fkl, on-policy, skd or ssd")
      ->check(CLI::IsMember({"off-sft", "off-fkl", "on-policy", "skd", "ssd"}));
  ro_verb->add_option("--tau", ro.tau, "ssd: the teacher writes where delta > tau (>= 0)")->check(Range(0.0, 1e9));
  ro_verb->add_option("--switch", ro.switch_name, "D_switch(student || teacher): jsd, fkl or rkl")
      ->check(CLI::IsMember({"jsd", "fkl", "rkl"}));
  ro_verb->add_option("--temperature", ro.temperature, "Sampling temperature (0: greedy)")->check(Range(0.0, 1e3));
  ro_verb->add_option("--max-new", ro.max_new, "Tokens per rollout at most")
      ->check(Range(int64_t{1}, int64_t{1} << 16));
  ro_verb->add_option("--chunk", ro.chunk, "ssd: the longest draft of the student per teacher pass (0: token by token)")
      ->check(Range(int64_t{0}, int64_t{1} << 16));
  ro_verb->add_option("--skd-topk", ro.skd_topk, "skd: the teacher replaces a student token outside its top K")
      ->check(Range(int64_t{1}, int64_t{1} << 20));
  ro_verb->add_flag("--dump-dists", ro.dump_dists, "Also both models' log-probabilities at every position [R, N, V]");

  ssd::TrainOptions tr;
  CLI::App* tr_verb =
      cli.add_verb("train", "Distil the teacher (the document in context) into the closed-book student with one method",
                   nk::cli::Randomness::seeded);
  tr_verb->add_option("-m,--model", tr.model,
                      "A causal nk-lm checkpoint: the initial student and the frozen teacher (default: lm/reader.h5)");
  tr_verb->add_option("-i,--input", tr.input, "The task file (tasks)")->required();
  nk::cli::App::add_output(*tr_verb, tr.output, tr.no_clobber)->required();
  tr_verb->add_option("--method", tr.method, "off-sft, off-fkl, on-policy, skd or ssd")
      ->check(CLI::IsMember({"off-sft", "off-fkl", "on-policy", "skd", "ssd"}));
  tr_verb->add_option("--loss", tr.loss, "D_loss: fkl = KL(teacher || student), rkl, jsd (off-sft: cross-entropy)")
      ->check(CLI::IsMember({"fkl", "rkl", "jsd"}));
  tr_verb->add_option("--switch", tr.switch_name, "D_switch(student || teacher): jsd, fkl or rkl")
      ->check(CLI::IsMember({"jsd", "fkl", "rkl"}));
  tr_verb->add_option("--tau", tr.tau, "ssd: the teacher writes where delta > tau (>= 0)")->check(Range(0.0, 1e9));
  tr_verb->add_option("--steps", tr.steps, "Optimiser steps")->check(Range(int64_t{1}, int64_t{1} << 24));
  tr_verb->add_option("--batch", tr.batch, "Rollouts per step")->check(Range(int64_t{1}, int64_t{1} << 12));
  tr_verb->add_option("--lr", tr.lr, "AdamW learning rate (constant, no weight decay)")->check(Range(1e-12, 1.0));
  tr_verb->add_option("--eval-every", tr.eval_every, "Closed-book test accuracy every E steps into /curve (0: none)")
      ->check(Range(int64_t{0}, int64_t{1} << 24));
  tr_verb->add_option("--temperature", tr.temperature, "Rollout temperature (0: greedy)")->check(Range(0.0, 1e3));
  tr_verb->add_option("--max-new", tr.max_new, "Tokens per rollout at most")
      ->check(Range(int64_t{1}, int64_t{1} << 16));
  tr_verb->add_option("--chunk", tr.chunk, "ssd: the longest draft of the student per teacher pass (0: token by token)")
      ->check(Range(int64_t{0}, int64_t{1} << 16));
  tr_verb->add_option("--skd-topk", tr.skd_topk, "skd: the teacher replaces a student token outside its top K")
      ->check(Range(int64_t{1}, int64_t{1} << 20));

  ssd::SweepOptions sw;
  CLI::App* sw_verb = cli.add_verb(
      "sweep", "Every method (and tau, loss, seed) trained on one task file: runs, curves, the report and its SVGs",
      nk::cli::Randomness::seeded);
  sw_verb->add_option("-m,--model", sw.train.model,
                      "A causal nk-lm checkpoint: the initial student and the frozen teacher (default: lm/reader.h5)");
  sw_verb->add_option("-i,--input", sw.train.input, "The task file (tasks)")->required();
  nk::cli::App::add_output(*sw_verb, sw.output, sw.no_clobber);
  sw_verb->add_option("--methods", sw.methods, "Comma list of off-sft, off-fkl, on-policy, skd, ssd")
      ->delimiter(',')
      ->check(CLI::IsMember({"off-sft", "off-fkl", "on-policy", "skd", "ssd"}));
  sw_verb->add_option("--taus", sw.taus, "ssd: comma list of tau (>= 0)")->delimiter(',')->check(Range(0.0, 1e9));
  sw_verb->add_option("--losses", sw.losses, "Comma list of D_loss (fkl, rkl, jsd) for every method but off-sft")
      ->delimiter(',')
      ->check(CLI::IsMember({"fkl", "rkl", "jsd"}));
  sw_verb->add_option("--seeds", sw.seeds, "Seeds per configuration (--seed, --seed + 1, ...)")
      ->check(Range(int64_t{1}, int64_t{1} << 16));
  sw_verb->add_option("--switch", sw.train.switch_name, "D_switch(student || teacher): jsd, fkl or rkl")
      ->check(CLI::IsMember({"jsd", "fkl", "rkl"}));
  sw_verb->add_option("--steps", sw.train.steps, "Optimiser steps per run")->check(Range(int64_t{1}, int64_t{1} << 24));
  sw_verb->add_option("--batch", sw.train.batch, "Rollouts per step")->check(Range(int64_t{1}, int64_t{1} << 12));
  sw_verb->add_option("--lr", sw.train.lr, "AdamW learning rate (constant, no weight decay)")->check(Range(1e-12, 1.0));
  sw_verb->add_option("--eval-every", sw.train.eval_every, "Closed-book test accuracy every E steps")
      ->check(Range(int64_t{1}, int64_t{1} << 24));
  sw_verb->add_option("--temperature", sw.train.temperature, "Rollout temperature (0: greedy)")->check(Range(0.0, 1e3));
  sw_verb->add_option("--max-new", sw.train.max_new, "Tokens per rollout at most")
      ->check(Range(int64_t{1}, int64_t{1} << 16));
  sw_verb->add_option("--chunk", sw.train.chunk, "ssd: the longest draft of the student per teacher pass (0: token by token)")
      ->check(Range(int64_t{0}, int64_t{1} << 16));
  sw_verb->add_option("--skd-topk", sw.train.skd_topk, "skd: the teacher replaces a student token outside its top K")
      ->check(Range(int64_t{1}, int64_t{1} << 20));
  sw_verb->add_option("--ppl-docs", sw.ppl_docs, "Held-out fortunes for the perplexity change (0: none)")
      ->check(Range(int64_t{0}, int64_t{1} << 20));
  nk::cli::App::output(sw_verb->add_option(
      "--svg", sw.svg, "Whole grid: write PREFIX-accuracy.svg and PREFIX-teacher.svg (prefix, no extension)"));
  cli.add_shard(*sw_verb);

  ssd::ReportOptions rp;
  CLI::App* rp_verb = cli.add_verb("report", "The table and SVGs of a sweep file (or of its merged shards)");
  nk::cli::App::add_input(*rp_verb, rp.input, "a sweep file")->required();
  nk::cli::App::add_optional_output(*rp_verb, rp.output, rp.no_clobber, "the table as HDF5 (/report)");
  nk::cli::App::output(
      rp_verb->add_option("--svg", rp.svg, "Write PREFIX-accuracy.svg and PREFIX-teacher.svg (prefix, no extension)"));

  ssd::PrepareOptions pr;
  CLI::App* pr_verb = cli.add_verb(
      "prepare", "The reader: nk-lm's checkpoint taught to answer from a document in its context (warm-up pool)",
      nk::cli::Randomness::seeded);
  pr_verb->add_option("-m,--model", pr.model, "The base causal checkpoint (default: nk-lm's shipped lm/causal.h5)");
  nk::cli::App::add_output(*pr_verb, pr.output, pr.no_clobber)->required();
  pr_verb->add_option("--docs", pr.docs, "Warm-up documents of each kind (memo, update, skill)")
      ->check(Range(int64_t{1}, int64_t{1} << 16));
  pr_verb->add_option("--epochs", pr.config.epochs, "Passes over the QA pairs")
      ->check(Range(int64_t{1}, int64_t{1} << 16));
  pr_verb->add_option("--batch", pr.config.batch, "QA pairs per step")->check(Range(int64_t{1}, int64_t{1} << 12));
  pr_verb->add_option("--lr", pr.config.lr, "Peak learning rate (warm-up, then cosine to a tenth)")
      ->check(Range(1e-12, 1.0));
  pr_verb->add_option("--replay-windows", pr.config.replay_windows, "General-text windows replayed a step (0: none)")
      ->check(Range(int64_t{0}, int64_t{1} << 12));
  pr_verb->add_option("--wordnet", pr.wordnet, "WordNet's dict folder (default: Debian's wordnet-base)");

  return cli.run(argc, argv, [&] {
    if (*tasks_verb) ssd::tasks_verb(tasks, cli.env());
    if (*div_verb) ssd::divergence_verb(div, cli.env());
    const auto reader = [](std::string& model) {
      if (model.empty()) model = nk::shipped_data("lm/reader.h5");
    };
    if (*ev_verb) reader(ev.model), ssd::eval_verb(ev, cli.env());
    if (*ro_verb) reader(ro.model), ssd::rollout_verb(ro, cli.env());
    if (*tr_verb) reader(tr.model), ssd::train_verb(tr, cli.env());
    if (*sw_verb) reader(sw.train.model), ssd::sweep_verb(sw, cli.env());
    if (*rp_verb) ssd::report_verb(rp, cli.env());
    if (*pr_verb) {
      if (pr.model.empty()) pr.model = nk::shipped_data("lm/causal.h5");
      ssd::prepare_verb(pr, cli.env());
    }
  });
}
