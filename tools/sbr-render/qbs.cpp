// qbs.cpp - the tile-binned analytic renderer and its backward pass.
#include "sbr-render/qbs.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "nk/error.hpp"

namespace sbr {

namespace {

constexpr int kTile = 16;
/// Front-to-back compositing stops once the transmittance is below this.
constexpr float kTransmittanceFloor = 1e-6f;

float smooth_step(float u) { return u <= 0 ? 0.f : u >= 1 ? 1.f : u * u * (3 - 2 * u); }
float smooth_step_slope(float u) { return u <= 0 || u >= 1 ? 0.f : 6 * u * (1 - u); }

/// A stroke in output-pixel units, with its exact footprint box.
struct Splat {
  float x0, y0, x1, y1, x2, y2, h, r, g, b, o;
  float xmin, xmax, ymin, ymax;
};

void axis_range(float a, float b, float c, float& lo, float& hi) {
  lo = std::min(a, c);
  hi = std::max(a, c);
  const float den = a - 2 * b + c;
  if (den != 0) {
    const float t = (a - b) / den;
    if (t > 0 && t < 1) {
      const float v = (1 - t) * (1 - t) * a + 2 * t * (1 - t) * b + t * t * c;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
}

struct Scale {
  float sx, sy, sw;  ///< x, y and width scale from canvas to output pixels
};

Scale scale_of(const Painting& p, const RenderSpec& spec) {
  if (p.width <= 0 || p.height <= 0) throw nk::Error(nk::Exit::input, "painting has a canvas of zero size");
  if (spec.width <= 0 || spec.height <= 0) throw nk::usage_error("render size must be positive");
  const float sx = float(spec.width) / p.width, sy = float(spec.height) / p.height;
  return {sx, sy, std::sqrt(sx * sy)};
}

std::vector<Splat> make_splats(const Painting& p, const RenderSpec& spec, const Scale& sc) {
  std::vector<Splat> out(p.strokes.size());
  for (size_t i = 0; i < p.strokes.size(); ++i) {
    const Stroke& s = p.strokes[i];
    Splat& q = out[i];
    q.x0 = s.x0 * sc.sx, q.y0 = s.y0 * sc.sy, q.x1 = s.x1 * sc.sx, q.y1 = s.y1 * sc.sy;
    q.x2 = s.x2 * sc.sx, q.y2 = s.y2 * sc.sy;
    q.h = 0.5f * s.width * sc.sw;
    q.r = s.r, q.g = s.g, q.b = s.b, q.o = s.opacity;
    axis_range(q.x0, q.x1, q.x2, q.xmin, q.xmax);
    axis_range(q.y0, q.y1, q.y2, q.ymin, q.ymax);
    const float reach = q.h + spec.softness;
    q.xmin -= reach, q.xmax += reach, q.ymin -= reach, q.ymax += reach;
  }
  return out;
}

/// Strokes per tile in ascending (bottom-to-top) order, as CSR. A stroke joins
/// a tile its box touches only if the tile centre lies within reach + half
/// the tile diagonal of the curve (exact distance), so long diagonal strokes
/// do not fill their whole box.
struct Bins {
  int tiles_x = 0, tiles_y = 0;
  std::vector<int64_t> start;
  std::vector<int32_t> stroke;
};

Bins bin_strokes(const std::vector<Splat>& splats, const RenderSpec& spec) {
  Bins bins;
  bins.tiles_x = (spec.width + kTile - 1) / kTile;
  bins.tiles_y = (spec.height + kTile - 1) / kTile;
  const int64_t tiles = int64_t(bins.tiles_x) * bins.tiles_y;
  const double half_diagonal = kTile * std::sqrt(0.5);
  std::vector<std::pair<int64_t, int32_t>> pairs;
  pairs.reserve(splats.size() * 8);
  for (size_t i = 0; i < splats.size(); ++i) {
    const Splat& q = splats[i];
    if (q.o <= 0 || q.xmax < 0 || q.ymax < 0 || q.xmin >= spec.width || q.ymin >= spec.height) continue;
    if (!std::isfinite(q.xmin + q.xmax + q.ymin + q.ymax + q.h)) continue;  // overflowed geometry: not drawable
    // Clamped to the image before the integer conversion (strokes may lie far outside).
    const int tx0 = int(std::max(q.xmin, 0.f)) / kTile, tx1 = int(std::min(q.xmax, float(spec.width - 1))) / kTile;
    const int ty0 = int(std::max(q.ymin, 0.f)) / kTile, ty1 = int(std::min(q.ymax, float(spec.height - 1))) / kTile;
    const double reach = q.h + spec.softness + half_diagonal;
    const bool small = tx1 - tx0 <= 1 && ty1 - ty0 <= 1;
    for (int ty = ty0; ty <= ty1; ++ty)
      for (int tx = tx0; tx <= tx1; ++tx) {
        if (!small) {
          const double cx = (tx + 0.5) * kTile, cy = (ty + 0.5) * kTile;
          if (closest_point(q.x0, q.y0, q.x1, q.y1, q.x2, q.y2, cx, cy).distance > reach) continue;
        }
        pairs.emplace_back(int64_t(ty) * bins.tiles_x + tx, int32_t(i));
      }
  }
  bins.start.assign(tiles + 1, 0);
  for (const auto& pr : pairs) ++bins.start[pr.first + 1];
  for (int64_t t = 0; t < tiles; ++t) bins.start[t + 1] += bins.start[t];
  bins.stroke.resize(pairs.size());
  std::vector<int64_t> fill(bins.start.begin(), bins.start.end() - 1);
  for (const auto& pr : pairs) bins.stroke[fill[pr.first]++] = pr.second;  // stroke order kept
  return bins;
}

/// One stroke's contribution at one pixel, kept for the backward pass.
struct Hit {
  int32_t stroke;
  float alpha, transmittance, t, u, nx, ny;
};

/// Coverage of splat q at pixel centre (px, py); fills the hit's geometry.
inline bool splat_at(const Splat& q, float softness, float px, float py, Hit& hit) {
  if (px < q.xmin || px > q.xmax || py < q.ymin || py > q.ymax) return false;
  const Closest c = closest_point(q.x0, q.y0, q.x1, q.y1, q.x2, q.y2, px, py);
  const float u = float((q.h + softness - c.distance) / (2 * softness));
  if (u <= 0) return false;
  hit.alpha = q.o * smooth_step(u);
  hit.u = u;
  hit.t = float(c.t);
  if (c.distance > 1e-12) {
    hit.nx = float((c.bx - px) / c.distance);
    hit.ny = float((c.by - py) / c.distance);
  } else {
    hit.nx = hit.ny = 0;
  }
  return hit.alpha > 0;
}

void check_target(const RGB& target, const RenderSpec& spec) {
  if (target.size() != size_t(spec.width) * spec.height * 3)
    throw nk::Error(nk::Exit::runtime, "render_backward: target size does not match the render size");
}

}  // namespace

float coverage(float distance, float half_width, float softness, float opacity) {
  return opacity * smooth_step((half_width + softness - distance) / (2 * softness));
}

Closest closest_point(double x0, double y0, double x1, double y1, double x2, double y2, double px, double py) {
  // B(t) = P0 + 2tA + t^2 C with A = P1 - P0, C = P0 - 2P1 + P2; the stationary
  // points of |B(t) - p|^2 solve a t^3 + b t^2 + c t + d = 0.
  const double ax = x1 - x0, ay = y1 - y0, cx = x0 - 2 * x1 + x2, cy = y0 - 2 * y1 + y2;
  const double mx = x0 - px, my = y0 - py;
  const double a = cx * cx + cy * cy, b = 3 * (ax * cx + ay * cy), c = 2 * (ax * ax + ay * ay) + mx * cx + my * cy,
               d = mx * ax + my * ay;
  double roots[2];
  int n = 0;
  const double scale = std::max(ax * ax + ay * ay, 1e-300);
  if (a <= 1e-8 * scale) {
    // Nearly straight: the linear term dominates; Newton below restores the curve.
    roots[n++] = c != 0 ? -d / c : 0.0;
  } else {
    const double p2 = b / a, p1 = c / a, p0 = d / a;
    const double shift = p2 / 3;
    const double p = p1 - p2 * shift, q = 2 * shift * shift * shift - shift * p1 + p0;
    const double disc = q * q / 4 + p * p * p / 27;
    if (disc >= 0) {
      const double sq = std::sqrt(disc);
      roots[n++] = std::cbrt(-q / 2 + sq) + std::cbrt(-q / 2 - sq) - shift;
    } else {
      // Three real roots: the outer two are the minima.
      const double r = std::sqrt(-p / 3), phi = std::acos(std::clamp(3 * q / (2 * p * r), -1.0, 1.0)) / 3;
      roots[n++] = 2 * r * std::cos(phi) - shift;
      roots[n++] = 2 * r * std::cos(phi - 4.18879020478639098) - shift;  // 2 pi / 3 * 2
    }
  }
  Closest best;
  best.distance = INFINITY;
  for (int k = 0; k < n; ++k) {
    double t = std::clamp(roots[k], 0.0, 1.0);
    for (int it = 0; it < 2; ++it) {
      const double g = ((a * t + b) * t + c) * t + d, dg = (3 * a * t + 2 * b) * t + c;
      if (dg <= 0) break;  // only polish where the distance is convex
      t = std::clamp(t - g / dg, 0.0, 1.0);
    }
    const double bx = x0 + 2 * t * ax + t * t * cx, by = y0 + 2 * t * ay + t * t * cy;
    const double dist = std::hypot(bx - px, by - py);
    if (dist < best.distance) best = {t, dist, bx, by};
  }
  return best;
}

RGB render(const Painting& painting, const RenderSpec& spec, RenderStats* stats, const RGB* base) {
  if (base) check_target(*base, spec);
  const Scale sc = scale_of(painting, spec);
  const std::vector<Splat> splats = make_splats(painting, spec, sc);
  const Bins bins = bin_strokes(splats, spec);
  RGB image(size_t(spec.width) * spec.height * 3);
  const int64_t tiles = int64_t(bins.tiles_x) * bins.tiles_y;
  int64_t evals = 0;
  const int threads = spec.threads;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) reduction(+ : evals)
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int tx = int(tile % bins.tiles_x), ty = int(tile / bins.tiles_x);
    const int64_t begin = bins.start[tile], end = bins.start[tile + 1];
    for (int y = ty * kTile; y < std::min(spec.height, (ty + 1) * kTile); ++y)
      for (int x = tx * kTile; x < std::min(spec.width, (tx + 1) * kTile); ++x) {
        float T = 1, cr = 0, cg = 0, cb = 0;
        for (int64_t k = end - 1; k >= begin && T >= kTransmittanceFloor; --k) {
          const Splat& q = splats[bins.stroke[k]];
          Hit hit;
          ++evals;
          if (!splat_at(q, spec.softness, x + 0.5f, y + 0.5f, hit)) continue;
          const float w = T * hit.alpha;
          cr += w * q.r, cg += w * q.g, cb += w * q.b;
          T *= 1 - hit.alpha;
        }
        const size_t pix = (size_t(y) * spec.width + x) * 3;
        const float* bg = base ? &(*base)[pix] : painting.background.data();
        image[pix] = cr + T * bg[0];
        image[pix + 1] = cg + T * bg[1];
        image[pix + 2] = cb + T * bg[2];
      }
  }
  if (stats) *stats = {int64_t(bins.stroke.size()), evals};
  return image;
}

namespace {

/// Gradient of a pixel's colour loss: L2 or L1, divided by 'count' (the mean).
inline void loss_at(Loss loss, const float* c, const float* t, double inv_count, double& value, float* g) {
  for (int ch = 0; ch < 3; ++ch) {
    const float diff = c[ch] - t[ch];
    if (loss == Loss::l2) {
      value += double(diff) * diff;
      g[ch] = float(2 * diff * inv_count);
    } else {
      value += std::fabs(diff);
      g[ch] = float((diff > 0 ? 1 : diff < 0 ? -1 : 0) * inv_count);
    }
  }
}

/// The chain rule from (dL/dalpha, dL/dcolour) of one hit to the stroke's
/// output-space parameters: P0, P1, P2, half width, colour, opacity.
inline void accumulate(const Splat& q, const Hit& hit, float softness, float dl_dalpha, const float* dl_dcolour,
                       double* g) {
  const float slope = q.o * smooth_step_slope(hit.u) / (2 * softness);  // dalpha/dh = -dalpha/ddistance
  const float dl_dd = -dl_dalpha * slope;
  const float t = hit.t, w0 = (1 - t) * (1 - t), w1 = 2 * t * (1 - t), w2 = t * t;
  g[0] += dl_dd * w0 * hit.nx, g[1] += dl_dd * w0 * hit.ny;
  g[2] += dl_dd * w1 * hit.nx, g[3] += dl_dd * w1 * hit.ny;
  g[4] += dl_dd * w2 * hit.nx, g[5] += dl_dd * w2 * hit.ny;
  g[6] += dl_dalpha * slope;  // d/dh here; scaled to d/dwidth later
  g[7] += dl_dcolour[0], g[8] += dl_dcolour[1], g[9] += dl_dcolour[2];
  g[10] += dl_dalpha * smooth_step(hit.u);
}

/// Back to front over a pixel's hits ('behind' is the colour under the
/// current stroke): dL/dalpha = g . T (c - behind), dL/dc = g T alpha; 'visit'
/// sees each hit with the colour behind it (the audit's removal test).
template <class Visit>
inline void backward_pixel(const std::vector<Splat>& splats, const std::vector<Hit>& hits, float softness,
                           const float* bg, const float* dl_dc, float hide, double* grad, Visit&& visit) {
  float behind[3] = {bg[0], bg[1], bg[2]};
  for (size_t h = hits.size(); h-- > 0;) {
    const Hit& hit = hits[h];
    const Splat& q = splats[hit.stroke];
    const float col[3] = {q.r, q.g, q.b};
    float dl_dalpha = 0, dl_dcol[3];
    for (int ch = 0; ch < 3; ++ch) {
      dl_dalpha += dl_dc[ch] * hit.transmittance * (col[ch] - behind[ch]);
      dl_dcol[ch] = dl_dc[ch] * hit.transmittance * hit.alpha;
    }
    // The hidden-coverage penalty hide * alpha (1 - T), T held fixed.
    dl_dalpha += hide * (1 - hit.transmittance);
    accumulate(q, hit, softness, dl_dalpha, dl_dcol, grad + size_t(hit.stroke) * kStrokeParams);
    visit(hit, behind);
    for (int ch = 0; ch < 3; ++ch) behind[ch] = hit.alpha * col[ch] + (1 - hit.alpha) * behind[ch];
  }
}

/// Output-space gradients (with d/dh in slot 6) to canvas units, summed over threads.
void reduce_gradients(const std::vector<std::vector<double>>& per_thread, const Scale& sc, size_t strokes,
                      std::vector<float>& grad) {
  grad.assign(strokes * kStrokeParams, 0.f);
  const double factor[kStrokeParams] = {sc.sx, sc.sy, sc.sx, sc.sy, sc.sx, sc.sy, 0.5 * sc.sw, 1, 1, 1, 1};
  for (size_t i = 0; i < strokes * kStrokeParams; ++i) {
    double sum = 0;
    for (const auto& part : per_thread) sum += part[i];
    grad[i] = float(sum * factor[i % kStrokeParams]);
  }
}

}  // namespace

double render_backward(const Painting& painting, const RenderSpec& spec, const RGB& target, Loss loss,
                       std::vector<float>& grad, std::array<float, 3>& grad_background, RGB* rendered,
                       std::vector<StrokeFootprint>* footprints, RenderStats* stats, const RGB* base) {
  check_target(target, spec);
  if (base) check_target(*base, spec);
  const Scale sc = scale_of(painting, spec);
  const std::vector<Splat> splats = make_splats(painting, spec, sc);
  const Bins bins = bin_strokes(splats, spec);
  const size_t n = splats.size();
  const int64_t tiles = int64_t(bins.tiles_x) * bins.tiles_y;
  const double inv_count = 1.0 / (double(spec.width) * spec.height * 3);
  const int threads = spec.threads;
  std::vector<std::vector<double>> grads(threads, std::vector<double>(n * kStrokeParams, 0.0));
  std::vector<std::vector<StrokeFootprint>> feet(footprints ? threads : 0, std::vector<StrokeFootprint>(n));
  std::vector<std::array<double, 3>> bg_grads(threads, {0, 0, 0});
  if (rendered) rendered->assign(size_t(spec.width) * spec.height * 3, 0.f);
  double total = 0;
  int64_t evals = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total, evals)
  {
    const int me = omp_get_thread_num();
    double* g = grads[me].data();
    StrokeFootprint* foot = footprints ? feet[me].data() : nullptr;
    std::vector<Hit> hits;
#pragma omp for schedule(static, 1)  // fixed tile-to-thread map: the same sums every run
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const int tx = int(tile % bins.tiles_x), ty = int(tile / bins.tiles_x);
      const int64_t begin = bins.start[tile], end = bins.start[tile + 1];
      hits.reserve(size_t(end - begin));
      for (int y = ty * kTile; y < std::min(spec.height, (ty + 1) * kTile); ++y)
        for (int x = tx * kTile; x < std::min(spec.width, (tx + 1) * kTile); ++x) {
          hits.clear();
          float T = 1, c[3] = {0, 0, 0};
          // The audit must see strokes under opaque ones: no early stop then.
          for (int64_t k = end - 1; k >= begin && (foot || T >= kTransmittanceFloor); --k) {
            const int32_t id = bins.stroke[k];
            const Splat& q = splats[id];
            Hit hit;
            ++evals;
            if (!splat_at(q, spec.softness, x + 0.5f, y + 0.5f, hit)) continue;
            hit.stroke = id;
            hit.transmittance = T;
            hits.push_back(hit);
            const float w = T * hit.alpha;
            c[0] += w * q.r, c[1] += w * q.g, c[2] += w * q.b;
            T *= 1 - hit.alpha;
          }
          const size_t pix = (size_t(y) * spec.width + x) * 3;
          const float* bg = base ? &(*base)[pix] : painting.background.data();
          for (int ch = 0; ch < 3; ++ch) c[ch] += T * bg[ch];
          if (rendered) std::copy(c, c + 3, &(*rendered)[pix]);
          float dl_dc[3];
          loss_at(loss, c, &target[pix], inv_count, total, dl_dc);
          for (int ch = 0; ch < 3; ++ch) bg_grads[me][ch] += double(dl_dc[ch]) * T;
          const float* tgt = &target[pix];
          const double pull = 2.0 * double(spec.colour_fidelity) * inv_count;
          const float hide = float(3.0 * double(spec.hidden_penalty) * inv_count);
          auto fidelity = [&](const Hit& hit) {
            const Splat& q = splats[hit.stroke];
            const double w = pull * hit.transmittance * hit.alpha;
            double* gc = g + size_t(hit.stroke) * kStrokeParams + 7;
            gc[0] += w * (q.r - tgt[0]), gc[1] += w * (q.g - tgt[1]), gc[2] += w * (q.b - tgt[2]);
          };
          if (!foot) {
            if (pull > 0)
              backward_pixel(splats, hits, spec.softness, bg, dl_dc, hide, g, [&](const Hit& hit, const float*) { fidelity(hit); });
            else
              backward_pixel(splats, hits, spec.softness, bg, dl_dc, hide, g, [](const Hit&, const float*) {});
            continue;
          }
          backward_pixel(splats, hits, spec.softness, bg, dl_dc, hide, g, [&](const Hit& hit, const float* behind) {
            const Splat& q = splats[hit.stroke];
            const float col[3] = {q.r, q.g, q.b};
            double with = 0, without = 0, err = 0;
            for (int ch = 0; ch < 3; ++ch) {
              const double removed = c[ch] + hit.transmittance * hit.alpha * (behind[ch] - col[ch]);
              with += (c[ch] - tgt[ch]) * double(c[ch] - tgt[ch]);
              without += (removed - tgt[ch]) * (removed - tgt[ch]);
              err += (col[ch] - tgt[ch]) * double(col[ch] - tgt[ch]);
            }
            StrokeFootprint& f = foot[hit.stroke];
            f.coverage += hit.alpha;
            f.visible += double(hit.alpha) * hit.transmittance;
            f.colour_error += double(hit.alpha) * hit.transmittance * err;
            f.loss_delta += without - with;
            const double seen = double(hit.alpha) * hit.transmittance;
            for (int ch = 0; ch < 3; ++ch) {
              f.seen_target[ch] += seen * tgt[ch];
              f.seen_target_sq += seen * tgt[ch] * double(tgt[ch]);
            }
            if (pull > 0) fidelity(hit);
          });
        }
    }
  }
  reduce_gradients(grads, sc, n, grad);
  for (int ch = 0; ch < 3; ++ch) {
    double s = 0;
    for (const auto& part : bg_grads) s += part[ch];
    grad_background[ch] = float(s);
  }
  if (footprints) {
    footprints->assign(n, StrokeFootprint{});
    for (const auto& part : feet)
      for (size_t i = 0; i < n; ++i) {
        (*footprints)[i].coverage += part[i].coverage;
        (*footprints)[i].visible += part[i].visible;
        (*footprints)[i].colour_error += part[i].colour_error;
        (*footprints)[i].loss_delta += part[i].loss_delta;
        for (int ch = 0; ch < 3; ++ch) (*footprints)[i].seen_target[ch] += part[i].seen_target[ch];
        (*footprints)[i].seen_target_sq += part[i].seen_target_sq;
      }
  }
  if (stats) *stats = {int64_t(bins.stroke.size()), evals};
  return total * inv_count;
}

// ---- the brute-force baseline ----

namespace {

/// A stroke sampled as a polyline: the vertices and their Bezier parameters.
struct Polyline {
  std::vector<float> x, y, t;
};

Polyline sample(const Splat& q, int segments) {
  Polyline p;
  for (int j = 0; j <= segments; ++j) {
    const float t = float(j) / segments;
    const float w0 = (1 - t) * (1 - t), w1 = 2 * t * (1 - t), w2 = t * t;
    p.x.push_back(w0 * q.x0 + w1 * q.x1 + w2 * q.x2);
    p.y.push_back(w0 * q.y0 + w1 * q.y1 + w2 * q.y2);
    p.t.push_back(t);
  }
  return p;
}

/// Nearest point of the polyline: distance, interpolated Bezier parameter and normal.
inline bool polyline_at(const Splat& q, const Polyline& line, float softness, float px, float py, Hit& hit) {
  float best = INFINITY, bt = 0, bx = 0, by = 0;
  for (size_t j = 0; j + 1 < line.x.size(); ++j) {
    const float ex = line.x[j + 1] - line.x[j], ey = line.y[j + 1] - line.y[j];
    const float len2 = ex * ex + ey * ey;
    float tau = len2 > 0 ? ((px - line.x[j]) * ex + (py - line.y[j]) * ey) / len2 : 0.f;
    tau = std::clamp(tau, 0.f, 1.f);
    const float cx = line.x[j] + tau * ex, cy = line.y[j] + tau * ey;
    const float d2 = (cx - px) * (cx - px) + (cy - py) * (cy - py);
    if (d2 < best) best = d2, bt = line.t[j] + tau * (line.t[j + 1] - line.t[j]), bx = cx, by = cy;
  }
  const float dist = std::sqrt(best);
  const float u = (q.h + softness - dist) / (2 * softness);
  if (u <= 0) return false;
  hit.alpha = q.o * smooth_step(u);
  hit.u = u;
  hit.t = bt;
  hit.nx = dist > 1e-12f ? (bx - px) / dist : 0.f;
  hit.ny = dist > 1e-12f ? (by - py) / dist : 0.f;
  return hit.alpha > 0;
}

}  // namespace

RGB render_brute(const Painting& painting, const RenderSpec& spec, int segments) {
  RGB image;
  const Scale sc = scale_of(painting, spec);
  const std::vector<Splat> splats = make_splats(painting, spec, sc);
  std::vector<Polyline> lines;
  for (const Splat& q : splats) lines.push_back(sample(q, segments));
  image.assign(size_t(spec.width) * spec.height * 3, 0.f);
  const int threads = spec.threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int y = 0; y < spec.height; ++y)
    for (int x = 0; x < spec.width; ++x) {
      float T = 1, c[3] = {0, 0, 0};
      for (size_t k = splats.size(); k-- > 0 && T >= kTransmittanceFloor;) {
        Hit hit;
        if (!polyline_at(splats[k], lines[k], spec.softness, x + 0.5f, y + 0.5f, hit)) continue;
        const float w = T * hit.alpha;
        c[0] += w * splats[k].r, c[1] += w * splats[k].g, c[2] += w * splats[k].b;
        T *= 1 - hit.alpha;
      }
      for (int ch = 0; ch < 3; ++ch) image[(size_t(y) * spec.width + x) * 3 + ch] = c[ch] + T * painting.background[ch];
    }
  return image;
}

double render_backward_brute(const Painting& painting, const RenderSpec& spec, const RGB& target, Loss loss,
                             int segments, std::vector<float>& grad, std::array<float, 3>& grad_background) {
  check_target(target, spec);
  const Scale sc = scale_of(painting, spec);
  const std::vector<Splat> splats = make_splats(painting, spec, sc);
  std::vector<Polyline> lines;
  for (const Splat& q : splats) lines.push_back(sample(q, segments));
  const size_t n = splats.size();
  const double inv_count = 1.0 / (double(spec.width) * spec.height * 3);
  const int threads = spec.threads;
  std::vector<std::vector<double>> grads(threads, std::vector<double>(n * kStrokeParams, 0.0));
  std::vector<std::array<double, 3>> bg_grads(threads, {0, 0, 0});
  const float* bg = painting.background.data();
  double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    const int me = omp_get_thread_num();
    std::vector<Hit> hits;
#pragma omp for schedule(static, 1)
    for (int y = 0; y < spec.height; ++y)
      for (int x = 0; x < spec.width; ++x) {
        hits.clear();
        float T = 1, c[3] = {0, 0, 0};
        for (size_t k = n; k-- > 0 && T >= kTransmittanceFloor;) {
          Hit hit;
          if (!polyline_at(splats[k], lines[k], spec.softness, x + 0.5f, y + 0.5f, hit)) continue;
          hit.stroke = int32_t(k);
          hit.transmittance = T;
          hits.push_back(hit);
          const float w = T * hit.alpha;
          c[0] += w * splats[k].r, c[1] += w * splats[k].g, c[2] += w * splats[k].b;
          T *= 1 - hit.alpha;
        }
        for (int ch = 0; ch < 3; ++ch) c[ch] += T * bg[ch];
        const size_t pix = (size_t(y) * spec.width + x) * 3;
        float dl_dc[3];
        loss_at(loss, c, &target[pix], inv_count, total, dl_dc);
        for (int ch = 0; ch < 3; ++ch) bg_grads[me][ch] += double(dl_dc[ch]) * T;
        backward_pixel(splats, hits, spec.softness, bg, dl_dc, 0.0f, grads[me].data(), [](const Hit&, const float*) {});
      }
  }
  reduce_gradients(grads, sc, n, grad);
  for (int ch = 0; ch < 3; ++ch) {
    double s = 0;
    for (const auto& part : bg_grads) s += part[ch];
    grad_background[ch] = float(s);
  }
  return total * inv_count;
}

}  // namespace sbr
