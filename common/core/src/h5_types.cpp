// h5_types.cpp - HDF5 handles, type mapping and error-stack helpers.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "h5_internal.hpp"

namespace nk::h5 {

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    other.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Handle::reset() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: break;
  }
  id_ = H5I_INVALID_HID;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i8: return "int8";
    case DType::i16: return "int16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::u32: return "uint32";
    case DType::u64: return "uint64";
    case DType::c64: return "complex64";
    case DType::c128: return "complex128";
    case DType::string: return "string";
    case DType::other: return "other";
  }
  return "other";
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
bool is_integer(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64 || t == DType::u8 ||
         t == DType::u16 || t == DType::u32 || t == DType::u64;
}

int64_t DatasetInfo::elements() const {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

namespace {

/// A "Key:   N kB" line of /proc/self/status, in bytes (0 when absent).
double status_bytes(const std::string& wanted) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(wanted + ":", 0) == 0) return std::strtod(line.c_str() + wanted.size() + 1, nullptr) * 1024.0;
  }
  return 0;
}

/// A number in a cgroup file, or -1 when the file is absent or says "max".
double cgroup_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  char* end = nullptr;
  const double value = std::strtod(word.c_str(), &end);
  return end && *end == '\0' ? value : -1;
}

/// What the memory cgroups of this process (v2 or v1, each level up to the
/// root: Slurm's job and step limits, containers) still allow, or -1.
double cgroup_headroom() {
  std::ifstream self("/proc/self/cgroup");
  std::string line;
  double best = -1;
  auto take = [&](double limit, double usage) {
    // v1 reports "no limit" as a huge page-rounded number.
    if (limit < 0 || limit >= 9.2e18 || usage < 0) return;
    const double left = std::max(0.0, limit - usage);
    best = best < 0 ? left : std::min(best, left);
  };
  while (std::getline(self, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    const bool v2 = line.rfind("0::", 0) == 0;
    const bool v1 = controllers == "memory" || controllers.find("memory,") == 0 || controllers.find(",memory") != std::string::npos;
    if (!v2 && !v1) continue;
    const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
    for (;;) {
      const std::string dir = root + (path == "/" ? "" : path);
      if (v2) take(cgroup_number(dir + "/memory.max"), cgroup_number(dir + "/memory.current"));
      else take(cgroup_number(dir + "/memory.limit_in_bytes"), cgroup_number(dir + "/memory.usage_in_bytes"));
      if (path.empty() || path == "/") break;
      const size_t up = path.find_last_of('/');
      path = up == 0 || up == std::string::npos ? "/" : path.substr(0, up);
    }
  }
  return best;
}

}  // namespace

double available_memory_bytes() {
  double available = -1;
  {
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    double kib = 0;
    while (meminfo >> key >> kib >> unit) {
      if (key == "MemAvailable:") {
        available = kib * 1024.0;
        break;
      }
    }
  }
  if (available < 0) available = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  // What is left of `ulimit -v` (address space) and `ulimit -d` (data).
  const std::pair<int, const char*> limits[] = {{RLIMIT_AS, "VmSize"}, {RLIMIT_DATA, "VmData"}};
  for (const auto& [resource, used] : limits) {
    rlimit limit{};
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      available = std::min(available, std::max(0.0, static_cast<double>(limit.rlim_cur) - status_bytes(used)));
    }
  }
  const double cgroup = cgroup_headroom();
  if (cgroup >= 0) available = std::min(available, cgroup);
  return available;
}

std::string library_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

namespace detail {

void silence_library_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

std::string innermost_error() {
  // The API call's own message (depth 0), unless a deeper one says a
  // checksum failed: that one says what happened.
  std::pair<std::string, std::string> found;  // (depth 0, checksum)
  auto walk = [](unsigned depth, const H5E_error2_t* entry, void* out) -> herr_t {
    auto* messages = static_cast<std::pair<std::string, std::string>*>(out);
    if (!entry->desc) return 0;
    const std::string text = entry->desc;
    if (depth == 0) messages->first = text;
    if (messages->second.empty() && (text.find("checksum") != std::string::npos || text.find("Fletcher") != std::string::npos)) {
      messages->second = text;
    }
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk, &found);
  H5Eclear2(H5E_DEFAULT);
  return found.second.empty() ? found.first : found.second;
}

namespace {
Handle complex_type(hid_t part, size_t part_size) {
  hid_t type = H5Tcreate(H5T_COMPOUND, 2 * part_size);
  H5Tinsert(type, "r", 0, part);
  H5Tinsert(type, "i", part_size, part);
  return Handle(type);
}
Handle copy_of(hid_t native) { return Handle(H5Tcopy(native)); }
}  // namespace

template <> Handle memory_type<float>() { return copy_of(H5T_NATIVE_FLOAT); }
template <> Handle memory_type<double>() { return copy_of(H5T_NATIVE_DOUBLE); }
template <> Handle memory_type<int8_t>() { return copy_of(H5T_NATIVE_INT8); }
template <> Handle memory_type<int16_t>() { return copy_of(H5T_NATIVE_INT16); }
template <> Handle memory_type<int32_t>() { return copy_of(H5T_NATIVE_INT32); }
template <> Handle memory_type<int64_t>() { return copy_of(H5T_NATIVE_INT64); }
template <> Handle memory_type<uint8_t>() { return copy_of(H5T_NATIVE_UINT8); }
template <> Handle memory_type<uint16_t>() { return copy_of(H5T_NATIVE_UINT16); }
template <> Handle memory_type<uint32_t>() { return copy_of(H5T_NATIVE_UINT32); }
template <> Handle memory_type<uint64_t>() { return copy_of(H5T_NATIVE_UINT64); }
template <> Handle memory_type<std::complex<float>>() { return complex_type(H5T_NATIVE_FLOAT, sizeof(float)); }
template <> Handle memory_type<std::complex<double>>() { return complex_type(H5T_NATIVE_DOUBLE, sizeof(double)); }

DType classify(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) return size == 4 ? DType::f32 : size == 8 ? DType::f64 : DType::other;
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    switch (size) {
      case 1: return is_signed ? DType::i8 : DType::u8;
      case 2: return is_signed ? DType::i16 : DType::u16;
      case 4: return is_signed ? DType::i32 : DType::u32;
      case 8: return is_signed ? DType::i64 : DType::u64;
      default: return DType::other;
    }
  }
  if (cls == H5T_STRING) return DType::string;
  if (cls == H5T_COMPOUND && H5Tget_nmembers(type) == 2) {
    char* first = H5Tget_member_name(type, 0);
    char* second = H5Tget_member_name(type, 1);
    const bool named = first && second && std::string(first) == "r" && std::string(second) == "i";
    H5free_memory(first);
    H5free_memory(second);
    Handle part(H5Tget_member_type(type, 0));
    if (named && H5Tget_class(part.get()) == H5T_FLOAT) {
      return H5Tget_size(part.get()) == 4 ? DType::c64 : DType::c128;
    }
  }
  return DType::other;
}

std::string type_text(hid_t type) {
  const DType t = classify(type);
  if (t != DType::other) return dtype_name(t);
  switch (H5Tget_class(type)) {
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "vlen";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_BITFIELD: return "bitfield";
    default: return "unknown";
  }
}

void check_allocation(const std::string& file, const std::string& dataset, double bytes) {
  const double available = available_memory_bytes();
  if (bytes > available) {
    std::ostringstream text;
    text.setf(std::ios::fixed);
    text.precision(1);
    text << "needs " << bytes / (1 << 30) << " GiB, more than the " << available / (1 << 30)
         << " GiB of memory available";
    throw input_error(file, dataset, text.str());
  }
}

}  // namespace detail
}  // namespace nk::h5
