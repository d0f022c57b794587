// spike_sft.hpp - the verbs of spike-sft: train a spiking network (pretrain)
// and measure it (eval). Selective fine-tuning (SPE) and merging (PickIt)
// build on these.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn.hpp"

namespace spike {

inline constexpr const char* kModelSchema = "spike-sft.model/1";
inline constexpr const char* kEvalSchema = "spike-sft.eval/1";

/// Labelled examples: x [N, D] in [0, 1] (images flattened), labels [N].
struct Dataset {
  snn::Matrix x;
  std::vector<int64_t> labels;
  std::vector<int64_t> shape;  ///< one example's shape (H, W, C), for checks
  int64_t classes = 0;         ///< max label + 1
  int64_t size() const { return x.rows(); }
};

/// Reads /images [N,H,W,C] (or /vectors [N,D]) and /labels [N] of an nk-data
/// file; refuses NaN, values outside [0, 1] after scaling, negative labels
/// and empty files (exit 3, naming the dataset).
Dataset read_dataset(const std::string& path);

struct TrainOptions {
  std::string input = "-", test, output = "-";
  bool no_clobber = false;
  std::vector<int64_t> hidden = {256};
  int64_t steps = 8, epochs = 5, batch = 128, limit = 0;
  double beta = 0.9, threshold = 1.0, slope = 25.0, learning_rate = 1e-3, holdout = 0.1;
  std::string reset = "subtract", surrogate = "fast-sigmoid", coding = "direct";
  uint64_t seed = 0;
};
void pretrain(const TrainOptions& options);

struct EvalOptions {
  std::string input, data = "-", output;
  bool no_clobber = false;
  int64_t batch = 256;
  uint64_t seed = 0;
};
void eval(const EvalOptions& options);

/// Model files (schema spike-sft.model/1).
snn::Network read_model(const std::string& path);

/// Accuracy, mean loss and per-layer firing rates of 'net' on 'data'.
snn::BatchStats evaluate(const snn::Network& net, const Dataset& data, int64_t batch, uint64_t seed);

}  // namespace spike
