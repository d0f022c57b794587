// proxy.hpp - the one-forward proxy: scores from a clean forward (margin, or
// a regressor head on penultimate features), the calibration losses of the
// two recipes, and the conformal-risk-control threshold.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "nk/dataset.hpp"
#include "nk/h5.hpp"
#include "proxy-certify/classifier.hpp"
#include "proxy-certify/smoothing.hpp"

namespace pc {

inline constexpr const char* kProxySchema = "proxy-certify.proxy/1";

/// What one clean forward tells about items [begin, end) of a file.
struct CleanPass {
  std::vector<int64_t> cls;      ///< c(x): the base classifier's arg-max
  std::vector<double> margin;    ///< top-1 minus top-2 logit
  std::vector<double> top_prob;  ///< the largest softmax probability
  Eigen::MatrixXd features;      ///< [items, F]: penultimate features (when asked for; nk-nn models only)
};
CleanPass clean_pass(Classifier& model, const nk::data::Source& data, int64_t begin, int64_t end, bool features);

/// The head: ridge regression of the CERTIFY radius (n = head_n samples, 0
/// where CERTIFY abstains or picks another class than c(x)) on
/// [penultimate features, margin, top probability, 1].
struct Head {
  Eigen::VectorXd weight;  ///< F + 3 entries (the last is the intercept)
  int64_t items = 0, n = 0, forwards = 0;
  double seconds = 0;
  bool empty() const { return weight.size() == 0; }
  std::vector<double> scores(const CleanPass& pass) const;
};
Head train_head(Classifier& model, const nk::data::Source& data, int64_t n0, int64_t n, double alpha, double sigma,
                uint64_t seed, int64_t batch, nk::DeviceKind device);
void write_head(nk::h5::Writer& out, const Head& head);
/// Reads /proxy/head of a proxy file (exit 3 naming it when the size is not F + 3).
Head read_head(const nk::h5::File& file, int64_t feature_size);

/// Proxy score of each item: "margin" or "head".
std::vector<double> proxy_scores(const std::string& kind, const CleanPass& pass, const Head& head);

/// B(r) of the single-sample recipe: 1 / (1 - Phi(r / sigma)).
double single_bound(double radius, double sigma);

/// lambda = inf{l : n/(n+1) Rhat(l) + B/(n+1) <= target} over the candidate
/// thresholds (the scores and +inf), Rhat(l) = mean_i 1{s_i >= l} F_i; +inf
/// when even approving nothing misses the target (B/(n+1) > target). Approve
/// r at x iff s(x) >= lambda. Taking the smallest score at which the bound
/// holds (not the infimum between two scores) only raises lambda: valid.
double crc_lambda(const std::vector<double>& scores, const std::vector<double>& losses, double bound, double target);

/// A fingerprint of the model (arch and parameters, or the command line) that
/// a proxy file records and approve checks.
std::string model_fingerprint(const Classifier& model);

}  // namespace pc
