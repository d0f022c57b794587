// isa.hpp - which instruction-set copy of a hot loop a process runs: the
// widest the CPU has, capped by an environment variable (kernels' GEMM reads
// NK_KERNELS_ISA, nk-lm's dense loops NK_LM_ISA), so that tests can run each copy.
#pragma once

namespace nk::kernels {

enum class Isa { generic = 0, avx2 = 1, avx512 = 2 };

/// avx512 where the CPU has AVX-512 F/DQ/VL/BW (and AVX2+FMA), else avx2
/// where it has AVX2 and FMA, else generic; the variable 'cap' (generic,
/// avx2 or avx512; unset: no cap) lowers the choice, never raises it.
Isa cpu_isa(const char* cap);

}  // namespace nk::kernels
