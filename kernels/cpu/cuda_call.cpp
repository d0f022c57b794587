// cuda_call.cpp - the module's entry table for tools, with errors that name the caller.
#include "nk/kernels/cuda_call.hpp"

#include "nk/device.hpp"
#include "nk/error.hpp"

namespace nk::kernels {

const nk_cuda_api& cuda_api(const std::string& what) {
  const DeviceChoice choice = choose_device("cuda");  // throws with the reason when there is no device
  std::string why;
  const nk_cuda_api* api = cuda_module(&why);
  if (!api) throw Error(Exit::runtime, what + " on CUDA: " + why);
  (void)choice;
  return *api;
}

void throw_cuda_error(const std::string& what, const char* message) {
  throw Error(Exit::runtime, what + " on CUDA: " + message);
}

}  // namespace nk::kernels
