// dataset.cpp - nk::data::Source: the checks every reader of nk-data files
// (or of a single image file) shares.
#include "nk/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "nk/error.hpp"

namespace nk::data {

namespace {

constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};

// HDF5 looks for its superblock at 0, 512, 1024, 2048, ... (after a user
// block). An unreadable path counts as HDF5, so that h5::File::open reports why.
bool looks_like_hdf5(const std::string& path) {
  if (path == "-") return true;
  // Not a regular file (missing, a directory): h5::File::open names the problem.
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return true;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return true;
  const std::streamoff size = in.tellg();
  for (std::streamoff offset = 0; offset + 8 <= size; offset = offset ? offset * 2 : 512) {
    char magic[8] = {};
    in.seekg(offset);
    if (!in.read(magic, 8)) return false;
    if (std::memcmp(magic, kSignature, 8) == 0) return true;
  }
  return false;
}

// "1 or 3", "1, 3 or 4".
std::string either(const std::vector<int64_t>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) text += i + 1 == values.size() ? " or " : ", ";
    text += std::to_string(values[i]);
  }
  return text;
}

std::string range_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + "," + std::to_string(end) + ")";
}

}  // namespace

std::vector<int64_t> Source::item_shape() const {
  if (kind_ == Kind::vectors) return {width_};
  return {height_, width_, channels_};
}

Source Source::open(const std::string& path, const Options& options) {
  Source s;
  s.path_ = path;
  if (options.image_files && !looks_like_hdf5(path)) {
    s.image_ = load_image(path);
    s.rank_ = 3;
    s.count_ = 1;
    s.height_ = s.image_.height, s.width_ = s.image_.width, s.channels_ = s.image_.channels;
    if (s.item_values() <= 0) throw input_error(path, "", "image of zero size");
    if (!options.channels.empty() &&
        std::find(options.channels.begin(), options.channels.end(), s.channels_) == options.channels.end())
      throw input_error(path, "",
                        "expected C = " + either(options.channels) + " channels, found " + std::to_string(s.channels_));
    if (options.labels == Labels::required)
      throw input_error(path, "", "an image file has no labels (a labelled nk-data file is needed)");
    return s;
  }
  s.owned_ = std::make_unique<h5::File>(h5::File::open(path));
  // Files without nk_schema are the user's own data; other tools' files are refused.
  if (s.owned_->attr_string("/", "nk_schema")) s.owned_->require_schema("nk-data.");
  s.file_ = s.owned_.get();
  s.group_ = options.group;
  s.unit_range_ = options.unit_range;
  s.open_arrays(options);
  s.open_labels(options);
  return s;
}

Source Source::open(const h5::File& file, const Options& options) {
  Source s;
  s.path_ = file.path();
  s.file_ = &file;
  s.group_ = options.group;
  s.unit_range_ = options.unit_range;
  s.open_arrays(options);
  s.open_labels(options);
  return s;
}

void Source::open_arrays(const Options& options) {
  const std::string images_path = group_ + "/images", vectors_path = group_ + "/vectors";
  if (file_->has(images_path)) {
    dataset_ = images_path;
    kind_ = Kind::images;
  } else if (options.vectors && file_->has(vectors_path)) {
    dataset_ = vectors_path;
    kind_ = Kind::vectors;
  } else {
    throw input_error(path_, images_path,
                      options.vectors ? "missing (expected /images [N,H,W,C] or /vectors [N,D], as nk-data writes)"
                                      : "missing (expected /images [N,H,W,C], as nk-data writes)");
  }
  const h5::DatasetInfo info = file_->info(dataset_);
  const std::vector<int64_t>& shape = info.shape;
  rank_ = static_cast<int>(shape.size());
  if (!h5::is_float(info.dtype))
    throw input_error(path_, dataset_, "expected floating-point data, found " + info.type_text);
  if (kind_ == Kind::images) {
    if (rank_ != 3 && rank_ != 4)
      throw input_error(
          path_, dataset_,
          "expected rank 3 [N,H,W] or 4 [N,H,W,C], found rank " + std::to_string(rank_) + " " + h5::shape_text(shape));
    height_ = shape[1], width_ = shape[2], channels_ = rank_ == 4 ? shape[3] : 1;
    if (!options.channels.empty() &&
        std::find(options.channels.begin(), options.channels.end(), channels_) == options.channels.end())
      throw input_error(path_, dataset_,
                        "expected C = " + either(options.channels) + " channels, found " + std::to_string(channels_));
    if (height_ <= 0 || width_ <= 0 || channels_ <= 0)
      throw input_error(path_, dataset_, "images of zero size " + h5::shape_text(shape));
    if (options.max_side > 0 && (height_ > options.max_side || width_ > options.max_side))
      throw input_error(path_, dataset_,
                        "images of " + h5::shape_text(shape) + " exceed " + std::to_string(options.max_side) +
                            " pixels a side: refused before reading");
  } else {
    if (rank_ != 2)
      throw input_error(path_, dataset_,
                        "expected rank 2 [N,D], found rank " + std::to_string(rank_) + " " + h5::shape_text(shape));
    height_ = 1, width_ = shape[1], channels_ = 1;
    if (width_ <= 0) throw input_error(path_, dataset_, "vectors of length 0");
  }
  // Products of these sizes must stay far inside int64_t.
  double values = 1;
  for (int64_t extent : shape) values *= static_cast<double>(extent);
  if (values > std::ldexp(1.0, 62))
    throw input_error(path_, dataset_,
                      "shape " + h5::shape_text(shape) + " holds more than 2^62 values: refused before reading");
  count_ = shape[0];
  if (count_ <= 0) throw input_error(path_, dataset_, "holds no items (N = 0)");
}

void Source::open_labels(const Options& options) {
  if (options.labels == Labels::ignore) return;
  const std::string labels_path = group_ + "/labels";
  if (!file_->has(labels_path)) {
    if (options.labels == Labels::required)
      throw input_error(path_, labels_path, "missing (a labelled file is needed)");
    return;
  }
  const h5::DatasetInfo info = file_->info(labels_path);
  if (!h5::is_integer(info.dtype))
    throw input_error(path_, labels_path, "expected integer labels (class indices), found " + info.type_text);
  if (info.shape.size() != 1)
    throw input_error(
        path_, labels_path,
        "expected rank 1 [N], found rank " + std::to_string(info.shape.size()) + " " + h5::shape_text(info.shape));
  if (info.shape[0] != count_)
    throw input_error(
        path_, labels_path,
        "has " + std::to_string(info.shape[0]) + " entries, " + dataset_ + " has " + std::to_string(count_));
  labels_ = file_->read<int64_t>(labels_path).data;
  for (size_t i = 0; i < labels_.size(); ++i) {
    const int64_t y = labels_[i];
    if (y < 0)
      throw input_error(path_, labels_path,
                        "entry " + std::to_string(i) + " is " + std::to_string(y) + " (labels are 0..C-1)");
    if (y >= kMaxClasses)
      throw input_error(path_, labels_path,
                        "entry " + std::to_string(i) + " is " + std::to_string(y) + " (at most " +
                            std::to_string(kMaxClasses) + " classes)");
    classes_ = std::max(classes_, y + 1);
  }
  has_labels_ = true;
}

h5::Array<float> Source::read(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > count_)
    throw input_error(path_, dataset_,
                      "items " + range_text(begin, end) + " do not exist (N = " + std::to_string(count_) + ")");
  h5::Array<float> out;
  if (!file_) {
    out.shape = {end - begin, height_, width_, channels_};
    if (end > begin) out.data = image_.pixels;
    return out;
  }
  out = file_->read_rows<float>(dataset_, begin, end);
  h5::require_finite(path_, dataset_, out, begin);
  if (unit_range_) {
    const int64_t per_item = end > begin ? static_cast<int64_t>(out.data.size()) / (end - begin) : 1;
    for (size_t i = 0; i < out.data.size(); ++i) {
      if (out.data[i] < 0.0f || out.data[i] > 1.0f) {
        throw input_error(path_, dataset_, "item " + std::to_string(begin + static_cast<int64_t>(i) / per_item) +
                                               " has the value " + std::to_string(out.data[i]) +
                                               " (this tool takes values in [0,1])");
      }
    }
  }
  if (kind_ == Kind::images && rank_ == 3) out.shape.push_back(1);
  return out;
}

h5::Array<float> Source::read_item(int64_t index) const {
  if (index < 0 || index >= count_)
    throw input_error(path_, dataset_,
                      "item " + std::to_string(index) + " does not exist (N = " + std::to_string(count_) + ")");
  h5::Array<float> item = read(index, index + 1);
  item.shape.erase(item.shape.begin());
  return item;
}

Image Source::read_image(int64_t index) const {
  if (kind_ != Kind::images) throw input_error(path_, dataset_, "holds vectors [N,D], not images [N,H,W,C]");
  if (!file_ && index == 0) return image_;
  if (height_ > INT32_MAX || width_ > INT32_MAX || channels_ > INT32_MAX)
    throw input_error(
        path_, dataset_,
        "images of " + std::to_string(height_) + "x" + std::to_string(width_) + " pixels are too large for an image");
  h5::Array<float> item = read_item(index);
  Image image;
  image.height = static_cast<int>(height_), image.width = static_cast<int>(width_);
  image.channels = static_cast<int>(channels_);
  image.pixels = std::move(item.data);
  return image;
}

void check_run_items(const std::string& path, const std::string& dataset, int64_t items, int64_t limit) {
  if (items <= limit) return;
  int bits = 0;
  while ((int64_t{1} << (bits + 1)) <= limit && bits < 62) ++bits;
  const bool power = limit == (int64_t{1} << bits);
  throw input_error(path, dataset, std::to_string(items) + " items for one run: more than " +
                                       (power ? "2^" + std::to_string(bits) : std::to_string(limit)) +
                                       " (split it with --shard I/N)");
}

}  // namespace nk::data
