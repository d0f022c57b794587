// dataset.hpp - one validated reader for the data neurkit tools consume: an
// nk-data file (/images or /vectors, optional /labels; see nk-data(1)) or,
// where a tool allows it, a single image file, which is a dataset of one item.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/image.hpp"

namespace nk::data {

/// Labels are class indices 0..C-1 with C at most this (a bound on what a
/// classifier allocates per class, far above any real label set).
inline constexpr int64_t kMaxClasses = 100000;

/// What an item is: an image [H,W,C] or a vector [D].
enum class Kind { images, vectors };

/// What to do with /labels.
enum class Labels {
  ignore,    ///< not read, not checked (a tool that has no use for them)
  optional,  ///< checked when present
  required,  ///< checked, and their absence is an error
};

/// What a tool accepts. The defaults accept every valid nk-data file.
struct Options {
  bool vectors = true;            ///< accept /vectors [N,D] where /images is absent
  bool image_files = true;        ///< accept a PNG/JPEG/PGM/... path as a one-item source
  std::vector<int64_t> channels;  ///< the image channel counts C accepted; empty: any C >= 1
  int64_t max_side = 0;           ///< refuse nk-data images with H or W above this (0: no bound)
  bool unit_range = false;        ///< refuse values outside [0,1] when read (tools whose models take pixels in [0,1])
  Labels labels = Labels::optional;
  /// Read GROUP/images, GROUP/vectors and GROUP/labels instead of the root's
  /// (e.g. "/tasks/invert/train"); empty: the root.
  std::string group;
};

/// A checked source of items, read item by item, by range or all at once.
///
/// Layouts accepted (nk-data(1)):
///   /images  float32 or float64, [N,H,W,C] or [N,H,W] (read as C = 1);
///            values as stored (nk-data writes [0,1]; no range is imposed).
///   /vectors float32 or float64, [N,D]; used only where /images is absent.
///   /labels  any integer type, [N]: class indices 0..C-1 (C <= kMaxClasses).
///   An image file (decoded by content through nk/image.hpp): N = 1, [H,W,C]
///   with C = 1 or 3 (alpha dropped) and values in [0,1]; it has no labels.
/// Every count is positive: N >= 1, H, W, C >= 1, D >= 1.
///
/// Every refusal is an nk::Error of exit 3 (Exit::input) that names the file
/// and the dataset, e.g. "input 'x.h5': dataset /labels: has 9 entries,
/// /images has 10" (see open() and read() for the list); an unreadable or
/// missing file is exit 4. Not thread-safe (HDF5 is not): read from one thread.
class Source {
 public:
  /// Opens 'path' ('-': an HDF5 file on standard input) and checks it:
  ///  - nk_schema, when the file has one, must be nk-data's
  ///    ("nk_schema is 'T', expected nk-data.*"); files without one (the
  ///    user's own h5py data) are accepted;
  ///  - /images, else /vectors, must exist ("missing (expected /images
  ///    [N,H,W,C] or /vectors [N,D], as nk-data writes)");
  ///  - rank ("expected rank 3 [N,H,W] or 4 [N,H,W,C], found rank 2 [4,5]"),
  ///    dtype ("expected floating-point data, found uint8"), C in
  ///    options.channels ("expected C = 1 or 3 channels, found 2"), sizes
  ///    ("images of zero size [1,0,8,3]", "vectors of length 0", "holds no
  ///    items (N = 0)", "images of [..] exceed S pixels a side: refused before
  ///    reading", "shape [..] holds more than 2^62 values: refused before
  ///    reading");
  ///  - /labels (per options.labels): "missing (a labelled file is needed)",
  ///    "expected integer labels (class indices), found float32", "expected
  ///    rank 1 [N], found rank 2 [..]", "has 9 entries, /images has 10",
  ///    "entry 3 is -1 (labels are 0..C-1)", "entry 3 is 200000 (at most
  ///    100000 classes)".
  /// A path that is not HDF5 is decoded as an image when options.image_files
  /// is set (else it is refused as "not an HDF5 file"). Pixel data are not read
  /// yet: NaN/Inf are found by read().
  static Source open(const std::string& path, const Options& options = {});
  /// The same checks for options.group of a file the caller has opened and
  /// whose nk_schema it has checked (e.g. a spike-sft tasks file). The file
  /// must outlive the Source.
  static Source open(const h5::File& file, const Options& options = {});

  const std::string& path() const { return path_; }        ///< as given ('-' for standard input)
  const std::string& dataset() const { return dataset_; }  ///< e.g. "/images"; empty for an image file
  Kind kind() const { return kind_; }
  bool images() const { return kind_ == Kind::images; }
  bool image_file() const { return !file_; }  ///< an image file, not an nk-data file

  int64_t count() const { return count_; }                              ///< N
  int64_t height() const { return height_; }                            ///< H (1 for vectors)
  int64_t width() const { return width_; }                              ///< W (D for vectors)
  int64_t channels() const { return channels_; }                        ///< C (1 for vectors)
  int64_t item_values() const { return height_ * width_ * channels_; }  ///< H*W*C or D
  /// One item's shape: {H, W, C} for images (also for [N,H,W] data), {D} for vectors.
  std::vector<int64_t> item_shape() const;

  bool has_labels() const { return has_labels_; }
  /// N checked labels; empty without /labels (or with Labels::ignore).
  const std::vector<int64_t>& labels() const { return labels_; }
  /// Largest label + 1 (0 without labels).
  int64_t classes() const { return classes_; }

  /// Items [begin, end), shape [end-begin, H, W, C] or [end-begin, D], as float
  /// (float64 data are rounded). Exit 3: "items [b,e) do not exist (N = n)",
  /// "NaN at index [i,y,x,c]" (in the dataset's own indexing), "needs X GiB,
  /// more than the Y GiB of memory available" (refused before allocating), or
  /// "cannot read data (file truncated or corrupt?)".
  h5::Array<float> read(int64_t begin, int64_t end) const;
  /// One item, shape [H, W, C] or [D]; "item K does not exist (N = n)".
  h5::Array<float> read_item(int64_t index) const;
  /// Every item: read(0, count()).
  h5::Array<float> read_all() const { return read(0, count_); }
  /// An item of an images source as an nk::Image (values as stored, not
  /// clamped; any C). Exit 3 for a vectors source.
  Image read_image(int64_t index) const;

 private:
  Source() = default;
  void open_arrays(const Options& options);
  void open_labels(const Options& options);

  std::string path_, dataset_, group_;
  Kind kind_ = Kind::images;
  int rank_ = 0;  ///< rank of the dataset as stored (3 or 4 for images, 2 for vectors)
  int64_t count_ = 0, height_ = 0, width_ = 0, channels_ = 0;
  std::unique_ptr<h5::File> owned_;  ///< the file open() opened (null for open(File&) or an image file)
  const h5::File* file_ = nullptr;   ///< the HDF5 file read from; null for an image file
  Image image_;                      ///< the decoded image of an image file
  bool has_labels_ = false;
  bool unit_range_ = false;
  std::vector<int64_t> labels_;
  int64_t classes_ = 0;
};

/// Tools that keep a result per item refuse a run over more than 'limit'
/// items before listing them (exit 3 naming the file and dataset, "... items
/// for one run: more than 2^24 (split it with --shard I/N)"): an HDF5 file of
/// 2^40 declared items costs a few bytes on disk.
inline constexpr int64_t kMaxRunItems = int64_t{1} << 24;
void check_run_items(const std::string& path, const std::string& dataset, int64_t items, int64_t limit = kMaxRunItems);

}  // namespace nk::data
