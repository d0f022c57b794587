// probe.cpp - the GPU's own limits (kernels/cuda/probe) turned into the
// roofline preset's derating: a profile measured rather than assumed.
#include <cstdio>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/kernels/cuda_call.hpp"
#include "nk/log.hpp"
#include "nk/table.hpp"
#include "sagesched/sagesched.hpp"

namespace sage {

void probe_verb(const ProbeOptions& o) {
  if (!(o.seconds > 0) || o.seconds > 3600) throw nk::usage_error("--seconds must be in (0, 3600]");
  if (!(o.nominal_flops > 0) || !(o.nominal_bandwidth > 0)) throw nk::usage_error("--nominal-flops and --nominal-bandwidth must be > 0");
  roofline_toml(o.preset, {});  // an unknown preset fails before the device is touched
  const auto& family = nk::kernels::cuda_family<nk_cuda_probe>("sagesched probe");
  nk_device_limits limits{};
  spdlog::info("probe: timing copies and BF16 GEMMs for about {:.0f} s", o.seconds);
  nk::kernels::cuda_call("sagesched probe", family.device_limits, o.seconds, &limits);
  RooflineOverride r;
  r.name = o.name;
  r.peak_flops = o.nominal_flops;
  r.bandwidth = o.nominal_bandwidth;
  r.compute_efficiency = limits.bf16_flops / o.nominal_flops;
  r.bandwidth_efficiency = limits.copy_bytes_per_s / o.nominal_bandwidth;
  r.memory_bytes = limits.memory_bytes;
  std::ostringstream c;
  c << "# sagesched probe on " << limits.device << ": " << limits.copy_bytes << "-byte device copies " << limits.copy_bytes_per_s
    << " B/s (read + write, best of " << limits.copy_runs << "), BF16 GEMM " << limits.gemm_size << "^3 " << limits.bf16_flops
    << " FLOP/s (best of " << limits.gemm_runs << ")\n# the preset " << o.preset << " with its derating measured; "
    << nk::run_context().command << "\n";
  r.comment = c.str();
  const std::string text = roofline_toml(o.preset, r);
  nk::write_output_bytes(o.output, std::vector<unsigned char>(text.begin(), text.end()), o.no_clobber);
  nk::Table::print(o.output == "-" ? stderr : stdout,
                   {"device", "copy_TB_s", "bandwidth_efficiency", "bf16_TFLOP_s", "compute_efficiency"},
                   {{std::string(limits.device), nk::cell(limits.copy_bytes_per_s / 1e12, "%.3f"),
                     nk::cell(r.bandwidth_efficiency, "%.3f"), nk::cell(limits.bf16_flops / 1e12, "%.1f"),
                     nk::cell(r.compute_efficiency, "%.3f")}});
}

}  // namespace sage
