// proxy_certify.hpp - the verbs of proxy-certify: train a base classifier
// under Gaussian noise, certify it by randomized smoothing, and hand
// certification to a one-forward proxy calibrated by conformal risk control.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nk/run_env.hpp"
#include "proxy-certify/classifier.hpp"

namespace pc {

inline constexpr const char* kCertifySchema = "proxy-certify.certify/1";
inline constexpr const char* kPredictSchema = "proxy-certify.predict/1";
inline constexpr const char* kApproveSchema = "proxy-certify.approve/1";
inline constexpr const char* kEvalSchema = "proxy-certify.eval/1";

struct TrainOptions {
  std::string input, output, test;
  bool no_clobber = false;
  std::string arch = "cnn";
  double sigma = 0.25;
  int64_t epochs = 10, batch = 128;
  double learning_rate = 1e-3, weight_decay = 0;
};
void train(const TrainOptions& o, const nk::RunEnv& env);

struct CertifyOptions {
  std::string input, output;
  bool no_clobber = false;
  ModelOptions model;
  std::optional<double> sigma;
  int64_t n0 = 100, n = 100000, batch = 1000;
  double alpha = 0.001;
};
void certify(const CertifyOptions& o, const nk::RunEnv& env);

struct PredictOptions {
  std::string input, output;
  bool no_clobber = false;
  ModelOptions model;
  std::optional<double> sigma;
  int64_t n = 1000, batch = 1000;
  double alpha = 0.001;
};
void predict(const PredictOptions& o, const nk::RunEnv& env);

struct CalibrateOptions {
  std::string input, output, head_data;
  bool no_clobber = false;
  ModelOptions model;
  std::optional<double> sigma;
  std::string proxy = "margin", recipe = "single";
  std::vector<double> radii{0.25, 0.5};
  double target = 0.05, alpha = 0.001, robust_tv = 0;
  int64_t n0 = 100, n = 10000, head_n = 1000, batch = 1000;
};
void calibrate(const CalibrateOptions& o, const nk::RunEnv& env);

struct ApproveOptions {
  std::string input, output, proxy;
  bool no_clobber = false;
  ModelOptions model;
  std::optional<double> sigma, radius;
  std::string mode = "standalone";
  int64_t n0 = 100, n = 100000, batch = 1000;
  double alpha = 0.001;
};
void approve(const ApproveOptions& o, const nk::RunEnv& env);

struct EvalOptions {
  std::string input, output, reference, head_data, svg;
  bool no_clobber = false;
  ModelOptions model;
  std::vector<double> radii{0.25, 0.5, 0.75, 1.0};
  double target = 0.05;
  int64_t splits = 1, calibration = 1000, cheap_n = 1000, head_n = 1000, batch = 1000;
};
void eval(const EvalOptions& o, const nk::RunEnv& env);

/// Checks shared by the verbs that smooth: alpha in (0, 0.5), counts >= 1.
void check_smoothing(double alpha, int64_t n0, int64_t n);

}  // namespace pc
