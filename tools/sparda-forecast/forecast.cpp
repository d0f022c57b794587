// forecast.cpp - Forecast weights, their queries and the KL (forecast.hpp).
#include "sparda-forecast/forecast.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/layers.hpp"
#include "nk/lm/model.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

namespace {

std::string weight_name(int64_t m) {
  char buf[48];
  if (m == 0) return "/layer_00/w_curr";
  std::snprintf(buf, sizeof buf, "/layer_%02lld/w_forecast", static_cast<long long>(m - 1));
  return buf;
}

}  // namespace

namespace {

Forecast read_forecast(const std::string& path, int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t d_model,
                       double rope_theta, const std::string& against, const std::string& prefix = "") {
  const nk::h5::File f = nk::h5::File::open(path);
  if (auto schema = f.attr_string("/", "nk_schema");
      prefix.empty() && schema && schema->rfind("sparda-forecast.forecast/", 0) != 0)
    throw nk::input_error(path, "", "nk_schema is '" + *schema + "'; expected a forecast file (sparda-forecast train)");
  Forecast fc;
  fc.layers = layers, fc.kv_heads = kv_heads, fc.head_dim = head_dim, fc.d_model = d_model;
  const std::vector<int64_t> want{d_model, kv_heads * head_dim};
  for (int64_t m = 0; m < layers; ++m) {
    const std::string n = prefix + weight_name(m);
    if (!f.has(n))
      throw nk::input_error(path, n,
                            "missing: " + against + " has " + std::to_string(layers) + " layers, so layer " +
                                std::to_string(m) + " needs this forecast (a forecast of another model?)");
    const nk::h5::DatasetInfo info = f.info(n);
    if (info.shape != want)
      throw nk::input_error(path, n,
                            "shape " + nk::h5::shape_text(info.shape) + " does not fit layer " + std::to_string(m) +
                                " of " + against + ": expected [D, Hkv*d] = " + nk::h5::shape_text(want) +
                                " (a forecast of another model?)");
    const nk::h5::Array<double> a = f.read<double>(n);
    nk::h5::require_finite(path, n, a);
    fc.w.emplace_back(Eigen::Map<const Matrix>(a.data.data(), want[0], want[1]));
  }
  fc.finalize();
  const std::string group = prefix.empty() ? "/" : prefix;
  if (const auto theta = f.attr_number(group, "rope_theta"); theta && *theta != rope_theta)
    throw nk::input_error(
        path, group,
        "rope_theta " + std::to_string(*theta) + " differs from the " + std::to_string(rope_theta) + " of " + against);
  return fc;
}

}  // namespace

void write_selector_attrs(nk::h5::Writer& out, const nk::lm::BlockSelectorConfig& sel) {
  out.attr("/", "block", sel.block);
  out.attr("/", "init_blocks", sel.init_blocks);
  out.attr("/", "local_blocks", sel.local_blocks);
  out.attr("/", "topk", sel.topk);
}

Forecast Forecast::read(const std::string& path, const Trace& trace) {
  return read_forecast(path, trace.layers, trace.kv_heads, trace.head_dim, trace.d_model, trace.rope_theta,
                       "the trace '" + nk::display_name(trace.path()) + "'");
}

Forecast Forecast::read_for(const std::string& path, int64_t layers, int64_t kv_heads, int64_t head_dim,
                            int64_t d_model, double rope_theta) {
  return read_forecast(path, layers, kv_heads, head_dim, d_model, rope_theta, "the model");
}

bool Forecast::embedded(const std::string& model_path) {
  return nk::h5::File::open(model_path).has(std::string(kEmbedded) + weight_name(0));
}

Forecast Forecast::read_embedded(const std::string& model_path, int64_t layers, int64_t kv_heads, int64_t head_dim,
                                 int64_t d_model, double rope_theta) {
  return read_forecast(model_path, layers, kv_heads, head_dim, d_model, rope_theta, "the model", kEmbedded);
}

void Forecast::finalize() {
  wf.clear();
  for (const Matrix& m : w) wf.push_back(m.transpose().cast<float>());
}

void Forecast::write(nk::h5::Writer& out, const std::string& prefix) const {
  for (int64_t m = 0; m < layers; ++m) {
    std::vector<float> x(static_cast<size_t>(w[m].size()));
    for (int64_t i = 0; i < w[m].size(); ++i) x[static_cast<size_t>(i)] = static_cast<float>(w[m].data()[i]);
    out.write(prefix + weight_name(m), x.data(), {d_model, kv_heads * head_dim}, "D,Hkv*d");
  }
  if (!loss.empty() && !loss[0].empty()) {
    const int64_t steps = static_cast<int64_t>(loss[0].size());
    std::vector<double> x;
    for (const auto& l : loss) x.insert(x.end(), l.begin(), l.end());
    out.write(prefix + "/loss", x.data(), {layers, steps}, "L,steps");
  }
  const std::string group = prefix.empty() ? "/" : prefix;
  out.attr(group, "layers", layers);
  out.attr(group, "kv_heads", kv_heads);
  out.attr(group, "head_dim", head_dim);
  out.attr(group, "d_model", d_model);
}

Target load_target(const Trace& trace, int64_t m, int64_t block, bool queries, bool keys) {
  Target tg;
  tg.layer = m, tg.block = block;
  tg.h = trace.read(source_layer(m), "attn_in");
  if (queries) tg.q = trace.read(m, "q");
  std::vector<float> k = trace.read(m, "k");
  const int64_t H = trace.kv_heads, d = trace.head_dim, S = trace.sequences();
  tg.first_block.assign(1, 0);
  for (int64_t s = 0; s < S; ++s) tg.first_block.push_back(tg.first_block.back() + trace.length(s) / block);
  tg.pooled.resize(static_cast<size_t>(H * tg.first_block.back() * d));
  for (int64_t s = 0; s < S; ++s)
    nk::lm::pool_keys(k.data() + H * trace.offsets[s] * d, H, trace.length(s), d, block,
                      tg.pooled.data() + H * tg.first_block[s] * d);
  if (keys) tg.k = std::move(k);
  return tg;
}

Speculator make_speculator(const Trace& trace, const Target& tg, int64_t rank) {
  const int64_t m = tg.layer, D = trace.d_model, Hq = trace.heads, Hkv = trace.kv_heads, G = trace.group(),
                d = trace.head_dim;
  if (!trace.has(m, "wq"))
    throw nk::input_error(trace.path(), Trace::name(m, "wq"),
                          "missing: InfiniGen needs layer " + std::to_string(m) +
                              "'s query projection [D, Hq*d] (nk-lm capture writes it)");
  const std::vector<float> w = trace.read(m, "wq");
  const Matrix wq =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(w.data(), D, Hq * d)
          .cast<double>();
  // Calibration positions: every position, or an even subsample of 8,192.
  const int64_t N = trace.total(), stride = std::max<int64_t>(1, N / 8192);
  std::vector<Eigen::MatrixXd> grams;
  for (int64_t g = 0; g < Hkv; ++g) {
    Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(d, d);
    for (int64_t s = 0; s < trace.sequences(); ++s)
      for (int64_t t = 0; t < trace.length(s); ++t) {
        if ((trace.offsets[s] + t) % stride) continue;
        for (int64_t h = g * G; h < (g + 1) * G; ++h) {
          const Eigen::Map<const Eigen::VectorXf> q(tg.q.data() + (Hq * trace.offsets[s] + h * trace.length(s) + t) * d,
                                                    d);
          gram.noalias() += q.cast<double>() * q.cast<double>().transpose();
        }
      }
    grams.push_back(std::move(gram));
  }
  return make_speculator(wq, grams, rank);
}

Speculator make_speculator(const Matrix& wq, const std::vector<Eigen::MatrixXd>& grams, int64_t rank) {
  Speculator sp;
  sp.wq = wq;
  sp.rank = std::min<int64_t>(rank, grams.empty() ? 0 : grams[0].rows());
  for (const Eigen::MatrixXd& gram : grams) {
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram);  // ascending eigenvalues
    sp.basis.emplace_back(eig.eigenvectors().rightCols(sp.rank).rowwise().reverse());
  }
  return sp;
}

std::vector<int32_t> select_layer(const Trace& trace, const Target& tg, const nk::lm::BlockSelectorConfig& sel,
                                  const Scorer& by, int64_t s, int64_t begin, int64_t end) {
  const int64_t off = trace.offsets[s];
  const Shape shape{trace.heads, trace.kv_heads, trace.head_dim, trace.d_model, trace.rope_theta};
  return select_rows(shape, sel, by, tg.h.data() + off * trace.d_model, tg.q.data() + trace.heads * off * trace.head_dim,
                     tg.pooled.data() + trace.kv_heads * tg.first_block[s] * trace.head_dim, trace.length(s),
                     tg.blocks(s), begin, end);
}

std::vector<int32_t> select_rows(const Shape& shape, const nk::lm::BlockSelectorConfig& sel, const Scorer& by,
                                 const float* h, const float* q, const float* pooled, int64_t T, int64_t nb,
                                 int64_t begin, int64_t end) {
  const int64_t Hq = shape.heads, Hkv = shape.kv_heads, G = Hq / Hkv, d = shape.head_dim, D = shape.d_model,
                K = sel.width();
  const int64_t n = end - begin;
  std::vector<int32_t> out(static_cast<size_t>(Hkv * n * K));
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const Speculator* sp = by.infinigen;
  // InfiniGen's partial key cache: the pooled keys' r skewed coordinates, [nb, r] per group.
  std::vector<Matrix> partial;
  if (sp)
    for (int64_t g = 0; g < Hkv; ++g)
      partial.push_back(Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                            pooled + g * nb * d, nb, d)
                            .cast<double>() *
                        sp->basis[static_cast<size_t>(g)]);
  constexpr int64_t kChunk = 2048;  // query rows at a time
  for (int64_t c0 = begin; c0 < end; c0 += kChunk) {
    const int64_t c1 = std::min(end, c0 + kChunk);
    std::vector<int32_t> pos(static_cast<size_t>(c1 - c0));
    for (int64_t t = c0; t < c1; ++t) pos[static_cast<size_t>(t - c0)] = static_cast<int32_t>(t);
    Matrix f;  // forecast: [rows, Hkv*d]; infinigen: [rows, Hq*r] (speculated queries in skewed coordinates)
    if (by.forecast)
      f = forecast_queries(*by.forecast, h + c0 * D, pos.data(), c1 - c0, Hkv, d, shape.rope_theta);
    if (sp) {
      const Matrix full = forecast_queries(sp->wq, h + c0 * D, pos.data(), c1 - c0, Hq, d, shape.rope_theta);
      f.resize(c1 - c0, Hq * sp->rank);
      for (int64_t h = 0; h < Hq; ++h)
        f.middleCols(h * sp->rank, sp->rank) = full.middleCols(h * d, d) * sp->basis[static_cast<size_t>(h / G)];
    }
#pragma omp parallel
    {
      std::vector<double> sc(static_cast<size_t>(std::max<int64_t>(nb, 1))), scratch(sc.size()),
          fr(static_cast<size_t>(d));
#pragma omp for collapse(2) schedule(dynamic, 64)
      for (int64_t g = 0; g < Hkv; ++g)
        for (int64_t t = c0; t < c1; ++t) {
          const int64_t nc = std::min(sel.candidates(t), nb);
          if (by.forecast) {
            for (int64_t i = 0; i < d; ++i) fr[static_cast<size_t>(i)] = f(t - c0, g * d + i);
            for (int64_t j = 0; j < nc; ++j)
              sc[static_cast<size_t>(j)] = nk::lm::dot(fr.data(), pooled + (g * nb + j) * d, d) * scale;
          } else if (sp) {
            // The selector's rule on the speculated partial scores: group sum of the heads' softmaxes.
            std::fill(sc.begin(), sc.begin() + nc, 0.0);
            const Matrix& kp = partial[static_cast<size_t>(g)];
            for (int64_t h = g * G; h < (g + 1) * G && nc > 0; ++h) {
              double most = -INFINITY;
              for (int64_t j = 0; j < nc; ++j) {
                double dot = 0;
                for (int64_t i = 0; i < sp->rank; ++i) dot += f(t - c0, h * sp->rank + i) * kp(j, i);
                most = std::max(most, scratch[static_cast<size_t>(j)] = dot * scale);
              }
              double sum = 0;
              for (int64_t j = 0; j < nc; ++j)
                sum += (scratch[static_cast<size_t>(j)] = std::exp(scratch[static_cast<size_t>(j)] - most));
              for (int64_t j = 0; j < nc; ++j) sc[static_cast<size_t>(j)] += scratch[static_cast<size_t>(j)] / sum;
            }
          } else {
            nk::lm::group_scores(sel, q, Hq, T, t, pooled, Hkv, nb, d, g, sc.data(), scratch.data());
          }
          nk::lm::select_blocks(sel, t, sc.data(), out.data() + (g * n + t - begin) * K);
        }
    }
  }
  return out;
}

Matrix forecast_queries(const Matrix& w, const float* h, const int32_t* positions, int64_t n, int64_t kv_heads,
                        int64_t head_dim, double rope_theta) {
  const int64_t D = w.rows();
  const Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> x(h, n, D);
  Matrix f = x.cast<double>() * w;
  nk::lm::rope(f.data(), positions, n, kv_heads, head_dim, rope_theta);
  return f;
}

Matrix forecast_queries(const MatrixF& wt, const float* h, const int32_t* positions, int64_t n, int64_t kv_heads,
                        int64_t head_dim, double rope_theta) {
  // The model's own kernel: a decoding step's few rows stream the weights once (no GEMM packing).
  MatrixF y(n, wt.rows());
  nk::lm::linear(h, wt.data(), n, wt.cols(), wt.rows(), y.data());
  Matrix f = y.cast<double>();
  nk::lm::rope(f.data(), positions, n, kv_heads, head_dim, rope_theta);
  return f;
}

double kl_full(const double* p, const double* z, int64_t n, double* dz) {
  double most = -INFINITY;
  for (int64_t j = 0; j < n; ++j) most = std::max(most, z[j]);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(z[j] - most);
  const double lse = most + std::log(sum);
  double kl = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double logq = z[j] - lse;
    if (p[j] > 0) kl += p[j] * (std::log(p[j]) - logq);
    dz[j] = std::exp(logq) - p[j];
  }
  return kl;
}

double kl_topk(const double* p, const double* z, int64_t n, const char* selected, double* dz) {
  double most = -INFINITY;
  for (int64_t j = 0; j < n; ++j) most = std::max(most, z[j]);
  double sum = 0, rest = 0, p_rest = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double e = std::exp(z[j] - most);
    sum += e;
    if (!selected[j]) rest += e, p_rest += p[j];
  }
  const double lse = most + std::log(sum);
  const double q_rest = rest / sum;
  double kl = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double logq = z[j] - lse, q = std::exp(logq);
    if (selected[j]) {
      if (p[j] > 0) kl += p[j] * (std::log(p[j]) - logq);
      dz[j] = q - p[j];
    } else {
      dz[j] = q_rest > 0 ? q - p_rest * q / q_rest : q;
    }
  }
  if (p_rest > 0) kl += p_rest * (std::log(p_rest) - std::log(std::max(q_rest, 1e-300)));
  return kl;
}

}  // namespace sparda
