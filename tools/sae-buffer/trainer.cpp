// trainer.cpp - buffer replay, AdamW with unit-norm decoder rows, the
// per-arch state (dead latents, BatchTopK's threshold, JumpReLU's L0 steering).
#include "sae-buffer/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/nn/optim.hpp"

namespace sb {

namespace {

constexpr uint64_t kBufferStream = 1, kShuffleStream = 2, kInitStream = 3;
// A buffer larger than this is not held in memory when its rows can be generated.
constexpr double kMaterialiseBytes = 1024.0 * 1024.0 * 1024.0;

// Weiszfeld's iteration for the geometric median of the rows (SAELens's b_dec start).
Vector<float> geometric_median(const Matrix<float>& x) {
  Vector<double> y = x.cast<double>().colwise().mean().transpose();
  for (int it = 0; it < 50; ++it) {
    Vector<double> num = Vector<double>::Zero(y.size());
    double den = 0;
    for (int64_t r = 0; r < x.rows(); ++r) {
      const double d = std::max(1e-12, (x.row(r).cast<double>().transpose() - y).norm());
      num += x.row(r).cast<double>().transpose() / d;
      den += 1 / d;
    }
    const Vector<double> next = num / den;
    const double moved = (next - y).norm();
    y = next;
    if (moved < 1e-7 * (1 + y.norm())) break;
  }
  return y.cast<float>();
}

double schedule(const TrainConfig& c, int64_t step, int64_t steps) {
  const double t = (static_cast<double>(step) + 1) / static_cast<double>(steps);
  if (c.warmup > 0 && t < c.warmup) return c.learning_rate * t / c.warmup;
  if (c.decay > 0 && t > 1 - c.decay) return c.learning_rate * std::max(0.0, (1 - t) / c.decay);
  return c.learning_rate;
}

// First and second Adam moments of every parameter block.
struct Moments {
  std::vector<float> m, v;
  explicit Moments(int64_t n = 0) : m(static_cast<size_t>(n), 0.f), v(static_cast<size_t>(n), 0.f) {}
};

template <class Block>
void adam_block(const nk::Adam& adam, Block& param, const Block& grad, Moments& mom) {
  float* p = param.data();
  adam.step_entries(param.size(), grad.data(), mom.m.data(), mom.v.data(), [p](int64_t e) -> float& { return p[e]; });
}

}  // namespace

std::vector<int64_t> buffer_rows(int64_t pool, int64_t U, bool unbounded, uint64_t seed) {
  std::vector<int64_t> rows(static_cast<size_t>(unbounded ? U : pool));
  std::iota(rows.begin(), rows.end(), int64_t{0});
  if (!unbounded) {
    nk::Rng rng = nk::Rng(seed).split(kBufferStream);
    nk::shuffle_prefix(rows, static_cast<size_t>(U), rng);
    rows.resize(static_cast<size_t>(U));
    std::sort(rows.begin(), rows.end());
  }
  return rows;
}

TrainResult train_sae(const Activations& source, int64_t pool, const TrainConfig& cfg, uint64_t seed,
                      const std::string& progress_label) {
  const int64_t m = source.dim(), n = cfg.latents > 0 ? cfg.latents : 16 * m;
  const int64_t U = cfg.buffer, B = cfg.budget;
  if (U < 1 || B < 1) throw nk::input_error(source.path(), "", "buffer and budget must be positive");
  if (U > pool)
    throw nk::input_error(source.path(), source.dataset(),
                          "a buffer of " + std::to_string(U) + " rows needs more than the " + std::to_string(pool) + " rows available");
  if (cfg.k < 1 || cfg.k >= n)
    throw nk::input_error(source.path(), "", "k = " + std::to_string(cfg.k) + " must be in [1, latents = " + std::to_string(n) + ")");
  const bool unbounded = pool >= kUnboundedRows;
  TrainResult result;
  result.buffer_rows = buffer_rows(pool, U, unbounded, seed);
  result.usage.assign(static_cast<size_t>(U), 0);

  // Hold the buffer in memory unless its rows are cheaper to regenerate.
  const bool stream = source.synthetic() && static_cast<double>(U) * static_cast<double>(m) * 4.0 > kMaterialiseBytes;
  Matrix<float> buffer;
  if (!stream) buffer = source.read(result.buffer_rows);
  const Matrix<float> probe = stream ? source.read(std::vector<int64_t>(result.buffer_rows.begin(),
                                                                         result.buffer_rows.begin() + std::min<int64_t>(U, 65536)))
                                     : Matrix<float>();
  const Matrix<float>& sample = stream ? probe : buffer;
  const int64_t probe_rows = std::min<int64_t>(sample.rows(), 65536);
  const double mean_sq = sample.topRows(probe_rows).cast<double>().rowwise().squaredNorm().mean();
  const float s = static_cast<float>(mean_sq > 0 ? std::sqrt(static_cast<double>(m) / mean_sq) : 1.0);
  result.scale = s;

  nk::Rng init_rng = nk::Rng(seed).split(kInitStream);
  Sae sae = init_sae<float>(cfg.arch, m, n, cfg.k, init_rng);
  {
    const Matrix<float> head = s * sample.topRows(std::min<int64_t>(probe_rows, 4096));
    sae.b_dec = cfg.b_dec_init == "mean" ? Vector<float>(head.colwise().mean().transpose()) : geometric_median(head);
    // JumpReLU thresholds start where each latent fires on a share k/n of
    // the first rows, so that L0 starts near k instead of near n/2.
    if (cfg.arch == Arch::jumprelu) {
      Matrix<float> pre;
      pre_activations(sae, head.data(), head.rows(), pre);
      const int64_t rank = std::min<int64_t>(pre.rows() - 1, static_cast<int64_t>(static_cast<double>(pre.rows()) *
                                                                                   (1 - static_cast<double>(cfg.k) / n)));
      std::vector<float> column(static_cast<size_t>(pre.rows()));
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t r = 0; r < pre.rows(); ++r) column[r] = pre(r, j);
        std::nth_element(column.begin(), column.begin() + rank, column.end());
        sae.threshold[j] = std::max(column[rank], 1e-3f);
      }
    }
  }

  nk::AdamConfig adam_config;
  adam_config.learning_rate = cfg.learning_rate;
  nk::Adam adam(0, adam_config);
  Moments m_enc(n * m), m_dec(n * m), m_benc(n), m_bdec(m), m_thr(n);

  const int64_t steps = (B + cfg.batch - 1) / cfg.batch;
  result.steps = steps;
  const int64_t dead_window = cfg.dead_window > 0 ? cfg.dead_window : std::max(B / 8, 4 * cfg.batch);
  std::vector<int64_t> last_fired(static_cast<size_t>(n), 0);
  std::vector<char> dead(static_cast<size_t>(n), 0);
  std::vector<int64_t> order(static_cast<size_t>(U));
  std::iota(order.begin(), order.end(), int64_t{0});
  nk::Rng shuffle_rng = nk::Rng(seed).split(kShuffleStream);
  nk::shuffle(order, shuffle_rng);
  size_t cursor = 0;
  double l0_coef = cfg.l0_coef > 0 ? cfg.l0_coef : 0.1;
  bool threshold_started = false;
  // BatchTopK's inference threshold averages the last h steps' smallest kept
  // value: h = 100 steps, or a tenth of a shorter run (a fixed horizon lags
  // a run of 64 steps and leaves the inference L0 far below k).
  const double threshold_decay =
      cfg.threshold_decay > 0 ? cfg.threshold_decay
                              : 1.0 - 1.0 / std::clamp(static_cast<double>(steps) / 10.0, 1.0, 100.0);
  LossConfig loss = cfg.loss;
  const int64_t curve_every = std::max<int64_t>(1, steps / std::max<int64_t>(1, cfg.curve_points));

  Matrix<float> X;
  std::vector<int64_t> picked, picked_rows;
  GradT<float> grad;
  CodesT<float> codes;
  nk::Progress progress(progress_label, steps);
  int64_t seen = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t rows = std::min(cfg.batch, B - seen);
    picked.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
      if (cursor == order.size()) {  // a new epoch: reshuffle the buffer
        nk::shuffle(order, shuffle_rng);
        cursor = 0;
      }
      picked[i] = order[cursor++];
      ++result.usage[picked[i]];
    }
    X.resize(rows, m);
    if (stream) {
      picked_rows.resize(picked.size());
      for (size_t i = 0; i < picked.size(); ++i) picked_rows[i] = result.buffer_rows[picked[i]];
      source.synthetic()->rows(picked_rows.data(), rows, X.data());
      X *= s;
    } else {
      for (int64_t i = 0; i < rows; ++i) X.row(i) = s * buffer.row(picked[i]);
    }

    adam.set_learning_rate(schedule(cfg, step, steps));
    if (cfg.arch == Arch::jumprelu) loss.l0_coef = l0_coef;
    float batch_min = 0;
    const LossParts parts = loss_and_grad(sae, X.data(), rows, loss, dead, &grad, codes, &batch_min);
    seen += rows;
    project_decoder_grad(sae, grad);
    adam.begin_step();
    if (cfg.weight_decay > 0) {
      const float keep = static_cast<float>(1 - adam.learning_rate() * cfg.weight_decay);
      sae.enc *= keep;
      sae.dec *= keep;
    }
    adam_block(adam, sae.enc, grad.enc, m_enc);
    adam_block(adam, sae.dec, grad.dec, m_dec);
    adam_block(adam, sae.b_enc, grad.b_enc, m_benc);
    adam_block(adam, sae.b_dec, grad.b_dec, m_bdec);
    if (cfg.arch == Arch::jumprelu) {
      adam_block(adam, sae.threshold, grad.threshold, m_thr);
      sae.threshold = sae.threshold.cwiseMax(0.f);
      // Steer the L0 coefficient towards L0 = k (a multiplicative dual step,
      // at most 5% a step) unless the user fixed it.
      if (cfg.l0_coef <= 0) l0_coef *= std::exp(std::clamp(0.05 * (parts.l0 / static_cast<double>(cfg.k) - 1), -0.05, 0.05));
    }
    normalize_decoder(sae);
    if (cfg.arch == Arch::batchtopk) {
      const float d = threshold_started ? static_cast<float>(threshold_decay) : 0.f;
      sae.threshold.setConstant(d * sae.threshold[0] + (1 - d) * batch_min);
      threshold_started = true;
    }
    for (const int32_t j : codes.latent) last_fired[j] = seen;
    int64_t dead_count = 0;
    for (int64_t j = 0; j < n; ++j) dead_count += (dead[j] = seen - last_fired[j] > dead_window);

    if (step % curve_every == 0 || step + 1 == steps) {
      result.curve.samples.push_back(seen);
      result.curve.mse.push_back(parts.mse / static_cast<double>(m) / (static_cast<double>(s) * s));
      result.curve.l0.push_back(parts.l0);
      result.curve.dead_fraction.push_back(static_cast<double>(dead_count) / static_cast<double>(n));
    }
    progress.update(step + 1);
    if (!std::isfinite(parts.total()))
      throw nk::Error(nk::Exit::runtime, "training diverged at step " + std::to_string(step) + " (loss " +
                                             std::to_string(parts.total()) + "); lower --lr");
  }
  progress.finish();

  // Back to the data's units: pre, z and thresholds scale by 1/s, b_dec by 1/s.
  sae.b_enc /= s;
  sae.b_dec /= s;
  sae.threshold /= s;
  result.sae = std::move(sae);
  return result;
}

void write_sae(nk::h5::Writer& out, const Sae& sae) {
  const int64_t m = sae.dim(), n = sae.latents();
  const Matrix<float> W_enc = sae.enc.transpose();
  out.write_matrix("/sae/W_enc", W_enc, "m,n");
  out.write("/sae/b_enc", sae.b_enc.data(), {n}, "n");
  out.write_matrix("/sae/W_dec", sae.dec, "n,m");
  out.write("/sae/b_dec", sae.b_dec.data(), {m}, "m");
  out.write("/sae/threshold", sae.threshold.data(), {n}, "n");
  out.attr("/sae", "arch", arch_name(sae.arch));
  out.attr("/sae", "k", sae.k);
  out.attr("/sae", "latents", n);
  out.attr("/sae", "dim", m);
}

Sae read_sae(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  for (const char* d : {"/sae/W_enc", "/sae/b_enc", "/sae/W_dec", "/sae/b_dec", "/sae/threshold"}) f.require(d);
  Sae sae;
  sae.arch = parse_arch(f.attr_string("/sae", "arch").value_or("topk"), "input '" + path + "': /sae");
  const auto W_enc = f.read_matrix<float>("/sae/W_enc");
  sae.dec = f.read_matrix<float>("/sae/W_dec");
  const int64_t m = W_enc.rows(), n = W_enc.cols();
  if (sae.dec.rows() != n || sae.dec.cols() != m)
    throw nk::input_error(path, "/sae/W_dec", "shape [" + std::to_string(sae.dec.rows()) + "," + std::to_string(sae.dec.cols()) +
                                                  "] does not match /sae/W_enc [" + std::to_string(m) + "," + std::to_string(n) + "] (expected [n,m])");
  auto vec = [&](const char* name, int64_t size) {
    const auto a = f.read<float>(name, 1, size == n ? "n" : "m");
    if (a.size() != size)
      throw nk::input_error(path, name, "has " + std::to_string(a.size()) + " entries, expected " + std::to_string(size));
    nk::h5::require_finite(path, name, a);
    return Vector<float>(Eigen::Map<const Vector<float>>(a.data.data(), size));
  };
  sae.b_enc = vec("/sae/b_enc", n);
  sae.b_dec = vec("/sae/b_dec", m);
  sae.threshold = vec("/sae/threshold", n);
  sae.enc = W_enc.transpose();
  if (!sae.enc.allFinite()) throw nk::input_error(path, "/sae/W_enc", "holds NaN or Inf");
  if (!sae.dec.allFinite()) throw nk::input_error(path, "/sae/W_dec", "holds NaN or Inf");
  sae.k = static_cast<int64_t>(f.attr_number("/sae", "k").value_or(0));
  if (sae.arch == Arch::topk && (sae.k < 1 || sae.k >= n))
    throw nk::input_error(path, "/sae", "attribute k = " + std::to_string(sae.k) + " must be in [1, n = " + std::to_string(n) + ")");
  return sae;
}

}  // namespace sb
