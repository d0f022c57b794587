// calibrate.cpp - the linear iteration profile of an nk-lm model on this
// machine: time batched forward steps (decode sequences at a context, plus a
// prefill chunk), each sequence's next token drawn as the testbed draws it,
// over a grid of (P, C, S) and fit t0 + cp P + ca A + cc C + cs S.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/model.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/shipped.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "sagesched/sagesched.hpp"

namespace sage {

namespace {

struct Point {
  Work work;
  double seconds = 0;
};

/// Least squares with non-negative coefficients: fit, drop the most negative
/// coefficient (pin it at 0), refit, until none is negative.
Eigen::VectorXd non_negative_fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  std::vector<bool> free_column(static_cast<size_t>(x.cols()), true);
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(x.cols());
  while (true) {
    std::vector<Eigen::Index> keep;
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      if (free_column[static_cast<size_t>(j)]) keep.push_back(j);
    }
    Eigen::MatrixXd sub(x.rows(), static_cast<Eigen::Index>(keep.size()));
    for (size_t k = 0; k < keep.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = x.col(keep[k]);
    const Eigen::VectorXd b = sub.colPivHouseholderQr().solve(y);
    beta.setZero();
    Eigen::Index worst = -1;
    for (size_t k = 0; k < keep.size(); ++k) {
      beta(keep[k]) = b(static_cast<Eigen::Index>(k));
      if (b(static_cast<Eigen::Index>(k)) < 0 && (worst < 0 || b(static_cast<Eigen::Index>(k)) < beta(worst))) worst = keep[k];
    }
    if (worst < 0) return beta;
    free_column[static_cast<size_t>(worst)] = false;
    beta(worst) = 0;
  }
}

/// Times the grid's steps on the model; the median of o.repeats counts.
std::vector<Point> time_grid(const CalibrateOptions& o, const std::string& model_path, int threads, std::string* about) {
  nk::lm::Checkpoint ck = nk::lm::load_checkpoint(model_path);
  const nk::lm::Config& c = ck.weights.config();
  if (c.mode != nk::lm::Mode::causal) {
    throw nk::input_error(model_path, "", "a masked-diffusion checkpoint: calibrate times causal decoding");
  }
  const nk::lm::Model model(ck.weights);
  const int64_t max_seq = c.max_seq;
  // The grid: decode batches of S sequences at context ctx, with or without a
  // prefill chunk of P tokens after x cached ones.
  std::vector<int64_t> batches, contexts = {16, max_seq / 4, max_seq / 2, max_seq - 1};
  std::vector<int64_t> chunks = {0, 16, 64, std::min<int64_t>(192, max_seq / 2)}, prior = {0, max_seq / 4};
  for (int64_t b : {0, 1, 2, 4, 8, 16, 32, 64}) {
    if (b <= o.grid_batch) batches.push_back(b);
  }
  for (int64_t& v : contexts) v = std::clamp<int64_t>(v, 2, max_seq - 1);
  const int64_t slots = *std::max_element(batches.begin(), batches.end()) + 1;
  nk::lm::KvCache cache(c, {16, 0, slots});
  nk::lm::Workspace ws(c, {slots * max_seq, max_seq, false});
  nk::Rng rng(0);  // token values do not change a step's time
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t& v : t) v = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab)));
    return t;
  };
  std::vector<int32_t> slot_ids;
  for (int64_t s = 0; s < slots; ++s) slot_ids.push_back(cache.open());
  // A slot's sequence set to 'length' tokens: cut, or extended by an untimed forward.
  auto set_length = [&](int32_t slot, int64_t length) {
    const int64_t have = cache.length(slot);
    if (have > length) {
      cache.truncate(slot, length);
    } else if (have < length) {
      const std::vector<int32_t> fill = random_tokens(length - have);
      const std::vector<int64_t> offsets = {0, length - have};
      model.forward({fill, offsets, {}, std::span<const int32_t>(&slot, 1)}, ws, {nk::lm::LogitRows::last, &cache});
    }
  };
  std::vector<Point> points;
  int64_t total = 0;
  for (int64_t s : batches) {
    for (int64_t p : chunks) {
      if (s == 0 && p == 0) continue;
      total += static_cast<int64_t>((s > 0 ? contexts.size() : 1) * (p > 0 ? prior.size() : 1));
    }
  }
  nk::Progress progress("calibrate", total);
  int64_t drawn = 0;  // the sampled ids, kept so the draws are not optimised away
  for (int64_t s : batches) {
    for (int64_t p : chunks) {
      if (s == 0 && p == 0) continue;
      for (size_t ci = 0; ci < (s > 0 ? contexts.size() : 1); ++ci) {
        for (size_t xi = 0; xi < (p > 0 ? prior.size() : 1); ++xi) {
          const int64_t ctx = s > 0 ? contexts[ci] : 0, x = p > 0 ? prior[xi] : 0;
          std::vector<int32_t> tokens, ids;
          std::vector<int64_t> offsets = {0};
          for (int64_t k = 0; k < s; ++k) {
            tokens.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab))));
            offsets.push_back(static_cast<int64_t>(tokens.size()));
            ids.push_back(slot_ids[static_cast<size_t>(k)]);
          }
          if (p > 0) {
            const std::vector<int32_t> chunk = random_tokens(std::min(p, max_seq - x));
            tokens.insert(tokens.end(), chunk.begin(), chunk.end());
            offsets.push_back(static_cast<int64_t>(tokens.size()));
            ids.push_back(slot_ids.back());
          }
          const int64_t chunk_tokens = p > 0 ? offsets.back() - offsets[offsets.size() - 2] : 0;
          auto reset = [&] {
            for (int64_t k = 0; k < s; ++k) set_length(slot_ids[static_cast<size_t>(k)], ctx - 1);
            if (p > 0) set_length(slot_ids.back(), x);
          };
          std::vector<double> times;
          for (int r = 0; r < o.repeats; ++r) {
            reset();
            nk::Stopwatch watch;
            model.forward({tokens, offsets, {}, ids}, ws, {nk::lm::LogitRows::last, &cache});
            // A server's iteration also draws each sequence's next token (testbed: temperature 1).
            for (size_t k = 0; k < ids.size(); ++k) drawn += nk::lm::sample(ws.logits() + static_cast<int64_t>(k) * c.vocab, c.vocab, {}, 0.5);
            times.push_back(watch.seconds());
          }
          std::sort(times.begin(), times.end());
          // The median, not the fastest: a server's steps are not its luckiest.
          const double step = times[times.size() / 2];
          Point pt;
          pt.work.prefill = static_cast<double>(chunk_tokens);
          pt.work.attn = static_cast<double>(chunk_tokens) * static_cast<double>(x + chunk_tokens);
          pt.work.context = static_cast<double>(s * ctx);
          pt.work.sequences = static_cast<double>(s + (p > 0 ? 1 : 0));
          pt.seconds = step;
          points.push_back(pt);
          progress.update(static_cast<int64_t>(points.size()));
        }
      }
    }
  }
  progress.finish();
  spdlog::debug("calibrate: sampled-id checksum {}", drawn);
  *about = "nk-lm " + model_path + ", " + std::to_string(c.parameter_count()) + " parameters, " + std::to_string(points.size()) +
           " timed steps (median of " + std::to_string(o.repeats) + "), " + std::to_string(threads) + " thread(s)";
  return points;
}

/// The iterations a testbed run measured (/iterations of a sagesched.sim file with attribute measured).
std::vector<Point> measured_points(const std::string& path, std::string* about, int64_t* kv_tokens) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema("sagesched.sim/");
  if (!f.attr_number("/", "measured")) {
    throw nk::input_error(path, "", "not a testbed run (no attribute 'measured'): a simulation's iterations only repeat its profile");
  }
  const auto duration = f.read<double>("/iterations/duration", 1, "I");
  const auto prefill = f.read<int64_t>("/iterations/prefill_tokens", 1, "I");
  const auto attn = f.read<double>("/iterations/attn_work", 1, "I");
  const auto context = f.read<int64_t>("/iterations/context_tokens", 1, "I");
  const auto batch = f.read<int64_t>("/iterations/batch", 1, "I");
  const size_t n = duration.data.size();
  for (const auto* shape : {&prefill.shape, &context.shape, &batch.shape}) {
    if (static_cast<size_t>((*shape)[0]) != n) throw nk::input_error(path, "/iterations", "datasets of different lengths");
  }
  if (attn.data.size() != n) throw nk::input_error(path, "/iterations", "datasets of different lengths");
  if (n < 5) throw nk::input_error(path, "/iterations/duration", "has " + std::to_string(n) + " iterations; the fit needs at least 5");
  nk::h5::require_finite(path, "/iterations/duration", duration);
  nk::h5::require_finite(path, "/iterations/attn_work", attn);
  std::vector<Point> points(n);
  for (size_t i = 0; i < n; ++i) {
    if (!(duration.data[i] > 0)) {
      throw nk::input_error(path, "/iterations/duration", "entry " + std::to_string(i) + " is not positive");
    }
    points[i].work.prefill = static_cast<double>(prefill.data[i]);
    points[i].work.attn = attn.data[i];
    points[i].work.context = static_cast<double>(context.data[i]);
    points[i].work.sequences = static_cast<double>(batch.data[i]);
    points[i].seconds = duration.data[i];
  }
  *about = std::to_string(n) + " iterations measured by " + nk::display_name(path);
  if (const auto model = f.attr_string("/", "model")) *about += " (" + *model + ")";
  if (const auto threads = f.attr_number("/", "threads")) *about += ", " + std::to_string(static_cast<int64_t>(*threads)) + " thread(s)";
  if (const auto kv = f.attr_number("/", "kv_tokens")) *kv_tokens = static_cast<int64_t>(*kv);
  return points;
}

}  // namespace

void calibrate_verb(const CalibrateOptions& o, const nk::RunEnv& env) {
  std::string about;
  int64_t kv_tokens = o.kv_tokens;  // a run's own capacity wins
  const bool from_run = !o.from.empty();
  if (from_run && !o.model.empty()) throw nk::usage_error("calibrate: --model times a grid, --from fits a testbed run: give one");
  const std::vector<Point> points =
      from_run ? measured_points(o.from, &about, &kv_tokens)
               : time_grid(o, o.model.empty() ? nk::shipped_data("lm/causal.h5") : o.model, env.threads, &about);
  const auto n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd x(n, 5);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Work& w = points[static_cast<size_t>(i)].work;
    x.row(i) << 1.0, w.prefill, w.attn, w.context, w.sequences;
    y(i) = points[static_cast<size_t>(i)].seconds;
  }
  // A grid spans four decades of step time: rows weighted by 1/t fit relative
  // errors. A run's iterations come as often as they occur: unweighted, the
  // fit keeps their total time.
  const Eigen::VectorXd weight = from_run ? Eigen::VectorXd::Ones(n) : Eigen::VectorXd(y.cwiseInverse());
  const Eigen::VectorXd beta = non_negative_fit(weight.asDiagonal() * x, weight.asDiagonal() * y);
  const Eigen::VectorXd fitted = x * beta;
  const double mean = y.mean();
  const double ss_res = (y - fitted).squaredNorm(), ss_tot = (y.array() - mean).matrix().squaredNorm();
  const double r2 = 1 - ss_res / ss_tot;
  const double max_error = ((fitted - y).array() / y.array()).abs().maxCoeff();
  std::ostringstream toml;
  toml.precision(6);
  toml << "# sagesched calibrate: " << about << "\n";
  toml << "# fit: R^2 " << r2 << ", max relative error " << max_error << "; " << nk::run_context().command << "\n";
  toml << "kind = \"linear\"\nname = \"" << o.name << "\"\n";
  toml << "t0 = " << beta(0) << "\ncp = " << beta(1) << "\nca = " << beta(2) << "\ncc = " << beta(3) << "\ncs = " << beta(4)
       << "\n";
  if (kv_tokens > 0) toml << "kv_tokens = " << kv_tokens << "\n";
  const std::string text = toml.str();
  nk::write_output_bytes(o.output, std::vector<unsigned char>(text.begin(), text.end()), o.no_clobber);
  nk::Table::print(o.output == "-" ? stderr : stdout, {"t0_s", "cp_s", "ca_s", "cc_s", "cs_s", "r2", "max_rel_error", "steps"},
                   {{nk::cell(beta(0), "%.3e"), nk::cell(beta(1), "%.3e"), nk::cell(beta(2), "%.3e"), nk::cell(beta(3), "%.3e"),
                     nk::cell(beta(4), "%.3e"), nk::cell(r2, "%.4f"), nk::cell(max_error, "%.3f"),
                     nk::cell(static_cast<long long>(points.size()))}});
  spdlog::info("calibrate: {}", about);
}

}  // namespace sage
