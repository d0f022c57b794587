// io.cpp - target images, stroke files and SVG.
#include "sbr-render/io.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"

namespace sbr {

namespace {

constexpr int64_t kMaxSide = 16384;

nk::data::Options target_options() {
  nk::data::Options options;
  options.vectors = false;
  options.channels = {1, 3};
  options.max_side = kMaxSide;
  options.labels = nk::data::Labels::ignore;
  return options;
}

}  // namespace

Target to_target(const nk::Image& image, const std::string& name) {
  if (image.width <= 0 || image.height <= 0) throw nk::input_error(name, "", "image of zero size");
  const nk::Image rgb = nk::convert_channels(image, 3);
  return {rgb.width, rgb.height, rgb.pixels};
}

nk::Image to_image(const RGB& pixels, int width, int height) {
  nk::Image img;
  img.width = width, img.height = height, img.channels = 3;
  img.pixels = pixels;
  return img;
}

TargetSource::TargetSource(const std::string& path) : source_(nk::data::Source::open(path, target_options())) {}

Target TargetSource::read(int64_t index) const {
  nk::Image img = source_.read_image(index);
  for (float& v : img.pixels) v = std::clamp(v, 0.f, 1.f);
  return to_target(img, source_.path());
}

void write_strokes(const std::string& path, bool no_clobber, const std::vector<PaintingRecord>& records,
                   const std::vector<std::pair<std::string, std::string>>& attributes) {
  const int64_t k = int64_t(records.size());
  std::vector<float> strokes, background;
  std::vector<int64_t> offsets{0}, canvas, items, respawned, relocated, pruned;
  std::vector<double> psnr, ssim, loss, seconds;
  for (const PaintingRecord& r : records) {
    for (const Stroke& s : r.painting.strokes) strokes.insert(strokes.end(), params_of(s), params_of(s) + kStrokeParams);
    offsets.push_back(int64_t(strokes.size() / kStrokeParams));
    canvas.push_back(r.painting.height);
    canvas.push_back(r.painting.width);
    background.insert(background.end(), r.painting.background.begin(), r.painting.background.end());
    items.push_back(r.item);
    psnr.push_back(r.psnr), ssim.push_back(r.ssim), loss.push_back(r.loss), seconds.push_back(r.seconds);
    respawned.push_back(r.respawned), relocated.push_back(r.relocated), pruned.push_back(r.pruned);
  }
  nk::h5::Writer out(path, kStrokesSchema, no_clobber);
  out.write("/strokes", strokes.data(), {offsets.back(), kStrokeParams}, "M,P", "px");
  out.attr("/strokes", "columns", kStrokeColumns);
  out.write("/offsets", offsets.data(), {k + 1}, "K+1");
  out.attr("/offsets", "nk_merge", "offsets");
  out.write("/canvas", canvas.data(), {k, 2}, "K,HW", "px");
  out.write("/background", background.data(), {k, 3}, "K,RGB");
  out.write("/items", items.data(), {k}, "K");
  out.allow_nonfinite("/metrics/psnr");  // Inf: an exact reproduction
  out.write("/metrics/psnr", psnr.data(), {k}, "K", "dB");
  out.write("/metrics/ssim", ssim.data(), {k}, "K");
  out.write("/metrics/loss", loss.data(), {k}, "K");
  out.write("/metrics/seconds", seconds.data(), {k}, "K", "s");
  out.write("/metrics/respawned", respawned.data(), {k}, "K");
  out.write("/metrics/relocated", relocated.data(), {k}, "K");
  out.write("/metrics/pruned", pruned.data(), {k}, "K");
  for (const auto& [name, value] : attributes) out.attr("/", name, value);
  out.commit();
}

std::vector<PaintingRecord> read_strokes(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema("sbr-render.strokes/");
  const auto strokes = f.read<float>("/strokes", 2, "M,P");
  if (strokes.shape[1] != kStrokeParams)
    throw nk::input_error(path, "/strokes", "expected " + std::to_string(kStrokeParams) + " columns (" + kStrokeColumns +
                                                "), found " + std::to_string(strokes.shape[1]));
  nk::h5::require_finite(path, "/strokes", strokes);
  const auto offsets = f.read<int64_t>("/offsets", 1, "K+1");
  const int64_t k = offsets.shape[0] - 1;
  if (k < 0 || offsets.data[0] != 0 || offsets.data.back() != strokes.shape[0])
    throw nk::input_error(path, "/offsets", "must run from 0 to the number of strokes (" + std::to_string(strokes.shape[0]) + ")");
  const auto canvas = f.read<int64_t>("/canvas", 2, "K,HW");
  const auto background = f.read<float>("/background", 2, "K,RGB");
  nk::h5::require_finite(path, "/background", background);
  if (canvas.shape != std::vector<int64_t>{k, 2})
    throw nk::input_error(path, "/canvas", "expected [" + std::to_string(k) + ",2], found " + nk::h5::shape_text(canvas.shape));
  if (background.shape != std::vector<int64_t>{k, 3})
    throw nk::input_error(path, "/background", "expected [" + std::to_string(k) + ",3], found " + nk::h5::shape_text(background.shape));
  std::vector<int64_t> items(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) items[size_t(i)] = i;
  if (f.has("/items")) {
    const auto it = f.read<int64_t>("/items", 1, "K");
    if (it.shape[0] != k) throw nk::input_error(path, "/items", "expected " + std::to_string(k) + " entries");
    items = it.data;
  }
  std::vector<PaintingRecord> out(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const int64_t lo = offsets.data[size_t(i)], hi = offsets.data[size_t(i) + 1];
    if (hi < lo) throw nk::input_error(path, "/offsets", "must not decrease (index " + std::to_string(i + 1) + ")");
    const int64_t h = canvas.data[size_t(2 * i)], w = canvas.data[size_t(2 * i + 1)];
    if (h <= 0 || w <= 0 || h > kMaxSide || w > kMaxSide)
      throw nk::input_error(path, "/canvas", "painting " + std::to_string(i) + " has canvas " + std::to_string(w) + "x" +
                                                 std::to_string(h) + " (expected 1 to " + std::to_string(kMaxSide) + ")");
    PaintingRecord& r = out[size_t(i)];
    r.item = items[size_t(i)];
    r.painting.width = int(w), r.painting.height = int(h);
    for (int c = 0; c < 3; ++c) r.painting.background[c] = background.data[size_t(3 * i + c)];
    for (int64_t s = lo; s < hi; ++s) {
      Stroke st;
      std::copy_n(&strokes.data[size_t(s * kStrokeParams)], kStrokeParams, params_of(st));
      if (st.width < 0 || st.opacity < 0 || st.opacity > 1)
        throw nk::input_error(path, "/strokes", "stroke " + std::to_string(s) + ": width must be >= 0 and opacity in [0, 1]");
      r.painting.strokes.push_back(st);
    }
  }
  return out;
}

std::string to_svg(const Painting& p, int width, int height) {
  auto hex = [](float v) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", int(std::lround(std::clamp(v, 0.f, 1.f) * 255)));
    return std::string(buf);
  };
  auto colour = [&](float r, float g, float b) { return "#" + hex(r) + hex(g) + hex(b); };
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
                width, height, p.width, p.height);
  out += line;
  out += "<rect width=\"" + std::to_string(p.width) + "\" height=\"" + std::to_string(p.height) + "\" fill=\"" +
         colour(p.background[0], p.background[1], p.background[2]) + "\"/>\n";
  out += "<g fill=\"none\" stroke-linecap=\"round\">\n";
  for (const Stroke& s : p.strokes) {
    std::snprintf(line, sizeof line,
                  "<path d=\"M%.2f %.2fQ%.2f %.2f %.2f %.2f\" stroke=\"%s\" stroke-width=\"%.2f\" stroke-opacity=\"%.3f\"/>\n",
                  s.x0, s.y0, s.x1, s.y1, s.x2, s.y2, colour(s.r, s.g, s.b).c_str(), s.width, s.opacity);
    out += line;
  }
  out += "</g>\n</svg>\n";
  return out;
}

void save_text(const std::string& path, const std::string& text, bool no_clobber) {
  nk::write_output_bytes(path, std::vector<unsigned char>(text.begin(), text.end()), no_clobber);
}

}  // namespace sbr
