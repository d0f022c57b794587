// plan.cpp - dllm-sparse plan: a policy's block masks along a stored
// denoising trajectory, by the same online planner (nk/kernels/dllm_plan.hpp)
// that nk-lm's diffusion sampler runs inside the model.
#include <algorithm>
#include <cmath>

#include "dllm-sparse/dllm_io.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"

namespace dllm {

void plan(const PlanOptions& o) {
  check_policy(o.policy, false);
  const nk::h5::File file = nk::h5::File::open(o.input);
  if (file.attr_string("/", "nk_schema")) file.require_schema("dllm-sparse.trajectory/");
  const std::vector<StepRef> steps = trajectory_steps(file);
  nk::h5::Writer out(o.output, kPlanSchema, o.no_clobber);
  nk::Progress progress("plan", static_cast<int64_t>(steps.size()));
  MaskPlanner planner(o.policy);
  int64_t done = 0, total_anchors = 0, layer_index = -1;
  double total_seconds = 0;
  std::string layer_now = "\x01";
  // Per layer: what the planner chose at its anchors, and which mask each step used.
  std::vector<uint8_t> masks;
  std::vector<int64_t> mask_of_step, anchor_steps, budgets;
  std::vector<double> concentration, plan_seconds;
  int64_t heads = 0, nb = 0, step_index = 0;
  auto flush_layer = [&] {
    if (layer_now == "\x01") return;
    const std::string g = layer_now;
    const int64_t a = static_cast<int64_t>(anchor_steps.size());
    out.write(g + "/masks", masks.data(), {a, heads, nb, nb}, "A,H,nq,nk");
    out.write(g + "/mask_of_step", mask_of_step.data(), {static_cast<int64_t>(mask_of_step.size())}, "S");
    out.write(g + "/anchor_steps", anchor_steps.data(), {a}, "A");
    out.write(g + "/budget", budgets.data(), {a, heads}, "A,H");
    out.write(g + "/concentration", concentration.data(), {a, heads}, "A,H");
    out.write(g + "/plan_seconds", plan_seconds.data(), {static_cast<int64_t>(plan_seconds.size())}, "S", "s");
    total_anchors += a;
  };
  for (const StepRef& ref : steps) {
    if (ref.layer != layer_now) {
      flush_layer();
      layer_now = ref.layer;
      ++layer_index;
      masks.clear(), mask_of_step.clear(), anchor_steps.clear(), budgets.clear(), concentration.clear(), plan_seconds.clear();
      step_index = 0;
    }
    const Qkv x = read_qkv(file, ref.group);
    const float scale = static_cast<float>(o.scale > 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(x.dims)));
    if (step_index == 0) {
      heads = x.heads, nb = block_count(x.length, o.policy.block);
      total_budget(heads, nb, o.policy.sparsity);  // a sparsity the grid cannot hold: the usage error before any work
    } else if (x.heads != heads || block_count(x.length, o.policy.block) != nb) {
      throw nk::input_error(file.path(), ref.group + "/q", "shape differs from the first step of its layer");
    }
    PlanStep info;
    const BlockMask* mask = planner.next(layer_index, x, scale, &info);
    if (info.anchor) {
      masks.insert(masks.end(), mask->keep.begin(), mask->keep.end());
      anchor_steps.push_back(step_index);
      budgets.insert(budgets.end(), info.budget.begin(), info.budget.end());
      concentration.insert(concentration.end(), info.concentration.begin(), info.concentration.end());
    }
    plan_seconds.push_back(info.seconds);
    total_seconds += info.seconds;
    mask_of_step.push_back(static_cast<int64_t>(anchor_steps.size()) - 1);
    ++step_index;
    progress.update(++done);
  }
  flush_layer();
  progress.finish();
  out.attr("/", "policy", o.policy.name);
  out.attr("/", "block", o.policy.block);
  out.attr("/", "sparsity", o.policy.sparsity);
  out.attr("/", "anchor_every", o.policy.anchor_every);
  out.attr("/", "drift", o.policy.drift);
  out.attr("/", "head_budget", std::string(o.policy.global() ? "global" : "uniform"));
  out.attr("/", "plan_seconds", total_seconds);
  out.commit();
  spdlog::info("{}: {} step(s), {} anchor(s), sparsity {}, {:.3f} s of planning", o.policy.name, steps.size(), total_anchors,
               o.policy.sparsity, total_seconds);
}

}  // namespace dllm
