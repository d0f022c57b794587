// extractor.hpp - the feature extractors an audit can look at: an
// nk-nn.model/1 network (whole, or cut after a layer), or a planted one
// whose fibers are known. Each gives features f(x) of images in [0,1]
// pixels and the product of a vector with the Jacobian of f.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nk/nn/network.hpp"

namespace ia {

class Extractor {
 public:
  virtual ~Extractor() = default;
  virtual nk::nn::Shape input() const = 0;
  virtual int64_t dim() const = 0;
  virtual std::string name() const = 0;
  virtual void rename(std::string) {}
  /// f [batch, F] of images x [batch, H, W, C]; keeps what vjp() needs
  /// (x must stay alive until then).
  virtual void features(const float* x, int64_t batch, float* f) = 0;
  /// dx [batch, H, W, C] = g^T df/dx at the last features() call (same batch).
  virtual void vjp(const float* g, int64_t batch, float* dx) = 0;
  int64_t forwards = 0, backwards = 0;  ///< batched calls so far
};

/// SPEC: planted:mask-left (the right half's pixels; the left half is
/// free), planted:down4 (4x4 block means), planted:pca32 (the top 32
/// principal components of Fashion-MNIST, the shipped pca32.h5),
/// planted:flip:SPEC (h(x) + h(mirror x) for the extractor h = SPEC),
/// cmd:COMMAND (a program, --extractor-cmd; command.hpp), FILE (an nk-nn.model/1 network,
/// its output) or FILE:LAYER (its output after layer LAYER, 0-based, or
/// FILE:penultimate: everything before the last linear/conv2d layer).
/// 'image' is the shape of the images it will see: a network of another
/// input shape, or a planted extractor that does not fit it (down4 needs
/// sides divisible by 4), is exit 3 naming the file and dataset.
std::unique_ptr<Extractor> open_extractor(const std::string& spec, nk::nn::Shape image, int64_t capacity);

/// out [H, W, C] = in mirrored left-right (flip's second view; eval's flip queries).
void mirror_image(const float* in, float* out, nk::nn::Shape s);

/// The shipped PCA of planted:pca32 (nk-nn.model/1 with /pca/mean).
std::string pca32_path();

}  // namespace ia
