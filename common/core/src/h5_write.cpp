// h5_write.cpp - nk::h5::Writer: build an HDF5 file and publish it atomically.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "h5_internal.hpp"
#include "nk/context.hpp"

namespace nk::h5 {

namespace {

// Identical runs give identical files (but for nk_created) without object times.
Handle untimed(hid_t plist_class) {
  Handle plist(H5Pcreate(plist_class));
  H5Pset_obj_track_times(plist.get(), false);
  return plist;
}

// Chunks of about this many bytes (HDF5's default chunk cache holds one).
constexpr double kChunkBytes = 1 << 20;

}  // namespace

/// The core driver's buffer of a file written to standard output, kept
/// through HDF5's file image callbacks: at H5Fclose the driver hands back the
/// finished image (the superblock's "open for writing" flag cleared), which a
/// copy taken before the close would still carry.
struct MemoryImage {
  unsigned char* buffer = nullptr;
  size_t size = 0;
  std::vector<unsigned char> closed;
};

namespace {

void* image_malloc(size_t size, H5FD_file_image_op_t /*op*/, void* udata) {
  auto* image = static_cast<MemoryImage*>(udata);
  image->buffer = static_cast<unsigned char*>(std::malloc(size));
  image->size = image->buffer ? size : 0;
  return image->buffer;
}

void* image_memcpy(void* dest, const void* src, size_t size, H5FD_file_image_op_t /*op*/, void* /*udata*/) {
  return std::memcpy(dest, src, size);
}

void* image_realloc(void* ptr, size_t size, H5FD_file_image_op_t /*op*/, void* udata) {
  auto* image = static_cast<MemoryImage*>(udata);
  void* moved = std::realloc(ptr, size);
  if (moved) image->buffer = static_cast<unsigned char*>(moved), image->size = size;
  return moved;
}

herr_t image_free(void* ptr, H5FD_file_image_op_t op, void* udata) {
  auto* image = static_cast<MemoryImage*>(udata);
  if (ptr && ptr == image->buffer) {
    if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE) image->closed.assign(image->buffer, image->buffer + image->size);
    image->buffer = nullptr, image->size = 0;
  }
  std::free(ptr);
  return 0;
}

void* image_udata_copy(void* udata) { return udata; }
herr_t image_udata_free(void* /*udata*/) { return 0; }

}  // namespace

Writer::Writer(const std::string& path, const std::string& schema, bool no_clobber) : path_(path) {
  detail::silence_library_errors();
  Handle fcpl = untimed(H5P_FILE_CREATE);
  // The HDF5 1.10 file format: superblock, object headers, B-trees and heaps
  // carry checksums, so a corrupted file of ours is a checksum error on
  // reading, not a crash inside the library (h5py and h5dump of 1.10 or
  // later read it; HDF5 1.8 cannot).
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110);
  if (path == "-") {
    if (isatty(STDOUT_FILENO)) {
      throw usage_error("refusing to write HDF5 to a terminal: redirect standard output or give -o FILE");
    }
    H5Pset_fapl_core(fapl.get(), 1 << 20, 0);
    H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);  // commit()'s close hands the image back
    image_ = std::make_unique<MemoryImage>();
    H5FD_file_image_callbacks_t callbacks = {image_malloc,     image_memcpy,     image_realloc, image_free,
                                             image_udata_copy, image_udata_free, image_.get()};
    H5Pset_file_image_callbacks(fapl.get(), &callbacks);
    file_ = Handle(H5Fcreate("standard-output", H5F_ACC_TRUNC, fcpl.get(), fapl.get()));
  } else {
    target_ = std::make_unique<AtomicFile>(path, no_clobber);
    file_ = Handle(H5Fcreate(target_->temp_path().c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()));
  }
  if (!file_.valid()) throw io_error(path, detail::with_reason("cannot create HDF5 file"));
  const RunContext& context = run_context();
  attr("/", "nk_schema", schema);
  attr("/", "nk_tool", context.tool);
  attr("/", "nk_version", context.version);
  attr("/", "nk_command", context.command);
  attr("/", "nk_created", utc_now_iso8601());
  if (context.seed) attr("/", "nk_seed", static_cast<int64_t>(*context.seed));
  if (!context.shard.empty()) attr("/", "nk_shard", context.shard);
}

Writer::~Writer() = default;

void Writer::create_parent_groups(const std::string& dataset) {
  for (size_t slash = dataset.find('/', 1); slash != std::string::npos; slash = dataset.find('/', slash + 1)) {
    const std::string group = dataset.substr(0, slash);
    if (H5Lexists(file_.get(), group.c_str(), H5P_DEFAULT) > 0) continue;
    Handle gcpl = untimed(H5P_GROUP_CREATE);
    Handle created(H5Gcreate2(file_.get(), group.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT));
    if (!created.valid()) throw io_error(path_, detail::with_reason("cannot create group " + group));
  }
  detail::innermost_error();
}

Handle Writer::dataset_create_plist(const std::vector<hsize_t>& extent, size_t element_bytes, bool checksummed) const {
  Handle dcpl = untimed(H5P_DATASET_CREATE);
  const bool empty = std::any_of(extent.begin(), extent.end(), [](hsize_t e) { return e == 0; });
  if (!checksummed || extent.empty() || empty) return dcpl;
  // Chunks of about kChunkBytes: whole rows along the first axes, halving an
  // axis only once every axis before it is down to 1.
  std::vector<hsize_t> chunk = extent;
  double bytes = static_cast<double>(element_bytes);
  for (hsize_t e : chunk) bytes *= static_cast<double>(e);
  for (size_t axis = 0; axis < chunk.size() && bytes > kChunkBytes; ++axis) {
    while (chunk[axis] > 1 && bytes > kChunkBytes) {
      const hsize_t half = (chunk[axis] + 1) / 2;
      bytes = bytes / static_cast<double>(chunk[axis]) * static_cast<double>(half);
      chunk[axis] = half;
    }
  }
  if (H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) < 0 || H5Pset_fletcher32(dcpl.get()) < 0) {
    throw io_error(path_, detail::with_reason("cannot set up a chunked, checksummed dataset"));
  }
  return dcpl;
}

namespace {

template <class T>
void require_finite_result(const std::string& path, const std::string& dataset, const T* data,
                           const std::vector<int64_t>& shape) {
  if constexpr (std::is_floating_point_v<T>) {
    int64_t count = 1;
    for (int64_t e : shape) count *= e;
    for (int64_t i = 0; i < count; ++i) {
      if (std::isfinite(data[i])) continue;
      std::string index;
      int64_t rest = i;
      std::vector<int64_t> position(shape.size());
      for (size_t axis = shape.size(); axis-- > 0;) {
        position[axis] = shape[axis] ? rest % shape[axis] : 0;
        rest = shape[axis] ? rest / shape[axis] : 0;
      }
      for (size_t axis = 0; axis < position.size(); ++axis) index += (axis ? "," : "") + std::to_string(position[axis]);
      throw Error(Exit::runtime, "output " + display_name(path, true) + ": result " + dataset + " is not finite (" +
                                     (std::isnan(data[i]) ? "NaN" : "Inf") + " at index [" + index +
                                     "]); nothing was written");
    }
  }
}

}  // namespace

template <class T>
void Writer::write(const std::string& dataset, const T* data, const std::vector<int64_t>& shape,
                   const std::string& dims, const std::string& units) {
  if (!nonfinite_ok_.count(dataset)) require_finite_result(path_, dataset, data, shape);
  create_parent_groups(dataset);
  const std::vector<hsize_t> extent(shape.begin(), shape.end());
  Handle space(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr));
  Handle type = detail::memory_type<T>();
  Handle dcpl = dataset_create_plist(extent, sizeof(T), true);
  Handle ds(H5Dcreate2(file_.get(), dataset.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!ds.valid()) throw io_error(path_, detail::with_reason("cannot create dataset " + dataset));
  hsize_t count = 1;
  for (hsize_t e : extent) count *= e;
  if (count && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw io_error(path_, detail::with_reason("cannot write dataset " + dataset));
  }
  if (!dims.empty()) attr(dataset, "dims", dims);
  if (!units.empty()) attr(dataset, "units", units);
}

void Writer::write_strings(const std::string& dataset, const std::vector<std::string>& values,
                           const std::string& dims, const std::vector<int64_t>& shape) {
  create_parent_groups(dataset);
  std::vector<hsize_t> extent{values.size()};
  if (!shape.empty()) {
    extent.assign(shape.begin(), shape.end());
    hsize_t total = 1;
    for (hsize_t e : extent) total *= e;
    if (total != values.size())
      throw std::logic_error("write_strings: the shape does not hold the strings of " + dataset);
  }
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr));
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle dcpl = dataset_create_plist(extent, sizeof(char*), false);  // variable-length: contiguous
  Handle ds(H5Dcreate2(file_.get(), dataset.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!ds.valid()) throw io_error(path_, detail::with_reason("cannot create dataset " + dataset));
  std::vector<const char*> pointers;
  pointers.reserve(values.size());
  for (const std::string& v : values) pointers.push_back(v.c_str());
  if (n && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0) {
    throw io_error(path_, detail::with_reason("cannot write dataset " + dataset));
  }
  if (!dims.empty()) attr(dataset, "dims", dims);
}

void Writer::write_raw(const std::string& dataset, const RawDataset& raw) {
  create_parent_groups(dataset);
  const std::vector<hsize_t> extent(raw.info.shape.begin(), raw.info.shape.end());
  Handle space(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr));
  const bool variable = H5Tis_variable_str(raw.mem_type.get()) > 0 || H5Tdetect_class(raw.mem_type.get(), H5T_VLEN) > 0;
  Handle dcpl = dataset_create_plist(extent, H5Tget_size(raw.mem_type.get()), !variable);
  Handle ds(H5Dcreate2(file_.get(), dataset.c_str(), raw.mem_type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                       H5P_DEFAULT));
  if (!ds.valid()) throw io_error(path_, detail::with_reason("cannot create dataset " + dataset));
  if (!raw.bytes.empty() &&
      H5Dwrite(ds.get(), raw.mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.bytes.data()) < 0) {
    throw io_error(path_, detail::with_reason("cannot write dataset " + dataset));
  }
  if (!raw.info.dims.empty()) attr(dataset, "dims", raw.info.dims);
  if (!raw.info.units.empty()) attr(dataset, "units", raw.info.units);
}

namespace {

void replace_attribute(hid_t file, const std::string& object, const std::string& name) {
  if (H5Aexists_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT) > 0) {
    H5Adelete_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT);
  }
  detail::innermost_error();
}

void write_attribute(hid_t file, const std::string& path, const std::string& object, const std::string& name,
                     hid_t type, hid_t space, const void* value) {
  replace_attribute(file, object, name);
  Handle attribute(H5Acreate_by_name(file, object.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT,
                                     H5P_DEFAULT));
  if (!attribute.valid() || H5Awrite(attribute.get(), type, value) < 0) {
    throw io_error(path, detail::with_reason("cannot write attribute " + name + " of " + object));
  }
}

}  // namespace

void Writer::attr(const std::string& object, const std::string& name, const std::string& value) {
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR));
  const char* text = value.c_str();
  write_attribute(file_.get(), path_, object, name, type.get(), space.get(), &text);
}

void Writer::attr(const std::string& object, const std::string& name, int64_t value) {
  Handle space(H5Screate(H5S_SCALAR));
  write_attribute(file_.get(), path_, object, name, H5T_NATIVE_INT64, space.get(), &value);
}

void Writer::attr(const std::string& object, const std::string& name, double value) {
  Handle space(H5Screate(H5S_SCALAR));
  write_attribute(file_.get(), path_, object, name, H5T_NATIVE_DOUBLE, space.get(), &value);
}

void Writer::attr(const std::string& object, const std::string& name, const std::vector<double>& values) {
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr));
  write_attribute(file_.get(), path_, object, name, H5T_NATIVE_DOUBLE, space.get(), values.data());
}

void Writer::commit() {
  if (committed_) return;
  if (!target_) {
    if (H5Fclose(file_.get()) < 0) throw io_error(path_, detail::with_reason("cannot finish HDF5 image"));
    file_ = Handle();
    std::vector<unsigned char> image = std::move(image_->closed);
    // The driver's buffer grows in 1 MiB steps: the file ends at the
    // superblock's end-of-file address (version 3: bytes 28-35, little-endian).
    if (image.size() < 48 || image[8] != 3) throw io_error(path_, "cannot finish HDF5 image (no superblock version 3)");
    uint64_t end = 0;
    for (int b = 7; b >= 0; --b) end = end << 8 | image[28 + static_cast<size_t>(b)];
    if (end == 0 || end > image.size()) throw io_error(path_, "cannot finish HDF5 image (end of file " + std::to_string(end) + ")");
    image.resize(static_cast<size_t>(end));
    queue_stdout(std::move(image));
  } else {
    if (H5Fclose(file_.get()) < 0) {
      throw io_error(path_, detail::with_reason("cannot finish HDF5 file"));
    }
    file_ = Handle();
    target_->commit();
  }
  committed_ = true;
}

#define NK_H5_WRITE(T)                                                                                \
  template void Writer::write<T>(const std::string&, const T*, const std::vector<int64_t>&, const std::string&, \
                                 const std::string&);
NK_H5_WRITE(float)
NK_H5_WRITE(double)
NK_H5_WRITE(int8_t)
NK_H5_WRITE(int16_t)
NK_H5_WRITE(int32_t)
NK_H5_WRITE(int64_t)
NK_H5_WRITE(uint8_t)
NK_H5_WRITE(uint16_t)
NK_H5_WRITE(uint32_t)
NK_H5_WRITE(uint64_t)
NK_H5_WRITE(std::complex<float>)
NK_H5_WRITE(std::complex<double>)
#undef NK_H5_WRITE

}  // namespace nk::h5
