// model.cpp - Markov-chain and table models: densities, sampling, fits.
#include "aldrift/model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nk/error.hpp"

namespace ald {

namespace {
double safe_log(double p) { return p > 0 ? std::log(p) : -std::numeric_limits<double>::infinity(); }

int draw(const double* p, int A, nk::Rng& rng) {
  double u = rng.uniform(), acc = 0;
  for (int a = 0; a < A - 1; ++a) {
    acc += p[a];
    if (u < acc) return a;
  }
  return A - 1;
}
}  // namespace

Learner parse_learner(const std::string& name) {
  if (name == "markov") return Learner::markov;
  if (name == "markov-h") return Learner::markov_h;
  if (name == "table") return Learner::table;
  throw nk::usage_error("unknown learner '" + name + "' (markov, markov-h or table)");
}

const char* learner_name(Learner l) {
  switch (l) {
    case Learner::markov: return "markov";
    case Learner::markov_h: return "markov-h";
    case Learner::table: return "table";
  }
  return "?";
}

Model Model::from_prior(const Problem& p) {
  Model m;
  m.kind = Learner::markov_h;
  m.A = p.A;
  m.n = p.n;
  m.init = p.init;
  m.trans = p.trans;
  return m;
}

void Model::prepare() {
  if (kind != Learner::table) return;
  cdf.resize(table.size());
  double acc = 0;
  for (size_t i = 0; i < table.size(); ++i) cdf[i] = acc += table[i];
}

double Model::log_prob(const int* s) const {
  if (kind == Learner::table) return safe_log(table[encode(s, A, n)]);
  double lp = safe_log(init[s[0]]);
  for (int j = 1; j < n; ++j) lp += safe_log(row(j - 1, s[j - 1])[s[j]]);
  return lp;
}

void Model::sample(nk::Rng& rng, int* s) const {
  if (kind == Learner::table) {
    const double u = rng.uniform() * cdf.back();
    auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    int64_t index = std::min<int64_t>(it - cdf.begin(), static_cast<int64_t>(cdf.size()) - 1);
    while (index > 0 && table[index] <= 0) --index;  // never land on an empty cell at the end
    decode(index, A, n, s);
    return;
  }
  s[0] = draw(init.data(), A, rng);
  for (int j = 1; j < n; ++j) s[j] = draw(row(j - 1, s[j - 1]), A, rng);
}

std::vector<double> Model::log_prob_all() const {
  if (kind == Learner::table) {
    std::vector<double> out(table.size());
    for (size_t i = 0; i < table.size(); ++i) out[i] = safe_log(table[i]);
    return out;
  }
  std::vector<double> cur(A), next;
  for (int a = 0; a < A; ++a) cur[a] = safe_log(init[a]);
  for (int j = 1; j < n; ++j) {
    next.resize(cur.size() * A);
    for (size_t prefix = 0; prefix < cur.size(); ++prefix) {
      const double* r = row(j - 1, static_cast<int>(prefix % A));
      for (int b = 0; b < A; ++b) next[prefix * A + b] = cur[prefix] + safe_log(r[b]);
    }
    cur.swap(next);
  }
  return cur;
}

Model Model::as_markov() const {
  if (kind != Learner::markov_h) return *this;
  Model m = *this;
  m.kind = Learner::markov;
  m.trans.clear();
  for (int j = 0; j + 1 < n; ++j) m.trans.insert(m.trans.end(), trans.begin(), trans.end());
  return m;
}

Model fit(Learner kind, int A, int n, const std::vector<int>& samples, const std::vector<double>& weights, double alpha) {
  const int64_t m = static_cast<int64_t>(samples.size()) / n;
  double total = 0;
  for (int64_t i = 0; i < m; ++i) total += weights.empty() ? 1.0 : weights[i];
  const double scale = total > 0 ? static_cast<double>(m) / total : 0.0;
  Model q;
  q.kind = kind;
  q.A = A;
  q.n = n;
  if (kind == Learner::table) {
    const int64_t N = count_states(A, n);
    q.table.assign(N, alpha);
    for (int64_t i = 0; i < m; ++i)
      q.table[encode(&samples[i * n], A, n)] += scale * (weights.empty() ? 1.0 : weights[i]);
    double z = 0;
    for (double v : q.table) z += v;
    if (!(z > 0)) throw nk::Error(nk::Exit::runtime, "table fit: no samples and no smoothing (use --smoothing > 0)");
    for (double& v : q.table) v /= z;
    q.prepare();
    return q;
  }
  q.init.assign(A, alpha);
  const int positions = kind == Learner::markov ? std::max(n - 1, 0) : 1;
  q.trans.assign(static_cast<size_t>(positions) * A * A, alpha);
  for (int64_t i = 0; i < m; ++i) {
    const int* s = &samples[i * n];
    const double w = scale * (weights.empty() ? 1.0 : weights[i]);
    q.init[s[0]] += w;
    for (int j = 1; j < n; ++j) {
      const size_t base = kind == Learner::markov ? static_cast<size_t>(j - 1) * A * A : 0;
      q.trans[base + static_cast<size_t>(s[j - 1]) * A + s[j]] += w;
    }
  }
  auto normalise = [&](double* p) {
    double z = 0;
    for (int a = 0; a < A; ++a) z += p[a];
    if (!(z > 0)) {
      for (int a = 0; a < A; ++a) p[a] = 1.0 / A;  // no data and no smoothing: uniform
      return;
    }
    for (int a = 0; a < A; ++a) p[a] /= z;
  };
  normalise(q.init.data());
  for (size_t r = 0; r < q.trans.size(); r += A) normalise(&q.trans[r]);
  return q;
}

Model blend(const Model& old, const Model& fresh, double rate) {
  Model m = fresh;
  auto mixv = [&](std::vector<double>& out, const std::vector<double>& a) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = (1 - rate) * a[i] + rate * out[i];
  };
  mixv(m.init, old.init);
  mixv(m.trans, old.trans);
  mixv(m.table, old.table);
  m.prepare();
  return m;
}

void write_model(nk::h5::Writer& out, const std::string& group, const Model& m) {
  if (m.kind == Learner::table) {
    out.write(group + "/table", m.table.data(), {static_cast<int64_t>(m.table.size())}, "S");
    out.attr(group, "family", learner_name(m.kind));
    return;
  }
  out.write(group + "/init", m.init.data(), {m.A}, "A");
  if (m.kind == Learner::markov)
    out.write(group + "/trans", m.trans.data(), {std::max(m.n - 1, 0), m.A, m.A}, "J,A,A");
  else
    out.write(group + "/trans", m.trans.data(), {m.A, m.A}, "A,A");
  out.attr(group, "family", learner_name(m.kind));
}

}  // namespace ald
