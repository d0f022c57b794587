// sweep.cpp - every method (and every tau and loss) on one task file, run by
// run (--shard I/N takes a contiguous slice of the grid), and the report:
// plateau accuracy, tokens to reach on-policy's plateau, savings, teacher
// fraction, forgetting and speed per method, with the SVGs.
#include <algorithm>
#include <cmath>
#include <map>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "nk/table.hpp"
#include "ssd-distill/rollout.hpp"

namespace ssd {

namespace {

inline constexpr const char* kRunDims = "R";
inline constexpr const char* kSweepCurveDims = "R,E";

std::string config_name(const std::string& method, const std::string& loss, double tau) {
  std::string s = method;
  if (method == "ssd") s += fmt::format(" tau {:.3g}", tau);
  if (method != "off-sft") s += " " + loss;
  return s;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  int64_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) s += x, ++n;
  return n ? s / static_cast<double>(n) : std::nan("");
}

double stdev(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  int64_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) s += (x - m) * (x - m), ++n;
  return n > 1 ? std::sqrt(s / static_cast<double>(n - 1)) : std::nan("");
}

std::string num(double v, const char* format) {
  return std::isfinite(v) ? nk::cell(v, format) : "-";
}

}  // namespace

std::vector<SweepRun> sweep_grid(const SweepOptions& o) {
  std::vector<SweepRun> runs;
  for (int64_t seed = 0; seed < o.seeds; ++seed)
    for (const std::string& m : o.methods) {
      parse_method(m);
      if (m == "off-sft") {
        runs.push_back({m, "ce", std::nan(""), seed});
        continue;
      }
      for (const std::string& loss : o.losses) {
        parse_divergence(loss);
        if (m == "ssd")
          for (double tau : o.taus) runs.push_back({m, loss, tau, seed});
        else
          runs.push_back({m, loss, std::nan(""), seed});
      }
    }
  return runs;
}

void sweep_verb(const SweepOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  if (o.train.eval_every < 1) throw nk::usage_error("--eval-every must be at least 1 in a sweep (the curves)");
  nk::lm::CausalModel m = nk::lm::load_causal_model(o.train.model);
  const Tasks t = read_tasks(o.train.input);
  check_train(m, t, o.train);
  const std::vector<SweepRun> grid = sweep_grid(o);
  const auto [first, last] = nk::shard_range(env.shard, static_cast<int64_t>(grid.size()));
  const nk::lm::Tokenizer& tok = m.tokenizer();
  const nk::lm::ParameterStore initial = m.checkpoint.weights;
  // The references every shard writes alike: the base student closed-book,
  // the teacher open-book (the ceiling), the base perplexity.
  const nk::lm::Model base(initial);
  const double base_acc = accuracy(base, tok, t, "test", false, o.train.max_new);
  const double teacher_acc = accuracy(base, tok, t, "test", true, o.train.max_new);
  const std::vector<std::string> general = nk::lm::general_text("", o.ppl_docs);
  const double base_ppl = o.ppl_docs > 0 ? nk::lm::perplexity(base, tok, general) : std::nan("");
  spdlog::info("sweep: {} runs of {} ({} this shard); base closed-book accuracy {:.3f}, teacher open-book {:.3f}",
               grid.size(), t.task, last - first, base_acc, teacher_acc);

  std::vector<std::string> method, loss;
  std::vector<double> tau, ppl, seconds;
  std::vector<int64_t> seed, supervised, teacher_fwd, student_fwd, prefill;
  std::vector<Curve> curves;
  nk::Progress progress("sweep", last - first);
  for (int64_t k = first; k < last; ++k) {
    const SweepRun& r = grid[static_cast<size_t>(k)];
    TrainOptions to = o.train;
    to.method = r.method;
    to.loss = r.method == "off-sft" ? "fkl" : r.loss;
    to.tau = std::isfinite(r.tau) ? r.tau : o.train.tau;
    const uint64_t run_seed = env.seed + static_cast<uint64_t>(r.seed);
    nk::lm::ParameterStore weights = initial;
    const TrainRun run = distill(weights, tok, t, to, run_seed, false);
    const nk::lm::Model student(weights);
    method.push_back(r.method);
    loss.push_back(r.loss);
    tau.push_back(r.tau);
    seed.push_back(static_cast<int64_t>(run_seed));
    ppl.push_back(o.ppl_docs > 0 ? nk::lm::perplexity(student, tok, general) : std::nan(""));
    seconds.push_back(run.seconds_per_step);
    supervised.push_back(run.supervised);
    teacher_fwd.push_back(run.teacher_forward);
    student_fwd.push_back(run.student_forward);
    prefill.push_back(run.prefill);
    curves.push_back(run.curve);
    spdlog::info("sweep {}/{}: {} seed {}: test accuracy {:.3f} -> {:.3f}, teacher fraction {:.3f}, {:.3f} s a step",
                 k + 1, grid.size(), config_name(r.method, r.loss, r.tau), run_seed, run.curve.test_accuracy.front(),
                 run.curve.test_accuracy.back(), run.curve.teacher_fraction.back(), run.seconds_per_step);
    progress.update(k - first + 1);
  }
  progress.finish();

  const int64_t R = static_cast<int64_t>(method.size());
  const int64_t E = curves.empty() ? 0 : static_cast<int64_t>(curves.front().step.size());
  nk::h5::Writer w(o.output, kSweepSchema, o.no_clobber);
  w.write_strings("/runs/method", method, kRunDims);
  w.write_strings("/runs/loss", loss, kRunDims);
  w.allow_nonfinite("/runs/tau");
  w.write("/runs/tau", tau.data(), {R}, kRunDims);
  w.write("/runs/seed", seed.data(), {R}, kRunDims);
  w.allow_nonfinite("/runs/ppl");
  w.write("/runs/ppl", ppl.data(), {R}, kRunDims);
  w.write("/runs/seconds_per_step", seconds.data(), {R}, kRunDims);
  w.write("/runs/supervised_total", supervised.data(), {R}, kRunDims);
  w.write("/runs/teacher_forward_total", teacher_fwd.data(), {R}, kRunDims);
  w.write("/runs/student_forward_total", student_fwd.data(), {R}, kRunDims);
  w.write("/runs/document_prefill_total", prefill.data(), {R}, kRunDims);
  for (const auto& [name, member] : curve_columns()) {
    std::vector<double> flat;
    for (const Curve& c : curves) flat.insert(flat.end(), (c.*member).begin(), (c.*member).end());
    const std::string path = std::string("/runs/") + name;
    w.allow_nonfinite(path);
    w.write(path, flat.data(), {R, E}, kSweepCurveDims);
  }
  w.attr("/runs", "task", t.task);
  w.attr("/runs", "tasks", t.path);
  w.attr("/runs", "model", o.train.model);
  w.attr("/runs", "base_accuracy", base_acc);
  w.attr("/runs", "teacher_accuracy", teacher_acc);
  w.attr("/runs", "base_ppl", base_ppl);
  w.attr("/runs", "steps", o.train.steps);
  w.attr("/runs", "batch", o.train.batch);
  w.attr("/runs", "lr", o.train.lr);
  w.attr("/runs", "eval_every", o.train.eval_every);
  w.attr("/runs", "max_new", o.train.max_new);
  w.attr("/runs", "temperature", o.train.temperature);
  w.commit();
  if (env.shard.whole()) {
    Sweep s;
    s.path = o.output;
    s.base = {t.task, base_acc, teacher_acc, base_ppl};
    for (size_t i = 0; i < method.size(); ++i)
      s.runs.push_back({method[i], loss[i], tau[i], seed[i], ppl[i], seconds[i], curves[i]});
    ReportOptions ro;
    ro.svg = o.svg;
    ro.no_clobber = o.no_clobber;
    report(s, ro, o.output == "-" ? stderr : stdout);
  }
}

Sweep read_sweep(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema(kSweepSchema);
  Sweep s;
  s.path = path;
  const std::vector<std::string> method = f.read_strings("/runs/method"), loss = f.read_strings("/runs/loss");
  const int64_t R = static_cast<int64_t>(method.size());
  const auto column = [&](const std::string& name) {
    const nk::h5::Array<double> a = f.read<double>("/runs/" + name);
    if (a.rank() != 1 || a.shape[0] != R)
      throw nk::input_error(path, "/runs/" + name, "must have one value per run (" + std::to_string(R) + ")");
    return a.data;
  };
  if (static_cast<int64_t>(loss.size()) != R)
    throw nk::input_error(path, "/runs/loss", "must have one value per run (" + std::to_string(R) + ")");
  const std::vector<double> tau = column("tau"), ppl = column("ppl"), seconds = column("seconds_per_step");
  const nk::h5::Array<int64_t> seed = f.read<int64_t>("/runs/seed");
  if (seed.size() != R) throw nk::input_error(path, "/runs/seed", "must have one value per run");
  std::vector<nk::h5::Array<double>> cols;
  int64_t E = -1;
  for (const auto& [name, member] : curve_columns()) {
    const std::string d = std::string("/runs/") + name;
    cols.push_back(f.read<double>(d));
    const auto& a = cols.back();
    if (a.rank() != 2 || a.shape[0] != R || (E >= 0 && a.shape[1] != E))
      throw nk::input_error(path, d, "must be [runs, evaluations] like /runs/step");
    E = a.shape[1];
  }
  for (int64_t r = 0; r < R; ++r) {
    Curve c;
    size_t k = 0;
    for (const auto& [name, member] : curve_columns()) {
      const auto& a = cols[k++];
      (c.*member).assign(a.data.begin() + r * E, a.data.begin() + (r + 1) * E);
    }
    const size_t u = static_cast<size_t>(r);
    s.runs.push_back({method[u], loss[u], tau[u], seed.data[u], ppl[u], seconds[u], std::move(c)});
  }
  s.base.task = f.attr_string("/runs", "task").value_or("");
  s.base.accuracy = f.attr_number("/runs", "base_accuracy").value_or(std::nan(""));
  s.base.teacher_accuracy = f.attr_number("/runs", "teacher_accuracy").value_or(std::nan(""));
  s.base.ppl = f.attr_number("/runs", "base_ppl").value_or(std::nan(""));
  return s;
}

std::vector<ConfigSummary> summarise(const Sweep& s) {
  const auto plateau = [](const Curve& c) {
    const size_t n = c.test_accuracy.size(), k = std::min<size_t>(3, n);
    double sum = 0;
    for (size_t i = n - k; i < n; ++i) sum += c.test_accuracy[i];
    return k ? sum / static_cast<double>(k) : std::nan("");
  };
  // A* per seed: on-policy's plateau (the mean over its runs of that seed,
  // else over all its runs); the target is A* - 1 point.
  std::map<int64_t, std::vector<double>> on_by_seed;
  std::vector<double> on_all;
  for (const SweepResult& r : s.runs)
    if (r.method == "on-policy") on_by_seed[r.seed].push_back(plateau(r.curve)), on_all.push_back(plateau(r.curve));
  const auto target = [&](int64_t seed) {
    const auto it = on_by_seed.find(seed);
    return (it != on_by_seed.end() ? mean(it->second) : mean(on_all)) - 0.01;
  };
  // Tokens to the target; NaN when never reached, or when the target is not
  // above the base student's accuracy (nothing learnt to count tokens for).
  const auto reach = [&](const SweepResult& r, std::vector<double> Curve::*counter) {
    const double a = target(r.seed);
    if (!(a > s.base.accuracy)) return std::nan("");
    for (size_t e = 0; e < r.curve.test_accuracy.size(); ++e)
      if (r.curve.test_accuracy[e] >= a) return (r.curve.*counter)[e];
    return std::nan("");
  };
  // Tokens on-policy needed per seed (the savings' denominator).
  std::map<int64_t, std::vector<double>> on_tokens;
  for (const SweepResult& r : s.runs)
    if (r.method == "on-policy") on_tokens[r.seed].push_back(reach(r, &Curve::supervised));
  std::vector<ConfigSummary> out;
  std::map<std::string, size_t> index;
  for (const SweepResult& r : s.runs) {
    const std::string name = config_name(r.method, r.loss, r.tau);
    if (!index.count(name)) {
      index[name] = out.size();
      ConfigSummary c;
      c.name = name, c.method = r.method, c.loss = r.loss, c.tau = r.tau;
      out.push_back(std::move(c));
    }
    ConfigSummary& c = out[index[name]];
    ++c.runs;
    c.plateau.push_back(plateau(r.curve));
    c.reached.push_back(c.plateau.back() >= target(r.seed) ? 1.0 : 0.0);
    c.tokens.push_back(reach(r, &Curve::supervised));
    c.teacher_tokens.push_back(reach(r, &Curve::teacher_forward));
    const auto on = on_tokens.find(r.seed);
    const double base = on != on_tokens.end() ? mean(on->second) : std::nan("");
    c.savings.push_back(1.0 - c.tokens.back() / base);
    c.fraction_first.push_back(r.curve.teacher_fraction.size() > 1 ? r.curve.teacher_fraction[1] : std::nan(""));
    c.fraction_last.push_back(r.curve.teacher_fraction.empty() ? std::nan("") : r.curve.teacher_fraction.back());
    c.ppl_change.push_back(r.ppl - s.base.ppl);
    c.seconds.push_back(r.seconds_per_step);
  }
  return out;
}

void report(const Sweep& s, const ReportOptions& o, FILE* to) {
  const std::vector<ConfigSummary> sum = summarise(s);
  const double ceiling = s.base.teacher_accuracy;
  std::vector<std::vector<std::string>> rows;
  for (const ConfigSummary& c : sum) {
    const double p = mean(c.plateau);
    rows.push_back(
        {c.name, nk::cell(static_cast<long long>(c.runs)),
         num(p, "%.3f") + (c.runs > 1 ? " +- " + num(stdev(c.plateau), "%.3f") : ""), num(p / ceiling, "%.2f"),
         nk::cell(static_cast<long long>(std::llround(mean(c.reached) * static_cast<double>(c.runs)))) + "/" +
             std::to_string(c.runs),
         num(mean(c.tokens), "%.0f"), num(mean(c.teacher_tokens), "%.0f"), num(100 * mean(c.savings), "%+.1f%%"),
         num(mean(c.fraction_first), "%.3f"), num(mean(c.fraction_last), "%.3f"), num(mean(c.ppl_change), "%+.2f"),
         num(mean(c.seconds), "%.3f")});
  }
  std::fprintf(to, "%s: base closed-book accuracy %.3f, teacher open-book %.3f (the ceiling), base perplexity %.2f\n",
               s.base.task.c_str(), s.base.accuracy, ceiling, s.base.ppl);
  nk::Table::print(to,
                   {"method", "runs", "plateau", "of_teacher", "reach", "tokens_to_A*-1", "teacher_tokens", "savings",
                    "teacher_frac_first", "teacher_frac_last", "ppl_change", "s_per_step"},
                   rows, nk::Table::Layout::automatic, {0});
  std::fflush(to);
  if (!o.output.empty()) {
    nk::h5::Writer w(o.output, kReportSchema, o.no_clobber);
    std::vector<std::string> names;
    std::vector<double> cols[9];
    for (const ConfigSummary& c : sum) {
      names.push_back(c.name);
      const double v[9] = {mean(c.plateau),        stdev(c.plateau),   mean(c.tokens),
                           mean(c.teacher_tokens), mean(c.savings),    mean(c.fraction_first),
                           mean(c.fraction_last),  mean(c.ppl_change), mean(c.seconds)};
      for (int k = 0; k < 9; ++k) cols[k].push_back(v[k]);
    }
    const int64_t C = static_cast<int64_t>(names.size());
    w.write_strings("/report/config", names, "C");
    const char* col_names[9] = {"plateau",
                                "plateau_sd",
                                "tokens_to_target",
                                "teacher_tokens",
                                "savings",
                                "teacher_fraction_first",
                                "teacher_fraction_last",
                                "ppl_change",
                                "seconds_per_step"};
    for (int k = 0; k < 9; ++k) {
      const std::string path = std::string("/report/") + col_names[k];
      w.allow_nonfinite(path);
      w.write(path, cols[k].data(), {C}, "C");
    }
    w.attr("/report", "task", s.base.task);
    w.attr("/report", "base_accuracy", s.base.accuracy);
    w.attr("/report", "teacher_accuracy", s.base.teacher_accuracy);
    w.attr("/report", "base_ppl", s.base.ppl);
    w.attr("/report", "sweep", s.path);
    w.commit();
  }
  if (o.svg.empty()) return;
  // Mean curves over each configuration's seeds (x: mean supervised tokens, or the step).
  std::vector<nk::plot::Series> acc, frac;
  for (const ConfigSummary& c : sum) {
    nk::plot::Series a, f;
    a.name = f.name = c.name;
    a.markers = f.markers = true;
    a.dashed = f.dashed = c.method != "ssd";
    size_t E = 0;
    std::vector<const SweepResult*> mine;
    for (const SweepResult& r : s.runs)
      if (config_name(r.method, r.loss, r.tau) == c.name) mine.push_back(&r), E = r.curve.step.size();
    for (size_t e = 0; e < E; ++e) {
      std::vector<double> x, y, st, fr;
      for (const SweepResult* r : mine) {
        x.push_back(r->curve.supervised[e]);
        y.push_back(r->curve.test_accuracy[e]);
        st.push_back(r->curve.step[e]);
        fr.push_back(r->curve.teacher_fraction[e]);
      }
      a.x.push_back(mean(x)), a.y.push_back(mean(y));
      if (e > 0) f.x.push_back(mean(st)), f.y.push_back(mean(fr));
    }
    acc.push_back(std::move(a));
    if (c.method != "on-policy") frac.push_back(std::move(f));  // on-policy's is 0 throughout
  }
  nk::plot::Axes ax;
  ax.title = s.base.task + ": closed-book test accuracy vs supervised tokens";
  ax.xlabel = "supervised tokens";
  ax.ylabel = "test accuracy (held-out questions)";
  const std::string a_svg = nk::plot::line_plot_svg(ax, acc);
  nk::write_output_bytes(o.svg + "-accuracy.svg", std::vector<unsigned char>(a_svg.begin(), a_svg.end()), o.no_clobber);
  ax.title = s.base.task + ": share of tokens the teacher wrote";
  ax.xlabel = "step";
  ax.ylabel = "teacher fraction";
  const std::string f_svg = nk::plot::line_plot_svg(ax, frac);
  nk::write_output_bytes(o.svg + "-teacher.svg", std::vector<unsigned char>(f_svg.begin(), f_svg.end()), o.no_clobber);
}

void report_verb(const ReportOptions& o, const nk::RunEnv&) {
  report(read_sweep(o.input), o, stdout);
}

}  // namespace ssd
