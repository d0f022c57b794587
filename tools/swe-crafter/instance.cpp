// instance.cpp - instances as JSON lines.
#include "swe-crafter/instance.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "swe-crafter/git.hpp"

namespace swec {

Environment environment_of(const Instance& i) {
  return Environment{i.language, i.build_system, i.install, i.build, i.test_cmd, i.log_parser, {}};
}

std::vector<std::string> present_test_files(const Instance& instance, const std::string& work_tree) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const std::string& f : instance.test_files) {
    if (std::filesystem::exists(std::filesystem::path(work_tree) / f, ec)) files.push_back(f);
  }
  return files;
}

std::string to_json_line(const Instance& i) {
  nlohmann::ordered_json j;
  j["instance_id"] = i.instance_id;
  j["repo"] = i.repo;
  j["base_commit"] = i.base_commit;
  j["patch"] = i.patch;
  j["test_patch"] = i.test_patch;
  j["problem_statement"] = i.problem_statement;
  j["hints_text"] = i.hints_text;
  j["created_at"] = i.created_at;
  j["version"] = i.version;
  // SWE-bench keeps these two as JSON lists inside strings
  j["FAIL_TO_PASS"] = nlohmann::json(i.fail_to_pass).dump();
  j["PASS_TO_PASS"] = nlohmann::json(i.pass_to_pass).dump();
  j["environment_setup_commit"] = i.environment_setup_commit;
  j["language"] = i.language;
  j["build_system"] = i.build_system;
  j["install"] = i.install;
  j["build"] = i.build;
  j["test_cmd"] = i.test_cmd;
  j["log_parser"] = i.log_parser;
  j["source"] = i.source;
  j["repo_path"] = i.repo_path;
  j["test_files"] = i.test_files;
  j["nk_version"] = nk::version();
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void bad_input(const std::string& file, const std::string& where, const std::string& message) {
  std::string m = message;
  for (size_t at; (at = m.find('\n')) != std::string::npos;) m.replace(at, 1, "; ");
  throw nk::Error(nk::Exit::input, "input " + nk::display_name(file) + (where.empty() ? "" : ": " + where) + ": " + m);
}

namespace {

std::vector<std::string> string_list(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return {};
  const nlohmann::json& v = j.at(key);
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.empty()) return {};
    return nlohmann::json::parse(s).get<std::vector<std::string>>();
  }
  return v.get<std::vector<std::string>>();
}

std::string text(const nlohmann::json& j, const char* key, bool required) {
  if (!j.contains(key)) {
    if (required) throw std::runtime_error(std::string("field '") + key + "' is missing");
    return "";
  }
  if (!j.at(key).is_string()) throw std::runtime_error(std::string("field '") + key + "' is not a string");
  return j.at(key).get<std::string>();
}

}  // namespace

std::vector<Instance> read_instances(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw nk::io_error(path, "cannot open the instance file");
    in = &file;
  }
  std::vector<Instance> out;
  std::set<std::string> ids;
  std::string line;
  int64_t number = 0;
  while (std::getline(*in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(number);
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (!j.is_object()) throw std::runtime_error("not a JSON object");
      Instance i;
      i.instance_id = text(j, "instance_id", true);
      if (i.instance_id.empty()) throw std::runtime_error("instance_id is empty");
      i.repo = text(j, "repo", true);
      i.base_commit = text(j, "base_commit", true);
      if (i.base_commit.empty()) throw std::runtime_error("base_commit is empty");
      i.patch = text(j, "patch", true);
      i.test_patch = text(j, "test_patch", true);
      i.problem_statement = text(j, "problem_statement", false);
      i.hints_text = text(j, "hints_text", false);
      i.created_at = text(j, "created_at", false);
      if (j.contains("version"))
        i.version = j.at("version").is_string() ? j.at("version").get<std::string>() : j.at("version").dump();
      i.environment_setup_commit = text(j, "environment_setup_commit", false);
      i.fail_to_pass = string_list(j, "FAIL_TO_PASS");
      i.pass_to_pass = string_list(j, "PASS_TO_PASS");
      i.language = text(j, "language", false);
      i.build_system = text(j, "build_system", false);
      i.install = text(j, "install", false);
      i.build = text(j, "build", false);
      i.test_cmd = text(j, "test_cmd", false);
      i.log_parser = text(j, "log_parser", false);
      if (j.contains("source")) i.source = text(j, "source", false);
      i.repo_path = text(j, "repo_path", false);
      i.test_files = string_list(j, "test_files");
      if (!ids.insert(i.instance_id).second) throw std::runtime_error("duplicate instance_id '" + i.instance_id + "'");
      out.push_back(std::move(i));
    } catch (const nk::Error&) {
      throw;
    } catch (const std::exception& e) {
      bad_input(path, where, e.what());
    }
  }
  if (file.bad()) throw nk::io_error(path, "read error");
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_text(const std::string& path, const std::string& text, bool no_clobber) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) throw nk::io_error("-", "cannot write standard output");
    return;
  }
  nk::AtomicFile f(path, no_clobber);
  {
    std::ofstream out(f.temp_path(), std::ios::binary);
    out << text;
    if (!out.flush()) throw nk::io_error(path, "cannot write");
  }
  f.commit();
}

}  // namespace swec
