// cuda_abi.hpp - the C ABI between the loader (nk/device.hpp) and libnk-cuda.so,
// the CUDA module that common/core loads with dlopen. Backend-neutral: no CUDA
// header is needed to include it.
//
// The module exports one symbol, nk_cuda_family(name, version), that returns a
// family's table of entries: "core" (below) and the compute families declared
// in kernels/include/nk/kernels/cuda_families.hpp. Every table starts with an
// nk_cuda_family_header and is filled by field name, so a family grows or
// changes without touching the others; the loader refuses a table whose
// version or size differs from the caller's.
#pragma once
#include <cstddef>

extern "C" {

/// The first member of every family table.
struct nk_cuda_family_header {
  const char* name;  ///< the family, e.g. "louver"
  int version;       ///< bumped whenever an entry is added, removed or changes meaning
  size_t size;       ///< sizeof the whole table, header included
};

/// Where a GPU entry's time went, in milliseconds (CUDA events): copies to the
/// device, set-up (plans, handles, workspaces), the computation itself (the
/// fastest of 'repeats' runs) and copies back.
struct nk_cuda_timing {
  double upload_ms, setup_ms, compute_ms, download_ms;
};

/// The loader's own family: what --device auto and --version need. Every entry
/// returns 0 on success, or -1 and fills 'error' (error_size bytes).
struct nk_cuda_core {
  static constexpr const char* family = "core";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// CUDA runtime version as text, e.g. "13.0".
  const char* (*runtime_version)(void);
  /// Number of usable devices (>= 0), or -1 with the reason none can be used.
  int (*device_count)(char* error, size_t error_size);
  /// Name of device 0.
  int (*device_name)(char* name, size_t name_size, char* error, size_t error_size);
};

/// The module's single exported symbol: the table of family 'name' at
/// 'version', or null when the module has no such family at that version.
typedef const nk_cuda_family_header* (*nk_cuda_family_fn)(const char* name, int version);
const nk_cuda_family_header* nk_cuda_family(const char* name, int version);
}
