// sandbox.cpp - namespaces, Landlock and resource limits for untrusted code,
// and a command run inside them with a time limit.
#include "nk/sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "nk/error.hpp"

namespace nk {

SandboxMode parse_sandbox(const std::string& text, const std::string& option) {
  if (text == "namespace") return SandboxMode::namespaces;
  if (text == "none") return SandboxMode::none;
  throw nk::usage_error(option + ": '" + text + "' (expected namespace or none)");
}

namespace {

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// The ruleset attribute as of Landlock ABI 6 (scoped signals and abstract
// sockets); older kernels are given the prefix they know.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
constexpr uint64_t kScopeSignal = 1ULL << 1;
constexpr uint64_t kAccessFsTruncate = 1ULL << 14;

std::string restrict_writes(const std::vector<std::string>& writable) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return errno_text("Landlock is not available (kernel without it, or disabled)");
  uint64_t write_rights = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                          LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                          LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                          LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) write_rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) write_rights |= kAccessFsTruncate;
  RulesetAttr attr{write_rights, 0, abi >= 6 ? (kScopeAbstractUnixSocket | kScopeSignal) : 0};
  const size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) return errno_text("landlock_create_ruleset");
  auto allow = [&](const std::string& path, uint64_t rights) -> std::string {
    const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return errno_text("open '" + path + "'");
    landlock_path_beneath_attr rule{};
    rule.allowed_access = rights;
    rule.parent_fd = fd;
    const long r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
    return r == 0 ? "" : errno_text("landlock_add_rule '" + path + "'");
  };
  for (const std::string& folder : writable) {
    const std::string why = allow(folder, write_rights);
    if (!why.empty()) return why;
  }
  // shells and build scripts write to /dev/null
  const std::string why = allow("/dev/null", LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? kAccessFsTruncate : 0));
  if (!why.empty()) return why;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno_text("PR_SET_NO_NEW_PRIVS");
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) return errno_text("landlock_restrict_self");
  close(ruleset);
  return "";
}

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

/// A seccomp filter: fork, vfork, clone and clone3 fail with EPERM. A worker
/// that forked would have two processes answering on one pipe.
std::string forbid_processes() {
  if (kAuditArch == 0) return "";
  constexpr uint32_t eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  std::vector<sock_filter> prog = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
  };
  std::vector<uint32_t> calls = {SYS_clone, SYS_clone3};
#ifdef SYS_fork
  calls.push_back(SYS_fork);
#endif
#ifdef SYS_vfork
  calls.push_back(SYS_vfork);
#endif
  for (uint32_t nr : calls) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, eperm));
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno_text("PR_SET_NO_NEW_PRIVS");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) return errno_text("seccomp filter");
  return "";
}

/// Bytes of address space mapped now (/proc/self/statm, first field, in pages).
[[maybe_unused]] int64_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  statm >> pages;
  return pages * sysconf(_SC_PAGESIZE);
}

std::string set_limit(int resource, rlim_t value, const char* name) {
  rlimit r{value, value};
  rlimit old{};
  if (getrlimit(resource, &old) == 0 && old.rlim_max != RLIM_INFINITY && old.rlim_max < value) {
    r.rlim_cur = r.rlim_max = old.rlim_max;
  }
  if (setrlimit(resource, &r) != 0) return errno_text(std::string("setrlimit ") + name);
  return "";
}

/// Processes of this user now (entries of /proc owned by it).
int64_t user_processes() {
  int64_t count = 0;
  const uid_t uid = getuid();
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      struct stat st {};
      if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_uid == uid) ++count;
    }
    closedir(d);
  }
  return count;
}

}  // namespace

std::string enter_sandbox(SandboxMode mode, const SandboxSpec& spec) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return "the parent has exited";
  setpgid(0, 0);
  if (spec.null_stdio) {
    const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0) return errno_text("open /dev/null");
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    close(devnull);
  }
  if (!spec.workdir.empty() && chdir(spec.workdir.c_str()) != 0) return errno_text("chdir '" + spec.workdir + "'");
  if (mode == SandboxMode::namespaces) {
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) return errno_text("unshare(user, network namespaces)");
    // the user keeps its own ids inside (an unmapped user cannot posix_spawn: a recursive make fails with EINVAL)
    auto write_proc = [](const char* path, const std::string& text) {
      const int fd = open(path, O_WRONLY | O_CLOEXEC);
      if (fd < 0) return false;
      const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      close(fd);
      return ok;
    };
    write_proc("/proc/self/setgroups", "deny");
    if (!write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n"))
      return errno_text("writing /proc/self/uid_map");
    if (!write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n"))
      return errno_text("writing /proc/self/gid_map");
    const std::string why = restrict_writes(spec.writable);
    if (!why.empty()) return why;
  }
  std::string why;
#if !defined(__SANITIZE_ADDRESS__)
  if (spec.memory_bytes > 0) {
    why = set_limit(RLIMIT_AS, static_cast<rlim_t>(mapped_bytes() + spec.memory_bytes), "RLIMIT_AS");
    if (!why.empty()) return why;
  }
#endif
  if (spec.cpu_seconds > 0) {
    why = set_limit(RLIMIT_CPU, static_cast<rlim_t>(spec.cpu_seconds + 1), "RLIMIT_CPU");
    if (!why.empty()) return why;
  }
  if (spec.processes > 0) {
    why = set_limit(RLIMIT_NPROC, static_cast<rlim_t>(user_processes() + spec.processes), "RLIMIT_NPROC");
    if (!why.empty()) return why;
  }
  why = set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(spec.file_bytes), "RLIMIT_FSIZE");
  if (!why.empty()) return why;
  why = set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE");
  if (!why.empty()) return why;
  if (!spec.forbid_processes) return "";
  why = forbid_processes();
  // without namespaces the filter is a guard of the protocol, not of the machine: a kernel or
  // container that refuses it leaves --sandbox none running
  return mode == SandboxMode::namespaces ? why : "";
}

std::string make_scratch(const std::string& name, std::string& why) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + name + "-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    why = errno_text("cannot create a scratch folder " + pattern);
    return "";
  }
  return pattern;
}

std::string namespace_sandbox_unavailable() {
  static std::string cached = [] {
    std::string why_not;
    const std::string folder = make_scratch("nk-sandbox-probe", why_not);
    if (folder.empty()) return why_not;
    const char* scratch = folder.c_str();
    int fds[2];
    if (pipe(fds) != 0) return errno_text("pipe");
    const pid_t pid = fork();
    if (pid < 0) return errno_text("fork");
    if (pid == 0) {
      close(fds[0]);
      SandboxSpec spec;
      spec.writable = {scratch};
      spec.workdir = scratch;
      const std::string why = enter_sandbox(SandboxMode::namespaces, spec);
      const ssize_t ignored = write(fds[1], why.data(), why.size());
      (void)ignored;
      _exit(why.empty() ? 0 : 1);
    }
    close(fds[1]);
    std::string why;
    char buf[512];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0) why.append(buf, static_cast<size_t>(got));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    rmdir(scratch);
    if (why.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) why = "the probe worker failed";
    return why;
  }();
  return cached;
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool write_text_file(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

/// This process's cgroup folder for a hierarchy: v2 (the unified one) or v1's
/// memory controller, found through /proc/self/mountinfo and /proc/self/cgroup.
std::string own_cgroup(bool v2) {
  std::string mount;
  {
    std::istringstream in(read_text("/proc/self/mountinfo"));
    std::string line;
    while (std::getline(in, line) && mount.empty()) {
      // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
      std::istringstream f(line);
      std::string id, parent, dev, root, point, options, word;
      f >> id >> parent >> dev >> root >> point >> options;
      while (f >> word && word != "-") {
      }
      std::string fstype, source, super;
      f >> fstype >> source >> super;
      if (v2 && fstype == "cgroup2") mount = point;
      if (!v2 && fstype == "cgroup" && ("," + super + ",").find(",memory,") != std::string::npos) mount = point;
    }
  }
  if (mount.empty()) return "";
  std::istringstream in(read_text("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    // HIERARCHY:CONTROLLERS:PATH
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    const bool match = v2 ? line.compare(0, a, "0") == 0 && controllers.empty()
                          : ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (match) return mount + (path == "/" ? "" : path);
  }
  return "";
}

/// A memory cgroup made for one command, removed with what is left in it.
struct MemoryCgroup {
  std::string dir, kind;
  bool v2 = false;

  /// "" or why none could be made.
  std::string make(int64_t bytes) {
    static int counter = 0;
    const std::string name = "/nk-sandbox-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
    std::string why = "no writable cgroup with the memory controller";
    for (const bool try_v2 : {true, false}) {
      const std::string own = own_cgroup(try_v2);
      if (own.empty()) continue;
      if (try_v2 && read_text(own + "/cgroup.subtree_control").find("memory") == std::string::npos &&
          !write_text_file(own + "/cgroup.subtree_control", "+memory")) {
        why = "cgroup v2 at " + own + " does not delegate the memory controller";
        continue;
      }
      const std::string d = own + name;
      if (mkdir(d.c_str(), 0755) != 0) {
        why = errno_text("mkdir " + d);
        continue;
      }
      const std::string limit = std::to_string(bytes);
      const bool ok = try_v2 ? write_text_file(d + "/memory.max", limit)
                             : write_text_file(d + "/memory.limit_in_bytes", limit);
      if (!ok) {
        why = errno_text("setting the memory limit in " + d);
        rmdir(d.c_str());
        continue;
      }
      // no swapping past the limit where the kernel offers it
      if (try_v2) {
        write_text_file(d + "/memory.swap.max", "0");
      } else {
        write_text_file(d + "/memory.memsw.limit_in_bytes", limit);
      }
      dir = d;
      v2 = try_v2;
      kind = try_v2 ? "cgroup v2" : "cgroup v1";
      return "";
    }
    return why;
  }

  /// Whether the limit killed a process.
  bool out_of_memory() const {
    const std::string events = read_text(dir + (v2 ? "/memory.events" : "/memory.oom_control"));
    const size_t at = events.find("oom_kill ");
    return at != std::string::npos && std::atoll(events.c_str() + at + 9) > 0;
  }

  ~MemoryCgroup() {
    if (dir.empty()) return;
    // every process still in it (one that left the process group too), then the folder
    for (int round = 0; round < 50; ++round) {
      std::istringstream procs(read_text(dir + "/cgroup.procs"));
      bool any = false;
      for (pid_t p; procs >> p;) {
        kill(p, SIGKILL);
        any = true;
      }
      if (!any && rmdir(dir.c_str()) == 0) return;
      usleep(20000);
      if (!any) rmdir(dir.c_str());
      if (access(dir.c_str(), F_OK) != 0) return;
    }
  }
};

}  // namespace

std::string memory_cgroup_unavailable(std::string& kind) {
  MemoryCgroup probe;
  const std::string why = probe.make(int64_t{1} << 30);
  kind = probe.kind;
  return why;
}

SandboxedRun run_sandboxed(const std::string& command, SandboxMode mode, const SandboxSpec& spec, double timeout,
                           const std::vector<std::pair<std::string, std::string>>& environment, size_t max_output) {
  SandboxedRun out;
  MemoryCgroup cgroup;
  if (spec.cgroup_memory_bytes > 0) {
    const std::string why = cgroup.make(spec.cgroup_memory_bytes);
    out.memory_limit = why.empty() ? std::to_string(spec.cgroup_memory_bytes >> 20) + " MiB by " + cgroup.kind
                                   : "no memory limit: " + why;
  }
  const std::string procs = cgroup.dir.empty() ? "" : cgroup.dir + "/cgroup.procs";
  int output[2], error[2];
  if (pipe2(output, O_CLOEXEC) != 0) {
    out.sandbox_error = errno_text("pipe");
    return out;
  }
  if (pipe2(error, O_CLOEXEC) != 0) {
    out.sandbox_error = errno_text("pipe");
    close(output[0]);
    close(output[1]);
    return out;
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    out.sandbox_error = errno_text("fork");
    for (int fd : {output[0], output[1], error[0], error[1]}) close(fd);
    return out;
  }
  if (pid == 0) {
    // the child: output to the pipe, then the sandbox, then the shell
    const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(output[1], 1);
    dup2(output[1], 2);
    SandboxSpec inner = spec;
    inner.null_stdio = false;
    // into the memory cgroup before anything else (outside the user namespace, where the write is allowed)
    std::string why;
    if (!procs.empty() && !write_text_file(procs, "0")) why = errno_text("joining the memory cgroup");
    if (why.empty()) why = enter_sandbox(mode, inner);
    if (why.empty()) {
      for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      why = errno_text("exec /bin/sh");
    }
    const ssize_t ignored = write(error[1], why.data(), why.size());
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does: no race with the kill below
  close(output[1]);
  close(error[1]);
  std::string text;
  char buf[65536];
  int status = 0;
  bool exited = false, open_pipe = true;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (open_pipe || !exited) {
    if (!exited) {
      const pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        exited = true;
        kill(-pid, SIGKILL);  // what it left running in its group
      }
    }
    if (!exited && timeout > 0 && elapsed() > timeout) {
      out.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
    }
    if (!open_pipe) {
      if (!exited) usleep(10000);
      continue;
    }
    pollfd p{output[0], POLLIN, 0};
    const int ready = poll(&p, 1, exited ? 0 : 20);
    if (ready > 0) {
      const ssize_t got = read(output[0], buf, sizeof buf);
      if (got > 0) {
        text.append(buf, static_cast<size_t>(got));
        if (text.size() > 2 * max_output) {
          text.erase(0, text.size() - max_output);
          out.truncated = true;
        }
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        open_pipe = false;
      }
    } else if (exited) {
      open_pipe = false;  // drained; a process outside the group may still hold the pipe
    }
  }
  close(output[0]);
  out.seconds = elapsed();
  std::string why;
  ssize_t got;
  while ((got = read(error[0], buf, sizeof buf)) > 0) why.append(buf, static_cast<size_t>(got));
  close(error[0]);
  if (text.size() > max_output) {
    text.erase(0, text.size() - max_output);
    out.truncated = true;
  }
  out.output = std::move(text);
  if (!why.empty()) {
    out.sandbox_error = why;
    return out;
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  if (!cgroup.dir.empty()) out.out_of_memory = cgroup.out_of_memory();
  return out;
}

}  // namespace nk
