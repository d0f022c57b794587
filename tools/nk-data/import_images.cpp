// import_images.cpp - image files -> /images [N,H,W,C].
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/image.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk_data.hpp"

namespace nk::data {

namespace {

Image load_one(const std::string& path) {
  if (path != "-") return load_image(path);
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw io_error("-", std::string("cannot read standard input: ") + std::strerror(errno));
    }
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  return decode_image(bytes, "-");
}

/// Parses --resize WxH.
std::pair<int, int> parse_size(const std::string& text) {
  int width = 0, height = 0;
  char x = 0, rest = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &width, &x, &height, &rest) != 3 || x != 'x' || width < 1 ||
      height < 1 || width > 65536 || height > 65536) {
    throw usage_error("--resize: expected WxH such as 256x256, got '" + text + "'");
  }
  return {width, height};
}

}  // namespace

void import_images(const ImportImagesOptions& options) {
  if (options.inputs.empty()) throw usage_error("import: give at least one image file");
  if (std::count(options.inputs.begin(), options.inputs.end(), "-") > 1) {
    throw usage_error("import: standard input ('-') can be given once");
  }
  const bool resize = !options.resize.empty();
  const auto [resize_width, resize_height] = resize ? parse_size(options.resize) : std::pair<int, int>{0, 0};
  // Decide the channel count before loading everything: "auto" is RGB as soon as one image has colour.
  std::vector<Image> images;
  images.reserve(options.inputs.size());
  Progress progress("import", static_cast<int64_t>(options.inputs.size()));
  int width = 0, height = 0;
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    Image image = load_one(options.inputs[i]);
    if (resize) image = resize_image(image, resize_width, resize_height);
    if (i == 0) {
      width = image.width;
      height = image.height;
    } else if (image.width != width || image.height != height) {
      throw input_error(options.inputs[i], "",
                        "image is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                            " but the first image is " + std::to_string(width) + "x" + std::to_string(height) +
                            "; give --resize WxH to import images of different sizes");
    }
    images.push_back(std::move(image));
    progress.update(static_cast<int64_t>(i + 1));
  }
  progress.finish();
  int channels = 1;
  if (options.channels == "3") channels = 3;
  if (options.channels == "auto") {
    for (const Image& image : images) channels = std::max(channels, image.channels);
  }
  const size_t per_image = static_cast<size_t>(width) * height * channels;
  std::vector<float> stack(per_image * images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const Image converted = convert_channels(images[i], channels);
    std::copy(converted.pixels.begin(), converted.pixels.end(), stack.begin() + static_cast<long>(i * per_image));
  }
  h5::Writer out(options.output, kImagesSchema, options.no_clobber);
  out.write("/images", stack.data(),
            {static_cast<int64_t>(images.size()), height, width, channels}, "N,H,W,C");
  out.attr("/images", "range", std::vector<double>{0.0, 1.0});
  out.write_strings("/names", options.inputs, "N");
  out.commit();
  spdlog::info("imported {} image(s) of {}x{}x{}", images.size(), height, width, channels);
}

}  // namespace nk::data
