// network.hpp - image and vector networks as a chain of layers, each with an
// explicit forward and backward (weight AND input gradients, no autograd).
//
// Layout: a batch of items is row-major [B, H, W, C] (NHWC, as nk-data stores
// images); a flat item (after flatten or linear) is [B, F] with H = W = 1,
// C = F. Parameters keep torch's shapes (linear [OUT, IN], conv2d
// [OUT, IN, K, K]) and flatten uses torch's C,H,W order, so a torch
// state_dict loads unchanged. Scalar T is float (the tools; products through
// nk::kernels) or double (the finite-difference checks).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nk::nn {

enum class Op { flatten, linear, conv2d, relu, silu, gelu, tanh, maxpool, avgpool, upsample, groupnorm, layernorm, batchnorm };

/// One line of /model/arch (nk-nn.model/1): `flatten`, `linear IN OUT`,
/// `conv2d IN OUT K STRIDE PAD`, `relu`, `silu`, `gelu`, `tanh`, `maxpool K`,
/// `avgpool K` (window = stride = K, floor), `upsample K` (nearest),
/// `groupnorm G C`, `layernorm F` (over a flat item's F values), `batchnorm C`
/// (inference: running statistics, eps 1e-5; the affine part trains).
struct LayerSpec {
  Op op = Op::relu;
  int64_t in = 0, out = 0;  ///< linear/conv2d IN OUT; groupnorm G C as in = G, out = C; layernorm/batchnorm: out
  int64_t k = 0, stride = 1, pad = 0;
  /// Parses one line; throws std::invalid_argument saying what is wrong
  /// ("unknown layer 'conv3d'", "conv2d takes IN OUT K STRIDE PAD").
  static LayerSpec parse(const std::string& line);
  std::string text() const;  ///< the line parse() reads back
};

/// One item's shape.
struct Shape {
  int64_t h = 1, w = 1, c = 1;
  int64_t size() const { return h * w * c; }
  std::string text() const;  ///< "H,W,C"
  bool operator==(const Shape&) const = default;
};

template <class T>
struct Layer {
  LayerSpec spec;
  Shape in, out;               ///< item shapes around the layer
  std::vector<T> weight, bias; ///< trainable (empty where the layer has none)
  std::vector<T> running_mean, running_var;  ///< batchnorm only
  /// Shapes of weight and bias as torch stores them (empty: none).
  std::vector<int64_t> weight_shape() const;
  std::vector<int64_t> bias_shape() const;
};

/// Largest layer width and item size accepted (refused before allocating).
inline constexpr int64_t kMaxItemValues = int64_t{1} << 26;
inline constexpr int64_t kMaxParameters = int64_t{1} << 31;

template <class T>
class Network {
 public:
  /// Checks that the layers chain from 'input' (each layer's IN matches the
  /// shape reaching it; pools fit; sizes within bounds) and sets every
  /// layer's shapes; parameters are zero-sized until init() or a load.
  /// Throws std::invalid_argument naming the layer ("layer 3 (linear 400
  /// 10): input has 784 values").
  static Network build(const std::vector<LayerSpec>& specs, Shape input);
  /// torch's default initialisation: weights and biases of linear/conv2d
  /// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); norm weights 1, biases 0; running
  /// mean 0, variance 1.
  void init(uint64_t seed);
  /// The same network in another scalar type.
  template <class U>
  Network<U> cast() const;

  Shape input() const { return input_; }
  Shape output() const { return layers.empty() ? input_ : layers.back().out; }
  int64_t parameter_count() const;
  std::vector<std::string> arch() const;
  /// Multiply-adds of one item's forward (linear and conv2d).
  double forward_macs() const;

  std::vector<Layer<T>> layers;

 private:
  Shape input_;
};

/// Parameter gradients, one weight and bias vector per layer (shaped as the layer's).
template <class T>
struct Gradients {
  std::vector<std::vector<T>> weight, bias;
  void resize(const Network<T>& net);
};

/// training: every layer's output is kept for backward(). inference: no
/// backward follows, so a conv2d + relu (+ maxpool) chain may run fused in
/// float (only the last fused layer's activation() is then written).
enum class Pass { training, inference };

/// Buffers of one forward/backward for batches of up to 'capacity' items,
/// allocated once (no allocation inside a step).
template <class T>
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Network<T>& net, int64_t capacity) { reserve(net, capacity); }
  void reserve(const Network<T>& net, int64_t capacity);
  int64_t capacity() const { return capacity_; }
  /// Output of layer i (i = -1: the input), [batch, layers[i].out] after forward().
  const T* activation(int64_t i) const { return i < 0 ? input_ : act_[i].data(); }
  const T* output() const { return act_.back().data(); }

 private:
  template <class U>
  friend void forward(const Network<U>&, const U*, int64_t, Workspace<U>&, Pass);
  template <class U>
  friend void backward(const Network<U>&, const U*, int64_t, Workspace<U>&, Gradients<U>*, U*);
  int64_t capacity_ = 0;
  const T* input_ = nullptr;
  std::vector<std::vector<T>> act_;    ///< per layer output
  std::vector<std::vector<T>> aux_;    ///< per layer: im2col columns, or per-group mean and 1/std
  std::vector<std::vector<int32_t>> argmax_;  ///< maxpool: the input index each output took
  std::vector<std::vector<T>> packed_;        ///< conv2d: weights as [K, K, IN, OUT] (direct convolution)
  std::vector<T> grad_a_, grad_b_;     ///< ping-pong gradients of activations
  std::vector<T> dcol_;                ///< gradient of a conv2d layer's columns
};

/// Runs the network on x [batch, input] (batch <= capacity); the input must
/// stay alive until backward(). Threads: OpenMP over the batch (and inside
/// the products).
template <class T>
void forward(const Network<T>& net, const T* x, int64_t batch, Workspace<T>& ws, Pass pass = Pass::training);

/// Back-propagates d(loss)/d(output) [batch, output] through the last
/// forward(): writes the parameter gradients (overwritten, not accumulated)
/// when 'grads' is given, and d(loss)/d(input) [batch, input] when
/// 'input_grad' is given.
template <class T>
void backward(const Network<T>& net, const T* output_grad, int64_t batch, Workspace<T>& ws, Gradients<T>* grads,
              T* input_grad);

/// Mean softmax cross-entropy of logits [batch, classes] against labels;
/// writes d(loss)/d(logits) into 'grad' when given. Returns the loss and adds
/// the number of correct arg-max predictions to 'correct' when given.
template <class T>
double softmax_cross_entropy(const T* logits, const int64_t* labels, int64_t batch, int64_t classes, T* grad,
                             int64_t* correct = nullptr);

}  // namespace nk::nn
