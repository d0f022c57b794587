// io.cpp - instance files: /instances/NNNNNN/{release,deadline,work} (float64).
#include <algorithm>
#include <cmath>
#include <set>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "speedscale-sim/solve_common.hpp"
#include "speedscale-sim/speedscale.hpp"

namespace ss {

namespace {

std::string job_text(const Instance& inst, int64_t j) {
  return "instance " + inst.name + ", job " + std::to_string(j);
}

}  // namespace

void validate(const std::string& file, const Instance& inst) {
  const std::string group = "/instances/" + inst.name;
  if (inst.release.size() != inst.work.size() || inst.deadline.size() != inst.work.size()) {
    throw nk::input_error(file, group, "release, deadline and work have lengths " + std::to_string(inst.release.size()) +
                                           ", " + std::to_string(inst.deadline.size()) + " and " +
                                           std::to_string(inst.work.size()) + "; they must be equal");
  }
  if (inst.work.empty()) throw nk::input_error(file, group, "instance " + inst.name + " has no jobs");
  // The instance's time scale: a window far below it (one deadline of 1e300
  // beside windows of 1) loses the algorithms' 1e-9 checks to rounding.
  double scale = 0;
  for (int64_t j = 0; j < inst.size(); ++j) scale = std::max({scale, std::abs(inst.release[j]), std::abs(inst.deadline[j])});
  for (int64_t j = 0; j < inst.size(); ++j) {
    const double r = inst.release[j], d = inst.deadline[j], w = inst.work[j];
    if (!std::isfinite(r) || !std::isfinite(d) || !std::isfinite(w)) {
      throw nk::input_error(file, group, job_text(inst, j) + ": release, deadline and work must be finite");
    }
    if (!(d > r)) {
      throw nk::input_error(file, group, job_text(inst, j) + ": deadline " + std::to_string(d) +
                                             " is not after release " + std::to_string(r));
    }
    if (!(w > 0)) throw nk::input_error(file, group, job_text(inst, j) + ": work " + std::to_string(w) + " must be > 0");
    if (d - r < 1e-12 * scale) {
      throw nk::input_error(file, group, job_text(inst, j) + ": window [" + std::to_string(r) + ", " + std::to_string(d) +
                                             ") is below double precision at the instance's time scale (" +
                                             std::to_string(scale) + ")");
    }
  }
}

std::vector<std::string> instance_names(const nk::h5::File& file) {
  std::set<std::string> names;
  for (const std::string& dataset : file.datasets()) {
    if (dataset.rfind("/instances/", 0) != 0) continue;
    const std::string rest = dataset.substr(11);
    const size_t slash = rest.find('/');
    if (slash == std::string::npos) {
      throw nk::input_error(file.path(), dataset, "expected groups /instances/NAME holding release, deadline and work");
    }
    names.insert(rest.substr(0, slash));
  }
  if (names.empty()) {
    throw nk::input_error(file.path(), "/instances", "no instances (groups /instances/NAME with release, deadline, work)");
  }
  return {names.begin(), names.end()};
}

Instance read_instance(const nk::h5::File& file, const std::string& name) {
  Instance inst;
  inst.name = name;
  const std::string group = "/instances/" + name;
  for (const char* field : {"release", "deadline", "work"}) {
    const std::string dataset = group + "/" + field;
    if (!file.has(dataset)) throw nk::input_error(file.path(), dataset, "missing (instance " + name + ")");
    std::vector<double>& into = field[0] == 'r' ? inst.release : field[0] == 'd' ? inst.deadline : inst.work;
    into = file.read<double>(dataset, 1, "n").data;
  }
  validate(file.path(), inst);
  return inst;
}

std::vector<Instance> read_instances(const std::string& path, int64_t begin, int64_t end, int64_t* total) {
  const nk::h5::File file = nk::h5::File::open(path);
  const std::vector<std::string> names = instance_names(file);
  if (total) *total = static_cast<int64_t>(names.size());
  if (end < 0 || end > static_cast<int64_t>(names.size())) end = static_cast<int64_t>(names.size());
  std::vector<Instance> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(read_instance(file, names[static_cast<size_t>(i)]));
  return out;
}

}  // namespace ss
