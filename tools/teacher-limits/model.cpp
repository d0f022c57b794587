// model.cpp - teacher and data: generation, files, checks.
#include "teacher-limits/model.hpp"

#include <cmath>

#include "nk/error.hpp"
#include "nk/rng.hpp"

namespace tl {

TeacherSpec Teacher::spec() const {
  TeacherSpec s;
  s.d = d();
  s.v.assign(v.data(), v.data() + v.size());
  s.activation = activation;
  s.noise = noise;
  return s;
}

std::vector<double> power_readouts(int64_t k, double beta) {
  std::vector<double> v(static_cast<size_t>(k));
  double norm = 0;
  for (int64_t i = 0; i < k; ++i) {
    v[i] = std::pow(static_cast<double>(i + 1), -beta);
    norm += v[i] * v[i];
  }
  norm = std::sqrt(norm);
  for (double& x : v) x /= norm;
  return v;
}

void require_memory(const std::string& what, int64_t rows, int64_t cols) {
  const double bytes = 8.0 * static_cast<double>(rows) * static_cast<double>(cols);
  if (bytes > 64.0 * (1ull << 30))
    throw nk::usage_error(what + " would need " + std::to_string(static_cast<int64_t>(bytes / (1ull << 30))) +
                          " GiB (more than 64 GiB): make it smaller");
}

Teacher make_teacher(int64_t d, int64_t k, double beta, Act activation, double noise, uint64_t seed) {
  require_memory("the teacher", k, d);
  Teacher t;
  t.W.resize(k, d);
  nk::Rng rng = nk::Rng(seed).split(0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < d; ++j) t.W(i, j) = rng.normal();
  const std::vector<double> v = power_readouts(k, beta);
  t.v = Eigen::Map<const Vector>(v.data(), k);
  t.activation = activation;
  t.noise = noise;
  t.beta = beta;
  return t;
}

namespace {

template <class T>
nk::h5::Array<T> read_checked(const nk::h5::File& f, const std::string& ds, int rank, const std::string& axes) {
  f.require(ds);
  auto a = f.read<T>(ds, rank, axes);
  for (int64_t s : a.shape)
    if (s <= 0) throw nk::input_error(f.path(), ds, "is empty (shape " + nk::h5::shape_text(a.shape) + ")");
  nk::h5::require_finite(f.path(), ds, a);
  return a;
}

Matrix to_matrix(const nk::h5::Array<double>& a) {
  return Eigen::Map<const Matrix>(a.data.data(), a.shape[0], a.shape[1]);
}

}  // namespace

Teacher read_teacher(const nk::h5::File& f, const std::optional<std::string>& activation,
                     const std::optional<double>& noise) {
  Teacher t;
  const auto W = read_checked<double>(f, "/teacher/W", 2, "k,d");
  const auto v = read_checked<double>(f, "/teacher/v", 1, "k");
  if (v.shape[0] != W.shape[0])
    throw nk::input_error(f.path(), "/teacher/v", "has " + std::to_string(v.shape[0]) + " readouts but /teacher/W has " +
                                                      std::to_string(W.shape[0]) + " rows (k must match)");
  t.W = to_matrix(W);
  t.v = Eigen::Map<const Vector>(v.data.data(), v.shape[0]);
  if (activation) {
    t.activation = parse_activation(*activation);
  } else {
    const auto a = f.attr_string("/", "activation");
    if (!a) throw nk::input_error(f.path(), "", "has no root attribute 'activation' (give --activation)");
    t.activation = parse_activation(*a, f.path(), "attribute activation");
  }
  if (noise) {
    t.noise = *noise;
  } else {
    const auto x = f.attr_number("/", "noise");
    if (!x) throw nk::input_error(f.path(), "", "has no numeric root attribute 'noise' (give --noise)");
    t.noise = *x;
  }
  if (!(t.noise > 0) || !std::isfinite(t.noise))
    throw nk::input_error(f.path(), "attribute noise", "must be a finite Delta > 0, not " + std::to_string(t.noise));
  // A teacher's weights are O(1); beyond +-1e6 the SNR grid (v^2 / Delta) and
  // the pre-activations (w.x / sqrt d, cubed by he3) overflow.
  for (int64_t i = 0; i < t.v.size(); ++i) {
    if (std::abs(t.v[i]) > 1e6 || !std::isfinite(t.v[i] * t.v[i] / t.noise)) {
      throw nk::input_error(f.path(), "/teacher/v", "readout " + std::to_string(i) + " = " + std::to_string(t.v[i]) +
                                                        " (readouts must be within +-1e6, v^2 / Delta finite)");
    }
  }
  if (t.W.cwiseAbs().maxCoeff() > 1e6) {
    throw nk::input_error(f.path(), "/teacher/W", "an entry of magnitude " + std::to_string(t.W.cwiseAbs().maxCoeff()) +
                                                      " (weights must be within +-1e6)");
  }
  if (const auto b = f.attr_number("/", "beta")) t.beta = *b;
  return t;
}

void write_teacher(nk::h5::Writer& out, const Teacher& t) {
  out.write_matrix("/teacher/W", t.W, "k,d");
  out.write("/teacher/v", t.v.data(), {t.k()}, "k");
  // Shards of hmc and adam carry the same teacher: nk-data merge keeps one copy.
  out.attr("/teacher/W", "nk_merge", "same");
  out.attr("/teacher/v", "nk_merge", "same");
  out.attr("/", "activation", activation_name(t.activation));
  out.attr("/", "noise", t.noise);
  if (t.beta) out.attr("/", "beta", *t.beta);
  out.attr("/", "d", t.d());
  out.attr("/", "k", t.k());
}

Vector teacher_output(const Teacher& t, const Matrix& X) {
  const Activation act(t.activation);
  Matrix pre = X * t.W.transpose() / std::sqrt(static_cast<double>(t.d()));
  for (int64_t r = 0; r < pre.rows(); ++r)
    for (int64_t c = 0; c < pre.cols(); ++c) pre(r, c) = act(pre(r, c));
  return pre * t.v;
}

namespace {

Matrix gaussian_rows(int64_t n, int64_t d, nk::Rng rng) {
  Matrix X(n, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) X(i, j) = rng.normal();
  return X;
}

Vector noisy(const Vector& f, double noise, nk::Rng rng) {
  Vector y = f;
  const double sd = std::sqrt(noise);
  for (int64_t i = 0; i < y.size(); ++i) y[i] += sd * rng.normal();
  return y;
}

}  // namespace

Data make_data(const Teacher& t, int64_t n, int64_t m, uint64_t seed) {
  require_memory("the training set", n, t.d());
  require_memory("the test set", m, t.d());
  const nk::Rng root(seed);
  Data data;
  data.teacher = t;
  data.seed = seed;
  data.train_X = gaussian_rows(n, t.d(), root.split(1));
  data.train_y = noisy(teacher_output(t, data.train_X), t.noise, root.split(2));
  data.test_X = gaussian_rows(m, t.d(), root.split(3));
  data.test_f = teacher_output(t, data.test_X);
  data.test_y = noisy(data.test_f, t.noise, root.split(4));
  return data;
}

Data read_data(const nk::h5::File& f) {
  Data data;
  data.teacher = read_teacher(f);
  const int64_t d = data.teacher.d();
  auto matrix = [&](const std::string& ds) {
    const auto a = read_checked<double>(f, ds, 2, "n,d");
    if (a.shape[1] != d)
      throw nk::input_error(f.path(), ds, "has " + std::to_string(a.shape[1]) + " columns but /teacher/W has d = " +
                                              std::to_string(d));
    return to_matrix(a);
  };
  auto vector = [&](const std::string& ds, int64_t rows) {
    const auto a = read_checked<double>(f, ds, 1, "n");
    if (a.shape[0] != rows)
      throw nk::input_error(f.path(), ds, "has " + std::to_string(a.shape[0]) + " values for " + std::to_string(rows) + " rows");
    return Vector(Eigen::Map<const Vector>(a.data.data(), rows));
  };
  data.train_X = matrix("/train/X");
  data.train_y = vector("/train/y", data.train_X.rows());
  data.test_X = matrix("/test/X");
  data.test_f = vector("/test/f", data.test_X.rows());
  data.test_y = vector("/test/y", data.test_X.rows());
  return data;
}

void write_data(nk::h5::Writer& out, const Data& data) {
  write_teacher(out, data.teacher);
  out.write_matrix("/train/X", data.train_X, "n,d");
  out.write("/train/y", data.train_y.data(), {static_cast<int64_t>(data.train_y.size())}, "n");
  out.write_matrix("/test/X", data.test_X, "m,d");
  out.write("/test/f", data.test_f.data(), {static_cast<int64_t>(data.test_f.size())}, "m");
  out.write("/test/y", data.test_y.data(), {static_cast<int64_t>(data.test_y.size())}, "m");
  if (data.seed) out.attr("/", "data_seed", std::to_string(*data.seed));
}

}  // namespace tl
