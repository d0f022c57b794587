// sources.cpp - the sources that become several commits: a Debian source
// package (the upstream tree with its packaging, then each Debian patch as a
// commit with its DEP-3 header as message) and a chain of PyPI releases (a
// commit per release, its changelog's new lines as message).
#include "swe-crafter/sources.hpp"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/shipped.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/instance.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

/// The value of a "Field: value" line of a control file ("" when absent).
std::string control_field(const std::string& text, const std::string& field) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return trim(line.substr(field.size() + 1));
  }
  return "";
}

/// A private apt configuration whose sources are the system's, as deb-src
/// lines: the archive's source indices without touching /etc/apt.
std::string apt_options(const std::string& store) {
  const fs::path apt = fs::absolute(fs::path(store) / "apt");
  std::error_code ec;
  fs::create_directories(apt / "sources.list.d", ec);
  fs::create_directories(apt / "lists" / "partial", ec);
  fs::create_directories(apt / "cache" / "archives" / "partial", ec);
  std::string deb822, oneline;
  for (const fs::path& dir : {fs::path("/etc/apt/sources.list.d")}) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".sources") deb822 += read_text(e.path()) + "\n\n";
      if (e.path().extension() == ".list") oneline += read_text(e.path()) + "\n";
    }
  }
  oneline += read_text("/etc/apt/sources.list");
  std::string out;
  {
    // deb822 stanzas of Types: deb become deb-src stanzas
    std::istringstream in(deb822);
    std::string line, stanza;
    auto flush = [&] {
      if (std::regex_search(stanza, std::regex("(^|\n)Types:[^\n]*\\bdeb\\b"))) {
        out += std::regex_replace(stanza, std::regex("(^|\n)Types:[^\n]*"), "$1Types: deb-src") + "\n";
      }
      stanza.clear();
    };
    while (std::getline(in, line)) {
      if (trim(line).empty()) {
        flush();
      } else {
        stanza += line + "\n";
      }
    }
    flush();
  }
  std::string list;
  {
    std::istringstream in(oneline);
    std::string line;
    while (std::getline(in, line)) {
      const std::string t = trim(line);
      if (t.rfind("deb ", 0) == 0) list += "deb-src " + t.substr(4) + "\n";
    }
  }
  std::ofstream(apt / "sources.list.d" / "swe-crafter.sources") << out;
  std::ofstream(apt / "sources.list") << list;
  return "-o Dir::Etc::SourceList=" + sh_quote((apt / "sources.list").string()) +
         " -o Dir::Etc::SourceParts=" + sh_quote((apt / "sources.list.d").string()) +
         " -o Dir::State::Lists=" + sh_quote((apt / "lists").string()) +
         " -o Dir::Cache=" + sh_quote((apt / "cache").string()) + " -o APT::Sandbox::User=root -q";
}

/// The .dsc of a source package: downloaded from the archive's pool (apt's
/// source indices refreshed once per store) into STORE/downloads.
std::string download_dsc(const std::string& package, const std::string& store) {
  const std::string options = apt_options(store);
  const fs::path lists = fs::absolute(fs::path(store) / "apt" / "lists");
  bool have_sources = false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(lists, ec)) {
    have_sources = have_sources || e.path().filename().string().find("_Sources") != std::string::npos;
  }
  if (!have_sources) {
    spdlog::info("reading the archive's source indices (apt-get update, private lists under {})", lists.string());
    const CommandResult u = shell("apt-get " + options + " update 2>&1", ".", 900);
    if (u.exit_code != 0) throw nk::Error(nk::Exit::runtime, "apt-get update of the source indices failed: " + u.output);
  }
  const fs::path dl = fs::absolute(fs::path(store) / "downloads" / ("debian-src." + package));
  fs::remove_all(dl, ec);
  fs::create_directories(dl, ec);
  const CommandResult r = shell("apt-get " + options + " source --download-only " + sh_quote(package) + " 2>&1",
                                dl.string(), 1800);
  if (r.exit_code != 0) {
    if (r.output.find("Unable to find a source package") != std::string::npos ||
        r.output.find("Can not find") != std::string::npos)
      throw nk::input_error(package, "", "no such source package in the archive");
    // apt's "E:" lines say why; the rest is progress
    std::string why;
    std::istringstream lines(r.output);
    for (std::string l; std::getline(lines, l);) {
      if (l.rfind("E: ", 0) == 0) why += (why.empty() ? "" : "; ") + l.substr(3);
    }
    throw nk::Error(nk::Exit::runtime, "apt-get source " + package + " failed: " + (why.empty() ? r.output : why));
  }
  for (const auto& e : fs::directory_iterator(dl, ec)) {
    if (e.path().extension() == ".dsc") return e.path().string();
  }
  throw nk::Error(nk::Exit::runtime, "apt-get source " + package + " left no .dsc in " + dl.string());
}

/// The date of debian/changelog's newest entry (RFC 2822), "" when none.
std::string changelog_date(const fs::path& tree) {
  std::istringstream in(read_text(tree / "debian" / "changelog"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(" -- ", 0) != 0) continue;
    const size_t gt = line.find(">  ");
    return gt == std::string::npos ? "" : trim(line.substr(gt + 3));
  }
  return "";
}

}  // namespace

std::string dep3_message(const std::string& patch, const std::string& name) {
  std::istringstream in(patch);
  std::string line, summary, body, current;
  std::vector<std::string> fields;
  bool in_description = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("---", 0) == 0 || line.rfind("diff ", 0) == 0 || line.rfind("Index: ", 0) == 0 ||
        line.rfind("+++ ", 0) == 0 || line.rfind("===", 0) == 0)
      break;
    if (line.rfind("From ", 0) == 0 && line.size() > 45) continue;  // git format-patch's first line
    static const std::regex field("^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*)$");
    std::smatch m;
    if (std::regex_match(line, m, field)) {
      const std::string key = m[1], value = m[2];
      in_description = key == "Description" || key == "Subject";
      if (in_description) {
        std::string v = value;
        // git format-patch's [PATCH 1/3] prefix
        v = std::regex_replace(v, std::regex("^\\[PATCH[^\\]]*\\][ \t]*"), "");
        if (summary.empty()) {
          summary = trim(v);
        } else {
          body += trim(v) + "\n";
        }
      } else {
        fields.push_back(key + ": " + value);
      }
      continue;
    }
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
      if (in_description) {
        const std::string t = trim(line);
        if (t != ".") body += t;
        body += '\n';
      } else if (!fields.empty()) {
        fields.back().append(1, ' ').append(trim(line));
      }
      continue;
    }
    in_description = false;
    body += line + "\n";  // free text (a format-patch's message body)
  }
  if (summary.empty()) summary = "Debian patch " + name;
  std::string message = summary + "\n";
  if (!trim(body).empty()) message.append("\n").append(trim(body)).append("\n");
  if (!fields.empty()) {
    message += "\n";
    for (const std::string& f : fields) message += f + "\n";
  }
  return message + "\nSwe-Crafter-Source: debian-patch\nSwe-Crafter-Patch: " + name + "\n";
}

std::string build_debian_src(const std::string& what, const std::string& store, const std::string& repo) {
  std::error_code ec;
  std::string dsc;
  if (what.size() > 4 && what.substr(what.size() - 4) == ".dsc") {
    if (!fs::is_regular_file(what, ec)) throw nk::input_error(what, "", "no such .dsc file");
    dsc = fs::absolute(what).string();
  } else {
    dsc = download_dsc(what, store);
  }
  const std::string control = read_text(dsc);
  const std::string format = control_field(control, "Format"), source = control_field(control, "Source"),
                    version = control_field(control, "Version");
  if (format.empty() || source.empty() || version.empty())
    throw nk::input_error(dsc, "", "not a Debian source control file (Format, Source and Version)");
  const bool quilt = format == "3.0 (quilt)";
  fs::remove_all(repo, ec);
  const CommandResult x = shell("dpkg-source --no-check --no-copy " + std::string(quilt ? "--skip-patches " : "") + "-x " +
                                    sh_quote(dsc) + " " + sh_quote(repo) + " 2>&1",
                                fs::path(dsc).parent_path().string(), 1800);
  if (x.exit_code != 0) throw nk::input_error(dsc, "", "dpkg-source -x failed: " + x.output);
  const std::string date = changelog_date(repo);
  git(repo, "init -q", "creating the repository");
  commit_all(repo,
             "debian-src " + source + " " + version + ": the upstream tree and its packaging" +
                 (quilt ? ", Debian's patches not applied" : "") + "\n\nSwe-Crafter-Source: debian-src\n",
             date);
  int applied = 0;
  if (quilt) {
    std::istringstream series(read_text(fs::path(repo) / "debian" / "patches" / "series"));
    std::string line;
    while (std::getline(series, line)) {
      if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
      std::istringstream fields(line);
      std::string name, option;
      if (!(fields >> name)) continue;
      std::string strip = "-p1";
      while (fields >> option) {
        if (option.rfind("-p", 0) == 0) strip = option;
      }
      const fs::path file = fs::path(repo) / "debian" / "patches" / name;
      const CommandResult p = shell("patch " + sh_quote(strip) + " -f -s -t --no-backup-if-mismatch -i " +
                                        sh_quote(file.string()) + " 2>&1",
                                    repo);
      if (p.exit_code != 0) {
        // the chain stops here: a later patch may build on this one
        spdlog::warn("{}: Debian patch {} does not apply ({}); the patches from it on are left out", source, name,
                     trim(p.output).substr(0, 300));
        shell("git checkout -q -- . && git clean -qfd", repo);
        break;
      }
      commit_all(repo, dep3_message(read_text(file), name), date);
      ++applied;
    }
  }
  spdlog::info("debian-src {} {}: the upstream tree and {} Debian patch commit{}", source, version, applied,
               applied == 1 ? "" : "s");
  return source + " " + version;
}

std::string build_pypi(const std::string& what, int versions, const std::string& index, const std::string& repo,
                       const std::string& scratch) {
  const size_t eq = what.find("==");
  const std::string name = what.substr(0, eq), want = eq == std::string::npos ? "" : what.substr(eq + 2);
  if (name.empty() || !std::regex_match(name, std::regex("[A-Za-z0-9][A-Za-z0-9._-]*")))
    throw nk::input_error(what, "", "not a PyPI project name");
  const std::string script = nk::shipped_data("swe-crafter/pypi-releases.py");
  const std::string out = scratch + "/releases";
  const CommandResult r = shell("/usr/bin/python3 " + sh_quote(script) + " " + sh_quote(index) + " " +
                                    sh_quote(name) + " " + sh_quote(want) + " " + std::to_string(versions) + " " +
                                    sh_quote(out) + " 2>&1",
                                ".", 3600);
  if (r.exit_code == 3) throw nk::input_error(what, "", trim(r.output));
  if (r.exit_code == 4) throw nk::io_error(index, trim(r.output));
  if (r.exit_code != 0) throw nk::Error(nk::Exit::runtime, "pypi:" + what + ": " + trim(r.output));
  std::error_code ec;
  fs::create_directories(repo, ec);
  git(repo, "init -q", "creating the repository");
  std::istringstream lines(r.output);
  std::string line, last;
  int n = 0;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string version, uploaded, file;
    if (!std::getline(f, version, '\t') || !std::getline(f, uploaded, '\t') || !std::getline(f, file)) continue;
    // the release's tree replaces the previous one
    for (const auto& e : fs::directory_iterator(repo, ec)) {
      if (e.path().filename() != ".git") fs::remove_all(e.path(), ec);
    }
    fs::copy(fs::path(out) / version, repo, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) throw nk::io_error(repo, "cannot copy release " + version + ": " + ec.message());
    git(repo, "add -A", "staging");
    // the release notes: the lines the changelog gained
    const CommandResult d = shell(
        "git diff --cached -U0 --no-color -- ':(glob,icase)**/CHANGE*' ':(glob,icase)**/HISTORY*' "
        "':(glob,icase)**/NEWS*' ':(glob,icase)**/RELEASE*' 2>/dev/null",
        repo);
    std::string notes;
    std::istringstream diff(n == 0 ? "" : d.output);
    std::string dl;
    while (std::getline(diff, dl) && notes.size() < 4000) {
      if (dl.size() > 1 && dl[0] == '+' && dl.rfind("+++", 0) != 0) notes += dl.substr(1) + "\n";
    }
    std::string message = name + " " + version + "\n";
    if (n > 0) message += "\nRelease " + version + (last.empty() ? "" : ", after " + last) + " (" + file + ").\n";
    if (!trim(notes).empty()) message.append("\n").append(trim(notes)).append("\n");
    commit_all(repo, message + "\nSwe-Crafter-Source: release\n", uploaded);
    last = version;
    ++n;
  }
  if (n == 0) throw nk::input_error(what, "", "no release was fetched");
  spdlog::info("pypi {}: {} release{} as a chain of commits", name, n, n == 1 ? "" : "s");
  return name + " " + last;
}

}  // namespace swec
