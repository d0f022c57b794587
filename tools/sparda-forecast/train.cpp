// train.cpp - fitting the Forecast projections, one target layer at a time,
// backbone frozen (the trace is fixed). Initialisation (--init lstsq): the
// ridge regression of the group-mean pre-RoPE query of the target layer on
// the source layer's attention input; then Adam on the KL from the
// selector's block distribution (the group mean of p_h) to softmax(z) over
// the complete blocks before each sampled query (--kl full), or over the
// selector's chosen blocks plus one rest bucket (--kl topk). The problem is
// convex in W (z is linear in W, the KL convex in z).
#include <Eigen/Dense>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "nk/error.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/h5.hpp"
#include "nk/lm/layers.hpp"
#include "nk/log.hpp"
#include "nk/nn/optim.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "sparda-forecast/forecast.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

namespace {

struct Position {
  int64_t s, t;  ///< sequence, position in it
};

/// Queries with at least two complete blocks before them (one block's KL is 0).
std::vector<Position> eligible(const Trace& trace, int64_t block) {
  std::vector<Position> out;
  for (int64_t s = 0; s < trace.sequences(); ++s)
    for (int64_t t = 2 * block; t < trace.length(s); ++t) out.push_back({s, t});
  return out;
}

/// Rows of h for the given positions, and their positions as int32.
void gather(const Trace& trace, const Target& tg, const std::vector<Position>& at, std::vector<float>& rows,
            std::vector<int32_t>& pos) {
  const int64_t D = trace.d_model;
  rows.resize(at.size() * static_cast<size_t>(D));
  pos.resize(at.size());
  for (size_t r = 0; r < at.size(); ++r) {
    std::copy_n(tg.h.begin() + (trace.offsets[at[r].s] + at[r].t) * D, D, rows.begin() + static_cast<ptrdiff_t>(r) * D);
    pos[r] = static_cast<int32_t>(at[r].t);
  }
}

Matrix lstsq_init(const Trace& trace, const Target& tg, const std::vector<Position>& all) {
  const int64_t D = trace.d_model, Hq = trace.heads, Hkv = trace.kv_heads, G = trace.group(), d = trace.head_dim;
  std::vector<Position> at;
  const size_t cap = 16384, stride = std::max<size_t>(1, all.size() / cap);
  for (size_t i = 0; i < all.size(); i += stride) at.push_back(all[i]);
  std::vector<float> rows;
  std::vector<int32_t> pos;
  gather(trace, tg, at, rows, pos);
  const int64_t n = static_cast<int64_t>(at.size());
  Matrix u = Matrix::Zero(n, Hkv * d);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t T = trace.length(at[r].s);
      const float* q = tg.q.data() + (Hq * trace.offsets[at[r].s] + h * T + at[r].t) * d;
      for (int64_t i = 0; i < d; ++i) u(r, (h / G) * d + i) += q[i] / static_cast<double>(G);
    }
  nk::lm::rope(u.data(), pos.data(), n, Hkv, d, trace.rope_theta, true);
  const Matrix x =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(rows.data(), n, D)
          .cast<double>();
  Matrix gram = x.transpose() * x;
  const double ridge = 1e-6 * gram.trace() / static_cast<double>(D) + 1e-12;
  gram.diagonal().array() += ridge;
  return gram.ldlt().solve(x.transpose() * u);
}

}  // namespace

void train(const TrainOptions& o, const nk::RunEnv& env) {
  const Trace trace = Trace::open(o.input);
  // --model: the output is that model with its Forecast (under /forecast), not a forecast file.
  std::optional<nk::lm::Checkpoint> model;
  std::unique_ptr<nk::h5::Writer> file;
  if (!o.model.empty()) {
    model = nk::lm::load_checkpoint(o.model);
    const nk::lm::Config& c = model->weights.config();
    if (c.mla() || c.n_layers != trace.layers || c.n_kv_heads != trace.kv_heads || c.head_dim != trace.head_dim ||
        c.d_model != trace.d_model || c.n_heads != trace.heads)
      throw nk::usage_error("train --model: " + o.model + " is not the model of the trace (its layers, heads or widths differ)");
    if (c.rope_theta != trace.rope_theta)
      throw nk::usage_error("train --model: " + o.model + "'s rope_theta differs from the trace's");
    if (o.no_clobber && o.output != "-" && std::filesystem::exists(o.output))
      throw nk::io_error(o.output, "exists (--no-clobber)");
  } else {
    file = std::make_unique<nk::h5::Writer>(o.output, kForecastSchema, o.no_clobber);
  }
  require_selector(trace, o.selector);
  const std::vector<Position> all = eligible(trace, o.selector.block);
  if (all.empty())
    throw nk::input_error(trace.path(), Trace::name(0, "q"),
                          "T = " + std::to_string(trace.longest()) + " has no query with two complete blocks of " +
                              std::to_string(o.selector.block) + " before its own: nothing to train on");
  const int64_t L = trace.layers, D = trace.d_model, Hq = trace.heads, Hkv = trace.kv_heads, d = trace.head_dim;
  const nk::lm::BlockSelectorConfig sel = o.selector;
  const bool topk = o.kl == "topk";
  const int64_t n = std::min<int64_t>(o.queries, static_cast<int64_t>(all.size()));
  Forecast fc;
  fc.layers = L, fc.kv_heads = Hkv, fc.head_dim = d, fc.d_model = D;
  nk::Progress progress("train", L * o.steps);
  const nk::Rng root(env.seed);
  for (int64_t m = 0; m < L; ++m) {
    const Target tg = load_target(trace, m, sel.block);
    Matrix w = o.init == "lstsq" ? lstsq_init(trace, tg, all) : Matrix::Zero(D, Hkv * d);
    nk::Adam adam(w.size(), nk::AdamConfig{o.lr});
    Eigen::VectorXd params = Eigen::Map<const Eigen::VectorXd>(w.data(), w.size());
    std::vector<double> curve;
    nk::Rng rng = root.split(static_cast<uint64_t>(m));
    std::vector<Position> at(static_cast<size_t>(n));
    std::vector<float> rows;
    std::vector<int32_t> pos;
    for (int64_t step = 0; step < o.steps; ++step) {
      for (auto& p : at) p = all[rng.below(all.size())];
      gather(trace, tg, at, rows, pos);
      const Matrix f = forecast_queries(Matrix(Eigen::Map<const Matrix>(params.data(), D, Hkv * d)), rows.data(),
                                        pos.data(), n, Hkv, d, trace.rope_theta);
      Matrix df = Matrix::Zero(n, Hkv * d);
      double loss = 0;
      const double scale = 1.0 / std::sqrt(static_cast<double>(d));
#pragma omp parallel reduction(+ : loss)
      {
        const int64_t most = tg.first_block.size() > 1 ? trace.longest() / sel.block : 0;
        std::vector<double> p(static_cast<size_t>(most)), z(p.size()), dz(p.size()), scratch(p.size());
        std::vector<int32_t> chosen(static_cast<size_t>(sel.width()));
        std::vector<char> in(p.size());
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n; ++r) {
          const int64_t s = at[static_cast<size_t>(r)].s, t = at[static_cast<size_t>(r)].t, nc = sel.candidates(t);
          const int64_t T = trace.length(s), nb = tg.blocks(s);
          const float* pooled_s = tg.pooled.data() + Hkv * tg.first_block[s] * d;
          for (int64_t g = 0; g < Hkv; ++g) {
            const float* pooled = pooled_s + g * nb * d;
            nk::lm::group_scores(sel, tg.q.data() + Hq * trace.offsets[s] * d, Hq, T, t, pooled_s, Hkv, nb, d, g,
                                 p.data(), scratch.data());
            for (int64_t j = 0; j < nc; ++j) p[j] /= static_cast<double>(trace.group());
            for (int64_t j = 0; j < nc; ++j) {
              double dot = 0;
              for (int64_t i = 0; i < d; ++i) dot += f(r, g * d + i) * pooled[j * d + i];
              z[j] = dot * scale;
            }
            if (topk) {
              nk::lm::select_blocks(sel, t, p.data(), chosen.data());
              std::fill(in.begin(), in.begin() + nc, 0);
              for (int32_t j : chosen)
                if (j >= 0 && j < nc) in[j] = 1;
              loss += kl_topk(p.data(), z.data(), nc, in.data(), dz.data());
            } else {
              loss += kl_full(p.data(), z.data(), nc, dz.data());
            }
            for (int64_t j = 0; j < nc; ++j)
              for (int64_t i = 0; i < d; ++i) df(r, g * d + i) += dz[j] * scale * pooled[j * d + i];
          }
        }
      }
      // Back through RoPE (its transpose is the inverse turn), then the linear map.
      nk::lm::rope(df.data(), pos.data(), n, Hkv, d, trace.rope_theta, true);
      const Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> x(rows.data(), n,
                                                                                                      D);
      const Matrix grad = x.cast<double>().transpose() * df / static_cast<double>(n * Hkv);
      curve.push_back(loss / static_cast<double>(n * Hkv));
      adam.set_learning_rate(nk::cosine_rate(o.lr, static_cast<double>(step) / static_cast<double>(o.steps), 0.1));
      adam.step(params, Eigen::Map<const Eigen::VectorXd>(grad.data(), grad.size()));
      progress.update(m * o.steps + step + 1);
    }
    w = Eigen::Map<const Matrix>(params.data(), D, Hkv * d);
    fc.w.push_back(std::move(w));
    fc.loss.push_back(std::move(curve));
  }
  progress.finish();
  // Reported once every layer is read: a bad layer fails the run with its one error line.
  for (int64_t m = 0; m < L && o.steps > 0; ++m)
    spdlog::info("layer {}: KL {:.4f} -> {:.4f} over {} steps", m, fc.loss[m].front(), fc.loss[m].back(), o.steps);
  const auto write = [&](nk::h5::Writer& out, const std::string& prefix) {
    fc.write(out, prefix);
    const std::string group = prefix.empty() ? "/" : prefix;
    out.attr(group, "rope_theta", trace.rope_theta);
    out.attr(group, "block", sel.block);
    out.attr(group, "kl", o.kl);
    out.attr(group, "init", o.init);
    out.attr(group, "steps", o.steps);
    out.attr(group, "lr", o.lr);
  };
  if (model) {
    const bool bf16 = nk::h5::File::open(o.model).attr_string("/", "weights").value_or("float32") == "bfloat16";
    nk::lm::save_checkpoint(o.output, model->weights, model->tokenizer ? &*model->tokenizer : nullptr, nullptr,
                            bf16 ? nk::lm::StoreAs::bf16 : nk::lm::StoreAs::f32,
                            [&](nk::h5::Writer& out) { write(out, Forecast::kEmbedded); });
    return;
  }
  write(*file, "");
  file->commit();
}

}  // namespace sparda
