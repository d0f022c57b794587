// image.hpp - load PNG/JPEG/PGM (stb), resize, encode PNG.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace nk {

/// Pixels in row-major H x W x C order, values in [0, 1]; C is 1 (gray) or 3 (RGB).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<float> pixels;
  float& at(int y, int x, int c) { return pixels[(static_cast<size_t>(y) * width + x) * channels + c]; }
  float at(int y, int x, int c) const { return pixels[(static_cast<size_t>(y) * width + x) * channels + c]; }
};

/// Decodes by content, not by file extension (PNG 8/16-bit, JPEG, PGM/PPM, BMP,
/// TGA, GIF). Alpha is dropped. Exit 4 if unreadable, exit 3 if not an image.
Image load_image(const std::string& path);
/// Same, from bytes already in memory; 'name' is used in messages.
Image decode_image(const std::vector<unsigned char>& bytes, const std::string& name);

/// Size and channel count (alpha dropped: 1 or 3) from the file header only.
struct ImageShape {
  int width = 0, height = 0, channels = 0;
};
ImageShape probe_image(const std::string& path);

/// Parses a size option "WxH" (1 to 65536 each, e.g. 512x512) into
/// {width, height}; a usage error (exit 2) names 'option' otherwise.
std::pair<int, int> parse_size(const std::string& text, const std::string& option);

/// Resamples with stb's default filter (Mitchell down, cubic up).
Image resize_image(const Image& image, int width, int height);
/// Gray -> RGB by copying, RGB -> gray by ITU-R BT.601 luma.
Image convert_channels(const Image& image, int channels);

/// 8-bit PNG of 'image' (values clamped to [0, 1]).
std::vector<unsigned char> encode_png(const Image& image);
/// Writes a PNG atomically ('-' = stdout).
void save_png(const std::string& path, const Image& image, bool no_clobber = false);


}  // namespace nk
