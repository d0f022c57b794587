// progress.hpp - a progress line on stderr, shown only on a TTY and not under -q.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace nk {

class Progress {
 public:
  /// 'label' prefixes the line, 'total' is the number of steps.
  Progress(std::string label, int64_t total);
  ~Progress();
  /// Marks 'done' steps as finished; redraws at most 10 times a second.
  void update(int64_t done);
  void finish();
  bool shown() const { return enabled_; }

 private:
  std::string label_;
  int64_t total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace nk
