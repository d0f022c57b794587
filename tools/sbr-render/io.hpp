// io.hpp - sbr-render's files: target images (PNG/JPEG/... or an nk-data
// /images stack), stroke files (HDF5), SVG with native quadratic paths.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nk/dataset.hpp"
#include "nk/h5.hpp"
#include "nk/image.hpp"
#include "sbr-render/paint.hpp"

namespace sbr {

inline constexpr const char* kStrokesSchema = "sbr-render.strokes/1";
inline constexpr const char* kStrokeColumns = "x0,y0,x1,y1,x2,y2,width,r,g,b,opacity";

/// The images to paint: one image file, or an nk-data file with /images
/// [N,H,W,C] or [N,H,W] (C = 1 or 3; '-' reads it from standard input),
/// checked by nk::data (labels ignored).
class TargetSource {
 public:
  explicit TargetSource(const std::string& path);
  int64_t count() const { return source_.count(); }
  /// Item 'index' as RGB in [0, 1]; exit 3 on NaN/Inf, zero size or absurd size.
  Target read(int64_t index) const;
  const std::string& path() const { return source_.path(); }

 private:
  nk::data::Source source_;
};

/// Converts an nk::Image (gray or RGB) into a target; exit 3 on zero size.
Target to_target(const nk::Image& image, const std::string& name);
nk::Image to_image(const RGB& pixels, int width, int height);

/// One painting of a strokes file, with the metrics paint recorded.
struct PaintingRecord {
  int64_t item = 0;  ///< index of the painted image in its input
  Painting painting;
  double psnr = NAN, ssim = NAN, loss = NAN, seconds = NAN;
  int64_t respawned = 0, relocated = 0, pruned = 0;
};

/// Writes paintings as schema sbr-render.strokes/1: /strokes [M,11] (canvas
/// pixels; colour and opacity in [0,1]), /offsets [K+1] (CSR into /strokes),
/// /canvas [K,2] (height, width), /background [K,3], /items [K] and
/// /metrics/{psnr,ssim,loss,seconds,respawned,relocated,pruned} [K].
void write_strokes(const std::string& path, bool no_clobber, const std::vector<PaintingRecord>& records,
                   const std::vector<std::pair<std::string, std::string>>& attributes);
/// Reads and checks a strokes file: schema, shapes, offsets, finite values.
std::vector<PaintingRecord> read_strokes(const std::string& path);

/// SVG 1.1: a background rectangle and one <path d="M x0 y0 Q x1 y1 x2 y2">
/// per stroke (round caps, which is what the distance-based coverage draws),
/// bottom to top, at width x height pixels.
std::string to_svg(const Painting& painting, int width, int height);
void save_text(const std::string& path, const std::string& text, bool no_clobber);

}  // namespace sbr
