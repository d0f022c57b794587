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

PaintReport optimise(Painting& painting, const Target& target, const PaintConfig& config,
                     const std::function<void(int, int)>& on_step) {
  const nk::Stopwatch watch;
  PaintReport report;
  nk::Rng rng = nk::Rng(config.seed).split(0x5b7);
  const auto units = units_for(painting.width, painting.height);
  const int64_t n = int64_t(painting.strokes.size());
  // With the audit strokes are paint, not glazes: a translucent stroke can
  // take any colour and let the layers below make it right, which is the
  // layer-wise compensation the audit forbids.
  const float min_opacity = float(config.audit ? std::clamp(config.min_opacity, 0.05, 1.0) : 0.05);

  // Levels: render sizes coarse to fine (at least 32 pixels on the short side),
  // iterations in proportion 1 : 2 : 3 ... so the finest level gets the most.
  struct Level {
    int width, height, iterations;
  };
  std::vector<Level> levels;
  for (double s : config.scales) {
    const int w = std::max(1, int(std::lround(painting.width * s))), h = std::max(1, int(std::lround(painting.height * s)));
    if (std::min(w, h) < 32 && s < config.scales.back()) continue;
    levels.push_back({w, h, 0});
  }
  const int weight_sum = int(levels.size() * (levels.size() + 1) / 2);
  int assigned = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    levels[l].iterations = l + 1 == levels.size() ? config.iterations - assigned
                                                  : config.iterations * int(l + 1) / weight_sum;
    assigned += levels[l].iterations;
  }

  // Parameters in normalised units: strokes, then the background colour.
  auto pack = [&](Eigen::VectorXd& theta) {
    theta.resize(Eigen::Index(painting.strokes.size()) * kStrokeParams + 3);
    for (size_t i = 0; i < painting.strokes.size(); ++i)
      for (int k = 0; k < kStrokeParams; ++k)
        theta[Eigen::Index(i * kStrokeParams + k)] = params_of(painting.strokes[i])[k] / units[k];
    for (int c = 0; c < 3; ++c) theta[theta.size() - 3 + c] = painting.background[c];
  };
  auto unpack = [&](Eigen::VectorXd& theta) {
    for (size_t i = 0; i < painting.strokes.size(); ++i) {
      for (int k = 0; k < kStrokeParams; ++k)
        params_of(painting.strokes[i])[k] = float(theta[Eigen::Index(i * kStrokeParams + k)] * units[k]);
      clamp_stroke(painting.strokes[i], painting.width, painting.height, min_opacity);
      for (int k = 0; k < kStrokeParams; ++k)
        theta[Eigen::Index(i * kStrokeParams + k)] = params_of(painting.strokes[i])[k] / units[k];
    }
    for (int c = 0; c < 3; ++c) {
      painting.background[c] = std::clamp(float(theta[theta.size() - 3 + c]), 0.f, 1.f);
      theta[theta.size() - 3 + c] = painting.background[c];
    }
  };
  Eigen::VectorXd theta, g;
  for (Stroke& s : painting.strokes) clamp_stroke(s, painting.width, painting.height, min_opacity);
  pack(theta);
  nk::Adam adam(theta.size(), {config.learning_rate, 0.9, 0.999, 1e-8, 0.0});
  std::vector<int> born(painting.strokes.size(), -(1 << 20));  ///< step at which each stroke was (re-)spawned
  // The stack becomes the strokes of 'order' (indices of the current stack)
  // followed by 'fresh' ones born at 'step'; Adam's moments follow their
  // strokes, fresh strokes start at zero, the background keeps its values.
  auto restack = [&](const std::vector<Eigen::Index>& order, std::vector<Stroke> fresh, int step) {
    const Eigen::Index before = Eigen::Index(painting.strokes.size());
    std::vector<Stroke> next;
    std::vector<int> next_born;
    std::vector<Eigen::Index> source;
    for (Eigen::Index i : order) {
      next.push_back(painting.strokes[size_t(i)]);
      next_born.push_back(born[size_t(i)]);
      for (int k = 0; k < kStrokeParams; ++k) source.push_back(i * kStrokeParams + k);
    }
    for (Stroke& s : fresh) {
      clamp_stroke(s, painting.width, painting.height, min_opacity);
      next.push_back(s);
      next_born.push_back(step);
      for (int k = 0; k < kStrokeParams; ++k) source.push_back(-1);
    }
    for (int c = 0; c < 3; ++c) source.push_back(before * kStrokeParams + c);
    painting.strokes = std::move(next);
    born = std::move(next_born);
    const Eigen::Vector3d bg_theta = theta.tail(3);
    pack(theta);
    theta.tail(3) = bg_theta;
    adam.reorder_blocks(source, 1);
  };
  const int total_steps = std::max(1, config.iterations);
  int step = 0;
  std::vector<float> grad;
  std::array<float, 3> gbg;
  RGB rendered;
  std::vector<StrokeFootprint> feet;
  const bool audited = config.audit && n > 0;
  const double colour_cap = kColourMargin * config.rule.max_colour_error;
  for (size_t l = 0; l < levels.size(); ++l) {
    const Level& level = levels[l];
    const Target tl = resample(target, level.width, level.height);
    const RenderSpec spec{level.width, level.height, config.softness, config.threads,
                          config.audit ? float(config.fidelity) : 0.0f, config.audit ? float(config.hidden_penalty) : 0.0f};
    const double area_scale = double(level.width) * level.height / (double(painting.width) * painting.height);
    const double to_level = double(level.width) / painting.width;
    const bool last_level = l + 1 == levels.size();
    const int settle_from = last_level ? int(kSettleFrom * level.iterations) : level.iterations;
    const int second_repair = last_level ? int(kSecondRepair * level.iterations) : level.iterations;
    for (int it = 0; it < level.iterations; ++it, ++step) {
      if ((it == settle_from || it == second_repair) && audited && config.repair) {
        // The repair: hidden strokes are removed (no re-spawning from the
        // settling fifth on); their neighbours close the gaps while Adam
        // keeps its moments. Done twice: strokes placed late can still be
        // buried in the first half of the fifth.
        const std::vector<StrokeAudit> verdict = audit(painting, tl, config.rule, config.softness, config.threads);
        std::vector<Eigen::Index> order;
        for (size_t i = 0; i < verdict.size(); ++i)
          if (!(verdict[i].defects & kHidden)) order.push_back(Eigen::Index(i));
        if (order.size() < verdict.size() && !order.empty()) {
          report.repaired += int64_t(verdict.size() - order.size());
          spdlog::debug("repair at step {}: {} hidden stroke(s) removed", step + 1, verdict.size() - order.size());
          restack(order, {}, step);
        }
      }
      // Cosine decay within a level, from the rate to a tenth of it.
      const double phase = level.iterations > 1 ? double(it) / (level.iterations - 1) : 1.0;
      adam.set_learning_rate(nk::cosine_rate(config.learning_rate, phase, 0.1));
      // No re-spawning in the last fifth of the finest scale: new strokes need
      // time to settle, or they end up as the painting's worst strokes.
      const bool audit_now = audited && (it + 1) % config.audit_every == 0 &&
                             level.iterations - it > config.audit_every / 2 && it < settle_from;
      // While settling, every few steps and at the last one, each stroke's
      // colour is held within the audit's bound.
      const bool bound_now = audited && config.colour_bound && it >= settle_from &&
                             ((it - settle_from) % kColourBoundEvery == kColourBoundEvery - 1 || it + 1 == level.iterations);
      render_backward(painting, spec, tl.pixels, config.loss, grad, gbg, audit_now ? &rendered : nullptr,
                      audit_now || bound_now ? &feet : nullptr);
      coherence_energy(painting, config.coherence, &grad);
      g.resize(theta.size());
      for (size_t i = 0; i < grad.size(); ++i) g[Eigen::Index(i)] = double(grad[i]) * units[i % kStrokeParams];
      for (int c = 0; c < 3; ++c) g[g.size() - 3 + c] = gbg[c];
      adam.step(theta, g);
      unpack(theta);
      if (bound_now) {
        // Footprints of the state before the step: close enough for a bound
        // that is re-applied every few steps and holds with a margin.
        for (size_t i = 0; i < feet.size(); ++i) {
          const StrokeFootprint& f = feet[i];
          if (f.visible > 0 && f.colour_error > 3 * f.visible * colour_cap * colour_cap)
            report.recoloured += bound_colour(painting.strokes[i], f, colour_cap);
        }
        const Eigen::Vector3d bg_theta = theta.tail(3);
        pack(theta);
        theta.tail(3) = bg_theta;
      }
      if (audit_now) {
        // Judge on the state the footprints were measured on; the step just
        // taken is discarded for re-spawned strokes (they start afresh).
        const std::vector<StrokeAudit> verdict = judge(feet, config.rule, area_scale);
        const RespawnPlan plan = plan_respawn(verdict, born, step, config);
        std::vector<char> moving(verdict.size(), 0);
        for (int64_t i : plan.defective) moving[size_t(i)] = 1;
        for (int64_t i : plan.weak) moving[size_t(i)] = 1;
        std::vector<double> lengths, widths;
        std::vector<Eigen::Index> order;
        for (size_t i = 0; i < verdict.size(); ++i) {
          if (moving[i]) continue;
          const Stroke& s = painting.strokes[i];
          order.push_back(Eigen::Index(i));
          lengths.push_back(std::hypot(s.x2 - s.x0, s.y2 - s.y0));
          widths.push_back(s.width);
        }
        ++report.audits;
        if (order.size() < verdict.size()) {
          Spawner spawner(tl, rendered);
          const double length = std::max(2.0, median(lengths)) * to_level, width = std::max(1.0, median(widths)) * to_level;
          std::vector<Stroke> fresh;
          for (size_t k = order.size(); k < verdict.size(); ++k) {
            Stroke s = spawner.spawn(length, width, rng);
            for (int q = 0; q < 7; ++q) params_of(s)[q] = float(params_of(s)[q] / to_level);
            fresh.push_back(s);
          }
          restack(order, std::move(fresh), step);
          report.respawned += int64_t(plan.defective.size());
          report.relocated += int64_t(plan.weak.size());
          spdlog::debug("audit at step {}: {} defective stroke(s) re-spawned, {} weak one(s) relocated", step + 1,
                        plan.defective.size(), plan.weak.size());
        }
      }
      if (on_step) on_step(step + 1, total_steps);
    }
  }
  if (audited && config.prune) {
    const auto [first, removed] = prune_defective(painting, target, config.rule, config.softness, config.threads);
    report.defective_before_prune = first;
    report.pruned = removed;
  }
  report.pruned += report.repaired;
  const RenderSpec full{painting.width, painting.height, config.softness, config.threads};
  report.loss = render_backward(painting, full, target.pixels, config.loss, grad, gbg);
  report.seconds = watch.seconds();
  return report;
}

}  // namespace sbr
