// extractor.cpp - network and planted feature extractors (extractor.hpp).
#include "invariance-audit/extractor.hpp"

#include "invariance-audit/command.hpp"

#include <algorithm>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/shipped.hpp"
#include "nk/snn/model_file.hpp"

namespace ia {

namespace {

using nk::nn::Shape;

// A network, possibly cut: forward in training mode (its activations kept),
// backward to the input.
class NetworkExtractor : public Extractor {
 public:
  NetworkExtractor(nk::nn::Network<float> net, std::string name, int64_t capacity)
      : net_(std::move(net)), name_(std::move(name)), ws_(net_, capacity) {}
  Shape input() const override { return net_.input(); }
  int64_t dim() const override { return net_.output().size(); }
  std::string name() const override { return name_; }
  void rename(std::string name) override { name_ = std::move(name); }
  void features(const float* x, int64_t batch, float* f) override {
    nk::nn::forward(net_, x, batch, ws_);
    std::copy(ws_.output(), ws_.output() + batch * dim(), f);
    batch_ = batch;
    ++forwards;
  }
  void vjp(const float* g, int64_t batch, float* dx) override {
    if (batch != batch_) throw std::logic_error("extractor: vjp batch differs from the last features batch");
    nk::nn::backward(net_, g, batch, ws_, static_cast<nk::nn::Gradients<float>*>(nullptr), dx);
    ++backwards;
  }

 private:
  nk::nn::Network<float> net_;
  std::string name_;
  nk::nn::Workspace<float> ws_;
  int64_t batch_ = 0;
};

// A spiking network of spike-sft: its logits, or the last hidden layer's
// firing rates (penultimate); the input gradient by BPTT through the
// surrogate (nk::snn::input_gradient). Rate-coded networks draw their input
// spikes from one fixed stream at every call, so f is a function of x.
class SpikeExtractor : public Extractor {
 public:
  SpikeExtractor(nk::snn::Network net, Shape image, nk::snn::Output at, std::string name)
      : net_(std::move(net)), image_(image), at_(at), name_(std::move(name)) {}
  Shape input() const override { return image_; }
  int64_t dim() const override {
    const auto& sizes = net_.config.sizes;
    return at_ == nk::snn::Output::logits ? sizes.back() : sizes[static_cast<size_t>(net_.config.hidden_layers())];
  }
  std::string name() const override { return name_; }
  void rename(std::string name) override { name_ = std::move(name); }
  void features(const float* x, int64_t batch, float* f) override {
    if (!ws_ || ws_->batch() != batch) ws_ = std::make_unique<nk::snn::Workspace>(net_.config, batch);
    const nk::snn::Matrix xm = Eigen::Map<const nk::snn::Matrix>(x, batch, image_.size());
    nk::Rng coding(0x5eed);
    nk::snn::forward(net_, xm, nullptr, *ws_, &coding);
    const float scale = at_ == nk::snn::Output::rates ? 1.0f / static_cast<float>(net_.config.steps) : 1.0f;
    const nk::snn::Matrix& out = at_ == nk::snn::Output::logits ? ws_->output_logits() : ws_->spike_counts();
    Eigen::Map<nk::snn::Matrix>(f, batch, dim()) = out * scale;
    ++forwards;
  }
  void vjp(const float* g, int64_t batch, float* dx) override {
    if (!ws_ || ws_->batch() != batch) throw std::logic_error("extractor: vjp batch differs from the last features batch");
    const nk::snn::Matrix gm = Eigen::Map<const nk::snn::Matrix>(g, batch, dim());
    nk::snn::input_gradient(net_, *ws_, at_, gm, grad_);
    Eigen::Map<nk::snn::Matrix>(dx, batch, image_.size()) = grad_;
    ++backwards;
  }

 private:
  nk::snn::Network net_;
  Shape image_;
  nk::snn::Output at_;
  std::string name_;
  std::unique_ptr<nk::snn::Workspace> ws_;
  nk::snn::Matrix grad_;
};

/// A spike-sft model file as an extractor of images of shape 'image'.
std::unique_ptr<Extractor> open_spike(const std::string& path, const std::string& cut, const std::string& spec, Shape image) {
  if (!cut.empty() && cut != "penultimate") {
    throw nk::usage_error("--extractor " + spec + ": a spike-sft model is read whole (its logits) or at :penultimate (its last hidden layer's firing rates)");
  }
  nk::snn::Network net = nk::snn::read_model(path);
  const nk::snn::Config& c = net.config;
  if (c.conv()) {
    const Shape own{c.height, c.width, c.in_channels};
    if (!(own == image)) {
      throw nk::input_error(path, "/model/image", "the extractor takes images of " + own.text() + ", the queries are " + image.text());
    }
  } else if (c.sizes[0] != image.size()) {
    throw nk::input_error(path, "/model/sizes", "the extractor takes " + std::to_string(c.sizes[0]) + " inputs, the queries' images " +
                                                   image.text() + " have " + std::to_string(image.size()));
  }
  const auto at = cut.empty() ? nk::snn::Output::logits : nk::snn::Output::rates;
  return std::make_unique<SpikeExtractor>(std::move(net), image, at, spec);
}

// mask-left: f = the pixels of columns W/2.. (all rows, all channels).
class MaskLeft : public Extractor {
 public:
  explicit MaskLeft(Shape s) : s_(s), half_(s.w / 2) {}
  Shape input() const override { return s_; }
  int64_t dim() const override { return s_.h * (s_.w - half_) * s_.c; }
  std::string name() const override { return "planted:mask-left"; }
  void features(const float* x, int64_t batch, float* f) override {
    const int64_t kept = (s_.w - half_) * s_.c;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t y = 0; y < s_.h; ++y) {
        const float* row = x + (b * s_.h + y) * s_.w * s_.c + half_ * s_.c;
        std::copy(row, row + kept, f + (b * s_.h + y) * kept);
      }
    ++forwards;
  }
  void vjp(const float* g, int64_t batch, float* dx) override {
    const int64_t kept = (s_.w - half_) * s_.c;
    std::fill(dx, dx + batch * s_.size(), 0.0f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t y = 0; y < s_.h; ++y)
        std::copy(g + (b * s_.h + y) * kept, g + (b * s_.h + y + 1) * kept, dx + (b * s_.h + y) * s_.w * s_.c + half_ * s_.c);
    ++backwards;
  }

 private:
  Shape s_;
  int64_t half_;
};

// down4: f = means of 4x4 pixel blocks, per channel ([H/4, W/4, C]).
class Down4 : public Extractor {
 public:
  explicit Down4(Shape s) : s_(s) {}
  Shape input() const override { return s_; }
  int64_t dim() const override { return (s_.h / 4) * (s_.w / 4) * s_.c; }
  std::string name() const override { return "planted:down4"; }
  void features(const float* x, int64_t batch, float* f) override {
    const int64_t H = s_.h / 4, W = s_.w / 4, C = s_.c;
    std::fill(f, f + batch * dim(), 0.0f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t y = 0; y < s_.h; ++y)
        for (int64_t xx = 0; xx < s_.w; ++xx)
          for (int64_t c = 0; c < C; ++c)
            f[((b * H + y / 4) * W + xx / 4) * C + c] += x[((b * s_.h + y) * s_.w + xx) * C + c] / 16.0f;
    ++forwards;
  }
  void vjp(const float* g, int64_t batch, float* dx) override {
    const int64_t H = s_.h / 4, W = s_.w / 4, C = s_.c;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t y = 0; y < s_.h; ++y)
        for (int64_t xx = 0; xx < s_.w; ++xx)
          for (int64_t c = 0; c < C; ++c)
            dx[((b * s_.h + y) * s_.w + xx) * C + c] = g[((b * H + y / 4) * W + xx / 4) * C + c] / 16.0f;
    ++backwards;
  }

 private:
  Shape s_;
};

// flip: f(x) = h(x) + h(mirror x) for an inner extractor h: blind to
// left-right mirroring by construction (both orientations pass through h as
// one batch of 2B).
class Flip : public Extractor {
 public:
  Flip(std::unique_ptr<Extractor> inner, int64_t capacity)
      : h_(std::move(inner)), s_(h_->input()), both_(static_cast<size_t>(2 * capacity * s_.size())),
        fb_(static_cast<size_t>(2 * capacity * h_->dim())), gb_(fb_.size()), db_(both_.size()) {}
  Shape input() const override { return s_; }
  int64_t dim() const override { return h_->dim(); }
  std::string name() const override { return "planted:flip:" + h_->name(); }
  void features(const float* x, int64_t batch, float* f) override {
    const int64_t d = s_.size(), F = dim();
    std::copy(x, x + batch * d, both_.begin());
    for (int64_t b = 0; b < batch; ++b) mirror_image(x + b * d, both_.data() + (batch + b) * d, s_);
    h_->features(both_.data(), 2 * batch, fb_.data());
    for (int64_t j = 0; j < batch * F; ++j) f[j] = fb_[j] + fb_[batch * F + j];
    batch_ = batch;
    ++forwards;
  }
  void vjp(const float* g, int64_t batch, float* dx) override {
    if (batch != batch_) throw std::logic_error("extractor: vjp batch differs from the last features batch");
    const int64_t d = s_.size(), F = dim();
    std::copy(g, g + batch * F, gb_.begin());
    std::copy(g, g + batch * F, gb_.begin() + batch * F);
    h_->vjp(gb_.data(), 2 * batch, db_.data());
    for (int64_t b = 0; b < batch; ++b) {
      mirror_image(db_.data() + (batch + b) * d, dx + b * d, s_);
      for (int64_t j = 0; j < d; ++j) dx[b * d + j] += db_[b * d + j];
    }
    ++backwards;
  }

 private:
  std::unique_ptr<Extractor> h_;
  Shape s_;
  std::vector<float> both_, fb_, gb_, db_;
  int64_t batch_ = 0;
};

}  // namespace

void mirror_image(const float* in, float* out, Shape s) {
  for (int64_t y = 0; y < s.h; ++y)
    for (int64_t x = 0; x < s.w; ++x)
      for (int64_t c = 0; c < s.c; ++c) out[(y * s.w + x) * s.c + c] = in[(y * s.w + (s.w - 1 - x)) * s.c + c];
}

std::string pca32_path() { return nk::shipped_data("invariance-audit/pca32.h5"); }

std::unique_ptr<Extractor> open_extractor(const std::string& spec, Shape image, int64_t capacity) {
  if (spec.rfind("cmd:", 0) == 0) {
    if (spec.size() == 4) throw nk::usage_error("--extractor-cmd: an empty command");
    return command_extractor(spec.substr(4), image, capacity);
  }
  if (spec.rfind("planted:", 0) == 0) {
    const std::string kind = spec.substr(8);
    if (kind == "mask-left") {
      if (image.w < 2) throw nk::usage_error("--extractor planted:mask-left needs images at least 2 pixels wide");
      return std::make_unique<MaskLeft>(image);
    }
    if (kind == "down4") {
      if (image.h % 4 != 0 || image.w % 4 != 0) {
        throw nk::usage_error("--extractor planted:down4 needs image sides divisible by 4, found " + image.text());
      }
      return std::make_unique<Down4>(image);
    }
    if (kind == "pca32") {
      auto e = open_extractor(pca32_path(), image, capacity);
      e->rename("planted:pca32");
      return e;
    }
    if (kind.rfind("flip:", 0) == 0 && kind.size() > 5) {
      return std::make_unique<Flip>(open_extractor(kind.substr(5), image, 2 * capacity), capacity);
    }
    throw nk::usage_error("--extractor: unknown planted extractor '" + kind + "' (mask-left, down4, pca32 or flip:SPEC)");
  }
  std::string path = spec, cut;
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && colon > 0) {
    const std::string tail = spec.substr(colon + 1);
    const bool numeric = !tail.empty() && std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (numeric || tail == "penultimate") path = spec.substr(0, colon), cut = tail;
  }
  {
    const std::string schema = nk::h5::File::open(path).attr_string("/", "nk_schema").value_or("");
    if (schema.rfind("spike-sft.", 0) == 0) return open_spike(path, cut, spec, image);
  }
  nk::nn::ModelFile model = nk::nn::read_model(path);
  auto& layers = model.network.layers;
  size_t keep = layers.size();
  if (cut == "penultimate") {
    size_t last = layers.size();
    for (size_t i = layers.size(); i-- > 0;) {
      if (layers[i].spec.op == nk::nn::Op::linear || layers[i].spec.op == nk::nn::Op::conv2d) {
        last = i;
        break;
      }
    }
    if (last == 0 || last == layers.size()) {
      throw nk::input_error(path, "/model/arch", "has no layer before its last linear/conv2d layer: nothing is penultimate");
    }
    keep = last;
  } else if (!cut.empty()) {
    const long long at = std::stoll(cut.size() > 9 ? std::string("999999999") : cut);
    if (at < 0 || static_cast<size_t>(at) >= layers.size()) {
      throw nk::usage_error("--extractor " + spec + ": layer " + cut + " is not one of the " + std::to_string(layers.size()) +
                            " layers (0-based)");
    }
    keep = static_cast<size_t>(at) + 1;
  }
  layers.resize(keep);
  if (!(model.network.input() == image)) {
    throw nk::input_error(path, "/model", "the extractor takes images of " + model.network.input().text() +
                                              ", the queries are " + image.text());
  }
  return std::make_unique<NetworkExtractor>(std::move(model.network), spec, capacity);
}

}  // namespace ia
