// h5.hpp - HDF5 files for neurkit: read a path or '-' (stdin), write atomically
// to a path or '-' (stdout), typed N-D arrays, Eigen matrices, strings and
// attributes, provenance and schema checks.
#pragma once
#include <hdf5.h>

#include <Eigen/Core>
#include <complex>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include <memory>

namespace nk::h5 {

/// Owns one HDF5 identifier and closes it with the matching H5*close.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(other.id_) { other.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& other) noexcept;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// Element types neurkit reads and writes; complex is h5py's compound {r, i}.
enum class DType { f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, c64, c128, string, other };
std::string dtype_name(DType t);
bool is_float(DType t);
bool is_integer(DType t);

/// An N-D array in C (row-major) order; shape[0] is the slowest axis.
template <class T>
struct Array {
  std::vector<int64_t> shape;
  std::vector<T> data;
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
};

using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// What a dataset is, without reading its data.
struct DatasetInfo {
  std::string path;
  std::vector<int64_t> shape;
  DType dtype = DType::other;
  std::string type_text;  ///< e.g. "float32", "compound", "string"
  std::string dims;       ///< the 'dims' attribute ("N,H,W,C") or empty
  std::string units;      ///< the 'units' attribute or empty
  int64_t elements() const;
};

/// Raw contents of a dataset in its native memory type (used by nk-data merge).
struct RawDataset {
  DatasetInfo info;
  Handle mem_type;
  std::vector<unsigned char> bytes;
  size_t element_size = 0;
  bool has_vlen = false;
};

/// Frees the strings HDF5 allocated for a variable-length RawDataset.
void release_vlen(RawDataset& raw);

/// A value of a root or object attribute.
struct AttrValue {
  std::string name;
  std::string text;  ///< the value as text (numbers formatted, arrays comma-joined)
  bool numeric = false;
  bool integer = false;  ///< numeric and stored as an integer type
};

/// An HDF5 file opened read-only from a path or from standard input ('-').
class File {
 public:
  /// Opens 'path' ('-' reads all of stdin into memory first). Throws nk::Error:
  /// exit 4 when the file cannot be read, exit 3 when it is not valid HDF5.
  static File open(const std::string& path);

  const std::string& path() const { return path_; }
  hid_t id() const { return file_.get(); }

  bool has(const std::string& dataset) const;
  DatasetInfo info(const std::string& dataset) const;
  /// Every dataset in the file, depth first, as absolute paths.
  std::vector<std::string> datasets() const;

  /// Reads a numeric dataset. Floating datasets read into float/double (either
  /// width), integer datasets into integer types; anything else is exit 3.
  template <class T>
  Array<T> read(const std::string& dataset) const;
  /// read() plus a rank check naming the expected axes (e.g. "N,D").
  template <class T>
  Array<T> read(const std::string& dataset, int rank, const std::string& axes) const;
  /// Items [begin, end) along axis 0 of a dataset (a hyperslab: only those are read).
  template <class T>
  Array<T> read_rows(const std::string& dataset, int64_t begin, int64_t end) const;
  /// A rank-2 dataset as a row-major Eigen matrix.
  template <class T>
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> read_matrix(const std::string& dataset) const;
  std::vector<std::string> read_strings(const std::string& dataset) const;
  RawDataset read_raw(const std::string& dataset) const;

  /// Attribute of an object ("/" for the root) as a string, if present.
  std::optional<std::string> attr_string(const std::string& object, const std::string& name) const;
  std::optional<double> attr_number(const std::string& object, const std::string& name) const;
  std::vector<AttrValue> attrs(const std::string& object) const;

  /// Throws exit 3 unless root attribute nk_schema starts with 'expected'
  /// (a family like "rubiconv.input/" accepts every version).
  std::string require_schema(const std::string& expected) const;
  /// Throws exit 3 naming the dataset when it is missing.
  void require(const std::string& dataset) const;

 private:
  File(std::string path, Handle file) : path_(std::move(path)), file_(std::move(file)) {}
  void check_readable(const DatasetInfo& info, size_t element_bytes) const;
  std::string path_;
  Handle file_;
};

/// Throws exit 3 naming file, dataset and the first offending index when
/// 'values' holds NaN or Inf; 'first_row' is added to axis 0 of that index
/// when 'values' came from read_rows.
template <class T>
void require_finite(const std::string& file, const std::string& dataset, const Array<T>& values,
                    int64_t first_row = 0);

/// Throws exit 3 naming file and dataset unless 'offsets' are CSR offsets:
/// at least one entry, the first 0, none decreasing, and (when end >= 0) the
/// last equal to 'end', the length of the data they index.
void require_offsets(const std::string& file, const std::string& dataset, const std::vector<int64_t>& offsets,
                     int64_t end = -1);

/// An output file under construction. Writes go to a temporary file in the
/// destination's folder (or to memory for '-'); commit() makes it visible
/// atomically (fsync, rename, fsync folder) or writes the image to stdout. A
/// Writer destroyed without commit() removes its temporary file, so a failed
/// run leaves no partial output and never touches an existing file.
struct MemoryImage;  // the in-memory file of a Writer to standard output (h5_write.cpp)

class Writer {
 public:
  /// 'schema' becomes the root attribute nk_schema, e.g. "nk-data.images/1".
  /// Provenance (nk_tool, nk_version, nk_command, nk_created, nk_seed) comes
  /// from nk::run_context(). Throws exit 4 when the folder is missing or not
  /// writable, or when no_clobber is set and 'path' exists.
  Writer(const std::string& path, const std::string& schema, bool no_clobber = false);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  const std::string& path() const { return path_; }
  hid_t id() const { return file_.get(); }

  /// Writes an N-D array; 'dims' names its axes ("N,H,W,C"), 'units' is optional.
  template <class T>
  void write(const std::string& dataset, const T* data, const std::vector<int64_t>& shape,
             const std::string& dims, const std::string& units = "");
  template <class T>
  void write(const std::string& dataset, const Array<T>& array, const std::string& dims,
             const std::string& units = "") {
    write(dataset, array.data.data(), array.shape, dims, units);
  }
  template <class Derived>
  void write_matrix(const std::string& dataset, const Eigen::DenseBase<Derived>& m, const std::string& dims,
                    const std::string& units = "");
  /// Variable-length UTF-8 strings; 'shape' (empty: one axis) lays them out
  /// row-major, e.g. {Q, 5}, and must hold values.size() items.
  void write_strings(const std::string& dataset, const std::vector<std::string>& values, const std::string& dims,
                     const std::vector<int64_t>& shape = {});
  /// Writes a dataset read by File::read_raw, with a new first-axis length.
  void write_raw(const std::string& dataset, const RawDataset& raw);

  void attr(const std::string& object, const std::string& name, const std::string& value);
  void attr(const std::string& object, const std::string& name, const char* value) {
    attr(object, name, std::string(value));
  }
  void attr(const std::string& object, const std::string& name, int64_t value);
  void attr(const std::string& object, const std::string& name, double value);
  void attr(const std::string& object, const std::string& name, const std::vector<double>& values);

  /// Finishes the file and publishes it. Safe to call once.
  void commit();

  /// Every float dataset written is checked: a NaN or infinity in a result
  /// is a runtime error (exit 1) naming the file, dataset and index, and the
  /// run publishes nothing. A dataset where non-finite values mean something
  /// (an infinite threshold, a NaN for "undefined") is named here first.
  void allow_nonfinite(const std::string& dataset) { nonfinite_ok_.insert(dataset); }

 private:
  void create_parent_groups(const std::string& dataset);
  /// Chunked with the Fletcher-32 checksum filter where the dataset has
  /// elements of a fixed size; contiguous for scalars, empty datasets and
  /// variable-length strings.
  Handle dataset_create_plist(const std::vector<hsize_t>& extent, size_t element_bytes, bool checksummed) const;
  std::string path_;
  std::unique_ptr<AtomicFile> target_;  ///< null when writing to stdout
  std::unique_ptr<MemoryImage> image_;  ///< the file's bytes when writing to stdout
  std::set<std::string> nonfinite_ok_;
  bool committed_ = false;
  Handle file_;
};

/// "[2,3,4]": a shape for messages.
std::string shape_text(const std::vector<int64_t>& shape);

/// Bytes of memory this process can still take, for refusing absurd sizes
/// before allocating: the least of MemAvailable, what is left of the address
/// space and data limits (ulimit -v, -d) and of every memory cgroup above it
/// (v2 memory.max or v1 memory.limit_in_bytes: Slurm jobs, containers).
double available_memory_bytes();

/// The HDF5 library version, e.g. "1.10.8".
std::string library_version();

}  // namespace nk::h5

namespace nk::h5 {

template <class Derived>
void Writer::write_matrix(const std::string& dataset, const Eigen::DenseBase<Derived>& m, const std::string& dims,
                          const std::string& units) {
  using Scalar = typename Derived::Scalar;
  const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = m;
  write(dataset, row_major.data(), {static_cast<int64_t>(row_major.rows()), static_cast<int64_t>(row_major.cols())},
        dims, units);
}

}  // namespace nk::h5
