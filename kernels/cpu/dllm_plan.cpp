// dllm_plan.cpp - Step-dLLM's block scores, selection and the online planner.
//
// Block scores: the mean query of each query block against the mean key of
// each key block, softmax over key blocks (plus log of the block's size, for
// the ragged last block) - pooled - or the exact softmax of a few query rows
// per block summed per key block - sampled: P_h[i][j] estimates the share of
// query block i's attention mass that falls in key block j. Budget: B =
// round((1 - s) H nb^2) blocks in all; every query block keeps its own
// (diagonal) block, so no row is ever fully masked. With a global head
// budget the blocks left after the diagonals go to the largest P_h[i][j] over
// all heads together (one threshold), which maximises the estimated mass kept
// summed over heads; a uniform one gives each head B/H.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "nk/error.hpp"
#include "nk/kernels/dllm_plan.hpp"

namespace nk::dllm {

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


void check_policy(const PolicyOptions& o, bool allow_dense, const std::map<std::string, std::string>& flag) {
  auto f = [&](const std::string& key) {
    const auto it = flag.find(key);
    return it != flag.end() ? it->second : "--" + key;
  };
  const bool known = o.name == "step" || o.name == "once-uniform" || o.name == "every-uniform" || o.name == "oracle";
  if (!known && !(allow_dense && o.name == "dense"))
    throw nk::usage_error(f("policy") + " must be step, once-uniform, every-uniform, oracle" + (allow_dense ? " or dense" : ""));
  if (!(o.sparsity >= 0 && o.sparsity < 1)) throw nk::usage_error(f("sparsity") + " must be in [0, 1)");
  if (o.block < 16 || o.block > 64 || o.block % 16) throw nk::usage_error(f("block") + " must be 16, 32, 48 or 64");
  if (o.anchor_every < 1) throw nk::usage_error(f("anchor-every") + " must be >= 1");
  if (!(o.drift >= 0 && o.drift < 1)) throw nk::usage_error(f("drift") + " must be in [0, 1)");
  if (!(o.probe > 0 && o.probe <= 1)) throw nk::usage_error(f("probe") + " must be in (0, 1]");
  if (o.score != "pooled" && o.score != "sampled") throw nk::usage_error(f("score") + " must be pooled or sampled");
  if (o.samples < 1) throw nk::usage_error(f("samples") + " must be >= 1");
  if (!o.head_budget.empty() && o.head_budget != "global" && o.head_budget != "uniform")
    throw nk::usage_error(f("head-budget") + " must be global or uniform");
}

MaskPlanner::MaskPlanner(PolicyOptions o) : o_(std::move(o)) { check_policy(o_, true); }

int64_t MaskPlanner::steps(int64_t layer) const {
  const auto it = counts_.find(layer);
  return it == counts_.end() ? 0 : it->second.first;
}

int64_t MaskPlanner::anchors(int64_t layer) const {
  const auto it = counts_.find(layer);
  return it == counts_.end() ? 0 : it->second.second;
}

const BlockMask* MaskPlanner::next(int64_t layer, const Qkv& x, float scale, PlanStep* info) {
  const auto t0 = std::chrono::steady_clock::now();
  auto& count = counts_[layer];
  ++count.first;
  if (info) *info = PlanStep{};
  if (o_.name == "dense") return nullptr;
  Layer& L = layers_[layer];
  if (L.step == 0 || x.heads != L.heads || x.length != L.length) {
    L = Layer{};
    L.heads = x.heads, L.length = x.length, L.nb = block_count(x.length, o_.block);
    // The query blocks probed between anchors: evenly spread, fixed for the trajectory.
    const int64_t count_rows = std::max<int64_t>(1, static_cast<int64_t>(std::llround(o_.probe * static_cast<double>(L.nb))));
    for (int64_t r = 0; r < count_rows; ++r) L.probe_rows.push_back((2 * r + 1) * L.nb / (2 * count_rows));
  }
  const int64_t budget = total_budget(L.heads, L.nb, o_.sparsity);
  auto probe_scores = [&] {
    return o_.score == "pooled" ? pooled_scores(x, o_.block, scale, &L.probe_rows)
                                : sampled_scores(x, o_.block, scale, kProbeSamples, &L.probe_rows);
  };
  bool anchor = L.step == 0 || o_.name == "every-uniform" || o_.name == "oracle";
  if (o_.name == "step" && L.step > 0) {
    // Between anchors the probe - a few sampled rows of a few query blocks (or
    // their pooled scores) - asks whether the estimated mass the mask keeps on
    // them has fallen since the anchor.
    anchor = L.since_anchor >= o_.anchor_every;
    if (!anchor && o_.drift > 0) anchor = kept_share(probe_scores(), L.current, L.probe_rows) < L.anchor_share - o_.drift;
  }
  if (anchor) {
    const std::vector<float> p = o_.name == "oracle"    ? exact_block_mass(x, o_.block, scale)
                                 : o_.score == "pooled" ? pooled_scores(x, o_.block, scale, nullptr)
                                                        : sampled_scores(x, o_.block, scale, o_.samples, nullptr);
    L.current = select_blocks(p, L.heads, L.nb, o_.block, budget, o_.global());
    if (o_.name == "step" && o_.drift > 0) L.anchor_share = kept_share(probe_scores(), L.current, L.probe_rows);
    L.since_anchor = 0;
    ++count.second;
    if (info) {
      info->anchor = true;
      for (int64_t h = 0; h < L.heads; ++h) {
        int64_t kept = 0;
        for (int64_t e = h * L.nb * L.nb; e < (h + 1) * L.nb * L.nb; ++e) kept += L.current.keep[static_cast<size_t>(e)];
        info->budget.push_back(kept);
        info->concentration.push_back(normalised_entropy_complement(p, h, L.nb));
      }
    }
  }
  ++L.since_anchor;
  ++L.step;
  if (info) info->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return &L.current;
}

}  // namespace nk::dllm
