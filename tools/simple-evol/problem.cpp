// problem.cpp - instance files: reading with every check, writing.
#include "simple-evol/problem.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "nk/error.hpp"
#include "nk/h5.hpp"

namespace sevol {

std::string problem_name(Problem p) {
  switch (p) {
    case Problem::tsp:
      return "tsp";
    case Problem::cvrp:
      return "cvrp";
    case Problem::fssp:
      return "fssp";
  }
  return "?";
}

Problem parse_problem(const std::string& text, const std::string& option) {
  if (text == "tsp") return Problem::tsp;
  if (text == "cvrp") return Problem::cvrp;
  if (text == "fssp") return Problem::fssp;
  throw nk::usage_error(option + ": '" + text + "' is not a problem (tsp, cvrp or fssp)");
}

std::string instance_id(int64_t k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(k));
  return buf;
}

namespace {

std::string group_of(const Instance& item) {
  return "/instances/" + item.id;
}

void check_reference(const std::string& path, const Instance& item) {
  if (!std::isnan(item.reference) && !(std::isfinite(item.reference) && item.reference > 0)) {
    throw nk::input_error(
        path, group_of(item),
        "attribute reference is " + std::to_string(item.reference) + " (expected a positive objective)");
  }
}

void check_coords(const std::string& path, const Instance& item, int64_t least) {
  const std::string ds = group_of(item) + "/coords";
  if (item.nodes() < least) {
    throw nk::input_error(
        path, ds, "has " + std::to_string(item.nodes()) + " nodes (at least " + std::to_string(least) + " needed)");
  }
  if (item.nodes() > kMaxNodes) {
    throw nk::input_error(path, ds,
                          "has " + std::to_string(item.nodes()) + " nodes, more than the " + std::to_string(kMaxNodes) +
                              " a distance matrix is built for: refused");
  }
  for (size_t i = 0; i < item.coords.size(); ++i) {
    if (!std::isfinite(item.coords[i])) {
      throw nk::input_error(path, ds,
                            "non-finite value at index [" + std::to_string(i / 2) + "," + std::to_string(i % 2) + "]");
    }
  }
}

}  // namespace

void validate_instances(const std::string& path, const InstanceSet& set) {
  if (set.items.empty()) throw nk::input_error(path, "/instances", "holds no instances");
  for (const Instance& item : set.items) {
    const std::string g = group_of(item);
    check_reference(path, item);
    if (set.problem == Problem::tsp) {
      check_coords(path, item, 3);
    } else if (set.problem == Problem::cvrp) {
      check_coords(path, item, 3);
      if (item.capacity < 1) {
        throw nk::input_error(path, g, "attribute capacity is " + std::to_string(item.capacity) + " (expected >= 1)");
      }
      if (static_cast<int64_t>(item.demand.size()) != item.nodes()) {
        throw nk::input_error(path, g + "/demand",
                              "has " + std::to_string(item.demand.size()) + " entries, coords has " +
                                  std::to_string(item.nodes()) + " nodes");
      }
      if (item.demand[0] != 0) {
        throw nk::input_error(path, g + "/demand",
                              "entry 0 (the depot) is " + std::to_string(item.demand[0]) + " (expected 0)");
      }
      for (size_t i = 1; i < item.demand.size(); ++i) {
        if (item.demand[i] < 0) {
          throw nk::input_error(
              path, g + "/demand",
              "entry " + std::to_string(i) + " is " + std::to_string(item.demand[i]) + " (expected >= 0)");
        }
        if (item.demand[i] > item.capacity) {
          throw nk::input_error(path, g + "/demand",
                                "entry " + std::to_string(i) + " is " + std::to_string(item.demand[i]) +
                                    ", above the capacity " + std::to_string(item.capacity) +
                                    " (no route can serve it)");
        }
      }
    } else {
      const std::string ds = g + "/processing";
      if (item.machines < 1 || item.jobs < 2) {
        throw nk::input_error(path, ds,
                              "shape [" + std::to_string(item.machines) + "," + std::to_string(item.jobs) +
                                  "] (expected [m,n] with m >= 1 machines and n >= 2 jobs)");
      }
      if (item.machines > kMaxMachines || item.jobs > kMaxJobs || item.machines * item.jobs > kMaxCells) {
        throw nk::input_error(path, ds,
                              "shape [" + std::to_string(item.machines) + "," + std::to_string(item.jobs) +
                                  "] is above the bounds (" + std::to_string(kMaxMachines) + " machines, " +
                                  std::to_string(kMaxJobs) + " jobs, " + std::to_string(kMaxCells) +
                                  " cells): refused");
      }
      for (size_t i = 0; i < item.processing.size(); ++i) {
        if (item.processing[i] <= 0) {
          throw nk::input_error(path, ds,
                                "value at index [" + std::to_string(i / item.jobs) + "," +
                                    std::to_string(i % item.jobs) + "] is " + std::to_string(item.processing[i]) +
                                    " (processing times must be > 0)");
        }
      }
    }
  }
}

InstanceSet read_instances(const std::string& path) {
  const nk::h5::File file = nk::h5::File::open(path);
  if (file.attr_string("/", "nk_schema")) file.require_schema("simple-evol.");
  const std::optional<std::string> problem = file.attr_string("/", "problem");
  if (!problem) throw nk::input_error(path, "", "root attribute 'problem' is missing (expected tsp, cvrp or fssp)");
  InstanceSet set;
  if (*problem == "tsp") {
    set.problem = Problem::tsp;
  } else if (*problem == "cvrp") {
    set.problem = Problem::cvrp;
  } else if (*problem == "fssp") {
    set.problem = Problem::fssp;
  } else {
    throw nk::input_error(path, "", "root attribute problem is '" + *problem + "' (expected tsp, cvrp or fssp)");
  }
  const std::string main_dataset = set.problem == Problem::fssp ? "processing" : "coords";
  std::map<std::string, std::string> groups;  // id -> group, sorted by name
  for (const std::string& ds : file.datasets()) {
    const std::string prefix = "/instances/";
    if (ds.rfind(prefix, 0) != 0) continue;
    const size_t slash = ds.find('/', prefix.size());
    if (slash == std::string::npos) continue;
    if (ds.substr(slash + 1) != main_dataset) continue;
    groups[ds.substr(prefix.size(), slash - prefix.size())] = ds.substr(0, slash);
  }
  if (groups.empty()) {
    throw nk::input_error(path, "/instances",
                          "holds no instance (expected groups /instances/NNNNNN with " + main_dataset + ")");
  }
  if (static_cast<int64_t>(groups.size()) > kMaxInstances) {
    throw nk::input_error(path, "/instances",
                          "holds " + std::to_string(groups.size()) + " instances, more than " +
                              std::to_string(kMaxInstances) + ": refused");
  }
  for (const auto& [id, g] : groups) {
    Instance item;
    item.id = id;
    if (const auto r = file.attr_number(g, "reference")) item.reference = *r;
    if (set.problem == Problem::fssp) {
      const std::string ds = g + "/processing";
      const nk::h5::DatasetInfo info = file.info(ds);
      if (info.shape.size() != 2) {
        throw nk::input_error(path, ds,
                              "expected rank 2 [m,n] (machine x job), found " + nk::h5::shape_text(info.shape));
      }
      if (!nk::h5::is_integer(info.dtype)) {
        throw nk::input_error(path, ds, "expected integer processing times, found " + info.type_text);
      }
      item.machines = info.shape[0];
      item.jobs = info.shape[1];
      if (item.machines > kMaxMachines || item.jobs > kMaxJobs || item.machines * item.jobs > kMaxCells) {
        throw nk::input_error(path, ds, "shape " + nk::h5::shape_text(info.shape) + " is above the bounds: refused");
      }
      const nk::h5::Array<int64_t> p = file.read<int64_t>(ds);
      item.processing.resize(p.data.size());
      for (size_t i = 0; i < p.data.size(); ++i) {
        if (p.data[i] <= 0 || p.data[i] > (int64_t{1} << 30)) {
          throw nk::input_error(path, ds,
                                "value at index [" + std::to_string(i / item.jobs) + "," +
                                    std::to_string(i % item.jobs) + "] is " + std::to_string(p.data[i]) +
                                    " (processing times must be in 1..2^30)");
        }
        item.processing[i] = static_cast<int32_t>(p.data[i]);
      }
      if (const auto s = file.attr_string(g, "name")) item.name = *s;
      if (const auto s = file.attr_number(g, "time_seed")) item.time_seed = static_cast<int64_t>(*s);
      if (const auto s = file.attr_number(g, "upper_bound")) item.upper_bound = *s;
      if (const auto s = file.attr_number(g, "lower_bound")) item.lower_bound = *s;
    } else {
      const std::string ds = g + "/coords";
      const nk::h5::DatasetInfo info = file.info(ds);
      if (info.shape.size() != 2 || info.shape[1] != 2) {
        throw nk::input_error(path, ds, "expected shape [n,2], found " + nk::h5::shape_text(info.shape));
      }
      if (info.shape[0] > kMaxNodes) {
        throw nk::input_error(
            path, ds,
            "has " + std::to_string(info.shape[0]) + " nodes, more than " + std::to_string(kMaxNodes) + ": refused");
      }
      item.coords = file.read<double>(ds).data;
      if (set.problem == Problem::cvrp) {
        const std::string dd = g + "/demand";
        file.require(dd);
        const nk::h5::DatasetInfo dinfo = file.info(dd);
        if (dinfo.shape.size() != 1) {
          throw nk::input_error(path, dd, "expected rank 1 [n+1], found " + nk::h5::shape_text(dinfo.shape));
        }
        if (!nk::h5::is_integer(dinfo.dtype)) {
          throw nk::input_error(path, dd, "expected integer demands, found " + dinfo.type_text);
        }
        if (dinfo.shape[0] > kMaxNodes) {
          throw nk::input_error(path, dd, "has " + std::to_string(dinfo.shape[0]) + " entries: refused");
        }
        const nk::h5::Array<int64_t> d = file.read<int64_t>(dd);
        for (size_t i = 0; i < d.data.size(); ++i) {
          if (d.data[i] < 0 || d.data[i] > (int64_t{1} << 30)) {
            throw nk::input_error(
                path, dd, "entry " + std::to_string(i) + " is " + std::to_string(d.data[i]) + " (expected 0..2^30)");
          }
          item.demand.push_back(static_cast<int32_t>(d.data[i]));
        }
        const auto cap = file.attr_number(g, "capacity");
        if (!cap) throw nk::input_error(path, g, "attribute capacity is missing");
        if (!std::isfinite(*cap) || *cap < 1 || *cap > static_cast<double>(int64_t{1} << 40) ||
            *cap != std::floor(*cap)) {
          throw nk::input_error(path, g,
                                "attribute capacity is " + std::to_string(*cap) + " (expected an integer >= 1)");
        }
        item.capacity = static_cast<int64_t>(*cap);
      }
    }
    set.items.push_back(std::move(item));
  }
  validate_instances(path, set);
  return set;
}

void write_instances(nk::h5::Writer& out, const InstanceSet& set) {
  out.attr("/", "problem", problem_name(set.problem));
  for (const Instance& item : set.items) {
    const std::string g = "/instances/" + item.id;
    if (set.problem == Problem::fssp) {
      out.write(g + "/processing", item.processing.data(), {item.machines, item.jobs}, "M,N");
      if (!item.name.empty()) out.attr(g, "name", item.name);
      if (item.time_seed >= 0) out.attr(g, "time_seed", item.time_seed);
      if (!std::isnan(item.upper_bound)) out.attr(g, "upper_bound", item.upper_bound);
      if (!std::isnan(item.lower_bound)) out.attr(g, "lower_bound", item.lower_bound);
    } else {
      out.write(g + "/coords", item.coords.data(), {item.nodes(), 2}, "N,XY");
      if (set.problem == Problem::cvrp) {
        out.write(g + "/demand", item.demand.data(), {item.nodes()}, "N");
        out.attr(g, "capacity", item.capacity);
      }
    }
    if (!std::isnan(item.reference)) out.attr(g, "reference", item.reference);
  }
}

}  // namespace sevol
