// h5_internal.hpp - pieces shared by the HDF5 reader and writer.
#pragma once
#include <complex>
#include <functional>
#include <string>

#include "nk/h5.hpp"

namespace nk::h5::detail {

/// Switches off HDF5's own error printing (once per process).
void silence_library_errors();
/// The innermost message on HDF5's error stack, or "" when it is empty.
std::string innermost_error();
/// 'message', then ": " and HDF5's innermost error where it gave one.
inline std::string with_reason(const std::string& message) {
  std::string out = message;
  const std::string reason = innermost_error();
  if (!reason.empty()) out.append(": ").append(reason);  // appends: GCC 12 warns (falsely) on a + chain here
  return out;
}

/// HDF5 memory type for T (complex types are h5py's {r, i} compounds; the
/// returned handle owns the type when it had to be created).
template <class T>
Handle memory_type();

DType classify(hid_t type);
std::string type_text(hid_t type);

/// Opens the file with 'open' in a forked child and reads all its metadata,
/// attributes and variable-length or chunked data there (h5_survey.cpp);
/// returns why the file is corrupt ("" when the child survived and
/// finished within 30 s plus 1 s per 20 MB of 'bytes').
std::string survey_in_child(const std::function<hid_t()>& open, double bytes);

/// Walks every global heap collection of a file's bytes (where HDF5 keeps
/// variable-length strings, unchecksummed): "" when every object fits its
/// collection, else why the file is corrupt.
std::string check_global_heaps(const unsigned char* bytes, size_t n);

/// Fails with exit 3 when the file cannot give 'bytes' more of memory.
void check_allocation(const std::string& file, const std::string& dataset, double bytes);

}  // namespace nk::h5::detail
