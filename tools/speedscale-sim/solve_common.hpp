// solve_common.hpp - pieces solve, predict and eval share.
#pragma once
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "speedscale-sim/speedscale.hpp"

namespace ss {

std::vector<std::string> parse_algorithms(const std::string& list);
std::vector<double> parse_numbers(const std::string& option, const std::string& list);

/// The group names under /instances, sorted.
std::vector<std::string> instance_names(const nk::h5::File& file);
Instance read_instance(const nk::h5::File& file, const std::string& name);

/// A predictions file: per instance /predictions/NAME/{t,speed,job_speed,work},
/// or one shared profile /profile/{t,speed} (learned by predict --method mean|quantile).
class PredictionFile {
 public:
  explicit PredictionFile(const std::string& path);
  Prediction get(const Instance& inst, const std::vector<std::string>& algos) const;

 private:
  Profile read_profile(const std::string& group) const;
  nk::h5::File file_;
  std::optional<Profile> shared_;
};

}  // namespace ss
