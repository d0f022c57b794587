// fetch.cpp - sources into the store: a git repository per source.
#include <filesystem>
#include <iostream>
#include <sstream>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/sources.hpp"
#include "swe-crafter/swe_crafter.hpp"

namespace fs = std::filesystem;

namespace swec {

std::string resolve_repo(const std::string& store, const std::string& repo) {
  std::error_code ec;
  // a name in the store first: a folder of the same name beside it is the user's, only read when named by path
  for (const fs::path& p : {fs::path(store) / "repos" / repo, fs::path(repo)}) {
    if (fs::is_directory(p, ec) && fs::exists(p / ".git", ec)) return fs::absolute(p).lexically_normal().string();
  }
  throw nk::input_error(repo, "", "not a git repository (nor a name in the store '" + store + "/repos')");
}

namespace {

std::string safe_name(std::string name) {
  for (char& c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  }
  while (!name.empty() && name.front() == '.') name.erase(0, 1);
  return name.empty() ? "repo" : name;
}

/// The folder holding a Debian binary package's source tree: Go's
/// /usr/share/gocode/src/IMPORT/PATH, a crate's /usr/share/cargo/registry/NAME-VERSION,
/// else the deepest folder that holds all the package's files.
std::string debian_tree(const std::string& package) {
  const CommandResult r = shell("dpkg -L " + sh_quote(package) + " 2>&1", ".");
  if (r.exit_code != 0) throw nk::input_error(package, "", "not an installed Debian package (dpkg -L failed)");
  std::vector<std::string> files;
  std::istringstream in(r.output);
  std::string line;
  std::error_code ec;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '/' || !fs::is_regular_file(line, ec)) continue;
    // documentation, manual pages and Debian's metadata are no sources
    if (line.rfind("/usr/share/doc/", 0) == 0 || line.rfind("/usr/share/man/", 0) == 0 ||
        line.rfind("/usr/share/lintian/", 0) == 0)
      continue;
    files.push_back(line);
  }
  for (const char* root : {"/usr/share/gocode/src/", "/usr/share/cargo/registry/"}) {
    std::string best;
    for (const std::string& f : files) {
      if (f.rfind(root, 0) != 0) continue;
      if (std::string(root).find("cargo") != std::string::npos) {
        const size_t end = f.find('/', std::string(root).size());
        return f.substr(0, end);
      }
      // the folder of go.mod, else the shallowest folder with .go files
      const fs::path dir = fs::path(f).parent_path();
      if (fs::path(f).filename() == "go.mod") return dir.string();
      if (f.size() > 3 && f.substr(f.size() - 3) == ".go" && (best.empty() || dir.string().size() < best.size()))
        best = dir.string();
    }
    if (!best.empty()) return best;
  }
  if (files.empty())
    throw nk::input_error(package, "", "the package installs no source files (only documentation, or nothing)");
  fs::path common = fs::path(files[0]).parent_path();
  for (const std::string& f : files) {
    while (f.rfind(common.string() + "/", 0) != 0 && common.has_parent_path() && common != common.root_path())
      common = common.parent_path();
  }
  // a package spread over /usr/lib, /usr/share/doc, ... has no source tree to take
  if (std::distance(common.begin(), common.end()) < 4)
    throw nk::input_error(package, "",
                          "no source tree: its files share only " + common.string() +
                              " (Go sources under /usr/share/gocode/src and crates under /usr/share/cargo/registry "
                              "are taken; for other languages fetch the source package)");
  return common.string();
}

}  // namespace

std::string fetch_source(const FetchOptions& o) {
  const size_t colon = o.source.find(':');
  const std::string kind = colon == std::string::npos ? "" : o.source.substr(0, colon);
  const std::string what = colon == std::string::npos ? "" : o.source.substr(colon + 1);
  if (what.empty() || (kind != "git" && kind != "debian-bin" && kind != "debian-src" && kind != "pypi"))
    throw nk::input_error(o.source, "",
                          "unknown source (expected git:PATH, debian-bin:PACKAGE, debian-src:PACKAGE|FILE.dsc or "
                          "pypi:NAME[==VERSION])");
  std::error_code ec;
  fs::create_directories(fs::path(o.store) / "repos", ec);
  if (ec) throw nk::io_error(o.store, "cannot create the store: " + ec.message());
  std::string name = o.name;
  if (kind == "git") {
    const fs::path src = fs::absolute(what).lexically_normal();
    if (!fs::exists(src / ".git", ec) && !fs::exists(src / "HEAD", ec))
      throw nk::input_error(what, "", "not a git repository");
    if (name.empty()) name = safe_name(src.filename().string());
    const fs::path dest = fs::absolute(fs::path(o.store) / "repos" / name);
    if (fs::exists(dest, ec)) {
      spdlog::info("{} is in the store already: {}", o.source, dest.string());
    } else {
      // a clone: the user's repository is only read
      git(".", "clone -q --no-hardlinks " + sh_quote(src.string()) + " " + sh_quote(dest.string()), "cloning " + what);
    }
    return dest.string();
  }
  if (name.empty()) {
    std::string base = what;
    if (kind == "debian-src" && base.size() > 4 && base.substr(base.size() - 4) == ".dsc")
      base = fs::path(base).filename().string().substr(0, fs::path(base).filename().string().find('_'));
    if (kind == "pypi") base = base.substr(0, base.find("=="));
    name = safe_name(kind + "." + base);
  }
  const fs::path dest = fs::absolute(fs::path(o.store) / "repos" / name);
  if (fs::exists(dest, ec)) {
    spdlog::info("{} is in the store already: {}", o.source, dest.string());
    return dest.string();
  }
  const fs::path temp = dest.string() + ".partial";
  fs::remove_all(temp, ec);
  if (kind == "debian-src" || kind == "pypi") {
    // a chain of commits, built aside and published whole
    try {
      if (kind == "debian-src") {
        build_debian_src(what, o.store, temp.string());
      } else {
        ScratchFolder scratch("swe-crafter-pypi");
        build_pypi(what, o.versions, o.pypi_index, temp.string(), scratch.path);
      }
    } catch (...) {
      fs::remove_all(temp, ec);  // nothing half-built stays in the store
      throw;
    }
    fs::rename(temp, dest, ec);
    if (ec) throw nk::io_error(dest.string(), "cannot publish the repository: " + ec.message());
    return dest.string();
  }
  const std::string tree = debian_tree(what);
  fs::create_directories(temp, ec);
  fs::copy(tree, temp, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) throw nk::io_error(tree, "cannot copy the package's tree: " + ec.message());
  git(temp.string(), "init -q", "creating the repository");
  std::string version = shell("dpkg-query -W -f='${Version}' " + sh_quote(what) + " 2>/dev/null", ".").output;
  commit_all(temp.string(), "debian-bin " + what + " " + version + " (" + tree + ")");
  fs::rename(temp, dest, ec);
  if (ec) throw nk::io_error(dest.string(), "cannot publish the repository: " + ec.message());
  return dest.string();
}

void fetch_verb(const FetchOptions& o, const nk::RunEnv&) { std::cout << fetch_source(o) << "\n"; }

}  // namespace swec
