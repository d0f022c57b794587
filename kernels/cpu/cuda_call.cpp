// cuda_call.cpp - the module's family tables for tools, with errors that name the caller.
#include "nk/kernels/cuda_call.hpp"

#include "nk/error.hpp"
#include "nk/h5.hpp"

namespace nk::kernels {

void require_cuda_device(const std::string& what) {
  try {
    choose_device("cuda");  // throws with the reason when there is no device
  } catch (const Error& e) {
    throw Error(Exit::runtime, what + " on CUDA: " + e.what());
  }
}

void throw_cuda_error(const std::string& what, const std::string& message) {
  throw Error(Exit::runtime, what + " on CUDA: " + message);
}

void write_timing(nk::h5::Writer& out, const GpuTiming& timing) {
  if (timing.prepare > 0) out.attr("/", "prepare_seconds", timing.prepare);
  out.attr("/", "upload_seconds", timing.upload);
  out.attr("/", "setup_seconds", timing.setup);
  out.attr("/", "download_seconds", timing.download);
}

}  // namespace nk::kernels
