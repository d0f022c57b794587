// spe.cpp - Stage 1 of Spike-SFT: selective parameter enhancement (SPE) and
// its baselines (full fine-tuning, random and large-magnitude masks, LoRA).
//
// A masked method keeps, per weight layer, a sorted list of trainable
// entries and, for those entries only, the gradient and Adam's two moments
// (float32): trainable state is 16 bytes per masked entry (index included)
// against 12 bytes per parameter for full fine-tuning. Masked gradients are
// computed entry by entry from BPTT's per-layer factors, dL/dW_ij =
// gv[:, i] . x[:, j] (a sampled matrix product), so the dense gradient is
// never formed. Entries outside the mask never move: they have no gradient,
// no moments and no decay.
#include <spdlog/spdlog.h>

#include <Eigen/Eigenvalues>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/optim.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "spike-sft/base_currents.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

namespace {

/// The trainable entries of one weight layer and their state.
struct MaskedLayer {
  std::vector<int32_t> index;  ///< sorted flat indices into W (row-major)
  std::vector<float> grad, m, v;
  int64_t bytes() const { return static_cast<int64_t>(index.size()) * 16; }
};

/// k entries of w chosen by method: the smallest |w| (spe), the largest
/// (large) or uniformly at random (random); sorted.
std::vector<int32_t> select(const snn::Matrix& w, int64_t k, const std::string& method, nk::Rng& rng) {
  const int64_t n = w.size();
  std::vector<int32_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  if (method == "random") {
    nk::shuffle_prefix(all, static_cast<size_t>(k), rng);
  } else {
    const float* data = w.data();
    const bool small = method == "spe";
    std::nth_element(all.begin(), all.begin() + (k - 1), all.end(), [&](int32_t a, int32_t b) {
      const float x = std::abs(data[a]), y = std::abs(data[b]);
      return small ? (x < y || (x == y && a < b)) : (x > y || (x == y && a < b));
    });
  }
  all.resize(static_cast<size_t>(k));
  std::sort(all.begin(), all.end());
  return all;
}

/// A new mask; entries that stay keep their moments, new ones start at zero.
void reselect(MaskedLayer& layer, std::vector<int32_t> index) {
  std::vector<float> m(index.size(), 0.0f), v(index.size(), 0.0f);
  size_t old = 0;
  for (size_t e = 0; e < index.size(); ++e) {
    while (old < layer.index.size() && layer.index[old] < index[e]) ++old;
    if (old < layer.index.size() && layer.index[old] == index[e]) m[e] = layer.m[old], v[e] = layer.v[old];
  }
  layer.index = std::move(index);
  layer.m = std::move(m);
  layer.v = std::move(v);
  layer.grad.assign(layer.index.size(), 0.0f);
}

}  // namespace

void shrink_singular_values(snn::Matrix& w, const snn::Matrix& base, const std::vector<int32_t>& index, double rho) {
  // D = Delta (rows <= cols) or Delta^T, column-major: side x lines, so that
  // both the Gram matrix D D^T and the masked entries' dot products read
  // contiguous columns.
  const int64_t rows = w.rows(), cols = w.cols();
  const bool by_rows = rows <= cols;
  Eigen::MatrixXf d;
  if (by_rows)
    d = w - base;
  else
    d = (w - base).transpose();
  if (index.empty() || d.isZero(0.0f)) return;
  // The Gram matrix of the shorter side, D D^T = U S^2 U^T, in float: the
  // step is a regulariser, and float's relative error (1e-7 of the largest
  // eigenvalue) is far below the singular values it keeps (> rho s_max).
  Eigen::MatrixXf gram(d.rows(), d.rows());
  gram.setZero();
  gram.selfadjointView<Eigen::Lower>().rankUpdate(d);  // the solver reads the lower triangle
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXf> eigen(gram);
  if (eigen.info() != Eigen::Success) throw nk::Error(nk::Exit::runtime, "the low-rank step's eigensolver did not converge");
  const Eigen::VectorXf s = eigen.eigenvalues().cwiseMax(0.0f).cwiseSqrt();
  const double tau = rho * static_cast<double>(s.maxCoeff());
  if (!(tau > 0)) return;
  // SVT(Delta) = U diag(max(s - tau, 0)) V^T = P D with the symmetric
  // P = U diag(f) U^T, f = max(1 - tau / s, 0); only the masked entries are
  // computed and written back, each a dot product of a column of P with a
  // column of D.
  Eigen::VectorXf f(s.size());
  for (Eigen::Index k = 0; k < s.size(); ++k) f[k] = static_cast<double>(s[k]) > tau ? static_cast<float>(1.0 - tau / static_cast<double>(s[k])) : 0.0f;
  const Eigen::MatrixXf& basis = eigen.eigenvectors();
  const Eigen::MatrixXf p = basis * f.asDiagonal() * basis.transpose();
#pragma omp parallel for schedule(static)
  for (size_t e = 0; e < index.size(); ++e) {
    const int64_t i = index[e] / cols, j = index[e] % cols;
    const int64_t a = by_rows ? i : j, line = by_rows ? j : i;
    w(i, j) = base(i, j) + p.col(a).dot(d.col(line));
  }
}

void spe(const SpeOptions& o, const nk::RunEnv& env) {
  if (!(o.fraction > 0 && o.fraction < 1)) throw nk::usage_error("--fraction must lie in (0, 1)");
  const snn::Network base = read_model(o.input);
  const Task task = read_task(o.task);
  const snn::Config& c = base.config;
  if (task.train.x.cols() != c.sizes.front() || task.test.x.cols() != c.sizes.front()) {
    throw nk::input_error(o.task, "/tasks/" + task.name + "/train/images",
                          "examples have " + std::to_string(task.train.x.cols()) + " values, the base model takes " + std::to_string(c.sizes.front()));
  }
  if (std::max(task.train.classes, task.test.classes) > c.sizes.back()) {
    throw nk::input_error(o.task, "/tasks/" + task.name + "/train/labels", "has more classes than the base model's " + std::to_string(c.sizes.back()));
  }
  if (task.train.size() < o.batch) throw nk::usage_error("--batch is larger than the task's " + std::to_string(task.train.size()) + " training examples");
  nk::h5::Writer out(o.output, kAdaptedSchema, o.no_clobber);
  nk::Rng rng(env.seed);
  snn::Network net = base;
  const bool full = o.method == "full";
  const int64_t layers = c.layers();
  nk::AdamConfig adam_config;
  adam_config.learning_rate = o.learning_rate > 0 ? o.learning_rate : full ? 1e-3 : 1e-2;  // LoRA's factors also take 1e-2
  nk::Adam adam(0, adam_config);  // the moments live beside the trainable entries
  // Trainable state.
  std::vector<MaskedLayer> masked(static_cast<size_t>(layers));
  std::optional<snn::DenseGradient> dense;  // full fine-tuning only: masks never hold a dense gradient
  if (o.method == "full") dense.emplace(net);
  std::vector<std::vector<float>> mw, vw, mb, vb;
  // LoRA: W = W_base + U V^T with U [out, r] (zero at the start) and V [in, r].
  const bool lora = o.method == "lora";
  std::vector<Eigen::MatrixXf> lu, lv, glu, glv;
  std::vector<std::vector<float>> mu, vu, mv, vv;
  int64_t trainable = 0, state_bytes = 0;
  int64_t index_bytes = 0;  // masks: the sorted entry list (4 bytes an entry); the rest is 4 gradient + 8 moment bytes per trainable value
  for (int64_t l = 0; l < layers; ++l) {
    const snn::Matrix& w = net.weight[static_cast<size_t>(l)];
    if (full) {
      mw.emplace_back(static_cast<size_t>(w.size()), 0.0f);
      vw.emplace_back(static_cast<size_t>(w.size()), 0.0f);
      mb.emplace_back(static_cast<size_t>(w.rows()), 0.0f);
      vb.emplace_back(static_cast<size_t>(w.rows()), 0.0f);
      trainable += w.size() + w.rows();
      state_bytes += (w.size() + w.rows()) * 12;
    } else if (lora) {
      // The rank whose factors hold about as many parameters as the mask would.
      const int64_t rank = std::max<int64_t>(1, std::llround(o.fraction * static_cast<double>(w.size()) / static_cast<double>(w.rows() + w.cols())));
      lu.push_back(Eigen::MatrixXf::Zero(w.rows(), rank));
      Eigen::MatrixXf v(w.cols(), rank);
      const double sd = 1.0 / std::sqrt(static_cast<double>(w.cols()));
      for (int64_t e = 0; e < v.size(); ++e) v.data()[e] = static_cast<float>(sd * rng.normal());
      lv.push_back(std::move(v));
      glu.emplace_back(w.rows(), rank);
      glv.emplace_back(w.cols(), rank);
      mu.emplace_back(static_cast<size_t>(w.rows() * rank), 0.0f);
      vu.emplace_back(static_cast<size_t>(w.rows() * rank), 0.0f);
      mv.emplace_back(static_cast<size_t>(w.cols() * rank), 0.0f);
      vv.emplace_back(static_cast<size_t>(w.cols() * rank), 0.0f);
      trainable += (w.rows() + w.cols()) * rank;
      state_bytes += (w.rows() + w.cols()) * rank * 12;
    } else {
      const int64_t k = std::max<int64_t>(1, std::llround(o.fraction * static_cast<double>(w.size())));
      reselect(masked[static_cast<size_t>(l)], select(w, k, o.method, rng));
      trainable += k;
      state_bytes += masked[static_cast<size_t>(l)].bytes();
      index_bytes += k * static_cast<int64_t>(sizeof(int32_t));
    }
  }
  snn::Workspace ws(c, o.batch);
  const snn::BatchStats before = evaluate(net, task.test, 256, env.seed + 1);
  const double base_accuracy = static_cast<double>(before.correct) / static_cast<double>(task.test.size());
  spdlog::info("task {}: {} training examples; base model {:.2f}% on its test set; method {}, {} trainable entries ({:.2f}% of {})", task.name,
               task.train.size(), 100 * base_accuracy, o.method, trainable, 100.0 * static_cast<double>(trainable) / static_cast<double>(c.parameter_count()),
               c.parameter_count());
  // A method that trains a delta over the base gets the first layer's
  // currents from the frozen base's, cached per training example, plus the
  // delta's part (see base_currents.hpp); the cache is built in the first
  // epoch's time, and each batch's x^T then serves both the sparse product
  // and the first layer's masked gradient.
  const bool cache = !full && o.base_cache && BaseCurrents::applies(c) &&
                     BaseCurrents::bytes_for(c, task.train.size()) <= kBaseCacheLimit;
  if (!full && o.base_cache && !cache) spdlog::debug("no base-current cache (conv network, rate coding, or above {} bytes)", kBaseCacheLimit);
  std::optional<BaseCurrents> base_currents;
  snn::Matrix input_t, first_currents;
  // The masked gradient: dL/dW_ij = gv[:, i] . x[:, j] for the masked (i, j)
  // only (a sampled matrix product), in one of two ways. Where the layer has
  // many masked entries per row of gv and x (at least twice in + out: the
  // dense layers), gv and x are transposed into scratch (steps x examples
  // become contiguous) and each entry is one vectorised dot product, summed
  // in a fixed order whatever the thread count. Otherwise (convolutions: a
  // few masked kernel entries over many rows of positions) one pass over the
  // rows: each thread sums its rows into its own accumulators, which are
  // then added in thread order.
  snn::Matrix gv_t, x_t;
  std::vector<int64_t> out_unit, in_unit;
  std::vector<float> partial;
  int64_t scratch_bytes = 0;  // the largest transient buffer of either way
  const snn::LayerSink masked_sink = [&](int64_t l, const Eigen::Ref<const snn::Matrix>& gv, const Eigen::Ref<const snn::Matrix>& x) {
    MaskedLayer& layer = masked[static_cast<size_t>(l)];
    const int64_t cols = x.cols(), rows = gv.rows(), entries = static_cast<int64_t>(layer.index.size());
    const int32_t* index = layer.index.data();
    float* grad = layer.grad.data();
    if (entries >= 2 * (gv.cols() + x.cols())) {
      const bool given = l == 0 && base_currents;  // this batch's x^T is input_t already
      gv_t.resize(gv.cols(), gv.rows());
      if (!given) x_t.resize(x.cols(), x.rows());
      const snn::Matrix& xt = given ? input_t : x_t;
      scratch_bytes = std::max<int64_t>(scratch_bytes, static_cast<int64_t>(sizeof(float)) * (gv_t.size() + xt.size()));
      const int64_t steps = gv.rows();
#pragma omp parallel
      {
        transpose_into(gv, gv_t);
        if (!given) transpose_into(x, x_t);
#pragma omp barrier
        // A contiguous range of entries per thread: one call into the AVX2 code.
        const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
        sampled_dots(entries * t / threads, entries * (t + 1) / threads, index, cols, gv_t.data(), xt.data(), steps, grad);
      }
      return;
    }
    out_unit.resize(static_cast<size_t>(entries));
    in_unit.resize(static_cast<size_t>(entries));
    for (int64_t e = 0; e < entries; ++e) {
      out_unit[static_cast<size_t>(e)] = index[e] / cols;
      in_unit[static_cast<size_t>(e)] = index[e] % cols;
    }
    const int threads = omp_get_max_threads();
    partial.assign(static_cast<size_t>(threads * entries), 0.0f);
    scratch_bytes = std::max<int64_t>(scratch_bytes, static_cast<int64_t>(sizeof(float)) * static_cast<int64_t>(partial.size()));
#pragma omp parallel num_threads(threads)
    {
      float* sum = partial.data() + static_cast<int64_t>(omp_get_thread_num()) * entries;
      const int64_t* oi = out_unit.data();
      const int64_t* ii = in_unit.data();
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const float* g = gv.data() + r * gv.outerStride();
        const float* in = x.data() + r * x.outerStride();
        for (int64_t e = 0; e < entries; ++e) sum[e] += g[oi[e]] * in[ii[e]];
      }
    }
    for (int64_t e = 0; e < entries; ++e) {
      float total = 0.0f;
      for (int t = 0; t < threads; ++t) total += partial[static_cast<size_t>(t * entries + e)];
      grad[e] = total;
    }
  };
  // LoRA's factor gradients from the same per-layer factors:
  // dL/dU = gv^T (x V), dL/dV = x^T (gv U); the dense gradient is never formed.
  const snn::LayerSink lora_sink = [&](int64_t l, const Eigen::Ref<const snn::Matrix>& gv, const Eigen::Ref<const snn::Matrix>& x) {
    const auto L = static_cast<size_t>(l);
    const Eigen::MatrixXf xv = x * lv[L];
    const Eigen::MatrixXf gu = gv * lu[L];
    glu[L].noalias() = gv.transpose() * xv;
    glv[L].noalias() = x.transpose() * gu;
  };
  std::vector<int64_t> order(static_cast<size_t>(task.train.size()));
  std::iota(order.begin(), order.end(), 0);
  snn::Matrix x(o.batch, task.train.x.cols());
  std::vector<int64_t> labels(static_cast<size_t>(o.batch));
  const int64_t batches = task.train.size() / o.batch;
  std::vector<double> accuracy, epoch_seconds;
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    nk::shuffle(order, rng);
    nk::Progress progress("epoch " + std::to_string(epoch + 1), batches);
    const nk::Stopwatch watch;
    if (cache) {
      if (!base_currents) base_currents.emplace(base, task.train.x);
      if (!lora) base_currents->set_support(net.weight[0], base.weight[0], masked[0].index);
    }
    for (int64_t k = 0; k < batches; ++k) {
      for (int64_t r = 0; r < o.batch; ++r) {
        const int64_t i = order[static_cast<size_t>(k * o.batch + r)];
        x.row(r) = task.train.x.row(i);
        labels[static_cast<size_t>(r)] = task.train.labels[static_cast<size_t>(i)];
      }
      if (base_currents) {
        const int64_t* examples = order.data() + k * o.batch;
        first_currents.resize(o.batch, c.sizes[1]);
        if (lora) {
          base_currents->low_rank_currents(examples, x, lu[0], lv[0], first_currents);
        } else {
          input_t.resize(x.cols(), x.rows());
#pragma omp parallel
          transpose_into(x, input_t);
          base_currents->sparse_currents(examples, input_t, net.weight[0], base.weight[0], first_currents);
        }
      }
      const snn::BatchStats s = snn::forward(net, x, labels.data(), ws, &rng, base_currents ? &first_currents : nullptr);
      if (!std::isfinite(s.loss)) throw nk::Error(nk::Exit::runtime, "the loss became " + std::to_string(s.loss) + ": lower --lr");
      adam.begin_step();
      if (full) {
        dense->compute(net, labels.data(), ws);
        for (int64_t l = 0; l < layers; ++l) {
          const auto L = static_cast<size_t>(l);
          float* w = net.weight[L].data();
          float* b = net.bias[L].data();
          adam.step_entries(net.weight[L].size(), dense->weight[L].data(), mw[L].data(), vw[L].data(), [&](int64_t e) -> float& { return w[e]; });
          adam.step_entries(net.bias[L].size(), dense->bias[L].data(), mb[L].data(), vb[L].data(), [&](int64_t e) -> float& { return b[e]; });
        }
      } else if (lora) {
        snn::backward(net, labels.data(), ws, lora_sink);
        for (int64_t l = 0; l < layers; ++l) {
          const auto L = static_cast<size_t>(l);
          float* u = lu[L].data();
          float* v = lv[L].data();
          adam.step_entries(lu[L].size(), glu[L].data(), mu[L].data(), vu[L].data(), [&](int64_t e) -> float& { return u[e]; });
          adam.step_entries(lv[L].size(), glv[L].data(), mv[L].data(), vv[L].data(), [&](int64_t e) -> float& { return v[e]; });
          net.weight[L] = base.weight[L] + (lu[L] * lv[L].transpose());
        }
      } else {
        snn::backward(net, labels.data(), ws, masked_sink);
        for (int64_t l = 0; l < layers; ++l) {
          MaskedLayer& layer = masked[static_cast<size_t>(l)];
          float* w = net.weight[static_cast<size_t>(l)].data();
          const int32_t* index = layer.index.data();
          adam.step_entries(static_cast<int64_t>(layer.index.size()), layer.grad.data(), layer.m.data(), layer.v.data(),
                    [&](int64_t e) -> float& { return w[index[e]]; });
        }
      }
      progress.update(k + 1);
    }
    if (!full && !lora && o.low_rank > 0) {
      for (int64_t l = 0; l < layers; ++l) {
        shrink_singular_values(net.weight[static_cast<size_t>(l)], base.weight[static_cast<size_t>(l)], masked[static_cast<size_t>(l)].index, o.low_rank);
      }
    }
    progress.finish();
    epoch_seconds.push_back(watch.seconds());
    const snn::BatchStats t = evaluate(net, task.test, 256, env.seed + 1);
    accuracy.push_back(static_cast<double>(t.correct) / static_cast<double>(task.test.size()));
    spdlog::info("epoch {}/{}: test {:.2f}%, {:.2f} s", epoch + 1, o.epochs, 100 * accuracy.back(), epoch_seconds.back());
    // Progressive re-selection on the adapted weights.
    if (!full && !lora && o.reselect_every > 0 && (epoch + 1) % o.reselect_every == 0 && epoch + 1 < o.epochs) {
      for (int64_t l = 0; l < layers; ++l) {
        MaskedLayer& layer = masked[static_cast<size_t>(l)];
        reselect(layer, select(net.weight[static_cast<size_t>(l)], static_cast<int64_t>(layer.index.size()), o.method, rng));
      }
    }
  }
  // The adapted model: the base and its sparse delta.
  write_model(out, base, task.train.shape);
  int64_t changed = 0;
  for (int64_t l = 0; l < layers; ++l) {
    const auto L = static_cast<size_t>(l);
    std::vector<int64_t> index;
    std::vector<float> value;
    const snn::Matrix delta = net.weight[L] - base.weight[L];
    for (int64_t e = 0; e < delta.size(); ++e) {
      if (delta.data()[e] != 0.0f) index.push_back(e), value.push_back(delta.data()[e]);
    }
    changed += static_cast<int64_t>(index.size());
    const std::string group = "/delta/layer" + std::to_string(l);
    out.write(group + "/indices", index.data(), {static_cast<int64_t>(index.size())}, "entry");
    out.write(group + "/values", value.data(), {static_cast<int64_t>(value.size())}, "entry");
    if (full) {
      const snn::Vector db = net.bias[L] - base.bias[L];
      out.write(group + "/bias", db.data(), {db.size()}, "out");
    }
  }
  const auto epochs = static_cast<int64_t>(accuracy.size());
  out.write("/metrics/test_accuracy", accuracy.data(), {epochs}, "epoch");
  out.write("/metrics/epoch_seconds", epoch_seconds.data(), {epochs}, "epoch", "s");
  out.attr("/", "task", task.name);
  out.attr("/", "method", o.method);
  out.attr("/", "fraction", full ? 1.0 : o.fraction);
  out.attr("/", "base_accuracy", base_accuracy);
  out.attr("/", "test_accuracy", accuracy.empty() ? base_accuracy : accuracy.back());
  out.attr("/", "trainable_entries", trainable);
  out.attr("/", "changed_entries", changed);
  out.attr("/", "trainable_state_bytes", state_bytes);
  out.attr("/", "gradient_bytes", trainable * static_cast<int64_t>(sizeof(float)));
  out.attr("/", "optimizer_bytes", trainable * static_cast<int64_t>(2 * sizeof(float)));
  out.attr("/", "index_bytes", index_bytes);
  out.attr("/", "activation_bytes", ws.activation_bytes());
  out.attr("/", "gradient_scratch_bytes", scratch_bytes);
  out.attr("/", "base_cache_bytes", base_currents ? base_currents->bytes() : int64_t{0});
  double mean_seconds = 0;
  for (double sec : epoch_seconds) mean_seconds += sec / static_cast<double>(epoch_seconds.size());
  out.attr("/", "epoch_seconds", mean_seconds);
  out.commit();
}

}  // namespace spike
