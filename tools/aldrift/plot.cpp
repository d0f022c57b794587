// plot.cpp - the plot verb: SVG figures of exact runs (tv_law and coverage
// per stage), global runs (evaluations against ln(1/eps)) and lm runs (mean
// cost against KL(q || L) per stage, with the reference point).
#include <cmath>
#include <cstdio>

#include "aldrift/aldrift.hpp"
#include "aldrift/global.hpp"
#include "aldrift/lm.hpp"
#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"

namespace ald {

namespace {

std::string schema_of(const nk::h5::File& in) { return in.attr_string("/", "nk_schema").value_or(""); }

std::string label_of(const nk::h5::File& in) {
  const std::string method = in.attr_string("/", "method").value_or("?");
  const std::string learner = in.attr_string("/", "learner").value_or("none");
  return learner == "none" ? method : method + " (" + learner + ")";
}

/// exact: tv_law and coverage per stage.
void exact_series(const nk::h5::File& in, std::vector<nk::plot::Series>& series) {
  const std::string label = label_of(in);
  nk::plot::Series tv{label + ": tv_law", {}, {}}, cov{label + ": coverage M", {}, {}};
  tv.markers = cov.markers = true;
  cov.dashed = true;
  for (int i = 0;; ++i) {
    const std::string group = stage_group(i);
    const auto t = in.attr_number(group, "tv_law");
    if (!t) break;
    tv.x.push_back(i + 1);
    tv.y.push_back(*t);
    cov.x.push_back(i + 1);
    cov.y.push_back(in.attr_number(group, "coverage").value_or(NAN));
  }
  if (tv.x.empty()) {  // SIR: one law, no stages
    const auto t = in.attr_number("/", "tv_law");
    if (!t || !std::isfinite(*t)) throw nk::input_error(in.path(), "/", "no tv_law attribute (an exact output was expected)");
    tv.x = {1};
    tv.y = {*t};
    series.push_back(tv);
    return;
  }
  series.push_back(tv);
  series.push_back(cov);
}

/// global (one run): the first evaluation reaching each eps against ln(1/eps).
void global_series(const nk::h5::File& in, std::vector<nk::plot::Series>& series) {
  if (!in.has("/curve/evals"))
    throw nk::input_error(in.path(), "/curve/evals", "missing: plot draws single runs (one function, dim and seed)");
  const auto eps = in.read<double>("/curve/eps", 1, "eps");
  const auto evals = in.read<int64_t>("/curve/evals", 1, "eps");
  if (evals.data.size() != eps.data.size())
    throw nk::input_error(in.path(), "/curve/evals", "has " + std::to_string(evals.data.size()) + " entries, /curve/eps " +
                                                         std::to_string(eps.data.size()));
  nk::plot::Series line{label_of(in) + " " + in.attr_string("/", "function").value_or("") + " n=" +
                            std::to_string(static_cast<int64_t>(in.attr_number("/", "dim").value_or(0))),
                        {}, {}};
  line.markers = true;
  for (size_t k = 0; k < eps.data.size(); ++k)
    if (evals.data[k] > 0) line.x.push_back(std::log(1.0 / eps.data[k])), line.y.push_back(static_cast<double>(evals.data[k]));
  series.push_back(line);
}

/// lm: mean cost of q against KL(q || L) per stage, per method; the reference point.
void lm_series(const nk::h5::File& in, std::vector<nk::plot::Series>& series, bool& reference_drawn) {
  std::string learner = in.attr_string("/", "learner").value_or("?");
  if (const auto l2 = in.attr_number("/", "bias_l2"); learner == "bias" && l2) learner += fmt::format(", l2 {:g}", *l2);
  if (learner == "bias" && in.attr_string("/", "bias_l2").value_or("") == "cv") learner += ", l2 by cv";
  for (const char* method : {"aldrift", "cem"}) {
    nk::plot::Series line{std::string(method) + " (" + learner + ")", {}, {}};
    line.markers = true;
    line.dashed = std::string(method) == "cem";
    if (const auto kl = in.attr_number("/", "prior_kl"); kl) {
      line.x.push_back(*kl);
      line.y.push_back(in.attr_number("/", "prior_mean_cost").value_or(NAN));
    }
    for (int i = 0;; ++i) {
      char group[48];
      std::snprintf(group, sizeof group, "/%s/stages/%03d", method, i);
      const auto kl = in.attr_number(group, "kl");
      if (!kl) break;
      line.x.push_back(*kl);
      line.y.push_back(in.attr_number(group, "q_mean_cost").value_or(NAN));
    }
    if (line.x.size() > 1) series.push_back(line);
  }
  if (const auto kl = in.attr_number("/reference", "kl"); kl && !reference_drawn) {
    nk::plot::Series ref{"pi_T (IS, +- SE)", {*kl}, {*in.attr_number("/reference", "mean_cost")}};
    ref.markers = true;
    ref.errors = {in.attr_number("/reference", "mean_cost_se").value_or(NAN)};
    series.push_back(ref);
    reference_drawn = true;
  }
}

}  // namespace

void plot(const PlotOptions& o, const nk::RunEnv&) {
  std::vector<nk::plot::Series> series;
  std::vector<std::string> inputs{o.input};
  inputs.insert(inputs.end(), o.more.begin(), o.more.end());
  std::string family;
  bool reference_drawn = false;
  for (const std::string& path : inputs) {
    const nk::h5::File in = nk::h5::File::open(path);
    const std::string schema = schema_of(in);
    std::string kind = schema.starts_with(kExactSchema) ? "exact" : schema.starts_with(kGlobalSchema) ? "global"
                     : schema.starts_with(kLmSchema) ? "lm" : "";
    if (kind.empty())
      throw nk::input_error(path, "/", "nk_schema '" + schema + "' is not an exact, global or lm output of aldrift");
    if (!family.empty() && kind != family)
      throw nk::usage_error("plot: " + path + " is a " + kind + " output and the first input a " + family + " one; plot one kind at a time");
    family = kind;
    if (kind == "exact") exact_series(in, series);
    if (kind == "global") global_series(in, series);
    if (kind == "lm") lm_series(in, series, reference_drawn);
  }
  nk::plot::Axes axes;
  if (family == "exact")
    axes = {"Independence-MH correction: distance to pi_T and coverage per stage", "stage", "tv_law  /  coverage M", false, true};
  else if (family == "global")
    axes = {"Evaluations to eps-optimality", "ln(1/eps)", "evaluations", false, true};
  else
    axes = {"Cost against divergence from the prior, per stage", "KL(q || L)  [nats]", "mean cost E_q[d]", false, false};
  const std::string svg = nk::plot::line_plot_svg(axes, series);
  nk::write_output_bytes(o.output, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  spdlog::info("plot: {} file(s) -> {}", inputs.size(), nk::display_name(o.output, true));
}

}  // namespace ald
