// h5_survey.cpp - a file is read once in a forked child before the tool
// trusts it to libhdf5: HDF5 1.10 does not survive every corruption of a
// file's metadata (object headers, the global heap of variable-length
// strings, chunk indexes) and crashes or spins inside the library. The
// child walks every object, reads every attribute and every variable-length
// or chunked dataset, and closes the file; a child that dies or does not
// finish marks the file corrupt, so the tool exits 3 instead of crashing.
#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "h5_internal.hpp"

namespace nk::h5::detail {

namespace {

constexpr hssize_t kMaxSurveyPoints = hssize_t{1} << 22;  // beyond: the reader's size checks decide
constexpr hsize_t kMaxSurveyBytes = hsize_t{64} << 20;     // chunked data read whole up to this

/// Reads 'points' values of 'file_type' through 'read' into a buffer of the
/// native type, reclaiming variable-length memory afterwards.
template <class Read>
void read_values(hid_t file_type, hid_t space, hssize_t points, Read read) {
  if (points <= 0 || points > kMaxSurveyPoints) return;
  const hid_t mem = H5Tget_native_type(file_type, H5T_DIR_ASCEND);
  if (mem < 0) return;
  const size_t size = H5Tget_size(mem);
  if (size == 0 || static_cast<hsize_t>(points) * size > kMaxSurveyBytes) {
    H5Tclose(mem);
    return;
  }
  std::vector<unsigned char> buffer(static_cast<size_t>(points) * size);
  const bool variable = H5Tis_variable_str(mem) > 0 || H5Tdetect_class(mem, H5T_VLEN) > 0;
  if (read(mem, buffer.data()) >= 0 && variable) H5Dvlen_reclaim(mem, space, H5P_DEFAULT, buffer.data());
  H5Tclose(mem);
}

herr_t survey_attribute(hid_t owner, const char* name, const H5A_info_t* /*info*/, void* /*data*/) {
  const hid_t attribute = H5Aopen(owner, name, H5P_DEFAULT);
  if (attribute < 0) return 0;
  const hid_t type = H5Aget_type(attribute), space = H5Aget_space(attribute);
  if (type >= 0 && space >= 0) {
    read_values(type, space, H5Sget_simple_extent_npoints(space),
                [&](hid_t mem, void* buffer) { return H5Aread(attribute, mem, buffer); });
  }
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  H5Aclose(attribute);
  return 0;
}

/// Chunks the library can read without trusting them: data under the
/// Fletcher-32 filter in a file of the 1.10 format (superblock 3), whose chunk
/// indexes carry checksums: corruption there is a checksum error, not a crash.
/// neurkit's own outputs are all of this kind, so the survey need not read
/// their data (it did not read contiguous data before either).
bool checksummed_chunks(hid_t dataset, hid_t plist) {
  bool fletcher = false;
  const int filters = H5Pget_nfilters(plist);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    char name[64] = {0};
    if (H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &values, nullptr, sizeof name, name, &config) ==
        H5Z_FILTER_FLETCHER32) {
      fletcher = true;
    }
  }
  if (!fletcher) return false;
  const hid_t file = H5Iget_file_id(dataset);
  if (file < 0) return false;
  H5F_info2_t info{};
  const bool known = H5Fget_info2(file, &info) >= 0;
  H5Fclose(file);
  return known && info.super.version >= 3;
}

void survey_dataset(hid_t dataset) {
  const hid_t type = H5Dget_type(dataset), space = H5Dget_space(dataset), plist = H5Dget_create_plist(dataset);
  if (type >= 0 && space >= 0 && plist >= 0) {
    const bool variable = H5Tis_variable_str(type) > 0 || H5Tdetect_class(type, H5T_VLEN) > 0;
    const bool chunked = H5Pget_layout(plist) == H5D_CHUNKED;
    if (variable || (chunked && !checksummed_chunks(dataset, plist))) {
      read_values(type, space, H5Sget_simple_extent_npoints(space), [&](hid_t mem, void* buffer) {
        return H5Dread(dataset, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
      });
    }
  }
  if (plist >= 0) H5Pclose(plist);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
}

/// Every attribute of an object, reached the ways the reader reaches them:
/// by index in name order (File::attrs) and by iteration.
void survey_attributes(hid_t object) {
  H5O_info_t info{};
  if (H5Oget_info(object, &info) >= 0) {
    for (hsize_t i = 0; i < info.num_attrs; ++i) {
      const hid_t attribute = H5Aopen_by_idx(object, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
      if (attribute < 0) continue;
      char name[256] = {0};
      H5Aget_name(attribute, sizeof name, name);
      H5Aclose(attribute);
      survey_attribute(object, name, nullptr, nullptr);
    }
  }
  hsize_t index = 0;
  H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_NATIVE, &index, survey_attribute, nullptr);
}

herr_t survey_link(hid_t group, const char* name, const H5L_info_t* info, void* /*data*/) {
  if (info->type != H5L_TYPE_HARD) return 0;
  const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
  if (object < 0) return 0;
  survey_attributes(object);
  if (H5Iget_type(object) == H5I_DATASET) survey_dataset(object);
  H5Oclose(object);
  return 0;
}

/// The child: open, walk, close, exit 0 (any library failure short of a crash is the reader's to report).
[[noreturn]] void survey_child(const std::function<hid_t()>& open) {
  // A crash here is the parent's finding, not the tool's: the child dies by
  // its signal quietly (no "fatal signal" line from the run's handlers).
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(s, SIG_DFL);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  // Freed and fresh heap memory filled with a pattern: the library's reads of
  // stale or uninitialised memory on a corrupt file then fail here, in the
  // child, rather than by chance later in the tool.
  mallopt(M_PERTURB, 0xa5);
  const hid_t file = open();
  if (file >= 0) {
    const hid_t root = H5Oopen(file, "/", H5P_DEFAULT);
    if (root >= 0) {
      survey_attributes(root);
      H5Oclose(root);
    }
    H5Lvisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, survey_link, nullptr);
    H5Fclose(file);
  }
  _exit(0);
}

uint64_t little_endian(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string check_global_heaps(const unsigned char* bytes, size_t n) {
  // A collection: "GCOL", version 1, 3 zero bytes, its size (8 bytes, >= 4096),
  // then objects of a 16-byte header (index 2, references 2, zero 4, size 8)
  // and their data padded to 8 bytes, up to the free-space object (index 0).
  static constexpr unsigned char kGcol[4] = {'G', 'C', 'O', 'L'};
  for (const unsigned char* at = bytes; at < bytes + n;) {
    const auto* hit = static_cast<const unsigned char*>(::memmem(at, static_cast<size_t>(bytes + n - at), kGcol, 4));
    if (!hit) break;
    const size_t offset = static_cast<size_t>(hit - bytes);
    at = hit + 1;
    if (offset + 16 > n || hit[4] != 1 || hit[5] || hit[6] || hit[7]) continue;
    const uint64_t size = little_endian(hit + 8, 8);
    if (size < 4096 || size > n - offset) continue;  // not a collection (or one cut short: the library reports it)
    uint64_t p = 16;
    while (p + 16 <= size) {
      const uint64_t index = little_endian(hit + p, 2), object = little_endian(hit + p + 8, 8);
      if (index == 0) break;
      if (object > size - p - 16) {
        return "corrupt: global heap at byte " + std::to_string(offset) + ": object " + std::to_string(index) + " claims " +
               std::to_string(object) + " bytes, past its collection";
      }
      p += 16 + (object + 7) / 8 * 8;
    }
  }
  return "";
}

std::string survey_in_child(const std::function<hid_t()>& open, double bytes) {
  // No fflush first: the child leaves by _exit, which never flushes stdio
  // (and a flush here could raise SIGPIPE early on a closed pipe).
  const pid_t child = ::fork();
  if (child < 0) return "";  // no child to spare: the file is read unchecked
  if (child == 0) survey_child(open);
  // Metadata is small; a corrupted file can make the library loop forever.
  const double limit = 30.0 + bytes / 20e6;
  const auto start = std::chrono::steady_clock::now();
  long pause_ns = 20000;
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) return "";
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      char text[96];
      std::snprintf(text, sizeof text, "corrupt: the HDF5 library did not finish reading its metadata in %.0f s", limit);
      return text;
    }
    const timespec pause{0, pause_ns};
    ::nanosleep(&pause, nullptr);
    pause_ns = std::min(pause_ns * 2, 5000000L);
  }
  if (WIFSIGNALED(status)) {
    return std::string("corrupt: the HDF5 library crashed reading its metadata (") + ::strsignal(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "corrupt: the HDF5 library failed reading its metadata (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  }
  return "";
}

}  // namespace nk::h5::detail
