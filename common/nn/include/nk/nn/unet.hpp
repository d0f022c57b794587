// unet.hpp - the small time-conditioned U-Net of a diffusion / flow-matching
// prior, made of nk::nn layer chains: a sinusoidal time embedding and its MLP,
// residual blocks (GroupNorm, SiLU, conv 3x3, the embedding added per
// channel, a 1x1 skip where the width changes), stride-2 down-sampling,
// nearest up-sampling + conv, skip concatenation along channels, and an
// optional conditioning vector (an MLP embedding added to the time
// embedding: the "dedicated" conditional generator). Explicit forward and
// backward with parameter gradients and the input gradient (guidance needs
// d/dx of the velocity).
//
// The program, for levels l = 0..L-1 (level l at image / 2^l, width c_l):
//   e = time_mlp(sinusoid(t)) [+ cond_mlp(cond)]
//   h = conv_in(x)
//   down:  h = res_down[l](h, e); skip_l = h; h = down[l](h)   (not after the last level)
//   mid:   h = mid(h, e)
//   up:    h = res_up[l](concat(h, skip_l), e); h = up[l](h)    (l = L-1..0; up[l] for l > 0: upsample 2, conv c_l -> c_{l-1})
//   v = out(h)    (groupnorm, silu, conv c_0 -> C)
// Each part is a Network<T> chain with its own name (time.mlp, down0.res.a,
// ...); files store a part as nk-nn.model/1's /model under /prior/parts/NAME.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/nn/network.hpp"

namespace nk::nn {

struct UNetConfig {
  Shape image{28, 28, 1};
  std::vector<int64_t> channels{32, 64, 128};  ///< width per level; image sides divisible by 2^(levels - 1)
  int64_t groups = 8;                          ///< GroupNorm groups (every width divisible by it)
  int64_t time_dim = 128;                      ///< embedding width E; the sinusoid has channels[0] values
  int64_t cond_dim = 0;                        ///< width of the conditioning vector (0: unconditional)
  /// "channels=32,64,128 groups=8 time_dim=128 cond_dim=0" and back.
  std::string text() const;
  static UNetConfig parse(const std::string& text, Shape image);
};

/// Sinusoidal embedding of times t [batch] in [0, 1]: values j < D/2 are
/// sin(1000 t w_j), values j >= D/2 cos(1000 t w_j), w_j = 10000^(-j/(D/2)) (DDPM's,
/// with t scaled to its 1000 steps).
template <class T>
void time_embedding(const T* t, int64_t batch, int64_t dim, T* out);

template <class T>
class UNet {
 public:
  /// Builds the parts; throws std::invalid_argument saying what does not fit
  /// (a width not divisible by the groups, a side not divisible by 2^(L-1)).
  static UNet build(const UNetConfig& config);
  /// torch's default initialisation of every part (nk::nn::Network::init with
  /// per-part seeds); the last conv of 'out' is scaled by 'out_scale' (0: the
  /// velocity starts at zero, the usual choice for training; tests keep 1).
  void init(uint64_t seed, double out_scale = 1.0);
  template <class U>
  UNet<U> cast() const;

  const UNetConfig& config() const { return config_; }
  int64_t parameter_count() const;
  double forward_macs() const;  ///< one item's multiply-adds

  /// Every part in a fixed order, and its name.
  std::vector<Network<T>> parts;
  std::vector<std::string> names;
  int64_t levels() const { return static_cast<int64_t>(config_.channels.size()); }

  // Indices into parts (the program above).
  struct Res {
    int64_t a = -1, b = -1, emb = -1, skip = -1;  ///< skip < 0: identity
  };
  int64_t time_mlp = -1, cond_mlp = -1, conv_in = -1, out = -1;
  std::vector<Res> res_down, res_up;  ///< per level
  Res mid;
  std::vector<int64_t> down, up;      ///< per level; -1 where there is none

 private:
  template <class U>
  friend class UNet;
  UNetConfig config_;
};

template <class T>
struct UNetGradients {
  std::vector<Gradients<T>> parts;
  void resize(const UNet<T>& net);
};

/// Buffers of one forward/backward for up to 'capacity' items.
template <class T>
class UNetWorkspace {
 public:
  UNetWorkspace() = default;
  UNetWorkspace(const UNet<T>& net, int64_t capacity) { reserve(net, capacity); }
  void reserve(const UNet<T>& net, int64_t capacity);
  int64_t capacity() const { return capacity_; }
  const T* output() const;  ///< [batch, H, W, C] after forward()

  // Per part; per residual block its sums; per level the skip, concat and
  // their gradients (public for the forward/backward in unet.cpp).
  int64_t capacity_ = 0;
  std::vector<Workspace<T>> part;
  std::vector<T> sinusoid, emb, demb;
  struct ResBuffers {
    std::vector<T> sum, out;    ///< a(x) + emb; the block's output
    std::vector<T> dsum, dx, de; ///< gradients
  };
  std::vector<ResBuffers> res;  ///< down blocks, mid, up blocks (2L + 1)
  std::vector<std::vector<T>> concat, dconcat, dskip;  ///< per level
  std::vector<T> dh_a, dh_b;    ///< ping-pong gradients of the trunk
  const T* x = nullptr;
  int64_t batch = 0;
};

/// v = net(x, t, cond): x [batch, H, W, C], t [batch], cond [batch, cond_dim]
/// (nullptr when the net has none). The inputs must stay alive until backward().
template <class T>
void forward(const UNet<T>& net, const T* x, const T* t, const T* cond, int64_t batch, UNetWorkspace<T>& ws);

/// Back-propagates dv [batch, H, W, C] through the last forward(): parameter
/// gradients (overwritten) when 'grads' is given, d/dx [batch, H, W, C] when
/// 'input_grad' is given, d/dcond when 'cond_grad' is given.
template <class T>
void backward(const UNet<T>& net, const T* dv, UNetWorkspace<T>& ws, UNetGradients<T>* grads, T* input_grad,
              T* cond_grad = nullptr);

/// Stores the U-Net under GROUP: attributes unet (UNetConfig::text) and image
/// ("H,W,C"), every part as GROUP/parts/NAME in nk-nn.model/1's layout.
void write_unet(h5::Writer& out, const UNet<float>& net, const std::string& group);
/// Reads it back: exit 3 naming the file and dataset for a malformed
/// attribute, a missing part, a part whose layers differ from the
/// configuration's, a parameter of another shape or non-finite.
UNet<float> read_unet(const h5::File& file, const std::string& group);

}  // namespace nk::nn
