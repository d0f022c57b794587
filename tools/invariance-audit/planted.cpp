// planted.cpp - revealed invariances of the planted extractors (planted.hpp).
#include "invariance-audit/planted.hpp"

#include <Eigen/Core>
#include <cmath>
#include <vector>

#include "invariance-audit/extractor.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/model_file.hpp"

namespace ia {

namespace {

using nk::nn::Shape;

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// Splits an image into a fixed and a free part (each a vector); both rules
// compare the sample's parts with the query's.
class SplitRevealer : public Revealer {
 public:
  explicit SplitRevealer(RevealRule rule) : rule_(rule) {}
  bool revealed(const float* sample, const float* query) const override {
    std::vector<double> fs, rs, fq, rq;
    split(sample, fs, rs);
    split(query, fq, rq);
    std::vector<double> df(fs.size()), dr(rs.size());
    for (size_t j = 0; j < fs.size(); ++j) df[j] = fs[j] - fq[j];
    for (size_t j = 0; j < rs.size(); ++j) dr[j] = rs[j] - rq[j];
    const double nf = std::max(norm(fq), 1e-12), nr = std::max(norm(rq), 1e-12);
    return norm(df) <= rule_.fixed * nf && norm(dr) >= rule_.free * nr;
  }

 protected:
  virtual void split(const float* x, std::vector<double>& fixed, std::vector<double>& free) const = 0;
  RevealRule rule_;
};

class MaskLeftRevealer : public SplitRevealer {
 public:
  MaskLeftRevealer(Shape s, RevealRule rule) : SplitRevealer(rule), s_(s) {}

 private:
  void split(const float* x, std::vector<double>& fixed, std::vector<double>& free) const override {
    const int64_t half = s_.w / 2;
    for (int64_t y = 0; y < s_.h; ++y)
      for (int64_t xx = 0; xx < s_.w; ++xx)
        for (int64_t c = 0; c < s_.c; ++c) (xx >= half ? fixed : free).push_back(x[(y * s_.w + xx) * s_.c + c]);
  }
  Shape s_;
};

class Down4Revealer : public SplitRevealer {
 public:
  Down4Revealer(Shape s, RevealRule rule) : SplitRevealer(rule), s_(s) {}

 private:
  void split(const float* x, std::vector<double>& fixed, std::vector<double>& free) const override {
    const int64_t H = s_.h / 4, W = s_.w / 4, C = s_.c;
    fixed.assign(static_cast<size_t>(H * W * C), 0.0);
    for (int64_t y = 0; y < s_.h; ++y)
      for (int64_t xx = 0; xx < s_.w; ++xx)
        for (int64_t c = 0; c < C; ++c) fixed[((y / 4) * W + xx / 4) * C + c] += x[(y * s_.w + xx) * C + c] / 16.0;
    free.resize(static_cast<size_t>(s_.size()));
    for (int64_t y = 0; y < s_.h; ++y)
      for (int64_t xx = 0; xx < s_.w; ++xx)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t j = (y * s_.w + xx) * C + c;
          free[j] = x[j] - fixed[((y / 4) * W + xx / 4) * C + c];
        }
  }
  Shape s_;
};

// pca32: V [m, d] (orthonormal rows, the linear layer's weight over flat
// C,H,W values) and the mean image.
class PcaRevealer : public SplitRevealer {
 public:
  PcaRevealer(Shape s, RevealRule rule) : SplitRevealer(rule), s_(s) {
    const std::string path = pca32_path();
    const nk::nn::ModelFile model = nk::nn::read_model(path);
    const auto& layers = model.network.layers;
    if (layers.size() != 2 || layers[1].spec.op != nk::nn::Op::linear || !(model.network.input() == s)) {
      throw nk::input_error(path, "/model", "is not the flatten + linear PCA of " + s.text() + " images");
    }
    const int64_t d = s.size(), m = layers[1].spec.out;
    v_ = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(layers[1].weight.data(), m, d)
             .cast<double>();
    const nk::h5::File file = nk::h5::File::open(path);
    const nk::h5::Array<float> mean = file.read<float>("/pca/mean");
    if (static_cast<int64_t>(mean.data.size()) != d) throw nk::input_error(path, "/pca/mean", "is not one image of " + s.text());
    mean_.resize(d);
    for (int64_t j = 0; j < d; ++j) mean_[flat(j)] = mean.data[j];
  }

 private:
  // NHWC position -> the C,H,W order of flatten.
  int64_t flat(int64_t v) const { return (v % s_.c) * s_.h * s_.w + v / s_.c; }
  void split(const float* x, std::vector<double>& fixed, std::vector<double>& free) const override {
    const int64_t d = s_.size();
    Eigen::VectorXd c(d);
    for (int64_t j = 0; j < d; ++j) c[flat(j)] = x[j] - mean_[flat(j)];
    const Eigen::VectorXd a = v_ * c;
    const Eigen::VectorXd r = c - v_.transpose() * a;
    fixed.assign(a.data(), a.data() + a.size());
    free.assign(r.data(), r.data() + r.size());
  }
  Shape s_;
  Eigen::MatrixXd v_;
  Eigen::VectorXd mean_;
};

class FlipRevealer : public Revealer {
 public:
  explicit FlipRevealer(Shape s) : s_(s) {}
  bool revealed(const float* sample, const float* query) const override {
    double to_query = 0, to_mirror = 0;
    for (int64_t y = 0; y < s_.h; ++y)
      for (int64_t x = 0; x < s_.w; ++x)
        for (int64_t c = 0; c < s_.c; ++c) {
          const double v = sample[(y * s_.w + x) * s_.c + c];
          to_query += std::pow(v - query[(y * s_.w + x) * s_.c + c], 2);
          to_mirror += std::pow(v - query[(y * s_.w + (s_.w - 1 - x)) * s_.c + c], 2);
        }
    return to_mirror < to_query;
  }

 private:
  Shape s_;
};

}  // namespace

std::unique_ptr<Revealer> open_revealer(const std::string& spec, Shape image, RevealRule rule) {
  if (spec == "planted:mask-left") return std::make_unique<MaskLeftRevealer>(image, rule);
  if (spec == "planted:down4") return std::make_unique<Down4Revealer>(image, rule);
  if (spec == "planted:pca32") return std::make_unique<PcaRevealer>(image, rule);
  if (spec.rfind("planted:flip:", 0) == 0) return std::make_unique<FlipRevealer>(image);
  return nullptr;
}

}  // namespace ia
