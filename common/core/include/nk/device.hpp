// device.hpp - what --device auto|cpu|cuda picks, and why.
#pragma once
#include <string>

#include "nk/cuda_abi.hpp"

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

/// The table of one family of the CUDA module (nk/cuda_abi.hpp) at the
/// version and size this build expects, or nullptr with 'why' set: no module,
/// or a module without that family, at another version or of another size.
/// The module is searched in $NK_CUDA_MODULE, next to the executable, then in
/// the install folder, and loaded once.
const nk_cuda_family_header* cuda_family(const char* name, int version, size_t size, std::string* why = nullptr);

/// The typed table of family F (a struct of nk/cuda_abi.hpp or
/// nk/kernels/cuda_families.hpp), or nullptr with 'why' set.
template <class F>
const F* cuda_family(std::string* why = nullptr) {
  return reinterpret_cast<const F*>(cuda_family(F::family, F::version, sizeof(F), why));
}

/// Where the module was loaded from ("" when it was not loaded).
std::string cuda_module_path();
/// The module file that would be loaded, without loading it ("" when none).
std::string cuda_module_file();
/// Why no GPU can be used ("" when the NVIDIA driver reports one), found
/// without loading the module.
std::string cuda_driver_problem();

}  // namespace nk
