// extras.cpp - relearn (robustness to relearning), sequential (many
// unlearning requests one after another) and pareto (the forget/utility
// trade-off of every checkpoint, fronts, hypervolumes and an SVG).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "shred-unlearn/shred.hpp"

namespace shred {

namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? std::nan("") : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

void relearn_verb(const RelearnOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  if (!(o.fraction > 0 && o.fraction < 1)) throw nk::usage_error("relearn: --fraction must be in (0, 1)");
  LoadedModel un = load_model(o.model);
  const LoadedModel target = load_model(o.target);
  const Tofu t = open_tofu(o.input);
  std::vector<int64_t> rows = t.split(o.split);
  const int64_t n = static_cast<int64_t>(rows.size());
  if (n < 2)
    throw nk::input_error(t.path, "/splits/" + o.split,
                          "has " + std::to_string(n) + " rows; relearning needs 2 or more");
  const int64_t k = std::clamp<int64_t>(std::llround(o.fraction * static_cast<double>(n)), 1, n - 1);
  nk::Rng rng = nk::Rng(env.seed).split(0x2e1ea);
  nk::shuffle_prefix(rows, static_cast<size_t>(k), rng);
  std::vector<int64_t> learn(rows.begin(), rows.begin() + k), held(rows.begin() + k, rows.end());
  std::sort(learn.begin(), learn.end());
  std::sort(held.begin(), held.end());
  const std::vector<double> r_target =
      rouge_on_rows(nk::lm::Model(target.checkpoint.weights), target.tokenizer(), t, t.qa, held);
  const std::vector<double> r_before =
      rouge_on_rows(nk::lm::Model(un.checkpoint.weights), un.tokenizer(), t, t.qa, held);
  train_answers(un.checkpoint.weights, qa_sequences(un.tokenizer(), t.qa, learn, un.config().max_seq, t.path, "/qa"),
                o.steps, o.batch, o.lr, env.seed);
  const std::vector<double> r_after =
      rouge_on_rows(nk::lm::Model(un.checkpoint.weights), un.tokenizer(), t, t.qa, held);
  const double rt = mean_of(r_target), rb = mean_of(r_before), ra = mean_of(r_after);
  const double recovery = rt - rb > 1e-12 ? (ra - rb) / (rt - rb) : std::nan("");
  nk::h5::Writer w(o.output, kRelearnSchema, o.no_clobber);
  const int64_t h = static_cast<int64_t>(held.size());
  w.write("/relearn/rows_relearned", learn.data(), {k}, "n");
  w.write("/relearn/rows_held", held.data(), {h}, "n");
  w.write("/relearn/rouge_target", r_target.data(), {h}, "n");
  w.write("/relearn/rouge_unlearned", r_before.data(), {h}, "n");
  w.write("/relearn/rouge_after", r_after.data(), {h}, "n");
  w.attr("/relearn", "recovery", recovery);
  w.attr("/relearn", "rouge_target", rt);
  w.attr("/relearn", "rouge_unlearned", rb);
  w.attr("/relearn", "rouge_after", ra);
  w.attr("/", "split", o.split);
  w.attr("/", "fraction", o.fraction);
  w.attr("/", "steps", o.steps);
  w.attr("/", "model", o.model);
  w.commit();
  spdlog::info(
      "relearn: {} of {} forget rows relearned for {} steps; ROUGE-L on the other {}: target {:.3f}, unlearned {:.3f}, "
      "after {:.3f}: recovery {:.3f}",
      k, n, o.steps, h, rt, rb, ra, recovery);
}

void sequential_verb(const SequentialOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  LoadedModel m = load_model(o.model);
  const Tofu t = open_tofu(o.input);
  UnlearnConfig c = o.config;
  c.method = parse_method(o.method);
  c.seed = env.seed;
  c.select.seed = env.seed;
  parse_demote(o.demote, c.select);
  const std::vector<int64_t>& split = t.split(o.split);
  const std::vector<int64_t> authors = t.authors_of(split);
  const int64_t A = static_cast<int64_t>(authors.size());
  if (o.requests < 1 || o.requests > A)
    throw nk::usage_error("sequential: --requests " + std::to_string(o.requests) + " must be in 1.." +
                          std::to_string(A) + " (the authors of " + o.split + ")");
  std::vector<Sequence> retain;
  if (needs_retain(c.method)) {
    const std::vector<int64_t> rows = t.retain_rows(o.split);
    if (rows.empty())
      throw nk::input_error(t.path, "/splits/" + o.split,
                            "leaves no retain rows, and --method " + o.method + " needs them");
    retain = qa_sequences(m.tokenizer(), t.qa, rows, m.config().max_seq, t.path, "/qa");
  }
  EvalConfig ec = o.eval;
  ec.split = o.split;
  const std::vector<std::string> general = general_text(ec.ppl_text, ec.ppl_docs);
  nk::lm::ParameterStore& weights = m.checkpoint.weights;
  const nk::lm::Model model(weights);
  std::vector<double> req, util, rouge_done, rouge_split, rprob, ppl;
  std::set<int64_t> done_authors;
  const auto record = [&](int64_t r) {
    const EvalResult e = evaluate(model, m.tokenizer(), t, ec, {}, general);
    const SetEval& f = e.sets.at("forget");
    std::vector<double> done;
    for (size_t i = 0; i < f.rows.size(); ++i)
      if (done_authors.count(t.qa.author[static_cast<size_t>(f.rows[i])])) done.push_back(f.rouge_l[i]);
    req.push_back(static_cast<double>(r)), util.push_back(e.model_utility), rouge_done.push_back(mean_of(done));
    rouge_split.push_back(e.forget_rouge()), rprob.push_back(e.retain_prob()), ppl.push_back(e.ppl_general);
    spdlog::info(
        "sequential: after request {}: utility {:.4f}, forget ROUGE-L {:.3f} on the requests so far, {:.3f} on {}", r,
        e.model_utility, rouge_done.back(), e.forget_rouge(), o.split);
  };
  record(0);
  nk::Progress progress("sequential", o.requests);
  for (int64_t r = 0; r < o.requests; ++r) {
    std::vector<int64_t> part_authors(authors.begin() + r * A / o.requests, authors.begin() + (r + 1) * A / o.requests);
    std::vector<int64_t> rows;
    for (int64_t row : split)
      if (std::find(part_authors.begin(), part_authors.end(), t.qa.author[static_cast<size_t>(row)]) !=
          part_authors.end())
        rows.push_back(row);
    Unlearner un(weights, qa_sequences(m.tokenizer(), t.qa, rows, m.config().max_seq, t.path, "/qa"), retain, c);
    un.run({});
    done_authors.insert(part_authors.begin(), part_authors.end());
    record(r + 1);
    progress.update(r + 1);
  }
  progress.finish();
  nk::h5::Writer w(o.output, kSequentialSchema, o.no_clobber);
  write_columns(w, "/sequential",
                {{"request", &req},
                 {"model_utility", &util},
                 {"forget_rouge_l_done", &rouge_done},
                 {"forget_rouge_l_split", &rouge_split},
                 {"retain_prob", &rprob},
                 {"ppl_general", &ppl}});
  w.attr("/", "method", o.method);
  w.attr("/", "split", o.split);
  w.attr("/", "requests", o.requests);
  w.attr("/", "steps", c.steps);
  w.attr("/", "lr", c.lr);
  w.attr("/", "model", o.model);
  w.commit();
}

double hypervolume(std::vector<std::pair<double, double>> pts, double x_ref, double y_ref) {
  std::erase_if(pts, [&](const auto& p) { return !(p.first > x_ref && p.second > y_ref); });
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  double hv = 0, top = y_ref;
  for (const auto& [x, y] : pts)
    if (y > top) hv += (x - x_ref) * (y - top), top = y;
  return hv;
}

void pareto_verb(const ParetoOptions& o, const nk::RunEnv& env) {
  (void)env;
  check_output(o.output, o.no_clobber);
  struct Point {
    std::string method, file;
    double lr, step, x, y;
  };
  std::vector<Point> pts;
  std::map<std::string, std::vector<size_t>> by_method;
  for (const std::string& path : o.curves) {
    const nk::h5::File f = nk::h5::File::open(path);
    f.require_schema(kCurveSchema);
    const auto method = f.attr_string("/", "method");
    if (!method) throw nk::input_error(path, "/", "has no attribute method");
    const double lr = f.attr_number("/", "lr").value_or(std::nan(""));
    const std::vector<double> step = f.read<double>("/curve/step", 1, "n").data;
    const std::vector<double> fq = f.read<double>("/curve/forget_quality", 1, "n").data;
    const std::vector<double> ut = f.read<double>("/curve/model_utility", 1, "n").data;
    if (fq.size() != step.size() || ut.size() != step.size())
      throw nk::input_error(path, "/curve/forget_quality", "its length differs from /curve/step's");
    for (size_t i = 0; i < step.size(); ++i) {
      if (step[i] <= 0) continue;  // the target itself
      if (!std::isfinite(fq[i]) || !(fq[i] > 0) || !std::isfinite(ut[i]))
        throw nk::input_error(path, "/curve/forget_quality",
                              "point " + std::to_string(i) + " has no forget quality (run with --reference)");
      by_method[*method].push_back(pts.size());
      pts.push_back({*method, path, lr, step[i], std::log10(fq[i]), ut[i]});
    }
  }
  if (pts.empty()) throw nk::usage_error("pareto: the curves hold no checkpoint (steps > 0)");
  const nk::h5::File target = nk::h5::File::open(o.target);
  target.require_schema(kEvalSchema);
  const double x_ref = std::log10(target.attr_number("/eval", "forget_quality").value_or(std::nan("")));
  if (!std::isfinite(x_ref))
    throw nk::input_error(o.target, "/eval", "has no finite forget_quality (eval the target with --reference)");
  double star_x = std::nan(""), star_y = std::nan("");
  if (!o.retain.empty()) {
    const nk::h5::File r = nk::h5::File::open(o.retain);
    r.require_schema(kEvalSchema);
    star_x = 0.0;  // the retain model against itself: p = 1
    star_y = r.attr_number("/eval", "model_utility").value_or(std::nan(""));
  }
  std::vector<std::string> methods;
  std::vector<double> hv, dist, undominated;
  for (const auto& [method, idx] : by_method) {
    std::vector<std::pair<double, double>> xy;
    double best = std::numeric_limits<double>::infinity();
    for (size_t i : idx) {
      xy.emplace_back(pts[i].x, pts[i].y);
      if (std::isfinite(star_y)) best = std::min(best, std::hypot(pts[i].x - star_x, pts[i].y - star_y));
    }
    int64_t free = 0;  // points of this method no point of another method dominates
    for (size_t i : idx) {
      bool dominated = false;
      for (const Point& q : pts)
        if (q.method != method && q.x >= pts[i].x && q.y >= pts[i].y && (q.x > pts[i].x || q.y > pts[i].y))
          dominated = true;
      free += !dominated;
    }
    methods.push_back(method);
    hv.push_back(hypervolume(xy, x_ref, 0.0));
    dist.push_back(std::isfinite(best) ? best : std::nan(""));
    undominated.push_back(static_cast<double>(free));
    spdlog::info(
        "pareto: {}: {} checkpoints, hypervolume {:.4f}, {} not dominated by another method, distance to the retain "
        "model {:.3f}",
        method, idx.size(), hv.back(), free, dist.back());
  }
  if (!o.plot.empty()) {
    std::vector<nk::plot::Series> series;
    for (const auto& [method, idx] : by_method) {
      nk::plot::Series s;
      s.name = method;
      s.markers = true;
      std::vector<size_t> order = idx;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pts[a].x < pts[b].x; });
      for (size_t i : order) s.x.push_back(pts[i].x), s.y.push_back(pts[i].y);
      series.push_back(s);
    }
    if (std::isfinite(star_y)) series.push_back({"retain model", {star_x}, {star_y}, false, true, false});
    series.push_back({"target (reference)", {x_ref}, {0.0}, false, true, true});
    const std::string svg = nk::plot::line_plot_svg(
        {"Forget quality vs utility (every checkpoint)", "log10 forget quality", "model utility"}, series);
    nk::write_output_bytes(o.plot, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  }
  nk::h5::Writer w(o.output, kParetoSchema, o.no_clobber);
  const int64_t n = static_cast<int64_t>(pts.size()), k = static_cast<int64_t>(methods.size());
  std::vector<std::string> pm, pf;
  std::vector<double> px, py, plr, pstep;
  for (const Point& p : pts)
    pm.push_back(p.method), pf.push_back(p.file), px.push_back(p.x), py.push_back(p.y), plr.push_back(p.lr),
        pstep.push_back(p.step);
  w.write_strings("/points/method", pm, "n");
  w.write_strings("/points/file", pf, "n");
  w.write("/points/log10_forget_quality", px.data(), {n}, "n");
  w.write("/points/model_utility", py.data(), {n}, "n");
  w.allow_nonfinite("/points/lr");
  w.write("/points/lr", plr.data(), {n}, "n");
  w.write("/points/step", pstep.data(), {n}, "n");
  w.write_strings("/methods/name", methods, "m");
  w.write("/methods/hypervolume", hv.data(), {k}, "m");
  w.allow_nonfinite("/methods/distance_to_retain");
  w.write("/methods/distance_to_retain", dist.data(), {k}, "m");
  w.write("/methods/undominated", undominated.data(), {k}, "m");
  w.attr("/", "reference_log10_forget_quality", x_ref);
  w.commit();
}

}  // namespace shred
