// plan.cpp - block masks along a denoising trajectory.
//
// Block scores: the mean query of each query block against the mean key of
// each key block, softmax over key blocks (plus log of the block's size, for
// the ragged last block): P_h[i][j] estimates the share of query block i's
// attention mass that falls in key block j. Budget: B = round((1 - s) H nb^2)
// blocks in all; every query block keeps its own (diagonal) block, so no row
// is ever fully masked. Policies:
//   step          re-score at anchor steps, reuse in between; the budget left
//                 after the diagonals goes to the largest P_h[i][j] over all
//                 heads together (one global threshold), which maximises the
//                 estimated mass kept, summed over heads;
//   once-uniform  score step 0 only, B/H blocks per head (SparseD-style);
//   every-uniform re-score every step, B/H blocks per head;
//   oracle        the exact block masses of every step (from dense attention),
//                 global threshold.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "dllm-sparse/dllm_io.hpp"
#include "dllm-sparse/dllm_plan.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace dllm {

std::vector<float> pooled_scores(const Qkv& x, int64_t block, double scale, const std::vector<int64_t>* rows) {
  const int64_t nb = block_count(x.length, block), d = x.dims;
  std::vector<float> qp(static_cast<size_t>(x.heads * nb * d), 0.0f), kp(static_cast<size_t>(x.kv_heads * nb * d), 0.0f);
  auto pool = [&](const float* src, int64_t heads, std::vector<float>& dst) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t r0 = b * block, n = std::min(block, x.length - r0);
        float* o = dst.data() + (h * nb + b) * d;
        for (int64_t r = 0; r < n; ++r) {
          const float* row = src + (h * x.length + r0 + r) * d;
          for (int64_t c = 0; c < d; ++c) o[c] += row[c];
        }
        for (int64_t c = 0; c < d; ++c) o[c] /= static_cast<float>(n);
      }
    }
  };
  pool(x.q.data(), x.heads, qp);
  pool(x.k.data(), x.kv_heads, kp);
  std::vector<float> p(static_cast<size_t>(x.heads * nb * nb), 0.0f);
  std::vector<int64_t> all;
  if (!rows) {
    all.resize(static_cast<size_t>(nb));
    std::iota(all.begin(), all.end(), 0);
    rows = &all;
  }
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < x.heads; ++h) {
    const int64_t g = x.kv_of[h];
    std::vector<double> s(static_cast<size_t>(nb));
    for (int64_t i : *rows) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < nb; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(qp[(h * nb + i) * d + c]) * kp[(g * nb + j) * d + c];
        s[j] = dot * scale + std::log(static_cast<double>(std::min(block, x.length - j * block)));
        mx = std::max(mx, s[j]);
      }
      double total = 0;
      for (double& v : s) total += (v = std::exp(v - mx));
      for (int64_t j = 0; j < nb; ++j) p[(h * nb + i) * nb + j] = static_cast<float>(s[j] / total);
    }
  }
  return p;
}

std::vector<float> sampled_scores(const Qkv& x, int64_t block, double scale, int64_t samples, const std::vector<int64_t>* rows) {
  const int64_t nb = block_count(x.length, block), d = x.dims, L = x.length;
  std::vector<int64_t> all;
  if (!rows) {
    all.resize(static_cast<size_t>(nb));
    std::iota(all.begin(), all.end(), 0);
    rows = &all;
  }
  // The sampled query rows of every head, run through the fused dense kernel
  // with per-block masses: m evenly spaced rows of each chosen query block.
  Qkv sub;
  sub.heads = x.heads, sub.kv_heads = x.kv_heads, sub.length = L, sub.dims = d, sub.kv_of = x.kv_of;
  std::vector<std::pair<int64_t, int64_t>> picks;  // (query block, row)
  for (int64_t i : *rows) {
    const int64_t r0 = i * block, n = std::min(block, L - r0), m = std::min(samples, n);
    for (int64_t k = 0; k < m; ++k) picks.emplace_back(i, r0 + (2 * k + 1) * n / (2 * m));
  }
  sub.q_length = static_cast<int64_t>(picks.size());
  sub.q.resize(static_cast<size_t>(x.heads * sub.q_length * d));
  for (int64_t h = 0; h < x.heads; ++h) {
    for (int64_t r = 0; r < sub.q_length; ++r) std::copy_n(x.q_row(h, picks[static_cast<size_t>(r)].second), d, sub.q.data() + (h * sub.q_length + r) * d);
  }
  sub.k_shared = x.k_data(), sub.v_shared = x.v_data();
  std::vector<float> mass(static_cast<size_t>(x.heads * sub.q_length * nb));
  attention(sub, nullptr, block, static_cast<float>(scale), nullptr, mass.data());  // masses only, no P V
  std::vector<float> p(static_cast<size_t>(x.heads * nb * nb), 0.0f);
  std::vector<int64_t> per_block(static_cast<size_t>(nb), 0);
  for (const auto& pick : picks) ++per_block[static_cast<size_t>(pick.first)];
  for (int64_t h = 0; h < x.heads; ++h) {
    for (int64_t r = 0; r < sub.q_length; ++r) {
      const int64_t i = picks[static_cast<size_t>(r)].first;
      const float w = 1.0f / static_cast<float>(per_block[static_cast<size_t>(i)]);
      for (int64_t j = 0; j < nb; ++j) p[(h * nb + i) * nb + j] += w * mass[(h * sub.q_length + r) * nb + j];
    }
  }
  return p;
}

int64_t total_budget(int64_t heads, int64_t nb, double sparsity) {
  const int64_t total = static_cast<int64_t>(std::llround((1.0 - sparsity) * static_cast<double>(heads * nb * nb)));
  if (total < heads * nb) {
    throw nk::usage_error("--sparsity " + std::to_string(sparsity) + " keeps " + std::to_string(total) +
                          " blocks, fewer than the " + std::to_string(heads * nb) +
                          " diagonal blocks every query block keeps (at most " +
                          std::to_string(1.0 - 1.0 / static_cast<double>(nb)) + " for this grid)");
  }
  return total;
}

BlockMask select_blocks(const std::vector<float>& score, int64_t heads, int64_t nb, int64_t block, int64_t budget, bool global) {
  BlockMask mask;
  mask.heads = heads, mask.blocks = nb, mask.block = block;
  mask.keep.assign(static_cast<size_t>(heads * nb * nb), 0);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < nb; ++i) mask.at(h, i, i) = 1;
  }
  auto by_score = [&](int64_t a, int64_t b) { return score[a] != score[b] ? score[a] > score[b] : a < b; };
  auto take = [&](std::vector<int64_t>& cand, int64_t count) {
    count = std::min<int64_t>(count, static_cast<int64_t>(cand.size()));
    if (count <= 0) return;
    std::nth_element(cand.begin(), cand.begin() + (count - 1), cand.end(), by_score);
    for (int64_t c = 0; c < count; ++c) mask.keep[static_cast<size_t>(cand[c])] = 1;
  };
  const int64_t extra = budget - heads * nb;
  if (global) {
    std::vector<int64_t> cand;
    cand.reserve(static_cast<size_t>(heads * nb * nb));
    for (int64_t e = 0; e < heads * nb * nb; ++e) {
      if ((e / nb) % nb != e % nb) cand.push_back(e);
    }
    take(cand, extra);
  } else {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t share = extra / heads + (h < extra % heads ? 1 : 0);
      std::vector<int64_t> cand;
      for (int64_t e = h * nb * nb; e < (h + 1) * nb * nb; ++e) {
        if ((e / nb) % nb != e % nb) cand.push_back(e);
      }
      take(cand, share);
    }
  }
  return mask;
}

double normalised_entropy_complement(const std::vector<float>& p, int64_t h, int64_t nb) {
  if (nb < 2) return 1.0;
  double mean_entropy = 0;
  for (int64_t i = 0; i < nb; ++i) {
    double e = 0;
    for (int64_t j = 0; j < nb; ++j) {
      const double v = p[(h * nb + i) * nb + j];
      if (v > 0) e -= v * std::log(v);
    }
    mean_entropy += e / static_cast<double>(nb);
  }
  return 1.0 - mean_entropy / std::log(static_cast<double>(nb));
}

std::vector<float> exact_block_mass(const Qkv& x, int64_t block, float scale) {
  const int64_t nb = block_count(x.length, block);
  std::vector<float> out(static_cast<size_t>(x.heads * x.length * x.dims));
  std::vector<float> mass(static_cast<size_t>(x.heads * x.length * nb));
  attention(x, nullptr, block, scale, out.data(), mass.data());
  std::vector<float> p(static_cast<size_t>(x.heads * nb * nb), 0.0f);
  for (int64_t h = 0; h < x.heads; ++h) {
    for (int64_t r = 0; r < x.length; ++r) {
      const int64_t i = r / block, rows = std::min(block, x.length - i * block);
      for (int64_t j = 0; j < nb; ++j) p[(h * nb + i) * nb + j] += mass[(h * x.length + r) * nb + j] / static_cast<float>(rows);
    }
  }
  return p;
}

namespace {

constexpr int64_t kProbeSamples = 4;  // rows per probed query block

/// Estimated mass kept by 'mask' on the given query-block rows of P (mean over rows and heads).
double kept_share(const std::vector<float>& p, const BlockMask& mask, const std::vector<int64_t>& rows) {
  double kept = 0;
  for (int64_t h = 0; h < mask.heads; ++h) {
    for (int64_t i : rows) {
      for (int64_t j = 0; j < mask.blocks; ++j) {
        if (mask.at(h, i, j)) kept += p[(h * mask.blocks + i) * mask.blocks + j];
      }
    }
  }
  return kept / static_cast<double>(mask.heads * static_cast<int64_t>(rows.size()));
}

}  // namespace

void plan(const PlanOptions& o) {
  if (o.policy != "step" && o.policy != "once-uniform" && o.policy != "every-uniform" && o.policy != "oracle") {
    throw nk::usage_error("--policy must be step, once-uniform, every-uniform or oracle");
  }
  if (!(o.sparsity >= 0 && o.sparsity < 1)) throw nk::usage_error("--sparsity must be in [0, 1)");
  if (o.block < 16 || o.block > 64 || o.block % 16) throw nk::usage_error("--block must be 16, 32, 48 or 64");
  if (o.anchor_every < 1) throw nk::usage_error("--anchor-every must be >= 1");
  if (o.drift < 0 || o.drift >= 1) throw nk::usage_error("--drift must be in [0, 1)");
  if (!(o.probe > 0 && o.probe <= 1)) throw nk::usage_error("--probe must be in (0, 1]");
  if (o.score != "pooled" && o.score != "sampled") throw nk::usage_error("--score must be pooled or sampled");
  if (o.samples < 1) throw nk::usage_error("--samples must be >= 1");
  const nk::h5::File file = nk::h5::File::open(o.input);
  if (file.attr_string("/", "nk_schema")) file.require_schema("dllm-sparse.trajectory/");
  const std::vector<StepRef> steps = trajectory_steps(file);
  nk::h5::Writer out(o.output, kPlanSchema, o.no_clobber);
  nk::Progress progress("plan", static_cast<int64_t>(steps.size()));
  int64_t done = 0;
  double total_seconds = 0;
  int64_t total_anchors = 0;
  std::string layer_now = "\x01";
  // Per layer state.
  BlockMask current;
  std::vector<uint8_t> masks;
  std::vector<int64_t> mask_of_step, anchor_steps, budgets;
  std::vector<double> concentration, plan_seconds, anchor_share;
  int64_t heads = 0, nb = 0, step_index = 0, since_anchor = 0;
  std::vector<int64_t> probe_rows;
  auto probe_scores = [&](const Qkv& x, float scale) {
    return o.score == "pooled" ? pooled_scores(x, o.block, scale, &probe_rows)
                               : sampled_scores(x, o.block, scale, kProbeSamples, &probe_rows);
  };
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
      masks.clear(), mask_of_step.clear(), anchor_steps.clear(), budgets.clear(), concentration.clear(), plan_seconds.clear();
      anchor_share.clear();
      step_index = 0, since_anchor = 0;
    }
    const Qkv x = read_qkv(file, ref.group);
    const float scale = static_cast<float>(o.scale > 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(x.dims)));
    if (step_index == 0) {
      heads = x.heads, nb = block_count(x.length, o.block);
      // The query blocks probed between anchors: evenly spread, fixed for the layer.
      probe_rows.clear();
      const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(std::llround(o.probe * static_cast<double>(nb))));
      for (int64_t r = 0; r < count; ++r) probe_rows.push_back((2 * r + 1) * nb / (2 * count));
    } else if (x.heads != heads || block_count(x.length, o.block) != nb) {
      throw nk::input_error(file.path(), ref.group + "/q", "shape differs from the first step of its layer");
    }
    const int64_t budget = total_budget(heads, nb, o.sparsity);
    const nk::Stopwatch watch;
    bool anchor = step_index == 0;
    if (o.policy == "every-uniform" || o.policy == "oracle") anchor = true;
    if (o.policy == "step" && step_index > 0) {
      if (o.drift > 0) {
        // Probe a fixed few query blocks: has the estimated mass kept on them fallen since the anchor?
        // The probe: a few sampled rows of a few query blocks (or pooled scores), compared with
        // the same estimate at the anchor.
        const std::vector<float> probe = probe_scores(x, scale);
        anchor = kept_share(probe, current, probe_rows) < anchor_share.back() - o.drift || since_anchor >= o.anchor_every;
      } else {
        anchor = since_anchor >= o.anchor_every;
      }
    }
    if (anchor) {
      std::vector<float> p = o.policy == "oracle"   ? exact_block_mass(x, o.block, scale)
                             : o.score == "pooled" ? pooled_scores(x, o.block, scale, nullptr)
                                                   : sampled_scores(x, o.block, scale, o.samples, nullptr);
      current = select_blocks(p, heads, nb, o.block, budget, o.policy == "step" || o.policy == "oracle");
      std::vector<int64_t> all(static_cast<size_t>(nb));
      std::iota(all.begin(), all.end(), 0);
      anchor_share.push_back(kept_share(probe_scores(x, scale), current, probe_rows));
      masks.insert(masks.end(), current.keep.begin(), current.keep.end());
      anchor_steps.push_back(step_index);
      for (int64_t h = 0; h < heads; ++h) {
        int64_t kept = 0;
        for (int64_t e = h * nb * nb; e < (h + 1) * nb * nb; ++e) kept += current.keep[static_cast<size_t>(e)];
        budgets.push_back(kept);
        concentration.push_back(normalised_entropy_complement(p, h, nb));
      }
      since_anchor = 0;
    }
    ++since_anchor;
    plan_seconds.push_back(watch.seconds());
    total_seconds += plan_seconds.back();
    mask_of_step.push_back(static_cast<int64_t>(anchor_steps.size()) - 1);
    ++step_index;
    progress.update(++done);
  }
  flush_layer();
  progress.finish();
  out.attr("/", "policy", o.policy);
  out.attr("/", "block", o.block);
  out.attr("/", "sparsity", o.sparsity);
  out.attr("/", "anchor_every", o.anchor_every);
  out.attr("/", "drift", o.drift);
  out.attr("/", "plan_seconds", total_seconds);
  out.commit();
  spdlog::info("{}: {} step(s), {} anchor(s), sparsity {}, {:.3f} s of planning", o.policy, steps.size(), total_anchors, o.sparsity,
               total_seconds);
}

}  // namespace dllm
