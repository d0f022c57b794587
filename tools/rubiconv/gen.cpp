// gen.cpp - realistic packed inputs: documents of lognormal (or fixed, or
// listed) lengths packed into rows of length L, the last one cut at L.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "rubiconv/filters.hpp"
#include "nk/context.hpp"
#include "nk/distribution.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "rubiconv/packing.hpp"
#include "rubiconv/rubiconv.hpp"

namespace rubiconv {

namespace {

enum Stream : uint64_t { kStreamPacking = 1, kStreamX, kStreamDy, kStreamBias, kStreamFilters };

/// Document lengths: drawn from a distribution (lognormal or fixed, as
/// neurkit(7) spells them) or read from a file, one per line.
struct LengthModel {
  std::optional<nk::Distribution> draw;
  std::vector<int64_t> listed;
};

LengthModel parse_lengths(const std::string& spec) {
  LengthModel model;
  if (spec.rfind("lognormal:", 0) == 0 || spec.rfind("fixed:", 0) == 0) {
    model.draw.emplace("--doc-lengths", spec, std::vector<std::string>{"lognormal", "fixed"});
    const double first = model.draw->args()[0];
    if (first < 1 || (model.draw->name() == "fixed" && first != std::floor(first)))
      throw nk::usage_error("--doc-lengths: expected lognormal:MEDIAN,SIGMA with MEDIAN >= 1 or fixed:N with an integer N >= 1; got '" +
                            spec + "'");
    return model;
  }
  if (spec.find(':') != std::string::npos && !std::ifstream(spec)) {
    throw nk::usage_error("--doc-lengths: expected lognormal:MEDIAN,SIGMA, fixed:N or a file, got '" + spec + "'");
  }
  std::ifstream in(spec);
  if (!in) throw nk::io_error(spec, "cannot open the --doc-lengths file");
  int64_t value = 0;
  while (in >> value) {
    if (value < 1) throw nk::input_error(spec, "", "document lengths must be >= 1, found " + std::to_string(value));
    model.listed.push_back(value);
  }
  if (!in.eof()) throw nk::input_error(spec, "", "expected one integer length per line");
  if (model.listed.empty()) throw nk::input_error(spec, "", "no document lengths");
  return model;
}

std::vector<Document> pack_row(const LengthModel& model, int64_t length, nk::Rng rng) {
  std::vector<Document> row;
  size_t next = 0;
  for (int64_t position = 0; position < length;) {
    int64_t n = model.draw ? std::llround((*model.draw)(rng)) : model.listed[next++ % model.listed.size()];
    n = std::clamp<int64_t>(n, 1, length - position);  // the last document is cut at L
    row.push_back({position, position + n});
    position += n;
  }
  return row;
}

template <class Real>
void write_inputs(const GenOptions& o, uint64_t seed, const std::vector<std::vector<Document>>& rows,
                  const std::vector<double>& k) {
  const int64_t lk = o.filter_length;
  nk::h5::Writer out(o.output, kInputSchema, o.no_clobber);
  std::vector<Real> values(static_cast<size_t>(o.batch * o.length * o.channels));
  // One family of streams per purpose, one stream per row: rows never share numbers.
  auto fill_normal = [&](uint64_t purpose) {
    for (int64_t b = 0; b < o.batch; ++b) {
      nk::Rng stream = nk::Rng(seed).split(purpose).split(static_cast<uint64_t>(b));
      Real* row = values.data() + b * o.length * o.channels;
      for (int64_t i = 0; i < o.length * o.channels; ++i) row[i] = static_cast<Real>(stream.normal());
    }
  };
  fill_normal(kStreamX);
  out.write("/x", values.data(), {o.batch, o.length, o.channels}, "B,L,H");
  if (o.with_dy) {
    fill_normal(kStreamDy);
    out.write("/dy", values.data(), {o.batch, o.length, o.channels}, "B,L,H");
  }
  values.clear();
  values.shrink_to_fit();
  const std::vector<Real> taps(k.begin(), k.end());
  out.write("/k", taps.data(), {o.channels, lk}, "H,Lk");
  out.attr("/k", "filter", o.filter);
  if (o.skip) {
    nk::Rng stream = nk::Rng(seed).split(kStreamBias);
    std::vector<Real> bias(static_cast<size_t>(o.channels));
    for (Real& value : bias) value = static_cast<Real>(stream.normal());
    out.write("/bias", bias.data(), {o.channels}, "H");
  }
  if (o.shared_packing) {
    const std::vector<int64_t> cu = cu_seqlens_of(rows[0]);
    out.write("/cu_seqlens", cu.data(), {static_cast<int64_t>(cu.size())}, "D+1");
  } else {
    size_t widest = 0;
    for (const auto& row : rows) widest = std::max(widest, row.size() + 1);
    std::vector<int64_t> cu(static_cast<size_t>(o.batch) * widest, -1);
    for (size_t b = 0; b < rows.size(); ++b) {
      const std::vector<int64_t> row = cu_seqlens_of(rows[b]);
      std::copy(row.begin(), row.end(), cu.begin() + static_cast<long>(b * widest));
    }
    out.write("/cu_seqlens", cu.data(), {o.batch, static_cast<int64_t>(widest)}, "B,D+1");
    out.attr("/cu_seqlens", "padding", "-1 after each row's last entry");
  }
  out.attr("/", "doc_lengths", o.doc_lengths);
  out.commit();
}

}  // namespace

void gen(const GenOptions& options, const nk::RunEnv& env) {
  GenOptions o = options;
  if (o.length < 1 || o.channels < 1 || o.batch < 1) throw nk::usage_error("--length, --channels and --batch must be >= 1");
  if (o.filter_length == 0) o.filter_length = o.length;
  if (o.filter_length < 1 || o.filter_length > o.length) {
    throw nk::usage_error("--filter-length must be in 1..L (" + std::to_string(o.length) + "), got " +
                          std::to_string(o.filter_length));
  }
  const double element = o.dtype == "float64" ? 8.0 : 4.0;
  const double needed = static_cast<double>(o.batch) * o.length * o.channels * element * (o.with_dy ? 3.0 : 2.0) +
                        static_cast<double>(o.channels) * o.filter_length * 16.0;
  if (needed > nk::h5::available_memory_bytes()) {
    throw nk::usage_error("B x L x H = " + std::to_string(o.batch) + " x " + std::to_string(o.length) + " x " +
                          std::to_string(o.channels) + " needs " + std::to_string(static_cast<int64_t>(needed / (1 << 20))) +
                          " MiB, more than the memory available");
  }
  const LengthModel model = parse_lengths(o.doc_lengths);
  const nk::Rng root(env.seed);
  std::vector<std::vector<Document>> rows;
  for (int64_t b = 0; b < o.batch; ++b) {
    rows.push_back(pack_row(model, o.length, root.split(kStreamPacking).split(static_cast<uint64_t>(b))));
    if (o.shared_packing) {
      rows.assign(static_cast<size_t>(o.batch), rows[0]);
      break;
    }
  }
  std::vector<double> k;
  const nk::Rng filter_rng = root.split(kStreamFilters);
  if (o.filter == "hyena") k = hyena_filters(o.channels, o.filter_length, filter_rng);
  else if (o.filter == "stu") k = stu_filters(o.channels, o.filter_length, filter_rng);
  else k = random_filters(o.channels, o.filter_length, filter_rng);
  if (o.dtype == "float64") write_inputs<double>(o, env.seed, rows, k);
  else write_inputs<float>(o, env.seed, rows, k);
  int64_t documents = 0;
  for (const auto& row : rows) documents += static_cast<int64_t>(row.size());
  spdlog::info("generated B={} L={} H={} Lk={} with {} document(s), {} filters", o.batch, o.length, o.channels,
               o.filter_length, documents, o.filter);
}

}  // namespace rubiconv
