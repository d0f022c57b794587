// tsplib.cpp - TSPLIB (TSP) and CVRPLIB (CVRP) files with node coordinates.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "nk/error.hpp"
#include "simple-evol/simple_evol.hpp"

namespace sevol {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

}  // namespace

InstanceSet read_tsplib(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw nk::io_error(path, "cannot open the TSPLIB file");
  int64_t dimension = -1, capacity = -1, depot = 1, line_no = 0;
  std::string type, weight_type, section;
  std::map<int64_t, std::pair<double, double>> coords;
  std::map<int64_t, int64_t> demand;
  auto bad = [&](const std::string& what) {
    return nk::input_error(path, "", "line " + std::to_string(line_no) + ": " + what);
  };
  std::string line;
  bool depot_read = false;
  while (std::getline(in, line)) {
    ++line_no;
    line = trim(line);
    if (line.empty()) continue;
    if (line == "EOF") break;
    const size_t colon = line.find(':');
    if (std::isalpha(static_cast<unsigned char>(line[0]))) {
      const std::string key = trim(colon == std::string::npos ? line : line.substr(0, colon));
      const std::string value = colon == std::string::npos ? "" : trim(line.substr(colon + 1));
      if (key.find("_SECTION") != std::string::npos) {
        section = key;
        continue;
      }
      section.clear();
      try {
        if (key == "TYPE") type = value;
        if (key == "DIMENSION") dimension = std::stoll(value);
        if (key == "CAPACITY") capacity = std::stoll(value);
        if (key == "EDGE_WEIGHT_TYPE") weight_type = value;
      } catch (const std::exception&) {
        throw bad(key + " is '" + value + "', not a number");
      }
      continue;
    }
    std::istringstream ss(line);
    if (section == "NODE_COORD_SECTION") {
      int64_t id = 0;
      double x = 0, y = 0;
      if (!(ss >> id >> x >> y)) throw bad("expected 'id x y'");
      if (!std::isfinite(x) || !std::isfinite(y)) throw bad("non-finite coordinate");
      coords[id] = {x, y};
    } else if (section == "DEMAND_SECTION") {
      int64_t id = 0, d = 0;
      if (!(ss >> id >> d)) throw bad("expected 'id demand'");
      demand[id] = d;
    } else if (section == "DEPOT_SECTION") {
      int64_t id = 0;
      if (ss >> id && id > 0 && !depot_read) {
        depot = id;
        depot_read = true;
      }
    } else if (!section.empty()) {
      continue;  // sections we do not use (EDGE_WEIGHT_SECTION, DISPLAY_DATA_SECTION, ...)
    } else {
      throw bad("unexpected data outside a section");
    }
  }
  if (type.rfind("TSP", 0) != 0 && type.rfind("CVRP", 0) != 0) {
    throw nk::input_error(path, "", "TYPE is '" + type + "' (expected TSP or CVRP)");
  }
  if (weight_type == "EXPLICIT") {
    throw nk::input_error(path, "", "EDGE_WEIGHT_TYPE EXPLICIT has no coordinates (expected EUC_2D or CEIL_2D)");
  }
  if (dimension < 3 || dimension > kMaxNodes) {
    throw nk::input_error(
        path, "", "DIMENSION is " + std::to_string(dimension) + " (expected 3.." + std::to_string(kMaxNodes) + ")");
  }
  if (static_cast<int64_t>(coords.size()) != dimension) {
    throw nk::input_error(path, "",
                          "NODE_COORD_SECTION has " + std::to_string(coords.size()) + " nodes, DIMENSION says " +
                              std::to_string(dimension));
  }
  InstanceSet set;
  Instance item;
  item.id = instance_id(0);
  std::vector<int64_t> order;
  const bool cvrp = type.rfind("CVRP", 0) == 0;
  set.problem = cvrp ? Problem::cvrp : Problem::tsp;
  if (cvrp) order.push_back(depot);
  for (const auto& [id, xy] : coords) {
    if (!cvrp || id != depot) order.push_back(id);
  }
  for (int64_t id : order) {
    const auto it = coords.find(id);
    if (it == coords.end()) throw nk::input_error(path, "", "the depot " + std::to_string(id) + " has no coordinates");
    item.coords.push_back(it->second.first);
    item.coords.push_back(it->second.second);
    if (cvrp) {
      const auto d = demand.find(id);
      if (d == demand.end()) throw nk::input_error(path, "", "node " + std::to_string(id) + " has no demand");
      if (d->second < 0 || d->second > (int64_t{1} << 30)) {
        throw nk::input_error(path, "", "node " + std::to_string(id) + " has demand " + std::to_string(d->second));
      }
      item.demand.push_back(static_cast<int32_t>(d->second));
    }
  }
  if (cvrp) {
    if (capacity < 1) throw nk::input_error(path, "", "CAPACITY is missing or below 1");
    item.capacity = capacity;
    item.demand[0] = 0;
  }
  set.items.push_back(std::move(item));
  return set;
}

}  // namespace sevol
