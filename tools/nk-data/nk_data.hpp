// nk_data.hpp - the verbs of nk-data, the glue of neurkit pipelines.
#pragma once
#include <string>
#include <vector>

namespace nk::data {

/// Schemas written by nk-data.
inline constexpr const char* kImagesSchema = "nk-data.images/1";
inline constexpr const char* kVectorsSchema = "nk-data.vectors/1";

struct ImportImagesOptions {
  std::vector<std::string> inputs;  ///< image files ('-' = one image on stdin)
  std::string output = "-";
  bool no_clobber = false;
  std::string resize;               ///< --resize WxH ("" = keep each image's size)
  std::string channels = "auto";    ///< auto | 1 | 3
};
/// Images -> /images float32 [N,H,W,C] in [0,1] and /names [N].
void import_images(const ImportImagesOptions& options);

struct ImportIdxOptions {
  std::string images, labels;  ///< IDX files, gzip or raw; labels optional
  std::string output = "-";
  bool no_clobber = false;
  long offset = 0, limit = -1;  ///< items [offset, offset + limit)
};
/// MNIST/Fashion-MNIST IDX -> /images float32 [N,H,W,1] and /labels int64 [N].
void import_idx(const ImportIdxOptions& options);

struct ImportCsvOptions {
  std::string input, output = "-";
  bool no_clobber = false;
  std::string dataset = "/vectors";
  char delimiter = ',';
};
/// A numeric CSV table -> float32 [N,D] (a header row of names is kept as the 'columns' attribute).
void import_csv(const ImportCsvOptions& options);

struct ExportOptions {
  std::string input, output = "-";
  bool no_clobber = false;
  std::string dataset = "/images";
  long index = 0;
  std::string format = "auto";  ///< auto (from the output name) | png | csv
  bool normalize = false;       ///< min-max scale to [0,1] before PNG encoding
};
void export_dataset(const ExportOptions& options);

struct InfoOptions {
  std::string input = "-";
  std::string format = "auto";  ///< auto | table | tsv | json
};
void info(const InfoOptions& options);

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output = "-";
  bool no_clobber = false;
  bool allow_partial = false;
};
/// Concatenates shard outputs of one schema along the first axis.
void merge(const MergeOptions& options);

}  // namespace nk::data
