// snn.hpp - nk::snn, the spiking networks of spike-sft (and the extractors
// invariance-audit reads from its files): leaky integrate-and-fire (LIF)
// MLP layers unrolled over T steps, a linear rate readout, surrogate
// gradients and exact backpropagation through time (BPTT), batched.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nk/rng.hpp"

namespace nk::snn {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;

enum class Reset { subtract, zero };
/// Heaviside spikes with the derivative of a fast sigmoid or of atan in the
/// backward pass; 'sigmoid' spikes smoothly (s = sigma(slope x)) in both
/// passes, so that BPTT is an exact gradient (used to check BPTT against
/// finite differences).
enum class Surrogate { fast_sigmoid, atan, sigmoid };
enum class Coding { direct, rate };

struct Config {
  std::vector<int64_t> sizes;  ///< inputs, hidden LIF layers..., classes
  int64_t steps = 8;           ///< T
  float beta = 0.9f;           ///< leak per step
  float threshold = 1.0f;
  Reset reset = Reset::subtract;
  Surrogate surrogate = Surrogate::fast_sigmoid;
  float slope = 25.0f;  ///< fast sigmoid k, atan alpha, or the sigmoid's slope
  Coding coding = Coding::direct;
  /// A convolutional network when not empty: block h is a 3x3 convolution
  /// (stride 1, zero padding 1) to channels[h] maps, LIF neurons at every
  /// position and channel, and 2x2 average pooling of their spikes; the
  /// readout is linear in the last block's pooled spike counts. The input is
  /// an image of height x width x in_channels (rows of x in that order, channels
  /// last); sizes is then {inputs, pooled units of each block..., classes}.
  std::vector<int64_t> channels;
  int64_t height = 0, width = 0, in_channels = 1;
  bool conv() const { return !channels.empty(); }
  /// Spatial side of block h's input (h = blocks: the last pooled maps).
  int64_t map_height(int64_t h) const { return height >> h; }
  int64_t map_width(int64_t h) const { return width >> h; }
  int64_t map_channels(int64_t h) const { return h == 0 ? in_channels : channels[static_cast<size_t>(h) - 1]; }
  /// Fills sizes from the image shape, channels and classes (conv networks);
  /// throws std::invalid_argument when a side does not halve evenly.
  void set_conv(int64_t height, int64_t width, int64_t in_channels, const std::vector<int64_t>& channels, int64_t classes);
  int64_t hidden_layers() const { return static_cast<int64_t>(sizes.size()) - 2; }
  int64_t layers() const { return static_cast<int64_t>(sizes.size()) - 1; }  ///< weight layers
  /// Shape of weight layer l: [out, in] for dense layers, [channels, 9 x
  /// input channels] for a convolution (column c*9 + 3*dy + dx).
  int64_t weight_rows(int64_t l) const;
  int64_t weight_cols(int64_t l) const;
  /// Columns of weight layer l per unit of its input (l >= 1): 1 for a dense
  /// layer, 9 for a convolution (one 3x3 kernel per input channel), and the
  /// pooled positions P of the last block for the readout of a conv network
  /// (column c * P + p). Permuting the previous layer's units moves these
  /// column groups.
  int64_t input_group(int64_t l) const;
  /// Number of parameters: every W and b [rows].
  int64_t parameter_count() const;
};

Reset parse_reset(const std::string& name);
Surrogate parse_surrogate(const std::string& name);
Coding parse_coding(const std::string& name);
std::string name_of(Reset r);
std::string name_of(Surrogate s);
std::string name_of(Coding c);

/// Weights of layer l map sizes[l] inputs to sizes[l+1] outputs.
struct Network {
  Config config;
  std::vector<Matrix> weight;  ///< [out, in]
  std::vector<Vector> bias;    ///< [out]
  /// Kaiming-uniform-like initialisation scaled so hidden layers fire.
  static Network init(const Config& config, nk::Rng& rng);
  /// Parameters flattened layer by layer (W row-major, then b), and back.
  Eigen::VectorXd flat() const;
  void set_flat(const Eigen::VectorXd& theta);
};

/// Where an input gradient starts: the readout's logits, or the last hidden
/// layer's firing rates (spike counts / T, the readout's input: the
/// network's penultimate features).
enum class Output { logits, rates };

/// Per-layer firing rates and the loss of one batch.
struct BatchStats {
  double loss = 0;
  int64_t correct = 0;
  std::vector<double> rate;  ///< mean spikes per neuron and step, per hidden layer
};

/// Buffers of one batch size, reused across batches (nothing is allocated in
/// the time loop). Holds every step's membrane potentials for BPTT.
class Workspace {
 public:
  Workspace(const Config& config, int64_t batch);
  int64_t batch() const { return batch_; }
  /// Activation bytes held for BPTT (potentials and spikes of all T steps).
  int64_t activation_bytes() const;
  /// After forward(): hidden layer h's input currents and spikes, one column
  /// per neuron (per channel in a conv block), rows over steps and examples
  /// (and positions); with direct coding the first layer's currents have one
  /// row per example (the same at every step).
  const Matrix& currents(int64_t h) const { return current[static_cast<size_t>(h)]; }
  const Matrix& spikes_of(int64_t h) const { return spikes[static_cast<size_t>(h)]; }
  /// After forward(): the softmax of the readout [B, classes].
  const Matrix& output_probabilities() const { return probabilities; }
  /// After forward(): the readout's logits [B, classes], and the last hidden
  /// layer's spikes summed over the steps [B, its units] (a conv network:
  /// the last block's pooled maps, unit c * P + p), the readout's input
  /// times T.
  const Matrix& output_logits() const { return logits; }
  const Matrix& spike_counts() const { return rate_sum; }

 private:
  friend BatchStats forward(const Network&, const Matrix&, const int64_t*, Workspace&, nk::Rng*, const Matrix*);
  friend void backward(const Network&, const int64_t*, Workspace&, const std::function<void(int64_t, const Eigen::Ref<const Matrix>&, const Eigen::Ref<const Matrix>&)>&);
  friend void input_gradient(const Network&, Workspace&, Output, const Matrix&, Matrix&);
  friend BatchStats forward_conv(const Network&, const Matrix&, const int64_t*, Workspace&, nk::Rng*);
  friend void backward_conv(const Network&, const Matrix&, Output, Workspace&, const std::function<void(int64_t, const Eigen::Ref<const Matrix>&, const Eigen::Ref<const Matrix>&)>*, Matrix*);
  friend void backward_dense(const Network&, const Matrix&, Output, Workspace&, const std::function<void(int64_t, const Eigen::Ref<const Matrix>&, const Eigen::Ref<const Matrix>&)>*, Matrix*);
  friend void readout(const Network&, const int64_t*, Workspace&, BatchStats&);
  int64_t batch_;
  Matrix input;                 ///< [T*B, in] coded input (rate coding) or [B, in] (direct)
  std::vector<Matrix> current;  ///< per hidden layer: [T*B, n] input currents
  std::vector<Matrix> potential;  ///< per hidden layer: [T*B, n] pre-reset potentials V[t]
  std::vector<Matrix> spikes;     ///< per hidden layer: [T*B, n]
  // Convolutional networks: per block h, with R = B x positions of the
  // block, rows ordered (step, example, y, x) and columns by channel.
  std::vector<Matrix> patches;       ///< [T*R (or R), 9 x input channels]: the 3x3 neighbourhoods
  std::vector<Matrix> pooled;        ///< [T*R/4, channels]: 2x2 means of the spikes
  std::vector<Matrix> conv_grad_v, conv_grad_s;  ///< [T*R, channels]
  std::vector<Matrix> grad_patches;  ///< [T*R, 9 x input channels]
  std::vector<Matrix> grad_pooled;   ///< like pooled
  Matrix logits, probabilities;   ///< [B, classes]
  Matrix grad_v, grad_s;          ///< scratch [T*B, n] for the widest layer
  Matrix rate_sum;                ///< [B, last hidden]: spikes summed over t
};

/// Runs the batch (rows of x: flattened inputs in [0, 1]); labels may be null
/// (no loss). rng is used by rate coding only. first_currents, where given,
/// are the first layer's currents x W0^T + b0 [B, sizes[1]] computed by the
/// caller (a dense first layer under direct coding only; see BaseCurrents).
BatchStats forward(const Network& net, const Matrix& x, const int64_t* labels, Workspace& ws, nk::Rng* rng,
                   const Matrix* first_currents = nullptr);
/// What backward hands over per weight layer l: the gradient with respect to
/// the layer's outputs (currents or logits), gv [R, out], and the layer's
/// inputs x [R, in], over the same R rows (steps x examples). Then
/// dL/dW = gv^T x and dL/db = the column sums of gv: a sink computes all of
/// them (dense training) or only masked entries (selective fine-tuning).
using LayerSink = std::function<void(int64_t layer, const Eigen::Ref<const Matrix>& gv, const Eigen::Ref<const Matrix>& x)>;

/// BPTT of the mean cross-entropy of the last forward() batch (through
/// every step, the reset included), layer by layer from the readout down.
void backward(const Network& net, const int64_t* labels, Workspace& ws, const LayerSink& sink);

/// grad_x [B, inputs] = g^T d(output)/dx for the last forward() batch, g
/// [B, outputs] (classes for logits, the last hidden layer's units for
/// rates): BPTT through every step with the surrogate derivative in place of
/// the spikes' Heaviside step, down to the pixels (through the first
/// convolution's patches in a conv network). Under rate coding the coded
/// input's gradient is summed over the steps (straight through the Bernoulli
/// draws, whose mean is x). With the 'sigmoid' surrogate it is the exact
/// gradient.
void input_gradient(const Network& net, Workspace& ws, Output at, const Matrix& g, Matrix& grad_x);

/// The dense gradients, accumulated into buffers shaped like the weights.
void backward(const Network& net, const int64_t* labels, Workspace& ws, std::vector<Matrix>& grad_weight,
              std::vector<Vector>& grad_bias);

/// Dense gradients of every weight and bias, with buffers reused across
/// batches, also flattened in Network::flat()'s layout (for nk::Adam).
class DenseGradient {
 public:
  explicit DenseGradient(const Network& net);
  /// BPTT of the last forward() batch into weight and bias.
  void compute(const Network& net, const int64_t* labels, Workspace& ws);
  /// The last computed gradient, flattened.
  const Eigen::VectorXd& flat();
  std::vector<Matrix> weight;
  std::vector<Vector> bias;

 private:
  Eigen::VectorXd flat_;
};

}  // namespace nk::snn
