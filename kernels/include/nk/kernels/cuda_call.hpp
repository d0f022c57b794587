// cuda_call.hpp - calling the CUDA module from a tool: the entry table, or an
// exit-1 error that says why there is none, and errors from an entry.
#pragma once
#include <string>

#include "nk/kernels/cuda_module.hpp"

namespace nk::kernels {

/// The loaded module's entry table; throws nk::Error (exit 1) naming 'what'
/// and the reason when no module or no device can be used.
const nk_cuda_api& cuda_api(const std::string& what);

[[noreturn]] void throw_cuda_error(const std::string& what, const char* message);

/// Calls entry(args..., error, error_size) and throws nk::Error (exit 1) with
/// 'what' and the module's message when it fails.
template <class Entry, class... Args>
void cuda_call(const std::string& what, Entry entry, Args... args) {
  char error[512] = {0};
  if (entry(args..., error, sizeof error) != 0) throw_cuda_error(what, error);
}

}  // namespace nk::kernels
