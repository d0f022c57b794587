// features.cpp - the features verb: f(x) of every item, and with a query its
// fiber loss ||f(x) - f(x_q)||^2 (squared, unnormalised) and the loss's
// gradient in x.
#include <cmath>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/invariance_audit.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"

namespace ia {

void features(const FeaturesOptions& o, const nk::RunEnv& env) {
  (void)env;
  nk::data::Options accept;
  accept.unit_range = true;  // the U-Net prior and the extractors take pixels in [0,1]
  accept.vectors = false;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  const nk::nn::Shape shape{data.height(), data.width(), data.channels()};
  const int64_t n = data.count(), d = shape.size(), chunk = 256;
  std::unique_ptr<Extractor> extractor = open_extractor(o.extractor_cmd.empty() ? o.extractor : "cmd:" + o.extractor_cmd, shape, std::min(chunk, n));
  const int64_t f = extractor->dim();
  std::vector<float> fq;
  if (!o.query.empty()) {
    const nk::data::Source q = nk::data::Source::open(o.query, accept);
    const nk::nn::Shape qs{q.height(), q.width(), q.channels()};
    if (!(qs == shape)) throw nk::input_error(o.query, q.dataset(), "items are " + qs.text() + ", the inputs " + shape.text());
    if (o.index < 0 || o.index >= q.count()) {
      throw nk::input_error(o.query, q.dataset(), "--index " + std::to_string(o.index) + " is not one of its " +
                                                      std::to_string(q.count()) + " items (0-based)");
    }
    const nk::h5::Array<float> qx = q.read_all();
    fq.assign(static_cast<size_t>(f), 0.0f);
    extractor->features(qx.data.data() + o.index * d, 1, fq.data());
  }
  const nk::h5::Array<float> x = data.read_all();
  std::vector<float> out_f(static_cast<size_t>(n * f)), loss, grad, g;
  if (!fq.empty()) {
    loss.assign(static_cast<size_t>(n), 0.0f);
    grad.assign(static_cast<size_t>(n * d), 0.0f);
    g.assign(static_cast<size_t>(chunk * f), 0.0f);
  }
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t rows = std::min(chunk, n - start);
    extractor->features(x.data.data() + start * d, rows, out_f.data() + start * f);
    if (fq.empty()) continue;
    for (int64_t b = 0; b < rows; ++b) {
      double sum = 0;
      for (int64_t k = 0; k < f; ++k) {
        const double r = static_cast<double>(out_f[(start + b) * f + k]) - fq[k];
        sum += r * r;
        g[b * f + k] = static_cast<float>(2 * r);
      }
      loss[start + b] = static_cast<float>(sum);
    }
    extractor->vjp(g.data(), rows, grad.data() + start * d);
  }
  spdlog::info("features: {} items of {} through {} ({} features)", n, shape.text(), extractor->name(), f);
  nk::h5::Writer out(o.output, kFeaturesSchema, o.no_clobber);
  out.write("/features", out_f.data(), {n, f}, "N,F");
  out.attr("/features", "extractor", extractor->name());
  if (!fq.empty()) {
    out.write("/fiber_loss", loss.data(), {n}, "N", "||f(x) - f(x_q)||^2");
    out.write("/fiber_grad", grad.data(), {n, shape.h, shape.w, shape.c}, "N,H,W,C", "d fiber_loss / dx");
    out.attr("/fiber_loss", "query", nk::display_name(o.query));
    out.attr("/fiber_loss", "index", o.index);
  }
  out.commit();
}

}  // namespace ia
