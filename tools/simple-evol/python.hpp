// python.hpp - the heuristic side: an embedded CPython with numpy loaded (the
// zygote every sandboxed worker is forked from) and the three published
// heuristic interfaces, called from the C++ loops with numpy arrays.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace sevol::py {

/// Starts the interpreter and imports numpy (BLAS limited to one thread, so
/// that the process stays single-threaded and may fork). Idempotent. Throws
/// nk::Error (exit 1) when Python or numpy cannot start.
void start();

/// A heuristic failed: status 1 (exception) or 3 (invalid answer); what() is
/// the message (for exceptions, the Python traceback's last lines).
class HeuristicFailure : public std::runtime_error {
 public:
  HeuristicFailure(int status, const std::string& what) : std::runtime_error(what), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

/// A candidate's code, executed as module 'heuristic' in this process.
class Heuristic {
 public:
  /// Runs the module and finds 'function' in it; when absent, the callable
  /// whose name is 'function' plus a suffix (ReEvo's select_next_node_v2).
  /// Throws HeuristicFailure(1) when the code raises or the function is missing.
  Heuristic(const std::string& code, const std::string& function);
  ~Heuristic();
  Heuristic(const Heuristic&) = delete;
  Heuristic& operator=(const Heuristic&) = delete;

  /// TSP: select_next_node(current_node, destination_node, unvisited_nodes
  /// (sorted int64 array), distance_matrix [n,n] float64). The matrix is
  /// passed read-only; a heuristic that writes into it gets a fresh copy per
  /// call instead (copy_per_call()).
  int64_t select_next_node(int64_t current, int64_t destination, const std::vector<int64_t>& unvisited,
                           const std::vector<double>& dist, int64_t n);
  /// Sets up the TSP distance matrix of the next instance.
  void set_distance_matrix(const std::vector<double>& dist, int64_t n);
  bool copy_per_call() const { return copy_per_call_; }
  void set_copy_per_call(bool on) { copy_per_call_ = on; }

  /// CVRP: heuristics(distance_matrix, node_positions, demand, capacity) ->
  /// [nodes, nodes]; copies of the inputs are passed.
  std::vector<double> heuristics(const std::vector<double>& dist, const std::vector<double>& coords,
                                 const std::vector<double>& demand, int64_t capacity);

  /// FSSP: get_matrix_and_jobs(current_sequence (list), time_matrix [n,m]
  /// float64 copy, m, n) -> (matrix [n,m], jobs).
  void get_matrix_and_jobs(const std::vector<int64_t>& seq, const std::vector<double>& p, int64_t n, int64_t m,
                           std::vector<double>& matrix, std::vector<int64_t>& jobs);

  /// Seconds spent inside the heuristic's calls so far.
  double seconds() const { return seconds_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  bool copy_per_call_ = false;
  double seconds_ = 0;
};

/// True when a HeuristicFailure came from writing into a read-only array.
bool is_read_only_write(const HeuristicFailure& failure);

/// Points TMPDIR and HOME of the running interpreter at 'folder'.
void set_scratch(const std::string& folder);

}  // namespace sevol::py
