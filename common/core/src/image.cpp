// image.cpp - stb_image / stb_image_write / stb_image_resize behind nk::Image.
#include "nk/image.hpp"

#include <stb_image.h>
#include <stb_image_resize.h>
#include <stb_image_write.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"

namespace nk {

namespace {
std::vector<unsigned char> read_bytes(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw io_error(path, "cannot open: is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw io_error(path, "cannot read");
  return bytes;
}
uint32_t crc32(const unsigned char* p, size_t n) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t big_endian(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// stb_image checks no PNG CRC: every chunk's is checked here, up to IEND,
// which must be there.
void check_png(const std::vector<unsigned char>& b, const std::string& name) {
  size_t at = 8;
  while (at + 12 <= b.size()) {
    const uint32_t length = big_endian(&b[at]);
    if (length > b.size() - at - 12) throw input_error(name, "", "PNG chunk at byte " + std::to_string(at) + " runs past the end of the file");
    std::string type(reinterpret_cast<const char*>(&b[at + 4]), 4);
    if (!std::all_of(type.begin(), type.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; })) {
      type = "(unnamed)";
    }
    if (crc32(&b[at + 4], length + 4) != big_endian(&b[at + 8 + length])) {
      throw input_error(name, "", "PNG chunk " + type + " at byte " + std::to_string(at) + " has a bad CRC (a corrupt file)");
    }
    if (type == "IEND") return;
    at += 12 + length;
  }
  throw input_error(name, "", "PNG ends without its IEND chunk (a truncated file)");
}

// Binary PGM/PPM (P5/P6), which stb_image reads without checking the data's
// length and without scaling by maxval: the header's maxval (1..65535) and
// the number of bytes the pixels need. Returns maxval.
int check_pnm(const std::vector<unsigned char>& b, const std::string& name) {
  size_t at = 2;
  auto field = [&]() {
    for (;;) {
      while (at < b.size() && std::isspace(b[at])) ++at;
      if (at < b.size() && b[at] == '#') {
        while (at < b.size() && b[at] != '\n') ++at;
        continue;
      }
      break;
    }
    long long v = 0;
    size_t digits = 0;
    while (at < b.size() && std::isdigit(b[at]) && digits < 12) v = v * 10 + (b[at++] - '0'), ++digits;
    if (digits == 0) throw input_error(name, "", "PNM header is cut or malformed");
    return v;
  };
  const long long width = field(), height = field(), maxval = field();
  if (maxval < 1 || maxval > 65535) throw input_error(name, "", "PNM maxval is " + std::to_string(maxval) + " (expected 1 to 65535)");
  ++at;  // the single whitespace after maxval
  const long long channels = b[1] == '6' ? 3 : 1, bytes = maxval > 255 ? 2 : 1;
  const long long need = width * height * channels * bytes;
  if (width > 0 && height > 0 && width * height <= 1000000000LL && (at > b.size() || static_cast<long long>(b.size() - at) < need)) {
    throw input_error(name, "", "PNM pixel data is truncated: " + std::to_string(need) + " bytes needed, " +
                                    std::to_string(at > b.size() ? 0 : b.size() - at) + " present");
  }
  return static_cast<int>(maxval);
}

}  // namespace

Image decode_image(const std::vector<unsigned char>& bytes, const std::string& name) {
  if (bytes.empty()) throw input_error(name, "", "file is empty (expected an image)");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) throw input_error(name, "", "image file larger than 2 GiB");
  const auto* data = bytes.data();
  const int length = static_cast<int>(bytes.size());
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::equal(kPng, kPng + 8, bytes.begin())) check_png(bytes, name);
  int maxval = 0;
  if (bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6')) maxval = check_pnm(bytes, name);
  int width = 0, height = 0, channels = 0;
  if (!stbi_info_from_memory(data, length, &width, &height, &channels)) {
    throw input_error(name, "", std::string("not a supported image (") + stbi_failure_reason() + ")");
  }
  if (width < 1 || height < 1) {
    throw input_error(name, "", "image of " + std::to_string(width) + "x" + std::to_string(height) + " pixels (a header cut or corrupt)");
  }
  if (static_cast<double>(width) * height > 1.0e9) {
    throw input_error(name, "", "image of " + std::to_string(width) + "x" + std::to_string(height) +
                                    " pixels is too large");
  }
  const bool sixteen = stbi_is_16_bit_from_memory(data, length);
  Image image;
  void* raw = sixteen ? static_cast<void*>(stbi_load_16_from_memory(data, length, &width, &height, &channels, 0))
                      : static_cast<void*>(stbi_load_from_memory(data, length, &width, &height, &channels, 0));
  if (!raw) throw input_error(name, "", std::string("cannot decode image (") + stbi_failure_reason() + ")");
  const int kept = channels >= 3 ? 3 : 1;  // drop alpha
  image.width = width;
  image.height = height;
  image.channels = kept;
  image.pixels.resize(static_cast<size_t>(width) * height * kept);
  // Divide (not multiply by a reciprocal) so that values equal numpy's x / 255.
  // A PGM/PPM's full scale is its maxval (stb_image returns the raw values).
  const float full_scale = maxval > 0 ? static_cast<float>(maxval) : sixteen ? 65535.0f : 255.0f;
  const size_t pixels = static_cast<size_t>(width) * height;
  for (size_t p = 0; p < pixels; ++p) {
    for (int c = 0; c < kept; ++c) {
      const size_t source = p * channels + c;
      const float value = sixteen ? static_cast<const uint16_t*>(raw)[source] : static_cast<const uint8_t*>(raw)[source];
      image.pixels[p * kept + c] = value / full_scale;
    }
  }
  stbi_image_free(raw);
  return image;
}

ImageShape probe_image(const std::string& path) {
  ImageShape shape;
  if (::access(path.c_str(), R_OK) != 0) throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
  std::error_code is_dir_error;
  if (std::filesystem::is_directory(path, is_dir_error)) throw io_error(path, "cannot open: is a directory");
  if (!stbi_info(path.c_str(), &shape.width, &shape.height, &shape.channels)) {
    std::error_code error;
    const bool empty = std::filesystem::is_regular_file(path, error) ? std::filesystem::file_size(path, error) == 0
                                                                     : std::filesystem::is_character_file(path, error);
    throw input_error(path, "", empty ? "file is empty (expected an image)"
                                      : std::string("not a supported image (") + stbi_failure_reason() + ")");
  }
  if (shape.width < 1 || shape.height < 1) {
    throw input_error(path, "", "image of " + std::to_string(shape.width) + "x" + std::to_string(shape.height) +
                                    " pixels (a header cut or corrupt)");
  }
  shape.channels = shape.channels >= 3 ? 3 : 1;
  return shape;
}

Image load_image(const std::string& path) { return decode_image(read_bytes(path), path); }

Image resize_image(const Image& image, int width, int height) {
  if (width == image.width && height == image.height) return image;
  Image out;
  out.width = width;
  out.height = height;
  out.channels = image.channels;
  out.pixels.resize(static_cast<size_t>(width) * height * image.channels);
  if (!stbir_resize_float(image.pixels.data(), image.width, image.height, 0, out.pixels.data(), width, height, 0,
                          image.channels)) {
    throw Error(Exit::runtime, "image resize failed");
  }
  for (float& v : out.pixels) v = std::clamp(v, 0.0f, 1.0f);
  return out;
}

Image convert_channels(const Image& image, int channels) {
  if (channels == image.channels) return image;
  Image out;
  out.width = image.width;
  out.height = image.height;
  out.channels = channels;
  const size_t pixels = static_cast<size_t>(image.width) * image.height;
  out.pixels.resize(pixels * channels);
  for (size_t p = 0; p < pixels; ++p) {
    if (channels == 3) {
      for (int c = 0; c < 3; ++c) out.pixels[p * 3 + c] = image.pixels[p];
    } else {
      const float* rgb = &image.pixels[p * 3];
      out.pixels[p] = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];
    }
  }
  return out;
}

std::vector<unsigned char> encode_png(const Image& image) {
  if (image.width < 1 || image.height < 1) {
    throw Error(Exit::input, "cannot write a PNG of " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                                 " pixels (the image is empty)");
  }
  std::vector<unsigned char> eight(image.pixels.size());
  for (size_t i = 0; i < eight.size(); ++i) {
    const float v = std::isfinite(image.pixels[i]) ? std::clamp(image.pixels[i], 0.0f, 1.0f) : 0.0f;
    eight[i] = static_cast<unsigned char>(std::lround(v * 255.0f));
  }
  std::vector<unsigned char> png;
  auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<unsigned char>*>(context);
    out->insert(out->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + size);
  };
  if (!stbi_write_png_to_func(append, &png, image.width, image.height, image.channels, eight.data(),
                              image.width * image.channels)) {
    throw Error(Exit::runtime, "PNG encoding failed");
  }
  return png;
}

void save_png(const std::string& path, const Image& image, bool no_clobber) {
  write_output_bytes(path, encode_png(image), no_clobber);
}


std::pair<int, int> parse_size(const std::string& text, const std::string& option) {
  int width = 0, height = 0;
  char x = 0, rest = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &width, &x, &height, &rest) != 3 || x != 'x' || width < 1 ||
      height < 1 || width > 65536 || height > 65536)
    throw usage_error(option + ": expected WxH such as 512x512 (1 to 65536), got '" + text + "'");
  return {width, height};
}

}  // namespace nk
