// partition.cpp - optimistic space partitioning baselines: SOO (Munos 2011,
// no smoothness needed) and DOO (a known local smoothness l(r) = c2 r^2,
// here the envelope's). Cells are boxes split in three along their longest
// side; the middle child keeps its parent's centre and value.
#include <cmath>
#include <queue>
#include <vector>

#include "aldrift/global.hpp"

namespace ald {

namespace {

struct Cell {
  std::vector<double> centre, half;
  double value = 0;
  int depth = 0;
};

/// Splits 'c' in three along its longest side; evaluates the two new centres
/// (fewer when the budget ends) and returns the children made.
std::vector<Cell> split(const Cell& c, Tracker& track) {
  const int n = static_cast<int>(c.centre.size());
  int axis = 0;
  for (int i = 1; i < n; ++i)
    if (c.half[i] > c.half[axis] * (1 + 1e-12)) axis = i;
  std::vector<Cell> out;
  for (int k : {-1, 0, 1}) {
    Cell child = c;
    child.depth = c.depth + 1;
    child.half[axis] = c.half[axis] / 3;
    child.centre[axis] = c.centre[axis] + k * 2 * child.half[axis];
    if (k != 0) {
      if (track.done()) break;
      child.value = track(child.centre.data());
    }
    out.push_back(std::move(child));
  }
  return out;
}

Cell root_cell(int n, double box, Tracker& track) {
  Cell root;
  root.centre.assign(n, 0.0);
  root.half.assign(n, box);
  root.value = track(root.centre.data());
  return root;
}

double radius2(const Cell& c) {
  double r = 0;
  for (double h : c.half) r += h * h;
  return r;
}

}  // namespace

void run_soo(Tracker& track, const GlobalOptions& o) {
  const int n = track.objective().n;
  // Leaves by depth, each a min-heap on value.
  auto worse = [](const Cell& a, const Cell& b) { return a.value > b.value; };
  using Heap = std::priority_queue<Cell, std::vector<Cell>, decltype(worse)>;
  std::vector<Heap> leaves;
  auto add = [&](Cell c) {
    while (static_cast<int>(leaves.size()) <= c.depth) leaves.emplace_back(worse);
    leaves[c.depth].push(std::move(c));
  };
  add(root_cell(n, o.box, track));
  int64_t expansions = 0;
  while (!track.done()) {
    // h_max(t) = sqrt(t), Munos's choice for an unknown smoothness.
    const int hmax = static_cast<int>(std::sqrt(static_cast<double>(expansions))) + 1;
    double v_max = std::numeric_limits<double>::infinity();
    bool expanded = false;
    for (int h = 0; h < static_cast<int>(leaves.size()) && h <= hmax && !track.done(); ++h) {
      if (leaves[h].empty()) continue;
      if (leaves[h].top().value <= v_max) {
        Cell c = leaves[h].top();
        leaves[h].pop();
        v_max = c.value;
        for (Cell& child : split(c, track)) add(std::move(child));
        ++expansions;
        expanded = true;
      }
    }
    if (!expanded) ++expansions;  // lets h_max grow past a stalled sweep
  }
}

void run_doo(Tracker& track, const GlobalOptions& o, double c2) {
  const int n = track.objective().n;
  // The optimistic lower bound of a cell: value - c2 * (half-diagonal)^2.
  auto bound = [&](const Cell& c) { return c.value - c2 * radius2(c); };
  auto worse = [&](const Cell& a, const Cell& b) { return bound(a) > bound(b); };
  std::priority_queue<Cell, std::vector<Cell>, decltype(worse)> leaves(worse);
  leaves.push(root_cell(n, o.box, track));
  while (!track.done()) {
    Cell c = leaves.top();
    leaves.pop();
    for (Cell& child : split(c, track)) leaves.push(std::move(child));
  }
}

}  // namespace ald
