// main.cpp - shred-unlearn: retain-set-free LLM unlearning by high-surprisal
// token selection and top-K KL self-distillation (SHRED), with TOFU-style
// data, the baselines and TOFU/MUSE evaluation.
#include "nk/cli.hpp"
#include "nk/shipped.hpp"
#include "shred-unlearn/shred.hpp"

namespace {

using CLI::Range;

void add_model(CLI::App& verb, std::string& model, const std::string& what) {
  verb.add_option("-m,--model", model, what)->required();
}

void add_select_options(CLI::App& verb, shred::SelectConfig& c, std::string& demote) {
  verb.add_option("--percent", c.percent,
                  "P in (0, 100]: the share of each instance's answer tokens (lowest probability first) to forget");
  verb.add_option("--topk", c.topk, "K in 2..vocabulary: the support of every target (the original's top K)");
  verb.add_option("--skip-tokens", c.skip, "Leading answer tokens never selected")
      ->check(Range(int64_t{0}, int64_t{1} << 20));
  verb.add_option(
      "--demote", demote,
      "The gold token's target logit at forget positions: min (below every other, by --margin), shift:D, zero");
  verb.add_option("--margin", c.margin, "min: how far below the lowest other support logit")->check(Range(0.0, 1e6));
}

/// The method and its optimiser (run, sequential).
void add_unlearn_options(CLI::App& verb, std::string& method, shred::UnlearnConfig& c, std::string& demote,
                         const std::string& steps) {
  verb.add_option("--method", method, "shred, shred-all, shred-random, ga, graddiff, npo, npo-retain, kl-retain")
      ->check(
          CLI::IsMember({"shred", "shred-all", "shred-random", "ga", "graddiff", "npo", "npo-retain", "kl-retain"}));
  verb.add_option("--steps", c.steps, steps)->check(Range(int64_t{0}, int64_t{1} << 24));
  verb.add_option("--batch", c.batch, "Forget instances per step (and as many retain rows)")
      ->check(Range(int64_t{1}, int64_t{1} << 16));
  verb.add_option("--lr", c.lr, "AdamW learning rate (constant)")->check(Range(1e-12, 1.0));
  verb.add_option("--npo-beta", c.npo_beta, "NPO's beta")->check(Range(1e-6, 1e6));
  verb.add_option("--retain-weight", c.retain_weight, "The retain term's weight (graddiff, npo-retain, kl-retain)")
      ->check(Range(0.0, 1e6));
  add_select_options(verb, c.select, demote);
}

void add_eval_options(CLI::App& verb, shred::EvalConfig& c) {
  verb.add_option("--max-rows", c.max_rows,
                  "Rows per set (retain, world, holdout), evenly spaced (0: all; forget is always whole)")
      ->check(Range(int64_t{0}, int64_t{1} << 30));
  verb.add_option("--ppl-docs", c.ppl_docs, "Held-out fortunes for the general perplexity (0: none)")
      ->check(Range(int64_t{0}, int64_t{1} << 20));
  verb.add_option("--ppl-text", c.ppl_text, "A text file (paragraphs) for the general perplexity instead");
}

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli(
      "shred-unlearn",
      "SHRED: retain-set-free LLM unlearning by high-surprisal token selection and top-K KL self-distillation");
  cli.app().require_subcommand(1);

  shred::TofuOptions tofu;
  CLI::App* tofu_verb =
      cli.add_verb("tofu", "A TOFU-shaped benchmark: fictitious authors, QA, WordNet world facts, bios, splits",
                   nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*tofu_verb, tofu.output, tofu.no_clobber);
  tofu_verb->add_option("--authors", tofu.spec.authors, "Fictitious authors")
      ->check(Range(int64_t{3}, int64_t{1} << 20));
  tofu_verb->add_option("--questions", tofu.spec.questions, "Questions per author (1-20)")
      ->check(Range(int64_t{1}, int64_t{20}));
  tofu_verb->add_option("--world", tofu.spec.world, "World facts from WordNet")
      ->check(Range(int64_t{6}, int64_t{1} << 16));
  tofu_verb->add_option("--wordnet", tofu.spec.wordnet, "WordNet's dict folder (default: Debian's wordnet-base)");
  tofu_verb
      ->add_option("--from-jsonl", tofu.from_jsonl, "Convert a forget set in JSON lines instead (see the man page)")
      ->check(CLI::ExistingFile);

  shred::FinetuneOptions ft;
  CLI::App* ft_verb =
      cli.add_verb("finetune", "CE on answers and bios: the target model, or with --exclude the retain model",
                   nk::cli::Randomness::seeded);
  add_model(*ft_verb, ft.model, "The nk-lm checkpoint to start from (causal)");
  nk::cli::App::add_input(*ft_verb, ft.input, "the tofu file");
  nk::cli::App::add_output(*ft_verb, ft.output, ft.no_clobber, "the fine-tuned nk-lm checkpoint");
  ft_verb->add_option("--exclude", ft.exclude, "A split left out (the retain model: TOFU's gold standard)");
  ft_verb->add_option("--epochs", ft.config.epochs, "Passes over the data")->check(Range(int64_t{1}, int64_t{1} << 20));
  ft_verb->add_option("--batch", ft.config.batch, "Sequences per step")->check(Range(int64_t{1}, int64_t{1} << 16));
  ft_verb->add_option("--lr", ft.config.lr, "Peak AdamW learning rate (warm-up, cosine to a tenth)")
      ->check(Range(1e-9, 1.0));
  ft_verb
      ->add_option("--replay-world", ft.replay_world,
                   "WordNet glosses asked in the QA form (nouns outside /world), replayed")
      ->check(Range(int64_t{0}, int64_t{1} << 20));
  ft_verb
      ->add_option("--replay-windows", ft.config.replay_windows,
                   "Windows of general text (nk-lm's training fortunes) per step, against forgetting")
      ->check(Range(int64_t{0}, int64_t{1} << 16));
  ft_verb->add_option("--replay-length", ft.config.replay_length, "Tokens per replay window")
      ->check(Range(int64_t{2}, int64_t{1} << 16));
  ft_verb->add_option("--wordnet", ft.wordnet, "WordNet's dict folder (default: Debian's wordnet-base)");
  ft_verb->add_option("--weight-decay", ft.config.weight_decay, "AdamW's decoupled weight decay")
      ->check(Range(0.0, 10.0));

  shred::SelectOptions sel;
  CLI::App* sel_verb =
      cli.add_verb("select", "SHRED's selection: forget and benign positions, top-K supports and targets");
  add_model(*sel_verb, sel.model, "The target model (the original, frozen)");
  nk::cli::App::add_input(*sel_verb, sel.input, "the tofu file");
  nk::cli::App::add_output(*sel_verb, sel.output, sel.no_clobber);
  sel_verb->add_option("--split", sel.split, "The forget split");
  add_select_options(*sel_verb, sel.config, sel.demote);

  shred::RunOptions run;
  CLI::App* run_verb =
      cli.add_verb("run", "Unlearn a split with SHRED or a baseline; writes the unlearned nk-lm checkpoint",
                   nk::cli::Randomness::seeded);
  add_model(*run_verb, run.model, "The target model");
  nk::cli::App::add_input(*run_verb, run.input, "the tofu file");
  nk::cli::App::add_output(*run_verb, run.output, run.no_clobber, "the unlearned nk-lm checkpoint");
  run_verb->add_option("--split", run.split, "The forget split");
  add_unlearn_options(*run_verb, run.method, run.config, run.demote, "Optimiser steps");
  run_verb->add_option("--eval-every", run.eval_every, "Steps between evaluations written to --curve (0: none)")
      ->check(Range(int64_t{0}, int64_t{1} << 24));
  nk::cli::App::output(run_verb->add_option("--curve", run.curve, "The evaluations along the run (HDF5)"));
  run_verb->add_option("--reference", run.reference, "The retain model's eval file (forget quality, privleak)")
      ->check(CLI::ExistingFile);
  add_eval_options(*run_verb, run.eval);

  shred::EvalOptions ev;
  CLI::App* ev_verb =
      cli.add_verb("eval", "TOFU/MUSE measures: forget quality, utility, ROUGE-L, MIA AUC, privleak, verbmem, ppl");
  add_model(*ev_verb, ev.model, "The model to evaluate");
  nk::cli::App::add_input(*ev_verb, ev.input, "the tofu file");
  nk::cli::App::add_output(*ev_verb, ev.output, ev.no_clobber);
  ev_verb->add_option("--split", ev.config.split, "The forget split");
  ev_verb->add_option("--reference", ev.reference, "The retain model's eval file on the same split")
      ->check(CLI::ExistingFile);
  add_eval_options(*ev_verb, ev.config);

  shred::RelearnOptions rl;
  CLI::App* rl_verb =
      cli.add_verb("relearn", "Relearn a fraction of the forget rows; recovery of the target's ROUGE-L on the rest",
                   nk::cli::Randomness::seeded);
  add_model(*rl_verb, rl.model, "The unlearned model");
  rl_verb->add_option("--target", rl.target, "The target model (before unlearning)")->required();
  nk::cli::App::add_input(*rl_verb, rl.input, "the tofu file");
  nk::cli::App::add_output(*rl_verb, rl.output, rl.no_clobber);
  rl_verb->add_option("--split", rl.split, "The forget split");
  rl_verb->add_option("--fraction", rl.fraction, "Share of the forget rows relearned")->check(Range(1e-9, 1.0 - 1e-9));
  rl_verb->add_option("--steps", rl.steps, "Fine-tuning steps on them")->check(Range(int64_t{1}, int64_t{1} << 24));
  rl_verb->add_option("--batch", rl.batch, "Rows per step")->check(Range(int64_t{1}, int64_t{1} << 16));
  rl_verb->add_option("--lr", rl.lr, "AdamW learning rate (constant)")->check(Range(1e-12, 1.0));

  shred::SequentialOptions sq;
  CLI::App* sq_verb = cli.add_verb(
      "sequential", "Unlearn a split's authors in consecutive requests; utility and forget ROUGE-L after each",
      nk::cli::Randomness::seeded);
  add_model(*sq_verb, sq.model, "The target model");
  nk::cli::App::add_input(*sq_verb, sq.input, "the tofu file");
  nk::cli::App::add_output(*sq_verb, sq.output, sq.no_clobber);
  sq_verb->add_option("--split", sq.split, "The split cut into requests");
  sq_verb->add_option("--requests", sq.requests, "Requests (parts of the split's authors)")
      ->check(Range(int64_t{1}, int64_t{1} << 20));
  add_unlearn_options(*sq_verb, sq.method, sq.config, sq.demote, "Optimiser steps per request");
  add_eval_options(*sq_verb, sq.eval);

  shred::ParetoOptions pa;
  CLI::App* pa_verb =
      cli.add_verb("pareto", "Forget quality vs utility of every checkpoint: fronts, hypervolumes, an SVG");
  pa_verb->add_option("curves", pa.curves, "Curve files of run --curve")->required()->check(CLI::ExistingFile);
  pa_verb
      ->add_option("--target", pa.target,
                   "The target's eval file (with --reference): the hypervolume's reference point")
      ->required()
      ->check(CLI::ExistingFile);
  pa_verb->add_option("--retain", pa.retain, "The retain model's eval file: the ideal point (a star)")
      ->check(CLI::ExistingFile);
  nk::cli::App::output(pa_verb->add_option("--plot", pa.plot, "The SVG plot"));
  nk::cli::App::add_output(*pa_verb, pa.output, pa.no_clobber);

  return cli.run(argc, argv, [&] {
    if (*rl_verb) shred::relearn_verb(rl, cli.env());
    if (*sq_verb) shred::sequential_verb(sq, cli.env());
    if (*pa_verb) shred::pareto_verb(pa, cli.env());
    if (*tofu_verb) shred::tofu(tofu, cli.env());
    if (*ft_verb) shred::finetune_verb(ft, cli.env());
    if (*sel_verb) shred::select_verb(sel, cli.env());
    if (*run_verb) shred::run_verb(run, cli.env());
    if (*ev_verb) shred::eval_verb(ev, cli.env());
  });
}
