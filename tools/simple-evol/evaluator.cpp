// evaluator.cpp - the sandboxed worker pool and the per-instance loops.
#include "simple-evol/evaluator.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"
#include "simple-evol/python.hpp"
#include "simple-evol/tsp.hpp"

namespace sevol {

std::string default_function(Problem problem) {
  switch (problem) {
    case Problem::tsp:
      return "select_next_node";
    case Problem::cvrp:
      return "heuristics";
    case Problem::fssp:
      return "get_matrix_and_jobs";
  }
  return "";
}

namespace {

void run_tsp(const Instance& item, py::Heuristic& h, InstanceResult& r) {
  const int64_t n = item.nodes();
  const std::vector<double> dist = distance_matrix(item.coords);
  for (int attempt = 0; attempt < 2; ++attempt) {
    h.set_distance_matrix(dist, n);
    std::vector<int64_t> unvisited(static_cast<size_t>(n - 1));
    for (int64_t v = 1; v < n; ++v) unvisited[v - 1] = v;
    std::vector<int64_t> tour = {0};
    try {
      for (int64_t step = 1; step < n; ++step) {
        const int64_t next = h.select_next_node(tour.back(), 0, unvisited, dist, n);
        const auto it = std::lower_bound(unvisited.begin(), unvisited.end(), next);
        if (it == unvisited.end() || *it != next) {
          throw py::HeuristicFailure(3, "select_next_node returned node " + std::to_string(next) + " at step " +
                                            std::to_string(step) + ", which is not unvisited");
        }
        unvisited.erase(it);
        tour.push_back(next);
      }
    } catch (const py::HeuristicFailure& f) {
      if (attempt == 0 && !h.copy_per_call() && py::is_read_only_write(f)) {
        h.set_copy_per_call(true);  // it writes into the matrix: a fresh copy per call, as published
        continue;
      }
      throw;
    }
    r.solution = tour;
    r.objective = tour_length(dist, tour);
    return;
  }
}

void run_cvrp(const Instance& item, size_t index, const EvalConfig& config, py::Heuristic& h, InstanceResult& r) {
  const int64_t n = item.nodes();
  const std::vector<double> dist = distance_matrix(item.coords);
  std::vector<double> shown = dist;  // ReEvo hands the heuristic a diagonal of 1, not 0
  for (int64_t i = 0; i < n; ++i) shown[static_cast<size_t>(i * n + i)] = 1.0;
  std::vector<double> demand(item.demand.begin(), item.demand.end());
  std::vector<double> eta = h.heuristics(shown, item.coords, demand, item.capacity);
  for (double& e : eta) e = std::max(e + 1e-9, 1e-9);
  nk::Rng rng = nk::Rng(config.seed).split(index);
  r.solution = cvrp_aco(item, dist, eta, config.aco, rng);
  r.objective = routes_length(dist, n, r.solution);
}

void run_fssp(const Instance& item, const EvalConfig& config, py::Heuristic& h, InstanceResult& r) {
  const FlowShop shop = FlowShop::from(item);
  const GlsResult g = fssp_gls(
      shop, config.gls, [&](const std::vector<int64_t>& seq, std::vector<double>& matrix, std::vector<int64_t>& jobs) {
        h.get_matrix_and_jobs(seq, shop.p, shop.n, shop.m, matrix, jobs);
        return std::string();
      });
  if (!g.invalid.empty()) throw py::HeuristicFailure(3, g.invalid);
  r.solution = g.best;
  r.objective = g.best_makespan;
}

/// CPU seconds of this process (the worker): unlike the wall clock, other
/// processes on a loaded machine barely move it.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

InstanceResult run_instance(const InstanceSet& set, size_t index, const EvalConfig& config, py::Heuristic& h) {
  InstanceResult r;
  nk::Stopwatch clock;
  const double before = h.seconds();
  const double cpu_before = process_cpu_seconds();
  try {
    const Instance& item = set.items[index];
    if (set.problem == Problem::tsp) {
      run_tsp(item, h, r);
    } else if (set.problem == Problem::cvrp) {
      run_cvrp(item, index, config, h, r);
    } else {
      run_fssp(item, config, h, r);
    }
    r.status = Status::ok;
  } catch (const py::HeuristicFailure& f) {
    r.status = static_cast<Status>(f.status());
    r.error = f.what();
    r.solution.clear();
    r.objective = NAN;
  } catch (const std::bad_alloc&) {
    r.status = Status::exception;
    r.error = "out of memory";
    r.solution.clear();
    r.objective = NAN;
  }
  r.runtime = clock.seconds();
  r.heuristic_seconds = h.seconds() - before;
  r.cpu_seconds = process_cpu_seconds() - cpu_before;
  return r;
}

// ---------------------------------------------------------------------------
// Pipes between the parent and its workers

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t r = read(fd, p, size);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    size -= static_cast<size_t>(r);
  }
  return true;
}

template <class T>
void put(std::string& buf, const T& v) {
  buf.append(reinterpret_cast<const char*>(&v), sizeof v);
}

/// A result record: index, status, objective, runtime, heuristic seconds,
/// CPU seconds, solution length and nodes, error length and text.
std::string encode(int64_t index, const InstanceResult& r) {
  std::string buf;
  put(buf, index);
  put(buf, static_cast<int8_t>(r.status));
  put(buf, r.objective);
  put(buf, r.runtime);
  put(buf, r.heuristic_seconds);
  put(buf, r.cpu_seconds);
  put(buf, static_cast<int64_t>(r.solution.size()));
  buf.append(reinterpret_cast<const char*>(r.solution.data()), r.solution.size() * sizeof(int64_t));
  put(buf, static_cast<int64_t>(r.error.size()));
  buf += r.error;
  return buf;
}

bool decode(int fd, int64_t& index, InstanceResult& r) {
  int8_t status = 0;
  int64_t count = 0;
  if (!read_all(fd, &index, sizeof index) || !read_all(fd, &status, 1) || !read_all(fd, &r.objective, 8) ||
      !read_all(fd, &r.runtime, 8) || !read_all(fd, &r.heuristic_seconds, 8) || !read_all(fd, &r.cpu_seconds, 8) ||
      !read_all(fd, &count, 8)) {
    return false;
  }
  if (count < 0 || count > (int64_t{1} << 32)) return false;
  r.status = static_cast<Status>(status);
  r.solution.resize(static_cast<size_t>(count));
  if (!read_all(fd, r.solution.data(), static_cast<size_t>(count) * 8) || !read_all(fd, &count, 8)) return false;
  if (count < 0 || count > (int64_t{1} << 24)) return false;
  r.error.resize(static_cast<size_t>(count));
  return read_all(fd, r.error.data(), static_cast<size_t>(count));
}

/// The worker's life: sandbox, compile, then instances until told to stop.
[[noreturn]] void worker_main(int task_fd, int result_fd, const InstanceSet& set, const EvalConfig& config,
                              const nk::SandboxSpec& limits) {
  const std::string why = nk::enter_sandbox(config.sandbox, limits);
  if (!why.empty()) {
    InstanceResult r;
    r.status = Status::not_run;
    r.error = "sandbox: " + why;
    const std::string rec = encode(-2, r);
    write_all(result_fd, rec.data(), rec.size());
    _exit(3);
  }
  py::set_scratch(limits.workdir);
  std::unique_ptr<py::Heuristic> h;
  std::string compile_error;
  try {
    h = std::make_unique<py::Heuristic>(config.code, config.function);
  } catch (const py::HeuristicFailure& f) {
    compile_error = f.what();
  }
  int64_t index = 0;
  while (read_all(task_fd, &index, sizeof index) && index >= 0) {
    InstanceResult r;
    if (h) {
      r = run_instance(set, static_cast<size_t>(index), config, *h);
    } else {
      r.status = Status::exception;
      r.error = compile_error;
    }
    const std::string rec = encode(index, r);
    if (!write_all(result_fd, rec.data(), rec.size())) break;
  }
  _exit(0);
}

struct Worker {
  pid_t pid = -1;
  int task_fd = -1, result_fd = -1;
  int64_t busy = -1;  ///< the instance it works on, -1 when idle
  std::chrono::steady_clock::time_point deadline;
};

void stop(Worker& w, bool kill_it) {
  if (w.task_fd >= 0) close(w.task_fd);
  if (w.result_fd >= 0) close(w.result_fd);
  if (w.pid > 0) {
    if (kill_it) {
      kill(-w.pid, SIGKILL);
      kill(w.pid, SIGKILL);
    }
    int status = 0;
    waitpid(w.pid, &status, 0);
    kill(-w.pid, SIGKILL);  // whatever it left behind in its group
  }
  w = Worker{};
}

Worker spawn(const InstanceSet& set, const EvalConfig& config, const nk::SandboxSpec& limits) {
  int task[2], result[2];
  if (pipe2(task, O_CLOEXEC) != 0 || pipe2(result, O_CLOEXEC) != 0) {
    throw nk::Error(nk::Exit::runtime, std::string("cannot create a worker pipe: ") + std::strerror(errno));
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw nk::Error(nk::Exit::runtime, std::string("cannot fork a worker: ") + std::strerror(errno));
  if (pid == 0) {
    close(task[1]);
    close(result[0]);
    worker_main(task[0], result[1], set, config, limits);
  }
  close(task[0]);
  close(result[1]);
  Worker w;
  w.pid = pid;
  w.task_fd = task[1];
  w.result_fd = result[0];
  return w;
}

std::string died_text(pid_t pid) {
  int status = 0;
  pid_t got = 0;
  for (int tries = 0; tries < 40 && (got = waitpid(pid, &status, WNOHANG)) == 0; ++tries) usleep(5000);
  if (got == pid) {
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      if (sig == SIGXCPU) return "the worker ran out of CPU time (SIGXCPU)";
      return std::string("the worker died of signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
    }
    if (WIFEXITED(status)) return "the worker exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return "the worker died";
}

}  // namespace

EvalReport evaluate(const InstanceSet& set, const EvalConfig& config_in) {
  EvalConfig config = config_in;
  if (config.function.empty()) config.function = default_function(set.problem);
  py::start();
  if (config.sandbox == SandboxMode::namespaces) {
    const std::string why = namespace_sandbox_unavailable();
    if (!why.empty()) {
      throw nk::Error(nk::Exit::runtime, "the namespace sandbox cannot run here (" + why +
                                             "); run heuristics without it only if you trust them: --sandbox none");
    }
  }
  std::string why;
  nk::SandboxSpec limits;
  limits.workdir = make_scratch("simple-evol", why);
  if (limits.workdir.empty()) throw nk::Error(nk::Exit::io, why);
  limits.writable = {limits.workdir};
  limits.memory_bytes = config.memory_bytes;
  limits.cpu_seconds = config.total_timeout > 0 ? config.total_timeout : 0;
  struct ScratchGuard {
    std::string path;
    ~ScratchGuard() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } guard{limits.workdir};

  const size_t count = set.items.size();
  EvalReport report;
  report.items.resize(count);
  std::deque<int64_t> queue;
  for (size_t k = 0; k < count; ++k) queue.push_back(static_cast<int64_t>(k));
  std::vector<Worker> workers(static_cast<size_t>(std::clamp<int64_t>(config.workers, 1, static_cast<int64_t>(count))));
  nk::Stopwatch wall;
  using clock = std::chrono::steady_clock;
  const clock::time_point start = clock::now();
  const bool has_total = config.total_timeout > 0;
  const clock::time_point total_deadline =
      start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(config.total_timeout));
  const auto per_instance = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(config.timeout));
  std::string fatal;  // the heuristic cannot run at all (sandbox failed)

  auto assign = [&](Worker& w) {
    if (queue.empty() || !fatal.empty()) return;
    if (w.pid < 0) w = spawn(set, config, limits);
    const int64_t index = queue.front();
    queue.pop_front();
    if (!write_all(w.task_fd, &index, sizeof index)) {
      report.items[index].status = Status::exception;
      report.items[index].error = died_text(w.pid);
      stop(w, true);
      return;
    }
    w.busy = index;
    w.deadline = clock::now() + per_instance;
  };

  for (Worker& w : workers) assign(w);
  while (true) {
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    clock::time_point next_deadline = clock::time_point::max();
    for (size_t i = 0; i < workers.size(); ++i) {
      if (workers[i].busy < 0) continue;
      fds.push_back({workers[i].result_fd, POLLIN, 0});
      owner.push_back(i);
      next_deadline = std::min(next_deadline, workers[i].deadline);
    }
    if (fds.empty()) break;
    if (has_total) next_deadline = std::min(next_deadline, total_deadline);
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline - clock::now()).count();
    const int ready = poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait + 1, 0, 1000)));
    if (ready < 0 && errno != EINTR) throw nk::Error(nk::Exit::runtime, std::string("poll: ") + std::strerror(errno));
    for (size_t f = 0; f < fds.size() && ready > 0; ++f) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& w = workers[owner[f]];
      int64_t index = -1;
      InstanceResult r;
      if (decode(w.result_fd, index, r) && index == w.busy) {
        report.items[index] = std::move(r);
        w.busy = -1;
        assign(w);
      } else if (index == -2) {
        fatal = r.error;
        report.items[w.busy].error = r.error;
        report.items[w.busy].status = Status::not_run;
        stop(w, true);
      } else {
        InstanceResult& lost = report.items[w.busy];
        lost.status = Status::exception;
        lost.error = died_text(w.pid);
        stop(w, true);
        assign(w);
      }
    }
    const clock::time_point now = clock::now();
    const bool total_over = has_total && now >= total_deadline;
    for (Worker& w : workers) {
      if (w.busy < 0) continue;
      if (now >= w.deadline || total_over) {
        InstanceResult& lost = report.items[w.busy];
        lost.status = Status::timeout;
        lost.error = total_over ? "stopped at the total timeout (" + std::to_string(config.total_timeout) + " s)"
                                : "timed out after " + std::to_string(config.timeout) + " s";
        lost.runtime = std::chrono::duration<double>(now - (w.deadline - per_instance)).count();
        stop(w, true);
        if (!total_over) assign(w);
      }
    }
    if (total_over) {
      for (int64_t index : queue) report.items[index].error = "not run: the total timeout was reached";
      queue.clear();
    }
  }
  for (Worker& w : workers) {
    if (w.pid > 0) {
      const int64_t done = -1;
      write_all(w.task_fd, &done, sizeof done);
      stop(w, false);
    }
  }
  if (!fatal.empty()) {
    throw nk::Error(nk::Exit::runtime, "a heuristic worker could not start: " + fatal);
  }
  report.wall_seconds = wall.seconds();
  return report;
}

}  // namespace sevol
