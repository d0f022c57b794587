// gen.cpp - synthetic superposition activations with a known dictionary.
#include <vector>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace sb {

void gen(const GenOptions& o, const nk::RunEnv& env) {
  SyntheticSpec spec = o.spec;
  spec.seed = env.seed;
  if (spec.features <= spec.dim)
    spdlog::warn("--features {} <= --dim {}: no superposition (the paper's regime has F > m)", spec.features, spec.dim);
  if (spec.active > spec.features) throw nk::usage_error("--active must be at most --features");
  require_memory(o.output, "/acts", o.rows, spec.dim, "--rows");
  const Synthetic source(spec);
  std::vector<int64_t> index(static_cast<size_t>(o.rows));
  for (int64_t i = 0; i < o.rows; ++i) index[i] = o.first_row + i;
  Matrix<float> acts(o.rows, spec.dim);
  source.rows(index.data(), o.rows, acts.data());

  nk::h5::Writer out(o.output, kActsSchema, o.no_clobber);
  out.write_matrix("/acts", acts, "N,m");
  out.write_matrix("/truth/dictionary", source.dictionary(), "F,m");
  const std::vector<double> frequency = source.frequency();
  out.write("/truth/frequency", frequency.data(), {spec.features}, "F");
  out.attr("/", "source", "synthetic");
  out.attr("/", "dim", spec.dim);
  out.attr("/", "features", spec.features);
  out.attr("/", "active", spec.active);
  out.attr("/", "zipf", spec.zipf);
  out.attr("/", "noise", spec.noise);
  out.attr("/", "magnitude_sigma", spec.magnitude_sigma);
  out.attr("/", "first_row", o.first_row);
  out.attr("/", "generator_seed", std::to_string(spec.seed));  // text: every 64-bit seed exactly
  out.commit();
  spdlog::info("gen: {} rows x {} (F = {}, {} draws a row) -> {}", o.rows, spec.dim, spec.features, spec.active,
                nk::display_name(o.output, true));
}

}  // namespace sb
