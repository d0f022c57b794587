// paint.cpp - test-time optimisation with the single-stroke audit.
#include "sbr-render/paint.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/image.hpp"
#include "nk/log.hpp"
#include "nk/nn/optim.hpp"
#include "nk/timer.hpp"

namespace sbr {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSettleFrom = 0.8;    ///< the settling fifth of the finest scale begins here
constexpr double kSecondRepair = 0.9;  ///< the repair runs again halfway through it
constexpr double kWeakShare = 0.25;    ///< relocation: only strokes contributing under a quarter of the median
constexpr double kColourMargin = 0.9;  ///< the colour bound holds colours at 0.9 of the audit's limit
constexpr int kColourBoundEvery = 5;   ///< steps between colour bounds while settling

/// Adam works on parameters divided by these units, so that one learning rate
/// moves points by ~1/10 of the canvas per unit and colours by 1 per unit.
std::array<double, kStrokeParams> units_for(int width, int height) {
  const double size = std::max(width, height);
  const double pos = size / 10, wid = size / 25;
  return {pos, pos, pos, pos, pos, pos, wid, 1, 1, 1, 1};
}

std::vector<StrokeAudit> judge(const std::vector<StrokeFootprint>& feet, const AuditRule& rule, double area_scale) {
  std::vector<StrokeAudit> out(feet.size());
  for (size_t i = 0; i < feet.size(); ++i) {
    const StrokeFootprint& f = feet[i];
    StrokeAudit& a = out[i];
    a.area = f.coverage / area_scale;
    a.visible = f.coverage > 0 ? f.visible / f.coverage : 0;
    a.colour_error = f.visible > 0 ? std::sqrt(f.colour_error / (3 * f.visible)) : 0;
    a.loss_delta = f.loss_delta;
    if (a.area < rule.min_area) a.defects |= kVanished;
    if (a.area >= rule.min_area && a.visible < rule.min_visible) a.defects |= kHidden;
    if (a.area >= rule.min_area && a.colour_error > rule.max_colour_error) a.defects |= kOffColour;
    if (a.area >= rule.min_area && a.loss_delta <= 0) a.defects |= kUseless;
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void clamp_stroke(Stroke& s, int width, int height, float min_opacity) {
  const float mx = 0.1f * width, my = 0.1f * height;
  for (int k = 0; k < 6; k += 2) {
    float* p = params_of(s);
    p[k] = std::clamp(p[k], -mx, width + mx);
    p[k + 1] = std::clamp(p[k + 1], -my, height + my);
  }
  s.width = std::clamp(s.width, 1.0f, 0.25f * std::max(width, height));
  s.r = std::clamp(s.r, 0.f, 1.f), s.g = std::clamp(s.g, 0.f, 1.f), s.b = std::clamp(s.b, 0.f, 1.f);
  s.opacity = std::clamp(s.opacity, min_opacity, 1.f);
}

}  // namespace

std::array<float, 3> mean_colour(const Target& target) {
  double sum[3] = {0, 0, 0};
  for (size_t i = 0; i < target.pixels.size(); ++i) sum[i % 3] += target.pixels[i];
  const double n = std::max<double>(1, double(target.pixels.size() / 3));
  return {float(sum[0] / n), float(sum[1] / n), float(sum[2] / n)};
}

Target resample(const Target& target, int width, int height) {
  if (width == target.width && height == target.height) return target;
  nk::Image img;
  img.width = target.width, img.height = target.height, img.channels = 3;
  img.pixels = target.pixels;
  nk::Image out = nk::resize_image(img, width, height);
  return {width, height, std::move(out.pixels)};
}

std::string defect_names(uint8_t defects) {
  if (defects == kGood) return "good";
  std::string out;
  const std::pair<uint8_t, const char*> names[] = {
      {kVanished, "vanished"}, {kHidden, "hidden"}, {kOffColour, "off-colour"}, {kUseless, "useless"}};
  for (const auto& [bit, name] : names)
    if (defects & bit) out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

std::vector<StrokeAudit> audit(const Painting& painting, const Target& target, const AuditRule& rule,
                               double softness, int threads, double* loss_out) {
  const RenderSpec spec{target.width, target.height, float(softness), threads};
  std::vector<float> grad;
  std::array<float, 3> gbg;
  std::vector<StrokeFootprint> feet;
  const double loss = render_backward(painting, spec, target.pixels, Loss::l2, grad, gbg, nullptr, &feet);
  if (loss_out) *loss_out = loss;
  const double area_scale = double(spec.width) * spec.height / (double(painting.width) * painting.height);
  return judge(feet, rule, area_scale);
}

double coherence_energy(const Painting& painting, double weight, std::vector<float>* grad) {
  if (painting.strokes.empty()) return 0;
  const double scale = weight / double(painting.strokes.size());
  double total = 0;
  for (size_t i = 0; i < painting.strokes.size(); ++i) {
    const Stroke& s = painting.strokes[i];
    const double cx = s.x0 - 2.0 * s.x1 + s.x2, cy = s.y0 - 2.0 * s.y1 + s.y2;
    const double ex = s.x2 - s.x0, ey = s.y2 - s.y0;
    const double c2 = cx * cx + cy * cy, den = ex * ex + ey * ey + double(s.width) * s.width + 1;
    total += c2 / den;
    if (!grad) continue;
    float* g = grad->data() + i * kStrokeParams;
    const double a = 2 / den * scale, b = 2 * c2 / (den * den) * scale;
    g[0] += float(a * cx + b * ex), g[1] += float(a * cy + b * ey);
    g[2] += float(-2 * a * cx), g[3] += float(-2 * a * cy);
    g[4] += float(a * cx - b * ex), g[5] += float(a * cy - b * ey);
    g[6] += float(-b * s.width);
  }
  return total * scale;
}

namespace {

/// The stroke with the target's colour at (x, y) and opacity 0.9.
Stroke coloured_at(const Target& target, double x, double y, Stroke s) {
  const int px = std::clamp(int(x), 0, target.width - 1), py = std::clamp(int(y), 0, target.height - 1);
  const float* c = &target.pixels[(size_t(py) * target.width + px) * 3];
  s.r = c[0], s.g = c[1], s.b = c[2];
  s.opacity = 0.9f;
  return s;
}

}  // namespace

Painting random_init(const Target& target, int strokes, uint64_t seed) {
  Painting p;
  p.width = target.width, p.height = target.height;
  p.background = mean_colour(target);
  nk::Rng rng(seed);
  const double cell = std::sqrt(double(target.width) * target.height / std::max(1, strokes));
  for (int i = 0; i < strokes; ++i) {
    const double x = rng.uniform() * target.width, y = rng.uniform() * target.height;
    const double angle = rng.uniform() * kPi, len = cell;
    const double dx = std::cos(angle) * len, dy = std::sin(angle) * len;
    const double bend = (rng.uniform() - 0.5) * 0.3 * len;
    Stroke s;
    s.x0 = float(x - dx), s.y0 = float(y - dy), s.x2 = float(x + dx), s.y2 = float(y + dy);
    s.x1 = float(x - std::sin(angle) * bend), s.y1 = float(y + std::cos(angle) * bend);
    s.width = float(std::max(1.0, 0.6 * cell));
    p.strokes.push_back(coloured_at(target, x, y, s));
  }
  return p;
}

Painting grid_init(const Target& target, int strokes) {
  Painting p;
  p.width = target.width, p.height = target.height;
  p.background = mean_colour(target);
  const int cols = std::max(1, int(std::ceil(std::sqrt(double(strokes) * target.width / target.height))));
  const int rows = std::max(1, (strokes + cols - 1) / cols);
  const double cw = double(target.width) / cols, ch = double(target.height) / rows;
  for (int i = 0; i < strokes; ++i) {
    const double x = (i % cols + 0.5) * cw, y = (i / cols + 0.5) * ch;
    Stroke s;
    s.x0 = float(x - 0.5 * cw), s.x1 = float(x), s.x2 = float(x + 0.5 * cw);
    s.y0 = s.y1 = s.y2 = float(y);
    s.width = float(std::max(1.0, ch));
    p.strokes.push_back(coloured_at(target, x, y, s));
  }
  return p;
}

Spawner::Spawner(const Target& target, const RGB& rendered) : target_(target) {
  residual_.resize(size_t(target.width) * target.height);
  for (size_t i = 0; i < residual_.size(); ++i) {
    double r = 0;
    for (int c = 0; c < 3; ++c) r += std::pow(double(rendered[i * 3 + c]) - target.pixels[i * 3 + c], 2);
    residual_[i] = r;
  }
}

Stroke Spawner::spawn(double length, double width, nk::Rng& rng) {
  const int w = target_.width, h = target_.height;
  const double total = std::accumulate(residual_.begin(), residual_.end(), 0.0);
  size_t pick = size_t(rng.below(residual_.size()));
  if (total > 0) {
    double u = rng.uniform() * total;
    for (size_t i = 0; i < residual_.size(); ++i)
      if ((u -= residual_[i]) <= 0) {
        pick = i;
        break;
      }
  }
  const int px = int(pick % w), py = int(pick / w);
  // Structure tensor of the luminance over a 5x5 window: strokes follow edges.
  auto lum = [&](int x, int y) {
    x = std::clamp(x, 0, w - 1), y = std::clamp(y, 0, h - 1);
    const float* c = &target_.pixels[(size_t(y) * w + x) * 3];
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
  };
  double jxx = 0, jxy = 0, jyy = 0, col[3] = {0, 0, 0};
  int n = 0;
  for (int y = py - 2; y <= py + 2; ++y)
    for (int x = px - 2; x <= px + 2; ++x) {
      const double gx = 0.5 * (lum(x + 1, y) - lum(x - 1, y)), gy = 0.5 * (lum(x, y + 1) - lum(x, y - 1));
      jxx += gx * gx, jxy += gx * gy, jyy += gy * gy;
      if (x >= 0 && x < w && y >= 0 && y < h) {
        for (int c = 0; c < 3; ++c) col[c] += target_.pixels[(size_t(y) * w + x) * 3 + c];
        ++n;
      }
    }
  // The gradient direction is the major eigenvector; the edge runs across it.
  double angle = 0.5 * std::atan2(2 * jxy, jxx - jyy) + kPi / 2;
  if (jxx + jyy < 1e-10) angle = rng.uniform() * kPi;
  const double dx = 0.5 * length * std::cos(angle), dy = 0.5 * length * std::sin(angle);
  Stroke s;
  s.x0 = float(px + 0.5 - dx), s.y0 = float(py + 0.5 - dy);
  s.x1 = float(px + 0.5), s.y1 = float(py + 0.5);
  s.x2 = float(px + 0.5 + dx), s.y2 = float(py + 0.5 + dy);
  s.width = float(width);
  s.r = float(col[0] / n), s.g = float(col[1] / n), s.b = float(col[2] / n);
  s.opacity = 0.9f;
  // Clear the residual under the new stroke's extent.
  const int reach = int(std::ceil(0.5 * length));
  for (int y = std::max(0, py - reach); y <= std::min(h - 1, py + reach); ++y)
    for (int x = std::max(0, px - reach); x <= std::min(w - 1, px + reach); ++x) residual_[size_t(y) * w + x] = 0;
  return s;
}

std::pair<int64_t, int64_t> prune_defective(Painting& painting, const Target& target, const AuditRule& rule,
                                            double softness, int threads) {
  int64_t first = -1, removed = 0;
  for (int round = 0; round < 32; ++round) {
    const std::vector<StrokeAudit> verdict = audit(painting, target, rule, softness, threads);
    std::vector<size_t> free;
    int64_t defective = 0;
    for (size_t i = 0; i < verdict.size(); ++i) {
      defective += verdict[i].defects != kGood;
      if (verdict[i].defects & (kVanished | kUseless)) free.push_back(i);
    }
    if (first < 0) first = defective;
    if (free.empty()) break;
    // Each stroke was judged with all the others present, so two that cover
    // each other may both look useless: within a round, remove only strokes
    // whose boxes do not overlap, the most harmful first.
    std::stable_sort(free.begin(), free.end(), [&](size_t a, size_t b) { return verdict[a].loss_delta < verdict[b].loss_delta; });
    std::vector<char> drop(verdict.size(), 0);
    std::vector<std::array<float, 4>> taken;
    for (size_t i : free) {
      const Stroke& s = painting.strokes[i];
      const float h = 0.5f * s.width + 1;
      const std::array<float, 4> box{std::min({s.x0, s.x1, s.x2}) - h, std::max({s.x0, s.x1, s.x2}) + h,
                                     std::min({s.y0, s.y1, s.y2}) - h, std::max({s.y0, s.y1, s.y2}) + h};
      bool clear = true;
      for (const auto& t : taken) clear &= box[1] < t[0] || t[1] < box[0] || box[3] < t[2] || t[3] < box[2];
      if (!clear) continue;
      taken.push_back(box);
      drop[i] = 1;
    }
    std::vector<Stroke> kept;
    for (size_t i = 0; i < painting.strokes.size(); ++i)
      if (!drop[i]) kept.push_back(painting.strokes[i]);
    removed += int64_t(painting.strokes.size() - kept.size());
    painting.strokes = std::move(kept);
  }
  return {std::max<int64_t>(first, 0), removed};
}

RespawnPlan plan_respawn(const std::vector<StrokeAudit>& verdict, const std::vector<int>& born, int step,
                         const PaintConfig& config) {
  RespawnPlan plan;
  const size_t n = verdict.size();
  auto settled = [&](size_t i) { return step - born[i] >= config.audit_every; };
  for (size_t i = 0; i < n; ++i)
    if (verdict[i].defects != kGood && settled(i)) plan.defective.push_back(int64_t(i));
  // Strokes that do nothing (vanished, useless) first, then hidden ones
  // (least visible first), then off-colour ones (worst first).
  auto rank = [&](int64_t i) {
    const StrokeAudit& a = verdict[size_t(i)];
    if (a.defects & (kVanished | kUseless)) return std::pair<int, double>{0, a.loss_delta};
    if (a.defects & kHidden) return std::pair<int, double>{1, a.visible};
    return std::pair<int, double>{2, -a.colour_error};
  };
  std::stable_sort(plan.defective.begin(), plan.defective.end(), [&](int64_t a, int64_t b) { return rank(a) < rank(b); });
  plan.defective.resize(std::min(plan.defective.size(), size_t(std::ceil(config.max_respawn * double(n)))));
  if (config.relocate <= 0 || n == 0) return plan;
  std::vector<double> deltas;
  for (const StrokeAudit& a : verdict) deltas.push_back(a.loss_delta);
  const double cut = kWeakShare * median(deltas);
  for (size_t i = 0; i < n; ++i)
    if (verdict[i].defects == kGood && settled(i) && verdict[i].loss_delta < cut) plan.weak.push_back(int64_t(i));
  std::stable_sort(plan.weak.begin(), plan.weak.end(),
                   [&](int64_t a, int64_t b) { return verdict[size_t(a)].loss_delta < verdict[size_t(b)].loss_delta; });
  plan.weak.resize(std::min(plan.weak.size(), size_t(std::ceil(config.relocate * double(n)))));
  return plan;
}

bool bound_colour(Stroke& stroke, const StrokeFootprint& footprint, double bound) {
  const double seen = footprint.visible;
  if (!(seen > 0)) return false;
  const double mean[3] = {footprint.seen_target[0] / seen, footprint.seen_target[1] / seen, footprint.seen_target[2] / seen};
  // The error of colour c is |c - mean|^2 / 3 + spread: the least is the spread.
  const double spread =
      std::max(0.0, (footprint.seen_target_sq - seen * (mean[0] * mean[0] + mean[1] * mean[1] + mean[2] * mean[2])) / (3 * seen));
  if (spread >= bound * bound) return false;
  float* colour = &stroke.r;
  double distance = 0;
  for (int c = 0; c < 3; ++c) distance += (colour[c] - mean[c]) * (colour[c] - mean[c]);
  distance = std::sqrt(distance);
  const double radius = std::sqrt(3 * (bound * bound - spread));
  if (distance > radius)
    for (int c = 0; c < 3; ++c) colour[c] = float(mean[c] + (colour[c] - mean[c]) * radius / distance);
  return true;
}

namespace {

/// One scale of the coarse-to-fine schedule: the render size and its share of the Adam steps.
struct Level {
  int width, height, iterations;
};

/// Render sizes coarse to fine (at least 32 pixels on the short side), iterations 1 : 2 : 3 ... (the finest most).
std::vector<Level> plan_levels(const Painting& painting, const PaintConfig& config) {
  std::vector<Level> levels;
  for (double s : config.scales) {
    const int w = std::max(1, int(std::lround(painting.width * s))),
              h = std::max(1, int(std::lround(painting.height * s)));
    if (std::min(w, h) < 32 && s < config.scales.back()) continue;
    levels.push_back({w, h, 0});
  }
  const int weight_sum = int(levels.size() * (levels.size() + 1) / 2);
  int assigned = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    // The last level takes the remainder, so that the levels add up to exactly --iterations.
    levels[l].iterations =
        l + 1 == levels.size() ? config.iterations - assigned : config.iterations * int(l + 1) / weight_sum;
    assigned += levels[l].iterations;
  }
  return levels;
}

/// What stays fixed through one level: the target and render at its size, and its settling schedule.
struct LevelSetup {
  Target target;
  RenderSpec spec;
  double area_scale;  ///< level pixels per canvas pixel (footprint areas are judged in canvas pixels)
  double to_level;    ///< level length per canvas length
  int iterations;
  int settle_from;    ///< first step of the settling fifth (none before the finest level: 'iterations')
  int second_repair;  ///< the step of the second repair, halfway through the settling fifth
};

/// The set-up of one level: the target resampled to its size, the render spec, and where settling begins.
LevelSetup set_up_level(const Level& level, bool last_level, const Painting& painting, const Target& target,
                        const PaintConfig& config) {
  // The fidelity pull and the hidden-coverage penalty serve the audit's rule, so they act only with it.
  const float fidelity = config.audit ? float(config.fidelity) : 0.0f;
  const float hidden_penalty = config.audit ? float(config.hidden_penalty) : 0.0f;
  const RenderSpec spec{level.width, level.height, config.softness, config.threads, fidelity, hidden_penalty};
  return {resample(target, level.width, level.height),
          spec,
          double(level.width) * level.height / (double(painting.width) * painting.height),
          double(level.width) / painting.width,
          level.iterations,
          last_level ? int(kSettleFrom * level.iterations) : level.iterations,
          last_level ? int(kSecondRepair * level.iterations) : level.iterations};
}

/// The optimiser's state across levels: the strokes in Adam's normalised units, Adam's moments, each stroke's birth
/// step, the buffers of the renderer and the running report.
class Optimiser {
 public:
  /// Clamps the initial strokes into range and packs them for Adam.
  Optimiser(Painting& painting, const Target& target, const PaintConfig& config);
  /// Whether the repair removes hidden strokes at step 'it' of 'level'.
  bool repair_due(const LevelSetup& level, int it) const;
  /// The repair: hidden strokes removed, their neighbours left to close the gaps.
  void repair(const LevelSetup& level);
  /// One optimisation iteration: an Adam step at the level's cosine rate, then the colour bound and the audit
  /// with its re-spawning when they are due.
  void iterate(const LevelSetup& level, int it);
  /// Steps taken so far over all levels.
  int steps_done() const { return step_; }
  /// The report: the final prune of defective strokes and the loss at full size.
  PaintReport finish();

 private:
  /// One Adam step on the loss at the level's size plus the coherence term; with 'audit_now' the render and the
  /// footprints of the state before the step are kept for the audit, with 'bound_now' the footprints.
  void descend(const LevelSetup& level, bool audit_now, bool bound_now);
  /// The colour bound: every stroke's colour held within the audit's limit, on the footprints of 'descend'.
  void bound_colours();
  /// The audit of the last step's footprints: defective strokes re-spawned and weak ones relocated.
  void audit_and_respawn(const LevelSetup& level);
  /// 'count' new strokes where the residual of the last render is large, sized like the strokes of 'order'.
  std::vector<Stroke> spawn_fresh(const LevelSetup& level, const std::vector<Eigen::Index>& order, size_t count);
  /// The strokes (then the background colour) into theta, in normalised units.
  void pack();
  /// Theta back into the strokes, clamped into range; theta keeps the clamped values.
  void unpack();
  /// The strokes packed again after a change outside Adam, the background's theta left as it was.
  void repack_strokes();
  /// The stack becomes the strokes of 'order' followed by 'fresh' ones born now.
  void restack(const std::vector<Eigen::Index>& order, std::vector<Stroke> fresh);

  Painting& painting_;
  const Target& target_;
  const PaintConfig& config_;
  const std::array<double, kStrokeParams> units_;
  const float min_opacity_;
  const bool audited_;       ///< the audit runs (there are strokes to judge)
  const double colour_cap_;  ///< the colour bound, a margin inside the audit's limit
  nk::Rng rng_;
  Eigen::VectorXd theta_, g_;
  nk::Adam adam_;
  std::vector<int> born_;  ///< step at which each stroke was (re-)spawned
  int step_ = 0;
  std::vector<float> grad_;
  std::array<float, 3> gbg_;
  RGB rendered_;
  std::vector<StrokeFootprint> feet_;
  PaintReport report_;
};

Optimiser::Optimiser(Painting& painting, const Target& target, const PaintConfig& config)
    : painting_(painting),
      target_(target),
      config_(config),
      units_(units_for(painting.width, painting.height)),
      // With the audit strokes are paint, not glazes: a translucent stroke can
      // take any colour and let the layers below make it right, which is the
      // layer-wise compensation the audit forbids.
      min_opacity_(float(config.audit ? std::clamp(config.min_opacity, 0.05, 1.0) : 0.05)),
      audited_(config.audit && !painting.strokes.empty()),
      colour_cap_(kColourMargin * config.rule.max_colour_error),
      rng_(nk::Rng(config.seed).split(0x5b7)),
      adam_(Eigen::Index(painting.strokes.size()) * kStrokeParams + 3, {config.learning_rate, 0.9, 0.999, 1e-8, 0.0}),
      born_(painting.strokes.size(), -(1 << 20)) {
  for (Stroke& s : painting_.strokes) clamp_stroke(s, painting_.width, painting_.height, min_opacity_);
  pack();
}

void Optimiser::pack() {
  theta_.resize(Eigen::Index(painting_.strokes.size()) * kStrokeParams + 3);
  for (size_t i = 0; i < painting_.strokes.size(); ++i)
    for (int k = 0; k < kStrokeParams; ++k)
      theta_[Eigen::Index(i * kStrokeParams + k)] = params_of(painting_.strokes[i])[k] / units_[k];
  for (int c = 0; c < 3; ++c) theta_[theta_.size() - 3 + c] = painting_.background[c];
}

void Optimiser::unpack() {
  for (size_t i = 0; i < painting_.strokes.size(); ++i) {
    for (int k = 0; k < kStrokeParams; ++k)
      params_of(painting_.strokes[i])[k] = float(theta_[Eigen::Index(i * kStrokeParams + k)] * units_[k]);
    clamp_stroke(painting_.strokes[i], painting_.width, painting_.height, min_opacity_);
    for (int k = 0; k < kStrokeParams; ++k)
      theta_[Eigen::Index(i * kStrokeParams + k)] = params_of(painting_.strokes[i])[k] / units_[k];
  }
  for (int c = 0; c < 3; ++c) {
    painting_.background[c] = std::clamp(float(theta_[theta_.size() - 3 + c]), 0.f, 1.f);
    theta_[theta_.size() - 3 + c] = painting_.background[c];
  }
}

void Optimiser::repack_strokes() {
  const Eigen::Vector3d bg_theta = theta_.tail(3);
  pack();
  theta_.tail(3) = bg_theta;
}

void Optimiser::restack(const std::vector<Eigen::Index>& order, std::vector<Stroke> fresh) {
  // Adam's moments follow their strokes, fresh strokes start at zero, the background keeps its values.
  const Eigen::Index before = Eigen::Index(painting_.strokes.size());
  std::vector<Stroke> next;
  std::vector<int> next_born;
  std::vector<Eigen::Index> source;
  for (Eigen::Index i : order) {
    next.push_back(painting_.strokes[size_t(i)]);
    next_born.push_back(born_[size_t(i)]);
    for (int k = 0; k < kStrokeParams; ++k) source.push_back(i * kStrokeParams + k);
  }
  for (Stroke& s : fresh) {
    clamp_stroke(s, painting_.width, painting_.height, min_opacity_);
    next.push_back(s);
    next_born.push_back(step_);
    for (int k = 0; k < kStrokeParams; ++k) source.push_back(-1);
  }
  for (int c = 0; c < 3; ++c) source.push_back(before * kStrokeParams + c);
  painting_.strokes = std::move(next);
  born_ = std::move(next_born);
  repack_strokes();
  adam_.reorder_blocks(source, 1);
}

bool Optimiser::repair_due(const LevelSetup& level, int it) const {
  return (it == level.settle_from || it == level.second_repair) && audited_ && config_.repair;
}

void Optimiser::repair(const LevelSetup& level) {
  // Hidden strokes are removed (no re-spawning from the settling fifth on);
  // their neighbours close the gaps while Adam keeps its moments. Done twice:
  // strokes placed late can still be buried in the first half of the fifth.
  const std::vector<StrokeAudit> verdict =
      audit(painting_, level.target, config_.rule, config_.softness, config_.threads);
  std::vector<Eigen::Index> order;
  for (size_t i = 0; i < verdict.size(); ++i)
    if (!(verdict[i].defects & kHidden)) order.push_back(Eigen::Index(i));
  if (order.size() < verdict.size() && !order.empty()) {
    report_.repaired += int64_t(verdict.size() - order.size());
    spdlog::debug("repair at step {}: {} hidden stroke(s) removed", step_ + 1, verdict.size() - order.size());
    restack(order, {});
  }
}

void Optimiser::iterate(const LevelSetup& level, int it) {
  // Cosine decay within a level, from the rate to a tenth of it.
  const double phase = level.iterations > 1 ? double(it) / (level.iterations - 1) : 1.0;
  adam_.set_learning_rate(nk::cosine_rate(config_.learning_rate, phase, 0.1));
  // No re-spawning in the last fifth of the finest scale: new strokes need
  // time to settle, or they end up as the painting's worst strokes.
  const bool audit_now = audited_ && (it + 1) % config_.audit_every == 0 &&
                         level.iterations - it > config_.audit_every / 2 && it < level.settle_from;
  // While settling, every few steps and at the last one, each stroke's
  // colour is held within the audit's bound.
  const bool bound_now =
      audited_ && config_.colour_bound && it >= level.settle_from &&
      ((it - level.settle_from) % kColourBoundEvery == kColourBoundEvery - 1 || it + 1 == level.iterations);
  descend(level, audit_now, bound_now);
  if (bound_now) bound_colours();
  if (audit_now) audit_and_respawn(level);
  ++step_;
}

void Optimiser::descend(const LevelSetup& level, bool audit_now, bool bound_now) {
  render_backward(painting_, level.spec, level.target.pixels, config_.loss, grad_, gbg_,
                  audit_now ? &rendered_ : nullptr, audit_now || bound_now ? &feet_ : nullptr);
  coherence_energy(painting_, config_.coherence, &grad_);
  g_.resize(theta_.size());
  for (size_t i = 0; i < grad_.size(); ++i) g_[Eigen::Index(i)] = double(grad_[i]) * units_[i % kStrokeParams];
  for (int c = 0; c < 3; ++c) g_[g_.size() - 3 + c] = gbg_[c];
  adam_.step(theta_, g_);
  unpack();
}

void Optimiser::bound_colours() {
  // Footprints of the state before the step: close enough for a bound
  // that is re-applied every few steps and holds with a margin.
  for (size_t i = 0; i < feet_.size(); ++i) {
    const StrokeFootprint& f = feet_[i];
    if (f.visible > 0 && f.colour_error > 3 * f.visible * colour_cap_ * colour_cap_)
      report_.recoloured += bound_colour(painting_.strokes[i], f, colour_cap_);
  }
  repack_strokes();
}

void Optimiser::audit_and_respawn(const LevelSetup& level) {
  // Judge on the state the footprints were measured on; the step just
  // taken is discarded for re-spawned strokes (they start afresh).
  const std::vector<StrokeAudit> verdict = judge(feet_, config_.rule, level.area_scale);
  const RespawnPlan plan = plan_respawn(verdict, born_, step_, config_);
  std::vector<char> moving(verdict.size(), 0);
  for (int64_t i : plan.defective) moving[size_t(i)] = 1;
  for (int64_t i : plan.weak) moving[size_t(i)] = 1;
  std::vector<Eigen::Index> order;
  for (size_t i = 0; i < verdict.size(); ++i)
    if (!moving[i]) order.push_back(Eigen::Index(i));
  ++report_.audits;
  if (order.size() == verdict.size()) return;
  restack(order, spawn_fresh(level, order, verdict.size() - order.size()));
  report_.respawned += int64_t(plan.defective.size());
  report_.relocated += int64_t(plan.weak.size());
  spdlog::debug("audit at step {}: {} defective stroke(s) re-spawned, {} weak one(s) relocated", step_ + 1,
                plan.defective.size(), plan.weak.size());
}

std::vector<Stroke> Optimiser::spawn_fresh(const LevelSetup& level, const std::vector<Eigen::Index>& order,
                                           size_t count) {
  // New strokes take the median size of those that stay, so that they fit the painting's current scale.
  std::vector<double> lengths, widths;
  for (Eigen::Index i : order) {
    const Stroke& s = painting_.strokes[size_t(i)];
    lengths.push_back(std::hypot(s.x2 - s.x0, s.y2 - s.y0));
    widths.push_back(s.width);
  }
  Spawner spawner(level.target, rendered_);
  const double length = std::max(2.0, median(lengths)) * level.to_level,
               width = std::max(1.0, median(widths)) * level.to_level;
  std::vector<Stroke> fresh;
  for (size_t k = 0; k < count; ++k) {
    Stroke s = spawner.spawn(length, width, rng_);
    // The spawner works at the level's size; the points and the width go back to the canvas's.
    for (int q = 0; q < 7; ++q) params_of(s)[q] = float(params_of(s)[q] / level.to_level);
    fresh.push_back(s);
  }
  return fresh;
}

PaintReport Optimiser::finish() {
  if (audited_ && config_.prune) {
    const auto [first, removed] = prune_defective(painting_, target_, config_.rule, config_.softness, config_.threads);
    report_.defective_before_prune = first;
    report_.pruned = removed;
  }
  report_.pruned += report_.repaired;
  const RenderSpec full{painting_.width, painting_.height, config_.softness, config_.threads};
  report_.loss = render_backward(painting_, full, target_.pixels, config_.loss, grad_, gbg_);
  return report_;
}

}  // namespace

PaintReport optimise(Painting& painting, const Target& target, const PaintConfig& config,
                     const std::function<void(int, int)>& on_step) {
  const nk::Stopwatch watch;
  Optimiser optimiser(painting, target, config);
  const std::vector<Level> levels = plan_levels(painting, config);
  const int total_steps = std::max(1, config.iterations);
  // Coarse to fine: each level set up, then its steps, with the repairs of the finest level's settling fifth.
  for (size_t l = 0; l < levels.size(); ++l) {
    const LevelSetup level = set_up_level(levels[l], l + 1 == levels.size(), painting, target, config);
    for (int it = 0; it < level.iterations; ++it) {
      if (optimiser.repair_due(level, it)) optimiser.repair(level);
      optimiser.iterate(level, it);
      if (on_step) on_step(optimiser.steps_done(), total_steps);
    }
  }
  PaintReport report = optimiser.finish();
  report.seconds = watch.seconds();
  return report;
}

}  // namespace sbr
