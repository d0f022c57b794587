// test_sandbox.cpp - nk/sandbox.hpp: a command in the sandbox, its output,
// status, environment, time limit and what it may not do.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "doctest/doctest.h"
#include "nk/sandbox.hpp"

namespace {

struct Scratch {
  std::string path;
  Scratch() {
    std::string why;
    path = nk::make_scratch("nk-sandbox-test", why);
    REQUIRE_MESSAGE(!path.empty(), why);
  }
  ~Scratch() { std::filesystem::remove_all(path); }
};

/// Live (not zombie) processes of a process group, from /proc/PID/stat.
int live_in_group(long pgid) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    std::FILE* f = std::fopen((entry.path() / "stat").c_str(), "r");
    if (!f) continue;
    char line[1024] = {};
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    if (!read) continue;
    const char* close = std::strrchr(line, ')');  // after the command name: state, ppid, pgrp
    char state = 0;
    long ppid = 0, group = 0;
    if (close && std::sscanf(close + 1, " %c %ld %ld", &state, &ppid, &group) == 3 && group == pgid && state != 'Z')
      ++count;
  }
  return count;
}

nk::SandboxSpec spec_for(const std::string& folder) {
  nk::SandboxSpec spec;
  spec.writable = {folder};
  spec.workdir = folder;
  spec.forbid_processes = false;
  return spec;
}

}  // namespace

TEST_SUITE("sandbox") {
  TEST_CASE("run_sandboxed: output, exit status, environment, working folder") {
    Scratch s;
    const nk::SandboxedRun r = nk::run_sandboxed("echo hello; echo oops >&2; echo $NK_X > x.txt; exit 3",
                                                 nk::SandboxMode::none, spec_for(s.path), 10, {{"NK_X", "42"}});
    CHECK(r.sandbox_error.empty());
    CHECK(r.exit_code == 3);
    CHECK_FALSE(r.timed_out);
    CHECK(r.output == "hello\noops\n");
    std::FILE* f = std::fopen((s.path + "/x.txt").c_str(), "r");
    REQUIRE(f != nullptr);
    char buf[8] = {};
    CHECK(std::fgets(buf, sizeof buf, f) != nullptr);
    std::fclose(f);
    CHECK(std::string(buf) == "42\n");
  }

  TEST_CASE("run_sandboxed: the time limit kills the whole process group, a process loop included") {
    Scratch s;
    const nk::SandboxedRun r = nk::run_sandboxed("echo $$ > pgid; while true; do sleep 30 & sleep 0.01; done",
                                                 nk::SandboxMode::none, spec_for(s.path), 1.0);
    CHECK(r.timed_out);
    CHECK(r.seconds < 5);
    // nothing of the group is left: every process it started is gone
    std::FILE* f = std::fopen((s.path + "/pgid").c_str(), "r");
    REQUIRE(f != nullptr);
    long pgid = 0;
    CHECK(std::fscanf(f, "%ld", &pgid) == 1);
    std::fclose(f);
    CHECK(pgid > 0);
    // SIGKILL is delivered at once, the teardown of a few hundred processes takes a moment under load
    int live = live_in_group(pgid);
    for (int wait = 0; wait < 50 && live > 0; ++wait) {
      usleep(100000);
      live = live_in_group(pgid);
    }
    CHECK(live == 0);
    // output of processes the shell left in the background does not hold the run
    const nk::SandboxedRun bg =
        nk::run_sandboxed("sleep 30 & echo started", nk::SandboxMode::none, spec_for(s.path), 20.0);
    CHECK(bg.exit_code == 0);
    CHECK(bg.seconds < 5);
    CHECK(bg.output == "started\n");
  }

  TEST_CASE("run_sandboxed: a memory cgroup limits the command and kills what escapes its group") {
    std::string kind;
    const std::string why = nk::memory_cgroup_unavailable(kind);
    if (!why.empty()) {
      MESSAGE("no memory cgroup here (" << why << "): the limit is said, not held");
      Scratch s;
      nk::SandboxSpec spec = spec_for(s.path);
      spec.cgroup_memory_bytes = int64_t{64} << 20;
      const nk::SandboxedRun r = nk::run_sandboxed("true", nk::SandboxMode::none, spec, 10);
      CHECK(r.exit_code == 0);
      CHECK(r.memory_limit.rfind("no memory limit: ", 0) == 0);
      return;
    }
    Scratch s;
    nk::SandboxSpec spec = spec_for(s.path);
    spec.cgroup_memory_bytes = int64_t{64} << 20;
    // 256 MiB touched in a 64 MiB cgroup: the kernel's OOM killer ends it
    const nk::SandboxedRun big = nk::run_sandboxed(
        "exec /usr/bin/python3 -c 'b = bytearray(256 << 20); print(len(b))'", nk::SandboxMode::none, spec, 60);
    CHECK(big.memory_limit == "64 MiB by " + kind);
    CHECK(big.exit_code == 128 + SIGKILL);
    CHECK(big.out_of_memory);
    const nk::SandboxedRun small = nk::run_sandboxed(
        "exec /usr/bin/python3 -c 'b = bytearray(8 << 20); print(len(b))'", nk::SandboxMode::none, spec, 60);
    CHECK(small.exit_code == 0);
    CHECK_FALSE(small.out_of_memory);
    // a daemon that leaves the process group is still in the cgroup: killed at the end
    const nk::SandboxedRun daemon =
        nk::run_sandboxed("setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > pid", nk::SandboxMode::none, spec,
                          20);
    CHECK(daemon.exit_code == 0);
    std::FILE* f = std::fopen((s.path + "/pid").c_str(), "r");
    REQUIRE(f != nullptr);
    long pid = 0;
    CHECK(std::fscanf(f, "%ld", &pid) == 1);
    std::fclose(f);
    bool gone = false;
    for (int wait = 0; wait < 50 && !gone; ++wait) {
      gone = kill(static_cast<pid_t>(pid), 0) != 0;
      if (!gone) usleep(100000);
    }
    CHECK(gone);
  }

  TEST_CASE("run_sandboxed in namespaces: writes only to its folders and /dev/null, no connections") {
    if (!nk::namespace_sandbox_unavailable().empty()) {
      MESSAGE("namespace sandbox unavailable here: " << nk::namespace_sandbox_unavailable());
      return;
    }
    Scratch s, outside;
    const nk::SandboxedRun ok = nk::run_sandboxed("echo x > inside.txt && echo y > /dev/null && mkdir d && echo done",
                                                  nk::SandboxMode::namespaces, spec_for(s.path), 10);
    CHECK(ok.sandbox_error.empty());
    CHECK(ok.exit_code == 0);
    CHECK(ok.output == "done\n");
    const nk::SandboxedRun escape = nk::run_sandboxed("echo x > " + outside.path + "/escape.txt",
                                                      nk::SandboxMode::namespaces, spec_for(s.path), 10);
    CHECK(escape.exit_code != 0);
    CHECK_FALSE(std::filesystem::exists(outside.path + "/escape.txt"));
    const nk::SandboxedRun net =
        nk::run_sandboxed("python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9), timeout=1)\"",
                          nk::SandboxMode::namespaces, spec_for(s.path), 20);
    CHECK(net.exit_code != 0);
    CHECK(net.output.find("unreachable") != std::string::npos);
  }

  TEST_CASE("run_sandboxed: a sandbox that cannot be entered is said, the command not run") {
    nk::SandboxSpec spec;
    spec.workdir = "/nonexistent-nk-folder";
    const nk::SandboxedRun r = nk::run_sandboxed("echo ran", nk::SandboxMode::none, spec, 10);
    CHECK(r.exit_code == -1);
    CHECK(r.sandbox_error.find("chdir") != std::string::npos);
    CHECK(r.output.empty());
  }
}
