// h5_read.cpp - nk::h5::File: open a path or stdin, inspect and read datasets.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "h5_internal.hpp"

namespace nk::h5 {

namespace {

constexpr unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

// HDF5 looks for its superblock at 0, 512, 1024, 2048, ... (after a user block).
bool has_signature(const std::vector<unsigned char>& bytes) {
  for (size_t offset = 0; offset + 8 <= bytes.size(); offset = offset ? offset * 2 : 512) {
    if (std::memcmp(bytes.data() + offset, kSignature, 8) == 0) return true;
  }
  return false;
}

template <class T>
constexpr bool is_float_type = std::is_floating_point_v<T>;
template <class T>
constexpr bool is_complex_type = false;
template <class T>
constexpr bool is_complex_type<std::complex<T>> = true;

template <class T>
std::string wanted_kind() {
  if constexpr (is_complex_type<T>) return "complex";
  else if constexpr (is_float_type<T>) return "floating-point";
  else return "integer";
}

template <class T>
bool kind_matches(DType t) {
  if constexpr (is_complex_type<T>) return t == DType::c64 || t == DType::c128;
  else if constexpr (is_float_type<T>) return is_float(t);
  else return is_integer(t);
}

}  // namespace

File File::open(const std::string& path) {
  detail::silence_library_errors();
  if (path == "-") {
    if (isatty(STDIN_FILENO)) {
      throw usage_error("input '-' is a terminal: pipe or redirect an HDF5 file into it");
    }
    std::vector<unsigned char> bytes = read_stdin();
    if (bytes.empty()) throw input_error(path, "", "standard input is empty (expected an HDF5 file)");
    if (!has_signature(bytes)) {
      throw input_error(path, "", "not an HDF5 file (no HDF5 signature in " + std::to_string(bytes.size()) +
                                      " bytes)");
    }
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
    H5Pset_fapl_core(fapl.get(), 1 << 20, 0);
    if (H5Pset_file_image(fapl.get(), bytes.data(), bytes.size()) < 0) {
      throw Error(Exit::runtime, detail::with_reason("cannot hold standard input in memory"));
    }
    std::string corrupt = detail::check_global_heaps(bytes.data(), bytes.size());
    if (corrupt.empty()) {
      corrupt = detail::survey_in_child([&] { return H5Fopen("standard-input", H5F_ACC_RDONLY, fapl.get()); },
                                        static_cast<double>(bytes.size()));
    }
    if (!corrupt.empty()) throw input_error(path, "", corrupt);
    Handle file(H5Fopen("standard-input", H5F_ACC_RDONLY, fapl.get()));
    if (!file.valid()) throw input_error(path, "", detail::with_reason("not a readable HDF5 file"));
    return File(path, std::move(file));
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) throw io_error(path, "cannot open: is a directory");
  if (::access(path.c_str(), R_OK) != 0) throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
  if (info.st_size == 0) throw input_error(path, "", "file is empty (expected an HDF5 file)");
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    detail::innermost_error();
    throw input_error(path, "", "not an HDF5 file (no HDF5 signature)");
  }
  std::string corrupt;
  if (info.st_size <= (int64_t{256} << 20)) {  // larger files: the child's survey alone
    // Mapped, not copied: the walk reads the page cache without a second buffer.
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd >= 0) {
      void* map = ::mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      ::close(fd);
      if (map != MAP_FAILED) {
        corrupt = detail::check_global_heaps(static_cast<const unsigned char*>(map), static_cast<size_t>(info.st_size));
        ::munmap(map, static_cast<size_t>(info.st_size));
      }
    }
  }
  if (corrupt.empty()) {
    corrupt = detail::survey_in_child([&] { return H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT); },
                                      static_cast<double>(info.st_size));
  }
  if (!corrupt.empty()) throw input_error(path, "", corrupt);
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) throw input_error(path, "", detail::with_reason("not a readable HDF5 file"));
  return File(path, std::move(file));
}

bool File::has(const std::string& dataset) const {
  // Walk the path one link at a time: H5Lexists fails on a missing parent.
  std::string prefix;
  std::stringstream parts(dataset);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    prefix += "/" + part;
    const htri_t exists = H5Lexists(file_.get(), prefix.c_str(), H5P_DEFAULT);
    if (exists < 0) {
      // Not "no": the group holding the link could not be read.
      throw input_error(path_, prefix, detail::with_reason("cannot read its group (file corrupt?)"));
    }
    if (exists == 0) return false;
  }
  if (prefix.empty()) return false;
  Handle object(H5Oopen(file_.get(), prefix.c_str(), H5P_DEFAULT));
  if (!object.valid()) {
    // A link to an object that cannot be opened: a corrupt (e.g. checksum
    // failing) object header, or a soft or external link leading nowhere.
    throw input_error(path_, prefix, detail::with_reason("cannot open (file corrupt, or a link leading nowhere?)"));
  }
  return H5Iget_type(object.get()) == H5I_DATASET;
}

void File::require(const std::string& dataset) const {
  if (!has(dataset)) throw input_error(path_, dataset, "missing (no such dataset in the file)");
}

DatasetInfo File::info(const std::string& dataset) const {
  require(dataset);
  Handle ds(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT));
  if (!ds.valid()) throw input_error(path_, dataset, detail::with_reason("cannot open"));
  Handle space(H5Dget_space(ds.get()));
  Handle type(H5Dget_type(ds.get()));
  DatasetInfo out;
  out.path = dataset;
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw input_error(path_, dataset, detail::with_reason("unreadable dataspace"));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  out.shape.assign(dims.begin(), dims.end());
  out.dtype = detail::classify(type.get());
  out.type_text = detail::type_text(type.get());
  out.dims = attr_string(dataset, "dims").value_or("");
  out.units = attr_string(dataset, "units").value_or("");
  return out;
}

std::vector<std::string> File::datasets() const {
  std::vector<std::string> out;
  auto visit = [](hid_t group, const char* name, const H5L_info_t*, void* data) -> herr_t {
    Handle object(H5Oopen(group, name, H5P_DEFAULT));
    if (object.valid() && H5Iget_type(object.get()) == H5I_DATASET) {
      static_cast<std::vector<std::string>*>(data)->push_back(std::string("/") + name);
    }
    return 0;
  };
  H5Lvisit(file_.get(), H5_INDEX_NAME, H5_ITER_INC, visit, &out);
  detail::innermost_error();
  return out;
}

void File::check_readable(const DatasetInfo& info, size_t element_bytes) const {
  double bytes = static_cast<double>(element_bytes);
  for (int64_t extent : info.shape) bytes *= static_cast<double>(extent);
  detail::check_allocation(path_, info.path, bytes);
}

template <class T>
Array<T> File::read(const std::string& dataset) const {
  const DatasetInfo meta = info(dataset);
  if (!kind_matches<T>(meta.dtype)) {
    throw input_error(path_, dataset, "expected " + wanted_kind<T>() + " data, found " + meta.type_text);
  }
  check_readable(meta, sizeof(T));
  Array<T> out;
  out.shape = meta.shape;
  out.data.resize(static_cast<size_t>(meta.elements()));
  if (out.data.empty()) return out;
  Handle ds(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT));
  Handle mem = detail::memory_type<T>();
  if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data.data()) < 0) {
    throw input_error(path_, dataset, detail::with_reason("cannot read data (file truncated or corrupt?)"));
  }
  return out;
}

template <class T>
Array<T> File::read_rows(const std::string& dataset, int64_t begin, int64_t end) const {
  const DatasetInfo meta = info(dataset);
  if (!kind_matches<T>(meta.dtype)) {
    throw input_error(path_, dataset, "expected " + wanted_kind<T>() + " data, found " + meta.type_text);
  }
  if (meta.shape.empty() || begin < 0 || end < begin || end > meta.shape[0]) {
    throw input_error(path_, dataset, "rows [" + std::to_string(begin) + "," + std::to_string(end) +
                                          ") are outside shape " + shape_text(meta.shape));
  }
  Array<T> out;
  out.shape = meta.shape;
  out.shape[0] = end - begin;
  DatasetInfo slab = meta;
  slab.shape = out.shape;
  check_readable(slab, sizeof(T));
  out.data.resize(static_cast<size_t>(slab.elements()));
  if (out.data.empty()) return out;
  Handle ds(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT));
  Handle file_space(H5Dget_space(ds.get()));
  std::vector<hsize_t> start(meta.shape.size(), 0), count(out.shape.begin(), out.shape.end());
  start[0] = static_cast<hsize_t>(begin);
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  Handle memory_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr));
  Handle mem = detail::memory_type<T>();
  if (H5Dread(ds.get(), mem.get(), memory_space.get(), file_space.get(), H5P_DEFAULT, out.data.data()) < 0) {
    throw input_error(path_, dataset, detail::with_reason("cannot read data (file truncated or corrupt?)"));
  }
  return out;
}

template <class T>
Array<T> File::read(const std::string& dataset, int rank, const std::string& axes) const {
  const DatasetInfo meta = info(dataset);
  if (static_cast<int>(meta.shape.size()) != rank) {
    throw input_error(path_, dataset, "expected rank " + std::to_string(rank) + " [" + axes + "], found rank " +
                                          std::to_string(meta.shape.size()) + " " + shape_text(meta.shape));
  }
  return read<T>(dataset);
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> File::read_matrix(const std::string& dataset) const {
  Array<T> array = read<T>(dataset, 2, "rows,cols");
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> m(array.shape[0], array.shape[1]);
  std::copy(array.data.begin(), array.data.end(), m.data());
  return m;
}

std::vector<std::string> File::read_strings(const std::string& dataset) const {
  const DatasetInfo meta = info(dataset);
  if (meta.dtype != DType::string) throw input_error(path_, dataset, "expected strings, found " + meta.type_text);
  Handle ds(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT));
  Handle file_type(H5Dget_type(ds.get()));
  const auto n = static_cast<size_t>(meta.elements());
  std::vector<std::string> out;
  out.reserve(n);
  if (H5Tis_variable_str(file_type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(file_type.get()));
    std::vector<char*> raw(n, nullptr);
    if (n && H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0) {
      throw input_error(path_, dataset, detail::with_reason("cannot read strings"));
    }
    for (char* s : raw) out.emplace_back(s ? s : "");
    Handle space(H5Dget_space(ds.get()));
    if (n) H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, raw.data());
  } else {
    const size_t width = H5Tget_size(file_type.get());
    check_readable(meta, width);
    std::vector<char> raw(n * width + 1, '\0');
    if (n && H5Dread(ds.get(), file_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0) {
      throw input_error(path_, dataset, detail::with_reason("cannot read strings"));
    }
    for (size_t i = 0; i < n; ++i) out.emplace_back(raw.data() + i * width, strnlen(raw.data() + i * width, width));
  }
  return out;
}

RawDataset File::read_raw(const std::string& dataset) const {
  RawDataset raw;
  raw.info = info(dataset);
  Handle ds(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT));
  Handle file_type(H5Dget_type(ds.get()));
  raw.mem_type = Handle(H5Tget_native_type(file_type.get(), H5T_DIR_ASCEND));
  if (!raw.mem_type.valid()) throw input_error(path_, dataset, detail::with_reason("unsupported element type"));
  raw.element_size = H5Tget_size(raw.mem_type.get());
  raw.has_vlen = H5Tdetect_class(raw.mem_type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(raw.mem_type.get()) > 0;
  check_readable(raw.info, raw.element_size);
  raw.bytes.resize(static_cast<size_t>(raw.info.elements()) * raw.element_size);
  if (!raw.bytes.empty() &&
      H5Dread(ds.get(), raw.mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.bytes.data()) < 0) {
    throw input_error(path_, dataset, detail::with_reason("cannot read data (file truncated or corrupt?)"));
  }
  return raw;
}

void release_vlen(RawDataset& raw) {
  if (!raw.has_vlen || raw.bytes.empty()) return;
  const hsize_t n = static_cast<hsize_t>(raw.bytes.size() / raw.element_size);
  Handle space(H5Screate_simple(1, &n, nullptr));
  H5Dvlen_reclaim(raw.mem_type.get(), space.get(), H5P_DEFAULT, raw.bytes.data());
  raw.bytes.clear();
}

std::optional<std::string> File::attr_string(const std::string& object, const std::string& name) const {
  if (H5Aexists_by_name(file_.get(), object.c_str(), name.c_str(), H5P_DEFAULT) <= 0) {
    detail::innermost_error();
    return std::nullopt;
  }
  for (const AttrValue& value : attrs(object)) {
    if (value.name == name) return value.text;
  }
  return std::nullopt;
}

std::optional<double> File::attr_number(const std::string& object, const std::string& name) const {
  // Read the value itself (not its text form) so no digits are lost.
  if (H5Aexists_by_name(file_.get(), object.c_str(), name.c_str(), H5P_DEFAULT) <= 0) {
    detail::innermost_error();
    return std::nullopt;
  }
  Handle attribute(H5Aopen_by_name(file_.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attribute.valid()) return std::nullopt;
  Handle type(H5Aget_type(attribute.get()));
  const H5T_class_t cls = H5Tget_class(type.get());
  Handle space(H5Aget_space(attribute.get()));
  if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Sget_simple_extent_npoints(space.get()) < 1) return std::nullopt;
  std::vector<double> values(static_cast<size_t>(H5Sget_simple_extent_npoints(space.get())));
  if (H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, values.data()) < 0) return std::nullopt;
  return values.front();
}

namespace {

std::string read_attribute_text(hid_t attribute, bool& numeric, bool& integer) {
  Handle type(H5Aget_type(attribute));
  Handle space(H5Aget_space(attribute));
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  const H5T_class_t cls = H5Tget_class(type.get());
  numeric = false;
  integer = false;
  if (n <= 0) return "";
  if (cls == H5T_STRING) {
    std::vector<std::string> values;
    if (H5Tis_variable_str(type.get()) > 0) {
      Handle mem(H5Tcopy(H5T_C_S1));
      H5Tset_size(mem.get(), H5T_VARIABLE);
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
      std::vector<char*> raw(static_cast<size_t>(n), nullptr);
      if (H5Aread(attribute, mem.get(), raw.data()) < 0) return "";
      for (char* s : raw) values.emplace_back(s ? s : "");
      H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, raw.data());
    } else {
      const size_t width = H5Tget_size(type.get());
      std::vector<char> raw(static_cast<size_t>(n) * width + 1, '\0');
      if (H5Aread(attribute, type.get(), raw.data()) < 0) return "";
      for (hssize_t i = 0; i < n; ++i) values.emplace_back(raw.data() + i * width, strnlen(raw.data() + i * width, width));
    }
    std::string text;
    for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + values[i];
    return text;
  }
  if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
    numeric = true;
    integer = cls == H5T_INTEGER;
    std::vector<double> values(static_cast<size_t>(n));
    if (H5Aread(attribute, H5T_NATIVE_DOUBLE, values.data()) < 0) return "";
    std::ostringstream text;
    text.precision(cls == H5T_INTEGER ? 20 : 10);
    for (size_t i = 0; i < values.size(); ++i) text << (i ? "," : "") << values[i];
    return text.str();
  }
  return "(" + detail::type_text(type.get()) + ")";
}

}  // namespace

std::vector<AttrValue> File::attrs(const std::string& object) const {
  std::vector<AttrValue> out;
  Handle obj(H5Oopen(file_.get(), object.c_str(), H5P_DEFAULT));
  if (!obj.valid()) {
    detail::innermost_error();
    return out;
  }
  H5O_info_t info{};
  if (H5Oget_info(obj.get(), &info) < 0) return out;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    Handle attribute(H5Aopen_by_idx(obj.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT));
    if (!attribute.valid()) continue;
    const ssize_t length = H5Aget_name(attribute.get(), 0, nullptr);
    std::string name(static_cast<size_t>(std::max<ssize_t>(length, 0)), '\0');
    H5Aget_name(attribute.get(), name.size() + 1, name.data());
    AttrValue value;
    value.name = name;
    value.text = read_attribute_text(attribute.get(), value.numeric, value.integer);
    out.push_back(value);
  }
  detail::innermost_error();
  return out;
}

std::string File::require_schema(const std::string& expected) const {
  const std::optional<std::string> schema = attr_string("/", "nk_schema");
  if (!schema) {
    throw input_error(path_, "", "not a neurkit file (no nk_schema attribute; expected " + expected + "*)");
  }
  if (schema->rfind(expected, 0) != 0) {
    throw input_error(path_, "", "nk_schema is '" + *schema + "', expected " + expected + "*");
  }
  return *schema;
}

template <class T>
void require_finite(const std::string& file, const std::string& dataset, const Array<T>& values, int64_t first_row) {
  for (size_t i = 0; i < values.data.size(); ++i) {
    if (!std::isfinite(values.data[i])) {
      std::string index;
      size_t rest = i;
      std::vector<int64_t> position(values.shape.size());
      for (size_t axis = values.shape.size(); axis-- > 0;) {
        position[axis] = static_cast<int64_t>(rest % static_cast<size_t>(values.shape[axis]));
        rest /= static_cast<size_t>(values.shape[axis]);
      }
      if (!position.empty()) position[0] += first_row;
      for (size_t axis = 0; axis < position.size(); ++axis) index += (axis ? "," : "") + std::to_string(position[axis]);
      throw input_error(file, dataset,
                        std::string(std::isnan(values.data[i]) ? "NaN" : "Inf") + " at index [" + index + "]");
    }
  }
}

void require_offsets(const std::string& file, const std::string& dataset, const std::vector<int64_t>& offsets,
                     int64_t end) {
  if (offsets.empty()) throw input_error(file, dataset, "CSR offsets need at least one entry (0)");
  if (offsets[0] != 0) throw input_error(file, dataset, "CSR offsets must start at 0, found " + std::to_string(offsets[0]));
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) {
      throw input_error(file, dataset, "CSR offsets must not decrease (index " + std::to_string(i) + ": " +
                                           std::to_string(offsets[i]) + " < " + std::to_string(offsets[i - 1]) + ")");
    }
  }
  if (end >= 0 && offsets.back() != end) {
    throw input_error(file, dataset, "CSR offsets must end at " + std::to_string(end) + ", the data's length; found " +
                                         std::to_string(offsets.back()));
  }
}

#define NK_H5_READ(T)                                                                   \
  template Array<T> File::read<T>(const std::string&) const;                            \
  template Array<T> File::read<T>(const std::string&, int, const std::string&) const; \
  template Array<T> File::read_rows<T>(const std::string&, int64_t, int64_t) const;
NK_H5_READ(float)
NK_H5_READ(double)
NK_H5_READ(int8_t)
NK_H5_READ(int16_t)
NK_H5_READ(int32_t)
NK_H5_READ(int64_t)
NK_H5_READ(uint8_t)
NK_H5_READ(uint16_t)
NK_H5_READ(uint32_t)
NK_H5_READ(uint64_t)
NK_H5_READ(std::complex<float>)
NK_H5_READ(std::complex<double>)
#undef NK_H5_READ
template Eigen::Matrix<float, -1, -1, Eigen::RowMajor> File::read_matrix<float>(const std::string&) const;
template Eigen::Matrix<double, -1, -1, Eigen::RowMajor> File::read_matrix<double>(const std::string&) const;
template void require_finite<float>(const std::string&, const std::string&, const Array<float>&, int64_t);
template void require_finite<double>(const std::string&, const std::string&, const Array<double>&, int64_t);

}  // namespace nk::h5
