// timer.hpp - wall-clock timing of a run's parts: a stopwatch, and the
// fastest of several runs (how every verb that reports seconds times a kernel).
#pragma once
#include <algorithm>
#include <chrono>
#include <limits>

namespace nk {

/// Starts at construction; seconds() reads it, lap() reads and restarts it.
class Stopwatch {
 public:
  using clock = std::chrono::steady_clock;
  Stopwatch() : start_(clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  void restart() { start_ = clock::now(); }
  double lap() {
    const clock::time_point now = clock::now();
    const double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }

 private:
  clock::time_point start_;
};

/// Seconds from t0 to now on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The fastest of 'repeats' runs of fn() in seconds (at least one run): the
/// least disturbed measurement, the convention of --repeats everywhere.
template <class F>
double best_seconds(int repeats, F&& fn) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const Stopwatch watch;
    fn();
    best = std::min(best, watch.seconds());
  }
  return best;
}

}  // namespace nk
