// progress.cpp - the TTY progress line.
#include "nk/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "nk/log.hpp"

namespace nk {

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total > 0 ? total : 1),
      enabled_(log::chatty() && isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::update(int64_t done) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double fraction = static_cast<double>(done) / static_cast<double>(total_);
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r%s [%s] %3d%% %lld/%lld  %.1fs elapsed, %.1fs left\x1b[K", label_.c_str(), bar.c_str(),
               static_cast<int>(fraction * 100), static_cast<long long>(done), static_cast<long long>(total_),
               elapsed, eta);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  update(total_);
  std::fputc('\n', stderr);
  finished_ = true;
}

}  // namespace nk
