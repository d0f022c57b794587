// model_io.cpp - see model_io.hpp.
#include "spike-sft/model_io.hpp"

#include <stdexcept>

#include "nk/dataset.hpp"
#include "nk/error.hpp"

namespace spike {

namespace {

/// A labelled nk-data source (checked by nk::data), read whole.
Dataset to_dataset(const nk::data::Source& source) {
  const nk::h5::Array<float> values = source.read_all();
  Dataset data;
  data.x = Eigen::Map<const snn::Matrix>(values.data.data(), source.count(), source.item_values());
  data.shape = source.item_shape();
  data.labels = source.labels();
  data.classes = source.classes();
  return data;
}

/// nk::data's options for labelled examples under 'group' ("" for the file's root).
nk::data::Options labelled(const std::string& group) {
  nk::data::Options options;
  options.image_files = false;
  options.labels = nk::data::Labels::required;
  options.group = group;
  return options;
}

}  // namespace

Dataset read_dataset(const std::string& path) { return to_dataset(nk::data::Source::open(path, labelled(""))); }

Dataset read_dataset(const nk::h5::File& file, const std::string& prefix) {
  return to_dataset(nk::data::Source::open(file, labelled(prefix)));
}

void gather(const Dataset& data, const std::vector<int64_t>& order, int64_t first, int64_t rows, snn::Matrix& x,
            std::vector<int64_t>& labels) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = order[static_cast<size_t>(first + r)];
    x.row(r) = data.x.row(i);
    labels[static_cast<size_t>(r)] = data.labels[static_cast<size_t>(i)];
  }
}

}  // namespace spike
