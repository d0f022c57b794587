// import_images.cpp - image files -> /images [N,H,W,C].
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/image.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk-data/nk_data.hpp"

namespace nk::data {

void import_images(const ImportImagesOptions& options) {
  if (options.inputs.empty()) throw usage_error("import: give at least one image file");
  if (std::count(options.inputs.begin(), options.inputs.end(), "-") > 1) {
    throw usage_error("import: standard input ('-') can be given once");
  }
  const bool resize = !options.resize.empty();
  const auto [resize_width, resize_height] = resize ? nk::parse_size(options.resize, "--resize") : std::pair<int, int>{0, 0};
  // "auto" is RGB as soon as one image has colour: read every header first so
  // that each image is decoded straight into the stack, never all held twice.
  const bool from_stdin = std::count(options.inputs.begin(), options.inputs.end(), "-") == 1;
  const std::vector<unsigned char> stdin_bytes = from_stdin ? read_stdin() : std::vector<unsigned char>{};
  auto load = [&](const std::string& path) { return path == "-" ? decode_image(stdin_bytes, "-") : load_image(path); };
  int channels = options.channels == "3" ? 3 : 1;
  if (options.channels == "auto") {
    for (const std::string& path : options.inputs) {
      channels = std::max(channels, path == "-" ? load(path).channels : probe_image(path).channels);
    }
  }
  std::vector<float> stack;
  Progress progress("import", static_cast<int64_t>(options.inputs.size()));
  int width = 0, height = 0;
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    Image image = load(options.inputs[i]);
    if (resize) image = resize_image(image, resize_width, resize_height);
    image = convert_channels(image, channels);
    if (i == 0) {
      width = image.width;
      height = image.height;
      stack.reserve(static_cast<size_t>(width) * height * channels * options.inputs.size());
    } else if (image.width != width || image.height != height) {
      throw input_error(options.inputs[i], "",
                        "image is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                            " but the first image is " + std::to_string(width) + "x" + std::to_string(height) +
                            "; give --resize WxH to import images of different sizes");
    }
    stack.insert(stack.end(), image.pixels.begin(), image.pixels.end());
    progress.update(static_cast<int64_t>(i + 1));
  }
  progress.finish();
  const auto count = static_cast<int64_t>(options.inputs.size());
  h5::Writer out(options.output, kImagesSchema, options.no_clobber);
  out.write("/images", stack.data(), {count, height, width, channels}, "N,H,W,C");
  out.attr("/images", "range", std::vector<double>{0.0, 1.0});
  out.write_strings("/names", options.inputs, "N");
  out.commit();
  spdlog::info("imported {} image(s) of {}x{}x{}", count, height, width, channels);
}

}  // namespace nk::data
