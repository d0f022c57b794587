// approve.cpp - the approve verb: the calibrated proxy on new items, alone
// (one forward) or with CERTIFY where it rejects (fallback).
#include <algorithm>
#include <cmath>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "proxy-certify/proxy.hpp"
#include "proxy-certify/proxy_certify.hpp"

namespace pc {

namespace {

struct ProxyFile {
  std::string kind, fingerprint;
  double sigma = 0;
  std::vector<double> radii, lambda;
  Head head;
};

ProxyFile read_proxy(const std::string& path, const Classifier& model) {
  const nk::h5::File file = nk::h5::File::open(path);
  file.require_schema(kProxySchema);
  file.require("/proxy/radii");
  file.require("/proxy/lambda");
  ProxyFile p;
  p.radii = file.read<double>("/proxy/radii", 1, "R").data;
  p.lambda = file.read<double>("/proxy/lambda", 1, "R").data;
  if (p.radii.empty() || p.radii.size() != p.lambda.size()) {
    throw nk::input_error(path, "/proxy/lambda", "has " + std::to_string(p.lambda.size()) + " entries, /proxy/radii " +
                                                     std::to_string(p.radii.size()));
  }
  for (size_t r = 0; r < p.radii.size(); ++r) {
    if (!(p.radii[r] > 0) || !std::isfinite(p.radii[r])) throw nk::input_error(path, "/proxy/radii", "radii must be positive and finite");
    if (std::isnan(p.lambda[r]) || p.lambda[r] == -INFINITY) throw nk::input_error(path, "/proxy/lambda", "entry " + std::to_string(r) + " is NaN or -inf");
  }
  p.kind = file.attr_string("/proxy", "kind").value_or("");
  if (p.kind != "margin" && p.kind != "head") throw nk::input_error(path, "/proxy", "attribute kind is '" + p.kind + "', expected margin or head");
  p.sigma = file.attr_number("/proxy", "sigma").value_or(0);
  if (!(p.sigma > 0) || !std::isfinite(p.sigma)) throw nk::input_error(path, "/proxy", "attribute sigma is missing or not positive");
  p.fingerprint = file.attr_string("/proxy", "model_fingerprint").value_or("");
  if (p.fingerprint != model_fingerprint(model)) {
    throw nk::input_error(path, "/proxy", "was calibrated for another model (fingerprint " + p.fingerprint + ", " +
                                              model.name() + " has " + model_fingerprint(model) + ")");
  }
  if (p.kind == "head") p.head = read_head(file, model.feature_size());
  return p;
}

}  // namespace

void approve(const ApproveOptions& o, const nk::RunEnv& env) {
  check_smoothing(o.alpha, o.n0, o.n);
  nk::data::Options accept;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  auto model = open_classifier(o.model, item_shape(data), o.batch);
  require_same_shape(*model, data);
  const ProxyFile proxy = read_proxy(o.proxy, *model);
  if (o.sigma && std::abs(*o.sigma - proxy.sigma) > 1e-12 * proxy.sigma) {
    throw nk::usage_error("--sigma " + std::to_string(*o.sigma) + " differs from the " + std::to_string(proxy.sigma) +
                          " the proxy was calibrated at");
  }
  const double sigma = proxy.sigma;
  const bool fallback = o.mode == "fallback";
  const double at = o.radius.value_or(*std::min_element(proxy.radii.begin(), proxy.radii.end()));
  const auto where = std::find_if(proxy.radii.begin(), proxy.radii.end(), [&](double r) { return std::abs(r - at) < 1e-12; });
  if (fallback && where == proxy.radii.end()) throw nk::usage_error("--radius must be one of the proxy's radii");
  const size_t at_index = static_cast<size_t>(where - proxy.radii.begin());
  const auto [begin, end] = nk::shard_range(env.shard, data.count());
  nk::data::check_run_items(data.path(), data.dataset(), end - begin);
  const int64_t count = end - begin, radii = static_cast<int64_t>(proxy.radii.size());
  nk::Stopwatch clock;
  const CleanPass pass = clean_pass(*model, data, begin, end, proxy.kind == "head");
  const std::vector<double> scores = proxy_scores(proxy.kind, pass, proxy.head);
  std::vector<uint8_t> approved(static_cast<size_t>(count * radii));
  std::vector<double> radius(static_cast<size_t>(count), 0.0);
  std::vector<int64_t> forwards(static_cast<size_t>(count), 1), index(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    index[i] = begin + i;
    for (int64_t r = 0; r < radii; ++r) {
      approved[i * radii + r] = scores[i] >= proxy.lambda[r];
      if (approved[i * radii + r]) radius[i] = std::max(radius[i], proxy.radii[r]);
    }
  }
  std::vector<uint8_t> used(static_cast<size_t>(count), 0);
  std::vector<int64_t> n_a(static_cast<size_t>(count), -1), final_pred(pass.cls);
  std::vector<double> final_radius(radius);
  int64_t certified_calls = 0;
  if (fallback) {
    Smoother smoother(*model, sigma, env.seed, o.batch, env.device);
    nk::Progress progress("approve", count);
    for (int64_t i = 0; i < count; ++i) {
      if (!approved[i * radii + static_cast<int64_t>(at_index)]) {
        const nk::h5::Array<float> x = data.read_item(begin + i);
        const Certificate c = certify(smoother, x.data.data(), begin + i, o.n0, o.n, o.alpha);
        used[i] = 1;
        n_a[i] = c.count;
        final_pred[i] = c.pred;
        final_radius[i] = c.radius;
        forwards[i] += o.n0 + o.n;
        ++certified_calls;
      }
      progress.update(i + 1);
    }
    progress.finish();
  }
  nk::h5::Writer out(o.output, kApproveSchema, o.no_clobber);
  out.write("/approve/pred", pass.cls.data(), {count}, "N");
  out.write("/approve/score", scores.data(), {count}, "N");
  out.write("/approve/approved", approved.data(), {count, radii}, "N,R");
  out.write("/approve/radius", radius.data(), {count}, "N", "pixel-space L2");
  out.write("/approve/forwards", forwards.data(), {count}, "N");
  out.write("/approve/index", index.data(), {count}, "N");
  out.write("/approve/radii", proxy.radii.data(), {radii}, "R");
  if (fallback) {
    out.write("/approve/used_certify", used.data(), {count}, "N");
    out.write("/approve/count", n_a.data(), {count}, "N");
    out.write("/approve/final_pred", final_pred.data(), {count}, "N");
    out.write("/approve/final_radius", final_radius.data(), {count}, "N", "pixel-space L2");
    out.attr("/approve", "radius", at);
    out.attr("/approve", "n0", o.n0);
    out.attr("/approve", "n", o.n);
    out.attr("/approve", "alpha", o.alpha);
  }
  out.attr("/approve", "mode", o.mode);
  out.attr("/approve", "sigma", sigma);
  out.attr("/approve", "seconds", clock.seconds());
  out.commit();
  spdlog::info("approve: {} items, {} approved at r = {}{}", count,
               std::count_if(scores.begin(), scores.end(), [&](double s) { return s >= proxy.lambda[at_index]; }), at,
               fallback ? ", CERTIFY run on " + std::to_string(certified_calls) : std::string());
}

}  // namespace pc
