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
//
// Each method is a Tuner (its trainable state, its step after the forward
// pass, its end of epoch and its delta); the training loop is theirs alike.
#include <spdlog/spdlog.h>

#include <Eigen/Eigenvalues>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/optim.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "spike-sft/dense_adam.hpp"
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

namespace {

/// BPTT's per-layer factors as backward() hands them over (gv, x).
using Rows = Eigen::Ref<const snn::Matrix>;

/// What a method trains: its trainable values, and the bytes of their state
/// (gradient, Adam's two moments and, for masks, the sorted entry list).
struct TrainableState {
  int64_t entries = 0, bytes = 0;
  int64_t index_bytes = 0;  ///< masks: 4 bytes an entry; the rest is 4 gradient + 8 moment bytes per trainable value
};

/// The moved weights of net against base, per layer /delta/layerL/{indices,values} (and the bias delta if 'bias');
/// returns how many weights moved.
int64_t write_weight_delta(nk::h5::Writer& out, const snn::Network& base, const snn::Network& net, bool bias) {
  int64_t changed = 0;
  for (size_t L = 0; L < net.weight.size(); ++L) {
    std::vector<int64_t> index;
    std::vector<float> value;
    const snn::Matrix delta = net.weight[L] - base.weight[L];
    for (int64_t e = 0; e < delta.size(); ++e) {
      if (delta.data()[e] != 0.0f) index.push_back(e), value.push_back(delta.data()[e]);
    }
    changed += static_cast<int64_t>(index.size());
    const std::string group = "/delta/layer" + std::to_string(L);
    out.write(group + "/indices", index.data(), {static_cast<int64_t>(index.size())}, "entry");
    out.write(group + "/values", value.data(), {static_cast<int64_t>(value.size())}, "entry");
    if (bias) {
      const snn::Vector db = net.bias[L] - base.bias[L];
      out.write(group + "/bias", db.data(), {db.size()}, "out");
    }
  }
  return changed;
}

/// One fine-tuning method: its trainable state over the base, its step after
/// each forward pass and its delta. It adapts 'net' (a copy of 'base') in place.
class Tuner {
 public:
  /// A method adapting net (a copy of base) under the options o; the three outlive it.
  Tuner(const snn::Network& base, snn::Network& net, const SpeOptions& o) : base_(base), net_(net), o_(o) {}
  virtual ~Tuner() = default;
  /// Adam's learning rate when --lr is not given.
  virtual double default_learning_rate() const { return 1e-2; }
  /// The trainable share of each weight layer, as the output reports it.
  virtual double fraction() const { return o_.fraction; }
  /// Whether the method trains a delta over a frozen base, so that the base-current cache can serve it.
  virtual bool trains_delta() const { return true; }
  /// Allocates the trainable state (drawing from rng where the method starts at random) and reports its size.
  virtual TrainableState init(nk::Rng& rng) = 0;
  /// At an epoch's start, with the base-current cache built: what the cache needs of the method.
  virtual void begin_epoch(BaseCurrents& cache) {}
  /// A batch's first-layer currents [B, out] from the cache (methods that train a delta only).
  virtual void first_currents(BaseCurrents& cache, const int64_t* examples, const snn::Matrix& x, snn::Matrix& out) {}
  /// One optimisation step after forward(): backward into the method's own gradients, then Adam on its values.
  virtual void step(const int64_t* labels, snn::Workspace& ws, const nk::Adam& adam) = 0;
  /// After an epoch's batches (epoch counts from 0), before its test.
  virtual void end_of_epoch(int64_t epoch, nk::Rng& rng) {}
  /// The largest transient buffer the gradient took (bytes).
  virtual int64_t scratch_bytes() const { return 0; }
  /// Writes the delta over the base under /delta; returns how many weights moved.
  virtual int64_t write_delta(nk::h5::Writer& out) const { return write_weight_delta(out, base_, net_, false); }

 protected:
  const snn::Network& base_;
  snn::Network& net_;
  const SpeOptions& o_;
};

/// Full fine-tuning: every weight and bias, from the dense gradient.
class FullTuner final : public Tuner {
 public:
  using Tuner::Tuner;
  double default_learning_rate() const override { return 1e-3; }
  double fraction() const override { return 1.0; }
  bool trains_delta() const override { return false; }  // every weight moves: no cache can serve it

  TrainableState init(nk::Rng&) override {
    dense_.emplace(net_);
    moments_.emplace(net_);
    TrainableState state;
    for (const snn::Matrix& w : net_.weight) {
      state.entries += w.size() + w.rows();
      state.bytes += (w.size() + w.rows()) * 12;
    }
    return state;
  }

  void step(const int64_t* labels, snn::Workspace& ws, const nk::Adam& adam) override {
    dense_->compute(net_, labels, ws);
    moments_->step(adam, net_, *dense_);
  }

  int64_t write_delta(nk::h5::Writer& out) const override { return write_weight_delta(out, base_, net_, true); }

 private:
  std::optional<snn::DenseGradient> dense_;  // full fine-tuning only: masks never hold a dense gradient
  std::optional<DenseAdam> moments_;
};

/// LoRA: W = W_base + U V^T per layer, U [out, r] (zero at the start) and V
/// [in, r], r chosen so that the factors hold about as many values as the mask would.
class LoraTuner final : public Tuner {
 public:
  using Tuner::Tuner;

  TrainableState init(nk::Rng& rng) override {
    TrainableState state;
    for (const snn::Matrix& w : net_.weight) {
      const int64_t rank = std::max<int64_t>(
          1, std::llround(o_.fraction * static_cast<double>(w.size()) / static_cast<double>(w.rows() + w.cols())));
      u_.push_back(Eigen::MatrixXf::Zero(w.rows(), rank));
      Eigen::MatrixXf v(w.cols(), rank);
      const double sd = 1.0 / std::sqrt(static_cast<double>(w.cols()));
      for (int64_t e = 0; e < v.size(); ++e) v.data()[e] = static_cast<float>(sd * rng.normal());
      v_.push_back(std::move(v));
      gu_.emplace_back(w.rows(), rank);
      gv_.emplace_back(w.cols(), rank);
      mu_.emplace_back(static_cast<size_t>(w.rows() * rank), 0.0f);
      vu_.emplace_back(static_cast<size_t>(w.rows() * rank), 0.0f);
      mv_.emplace_back(static_cast<size_t>(w.cols() * rank), 0.0f);
      vv_.emplace_back(static_cast<size_t>(w.cols() * rank), 0.0f);
      state.entries += (w.rows() + w.cols()) * rank;
      state.bytes += (w.rows() + w.cols()) * rank * 12;
    }
    return state;
  }

  void first_currents(BaseCurrents& cache, const int64_t* examples, const snn::Matrix& x, snn::Matrix& out) override {
    cache.low_rank_currents(examples, x, u_[0], v_[0], out);
  }

  void step(const int64_t* labels, snn::Workspace& ws, const nk::Adam& adam) override {
    // The factor gradients from BPTT's per-layer factors: dL/dU = gv^T (x V),
    // dL/dV = x^T (gv U); the dense gradient is never formed.
    snn::backward(net_, labels, ws, [&](int64_t l, const Rows& gv, const Rows& x) {
      const auto L = static_cast<size_t>(l);
      const Eigen::MatrixXf xv = x * v_[L];
      const Eigen::MatrixXf gu = gv * u_[L];
      gu_[L].noalias() = gv.transpose() * xv;
      gv_[L].noalias() = x.transpose() * gu;
    });
    for (size_t L = 0; L < net_.weight.size(); ++L) {
      float* u = u_[L].data();
      float* v = v_[L].data();
      adam.step_entries(u_[L].size(), gu_[L].data(), mu_[L].data(), vu_[L].data(),
                        [&](int64_t e) -> float& { return u[e]; });
      adam.step_entries(v_[L].size(), gv_[L].data(), mv_[L].data(), vv_[L].data(),
                        [&](int64_t e) -> float& { return v[e]; });
      net_.weight[L] = base_.weight[L] + (u_[L] * v_[L].transpose());
    }
  }

 private:
  std::vector<Eigen::MatrixXf> u_, v_, gu_, gv_;  // the factors and their gradients
  std::vector<std::vector<float>> mu_, vu_, mv_, vv_;
};

/// The masked methods: spe (smallest |w|), random and large (largest |w|)
/// masks, each entry's gradient a sampled matrix product; the low-rank
/// shrinkage and progressive re-selection after each epoch.
class MaskedTuner final : public Tuner {
 public:
  using Tuner::Tuner;

  TrainableState init(nk::Rng& rng) override {
    masked_.resize(net_.weight.size());
    TrainableState state;
    for (size_t L = 0; L < net_.weight.size(); ++L) {
      const snn::Matrix& w = net_.weight[L];
      const int64_t k = std::max<int64_t>(1, std::llround(o_.fraction * static_cast<double>(w.size())));
      reselect(masked_[L], select(w, k, o_.method, rng));
      state.entries += k;
      state.bytes += masked_[L].bytes();
      state.index_bytes += k * static_cast<int64_t>(sizeof(int32_t));
    }
    return state;
  }

  void begin_epoch(BaseCurrents& cache) override {
    cached_ = true;
    cache.set_support(net_.weight[0], base_.weight[0], masked_[0].index);
  }

  void first_currents(BaseCurrents& cache, const int64_t* examples, const snn::Matrix& x, snn::Matrix& out) override {
    // x^T serves both the sparse product and the first layer's masked gradient.
    input_t_.resize(x.cols(), x.rows());
#pragma omp parallel
    transpose_into(x, input_t_);
    cache.sparse_currents(examples, input_t_, net_.weight[0], base_.weight[0], out);
  }

  void step(const int64_t* labels, snn::Workspace& ws, const nk::Adam& adam) override {
    snn::backward(net_, labels, ws, [&](int64_t l, const Rows& gv, const Rows& x) {
      masked_gradient(l, gv, x);
    });
    for (size_t L = 0; L < net_.weight.size(); ++L) {
      MaskedLayer& layer = masked_[L];
      float* w = net_.weight[L].data();
      const int32_t* index = layer.index.data();
      adam.step_entries(static_cast<int64_t>(layer.index.size()), layer.grad.data(), layer.m.data(), layer.v.data(),
                        [&](int64_t e) -> float& { return w[index[e]]; });
    }
  }

  void end_of_epoch(int64_t epoch, nk::Rng& rng) override {
    if (o_.low_rank > 0) {
      for (size_t L = 0; L < net_.weight.size(); ++L)
        shrink_singular_values(net_.weight[L], base_.weight[L], masked_[L].index, o_.low_rank);
    }
    // Progressive re-selection on the adapted weights (none after the last epoch).
    if (o_.reselect_every > 0 && (epoch + 1) % o_.reselect_every == 0 && epoch + 1 < o_.epochs) {
      for (size_t L = 0; L < net_.weight.size(); ++L) {
        MaskedLayer& layer = masked_[L];
        reselect(layer, select(net_.weight[L], static_cast<int64_t>(layer.index.size()), o_.method, rng));
      }
    }
  }

  int64_t scratch_bytes() const override { return scratch_bytes_; }

 private:
  /// Layer l's masked gradient into masked_[l].grad: the sink backward() hands gv and x to.
  void masked_gradient(int64_t l, const Rows& gv, const Rows& x);
  /// The dense layers' way: one dot product per entry of transposed gv and x.
  void transposed_dots(int64_t l, const Rows& gv, const Rows& x);
  /// The convolutions' way: one pass over the rows, per-thread sums added in thread order.
  void row_sums(int64_t l, const Rows& gv, const Rows& x);

  std::vector<MaskedLayer> masked_;
  bool cached_ = false;               // the base-current cache is in use: each batch's x^T is input_t_
  snn::Matrix input_t_, gv_t_, x_t_;  // transposed scratch
  std::vector<int64_t> out_unit_, in_unit_;
  std::vector<float> partial_;
  int64_t scratch_bytes_ = 0;  // the largest transient buffer of either way
};

// The masked gradient: dL/dW_ij = gv[:, i] . x[:, j] for the masked (i, j)
// only (a sampled matrix product), in one of two ways. Where the layer has
// many masked entries per row of gv and x (at least twice in + out: the
// dense layers), gv and x are transposed into scratch (steps x examples
// become contiguous) and each entry is one vectorised dot product, summed
// in a fixed order whatever the thread count. Otherwise (convolutions: a
// few masked kernel entries over many rows of positions) one pass over the
// rows: each thread sums its rows into its own accumulators, which are
// then added in thread order.
void MaskedTuner::masked_gradient(int64_t l, const Rows& gv, const Rows& x) {
  const auto entries = static_cast<int64_t>(masked_[static_cast<size_t>(l)].index.size());
  if (entries >= 2 * (gv.cols() + x.cols())) {
    transposed_dots(l, gv, x);
  } else {
    row_sums(l, gv, x);
  }
}

/// The masked gradient of layer l as one dot product per entry of transposed gv and x.
void MaskedTuner::transposed_dots(int64_t l, const Rows& gv, const Rows& x) {
  MaskedLayer& layer = masked_[static_cast<size_t>(l)];
  const int64_t cols = x.cols(), entries = static_cast<int64_t>(layer.index.size());
  const int32_t* index = layer.index.data();
  float* grad = layer.grad.data();
  const bool given = l == 0 && cached_;  // this batch's x^T is input_t_ already
  gv_t_.resize(gv.cols(), gv.rows());
  if (!given) x_t_.resize(x.cols(), x.rows());
  const snn::Matrix& xt = given ? input_t_ : x_t_;
  scratch_bytes_ = std::max<int64_t>(scratch_bytes_, static_cast<int64_t>(sizeof(float)) * (gv_t_.size() + xt.size()));
  const int64_t steps = gv.rows();
#pragma omp parallel
  {
    transpose_into(gv, gv_t_);
    if (!given) transpose_into(x, x_t_);
#pragma omp barrier
    // A contiguous range of entries per thread: one call into the AVX2 code.
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    sampled_dots(entries * t / threads, entries * (t + 1) / threads, index, cols, gv_t_.data(), xt.data(), steps, grad);
  }
}

/// The masked gradient of layer l in one pass over the rows of gv and x, per-thread sums added in thread order.
void MaskedTuner::row_sums(int64_t l, const Rows& gv, const Rows& x) {
  MaskedLayer& layer = masked_[static_cast<size_t>(l)];
  const int64_t cols = x.cols(), rows = gv.rows(), entries = static_cast<int64_t>(layer.index.size());
  const int32_t* index = layer.index.data();
  float* grad = layer.grad.data();
  out_unit_.resize(static_cast<size_t>(entries));
  in_unit_.resize(static_cast<size_t>(entries));
  for (int64_t e = 0; e < entries; ++e) {
    out_unit_[static_cast<size_t>(e)] = index[e] / cols;
    in_unit_[static_cast<size_t>(e)] = index[e] % cols;
  }
  const int threads = omp_get_max_threads();
  partial_.assign(static_cast<size_t>(threads * entries), 0.0f);
  scratch_bytes_ =
      std::max<int64_t>(scratch_bytes_, static_cast<int64_t>(sizeof(float)) * static_cast<int64_t>(partial_.size()));
#pragma omp parallel num_threads(threads)
  {
    float* sum = partial_.data() + static_cast<int64_t>(omp_get_thread_num()) * entries;
    const int64_t* oi = out_unit_.data();
    const int64_t* ii = in_unit_.data();
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* g = gv.data() + r * gv.outerStride();
      const float* in = x.data() + r * x.outerStride();
      for (int64_t e = 0; e < entries; ++e) sum[e] += g[oi[e]] * in[ii[e]];
    }
  }
  for (int64_t e = 0; e < entries; ++e) {
    float total = 0.0f;
    for (int t = 0; t < threads; ++t) total += partial_[static_cast<size_t>(t * entries + e)];
    grad[e] = total;
  }
}

/// The tuner of --method.
std::unique_ptr<Tuner> make_tuner(const snn::Network& base, snn::Network& net, const SpeOptions& o) {
  if (o.method == "full") return std::make_unique<FullTuner>(base, net, o);
  if (o.method == "lora") return std::make_unique<LoraTuner>(base, net, o);
  return std::make_unique<MaskedTuner>(base, net, o);
}

/// Refuses a task whose examples or classes do not fit the base model, or that has fewer examples than a batch.
void check_task(const SpeOptions& o, const Task& task, const snn::Config& c) {
  if (task.train.x.cols() != c.sizes.front() || task.test.x.cols() != c.sizes.front()) {
    throw nk::input_error(o.task, "/tasks/" + task.name + "/train/images",
                          "examples have " + std::to_string(task.train.x.cols()) + " values, the base model takes " +
                              std::to_string(c.sizes.front()));
  }
  if (std::max(task.train.classes, task.test.classes) > c.sizes.back()) {
    throw nk::input_error(o.task, "/tasks/" + task.name + "/train/labels",
                          "has more classes than the base model's " + std::to_string(c.sizes.back()));
  }
  if (task.train.size() < o.batch) {
    throw nk::usage_error("--batch is larger than the task's " + std::to_string(task.train.size()) +
                          " training examples");
  }
}

/// What training measured: test accuracy and seconds per epoch, and the bytes of its buffers.
struct Curve {
  std::vector<double> accuracy, epoch_seconds;
  int64_t activation_bytes = 0, base_cache_bytes = 0;
};

/// The training loop, the same for every method: shuffled batches, each a
/// forward pass (the first layer's currents from the base cache where there
/// is one) and one Adam step of the tuner; the tuner's end of epoch, then the test.
Curve train(Tuner& tuner, const snn::Network& base, const snn::Network& net, const Task& task, const SpeOptions& o,
            const nk::RunEnv& env, nk::Rng& rng) {
  nk::AdamConfig adam_config;
  adam_config.learning_rate = o.learning_rate > 0 ? o.learning_rate : tuner.default_learning_rate();
  nk::Adam adam(0, adam_config);  // the moments live beside the trainable values, in the tuner
  snn::Workspace ws(net.config, o.batch);
  // A method that trains a delta over the base gets the first layer's
  // currents from the frozen base's, cached per training example, plus the
  // delta's part (see base_currents.hpp); the cache is built in the first
  // epoch's time, and each batch's x^T then serves both the sparse product
  // and the first layer's masked gradient.
  const bool delta = tuner.trains_delta() && o.base_cache;
  const bool cache = delta && BaseCurrents::applies(net.config) &&
                     BaseCurrents::bytes_for(net.config, task.train.size()) <= kBaseCacheLimit;
  if (delta && !cache)
    spdlog::debug("no base-current cache (conv network, rate coding, or above {} bytes)", kBaseCacheLimit);
  std::optional<BaseCurrents> base_currents;
  std::vector<int64_t> order(static_cast<size_t>(task.train.size()));
  std::iota(order.begin(), order.end(), 0);
  snn::Matrix x(o.batch, task.train.x.cols()), first_currents;
  std::vector<int64_t> labels(static_cast<size_t>(o.batch));
  const int64_t batches = task.train.size() / o.batch;
  Curve curve;
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    nk::shuffle(order, rng);
    nk::Progress progress("epoch " + std::to_string(epoch + 1), batches);
    const nk::Stopwatch watch;
    if (cache) {
      if (!base_currents) base_currents.emplace(base, task.train.x);
      tuner.begin_epoch(*base_currents);
    }
    for (int64_t k = 0; k < batches; ++k) {
      gather(task.train, order, k * o.batch, o.batch, x, labels);
      if (base_currents) {
        first_currents.resize(o.batch, net.config.sizes[1]);
        tuner.first_currents(*base_currents, order.data() + k * o.batch, x, first_currents);
      }
      const snn::Matrix* currents = base_currents ? &first_currents : nullptr;
      const snn::BatchStats s = snn::forward(net, x, labels.data(), ws, &rng, currents);
      if (!std::isfinite(s.loss))
        throw nk::Error(nk::Exit::runtime, "the loss became " + std::to_string(s.loss) + ": lower --lr");
      adam.begin_step();
      tuner.step(labels.data(), ws, adam);
      progress.update(k + 1);
    }
    tuner.end_of_epoch(epoch, rng);
    progress.finish();
    curve.epoch_seconds.push_back(watch.seconds());
    const snn::BatchStats t = evaluate(net, task.test, 256, env.seed + 1);
    curve.accuracy.push_back(static_cast<double>(t.correct) / static_cast<double>(task.test.size()));
    spdlog::info("epoch {}/{}: test {:.2f}%, {:.2f} s", epoch + 1, o.epochs, 100 * curve.accuracy.back(),
                 curve.epoch_seconds.back());
  }
  curve.activation_bytes = ws.activation_bytes();
  curve.base_cache_bytes = base_currents ? base_currents->bytes() : int64_t{0};
  return curve;
}

}  // namespace

void spe(const SpeOptions& o, const nk::RunEnv& env) {
  if (!(o.fraction > 0 && o.fraction < 1)) throw nk::usage_error("--fraction must lie in (0, 1)");
  const snn::Network base = read_model(o.input);
  const Task task = read_task(o.task);
  const snn::Config& c = base.config;
  check_task(o, task, c);
  nk::h5::Writer out(o.output, kAdaptedSchema, o.no_clobber);
  nk::Rng rng(env.seed);
  snn::Network net = base;
  const std::unique_ptr<Tuner> tuner = make_tuner(base, net, o);
  const TrainableState state = tuner->init(rng);
  const snn::BatchStats before = evaluate(net, task.test, 256, env.seed + 1);
  const double base_accuracy = static_cast<double>(before.correct) / static_cast<double>(task.test.size());
  spdlog::info("task {}: {} training examples; base model {:.2f}% on its test set; method {}, {} trainable entries "
               "({:.2f}% of {})",
               task.name, task.train.size(), 100 * base_accuracy, o.method, state.entries,
               100.0 * static_cast<double>(state.entries) / static_cast<double>(c.parameter_count()),
               c.parameter_count());
  const Curve curve = train(*tuner, base, net, task, o, env, rng);
  // The adapted model: the base and its sparse delta.
  write_model(out, base, task.train.shape);
  const int64_t changed = tuner->write_delta(out);
  const auto epochs = static_cast<int64_t>(curve.accuracy.size());
  out.write("/metrics/test_accuracy", curve.accuracy.data(), {epochs}, "epoch");
  out.write("/metrics/epoch_seconds", curve.epoch_seconds.data(), {epochs}, "epoch", "s");
  out.attr("/", "task", task.name);
  out.attr("/", "method", o.method);
  out.attr("/", "fraction", tuner->fraction());
  out.attr("/", "base_accuracy", base_accuracy);
  out.attr("/", "test_accuracy", curve.accuracy.empty() ? base_accuracy : curve.accuracy.back());
  out.attr("/", "trainable_entries", state.entries);
  out.attr("/", "changed_entries", changed);
  out.attr("/", "trainable_state_bytes", state.bytes);
  out.attr("/", "gradient_bytes", state.entries * static_cast<int64_t>(sizeof(float)));
  out.attr("/", "optimizer_bytes", state.entries * static_cast<int64_t>(2 * sizeof(float)));
  out.attr("/", "index_bytes", state.index_bytes);
  out.attr("/", "activation_bytes", curve.activation_bytes);
  out.attr("/", "gradient_scratch_bytes", tuner->scratch_bytes());
  out.attr("/", "base_cache_bytes", curve.base_cache_bytes);
  double mean_seconds = 0;
  for (double sec : curve.epoch_seconds) mean_seconds += sec / static_cast<double>(curve.epoch_seconds.size());
  out.attr("/", "epoch_seconds", mean_seconds);
  out.commit();
}

}  // namespace spike
