// decoder.cpp - the multi-scale stroke decoder: features, the MLP, decoding
// with gain-based stroke-scale allocation, and self-supervised training
// through our own renderer.
#include "sbr-render/decoder.hpp"

#include <omp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sbr-render/io.hpp"
#include "nk/context.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/nn/optim.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace sbr {

namespace {

constexpr int kP = Decoder::kPatch;
/// Training windows are rendered at this many pixels a side: the window spans
/// [-1, 1]^2 around a cell centre, i.e. two cells.
constexpr int kWindow = 16;
constexpr double kGainScale = 100.0;  ///< the gain head predicts 100 x (loss reduction per window value)

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

/// Box sums of an H x W x 3 image in O(1) per rectangle.
class Integral {
 public:
  Integral(const RGB& image, int width, int height) : w_(width), h_(height), sum_(size_t(width + 1) * (height + 1) * 3, 0.0) {
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        for (int c = 0; c < 3; ++c)
          at(x + 1, y + 1, c) = image[(size_t(y) * width + x) * 3 + c] + at(x, y + 1, c) + at(x + 1, y, c) - at(x, y, c);
  }
  /// Mean over the pixels of [x0, x1) x [y0, y1), clamped to the image (edge pixels extend outward).
  void mean(double x0, double y0, double x1, double y1, float* out) const {
    int ix0 = std::clamp(int(std::floor(x0)), 0, w_ - 1), iy0 = std::clamp(int(std::floor(y0)), 0, h_ - 1);
    int ix1 = std::clamp(int(std::ceil(x1)), ix0 + 1, w_), iy1 = std::clamp(int(std::ceil(y1)), iy0 + 1, h_);
    const double area = double(ix1 - ix0) * (iy1 - iy0);
    for (int c = 0; c < 3; ++c)
      out[c] = float((get(ix1, iy1, c) - get(ix0, iy1, c) - get(ix1, iy0, c) + get(ix0, iy0, c)) / area);
  }

 private:
  double& at(int x, int y, int c) { return sum_[(size_t(y) * (w_ + 1) + x) * 3 + c]; }
  double get(int x, int y, int c) const { return sum_[(size_t(y) * (w_ + 1) + x) * 3 + c]; }
  int w_, h_;
  std::vector<double> sum_;
};

/// The decoder's input for a window centred at (cx, cy) with half-size r:
/// the target minus 0.5 and the residual target - canvas, each kP x kP x 3.
void window_features(const Integral& target, const Integral& canvas, double cx, double cy, double r, float* out) {
  const double step = 2 * r / kP;
  for (int j = 0; j < kP; ++j)
    for (int i = 0; i < kP; ++i) {
      const double x0 = cx - r + i * step, y0 = cy - r + j * step;
      float t[3], c[3];
      target.mean(x0, y0, x0 + step, y0 + step, t);
      canvas.mean(x0, y0, x0 + step, y0 + step, c);
      for (int ch = 0; ch < 3; ++ch) {
        out[(j * kP + i) * 3 + ch] = t[ch] - 0.5f;
        out[kP * kP * 3 + (j * kP + i) * 3 + ch] = t[ch] - c[ch];
      }
    }
}

/// Network outputs -> a stroke in window units ([-1, 1] across the window).
struct WindowStroke {
  float p[6], width, rgb[3], opacity;
};
WindowStroke activate(const float* o) {
  WindowStroke s;
  for (int k = 0; k < 6; ++k) s.p[k] = std::tanh(o[k]);
  s.width = 0.02f + 0.98f * sigmoid(o[6]);
  for (int c = 0; c < 3; ++c) s.rgb[c] = sigmoid(o[7 + c]);
  s.opacity = 0.1f + 0.9f * sigmoid(o[10]);
  return s;
}

float logit(float p) { return std::log(p / (1 - p)); }

/// The structural prior the network refines, as pre-activation values: a
/// stroke one cell long through the residual-weighted centre of the window,
/// along the local edge (structure tensor of the target's luminance), 0.6
/// cells wide, in the mean target colour of the central cell, opacity 0.9.
/// The MLP's output is added to it, so an untrained decoder paints this prior.
void structural_prior(const float* features, float* o) {
  const float* target = features;                   // target - 0.5
  const float* residual = features + kP * kP * 3;   // target - canvas
  double jxx = 0, jxy = 0, jyy = 0, wsum = 0, mx = 0, my = 0, col[3] = {0, 0, 0};
  int central = 0;
  auto lum = [&](int i, int j) {
    i = std::clamp(i, 0, kP - 1), j = std::clamp(j, 0, kP - 1);
    const float* t = &target[(j * kP + i) * 3];
    return 0.299 * t[0] + 0.587 * t[1] + 0.114 * t[2];
  };
  for (int j = 0; j < kP; ++j)
    for (int i = 0; i < kP; ++i) {
      const double gx = 0.5 * (lum(i + 1, j) - lum(i - 1, j)), gy = 0.5 * (lum(i, j + 1) - lum(i, j - 1));
      jxx += gx * gx, jxy += gx * gy, jyy += gy * gy;
      const float* r = &residual[(j * kP + i) * 3];
      const double w = double(r[0]) * r[0] + double(r[1]) * r[1] + double(r[2]) * r[2];
      const double u = (i + 0.5) / kP * 2 - 1, v = (j + 0.5) / kP * 2 - 1;
      wsum += w, mx += w * u, my += w * v;
      if (std::fabs(u) < 0.5 && std::fabs(v) < 0.5) {
        for (int c = 0; c < 3; ++c) col[c] += target[(j * kP + i) * 3 + c] + 0.5;
        ++central;
      }
    }
  const double cx = wsum > 1e-12 ? std::clamp(mx / wsum, -0.5, 0.5) : 0.0, cy = wsum > 1e-12 ? std::clamp(my / wsum, -0.5, 0.5) : 0.0;
  const double angle = 0.5 * std::atan2(2 * jxy, jxx - jyy) + 1.5707963267948966;
  const double dx = 0.5 * std::cos(angle), dy = 0.5 * std::sin(angle);
  const double pts[6] = {cx - dx, cy - dy, cx, cy, cx + dx, cy + dy};
  for (int k = 0; k < 6; ++k) o[k] = float(std::atanh(std::clamp(pts[k], -0.95, 0.95)));
  o[6] = logit((0.6f - 0.02f) / 0.98f);
  for (int c = 0; c < 3; ++c) o[7 + c] = logit(std::clamp(float(col[c] / std::max(1, central)), 0.02f, 0.98f));
  o[10] = logit((0.9f - 0.1f) / 0.9f);
}

/// The stroke in pixels of a window centred at (cx, cy) with half-size r.
Stroke place(const WindowStroke& w, double cx, double cy, double r) {
  Stroke s;
  float* p = params_of(s);
  for (int k = 0; k < 6; k += 2) {
    p[k] = float(cx + r * w.p[k]);
    p[k + 1] = float(cy + r * w.p[k + 1]);
  }
  s.width = float(r * w.width);
  s.r = w.rgb[0], s.g = w.rgb[1], s.b = w.rgb[2];
  s.opacity = w.opacity;
  return s;
}

/// Forward pass for a batch (rows are samples); keeps the activations.
struct Activations {
  Eigen::MatrixXf h1, h2, out;
};
void forward(const Decoder& d, const Eigen::MatrixXf& x, Activations& a) {
  a.h1 = ((x * d.w1).rowwise() + d.b1).cwiseMax(0.f);
  a.h2 = ((a.h1 * d.w2).rowwise() + d.b2).cwiseMax(0.f);
  a.out = (a.h2 * d.w3).rowwise() + d.b3;
  for (Eigen::Index b = 0; b < x.rows(); ++b) {
    const Eigen::RowVectorXf features = x.row(b);
    float prior[kStrokeParams];
    structural_prior(features.data(), prior);
    for (int k = 0; k < kStrokeParams; ++k) a.out(b, k) += prior[k];
  }
}

}  // namespace

void Decoder::init(int hidden_units, uint64_t seed) {
  hidden = hidden_units;
  nk::Rng rng(seed);
  auto he = [&](int rows, int cols) {
    Eigen::MatrixXf m(rows, cols);
    const double scale = std::sqrt(2.0 / rows);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) m(i, j) = float(rng.normal() * scale);
    return m;
  };
  w1 = he(kInputs, hidden), w2 = he(hidden, hidden), w3 = Eigen::MatrixXf::Zero(hidden, kOutputs);  // starts at the prior
  b1 = Eigen::RowVectorXf::Zero(hidden), b2 = Eigen::RowVectorXf::Zero(hidden), b3 = Eigen::RowVectorXf::Zero(kOutputs);
}

int64_t Decoder::parameter_count() const { return w1.size() + w2.size() + w3.size() + b1.size() + b2.size() + b3.size(); }

namespace {

/// The decoder's parameters as one vector (for Adam) and back.
Eigen::VectorXd flatten(const Decoder& d) {
  Eigen::VectorXd v(d.parameter_count());
  Eigen::Index at = 0;
  for (const Eigen::MatrixXf* m : {&d.w1, &d.w2, &d.w3}) {
    v.segment(at, m->size()) = Eigen::Map<const Eigen::VectorXf>(m->data(), m->size()).cast<double>();
    at += m->size();
  }
  for (const Eigen::RowVectorXf* b : {&d.b1, &d.b2, &d.b3}) {
    v.segment(at, b->size()) = b->transpose().cast<double>();
    at += b->size();
  }
  return v;
}
void unflatten(const Eigen::VectorXd& v, Decoder& d) {
  Eigen::Index at = 0;
  for (Eigen::MatrixXf* m : {&d.w1, &d.w2, &d.w3}) {
    Eigen::Map<Eigen::VectorXf>(m->data(), m->size()) = v.segment(at, m->size()).cast<float>();
    at += m->size();
  }
  for (Eigen::RowVectorXf* b : {&d.b1, &d.b2, &d.b3}) {
    *b = v.segment(at, b->size()).cast<float>().transpose();
    at += b->size();
  }
}

}  // namespace

Decoder load_decoder(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  const std::string schema = f.require_schema("sbr-render.decoder/");
  if (schema != kDecoderSchema)
    throw nk::input_error(path, "", "decoder of schema " + schema + "; this sbr-render reads " + kDecoderSchema +
                                        " (retrain with sbr-render train-decoder)");
  Decoder d;
  const auto w1 = f.read_matrix<float>("/decoder/w1");
  d.hidden = int(w1.cols());
  auto read = [&](const std::string& name, int rows, int cols) {
    const auto m = f.read_matrix<float>(name);
    if (m.rows() != rows || m.cols() != cols)
      throw nk::input_error(path, name, "expected [" + std::to_string(rows) + "," + std::to_string(cols) + "], found [" +
                                            std::to_string(m.rows()) + "," + std::to_string(m.cols()) + "]");
    Eigen::MatrixXf out = m;
    if (!out.allFinite()) throw nk::input_error(path, name, "holds NaN or Inf");
    return out;
  };
  if (d.hidden < 1 || d.hidden > 4096) throw nk::input_error(path, "/decoder/w1", "hidden width out of range");
  d.w1 = read("/decoder/w1", Decoder::kInputs, d.hidden);
  d.w2 = read("/decoder/w2", d.hidden, d.hidden);
  d.w3 = read("/decoder/w3", d.hidden, Decoder::kOutputs);
  d.b1 = read("/decoder/b1", 1, d.hidden);
  d.b2 = read("/decoder/b2", 1, d.hidden);
  d.b3 = read("/decoder/b3", 1, Decoder::kOutputs);
  return d;
}

void save_decoder(const std::string& path, bool no_clobber, const Decoder& d,
                  const std::vector<std::pair<std::string, double>>& attributes) {
  nk::h5::Writer out(path, kDecoderSchema, no_clobber);
  using RM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  out.write_matrix("/decoder/w1", RM(d.w1), "in,hidden");
  out.write_matrix("/decoder/w2", RM(d.w2), "hidden,hidden");
  out.write_matrix("/decoder/w3", RM(d.w3), "hidden,out");
  out.write_matrix("/decoder/b1", RM(d.b1), "1,hidden");
  out.write_matrix("/decoder/b2", RM(d.b2), "1,hidden");
  out.write_matrix("/decoder/b3", RM(d.b3), "1,out");
  out.attr("/decoder", "patch", int64_t{kP});
  out.attr("/decoder", "outputs", std::string(kStrokeColumns) + ",gain");
  for (const auto& [name, value] : attributes) out.attr("/", name, value);
  out.commit();
}

std::string default_decoder_path() {
  struct stat st {};
  if (::stat(NK_SBR_DECODER_INSTALLED, &st) == 0) return NK_SBR_DECODER_INSTALLED;
  return NK_SBR_DECODER_SOURCE;
}

Painting decode_strokes(const Decoder& d, const Target& target, int strokes, int threads, DecodeReport* report) {
  Painting p;
  p.width = target.width, p.height = target.height;
  p.background = mean_colour(target);
  // Grids of 4, 8, 16, ... windows a side while cells keep >= 4 pixels, until
  // there are at least twice as many candidates as strokes.
  std::vector<int> grids;
  int64_t cells = 0;
  for (int g = 4; cells < 2 * int64_t(strokes); g *= 2) {
    if (g > 4 && std::min(target.width, target.height) / g < 4) break;
    grids.push_back(g);
    cells += int64_t(g) * g;
  }
  struct Candidate {
    Stroke stroke;
    double worth;  ///< predicted gain times the window area it acts on
  };
  const Integral target_sum(target.pixels, target.width, target.height);
  // One coarse-to-fine sweep: at each scale predict a stroke per window, keep
  // the 'keep[l]' with the largest predicted gains (all when keep is empty), and
  // paint them before the next scale looks at the canvas.
  auto sweep = [&](const std::vector<int64_t>& keep, std::vector<std::vector<Candidate>>& kept) {
    kept.assign(grids.size(), {});
    RGB canvas(target.pixels.size());
    for (size_t i = 0; i < canvas.size(); ++i) canvas[i] = p.background[i % 3];
    for (size_t l = 0; l < grids.size(); ++l) {
      const int g = grids[l];
      const double cw = double(target.width) / g, ch = double(target.height) / g, r = std::max(cw, ch);
      const Integral canvas_sum(canvas, target.width, target.height);
      Eigen::MatrixXf x(g * g, Decoder::kInputs);
      for (int j = 0; j < g; ++j)
        for (int i = 0; i < g; ++i) {
          Eigen::RowVectorXf row(Decoder::kInputs);
          window_features(target_sum, canvas_sum, (i + 0.5) * cw, (j + 0.5) * ch, r, row.data());
          x.row(j * g + i) = row;
        }
      Activations a;
      forward(d, x, a);
      std::vector<Candidate> all;
      for (int j = 0; j < g; ++j)
        for (int i = 0; i < g; ++i) {
          const Eigen::RowVectorXf o = a.out.row(j * g + i);
          all.push_back({place(activate(o.data()), (i + 0.5) * cw, (j + 0.5) * ch, r), double(o[kStrokeParams]) * cw * ch});
        }
      std::vector<size_t> order(all.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t a1, size_t b1) { return all[a1].worth > all[b1].worth; });
      size_t n = 0;
      if (keep.empty()) {
        n = order.size();
      } else {
        n = size_t(std::min<int64_t>(keep[l], int64_t(order.size())));
      }
      order.resize(n);
      std::sort(order.begin(), order.end());  // raster order within a scale
      Painting level;
      level.width = p.width, level.height = p.height;
      for (size_t k : order) {
        kept[l].push_back(all[k]);
        level.strokes.push_back(all[k].stroke);
      }
      canvas = render(level, {p.width, p.height, 0.5f, threads}, nullptr, &canvas);
    }
  };
  // Stroke-scale allocation: the first sweep proposes a stroke in every
  // window of every scale; the budget goes to the largest predicted gains
  // across all scales; the second sweep paints exactly that many per scale,
  // each scale seeing the canvas the kept strokes make.
  std::vector<std::vector<Candidate>> proposed;
  sweep({}, proposed);
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t l = 0; l < proposed.size(); ++l)
    for (const Candidate& c : proposed[l]) ranked.emplace_back(c.worth, l);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int64_t> keep(grids.size(), 0);
  for (size_t k = 0; k < std::min(ranked.size(), size_t(strokes)); ++k) ++keep[ranked[k].second];
  std::vector<std::vector<Candidate>> kept;
  sweep(keep, kept);
  if (report) {
    report->grid = grids;
    report->allocated.clear();
  }
  for (size_t l = 0; l < kept.size(); ++l) {
    for (const Candidate& c : kept[l]) p.strokes.push_back(c.stroke);
    if (report) report->allocated.push_back(int(kept[l].size()));
  }
  // Tiny images have fewer windows than strokes: the rest go where the residual is.
  if (int(p.strokes.size()) < strokes) {
    const RGB now = render(p, {p.width, p.height, 0.5f, threads});
    Spawner spawner(target, now);
    nk::Rng rng(0x5eed);
    const double cell = std::sqrt(double(target.width) * target.height / strokes);
    while (int(p.strokes.size()) < strokes) p.strokes.push_back(spawner.spawn(2 * cell, std::max(1.0, 0.6 * cell), rng));
  }
  return p;
}

// ---- training ----

namespace {

/// Pictures the training windows are cut from: the given images, or none
/// (then every window is generated).
std::vector<Target> training_images(const std::string& path) {
  std::vector<Target> out;
  if (path.empty()) return out;
  const TargetSource source(path);
  // Every picture is kept in memory: a few thousand at most.
  nk::data::check_run_items(path, "/images", source.count(), 4096);
  for (int64_t i = 0; i < source.count(); ++i) out.push_back(source.read(i));
  return out;
}

/// One training window at kWindow x kWindow: what is painted so far (canvas)
/// and what should be there (target). Half are synthetic (target = canvas
/// plus a random stroke drawn by our renderer, which is returned as 'truth'),
/// half are real crops (canvas = the crop blurred to a coarser scale).
struct Sample {
  RGB canvas, target;
  bool has_truth = false;
  Stroke truth;
};

void smooth_field(RGB& img, nk::Rng& rng) {
  float c0[3], dx[3], dy[3];
  for (int c = 0; c < 3; ++c) {
    c0[c] = float(rng.uniform());
    dx[c] = float((rng.uniform() - 0.5) * 0.4);
    dy[c] = float((rng.uniform() - 0.5) * 0.4);
  }
  for (int y = 0; y < kWindow; ++y)
    for (int x = 0; x < kWindow; ++x)
      for (int c = 0; c < 3; ++c)
        img[(size_t(y) * kWindow + x) * 3 + c] =
            std::clamp(c0[c] + dx[c] * (x - kWindow / 2) / kWindow * 2 + dy[c] * (y - kWindow / 2) / kWindow * 2, 0.f, 1.f);
}

Sample make_sample(const std::vector<Target>& images, nk::Rng& rng) {
  Sample s;
  s.canvas.assign(size_t(kWindow) * kWindow * 3, 0.f);
  const bool real = !images.empty() && rng.uniform() < 0.5;
  if (real) {
    const Target& img = images[rng.below(images.size())];
    const int side = int(4 + rng.below(uint64_t(std::max(5, std::min(img.width, img.height) / 2))));
    const int x0 = int(rng.below(uint64_t(std::max(1, img.width - side)))), y0 = int(rng.below(uint64_t(std::max(1, img.height - side))));
    const Integral sum(img.pixels, img.width, img.height);
    s.target.resize(s.canvas.size());
    const double step = double(side) / kWindow;
    for (int y = 0; y < kWindow; ++y)
      for (int x = 0; x < kWindow; ++x) sum.mean(x0 + x * step, y0 + y * step, x0 + (x + 1) * step, y0 + (y + 1) * step,
                                                 &s.target[(size_t(y) * kWindow + x) * 3]);
    // Canvas: the window's mean, or the crop averaged over 4x4 blocks.
    const bool flat = rng.uniform() < 0.5;
    for (int y = 0; y < kWindow; ++y)
      for (int x = 0; x < kWindow; ++x)
        for (int c = 0; c < 3; ++c) {
          double m = 0;
          int n = 0;
          const int bx = flat ? 0 : x / 4 * 4, by = flat ? 0 : y / 4 * 4, bs = flat ? kWindow : 4;
          for (int yy = by; yy < by + bs; ++yy)
            for (int xx = bx; xx < bx + bs; ++xx) m += s.target[(size_t(yy) * kWindow + xx) * 3 + c], ++n;
          s.canvas[(size_t(y) * kWindow + x) * 3 + c] = float(m / n);
        }
    return s;
  }
  smooth_field(s.canvas, rng);
  Stroke& t = s.truth;
  const double cx = kWindow / 2 + rng.normal() * 2, cy = kWindow / 2 + rng.normal() * 2;
  const double angle = rng.uniform() * 3.14159265358979, len = 3 + rng.uniform() * 9;
  const double bend = (rng.uniform() - 0.5) * len * 0.8;
  t.x0 = float(cx - std::cos(angle) * len / 2), t.y0 = float(cy - std::sin(angle) * len / 2);
  t.x2 = float(cx + std::cos(angle) * len / 2), t.y2 = float(cy + std::sin(angle) * len / 2);
  t.x1 = float(cx - std::sin(angle) * bend), t.y1 = float(cy + std::cos(angle) * bend);
  t.width = float(1 + rng.uniform() * 6);
  t.r = float(rng.uniform()), t.g = float(rng.uniform()), t.b = float(rng.uniform());
  t.opacity = float(0.5 + 0.5 * rng.uniform());
  s.has_truth = true;
  Painting one;
  one.width = one.height = kWindow;
  one.strokes = {t};
  s.target = render(one, {kWindow, kWindow, 0.5f, 1}, nullptr, &s.canvas);
  return s;
}

}  // namespace

void train_decoder(const TrainDecoderOptions& o, const nk::RunEnv& env) {
  if (o.steps < 1 || o.batch < 1) throw nk::usage_error("--steps and --batch must be at least 1");
  const std::vector<Target> images = training_images(o.images);
  Decoder d;
  d.init(o.hidden, env.seed);
  Eigen::VectorXd theta = flatten(d);
  nk::Adam adam(theta.size(), {o.learning_rate, 0.9, 0.999, 1e-8, 0.0});
  const int threads = env.threads;
  const int64_t values = int64_t(kWindow) * kWindow * 3;
  const double r = kWindow / 2.0;  // window half-size in window pixels
  nk::Progress progress("train-decoder", o.steps);
  const nk::Stopwatch watch;
  double recent = 0, recent_gain = 0, recent_before = 0;
  std::vector<Sample> batch(size_t(o.batch));
  for (int step = 0; step < o.steps; ++step) {
    adam.set_learning_rate(nk::cosine_rate(o.learning_rate, double(step) / o.steps, 0.1));  // to a tenth of the rate
    Eigen::MatrixXf x(o.batch, Decoder::kInputs);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int b = 0; b < o.batch; ++b) {
      nk::Rng rng = nk::Rng(env.seed).split(uint64_t(step) * uint64_t(o.batch) + uint64_t(b) + 1);
      batch[size_t(b)] = make_sample(images, rng);
      const Sample& s = batch[size_t(b)];
      const Integral ts(s.target, kWindow, kWindow), cs(s.canvas, kWindow, kWindow);
      Eigen::RowVectorXf row(Decoder::kInputs);
      window_features(ts, cs, r, r, r, row.data());
      x.row(b) = row;
    }
    Activations a;
    forward(d, x, a);
    Eigen::MatrixXf dout = Eigen::MatrixXf::Zero(o.batch, Decoder::kOutputs);
    double loss_sum = 0, gain_sum = 0, before_sum = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : loss_sum, gain_sum, before_sum)
    for (int b = 0; b < o.batch; ++b) {
      const Sample& s = batch[size_t(b)];
      const Eigen::RowVectorXf out = a.out.row(b);
      const WindowStroke ws = activate(out.data());
      Painting one;
      one.width = one.height = kWindow;
      one.strokes = {place(ws, r, r, r)};
      std::vector<float> g;
      std::array<float, 3> gb;
      const double after = render_backward(one, {kWindow, kWindow, 0.5f, 1}, s.target, Loss::l2, g, gb, nullptr, nullptr,
                                           nullptr, &s.canvas);
      double before = 0;
      for (int64_t i = 0; i < values; ++i) before += std::pow(double(s.canvas[size_t(i)]) - s.target[size_t(i)], 2);
      before /= double(values);
      loss_sum += after;
      before_sum += before;
      // dL/d(window stroke) from the renderer, then through the activations.
      float dparam[kStrokeParams];
      for (int k = 0; k < kStrokeParams; ++k) dparam[k] = g[size_t(k)];
      if (s.has_truth) {
        // Parameter supervision on synthetic windows (either end may come first).
        const float* t = params_of(s.truth);
        const float* p = params_of(one.strokes[0]);
        double fwd = 0, rev = 0;
        const int rev_idx[6] = {4, 5, 2, 3, 0, 1};
        for (int k = 0; k < 6; ++k) fwd += std::pow(p[k] - t[k], 2), rev += std::pow(p[k] - t[rev_idx[k]], 2);
        const double w = 1e-4;
        for (int k = 0; k < 6; ++k) dparam[k] += float(2 * w * (p[k] - t[fwd <= rev ? k : rev_idx[k]]));
        dparam[6] += float(2 * w * (p[6] - t[6]));
      }
      float* dg = &dout(b, 0);
      for (int k = 0; k < 6; ++k) dg[k] = float(dparam[k] * r * (1 - ws.p[k] * ws.p[k]));
      const float s6 = (ws.width - 0.02f) / 0.98f;
      dg[6] = float(dparam[6] * r * 0.98f * s6 * (1 - s6));
      for (int c = 0; c < 3; ++c) dg[7 + c] = dparam[7 + c] * ws.rgb[c] * (1 - ws.rgb[c]);
      const float s10 = (ws.opacity - 0.1f) / 0.9f;
      dg[10] = dparam[10] * 0.9f * s10 * (1 - s10);
      // Gain head: regression onto the reduction this stroke achieved.
      const double gain_target = kGainScale * (before - after), gain_err = out[kStrokeParams] - gain_target;
      dg[kStrokeParams] = float(2 * gain_err * 1e-4);
      gain_sum += gain_err * gain_err;
    }
    dout /= float(o.batch);
    // Back through the MLP.
    const Eigen::MatrixXf dh2 = ((dout * d.w3.transpose()).array() * (a.h2.array() > 0).cast<float>()).matrix();
    const Eigen::MatrixXf dh1 = ((dh2 * d.w2.transpose()).array() * (a.h1.array() > 0).cast<float>()).matrix();
    Decoder grad = d;
    grad.w3 = a.h2.transpose() * dout, grad.b3 = dout.colwise().sum();
    grad.w2 = a.h1.transpose() * dh2, grad.b2 = dh2.colwise().sum();
    grad.w1 = x.transpose() * dh1, grad.b1 = dh1.colwise().sum();
    adam.step(theta, flatten(grad));
    unflatten(theta, d);
    recent = step ? 0.98 * recent + 0.02 * loss_sum / o.batch : loss_sum / o.batch;
    recent_before = step ? 0.98 * recent_before + 0.02 * before_sum / o.batch : before_sum / o.batch;
    recent_gain = step ? 0.98 * recent_gain + 0.02 * gain_sum / o.batch : gain_sum / o.batch;
    if ((step + 1) % 500 == 0)
      spdlog::debug("step {}: window loss {:.5f} (canvas alone {:.5f}), gain RMS error {:.4f}", step + 1, recent, recent_before,
                    std::sqrt(recent_gain));
    progress.update(step + 1);
  }
  progress.finish();
  const double seconds = watch.seconds();
  spdlog::info("trained {} parameters in {:.1f} s: window loss {:.5f}, gain RMS error {:.4f}", d.parameter_count(), seconds,
               recent, std::sqrt(recent_gain));
  save_decoder(o.output, o.no_clobber, d,
               {{"steps", double(o.steps)}, {"batch", double(o.batch)}, {"final_window_loss", recent},
                {"training_seconds", seconds}, {"training_images", double(images.size())}});
}

}  // namespace sbr
