// distribution.cpp - "NAME:A,B" random quantities.
#include "nk/distribution.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "nk/error.hpp"

namespace nk {

Spec parse_spec(const std::string& option, const std::string& text) {
  Spec spec;
  const size_t colon = text.find(':');
  spec.name = text.substr(0, colon);
  if (colon == std::string::npos) return spec;
  std::stringstream in(text.substr(colon + 1));
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      spec.args.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw usage_error(option + " '" + text + "': '" + item + "' is not a number");
    }
    if (!std::isfinite(spec.args.back())) throw usage_error(option + " '" + text + "': numbers must be finite");
  }
  return spec;
}

namespace {

const std::vector<std::pair<std::string, std::string>> kForms = {
    {"lognormal", "lognormal:MEDIAN,SIGMA (MEDIAN > 0, SIGMA >= 0)"},
    {"uniform", "uniform:A,B (0 < A <= B)"},
    {"fixed", "fixed:X (X > 0)"},
    {"pareto", "pareto:XM,SHAPE (both > 0)"},
};

bool valid(const Spec& s) {
  const auto& a = s.args;
  if (s.name == "lognormal") return a.size() == 2 && a[0] > 0 && a[1] >= 0;
  if (s.name == "uniform") return a.size() == 2 && a[0] > 0 && a[1] >= a[0];
  if (s.name == "fixed") return a.size() == 1 && a[0] > 0;
  if (s.name == "pareto") return a.size() == 2 && a[0] > 0 && a[1] > 0;
  return false;
}

}  // namespace

Distribution::Distribution(const std::string& option, const std::string& text, const std::vector<std::string>& kinds) {
  const auto allowed = [&](const std::string& name) {
    return kinds.empty() || std::find(kinds.begin(), kinds.end(), name) != kinds.end();
  };
  bool ok = true;
  try {
    spec_ = parse_spec(option, text);
  } catch (const Error&) {
    ok = false;
  }
  if (!ok || !allowed(spec_.name) || !valid(spec_)) {
    std::string forms;
    for (const auto& [name, form] : kForms)
      if (allowed(name)) forms += (forms.empty() ? "" : ", ") + form;
    throw usage_error(option + ": expected " + forms + "; got '" + text + "'");
  }
}

double Distribution::operator()(Rng& rng) const {
  const std::string& n = spec_.name;
  const std::vector<double>& a = spec_.args;
  if (n == "lognormal") return std::exp(std::log(a[0]) + a[1] * rng.normal());
  if (n == "uniform") return a[0] + (a[1] - a[0]) * rng.uniform();
  if (n == "fixed") return a[0];
  return a[0] / std::pow(1.0 - rng.uniform(), 1.0 / a[1]);
}

}  // namespace nk
