// qbs.hpp - Quadratic Bezier Splatting: strokes are quadratic Bezier curves
// with a width, an RGB colour and an opacity, splatted analytically (coverage
// from the exact distance of a pixel to the curve) and alpha-composited in
// order, with analytic gradients of the image with respect to every stroke
// parameter. Pixels only visit the strokes binned to their 16x16 tile.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace sbr {

/// Parameters of one stroke, in canvas pixels (the canvas is the painted
/// image's own size; rendering at another size scales every length).
struct Stroke {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0, x2 = 0, y2 = 0;  ///< control points P0, P1, P2
  float width = 1;                                         ///< full width (edge to edge)
  float r = 0, g = 0, b = 0;                               ///< colour in [0, 1]
  float opacity = 1;                                       ///< in [0, 1]
};
inline constexpr int kStrokeParams = 11;  ///< x0 y0 x1 y1 x2 y2 width r g b opacity
inline float* params_of(Stroke& s) { return &s.x0; }
inline const float* params_of(const Stroke& s) { return &s.x0; }
static_assert(sizeof(Stroke) == kStrokeParams * sizeof(float));

/// A painting: strokes bottom to top over a uniform background.
struct Painting {
  int width = 0, height = 0;  ///< canvas size in pixels
  std::array<float, 3> background{1, 1, 1};
  std::vector<Stroke> strokes;
};

/// Where and how a painting is rasterised.
struct RenderSpec {
  int width = 0, height = 0;  ///< output size; strokes scale by width/canvas and height/canvas
  float softness = 0.5f;      ///< half-width of the edge falloff, in output pixels
  int threads = 1;            ///< OpenMP threads: the resolved --threads (nk::RunEnv), at least 1
  /// Weight of the colour-fidelity term (render_backward only): the
  /// gradient of fidelity * sum over strokes and pixels of alpha T |c - target|^2
  /// (mean over pixels and channels) with respect to each stroke's colour,
  /// alpha T held fixed. It pulls each stroke's colour towards the target
  /// where the stroke is seen, so that no stroke keeps a wrong colour that
  /// only blending with other layers makes right. Not part of the returned loss.
  float colour_fidelity = 0.0f;
  /// Weight of the hidden-coverage penalty (render_backward only): the
  /// gradient of hidden_penalty * sum over strokes and pixels of alpha (1 - T)
  /// (mean over pixels; T the transmittance of the strokes above) with respect
  /// to each stroke's own parameters, T held fixed. A stroke loses nothing in
  /// the picture by shrinking where later strokes cover it, so the term lets
  /// concealed parts withdraw instead of surviving under other layers. Not
  /// part of the returned loss.
  float hidden_penalty = 0.0f;
};

/// RGB float image, row-major H x W x 3.
using RGB = std::vector<float>;

/// Coverage of a pixel at distance d from the curve: o * S((h + s - d) / 2s),
/// S(u) = u^2 (3 - 2u) clamped to [0, 1], h = width/2, s = softness. It is
/// exactly o inside h - s and exactly 0 beyond h + s, so the footprint and the
/// tile bins are exact.
float coverage(float distance, float half_width, float softness, float opacity);

/// Closest point of the quadratic Bezier P0,P1,P2 to (px, py): parameter t in
/// [0, 1] and distance. Solves the cubic (B(t) - p) . B'(t) = 0 in closed form
/// (Cardano / trigonometric), keeps the outer roots (the middle one of three is
/// a maximum), clamps to [0, 1] and polishes with two Newton steps.
struct Closest {
  double t = 0, distance = 0, bx = 0, by = 0;  ///< curve point B(t)
};
Closest closest_point(double x0, double y0, double x1, double y1, double x2, double y2, double px, double py);

/// Per-pixel loss for the backward pass.
enum class Loss { l2, l1 };

/// Statistics of a forward or forward+backward pass.
struct RenderStats {
  int64_t tile_pairs = 0;       ///< (tile, stroke) pairs after culling
  int64_t coverage_evals = 0;   ///< pixel-stroke distance evaluations
};

/// Forward pass: the rendered RGB image (spec.width x spec.height).
/// 'base' (optional, H x W x 3) replaces the uniform background by an image.
RGB render(const Painting& painting, const RenderSpec& spec, RenderStats* stats = nullptr, const RGB* base = nullptr);

/// Per-stroke quantities the single-stroke audit needs, accumulated over
/// the stroke's footprint (pixels where its coverage is > 0).
struct StrokeFootprint {
  double coverage = 0;       ///< sum of alpha
  double visible = 0;        ///< sum of alpha * transmittance above it
  double colour_error = 0;   ///< sum of alpha * T * |c - target|^2 (3 channels): where it is seen
  double loss_delta = 0;     ///< L2 loss without the stroke minus with it (sum over pixels and channels)
  double seen_target[3] = {0, 0, 0};  ///< sum of alpha * T * target: the colour the stroke is seen over
  double seen_target_sq = 0;          ///< sum of alpha * T * |target|^2 (3 channels)
};

/// Forward and backward in one pass for a per-pixel loss against 'target'
/// (spec.width x spec.height x 3): returns the loss (mean over pixels and
/// channels) and writes dLoss/dparam for every stroke parameter (canvas
/// units) into grad [strokes x kStrokeParams] and dLoss/dbackground into
/// grad_background. 'rendered' (optional) receives the image; 'footprints'
/// (optional, one per stroke) receives the audit sums. 'base' (optional,
/// same size as target) replaces the uniform background by an image under
/// the strokes (grad_background then sums dL/dbase over the pixels).
double render_backward(const Painting& painting, const RenderSpec& spec, const RGB& target, Loss loss,
                       std::vector<float>& grad, std::array<float, 3>& grad_background, RGB* rendered = nullptr,
                       std::vector<StrokeFootprint>* footprints = nullptr, RenderStats* stats = nullptr,
                       const RGB* base = nullptr);

/// The baseline with the semantics of general vector rasterisers (DiffVG):
/// every pixel against every stroke, with the distance to the curve sampled
/// as a polyline of 'segments' pieces. Same coverage, compositing and loss.
RGB render_brute(const Painting& painting, const RenderSpec& spec, int segments);
double render_backward_brute(const Painting& painting, const RenderSpec& spec, const RGB& target, Loss loss,
                             int segments, std::vector<float>& grad, std::array<float, 3>& grad_background);

}  // namespace sbr
