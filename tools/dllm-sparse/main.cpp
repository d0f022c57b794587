// main.cpp - dllm-sparse: anchor-step block-sparse attention for diffusion LLMs (Step-dLLM).
#include "dllm-sparse/dllm.hpp"
#include "nk/cli.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("dllm-sparse", "Block-sparse bidirectional attention for diffusion LLMs: fused kernel, anchor-step masks");
  cli.app().require_subcommand(1);

  dllm::GenOptions gen;
  CLI::App* gen_verb = cli.add_verb("gen", "Synthetic denoising trajectories: /steps/NNN/{q,k,v}", nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--length", gen.length, "Sequence length L")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  gen_verb->add_option("--heads", gen.heads, "Query heads H")->check(CLI::Range(int64_t{1}, int64_t{1} << 12));
  gen_verb->add_option("--kv-heads", gen.kv_heads, "KV heads (GQA; a divisor of H; 0 = H)")->check(CLI::Range(int64_t{0}, int64_t{1} << 12));
  gen_verb->add_option("--dims", gen.dims, "Head dimension d (8..256)")->check(CLI::Range(int64_t{1}, int64_t{1} << 12));
  gen_verb->add_option("--steps", gen.steps, "Denoising steps")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  gen_verb->add_option("--layers", gen.layers, "Layers (more than one: /layers/LL/steps/NNN)")->check(CLI::Range(int64_t{1}, int64_t{1} << 10));
  gen_verb->add_option("--transitions", gen.transitions, "Steps at which the attention pattern shifts abruptly")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  gen_verb->add_flag("--single-step", gen.single_step, "Write one step as /q, /k, /v (the input of attend)");

  dllm::AttendOptions attend;
  CLI::App* attend_verb = cli.add_verb("attend", "One step's bidirectional attention: dense, or over a plan's kept blocks");
  nk::cli::App::add_input(*attend_verb, attend.input, "file with /q [H,L,d], /k, /v [Hkv,L,d] (or a trajectory with --step)");
  nk::cli::App::add_output(*attend_verb, attend.output, attend.no_clobber);
  attend_verb->add_option("--mask", attend.mask, "Block mask: a plan file (its mask for --step) or a file with /mask [H,nq,nk]");
  attend_verb->add_flag("--dense", attend.dense, "Every block (the fused dense kernel)");
  attend_verb->add_flag("--unfused", attend.unfused, "Naive dense attention: the whole L x L score matrix per head (on CUDA: cuBLAS)");
  nk::cli::App::add_repeats(*attend_verb, attend.repeats);
  attend_verb->add_option("--block", attend.block, "Block size (16, 32, 48 or 64)");
  attend_verb->add_option("--step", attend.step, "Step of a trajectory (/steps/NNN) and of the plan's masks");
  attend_verb->add_option("--scale", attend.scale, "Softmax scale (default 1/sqrt(d))")->check(CLI::NonNegativeNumber);

  dllm::PlanOptions plan;
  CLI::App* plan_verb = cli.add_verb("plan", "Per-step block masks of a policy along a trajectory");
  nk::cli::App::add_input(*plan_verb, plan.input, "trajectory file");
  nk::cli::App::add_output(*plan_verb, plan.output, plan.no_clobber);
  plan_verb->add_option("--policy", plan.policy.name, "step (anchor steps, head-adaptive), once-uniform, every-uniform or oracle")
      ->check(CLI::IsMember({"step", "once-uniform", "every-uniform", "oracle"}));
  plan_verb->add_option("--sparsity", plan.policy.sparsity, "Share of blocks dropped, over all heads")->check(CLI::Range(0.0, 1.0));
  plan_verb->add_option("--block", plan.policy.block, "Block size (16, 32, 48 or 64)");
  plan_verb->add_option("--anchor-every", plan.policy.anchor_every, "step: re-score every R steps (with --drift: at least every R)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  plan_verb->add_option("--drift", plan.policy.drift, "step: also re-score when the probed mass kept falls by more than this")
      ->check(CLI::Range(0.0, 1.0));
  plan_verb->add_option("--probe", plan.policy.probe, "step: share of query blocks probed between anchors")->check(CLI::Range(0.0, 1.0));
  plan_verb->add_option("--score", plan.policy.score, "Block scores: sampled (exact softmax of a few rows per block) or pooled (mean q . mean k)")
      ->check(CLI::IsMember({"sampled", "pooled"}));
  plan_verb->add_option("--samples", plan.policy.samples, "sampled: query rows per block")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  plan_verb->add_option("--head-budget", plan.policy.head_budget,
                        "global (one ranking over all heads) or uniform (budget/H each); default: global for step and oracle")
      ->check(CLI::IsMember({"global", "uniform"}));
  plan_verb->add_option("--scale", plan.scale, "Softmax scale (default 1/sqrt(d))")->check(CLI::NonNegativeNumber);

  dllm::EvalOptions eval;
  CLI::App* eval_verb = cli.add_verb("eval", "Mass recall and output error of a plan against dense attention, per step and head");
  nk::cli::App::add_input(*eval_verb, eval.input, "trajectory file");
  eval_verb->add_option("--plan", eval.plan, "Plan file (from plan)")->required();
  nk::cli::App::add_output(*eval_verb, eval.output, eval.no_clobber);
  eval_verb->add_option("--scale", eval.scale, "Softmax scale (default 1/sqrt(d))")->check(CLI::NonNegativeNumber);

  dllm::PlotOptions plot;
  CLI::App* plot_verb = cli.add_verb("plot", "SVG: the step-to-step overlap of the exact best blocks per layer (and the plan's error per step)");
  nk::cli::App::add_input(*plot_verb, plot.input, "eval file (from eval)");
  nk::cli::App::add_output(*plot_verb, plot.output, plot.no_clobber, "the overlap plot (SVG)")->required();
  nk::cli::App::output(plot_verb->add_option("--error", plot.error_output, "Also the plan's output error per step and layer (SVG)"));

  return cli.run(argc, argv, [&] {
    if (*gen_verb) dllm::gen(gen, cli.env());
    if (*attend_verb) dllm::attend(attend, cli.env());
    if (*plan_verb) dllm::plan(plan);
    if (*eval_verb) dllm::eval(eval);
    if (*plot_verb) dllm::plot(plot);
  });
}
