// run.cpp - the whole pipeline over a corpus of sources: fetch, env, mine
// (history and synthetic bugs), validate and distill for each, one folder
// per repository (a finished one is skipped when the run is resumed), and
// the corpus's instances, trajectories and run log joined at the end.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "nk/timer.hpp"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/runlog.hpp"
#include "swe-crafter/swe_crafter.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

struct Entry {
  std::string source, name;
  int line = 0;
};

/// The corpus: a source per line (as fetch takes them), optionally its
/// name in the store after a space; '#' comments and blank lines skipped.
std::vector<Entry> read_corpus(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw nk::io_error(path, "cannot read the corpus");
  std::vector<Entry> out;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (const size_t hash = text.find('#'); hash != std::string::npos) text.erase(hash);
    std::istringstream fields(text);
    Entry e;
    e.line = number;
    if (!(fields >> e.source)) continue;
    fields >> e.name;
    std::string extra;
    auto bad = [&](const std::string& why) { bad_input(path, "line " + std::to_string(number), why); };
    if (fields >> extra) bad("more than a source and a name");
    const size_t colon = e.source.find(':');
    const std::string kind = colon == std::string::npos ? "" : e.source.substr(0, colon);
    if ((kind != "git" && kind != "debian-bin" && kind != "debian-src" && kind != "pypi") ||
        colon + 1 == e.source.size())
      bad("unknown source '" + e.source +
          "' (expected git:PATH, debian-bin:PACKAGE, debian-src:PACKAGE|FILE.dsc or pypi:NAME[==VERSION])");
    if (!e.name.empty() && (e.name.find('/') != std::string::npos || e.name[0] == '.'))
      bad("the name '" + e.name + "' is not a plain file name");
    out.push_back(e);
  }
  if (out.empty()) bad_input(path, "", "no source in the corpus");
  return out;
}

size_t count_lines(const fs::path& p) {
  const std::string s = read_text(p);
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

void run_verb(const RunOptions& o, const nk::RunEnv& run_env) {
  const std::vector<Entry> all = read_corpus(o.corpus);
  const auto [first, last] = nk::shard_range(run_env.shard, static_cast<int64_t>(all.size()));
  const std::vector<Entry> corpus(all.begin() + first, all.begin() + last);
  std::error_code ec;
  fs::create_directories(fs::path(o.output) / "repos", ec);
  if (ec || !fs::is_directory(o.output, ec)) throw nk::io_error(o.output, "cannot create the run's folder");
  // the sandbox is checked once, before any work
  (void)make_sandbox(o.sandbox, o.timeout, o.memory, "repositories' code");
  std::cout << "repo\tlanguage\tenv\tattempts\tcandidates\tinstances\tresolved\tseconds\n";
  std::string instances, trajectories;
  RunLog total;
  int failed = 0;
  nk::Progress progress("run", static_cast<int64_t>(corpus.size()));
  for (size_t k = 0; k < corpus.size(); ++k) {
    const Entry& entry = corpus[k];
    const nk::Stopwatch watch;
    std::string name, language = "", env_state = "error", attempts = "-";
    size_t n_cand = 0, n_inst = 0, n_traj = 0;
    double seconds = -1;  // a resumed repository's row shows the seconds it took when it ran
    fs::path dir;
    // a repository's files publish as they are written: the folder is what a resumed run starts from
    const nk::PublishNow now;
    try {
      FetchOptions fetch;
      fetch.store = o.store;
      fetch.source = entry.source;
      fetch.name = entry.name;
      fetch.versions = o.versions;
      fetch.pypi_index = o.pypi_index;
      RunLog::get().clear();
      RunLog::get().context(entry.source, "fetch");
      const std::string repo = fetch_source(fetch);
      name = fs::path(repo).filename().string();
      dir = fs::path(o.output) / "repos" / name;
      if (fs::exists(dir / "done", ec)) {
        spdlog::info("{}: done in an earlier run (its folder is kept)", name);
        std::ifstream(dir / "seconds") >> seconds;
      } else {
        fs::remove_all(dir, ec);
        fs::create_directories(dir, ec);
        if (o.fixed_too) {
          EnvOptions fixed;
          fixed.store = o.store;
          fixed.input = repo;
          fixed.method = "fixed";
          fixed.sandbox = o.sandbox;
          fixed.timeout = o.timeout;
          fixed.memory = o.memory;
          fixed.output = (dir / "env-fixed.json").string();
          env_verb(fixed, run_env);
        }
        EnvOptions env;
        env.store = o.store;
        env.input = repo;
        env.method = o.method;
        env.skills = o.skills;
        env.induce = o.induce;
        env.attempts = o.attempts;
        env.sandbox = o.sandbox;
        env.timeout = o.timeout;
        env.memory = o.memory;
        env.output = (dir / "env.json").string();
        env_verb(env, run_env);
        const nlohmann::json ej = nlohmann::json::parse(read_text((dir / "env.json").string()));
        std::string candidates;
        if (ej.value("ok", false)) {
          MineOptions mine;
          mine.store = o.store;
          mine.input = repo;
          mine.env_file = (dir / "env.json").string();
          mine.max = o.max;
          mine.sandbox = o.sandbox;
          mine.timeout = o.timeout;
          mine.memory = o.memory;
          // a stage that finds nothing to work on (no test passes in a fresh workspace, ...) is this repository's
          // result, not an error of the run: it is said, and the other stages go on
          auto stage = [&](const char* what, const std::function<void()>& body) {
            try {
              body();
            } catch (const nk::Error& e) {
              spdlog::warn("{}: {}: {}", name, what, e.what());
              std::ofstream(dir / "stage-errors.txt", std::ios::app) << what << ": " << e.what() << "\n";
            }
          };
          if (o.history) {
            mine.output = (dir / "mined.jsonl").string();
            RunLog::get().context(name, "mine");
            stage("mine", [&] {
              mine_verb(mine, run_env);
              candidates += read_text(mine.output);
            });
          }
          if (o.synthetic > 0) {
            mine.synthetic = o.synthetic;
            mine.agent_cmd = o.agent_cmd;  // the agent writes the bugs' statements too (messages of type statement)
            mine.max = 0;
            mine.output = (dir / "synthetic.jsonl").string();
            stage("mine --synthetic", [&] {
              mine_verb(mine, run_env);
              candidates += read_text(mine.output);
            });
          }
        }
        write_text((dir / "candidates.jsonl").string(), candidates, false);
        ValidateOptions val;
        val.store = o.store;
        val.input = (dir / "candidates.jsonl").string();
        val.output = (dir / "instances.jsonl").string();
        val.status_maps = (dir / "status-maps.jsonl").string();
        val.runs = o.runs;
        val.fresh = o.fresh;
        val.sandbox = o.sandbox;
        val.timeout = o.timeout;
        val.memory = o.memory;
        std::ofstream verdicts(dir / "verdicts.tsv");
        val.report = &verdicts;
        nk::RunEnv whole = run_env;
        whole.shard = nk::Shard{};  // the shard splits the corpus, not a repository's candidates
        validate_verb(val, whole);
        if (o.agent != "none" || !o.agent_cmd.empty()) {
          DistillOptions dist;
          dist.store = o.store;
          dist.input = val.output;
          dist.output = (dir / "trajectories.jsonl").string();
          dist.agent_cmd = o.agent_cmd;
          dist.fresh = o.fresh;
          dist.max_steps = o.max_steps;
          dist.max_seconds = o.max_seconds;
          dist.sandbox = o.sandbox;
          dist.timeout = o.timeout;
          dist.memory = o.memory;
          std::ofstream lines(dir / "distill.tsv");
          dist.report = &lines;
          distill_verb(dist, whole);
        } else {
          write_text((dir / "trajectories.jsonl").string(), "", false);
        }
        RunLog::get().write((dir / "log.h5").string(), false);
        seconds = watch.seconds();  // the row gives the same figure as a resumed run's row
        std::ofstream(dir / "seconds") << seconds << "\n";
        std::ofstream(dir / "done") << "done\n";
      }
      RunLog repo_log;
      repo_log.read((dir / "log.h5").string());
      total.attempts.insert(total.attempts.end(), repo_log.attempts.begin(), repo_log.attempts.end());
      total.repos.insert(total.repos.end(), repo_log.repos.begin(), repo_log.repos.end());
      total.candidates.insert(total.candidates.end(), repo_log.candidates.begin(), repo_log.candidates.end());
      total.trajectories.insert(total.trajectories.end(), repo_log.trajectories.begin(), repo_log.trajectories.end());
      const nlohmann::json ej = nlohmann::json::parse(read_text((dir / "env.json").string()));
      language = ej.value("language", "");
      env_state = ej.value("ok", false) ? "ok" : "fails";
      attempts = std::to_string(ej.value("attempts", 0));
      n_cand = count_lines(dir / "candidates.jsonl");
      n_inst = count_lines(dir / "instances.jsonl");
      n_traj = count_lines(dir / "trajectories.jsonl");
      instances += read_text((dir / "instances.jsonl").string());
      trajectories += read_text((dir / "trajectories.jsonl").string());
    } catch (const nk::Error& e) {
      // one source that cannot be fetched or read does not end the corpus's run (rerun to retry it)
      ++failed;
      spdlog::warn("{} (corpus line {}): {}", entry.source, entry.line, e.what());
      env_state = std::string("error: ") + e.what();
      for (char& c : env_state) c = c == '\n' || c == '\t' ? ' ' : c;  // one TSV line
      if (name.empty()) name = entry.source;
    }
    std::cout << name << "\t" << language << "\t" << env_state << "\t" << attempts << "\t" << n_cand << "\t" << n_inst
              << "\t" << n_traj << "\t" << (seconds >= 0 ? seconds : watch.seconds()) << "\n";
    std::cout.flush();
    progress.update(static_cast<int64_t>(k + 1));
  }
  progress.finish();
  write_text((fs::path(o.output) / "instances.jsonl").string(), instances, false);
  write_text((fs::path(o.output) / "trajectories.jsonl").string(), trajectories, false);
  total.write((fs::path(o.output) / "run.h5").string(), false);
  if (!o.log.empty()) total.write(o.log, false);
  spdlog::info("{} sources: {} instances, {} trajectories{}", corpus.size(),
               std::count(instances.begin(), instances.end(), '\n'),
               std::count(trajectories.begin(), trajectories.end(), '\n'),
               failed ? ", " + std::to_string(failed) + " could not be processed" : std::string());
}

}  // namespace swec
