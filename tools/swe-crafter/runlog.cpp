// runlog.cpp - the run log's records and its HDF5 file.
#include "swe-crafter/runlog.hpp"

#include <utility>

#include "nk/error.hpp"
#include "nk/h5.hpp"

namespace swec {

RunLog& RunLog::get() {
  static RunLog log;
  return log;
}

void RunLog::context(const std::string& r, const std::string& s) {
  repo = r;
  stage = s;
}

void RunLog::command(const std::string& cmd, int exit_code, double seconds, bool timed_out,
                     const std::string& sandbox_error, const std::string& limits) {
  std::string v = "exit " + std::to_string(exit_code);
  if (timed_out) v = "timed out";
  if (!sandbox_error.empty()) v = "sandbox: " + sandbox_error;
  attempts.push_back({repo, stage, cmd, v, limits, exit_code, seconds});
}

void RunLog::verdict(const std::string& v) {
  if (attempts.empty()) return;
  std::string& last = attempts.back().verdict;
  // what a limit did stays said: the caller's reading of the run follows it
  last = last.rfind("killed: out of memory", 0) == 0 ? last + "; " + v : v;
}

void RunLog::note(const std::string& text) { attempts.push_back({repo, stage, "", text, "", 0, 0.0}); }

void RunLog::repository(const std::string& r, const std::string& language, const std::string& method, bool env_ok,
                        int n, double test_seconds) {
  repos.push_back({r, language, method, env_ok, n, test_seconds});
}

void RunLog::candidate(const std::string& r, const std::string& id, const std::string& source, const std::string& v,
                       const std::string& reason, int64_t f2p, int64_t p2p, int64_t flaky, int64_t runs,
                       double seconds) {
  candidates.push_back({r, id, source, v, reason, f2p, p2p, flaky, runs, seconds});
}

void RunLog::trajectory(const std::string& r, const std::string& id, const std::string& agent, bool resolved,
                        int64_t steps) {
  trajectories.push_back({r, id, agent, resolved, steps});
}

namespace {

template <class Row, class F>
std::vector<std::string> strings(const std::vector<Row>& rows, F f) {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const Row& r : rows) out.push_back(f(r));
  return out;
}

template <class T, class Row, class F>
void column(nk::h5::Writer& w, const std::string& name, const std::vector<Row>& rows, F f,
            const std::string& units = "") {
  std::vector<T> v;
  v.reserve(rows.size());
  for (const Row& r : rows) v.push_back(static_cast<T>(f(r)));
  w.write(name, v.data(), {static_cast<int64_t>(v.size())}, "N", units);
}

}  // namespace

void RunLog::write(const std::string& path, bool no_clobber) const {
  nk::h5::Writer w(path, "swe-crafter.log/1", no_clobber);
  using A = Attempt;
  w.write_strings("/attempts/repo", strings(attempts, [](const A& a) { return a.repo; }), "N");
  w.write_strings("/attempts/stage", strings(attempts, [](const A& a) { return a.stage; }), "N");
  w.write_strings("/attempts/command", strings(attempts, [](const A& a) { return a.command; }), "N");
  w.write_strings("/attempts/verdict", strings(attempts, [](const A& a) { return a.verdict; }), "N");
  w.write_strings("/attempts/limits", strings(attempts, [](const A& a) { return a.limits; }), "N");
  column<int64_t>(w, "/attempts/exit_code", attempts, [](const A& a) { return a.exit_code; });
  column<double>(
      w, "/attempts/seconds", attempts, [](const A& a) { return a.seconds; }, "s");
  using R = Repo;
  w.write_strings("/repos/repo", strings(repos, [](const R& r) { return r.repo; }), "N");
  w.write_strings("/repos/language", strings(repos, [](const R& r) { return r.language; }), "N");
  w.write_strings("/repos/method", strings(repos, [](const R& r) { return r.method; }), "N");
  column<int8_t>(w, "/repos/env_ok", repos, [](const R& r) { return r.env_ok; });
  column<int64_t>(w, "/repos/attempts", repos, [](const R& r) { return r.attempts; });
  column<double>(
      w, "/repos/test_seconds", repos, [](const R& r) { return r.test_seconds; }, "s");
  using C = Candidate;
  w.write_strings("/candidates/repo", strings(candidates, [](const C& c) { return c.repo; }), "N");
  w.write_strings("/candidates/instance_id", strings(candidates, [](const C& c) { return c.instance_id; }), "N");
  w.write_strings("/candidates/source", strings(candidates, [](const C& c) { return c.source; }), "N");
  w.write_strings("/candidates/verdict", strings(candidates, [](const C& c) { return c.verdict; }), "N");
  w.write_strings("/candidates/reason", strings(candidates, [](const C& c) { return c.reason; }), "N");
  column<int64_t>(w, "/candidates/fail_to_pass", candidates, [](const C& c) { return c.f2p; });
  column<int64_t>(w, "/candidates/pass_to_pass", candidates, [](const C& c) { return c.p2p; });
  column<int64_t>(w, "/candidates/flaky", candidates, [](const C& c) { return c.flaky; });
  column<int64_t>(w, "/candidates/runs", candidates, [](const C& c) { return c.runs; });
  column<double>(
      w, "/candidates/seconds", candidates, [](const C& c) { return c.seconds; }, "s");
  using T = Trajectory;
  w.write_strings("/trajectories/repo", strings(trajectories, [](const T& t) { return t.repo; }), "N");
  w.write_strings("/trajectories/instance_id", strings(trajectories, [](const T& t) { return t.instance_id; }), "N");
  w.write_strings("/trajectories/agent", strings(trajectories, [](const T& t) { return t.agent; }), "N");
  column<int8_t>(w, "/trajectories/resolved", trajectories, [](const T& t) { return t.resolved; });
  column<int64_t>(w, "/trajectories/steps", trajectories, [](const T& t) { return t.steps; });
  w.commit();
}

void RunLog::clear() {
  attempts.clear();
  repos.clear();
  candidates.clear();
  trajectories.clear();
}

void RunLog::read(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema("swe-crafter.log/1");
  // every table's columns have one length
  auto strs = [&](const std::string& d) { return f.read_strings(d); };
  auto ints = [&](const std::string& d) { return f.read<int64_t>(d, 1, "N").data; };
  auto reals = [&](const std::string& d) {
    const nk::h5::Array<double> a = f.read<double>(d, 1, "N");
    nk::h5::require_finite(path, d, a);
    return a.data;
  };
  auto same = [&](const std::string& table, size_t n, size_t m, const std::string& d) {
    if (n != m)
      throw nk::input_error(path, d, std::to_string(m) + " rows where " + table + " has " + std::to_string(n));
  };
  {
    const auto repo = strs("/attempts/repo"), stage = strs("/attempts/stage"), cmd = strs("/attempts/command"),
               verdict = strs("/attempts/verdict"), limits = strs("/attempts/limits");
    const auto code = ints("/attempts/exit_code");
    const auto sec = reals("/attempts/seconds");
    const size_t n = repo.size();
    same("/attempts", n, stage.size(), "/attempts/stage");
    same("/attempts", n, cmd.size(), "/attempts/command");
    same("/attempts", n, verdict.size(), "/attempts/verdict");
    same("/attempts", n, limits.size(), "/attempts/limits");
    same("/attempts", n, code.size(), "/attempts/exit_code");
    same("/attempts", n, sec.size(), "/attempts/seconds");
    for (size_t i = 0; i < n; ++i) attempts.push_back({repo[i], stage[i], cmd[i], verdict[i], limits[i], code[i], sec[i]});
  }
  {
    const auto repo = strs("/repos/repo"), lang = strs("/repos/language"), method = strs("/repos/method");
    const auto ok = ints("/repos/env_ok"), n_att = ints("/repos/attempts");
    const auto sec = reals("/repos/test_seconds");
    const size_t n = repo.size();
    same("/repos", n, lang.size(), "/repos/language");
    same("/repos", n, method.size(), "/repos/method");
    same("/repos", n, ok.size(), "/repos/env_ok");
    same("/repos", n, n_att.size(), "/repos/attempts");
    same("/repos", n, sec.size(), "/repos/test_seconds");
    for (size_t i = 0; i < n; ++i) repos.push_back({repo[i], lang[i], method[i], ok[i] != 0, n_att[i], sec[i]});
  }
  {
    const auto repo = strs("/candidates/repo"), id = strs("/candidates/instance_id"),
               source = strs("/candidates/source"), verdict = strs("/candidates/verdict"),
               reason = strs("/candidates/reason");
    const auto f2p = ints("/candidates/fail_to_pass"), p2p = ints("/candidates/pass_to_pass"),
               flaky = ints("/candidates/flaky"), runs = ints("/candidates/runs");
    const auto sec = reals("/candidates/seconds");
    const size_t n = repo.size();
    for (const auto& [d, m] : std::vector<std::pair<std::string, size_t>>{{"instance_id", id.size()},
                                                                          {"source", source.size()},
                                                                          {"verdict", verdict.size()},
                                                                          {"reason", reason.size()},
                                                                          {"fail_to_pass", f2p.size()},
                                                                          {"pass_to_pass", p2p.size()},
                                                                          {"flaky", flaky.size()},
                                                                          {"runs", runs.size()},
                                                                          {"seconds", sec.size()}})
      same("/candidates", n, m, "/candidates/" + d);
    for (size_t i = 0; i < n; ++i)
      candidates.push_back(
          {repo[i], id[i], source[i], verdict[i], reason[i], f2p[i], p2p[i], flaky[i], runs[i], sec[i]});
  }
  {
    const auto repo = strs("/trajectories/repo"), id = strs("/trajectories/instance_id"),
               agent = strs("/trajectories/agent");
    const auto ok = ints("/trajectories/resolved"), steps = ints("/trajectories/steps");
    const size_t n = repo.size();
    same("/trajectories", n, id.size(), "/trajectories/instance_id");
    same("/trajectories", n, agent.size(), "/trajectories/agent");
    same("/trajectories", n, ok.size(), "/trajectories/resolved");
    same("/trajectories", n, steps.size(), "/trajectories/steps");
    for (size_t i = 0; i < n; ++i) trajectories.push_back({repo[i], id[i], agent[i], ok[i] != 0, steps[i]});
  }
}

}  // namespace swec
