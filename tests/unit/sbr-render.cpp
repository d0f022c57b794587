// sbr-render.cpp - sbr-render's Quadratic Bezier Splatting: the closest point
// against dense sampling, the tiled renderer against the brute-force one,
// analytic gradients against central finite differences.
#include <doctest/doctest.h>

#include <cmath>

#include "nk/rng.hpp"
#include "sbr-render/paint.hpp"
#include "sbr-render/qbs.hpp"

using namespace sbr;

namespace {

Painting random_painting(int strokes, int size, uint64_t seed) {
  nk::Rng rng(seed);
  Painting p;
  p.width = p.height = size;
  p.background = {0.3f, 0.5f, 0.7f};
  for (int i = 0; i < strokes; ++i) {
    Stroke s;
    const float cx = float(rng.uniform() * size), cy = float(rng.uniform() * size);
    const float len = float(4 + rng.uniform() * size / 3);
    s.x0 = cx + float(rng.normal()) * len, s.y0 = cy + float(rng.normal()) * len;
    s.x1 = cx + float(rng.normal()) * len, s.y1 = cy + float(rng.normal()) * len;
    s.x2 = cx + float(rng.normal()) * len, s.y2 = cy + float(rng.normal()) * len;
    s.width = float(1.5 + rng.uniform() * 6);
    s.r = float(rng.uniform()), s.g = float(rng.uniform()), s.b = float(rng.uniform());
    s.opacity = float(0.4 + 0.55 * rng.uniform());
    p.strokes.push_back(s);
  }
  return p;
}

RGB random_target(int width, int height, uint64_t seed) {
  nk::Rng rng(seed);
  RGB t(size_t(width) * height * 3);
  for (auto& v : t) v = float(rng.uniform());
  return t;
}

}  // namespace

TEST_SUITE("sbr-render") {
  TEST_CASE("closest point matches dense sampling, straight and folded curves included") {
    nk::Rng rng(3);
    for (int trial = 0; trial < 400; ++trial) {
      double c[6];
      for (double& v : c) v = rng.uniform() * 40 - 20;
      if (trial % 5 == 0) c[2] = 0.5 * (c[0] + c[4]), c[3] = 0.5 * (c[1] + c[5]);  // exactly straight
      if (trial % 7 == 0) c[4] = c[0], c[5] = c[1];                                 // folded back
      const double px = rng.uniform() * 60 - 30, py = rng.uniform() * 60 - 30;
      const Closest got = closest_point(c[0], c[1], c[2], c[3], c[4], c[5], px, py);
      double best = INFINITY;
      for (int k = 0; k <= 200000; ++k) {
        const double t = k / 200000.0;
        const double bx = (1 - t) * (1 - t) * c[0] + 2 * t * (1 - t) * c[2] + t * t * c[4];
        const double by = (1 - t) * (1 - t) * c[1] + 2 * t * (1 - t) * c[3] + t * t * c[5];
        best = std::min(best, std::hypot(bx - px, by - py));
      }
      CHECK(got.distance <= best + 1e-9);
      CHECK(got.distance >= best - 1e-3);
    }
  }

  TEST_CASE("coverage: opaque core, zero beyond the edge, smooth in between") {
    CHECK(coverage(0.f, 3.f, 0.5f, 0.8f) == doctest::Approx(0.8f));
    CHECK(coverage(2.5f, 3.f, 0.5f, 1.f) == doctest::Approx(1.f));
    CHECK(coverage(3.f, 3.f, 0.5f, 1.f) == doctest::Approx(0.5f));
    CHECK(coverage(3.5f, 3.f, 0.5f, 1.f) == 0.f);
  }

  TEST_CASE("tiled renderer equals the brute-force renderer with a fine polyline") {
    const Painting p = random_painting(60, 70, 11);
    RenderSpec spec{70, 70, 0.5f, 2};
    RenderStats stats;
    const RGB tiled = render(p, spec, &stats);
    const RGB brute = render_brute(p, spec, 512);
    double worst = 0;
    for (size_t i = 0; i < tiled.size(); ++i) worst = std::max(worst, double(std::fabs(tiled[i] - brute[i])));
    CHECK(worst < 2e-3);
    CHECK(stats.coverage_evals < int64_t(60) * 70 * 70);  // culling does work
    // Another output size: strokes scale with the canvas.
    const RGB big = render(p, {140, 140, 0.5f, 2});
    const RGB big_brute = render_brute(p, {140, 140, 0.5f, 2}, 512);
    worst = 0;
    for (size_t i = 0; i < big.size(); ++i) worst = std::max(worst, double(std::fabs(big[i] - big_brute[i])));
    CHECK(worst < 2e-3);
  }

  TEST_CASE("render_backward's image and loss agree with render") {
    const Painting p = random_painting(40, 48, 5);
    const RenderSpec spec{48, 40, 0.5f, 2};
    const RGB t = random_target(48, 40, 9);
    std::vector<float> grad;
    std::array<float, 3> gbg;
    RGB img;
    const double loss = render_backward(p, spec, t, Loss::l2, grad, gbg, &img);
    const RGB ref = render(p, spec);
    double l = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      CHECK(img[i] == ref[i]);
      l += double(ref[i] - t[i]) * (ref[i] - t[i]);
    }
    CHECK(loss == doctest::Approx(l / ref.size()).epsilon(1e-6));
  }

  TEST_CASE("analytic gradients match central finite differences (L2 and L1)") {
    for (Loss loss : {Loss::l2, Loss::l1}) {
      Painting p = random_painting(12, 32, 21);
      for (auto& s : p.strokes) s.width += 3;  // wide, soft strokes: smooth loss
      const RenderSpec spec{32, 32, 1.5f, 1};
      const RGB target = random_target(32, 32, 4);
      std::vector<float> grad;
      std::array<float, 3> gbg;
      render_backward(p, spec, target, loss, grad, gbg);
      int checked = 0, good = 0;
      for (size_t i = 0; i < p.strokes.size(); ++i)
        for (int k = 0; k < kStrokeParams; ++k) {
          float* v = params_of(p.strokes[i]) + k;
          const float h = k < 7 ? 1e-2f : 1e-3f, saved = *v;
          std::vector<float> g2;
          std::array<float, 3> b2;
          *v = saved + h;
          const double up = render_backward(p, spec, target, loss, g2, b2);
          *v = saved - h;
          const double down = render_backward(p, spec, target, loss, g2, b2);
          *v = saved;
          const double fd = (up - down) / (2 * h), an = grad[i * kStrokeParams + k];
          if (std::fabs(fd) < 1e-7 && std::fabs(an) < 1e-7) continue;
          ++checked;
          if (std::fabs(fd - an) <= 0.03 * std::max(std::fabs(fd), std::fabs(an)) + 2e-6) ++good;
        }
      // L1's kinks (sign changes) may spoil a few differences; L2 must match everywhere.
      CHECK(checked > 60);
      if (loss == Loss::l2) CHECK(good == checked);
      else CHECK(good >= int(0.9 * checked));
      for (int ch = 0; ch < 3; ++ch) {
        const float saved = p.background[ch];
        std::vector<float> g2;
        std::array<float, 3> b2;
        p.background[ch] = saved + 1e-3f;
        const double up = render_backward(p, spec, target, loss, g2, b2);
        p.background[ch] = saved - 1e-3f;
        const double down = render_backward(p, spec, target, loss, g2, b2);
        p.background[ch] = saved;
        CHECK(gbg[ch] == doctest::Approx((up - down) / 2e-3).epsilon(0.02));
      }
    }
  }

  TEST_CASE("brute-force gradients agree with the tiled ones") {
    const Painting p = random_painting(20, 40, 8);
    const RenderSpec spec{40, 40, 0.75f, 2};
    const RGB target = random_target(40, 40, 2);
    std::vector<float> g1, g2;
    std::array<float, 3> b1, b2;
    const double l1 = render_backward(p, spec, target, Loss::l2, g1, b1);
    const double l2 = render_backward_brute(p, spec, target, Loss::l2, 1024, g2, b2);
    CHECK(l1 == doctest::Approx(l2).epsilon(1e-4));
    double num = 0, den = 0;
    for (size_t i = 0; i < g1.size(); ++i) num += (g1[i] - g2[i]) * double(g1[i] - g2[i]), den += g1[i] * double(g1[i]);
    CHECK(std::sqrt(num / den) < 0.02);
  }

  TEST_CASE("audit: a wrong stroke concealed under a good one is hidden; a wrong visible one is off-colour") {
    Target target{40, 40, RGB(40 * 40 * 3, 0.5f)};
    Painting p;
    p.width = p.height = 40;
    p.background = {0.5f, 0.5f, 0.5f};
    Stroke bad{10, 20, 20, 20, 30, 20, 6, 1, 0, 0, 1};     // red, under
    Stroke cover{8, 20, 20, 20, 32, 20, 12, 0.5f, 0.5f, 0.5f, 1};  // target colour, on top, wider
    Stroke loud{5, 5, 10, 6, 15, 5, 4, 0, 0, 1, 1};         // blue, visible
    p.strokes = {bad, cover, loud};
    const std::vector<StrokeAudit> a = audit(p, target, AuditRule{}, 0.5, 1);
    CHECK((a[0].defects & kHidden));
    CHECK(a[0].visible < 0.01);
    CHECK(a[1].defects == kGood);  // the cover is right, and removing it would expose the red one
    CHECK((a[2].defects & kOffColour));
    CHECK(a[2].visible == doctest::Approx(1.0));
    // Without the cover the red stroke is visible and off-colour, and removing it helps.
    p.strokes = {bad};
    const std::vector<StrokeAudit> b = audit(p, target, AuditRule{}, 0.5, 1);
    CHECK((b[0].defects & kOffColour));
    CHECK(b[0].loss_delta < 0);
    // A stroke in the target's colour where the target has it is good.
    Target two = target;
    for (int y = 17; y < 24; ++y)
      for (int x = 10; x < 31; ++x) two.pixels[(size_t(y) * 40 + x) * 3 + 1] = 0.9f;
    p.strokes = {Stroke{11, 20.5f, 20, 20.5f, 30, 20.5f, 6, 0.5f, 0.9f, 0.5f, 1}};
    CHECK(audit(p, two, AuditRule{}, 0.5, 1)[0].defects == kGood);
  }

  TEST_CASE("colour fidelity pulls each stroke's colour by 2 f sum(alpha T) (c - target) / count") {
    // A uniform target: the pull on stroke i is 2 f visible_i (c_i - t) / (3 W H),
    // with visible_i = sum over its pixels of alpha T (the audit's footprint).
    const int size = 48;
    const RGB target(size_t(size) * size * 3, 0.25f);
    const Painting p = random_painting(6, size, 31);
    RenderSpec spec{size, size, 0.5f, 1};
    std::vector<float> plain, pulled;
    std::array<float, 3> gbg;
    std::vector<StrokeFootprint> feet;
    render_backward(p, spec, target, Loss::l2, plain, gbg, nullptr, &feet);
    spec.colour_fidelity = 0.7f;
    std::vector<StrokeFootprint> feet2;
    render_backward(p, spec, target, Loss::l2, pulled, gbg, nullptr, &feet2);
    const double inv_count = 1.0 / (3.0 * size * size);
    for (size_t i = 0; i < p.strokes.size(); ++i) {
      const float colour[3] = {p.strokes[i].r, p.strokes[i].g, p.strokes[i].b};
      for (int ch = 0; ch < 3; ++ch) {
        const double expected = 2 * 0.7 * inv_count * feet[i].visible * (colour[ch] - 0.25);
        CHECK(pulled[i * kStrokeParams + 7 + ch] - plain[i * kStrokeParams + 7 + ch] ==
              doctest::Approx(expected).epsilon(1e-4).scale(1e-6));
      }
      // Geometry, width and opacity gradients are untouched; so are the footprints.
      for (int k : {0, 1, 2, 3, 4, 5, 6, 10}) CHECK(pulled[i * kStrokeParams + k] == plain[i * kStrokeParams + k]);
      CHECK(feet2[i].visible == feet[i].visible);
    }
  }

  TEST_CASE("hidden-coverage penalty: the lower stroke's gradient is that of h (coverage - visible) / (W H)") {
    // Two strokes: the bottom one's T comes from the top one only, so the
    // penalty's gradient for the bottom stroke is the true partial derivative
    // of h sum alpha_b (1 - T_b) = h (coverage_b - visible_b), which the
    // footprints give independently; central differences check it.
    const int size = 40;
    const RGB target(size_t(size) * size * 3, 0.5f);
    Painting p;
    p.width = p.height = size;
    p.background = {0.2f, 0.2f, 0.2f};
    p.strokes = {Stroke{8, 20, 18, 17, 30, 21, 9, 0.9f, 0.1f, 0.1f, 0.8f}, Stroke{12, 14, 20, 22, 26, 26, 7, 0.1f, 0.8f, 0.2f, 0.7f}};
    const float h = 2.0f;
    RenderSpec spec{size, size, 0.5f, 1};
    std::vector<float> plain, pulled;
    std::array<float, 3> gbg;
    render_backward(p, spec, target, Loss::l2, plain, gbg);
    spec.hidden_penalty = h;
    render_backward(p, spec, target, Loss::l2, pulled, gbg);
    auto hidden = [&](const Painting& q) {
      std::vector<float> unused;
      std::vector<StrokeFootprint> feet;
      RenderSpec s2{size, size, 0.5f, 1};
      render_backward(q, s2, target, Loss::l2, unused, gbg, nullptr, &feet);
      return h * (feet[0].coverage - feet[0].visible) / (double(size) * size);
    };
    for (int k : {0, 1, 2, 3, 4, 5, 6, 10}) {
      Painting up = p, down = p;
      const double step = k == 10 ? 1e-3 : 1e-2;
      params_of(up.strokes[0])[k] += float(step);
      params_of(down.strokes[0])[k] -= float(step);
      const double numeric = (hidden(up) - hidden(down)) / (2 * step);
      INFO("parameter " << k);
      CHECK(pulled[size_t(k)] - plain[size_t(k)] == doctest::Approx(numeric).epsilon(2e-2).scale(1e-5));
    }
    // The top stroke is seen everywhere (T = 1): nothing changes for it.
    for (int k = 0; k < kStrokeParams; ++k) CHECK(pulled[size_t(kStrokeParams + k)] == plain[size_t(kStrokeParams + k)]);
  }

  TEST_CASE("coherence energy gradient matches finite differences") {
    Painting p = random_painting(6, 40, 17);
    std::vector<float> grad(p.strokes.size() * kStrokeParams, 0.f);
    coherence_energy(p, 0.3, &grad);
    for (size_t i = 0; i < p.strokes.size(); ++i)
      for (int k = 0; k < 7; ++k) {
        float* v = params_of(p.strokes[i]) + k;
        const float saved = *v;
        *v = saved + 1e-2f;
        const double up = coherence_energy(p, 0.3, nullptr);
        *v = saved - 1e-2f;
        const double down = coherence_energy(p, 0.3, nullptr);
        *v = saved;
        CHECK(grad[i * kStrokeParams + k] == doctest::Approx((up - down) / 2e-2).epsilon(0.02).scale(1e-4));
      }
  }

  TEST_CASE("optimise lowers the loss, with and without the audit") {
    Target target{48, 48, RGB(48 * 48 * 3)};
    for (int y = 0; y < 48; ++y)
      for (int x = 0; x < 48; ++x)
        for (int c = 0; c < 3; ++c)
          target.pixels[(size_t(y) * 48 + x) * 3 + c] = float(0.5 + 0.4 * std::sin(x / 6.0 + c) * std::cos(y / 9.0));
    for (bool audited : {false, true}) {
      Painting p = random_init(target, 40, 3);
      std::vector<float> g;
      std::array<float, 3> gb;
      const double before = render_backward(p, {48, 48, 0.5f, 1}, target.pixels, Loss::l2, g, gb);
      PaintConfig config;
      config.iterations = 80;
      config.audit = audited;
      config.threads = 1;
      const PaintReport rep = optimise(p, target, config);
      CHECK(rep.loss < 0.5 * before);
      if (!audited) CHECK(p.strokes.size() == 40);
      if (audited) CHECK(rep.audits > 0);
    }
  }

  TEST_CASE("with the audit: strokes keep the least opacity, and hidden strokes are removed as the settling fifth begins") {
    Target target{40, 40, RGB(40 * 40 * 3, 0.5f)};
    Painting p;
    p.width = p.height = 40;
    p.background = {0.5f, 0.5f, 0.5f};
    const Stroke bad{10, 20, 20, 20, 30, 20, 6, 1, 0, 0, 1};              // red, under
    const Stroke cover{8, 20, 20, 20, 32, 20, 12, 0.5f, 0.5f, 0.5f, 1};   // target colour, on top, wider
    const Stroke glaze{5, 5, 10, 6, 15, 5, 4, 0.5f, 0.5f, 0.5f, 0.1f};    // translucent
    for (bool repair : {true, false}) {
      p.strokes = {bad, cover, glaze};
      PaintConfig config;
      config.iterations = 10;
      config.scales = {1.0};
      config.audit_every = 1000;  // no re-spawning: only the repair acts
      config.prune = false;
      config.repair = repair;
      config.threads = 1;
      Painting q = p;
      const PaintReport rep = optimise(q, target, config);
      // The concealed red stroke is gone with the repair and stays without it.
      CHECK(rep.repaired == (repair ? 1 : 0));
      REQUIRE(q.strokes.size() == (repair ? 2u : 3u));
      CHECK(q.strokes.front().r == doctest::Approx(repair ? 0.5 : 1.0).epsilon(0.1));
      for (const Stroke& s : q.strokes) CHECK(s.opacity >= float(config.min_opacity));
    }
    // Without the audit strokes may be glazes (opacity down to 0.05), and nothing is removed.
    PaintConfig plain;
    plain.iterations = 10;
    plain.scales = {1.0};
    plain.audit = false;
    plain.threads = 1;
    Painting q = p;
    q.strokes = {bad, cover, glaze};
    const PaintReport rep = optimise(q, target, plain);
    CHECK(rep.repaired == 0);
    REQUIRE(q.strokes.size() == 3);
    CHECK(q.strokes[2].opacity < 0.2f);
  }
  TEST_CASE("plan_respawn: defective strokes by class, then the least contributing good ones, settled strokes only") {
    const double deltas[12] = {10, 12, 0.5, 9, 11, 0.2, 8, 13, 0.1, 10, 7, -1};
    std::vector<StrokeAudit> verdict(12);
    for (size_t i = 0; i < 12; ++i) verdict[i].loss_delta = deltas[i];
    verdict[3].defects = kHidden;
    verdict[11].defects = kUseless;
    std::vector<int> born(12, -1000);
    born[8] = 95;  // re-spawned 5 steps ago: still settling
    PaintConfig config;
    config.audit_every = 25;
    config.max_respawn = 1.0;
    config.relocate = 2.0 / 12;
    // The median loss_delta is 9, so the weak ones are the good settled strokes under 2.25.
    RespawnPlan plan = plan_respawn(verdict, born, 100, config);
    CHECK(plan.defective == std::vector<int64_t>{11, 3});
    CHECK(plan.weak == std::vector<int64_t>{5, 2});
    config.relocate = 1.0 / 12;
    CHECK(plan_respawn(verdict, born, 100, config).weak == std::vector<int64_t>{5});
    config.relocate = 0;
    CHECK(plan_respawn(verdict, born, 100, config).weak.empty());
    born[8] = 50;  // settled now, and the least contributing
    config.relocate = 1.0;
    CHECK(plan_respawn(verdict, born, 100, config).weak == std::vector<int64_t>{8, 5, 2});
    config.max_respawn = 0.05;  // ceil(0.6): one, the useless stroke first
    CHECK(plan_respawn(verdict, born, 100, config).defective == std::vector<int64_t>{11});
  }

  TEST_CASE("bound_colour: the colour moves towards what the stroke is seen over, just onto the bound") {
    // A stroke seen over four pixels with weights alpha T and target colours.
    const double weight[4] = {1.0, 0.5, 0.8, 0.3};
    const double colour[4][3] = {{0.2, 0.4, 0.6}, {0.3, 0.4, 0.5}, {0.25, 0.35, 0.6}, {0.1, 0.5, 0.7}};
    StrokeFootprint f;
    for (int k = 0; k < 4; ++k) {
      f.visible += weight[k];
      for (int c = 0; c < 3; ++c) {
        f.seen_target[c] += weight[k] * colour[k][c];
        f.seen_target_sq += weight[k] * colour[k][c] * colour[k][c];
      }
    }
    auto rms = [&](const Stroke& s) {
      const float* c = &s.r;
      double e = 0;
      for (int k = 0; k < 4; ++k)
        for (int ch = 0; ch < 3; ++ch) e += weight[k] * (c[ch] - colour[k][ch]) * (c[ch] - colour[k][ch]);
      return std::sqrt(e / (3 * f.visible));
    };
    Stroke s{0, 0, 1, 1, 2, 2, 3, 1.0f, 0.0f, 0.0f, 0.6f};
    const Stroke before = s;
    REQUIRE(rms(s) > 0.25);
    CHECK(bound_colour(s, f, 0.25));
    CHECK(rms(s) == doctest::Approx(0.25).epsilon(1e-5));
    // The move is along the line to the mean colour it is seen over.
    const double mean[3] = {f.seen_target[0] / f.visible, f.seen_target[1] / f.visible, f.seen_target[2] / f.visible};
    const double ratio = (s.r - mean[0]) / (before.r - mean[0]);
    CHECK(ratio > 0);
    CHECK(ratio < 1);
    CHECK(s.g - mean[1] == doctest::Approx(ratio * (before.g - mean[1])).epsilon(1e-5));
    CHECK(s.b - mean[2] == doctest::Approx(ratio * (before.b - mean[2])).epsilon(1e-5));
    CHECK(s.x1 == before.x1);
    CHECK(s.opacity == before.opacity);
    // Within the bound already: left as it is.
    const Stroke bounded = s;
    CHECK(bound_colour(s, f, 0.3));
    CHECK(s.r == bounded.r);
    // Black and white under one stroke: no colour is within 0.25 RMS of both.
    StrokeFootprint split;
    split.visible = 2;
    split.seen_target[0] = split.seen_target[1] = split.seen_target[2] = 1;
    split.seen_target_sq = 3;
    CHECK_FALSE(bound_colour(s, split, 0.25));
    CHECK(s.r == bounded.r);
  }

  TEST_CASE("footprints sum the target each stroke is seen over") {
    const int size = 40;
    const RGB target(size_t(size) * size * 3, 0.25f);
    const Painting p = random_painting(5, size, 7);
    std::vector<float> grad;
    std::array<float, 3> gbg;
    std::vector<StrokeFootprint> feet;
    render_backward(p, {size, size, 0.5f, 1}, target, Loss::l2, grad, gbg, nullptr, &feet);
    for (const StrokeFootprint& f : feet) {
      for (int c = 0; c < 3; ++c) CHECK(f.seen_target[c] == doctest::Approx(0.25 * f.visible).epsilon(1e-5));
      CHECK(f.seen_target_sq == doctest::Approx(3 * 0.0625 * f.visible).epsilon(1e-5));
    }
  }

  TEST_CASE("optimise with the audit: weak strokes are relocated, and settled colours meet the bound where one can") {
    Target target{48, 48, RGB(48 * 48 * 3)};
    for (int y = 0; y < 48; ++y)
      for (int x = 0; x < 48; ++x)
        for (int c = 0; c < 3; ++c)
          target.pixels[(size_t(y) * 48 + x) * 3 + c] = float(0.5 + 0.45 * std::sin(x / 4.0 + 2 * c) * std::cos(y / 5.0));
    for (bool bound : {false, true}) {
      Painting p = random_init(target, 60, 5);
      PaintConfig config;
      config.iterations = 120;
      config.scales = {1.0};
      config.audit_every = 10;
      config.prune = false;
      config.colour_bound = bound;
      config.threads = 1;
      const PaintReport rep = optimise(p, target, config);
      CHECK(rep.relocated > 0);
      CHECK((rep.recoloured > 0) == bound);
      std::vector<float> grad;
      std::array<float, 3> gbg;
      std::vector<StrokeFootprint> feet;
      render_backward(p, {48, 48, 0.5f, 1}, target.pixels, Loss::l2, grad, gbg, nullptr, &feet);
      const std::vector<StrokeAudit> verdict = audit(p, target, config.rule, 0.5, 1);
      int64_t fixable = 0;
      for (size_t i = 0; i < verdict.size(); ++i) {
        if (!(verdict[i].defects & kOffColour)) continue;
        Stroke probe = p.strokes[i];
        fixable += bound_colour(probe, feet[i], config.rule.max_colour_error);
      }
      INFO("colour bound " << bound);
      if (bound) CHECK(fixable == 0);
    }
    Painting p = random_init(target, 60, 5);
    PaintConfig still;
    still.iterations = 60;
    still.scales = {1.0};
    still.audit_every = 10;
    still.relocate = 0;
    still.threads = 1;
    CHECK(optimise(p, target, still).relocated == 0);
  }
}
