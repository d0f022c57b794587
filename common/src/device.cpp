// device.cpp - dlopen of libnk-cuda.so and the --device decision.
#include "nk/device.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "nk/error.hpp"
#include "nk/kernels/cuda_module.hpp"
#include "nk/log.hpp"

#ifndef NK_MODULE_INSTALL_DIR
#define NK_MODULE_INSTALL_DIR "/usr/local/lib/neurkit"
#endif

namespace nk {

namespace {

struct ModuleState {
  const nk_cuda_api* api = nullptr;
  std::string path;
  std::string why;
};

std::string executable_folder() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.parent_path().string();
}

ModuleState load_module() {
  ModuleState state;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NK_CUDA_MODULE"); env && *env) candidates.emplace_back(env);
  const std::string here = executable_folder();
  if (!here.empty()) {
    candidates.push_back(here + "/libnk-cuda.so");
    candidates.push_back(here + "/../lib/neurkit/libnk-cuda.so");
  }
  candidates.emplace_back(NK_MODULE_INSTALL_DIR "/libnk-cuda.so");
  std::string errors;
  for (const std::string& path : candidates) {
    if (!std::filesystem::exists(path)) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      errors = std::string("cannot load ") + path + ": " + dlerror();
      continue;
    }
    auto get_api = reinterpret_cast<const nk_cuda_api* (*)()>(dlsym(handle, "nk_cuda_get_api"));
    const nk_cuda_api* api = get_api ? get_api() : nullptr;
    if (!api || api->abi_version != NK_CUDA_ABI_VERSION) {
      errors = path + " is not a compatible neurkit CUDA module";
      dlclose(handle);
      continue;
    }
    state.api = api;
    state.path = path;
    return state;
  }
  state.why = errors.empty() ? "no CUDA module (libnk-cuda.so) found: this build has no CUDA path" : errors;
  return state;
}

const ModuleState& module_state() {
  static const ModuleState state = load_module();
  return state;
}

}  // namespace

const nk_cuda_api* cuda_module(std::string* why) {
  const ModuleState& state = module_state();
  if (!state.api && why) *why = state.why;
  return state.api;
}

std::string cuda_module_path() { return module_state().path; }

DeviceChoice choose_device(const std::string& request) {
  DeviceChoice choice;
  choice.name = "cpu";
  if (request == "cpu") {
    choice.reason = "requested with --device cpu";
    return choice;
  }
  std::string why;
  const nk_cuda_api* api = cuda_module(&why);
  if (api) {
    char error[512] = {0};
    const int count = api->device_count(error, sizeof error);
    if (count > 0) {
      char name[256] = {0};
      api->device_name(name, sizeof name, error, sizeof error);
      choice.kind = DeviceKind::cuda;
      choice.name = name;
      choice.reason = request == "cuda" ? "requested with --device cuda" : "a CUDA device is available";
      return choice;
    }
    why = count == 0 ? "the CUDA module found no device" : std::string("no usable CUDA device: ") + error;
  }
  if (request == "cuda") throw Error(Exit::runtime, "--device cuda: " + why);
  choice.reason = why;
  return choice;
}

}  // namespace nk
