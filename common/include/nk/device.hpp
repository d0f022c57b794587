// device.hpp - what --device auto|cpu|cuda picks, and why.
#pragma once
#include <string>

struct nk_cuda_api;

namespace nk {

enum class DeviceKind { cpu, cuda };

struct DeviceChoice {
  DeviceKind kind = DeviceKind::cpu;
  std::string reason;  ///< why this device, e.g. "no CUDA module found"
  std::string name;    ///< "cpu" or the GPU's name
};

/// Resolves a --device request. "auto" takes CUDA when the module loads and
/// finds a device, else the CPU (the reason is logged at debug level). "cuda"
/// without a usable device throws exit 1 with the reason.
DeviceChoice choose_device(const std::string& request);

/// The loaded CUDA module, or nullptr with 'why' set. Searched in
/// $NK_CUDA_MODULE, next to the executable, then in the install folder.
const nk_cuda_api* cuda_module(std::string* why = nullptr);

/// Where the module was loaded from ("" when it was not loaded).
std::string cuda_module_path();
/// The module file that would be loaded, without loading it ("" when none).
std::string cuda_module_file();
/// Why no GPU can be used ("" when the NVIDIA driver reports one), found
/// without loading the module.
std::string cuda_driver_problem();

}  // namespace nk
