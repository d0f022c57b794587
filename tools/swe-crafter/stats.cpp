// stats.cpp - the tables of one or more run logs (run.h5, or logs joined by
// nk-data merge): per language, environments with the fixed method and with
// skills, attempts per success, candidates and instances by source, flaky
// rejections, trajectories, and validation time against the protocol's
// floor; an SVG of the environments' success by language.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/runlog.hpp"
#include "swe-crafter/swe_crafter.hpp"

namespace swec {

namespace {

struct Row {
  std::set<std::string> repos;
  int fixed = 0, fixed_ok = 0, skills = 0, skills_ok = 0;
  int64_t skills_attempts = 0;
  std::map<std::string, int> candidates, instances;
  int flaky_rejected = 0, tried = 0, resolved = 0;
  double validate_seconds = 0, floor_seconds = 0;
};

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string by_source(const std::map<std::string, int>& m) {
  int total = 0;
  std::string parts;
  for (const auto& [source, n] : m) {
    total += n;
    parts += (parts.empty() ? "" : ", ") + source + " " + std::to_string(n);
  }
  return std::to_string(total) + (parts.empty() ? "" : " (" + parts + ")");
}

std::string xml(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

/// Grouped bars: per language, the share of repositories whose environment
/// works with the fixed method and with skills.
std::string bars_svg(const std::vector<std::pair<std::string, Row>>& rows) {
  const double w = 80.0 * std::max<size_t>(rows.size(), 1) + 120, h = 320, left = 60, bottom = 260, top = 40;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << w / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">Environments that build and run "
    << "their tests, by language</text>\n";
  for (int t = 0; t <= 100; t += 25) {
    const double y = bottom - (bottom - top) * t / 100.0;
    s << "<line x1=\"" << left << "\" x2=\"" << w - 60 << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#ddd\"/>\n<text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << t
      << "%</text>\n";
  }
  const char* colours[] = {"#999999", "#1f77b4"};
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i].second;
    const double share[] = {r.fixed ? 100.0 * r.fixed_ok / r.fixed : 0, r.skills ? 100.0 * r.skills_ok / r.skills : 0};
    const double x0 = left + 20 + 80.0 * i;
    for (int k = 0; k < 2; ++k) {
      const double bh = (bottom - top) * share[k] / 100.0;
      s << "<rect x=\"" << x0 + 26 * k << "\" y=\"" << bottom - bh << "\" width=\"24\" height=\"" << bh << "\" fill=\""
        << colours[k] << "\"/>\n";
    }
    s << "<text x=\"" << x0 + 25 << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\">" << xml(rows[i].first)
      << "</text>\n";
  }
  s << "<line x1=\"" << left << "\" x2=\"" << w - 60 << "\" y1=\"" << bottom << "\" y2=\"" << bottom
    << "\" stroke=\"black\"/>\n";
  const char* names[] = {"fixed", "skills"};
  for (int k = 0; k < 2; ++k) {
    s << "<rect x=\"" << left + 110 * k << "\" y=\"" << bottom + 34 << "\" width=\"12\" height=\"12\" fill=\""
      << colours[k] << "\"/><text x=\"" << left + 110 * k + 16 << "\" y=\"" << bottom + 44 << "\">" << names[k]
      << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace

void stats_verb(const StatsOptions& o, const nk::RunEnv&) {
  RunLog log;
  for (const std::string& in : o.inputs) log.read(in);
  std::map<std::string, std::string> language;  // repo -> language (the environment's)
  for (const RunLog::Repo& r : log.repos) {
    if (!r.language.empty() && (language[r.repo].empty() || r.method == "skills")) language[r.repo] = r.language;
  }
  auto lang = [&](const std::string& repo) {
    const auto it = language.find(repo);
    return it == language.end() || it->second.empty() ? std::string("unknown") : it->second;
  };
  std::map<std::string, double> suite;  // repo -> the suite's seconds (the skills environment's test run)
  for (const RunLog::Repo& r : log.repos) {
    if (r.env_ok && (r.method == "skills" || !suite.count(r.repo))) suite[r.repo] = r.test_seconds;
  }
  std::map<std::string, Row> rows;
  for (const RunLog::Repo& r : log.repos) {
    Row& row = rows[lang(r.repo)];
    row.repos.insert(r.repo);
    if (r.method == "fixed") {
      ++row.fixed;
      row.fixed_ok += r.env_ok;
    } else {
      ++row.skills;
      row.skills_ok += r.env_ok;
      row.skills_attempts += r.attempts;
    }
  }
  for (const RunLog::Candidate& c : log.candidates) {
    Row& row = rows[lang(c.repo)];
    ++row.candidates[c.source];
    const bool in = c.verdict == "admitted" || c.verdict == "ok";
    if (in) ++row.instances[c.source];
    if (c.verdict == "rejected" && c.flaky > 0) ++row.flaky_rejected;
    row.validate_seconds += c.seconds;
    row.floor_seconds += 2.0 * static_cast<double>(c.runs) * (suite.count(c.repo) ? suite[c.repo] : 0.0);
  }
  for (const RunLog::Trajectory& t : log.trajectories) {
    Row& row = rows[lang(t.repo)];
    ++row.tried;
    row.resolved += t.resolved;
  }
  Row total;
  for (const auto& [l, r] : rows) {
    total.repos.insert(r.repos.begin(), r.repos.end());
    total.fixed += r.fixed, total.fixed_ok += r.fixed_ok, total.skills += r.skills, total.skills_ok += r.skills_ok;
    total.skills_attempts += r.skills_attempts;
    for (const auto& [s, n] : r.candidates) total.candidates[s] += n;
    for (const auto& [s, n] : r.instances) total.instances[s] += n;
    total.flaky_rejected += r.flaky_rejected, total.tried += r.tried, total.resolved += r.resolved;
    total.validate_seconds += r.validate_seconds, total.floor_seconds += r.floor_seconds;
  }
  std::ostringstream out;
  out << "| language | repos | env fixed | env skills | skills / fixed | attempts per success | candidates | instances "
         "| flaky rejected | resolved / tried | validate s per instance | validate / floor |\n"
      << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  auto line = [&](const std::string& name, const Row& r) {
    int admitted = 0;
    for (const auto& [s, n] : r.instances) admitted += n;
    out << "| " << name << " | " << r.repos.size() << " | "
        << (r.fixed ? std::to_string(r.fixed_ok) + "/" + std::to_string(r.fixed) : "-") << " | "
        << (r.skills ? std::to_string(r.skills_ok) + "/" + std::to_string(r.skills) : "-") << " | "
        << (r.fixed && r.skills && r.fixed_ok ? fmt("%.2f", double(r.skills_ok) / r.fixed_ok) : "-") << " | "
        << (r.skills_ok ? fmt("%.2f", double(r.skills_attempts) / r.skills_ok) : "-") << " | "
        << by_source(r.candidates) << " | " << by_source(r.instances) << " | " << r.flaky_rejected << " | "
        << r.resolved << "/" << r.tried << " | " << (admitted ? fmt("%.1f", r.validate_seconds / admitted) : "-")
        << " | " << (r.floor_seconds > 0 ? fmt("%.2f", r.validate_seconds / r.floor_seconds) : "-") << " |\n";
  };
  for (const auto& [l, r] : rows) line(l, r);
  if (rows.size() > 1) line("all", total);
  write_text(o.output, out.str(), o.no_clobber);
  if (!o.svg.empty()) {
    std::vector<std::pair<std::string, Row>> ordered(rows.begin(), rows.end());
    write_text(o.svg, bars_svg(ordered), o.no_clobber);
  }
  spdlog::info("{} repositories, {} candidates, {} trajectories in {} log(s)", total.repos.size(),
               log.candidates.size(), log.trajectories.size(), o.inputs.size());
}

}  // namespace swec
