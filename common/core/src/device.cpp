// device.cpp - dlopen of libnk-cuda.so and the --device decision.
#include "nk/device.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "nk/error.hpp"
#include "nk/log.hpp"

#ifndef NK_MODULE_INSTALL_DIR
#define NK_MODULE_INSTALL_DIR "/usr/local/lib/neurkit"
#endif
#ifndef NK_MODULE_RELATIVE_DIR
#define NK_MODULE_RELATIVE_DIR "../lib/neurkit"
#endif

namespace nk {

namespace {

struct ModuleState {
  nk_cuda_family_fn lookup = nullptr;
  std::string path;
  std::string why;
};

std::string executable_folder() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.parent_path().string();
}

std::vector<std::string> module_candidates() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NK_CUDA_MODULE"); env && *env) candidates.emplace_back(env);
  const std::string here = executable_folder();
  if (!here.empty()) {
    candidates.push_back(here + "/libnk-cuda.so");
    candidates.push_back(here + "/" NK_MODULE_RELATIVE_DIR "/libnk-cuda.so");
  }
  candidates.emplace_back(NK_MODULE_INSTALL_DIR "/libnk-cuda.so");
  return candidates;
}

// The driver is probed before the module is loaded: loading the module maps
// cuBLAS and cuFFT (hundreds of MB), which a machine without a GPU never needs.
std::string probe_driver() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return "no NVIDIA driver (libcuda.so.1 not found)";
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  if (!init || !count) return "libcuda.so.1 has no cuInit/cuDeviceGetCount";
  if (const int status = init(0); status != 0) {
    return "the NVIDIA driver failed to start (cuInit error " + std::to_string(status) + ")";
  }
  int devices = 0;
  if (count(&devices) != 0 || devices == 0) return "the NVIDIA driver sees no GPU";
  return "";
}

ModuleState load_module() {
  ModuleState state;
  std::string errors;
  for (const std::string& path : module_candidates()) {
    if (!std::filesystem::exists(path)) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      errors = std::string("cannot load ") + path + ": " + dlerror();
      continue;
    }
    auto lookup = reinterpret_cast<nk_cuda_family_fn>(dlsym(handle, "nk_cuda_family"));
    const nk_cuda_family_header* core = lookup ? lookup(nk_cuda_core::family, nk_cuda_core::version) : nullptr;
    if (!core || core->size != sizeof(nk_cuda_core)) {
      errors = path + " is not a compatible neurkit CUDA module (no core family " +
               std::to_string(nk_cuda_core::version) + ")";
      dlclose(handle);
      continue;
    }
    state.lookup = lookup;
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

const std::string& driver_problem() {
  static const std::string problem = probe_driver();
  return problem;
}

}  // namespace

std::string cuda_module_file() {
  for (const std::string& path : module_candidates()) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

std::string cuda_driver_problem() { return driver_problem(); }

const nk_cuda_family_header* cuda_family(const char* name, int version, size_t size, std::string* why) {
  const ModuleState& state = module_state();
  if (!state.lookup) {
    if (why) *why = state.why;
    return nullptr;
  }
  const nk_cuda_family_header* table = state.lookup(name, version);
  if (!table || table->size != size) {
    if (why) {
      *why = state.path + " has no CUDA family '" + name + "' version " + std::to_string(version) +
             (table ? " of this build's size" : "") + ": rebuild the module with this neurkit";
    }
    return nullptr;
  }
  return table;
}

std::string cuda_module_path() { return module_state().path; }

DeviceChoice choose_device(const std::string& request) {
  DeviceChoice choice;
  choice.name = "cpu";
  if (request == "cpu") {
    choice.reason = "requested with --device cpu";
    return choice;
  }
  std::string why = driver_problem();
  const nk_cuda_core* core = why.empty() ? cuda_family<nk_cuda_core>(&why) : nullptr;
  if (core) {
    char error[512] = {0};
    const int count = core->device_count(error, sizeof error);
    if (count > 0) {
      char name[256] = {0};
      core->device_name(name, sizeof name, error, sizeof error);
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
