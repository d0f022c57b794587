// eval.cpp - the eval verb: every method side by side on calibration/test
// splits of one labelled pool, against a reference CERTIFY of the same pool.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "proxy-certify/proxy.hpp"
#include "proxy-certify/proxy_certify.hpp"
#include "proxy-certify/stats.hpp"

namespace pc {

namespace {

struct Reference {
  std::vector<int64_t> pred;
  std::vector<double> radius;
  int64_t n0 = 0, n = 0;
  double alpha = 0, sigma = 0, seconds_per_item = 0;
};

Reference read_reference(const std::string& path, int64_t count) {
  const nk::h5::File file = nk::h5::File::open(path);
  file.require_schema(kCertifySchema);
  for (const char* d : {"/certify/pred", "/certify/radius", "/certify/index"}) file.require(d);
  Reference ref;
  ref.pred = file.read<int64_t>("/certify/pred", 1, "N").data;
  ref.radius = file.read<double>("/certify/radius", 1, "N").data;
  const std::vector<int64_t> index = file.read<int64_t>("/certify/index", 1, "N").data;
  if (static_cast<int64_t>(ref.pred.size()) != count || ref.radius.size() != ref.pred.size() || index.size() != ref.pred.size()) {
    throw nk::input_error(path, "/certify/pred", "has " + std::to_string(ref.pred.size()) + " items, the pool has " +
                                                     std::to_string(count) + " (certify the whole pool, or merge its shards)");
  }
  for (int64_t i = 0; i < count; ++i) {
    if (index[i] != i) throw nk::input_error(path, "/certify/index", "entry " + std::to_string(i) + " is " + std::to_string(index[i]) + ": items out of order");
    if (!(ref.radius[i] >= 0) || !std::isfinite(ref.radius[i])) throw nk::input_error(path, "/certify/radius", "entry " + std::to_string(i) + " is negative or not finite");
  }
  ref.n0 = static_cast<int64_t>(file.attr_number("/certify", "n0").value_or(0));
  ref.n = static_cast<int64_t>(file.attr_number("/certify", "n").value_or(0));
  ref.alpha = file.attr_number("/certify", "alpha").value_or(0);
  ref.sigma = file.attr_number("/certify", "sigma").value_or(0);
  if (ref.n < 1 || !(ref.alpha > 0 && ref.alpha < 0.5) || !(ref.sigma > 0)) {
    throw nk::input_error(path, "/certify", "attributes n, alpha and sigma are missing or out of range");
  }
  ref.seconds_per_item = file.attr_number("/certify", "seconds").value_or(0) / static_cast<double>(count);
  return ref;
}

// One method's decisions on every pool item at one radius.
struct Decision {
  std::vector<uint8_t> approve;
  std::vector<int64_t> cls;
};

struct Row {
  std::string name;
  std::vector<double> accuracy, fa, fa_low, fa_high, approval, forwards, seconds;
  std::vector<double> fa_square, fa_sd;  ///< mean of the squared per-split FA; its spread over the splits
};

}  // namespace

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  if (!(o.target > 0 && o.target < 1)) throw nk::usage_error("--target must lie in (0, 1)");
  if (o.radii.empty()) throw nk::usage_error("--radii needs at least one radius");
  for (double r : o.radii)
    if (!(r > 0) || !std::isfinite(r)) throw nk::usage_error("--radii must be positive");
  nk::data::Options accept;
  accept.labels = nk::data::Labels::required;
  const nk::data::Source pool = nk::data::Source::open(o.input, accept);
  const int64_t count = pool.count();
  nk::data::check_run_items(pool.path(), pool.dataset(), count);
  if (o.calibration < 1 || o.calibration >= count) {
    throw nk::usage_error("--calibration must leave test items: 1 <= " + std::to_string(o.calibration) + " < " + std::to_string(count));
  }
  auto model = open_classifier(o.model, item_shape(pool), o.batch);
  require_same_shape(*model, pool);
  const Reference ref = read_reference(o.reference, count);
  const double sigma = ref.sigma;
  const std::vector<int64_t>& label = pool.labels();

  // Everything a method needs per item, computed once for all splits.
  nk::Stopwatch clock;
  const bool with_head = !o.head_data.empty();
  Head head;
  if (with_head) {
    nk::data::Options unlabeled;
    unlabeled.labels = nk::data::Labels::ignore;
    const nk::data::Source head_data = nk::data::Source::open(o.head_data, unlabeled);
    require_same_shape(*model, head_data);
    head = train_head(*model, head_data, ref.n0, o.head_n, ref.alpha, sigma, env.seed, o.batch, env.device);
  }
  clock.restart();
  const CleanPass pass = clean_pass(*model, pool, 0, count, with_head);
  const double clean_seconds = clock.seconds() / static_cast<double>(count);
  const std::vector<double> head_score = with_head ? head.scores(pass) : std::vector<double>();
  std::vector<uint8_t> miss(static_cast<size_t>(count));
  std::vector<Certificate> cheap(static_cast<size_t>(count));
  Smoother single(*model, sigma, env.seed, o.batch, env.device);
  // The cheap CERTIFY draws its own noise (not the first samples of the reference's).
  Smoother cheap_smoother(*model, sigma, nk::mix64(env.seed + 2), o.batch, env.device);
  double single_seconds = 0, cheap_seconds = 0;
  nk::Progress progress("eval", count);
  for (int64_t i = 0; i < count; ++i) {
    const nk::h5::Array<float> x = pool.read_item(i);
    clock.restart();
    miss[i] = single.counts(x.data.data(), i, Phase::calibration, 1)[static_cast<size_t>(pass.cls[i])] == 0;
    single_seconds += clock.lap();
    cheap[i] = certify(cheap_smoother, x.data.data(), i, ref.n0, o.cheap_n, ref.alpha);
    cheap_seconds += clock.lap();
    progress.update(i + 1);
  }
  progress.finish();
  single_seconds /= static_cast<double>(count);
  cheap_seconds /= static_cast<double>(count);

  const int64_t R = static_cast<int64_t>(o.radii.size()), ncal = o.calibration, ntest = count - ncal;
  std::vector<std::string> names = {"certify n=" + std::to_string(ref.n), "certify-cheap n=" + std::to_string(o.cheap_n),
                                    "uncalibrated", "margin-single", "margin-heavy"};
  if (with_head) names.insert(names.end(), {"head-single", "head-heavy", "rrise"});
  names.push_back("fallback margin-heavy");
  const int64_t M = static_cast<int64_t>(names.size());
  std::vector<Row> rows(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    rows[m].name = names[m];
    for (auto* v : {&rows[m].accuracy, &rows[m].fa, &rows[m].fa_low, &rows[m].fa_high, &rows[m].approval, &rows[m].forwards,
                    &rows[m].seconds, &rows[m].fa_square, &rows[m].fa_sd})
      v->assign(static_cast<size_t>(R), 0.0);
  }
  const nk::Rng root(env.seed);
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t split = 0; split < o.splits; ++split) {
    std::iota(order.begin(), order.end(), int64_t{0});
    nk::Rng rng = root.split(static_cast<uint64_t>(split) + 1000);
    nk::shuffle(order, rng);
    const std::vector<int64_t> cal(order.begin(), order.begin() + ncal), test(order.begin() + ncal, order.end());
    for (int64_t r = 0; r < R; ++r) {
      const double radius = o.radii[r];
      auto truth_ok = [&](int64_t i, int64_t k) { return ref.pred[i] == k && k >= 0 && ref.radius[i] >= radius; };
      auto calibrated = [&](const std::vector<double>& score, bool heavy) {
        std::vector<double> s, f;
        for (int64_t i : cal) {
          s.push_back(score[i]);
          f.push_back(heavy ? (truth_ok(i, pass.cls[i]) ? 0.0 : 1.0) : (miss[i] ? single_bound(radius, sigma) : 0.0));
        }
        const double bound = heavy ? 1.0 : single_bound(radius, sigma);
        const double level = o.target - (heavy ? ref.alpha : 0.0);
        return level > 0 ? crc_lambda(s, f, bound, level) : std::numeric_limits<double>::infinity();
      };
      const double margin_single = calibrated(pass.margin, false), margin_heavy = calibrated(pass.margin, true);
      double head_single = 0, head_heavy = 0, rrise_q = 0;
      if (with_head) {
        head_single = calibrated(head_score, false);
        head_heavy = calibrated(head_score, true);
        std::vector<double> residual;
        for (int64_t i : cal) residual.push_back(head_score[i] - (ref.pred[i] == pass.cls[i] ? ref.radius[i] : 0.0));
        std::sort(residual.begin(), residual.end());
        const auto k = static_cast<int64_t>(std::ceil(static_cast<double>(ncal + 1) * (1 - o.target)));
        rrise_q = k > ncal ? std::numeric_limits<double>::infinity() : residual[static_cast<size_t>(k - 1)];
      }
      const double uncal_level = normal_cdf(radius / sigma);
      for (int64_t m = 0; m < M; ++m) {
        const std::string& name = names[m];
        int64_t approved = 0, false_approved = 0, correct = 0;
        double forwards = 1, seconds = clean_seconds;
        for (int64_t i : test) {
          bool a = false;
          int64_t k = pass.cls[i];
          bool counts_fa = true;
          if (m == 0) {
            a = truth_ok(i, ref.pred[i]), k = ref.pred[i], counts_fa = false;
          } else if (m == 1) {
            a = cheap[i].pred >= 0 && cheap[i].radius >= radius, k = cheap[i].pred;
          } else if (name == "uncalibrated") {
            a = pass.top_prob[i] >= uncal_level;
          } else if (name == "margin-single") {
            a = pass.margin[i] >= margin_single;
          } else if (name == "margin-heavy") {
            a = pass.margin[i] >= margin_heavy;
          } else if (name == "head-single") {
            a = head_score[i] >= head_single;
          } else if (name == "head-heavy") {
            a = head_score[i] >= head_heavy;
          } else if (name == "rrise") {
            a = head_score[i] - rrise_q >= radius;
          } else {  // fallback: the proxy where it approves, the reference CERTIFY elsewhere
            a = pass.margin[i] >= margin_heavy;
            if (!a) {
              a = truth_ok(i, ref.pred[i]), k = ref.pred[i], counts_fa = false;
              forwards += static_cast<double>(ref.n0 + ref.n) / static_cast<double>(ntest);
              seconds += ref.seconds_per_item / static_cast<double>(ntest);
            }
          }
          approved += a;
          false_approved += a && counts_fa && !truth_ok(i, k);
          correct += a && k == label[i];
        }
        Row& row = rows[m];
        const double n = static_cast<double>(ntest), share = 1.0 / static_cast<double>(o.splits);
        row.accuracy[r] += share * static_cast<double>(correct) / n;
        row.fa[r] += share * static_cast<double>(false_approved) / n;
        row.fa_square[r] += share * std::pow(static_cast<double>(false_approved) / n, 2);
        row.approval[r] += share * static_cast<double>(approved) / n;
        if (m == 0) forwards = static_cast<double>(ref.n0 + ref.n), seconds = ref.seconds_per_item;
        if (m == 1) forwards = static_cast<double>(ref.n0 + o.cheap_n), seconds = cheap_seconds;
        row.forwards[r] += share * forwards;
        row.seconds[r] += share * seconds;
      }
    }
  }
  // FA intervals: Clopper-Pearson 95% for a test set of this size at the mean rate.
  for (auto& row : rows)
    for (int64_t r = 0; r < R; ++r) {
      const auto events = static_cast<int64_t>(std::llround(row.fa[r] * static_cast<double>(ntest)));
      row.fa_low[r] = clopper_pearson_lower(events, ntest, 0.025);
      row.fa_high[r] = clopper_pearson_upper(events, ntest, 0.025);
      const double k = static_cast<double>(o.splits);
      row.fa_sd[r] = o.splits > 1 ? std::sqrt(std::max(0.0, row.fa_square[r] - row.fa[r] * row.fa[r]) * k / (k - 1)) : 0.0;
    }

  nk::Table table(stdout, {"method", "radius", "cert_acc", "FA", "FA_95%_CI", "approval", "forwards", "seconds"});
  table.left({0});
  table.header();
  for (const auto& row : rows)
    for (int64_t r = 0; r < R; ++r) {
      table.row({row.name, nk::cell(o.radii[r], "%.2f"), nk::cell(row.accuracy[r], "%.4f"), nk::cell(row.fa[r], "%.4f"),
                 "[" + nk::cell(row.fa_low[r], "%.4f") + "," + nk::cell(row.fa_high[r], "%.4f") + "]",
                 nk::cell(row.approval[r], "%.4f"), nk::cell(row.forwards[r], "%.1f"), nk::cell(row.seconds[r], "%.3g")});
    }
  spdlog::info("eval: {} pool items, {} split(s) of {} calibration / {} test, target {}, sigma {}; reference CERTIFY n = {}",
               count, o.splits, ncal, ntest, o.target, sigma, ref.n);
  if (!o.output.empty()) {
    nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
    std::vector<double> flat(static_cast<size_t>(M * R));
    auto put = [&](const std::string& dataset, std::vector<double> Row::*field) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t r = 0; r < R; ++r) flat[m * R + r] = (rows[m].*field)[r];
      out.write(dataset, flat.data(), {M, R}, "M,R");
    };
    out.write_strings("/eval/methods", names, "M");
    out.write("/eval/radii", o.radii.data(), {R}, "R", "pixel-space L2");
    put("/eval/certified_accuracy", &Row::accuracy);
    put("/eval/false_approval", &Row::fa);
    put("/eval/false_approval_sd", &Row::fa_sd);
    put("/eval/fa_low", &Row::fa_low);
    put("/eval/fa_high", &Row::fa_high);
    put("/eval/approval", &Row::approval);
    put("/eval/forwards", &Row::forwards);
    put("/eval/seconds", &Row::seconds);
    out.attr("/eval", "target", o.target);
    out.attr("/eval", "splits", o.splits);
    out.attr("/eval", "calibration", ncal);
    out.attr("/eval", "test", ntest);
    out.attr("/eval", "sigma", sigma);
    out.attr("/eval", "reference_n", ref.n);
    if (with_head) {
      out.attr("/eval", "head_forwards", head.forwards);
      out.attr("/eval", "head_seconds", head.seconds);
    }
    out.commit();
  }
  if (!o.svg.empty()) {
    std::vector<nk::plot::Series> series;
    for (const auto& row : rows) series.push_back({row.name, o.radii, row.accuracy, false, true});
    const nk::plot::Axes axes{"Certified accuracy against radius (sigma = " + nk::cell(sigma, "%g") + ")", "radius (L2)",
                              "certified accuracy", false, false};
    const std::string svg = nk::plot::line_plot_svg(axes, series);
    nk::write_output_bytes(o.svg, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  }
}

}  // namespace pc
