// test_cuda_families.cpp - the CUDA module has every family this build
// declares (nk/kernels/cuda_families.hpp), at its version and size, with every
// entry set. Loading the module needs no GPU, only the CUDA libraries it links.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "nk/device.hpp"
#include "nk/kernels/cuda_families.hpp"

namespace {

/// The entries of a family table: the function pointers after its header.
template <class F>
int unset_entries(const F& table) {
  static_assert((sizeof(F) - sizeof(nk_cuda_family_header)) % sizeof(void (*)()) == 0, "a table holds entries only");
  const auto* slots = reinterpret_cast<void (*const*)()>(reinterpret_cast<const char*>(&table) +
                                                         sizeof(nk_cuda_family_header));
  const size_t count = (sizeof(F) - sizeof(nk_cuda_family_header)) / sizeof(void (*)());
  int unset = 0;
  for (size_t i = 0; i < count; ++i) unset += slots[i] == nullptr;
  return unset;
}

template <class F>
void check_family() {
  INFO("family ", F::family);
  std::string why;
  const F* table = nk::cuda_family<F>(&why);
  REQUIRE_MESSAGE(table != nullptr, why);
  CHECK(std::string(table->header.name) == F::family);
  CHECK(table->header.version == F::version);
  CHECK(table->header.size == sizeof(F));
  CHECK(unset_entries(*table) == 0);
  // Another version of the same family is refused by name, never handed out.
  CHECK(nk::cuda_family(F::family, F::version + 1, sizeof(F), &why) == nullptr);
  CHECK(why.find(F::family) != std::string::npos);
}

}  // namespace

TEST_SUITE("cuda_families") {
  TEST_CASE("every family of the CUDA module is present with every entry set") {
    if (nk::cuda_module_file().empty()) {
      std::printf("cuda_families: no CUDA module in this build (no nvcc at configure time)\n");
      return;
    }
#define NK_CHECK_FAMILY(F) check_family<F>();
    NK_CUDA_FAMILIES(NK_CHECK_FAMILY)
    std::string why;
    CHECK(nk::cuda_family("no-such-family", 1, 64, &why) == nullptr);
  }
}
