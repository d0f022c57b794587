// source.cpp - the items of an input: reading and checking them, their target
// state, and decoding a prepared state back into data (PSNR, SSIM).
#include <cmath>
#include <limits>

#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/metrics.hpp"
#include "nk/shard.hpp"
#include "tnqe-encode/circuits_io.hpp"

namespace tnqe {

/// Builds an item from values in the input's own shape.
Item make_item(int64_t index, bool image, int64_t h, int64_t w, int64_t c, std::vector<float> values, bool pad,
               const std::string& file, const std::string& dataset) {
  Item it;
  it.index = index;
  it.image = image;
  it.height = h;
  it.width = w;
  it.channels = c;
  it.original = std::move(values);
  const std::string where = "item " + std::to_string(index);
  if (image) {
    if (!(power_of_two(h) && power_of_two(w) && h == w) && !pad)
      throw nk::input_error(file, dataset,
                            where + " is " + std::to_string(h) + "x" + std::to_string(w) +
                                ": TNQE needs a square image with a power-of-two side (use --pad to pad with zeros)");
    const int m = ceil_log2(std::max({h, w, int64_t{2}}));
    it.side = 1 << m;
    const bool rgb = c == 3;
    it.layout = image_layout(m, rgb);
    it.qubits = it.layout.qubits();
    if (it.qubits > kMaxQubits)
      throw nk::input_error(file, dataset, where + " needs " + std::to_string(it.qubits) + " qubits (more than " +
                                               std::to_string(kMaxQubits) + "): refused before allocating");
    const int cp = rgb ? 4 : 1;
    it.data = CVec::Zero(int64_t{1} << it.qubits);
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch)
          it.data[(y * it.side + x) * cp + ch] = it.original[(y * w + x) * c + ch];
  } else {
    const int n = std::max(1, ceil_log2(w));
    if (n > kMaxQubits)
      throw nk::input_error(file, dataset, where + " needs " + std::to_string(n) + " qubits (more than " +
                                               std::to_string(kMaxQubits) + "): refused before allocating");
    it.layout = vector_layout(n);
    it.qubits = n;
    it.data = CVec::Zero(int64_t{1} << n);
    for (int64_t x = 0; x < w; ++x) it.data[x] = it.original[x];
  }
  if (!(it.data.norm() > 0))
    throw nk::input_error(file, dataset, where + " is all zero: no normalised quantum state encodes it");
  return it;
}

Source open_source(const std::string& path) {
  nk::data::Options options;
  options.image_files = false;
  options.channels = {1, 3};
  options.labels = nk::data::Labels::ignore;
  return Source::open(path, options);
}

Item read_item(const Source& s, int64_t index, bool pad) {
  // Refuse absurd sizes before reading.
  const int q = s.images() ? 2 * ceil_log2(std::max(s.height(), s.width())) + (s.channels() == 3 ? 2 : 0)
                           : ceil_log2(s.width());
  if (q > kMaxQubits)
    throw nk::input_error(s.path(), s.dataset(),
                          "items of " + std::to_string(s.item_values()) + " values need " + std::to_string(q) +
                              " qubits (more than " + std::to_string(kMaxQubits) + "): refused before allocating");
  nk::h5::Array<float> a = s.read_item(index);
  return make_item(index, s.images(), s.height(), s.width(), s.channels(), std::move(a.data), pad, s.path(),
                   s.dataset());
}

std::vector<int64_t> select_items(const Source& s, int64_t index, const nk::Shard& shard) {
  if (index >= 0) {
    if (index >= s.count())
      throw nk::usage_error("--index " + std::to_string(index) + " is outside " + s.dataset() + " (N = " +
                            std::to_string(s.count()) + ")");
    return {index};
  }
  const auto [begin, end] = nk::shard_range(shard, s.count());
  // One circuit per item, each kept until the output is written.
  nk::data::check_run_items(s.path(), s.dataset(), end - begin);
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

CVec target_state(const Item& item) {
  const Layout& l = item.layout;
  CVec a(item.data.size());
  for (int64_t x = 0; x < item.data.size(); ++x) a[l.to_amplitude(x)] = item.data[x];
  return a / a.norm();
}

nk::Image decode_image(const Item& item, const CVec& amplitudes) {
  const CVec target = target_state(item);
  const cd overlap = target.dot(amplitudes);  // <target|psi>
  const cd align = std::abs(overlap) > 0 ? std::conj(overlap) / std::abs(overlap) : cd(1);
  const CVec data = amplitudes_to_data(item.layout, amplitudes * align) * item.data.norm();
  nk::Image img;
  if (item.image) {
    img.height = static_cast<int>(item.height);
    img.width = static_cast<int>(item.width);
    img.channels = static_cast<int>(item.channels);
    const int cp = item.channels == 3 ? 4 : 1;
    img.pixels.resize(static_cast<size_t>(item.height * item.width * item.channels));
    for (int64_t y = 0; y < item.height; ++y)
      for (int64_t x = 0; x < item.width; ++x)
        for (int64_t c = 0; c < item.channels; ++c)
          img.pixels[(y * item.width + x) * item.channels + c] =
              static_cast<float>(std::clamp(data[(y * item.side + x) * cp + c].real(), 0.0, 1.0));
  } else {
    img.height = 1;
    img.width = static_cast<int>(item.width);
    img.channels = 1;
    for (int64_t x = 0; x < item.width; ++x) img.pixels.push_back(static_cast<float>(data[x].real()));
  }
  return img;
}

void quality(const Item& item, const CVec& amplitudes, double& psnr, double& ssim) {
  psnr = ssim = std::numeric_limits<double>::quiet_NaN();
  if (!item.image) return;
  nk::Image ref;
  ref.height = static_cast<int>(item.height);
  ref.width = static_cast<int>(item.width);
  ref.channels = static_cast<int>(item.channels);
  ref.pixels = item.original;
  const nk::Image got = decode_image(item, amplitudes);
  psnr = nk::psnr(ref, got);
  ssim = nk::ssim(ref, got);
}

}  // namespace tnqe
