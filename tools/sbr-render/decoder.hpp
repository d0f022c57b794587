// decoder.hpp - the feedforward multi-scale stroke decoder: a small MLP that
// looks at a window of the target and of the canvas painted so far and
// predicts one stroke for the window plus the loss reduction that stroke
// brings (its gain). Decoding runs coarse to fine over grids of windows; the
// stroke budget is allocated across scales by the predicted gains.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "nk/run_env.hpp"
#include "sbr-render/paint.hpp"

namespace sbr {

inline constexpr const char* kDecoderSchema = "sbr-render.decoder/1";

struct Decoder {
  static constexpr int kPatch = 8;                        ///< window sampled at kPatch x kPatch
  static constexpr int kInputs = 2 * kPatch * kPatch * 3;  ///< target and canvas windows
  static constexpr int kOutputs = kStrokeParams + 1;      ///< stroke + gain
  int hidden = 128;
  // y = prior(x) + W3 relu(W2 relu(W1 x + b1) + b2) + b3, row-vector convention (x W).
  Eigen::MatrixXf w1, w2, w3;
  Eigen::RowVectorXf b1, b2, b3;
  void init(int hidden_units, uint64_t seed);
  int64_t parameter_count() const;
};

/// Loads a decoder file; exit 3 for another schema version or wrong shapes.
Decoder load_decoder(const std::string& path);
void save_decoder(const std::string& path, bool no_clobber, const Decoder& decoder,
                  const std::vector<std::pair<std::string, double>>& attributes);

/// The file 'paint' uses without --decoder: the installed copy of the model
/// shipped in data/, else the one in the source tree.
std::string default_decoder_path();

/// What the decoder did with the budget.
struct DecodeReport {
  std::vector<int> grid;       ///< windows per side at each scale, coarse to fine
  std::vector<int> allocated;  ///< strokes kept at each scale
};

/// Structural initialisation: 'strokes' strokes, coarse to fine.
Painting decode_strokes(const Decoder& decoder, const Target& target, int strokes, int threads,
                        DecodeReport* report = nullptr);

struct TrainDecoderOptions {
  std::string output, images;  ///< images: nk-data /images or an image file (optional)
  bool no_clobber = false;
  int steps = 6000, batch = 64, hidden = 128;
  double learning_rate = 1e-3;
};
void train_decoder(const TrainDecoderOptions& o, const nk::RunEnv& env);

}  // namespace sbr
