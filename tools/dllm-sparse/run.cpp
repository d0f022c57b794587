// run.cpp - attend (one step's attention, dense or block-sparse) and eval
// (recall and output error of a plan along a trajectory).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "dllm-sparse/dllm_io.hpp"
#include "nk/kernels/dllm_plan.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"

namespace dllm {

namespace {

/// A mask from a plan file (mask_of_step picks the anchor) or a file with /mask [H,nq,nk].
BlockMask read_mask(const std::string& path, const std::string& layer, int64_t step, const Qkv& x, int64_t block) {
  const nk::h5::File file = nk::h5::File::open(path);
  const int64_t nb = block_count(x.length, block);
  BlockMask mask;
  mask.heads = x.heads, mask.blocks = nb, mask.block = block;
  std::string name;
  if (file.has(layer + "/masks")) {
    name = layer + "/masks";
    const nk::h5::Array<int64_t> of = file.read<int64_t>(layer + "/mask_of_step", 1, "S");
    const int64_t s = step < 0 ? 0 : step;
    if (s >= of.size()) throw nk::input_error(path, layer + "/mask_of_step", "has no step " + std::to_string(s));
    const nk::h5::DatasetInfo info = file.info(name);
    if (info.shape.size() != 4 || info.shape[1] != x.heads || info.shape[2] != nb || info.shape[3] != nb) {
      throw nk::input_error(path, name, "shape " + nk::h5::shape_text(info.shape) + " does not fit the block grid [A," +
                                            std::to_string(x.heads) + "," + std::to_string(nb) + "," + std::to_string(nb) +
                                            "] of L = " + std::to_string(x.length) + ", block " + std::to_string(block));
    }
    const int64_t a = of.data[s];
    if (a < 0 || a >= info.shape[0]) throw nk::input_error(path, layer + "/mask_of_step", "entry " + std::to_string(s) + " is not a mask index");
    const nk::h5::Array<uint8_t> all = file.read_rows<uint8_t>(name, a, a + 1);
    mask.keep = all.data;
  } else if (file.has("/mask")) {
    name = "/mask";
    const nk::h5::DatasetInfo info = file.info(name);
    if (info.shape.size() != 3 || info.shape[0] != x.heads || info.shape[1] != nb || info.shape[2] != nb) {
      throw nk::input_error(path, name, "shape " + nk::h5::shape_text(info.shape) + " does not fit the block grid [" +
                                            std::to_string(x.heads) + "," + std::to_string(nb) + "," + std::to_string(nb) + "]");
    }
    mask.keep = file.read<uint8_t>(name).data;
  } else {
    throw nk::input_error(path, layer + "/masks", "missing (a plan file, or /mask [H,nq,nk])");
  }
  if (file.attr_number("/", "block") && static_cast<int64_t>(*file.attr_number("/", "block")) != block) {
    throw nk::input_error(path, "", "was planned with block " + std::to_string(static_cast<int64_t>(*file.attr_number("/", "block"))) +
                                        ", not --block " + std::to_string(block));
  }
  for (int64_t h = 0; h < x.heads; ++h) {
    for (int64_t i = 0; i < nb; ++i) {
      bool any = false;
      for (int64_t j = 0; j < nb && !any; ++j) any = mask.at(h, i, j);
      if (!any) {
        throw nk::input_error(path, name, "head " + std::to_string(h) + ", query block " + std::to_string(i) +
                                              " keeps no key block (its softmax would be empty)");
      }
    }
  }
  return mask;
}

std::string step_name(int64_t s) {
  char b[32];
  std::snprintf(b, sizeof b, "%03lld", static_cast<long long>(s));
  return b;
}

}  // namespace

void attend(const AttendOptions& o, const nk::RunEnv& env) {
  if (o.block < 16 || o.block > 64 || o.block % 16) throw nk::usage_error("--block must be 16, 32, 48 or 64");
  if (o.dense + o.unfused + !o.mask.empty() > 1) throw nk::usage_error("give one of --mask, --dense and --unfused");
  if (!o.dense && !o.unfused && o.mask.empty()) throw nk::usage_error("give --mask FILE (from plan) or --dense");
  const nk::h5::File file = nk::h5::File::open(o.input);
  std::string prefix;
  if (o.step >= 0) {
    prefix = "/steps/" + step_name(o.step);
  } else if (!file.has("/q") && file.has("/steps/000/q")) {
    prefix = "/steps/000";
  }
  const Qkv x = read_qkv(file, prefix);
  const float scale = static_cast<float>(o.scale > 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(x.dims)));
  BlockMask mask;
  if (!o.mask.empty()) mask = read_mask(o.mask, "", o.step, x, o.block);
  std::vector<float> out(static_cast<size_t>(x.heads * x.length * x.dims));
  std::string isa = "eigen";
  double secs = 0;
  GpuTiming gpu;
  const bool cuda = env.cuda();
  if (cuda) {
    if (x.queries() != x.length) throw nk::input_error(o.input, prefix + "/q", "the CUDA kernel needs as many query rows as keys");
    gpu = o.unfused ? attention_cublas(x, scale, out.data(), o.repeats)
                    : attention_cuda(x, o.mask.empty() ? nullptr : &mask, o.block, scale, out.data(), o.repeats);
    secs = gpu.compute;
    isa = o.unfused ? "cuda-cublas" : "cuda";
  } else {
    secs = nk::best_seconds(o.repeats, [&] {
      if (o.unfused) attention_unfused(x, scale, out.data());
      else isa = attention(x, o.mask.empty() ? nullptr : &mask, o.block, scale, out.data());
    });
  }
  nk::h5::Writer w(o.output, kOutputSchema, o.no_clobber);
  w.write("/o", out.data(), {x.heads, x.length, x.dims}, "H,L,d");
  w.attr("/", "seconds", secs);
  w.attr("/", "density", o.mask.empty() ? 1.0 : mask.density());
  w.attr("/", "kernel", o.unfused ? "unfused" : o.mask.empty() ? "dense" : "block-sparse");
  w.attr("/", "isa", isa);
  w.attr("/", "block", o.block);
  w.attr("/", "device", cuda ? "cuda" : "cpu");
  if (cuda) nk::kernels::write_timing(w, gpu);
  w.commit();
  spdlog::info("{} attention, H = {}, L = {}, d = {}, {:.1f}% of blocks: {:.3f} s ({})", o.unfused ? "unfused" : o.mask.empty() ? "dense" : "block-sparse",
               x.heads, x.length, x.dims, 100.0 * (o.mask.empty() ? 1.0 : mask.density()), secs, isa);
}

void eval(const EvalOptions& o) {
  if (o.plan.empty()) throw nk::usage_error("give --plan FILE (from dllm-sparse plan)");
  const nk::h5::File file = nk::h5::File::open(o.input);
  if (file.attr_string("/", "nk_schema")) file.require_schema("dllm-sparse.trajectory/");
  const nk::h5::File plan_file = nk::h5::File::open(o.plan);
  plan_file.require_schema(kPlanSchema);
  const double block_attr = plan_file.attr_number("/", "block").value_or(64);
  if (!(block_attr >= 1 && block_attr <= 65536) || block_attr != std::floor(block_attr)) {
    throw nk::input_error(o.plan, "", "attribute block: expected a whole number in 1..65536, got " + std::to_string(block_attr));
  }
  const int64_t block = static_cast<int64_t>(block_attr);
  const std::string policy = plan_file.attr_string("/", "policy").value_or("?");
  const std::vector<StepRef> steps = trajectory_steps(file);
  // A plan's layers plan exactly the trajectory's steps (checked before any attention runs).
  std::map<std::string, int64_t> steps_of_layer;
  for (const StepRef& ref : steps) ++steps_of_layer[ref.layer];
  for (const auto& [layer, count] : steps_of_layer) {
    const std::string name = layer + "/mask_of_step";
    if (!plan_file.has(layer + "/masks") || !plan_file.has(name)) continue;  // read_mask names what is missing
    const std::vector<int64_t> shape = plan_file.info(name).shape;
    if (shape.size() != 1 || shape[0] != count) {
      throw nk::input_error(o.plan, name, "plans " + (shape.size() == 1 ? std::to_string(shape[0]) : nk::h5::shape_text(shape)) +
                                              " steps, the trajectory '" + file.path() + "' has " + std::to_string(count) +
                                              (layer.empty() ? "" : " in " + layer));
    }
  }
  nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
  nk::Progress progress("eval", static_cast<int64_t>(steps.size()));
  FILE* to = o.output == "-" ? stderr : stdout;
  nk::Table table(to, {"step", "anchor", "density", "recall", "min_rec", "error", "max_error", "dense_ms", "sparse_ms", "plan_ms"},
                  {12, 5, 7, 8, 8, 10, 10, 9, 9, 8});
  bool header = false;  // printed with the first row: an input error before it leaves standard output empty
  std::string layer_now = "\x01";
  std::vector<double> recall, error, dense_s, sparse_s, plan_s, overlap;
  BlockMask previous_best;  // the step before's exact best blocks at the plan's budget
  std::vector<std::pair<std::string, double>> layer_overlap;
  double sum_overlap = 0;
  int64_t overlaps = 0;
  int64_t heads = 0, index = 0, done = 0;
  double sum_error = 0, sum_recall = 0, sum_dense = 0, sum_sparse = 0, sum_plan = 0;
  int64_t rows_total = 0;
  auto flush = [&] {
    if (layer_now == "\x01") return;
    const int64_t s = static_cast<int64_t>(dense_s.size());

    out.write(layer_now + "/recall", recall.data(), {s, heads}, "S,H");
    out.write(layer_now + "/error", error.data(), {s, heads}, "S,H");
    out.write(layer_now + "/dense_seconds", dense_s.data(), {s}, "S", "s");
    out.write(layer_now + "/sparse_seconds", sparse_s.data(), {s}, "S", "s");
    out.write(layer_now + "/plan_seconds", plan_s.data(), {s}, "S", "s");
    if (!overlap.empty()) out.write(layer_now + "/overlap", overlap.data(), {static_cast<int64_t>(overlap.size())}, "S-1");
    double mean = 0;
    for (double v : overlap) mean += v / static_cast<double>(overlap.size());
    if (!overlap.empty()) layer_overlap.emplace_back(layer_now, mean);
  };
  for (const StepRef& ref : steps) {
    if (ref.layer != layer_now) {
      flush();
      layer_now = ref.layer;
      recall.clear(), error.clear(), dense_s.clear(), sparse_s.clear(), plan_s.clear(), overlap.clear();
      index = 0;
    }
    const Qkv x = read_qkv(file, ref.group);
    heads = x.heads;
    const float scale = static_cast<float>(o.scale > 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(x.dims)));
    const BlockMask mask = read_mask(o.plan, ref.layer, index, x, block);
    const int64_t nb = mask.blocks, L = x.length, d = x.dims;
    std::vector<float> dense(static_cast<size_t>(x.heads * L * d)), sparse(dense.size());
    std::vector<float> mass(static_cast<size_t>(x.heads * L * nb));
    nk::Stopwatch watch;
    attention(x, nullptr, block, scale, dense.data());
    dense_s.push_back(watch.lap());
    attention(x, &mask, block, scale, sparse.data());
    sparse_s.push_back(watch.lap());
    attention(x, nullptr, block, scale, dense.data(), mass.data());  // again, with the block masses (not timed)
    {
      // How locally consistent is the attention itself? The exact best blocks
      // at the plan's budget (global ranking of the exact block masses), and
      // their overlap |A & B| / |A | B| with the step before's.
      std::vector<float> p(static_cast<size_t>(x.heads * nb * nb), 0.0f);
      for (int64_t h = 0; h < x.heads; ++h)
        for (int64_t r = 0; r < L; ++r) {
          const int64_t i = r / block;
          const float rows = static_cast<float>(std::min(block, L - i * block));
          for (int64_t j = 0; j < nb; ++j) p[static_cast<size_t>((h * nb + i) * nb + j)] += mass[(h * L + r) * nb + j] / rows;
        }
      BlockMask best = select_blocks(p, x.heads, nb, block, mask.kept(), true);
      if (index > 0 && previous_best.keep.size() == best.keep.size()) {
        int64_t both = 0, either = 0;
        for (size_t e = 0; e < best.keep.size(); ++e) both += best.keep[e] && previous_best.keep[e], either += best.keep[e] || previous_best.keep[e];
        overlap.push_back(either ? static_cast<double>(both) / static_cast<double>(either) : 1.0);
        sum_overlap += overlap.back(), ++overlaps;
      }
      previous_best = std::move(best);
    }
    const nk::h5::Array<double> ps = plan_file.read<double>(ref.layer + "/plan_seconds", 1, "S");
    plan_s.push_back(index < ps.size() ? ps.data[index] : 0.0);
    const nk::h5::Array<int64_t> of = plan_file.read<int64_t>(ref.layer + "/mask_of_step", 1, "S");
    const bool anchor = index == 0 || of.data[index] != of.data[index - 1];
    double step_recall = 0, min_recall = 1, step_error = 0, max_error = 0;
    for (int64_t h = 0; h < x.heads; ++h) {
      double kept = 0, diff = 0, norm = 0;
      for (int64_t r = 0; r < L; ++r) {
        double row = 0;
        for (int64_t j = 0; j < nb; ++j) {
          if (mask.at(h, r / block, j)) row += mass[(h * L + r) * nb + j];
        }
        kept += row;
        min_recall = std::min(min_recall, row);
      }
      for (int64_t e = h * L * d; e < (h + 1) * L * d; ++e) {
        const double a = sparse[e], b = dense[e];
        diff += (a - b) * (a - b);
        norm += b * b;
      }
      recall.push_back(kept / static_cast<double>(L));
      error.push_back(norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff));
      step_recall += recall.back() / static_cast<double>(x.heads);
      step_error += error.back() / static_cast<double>(x.heads);
      max_error = std::max(max_error, error.back());
    }
    sum_error += step_error, sum_recall += step_recall, ++rows_total;
    sum_dense += dense_s.back(), sum_sparse += sparse_s.back(), sum_plan += plan_s.back();
    if (nk::log::chatty()) {
      const std::string name = (ref.layer.empty() ? "" : ref.layer.substr(8) + "/") + ref.step;
      if (!header) table.header(), header = true;
      table.row({name, anchor ? "yes" : "-", nk::cell(mask.density(), "%.4f"), nk::cell(step_recall, "%.4f"),
                 nk::cell(min_recall, "%.4f"), nk::cell(step_error, "%.3e"), nk::cell(max_error, "%.3e"),
                 nk::cell(1e3 * dense_s.back(), "%.2f"), nk::cell(1e3 * sparse_s.back(), "%.2f"), nk::cell(1e3 * plan_s.back(), "%.2f")});
    }
    ++index;
    progress.update(++done);
  }
  flush();
  progress.finish();
  const double n = static_cast<double>(rows_total);
  out.attr("/", "policy", policy);
  out.attr("/", "mean_error", sum_error / n);
  out.attr("/", "mean_recall", sum_recall / n);
  out.attr("/", "dense_seconds", sum_dense);
  out.attr("/", "sparse_seconds", sum_sparse);
  out.attr("/", "plan_seconds", sum_plan);
  out.attr("/", "speedup_with_planning", sum_dense / (sum_sparse + sum_plan));
  out.attr("/", "block", block);
  if (overlaps) out.attr("/", "mean_overlap", sum_overlap / static_cast<double>(overlaps));
  out.commit();
  for (const auto& [layer, mean] : layer_overlap)
    spdlog::info("{}: the exact best blocks overlap the step before's by {:.3f} on average (Jaccard)", layer.empty() ? "layer" : layer.substr(1), mean);
  if (nk::log::chatty()) {
    std::fprintf(to, "# %s: mean output error %.4e, mean mass recall %.4f, dense %.3f s, sparse %.3f s + planning %.3f s = %.2fx\n",
                 policy.c_str(), sum_error / n, sum_recall / n, sum_dense, sum_sparse, sum_plan, sum_dense / (sum_sparse + sum_plan));
  }
}

}  // namespace dllm
