// model_io.hpp - the files the verbs of spike-sft share: labelled data in
// (nk-data files, or a task's split), model files in and out.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/snn/model_file.hpp"
#include "nk/snn/snn.hpp"

// spike-sft's code names the shared spiking network library snn::.
namespace snn = nk::snn;

namespace spike {

/// Labelled examples: x [N, D] in [0, 1] (images flattened), labels [N].
struct Dataset {
  snn::Matrix x;
  std::vector<int64_t> labels;
  std::vector<int64_t> shape;  ///< one example's shape (H, W, C), for checks
  int64_t classes = 0;         ///< max label + 1
  int64_t size() const { return x.rows(); }
};

/// Reads /images [N,H,W,C] or [N,H,W] (or /vectors [N,D]) and /labels [N] of
/// an nk-data file, checked by nk::data::Source (nk/dataset.hpp): refuses
/// NaN/Inf, wrong ranks and dtypes, missing, negative or misplaced labels and
/// empty files (exit 3, naming the dataset).
Dataset read_dataset(const std::string& path);
/// The same from prefix + "/images" (or "/vectors") and prefix + "/labels".
Dataset read_dataset(const nk::h5::File& file, const std::string& prefix);

/// Rows 'order[first .. first + rows)' of data into x and labels.
void gather(const Dataset& data, const std::vector<int64_t>& order, int64_t first, int64_t rows, snn::Matrix& x,
            std::vector<int64_t>& labels);

/// Model files: nk::snn's (nk/snn/model_file.hpp).
using nk::snn::kAdaptedSchema;
using nk::snn::kModelSchema;
using nk::snn::read_model;
using nk::snn::write_model;

}  // namespace spike
