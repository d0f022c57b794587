// size.cpp - the buffer-sizing rule: the smallest buffer whose predicted EV
// stays within a tolerance of fresh data at the same budget.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/table.hpp"
#include "sae-buffer/law.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace sb {

namespace {

LawFit read_law(const std::string& path, int64_t& dim) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema("sae-buffer.fit/");
  LawFit law;
  law.kind = f.attr_string("/fit/law", "form").value_or("plain") == "latents" ? LawKind::law_latents : LawKind::law;
  for (const std::string& name : law_parameters(law.kind)) {
    const auto v = f.attr_number("/fit/law", name);
    const bool positive = name == "Rstar" || name == "alpha" || name == "gamma";  // E, A, C may reach 0
    if (!v || !std::isfinite(*v) || *v < 0 || (positive && *v == 0))
      throw nk::input_error(path, "/fit/law", "attribute " + name + " is missing or not a " + (positive ? "positive" : "non-negative") +
                                                  " number");
    law.params.push_back(*v);
  }
  dim = static_cast<int64_t>(f.attr_number("/", "dim").value_or(0));
  return law;
}

// The smallest measured U at budget B from which every larger measured U
// keeps EV >= (1 - tol) EV(B, B); -1 without a fresh (U = B) point.
int64_t measured_buffer(const std::string& path, int64_t B, int64_t latents, double tolerance) {
  const GridColumns g = read_grid_columns(path);
  const auto& U = g.U;
  const auto& Bs = g.B;
  const auto& ev = g.ev;
  const auto& n = g.latents;
  std::map<int64_t, double> at;  // U -> EV at this budget
  for (size_t i = 0; i < U.size(); ++i)
    if (Bs[i] == static_cast<double>(B) && (latents == 0 || n[i] == static_cast<double>(latents)))
      at[static_cast<int64_t>(U[i])] = ev[i];
  if (!at.count(B)) return -1;
  const double target = (1 - tolerance) * at[B];
  int64_t best = B;
  for (auto it = at.rbegin(); it != at.rend() && it->second >= target; ++it) best = it->first;
  return best;
}

}  // namespace

void size(const SizeOptions& o, const nk::RunEnv&) {
  if (o.budget <= 0) throw nk::usage_error("--budget must be positive");
  int64_t dim = 0;
  const LawFit law = read_law(o.fit, dim);
  if (law.kind == LawKind::law_latents && o.latents <= 0)
    throw nk::usage_error("the law of '" + o.fit + "' spans dictionary sizes: give --latents N");
  const double B = static_cast<double>(o.budget);
  const int64_t U_min = smallest_buffer(law, B, static_cast<double>(o.latents), o.tolerance);
  const double reduction = B / static_cast<double>(U_min);
  const double bytes_saved = static_cast<double>(o.budget - U_min) * static_cast<double>(dim) * 4.0;
  const double ev_fresh = 1 - predict_fvu(law.kind, law.params, {B, B, static_cast<double>(o.latents), 0});
  const double ev_min = 1 - predict_fvu(law.kind, law.params, {static_cast<double>(U_min), B, static_cast<double>(o.latents), 0});
  const int64_t measured = o.grid.empty() ? -1 : measured_buffer(o.grid, o.budget, o.latents, o.tolerance);
  if (!o.grid.empty() && measured < 0) spdlog::warn("size: '{}' has no fresh point U = B = {}: no measured U_min", o.grid, o.budget);

  std::vector<std::string> header = {"budget", "tolerance", "U_min", "reduction", "ev_fresh", "ev_at_U_min", "GiB_saved"};
  std::vector<std::string> row = {nk::cell(static_cast<long long>(o.budget)), nk::cell(o.tolerance, "%g"),
                                  nk::cell(static_cast<long long>(U_min)), nk::cell(reduction, "%.3g"),
                                  nk::cell(ev_fresh, "%.4f"), nk::cell(ev_min, "%.4f"),
                                  nk::cell(bytes_saved / 1073741824.0, "%.4g")};
  if (!o.grid.empty()) {
    header.push_back("measured_U_min");
    row.push_back(measured > 0 ? nk::cell(static_cast<long long>(measured)) : "-");
  }
  nk::Table::print(stdout, header, {row});
  if (o.output.empty()) return;
  nk::h5::Writer out(o.output, kSizeSchema, o.no_clobber);
  out.attr("/", "budget", o.budget);
  out.attr("/", "tolerance", o.tolerance);
  out.attr("/", "U_min", U_min);
  out.attr("/", "reduction", reduction);
  out.attr("/", "bytes_saved", bytes_saved);
  out.attr("/", "ev_fresh", ev_fresh);
  out.attr("/", "ev_at_U_min", ev_min);
  out.attr("/", "dim", dim);
  if (measured > 0) {
    out.attr("/", "measured_U_min", measured);
    out.attr("/", "measured_reduction", B / static_cast<double>(measured));
  }
  out.commit();
}

}  // namespace sb
