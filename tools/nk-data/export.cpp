// export.cpp - one item of a dataset -> PNG, or a 1-D/2-D dataset -> CSV.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/image.hpp"
#include "nk/log.hpp"
#include "nk-data/nk_data.hpp"

namespace nk::data {

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Items [begin, end) of a numeric dataset as double.
h5::Array<double> read_numeric(const h5::File& file, const std::string& dataset, const h5::DatasetInfo& meta,
                               int64_t begin, int64_t end) {
  if (h5::is_float(meta.dtype)) return file.read_rows<double>(dataset, begin, end);
  if (h5::is_integer(meta.dtype)) {
    h5::Array<int64_t> ints = file.read_rows<int64_t>(dataset, begin, end);
    return {ints.shape, std::vector<double>(ints.data.begin(), ints.data.end())};
  }
  throw input_error(file.path(), dataset, "expected numeric data, found " + meta.type_text);
}

void export_png(const ExportOptions& options, const h5::File& file, const h5::DatasetInfo& meta) {
  // [N,H,W,C], [N,H,W] or [H,W]: pick item --index of a stack.
  const int rank = static_cast<int>(meta.shape.size());
  if (rank < 2 || rank > 4) {
    throw input_error(file.path(), options.dataset,
                      "expected an image stack [N,H,W,C], [N,H,W] or an image [H,W], found rank " + std::to_string(rank));
  }
  const bool stacked = rank >= 3;
  const int64_t items = stacked ? meta.shape[0] : 1;
  if (options.index < 0 || options.index >= items) {
    throw usage_error("--index " + std::to_string(options.index) + " is outside the " + std::to_string(items) +
                      " item(s) of dataset " + options.dataset);
  }
  const int64_t height = stacked ? meta.shape[1] : meta.shape[0];
  const int64_t width = stacked ? meta.shape[2] : meta.shape[1];
  const int64_t channels = rank == 4 ? meta.shape[3] : 1;
  if (channels != 1 && channels != 3 && channels != 4) {
    throw input_error(file.path(), options.dataset, "last axis has " + std::to_string(channels) +
                                                        " channels; PNG export needs 1, 3 or 4");
  }
  // Read only the exported item: a stack may be far larger than one image.
  const h5::Array<double> selected = stacked ? read_numeric(file, options.dataset, meta, options.index, options.index + 1)
                                             : read_numeric(file, options.dataset, meta, 0, meta.shape[0]);
  h5::require_finite(file.path(), options.dataset, selected, stacked ? options.index : 0);
  const std::vector<double>& item = selected.data;
  double scale = meta.dtype == h5::DType::u8 ? 1.0 / 255.0 : 1.0, shift = 0.0;
  if (options.normalize) {
    const auto [low, high] = std::minmax_element(item.begin(), item.end());
    shift = -*low;
    scale = *high > *low ? 1.0 / (*high - *low) : 1.0;
  }
  Image image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.channels = channels == 1 ? 1 : 3;
  image.pixels.resize(static_cast<size_t>(width * height * image.channels));
  for (int64_t p = 0; p < width * height; ++p) {
    for (int c = 0; c < image.channels; ++c) {
      image.pixels[static_cast<size_t>(p * image.channels + c)] =
          static_cast<float>((item[static_cast<size_t>(p * channels + c)] + shift) * scale);
    }
  }
  save_png(options.output, image, options.no_clobber);
  spdlog::info("wrote item {} of {} as a {}x{} PNG", options.index, options.dataset, width, height);
}

void export_csv(const ExportOptions& options, const h5::File& file, const h5::DatasetInfo& meta) {
  const int rank = static_cast<int>(meta.shape.size());
  if (rank < 1 || rank > 2) {
    throw input_error(file.path(), options.dataset, "CSV export needs a 1-D or 2-D dataset, found rank " +
                                                        std::to_string(rank));
  }
  const int64_t columns = rank == 2 ? meta.shape[1] : 1;
  std::ostringstream text;
  // Shortest text that reads back to the same value, in the dataset's own precision.
  auto emit = [&](const auto& data) {
    char number[64];
    for (size_t i = 0; i < data.size(); ++i) {
      const auto end = std::to_chars(number, number + sizeof number, data[i]).ptr;
      text.write(number, end - number);
      text << ((static_cast<int64_t>(i) + 1) % columns == 0 ? '\n' : ',');
    }
  };
  if (meta.dtype == h5::DType::f32) {
    emit(file.read<float>(options.dataset).data);
  } else if (h5::is_float(meta.dtype)) {
    emit(file.read<double>(options.dataset).data);
  } else if (h5::is_integer(meta.dtype)) {
    emit(file.read<int64_t>(options.dataset).data);
  } else {
    throw input_error(file.path(), options.dataset, "expected numeric data, found " + meta.type_text);
  }
  const std::string body = text.str();
  write_output_bytes(options.output, std::vector<unsigned char>(body.begin(), body.end()), options.no_clobber);
}

}  // namespace

void export_dataset(const ExportOptions& options) {
  std::string format = options.format;
  if (format == "auto") format = ends_with(options.output, ".csv") ? "csv" : "png";
  if (format == "png" && options.output == "-" && isatty(STDOUT_FILENO)) {
    throw usage_error("refusing to write a PNG to a terminal: give -o FILE or redirect standard output");
  }
  const h5::File file = h5::File::open(options.input);
  const h5::DatasetInfo meta = file.info(options.dataset);
  if (format == "csv") {
    export_csv(options, file, meta);
  } else {
    export_png(options, file, meta);
  }
}

}  // namespace nk::data
