// cuda_call.hpp - calling the CUDA module from a tool: a family's entry table,
// or an exit-1 error that says why there is none, and errors from an entry.
#pragma once
#include <string>

#include "nk/device.hpp"
#include "nk/kernels/cuda_families.hpp"

namespace nk::h5 {
class Writer;
}

namespace nk::kernels {

/// Where a GPU call's time went, in seconds: CPU-side preparation (where a
/// tool has one), copies to the device, set-up (plans, buffers), the kernels
/// (the fastest of the repeats) and copies back.
struct GpuTiming {
  double prepare = 0, upload = 0, setup = 0, compute = 0, download = 0;
  /// From the module's milliseconds.
  static GpuTiming from(const nk_cuda_timing& t) {
    return {0, t.upload_ms / 1e3, t.setup_ms / 1e3, t.compute_ms / 1e3, t.download_ms / 1e3};
  }
  GpuTiming& operator+=(const GpuTiming& o) {
    prepare += o.prepare, upload += o.upload, setup += o.setup, compute += o.compute, download += o.download;
    return *this;
  }
};

/// The attributes every GPU verb writes on the output's root: upload_seconds,
/// setup_seconds, download_seconds, and prepare_seconds when there was a
/// preparation (the compute time is the verb's own seconds attribute).
void write_timing(nk::h5::Writer& out, const GpuTiming& timing);

/// Throws nk::Error (exit 1) unless a CUDA device can be used ('what' names the caller).
void require_cuda_device(const std::string& what);

[[noreturn]] void throw_cuda_error(const std::string& what, const std::string& message);

/// The loaded module's table of family F (nk/kernels/cuda_families.hpp);
/// throws nk::Error (exit 1) naming 'what' and the reason when no module, no
/// device or no such family can be used.
template <class F>
const F& cuda_family(const std::string& what) {
  require_cuda_device(what);
  std::string why;
  const F* table = nk::cuda_family<F>(&why);
  if (!table) throw_cuda_error(what, why);
  return *table;
}

/// Calls entry(args..., error, error_size) and throws nk::Error (exit 1) with
/// 'what' and the module's message when it fails.
template <class Entry, class... Args>
void cuda_call(const std::string& what, Entry entry, Args... args) {
  char error[512] = {0};
  if (entry(args..., error, sizeof error) != 0) throw_cuda_error(what, error);
}

}  // namespace nk::kernels
