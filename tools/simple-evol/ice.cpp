// ice.cpp - intelligence conversion efficiency: per framework, the slope of
// P = 1/(g + eps) against the surrogates' measured capability I.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "simple-evol/frameworks.hpp"
#include "simple-evol/llm.hpp"
#include "simple-evol/simple_evol.hpp"

namespace sevol {

namespace {

struct RunSummary {
  std::string problem, framework, llm;
  double test_gap = NAN;  ///< mean over the run's test files
  double q = 0;
};

RunSummary read_run(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema("simple-evol.run/");
  RunSummary r;
  r.problem = f.attr_string("/", "problem").value_or("");
  r.framework = f.attr_string("/", "framework").value_or("");
  r.llm = f.attr_string("/", "llm").value_or("");
  r.q = f.attr_number("/", "Q").value_or(0);
  if (!std::isfinite(r.q) || r.q < 0 || r.q > 1e12) {
    throw nk::input_error(path, "", "attribute Q is " + std::to_string(r.q) + " (expected a count of LLM calls)");
  }
  const nk::h5::Array<double> gaps = f.read<double>("/best/test_gap");
  if (gaps.data.empty()) throw nk::input_error(path, "/best/test_gap", "is empty (the run had no --test files)");
  double sum = 0;
  for (size_t i = 0; i < gaps.data.size(); ++i) {
    if (std::isinf(gaps.data[i]))
      throw nk::input_error(path, "/best/test_gap", "entry " + std::to_string(i) + " is infinite");
    sum += gaps.data[i];
  }
  r.test_gap = sum / static_cast<double>(gaps.data.size());
  return r;
}

/// Ordinary least squares of y on x: slope and its standard error.
std::pair<double, double> ols(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i] / static_cast<double>(n);
    my += y[i] / static_cast<double>(n);
  }
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (n < 2 || sxx == 0) return {NAN, NAN};
  const double slope = sxy / sxx;
  if (n < 3) return {slope, NAN};
  double rss = 0;
  for (size_t i = 0; i < n; ++i) {
    const double e = y[i] - my - slope * (x[i] - mx);
    rss += e * e;
  }
  return {slope, std::sqrt(rss / static_cast<double>(n - 2) / sxx)};
}

}  // namespace

void ice_verb(const IceOptions& o, const nk::RunEnv&) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& in : o.inputs) {
    if (fs::is_directory(in)) {
      const fs::path runs = fs::is_directory(fs::path(in) / "runs") ? fs::path(in) / "runs" : fs::path(in);
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(runs)) {
        if (e.path().extension() == ".h5") found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  if (files.empty()) throw nk::usage_error("-i: no run files found");
  // I per rung from the exam
  const nk::h5::File exam = nk::h5::File::open(o.exam);
  exam.require_schema("simple-evol.exam/");
  const nk::h5::Array<int64_t> exam_rungs = exam.read<int64_t>("/exam/rung");
  const nk::h5::Array<double> exam_i = exam.read<double>("/exam/intelligence");
  if (exam_rungs.data.size() != exam_i.data.size()) {
    throw nk::input_error(
        o.exam, "/exam/intelligence",
        "has " + std::to_string(exam_i.data.size()) + " entries, /exam/rung " + std::to_string(exam_rungs.data.size()));
  }
  std::map<int, double> intelligence;
  for (size_t i = 0; i < exam_rungs.data.size(); ++i) {
    if (exam_rungs.data[i] < 0 || exam_rungs.data[i] > 9) {
      throw nk::input_error(
          o.exam, "/exam/rung",
          "entry " + std::to_string(i) + " is " + std::to_string(exam_rungs.data[i]) + " (rungs are 0..9)");
    }
    if (!std::isfinite(exam_i.data[i]) || exam_i.data[i] <= 0) {
      throw nk::input_error(o.exam, "/exam/intelligence",
                            "entry " + std::to_string(i) + " is " + std::to_string(exam_i.data[i]) + " (expected > 0)");
    }
    intelligence[static_cast<int>(exam_rungs.data[i])] = exam_i.data[i];
  }
  std::vector<RunSummary> runs;
  std::set<std::string> problems;
  for (const std::string& f : files) {
    RunSummary r = read_run(f);
    if (surrogate_rung(r.llm) < 0) {
      throw nk::input_error(f, "", "llm is '" + r.llm + "': ICE needs surrogate runs, whose I the exam measured");
    }
    if (!o.problem.empty() && r.problem != o.problem) continue;
    problems.insert(r.problem);
    runs.push_back(r);
  }
  if (problems.size() != 1) {
    throw nk::usage_error(problems.empty() ? "no runs of problem '" + o.problem + "'"
                                           : "the runs hold several problems: choose one with --problem");
  }
  std::vector<std::string> frameworks;
  std::vector<int> rungs;
  for (const RunSummary& r : runs) {
    if (std::find(frameworks.begin(), frameworks.end(), r.framework) == frameworks.end())
      frameworks.push_back(r.framework);
    const int rung = surrogate_rung(r.llm);
    if (std::find(rungs.begin(), rungs.end(), rung) == rungs.end()) rungs.push_back(rung);
  }
  std::sort(rungs.begin(), rungs.end());
  for (int r : rungs) {
    if (!intelligence.count(r)) {
      throw nk::input_error(o.exam, "/exam/rung", "has no rung " + std::to_string(r) + " (the runs use it)");
    }
  }
  // normalised so that the weakest rung in the runs has I = 1
  const double base = intelligence[rungs.front()];
  const int64_t nf = static_cast<int64_t>(frameworks.size()), nr = static_cast<int64_t>(rungs.size());
  std::vector<double> gap(static_cast<size_t>(nf * nr), NAN), perf(gap.size(), NAN), slope(nf), slope_se(nf),
      ahi_mean(nf);
  std::vector<double> iv;
  for (int r : rungs) iv.push_back(intelligence[r] / base);
  for (int64_t f = 0; f < nf; ++f) {
    double q_sum = 0;
    int64_t q_count = 0;
    std::vector<double> xs, ys;
    for (int64_t r = 0; r < nr; ++r) {
      double sum = 0;
      int64_t count = 0;
      for (const RunSummary& run : runs) {
        if (run.framework != frameworks[f] || surrogate_rung(run.llm) != rungs[r]) continue;
        q_sum += run.q;
        ++q_count;
        if (std::isfinite(run.test_gap)) {
          sum += run.test_gap;
          ++count;
        }
      }
      if (count > 0) {
        gap[f * nr + r] = sum / static_cast<double>(count);
        perf[f * nr + r] = 1.0 / (gap[f * nr + r] + o.eps);
        xs.push_back(iv[r]);
        ys.push_back(perf[f * nr + r]);
      }
    }
    std::tie(slope[f], slope_se[f]) = ols(xs, ys);
    const FrameworkShape shape = framework_shape(frameworks[f]);
    ahi_mean[f] = ahi(shape.m, shape.k, q_count > 0 ? q_sum / static_cast<double>(q_count) : 0);
  }
  std::vector<std::string> llm_names;
  for (int r : rungs) llm_names.push_back("surrogate:" + std::to_string(r));
  nk::h5::Writer out(o.output, "simple-evol.ice/1", o.no_clobber);
  for (const char* d : {"/ice/gap", "/ice/performance", "/ice/slope", "/ice/slope_se"}) out.allow_nonfinite(d);
  out.write_strings("/ice/framework", frameworks, "F");
  out.write_strings("/ice/llm", llm_names, "R");
  out.write("/ice/intelligence", iv.data(), {nr}, "R");
  out.write("/ice/gap", gap.data(), {nf, nr}, "F,R");
  out.write("/ice/performance", perf.data(), {nf, nr}, "F,R");
  out.write("/ice/slope", slope.data(), {nf}, "F");
  out.write("/ice/slope_se", slope_se.data(), {nf}, "F");
  out.write("/ice/ahi", ahi_mean.data(), {nf}, "F");
  out.attr("/", "eps", o.eps);
  out.attr("/", "problem", *problems.begin());
  out.attr("/", "runs", static_cast<int64_t>(runs.size()));

  if (!o.plot.empty()) {
    std::vector<nk::plot::Series> series;
    for (int64_t f = 0; f < nf; ++f) {
      nk::plot::Series s;
      char label[96];
      std::snprintf(label, sizeof label, "%s (ICE %.3g)", frameworks[f].c_str(), slope[f]);
      s.name = label;
      s.x = iv;
      s.y.assign(perf.begin() + f * nr, perf.begin() + (f + 1) * nr);
      s.markers = true;
      series.push_back(s);
    }
    nk::plot::Axes axes;
    axes.title = *problems.begin() + ": P = 1/(gap + " + std::to_string(o.eps).substr(0, 4) + ") against capability I";
    axes.xlabel = "I (surrogate rung's exam, weakest = 1)";
    axes.ylabel = "P";
    const std::string svg = nk::plot::line_plot_svg(axes, series);
    nk::write_output_bytes(o.plot, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  }
  out.commit();
  for (int64_t f = 0; f < nf; ++f) {
    spdlog::info("{}: ICE {:.4g} +- {:.2g}, AHI {:.3f}", frameworks[f], slope[f], slope_se[f], ahi_mean[f]);
  }
}

}  // namespace sevol
