// command.cpp - --extractor-cmd and --prior-cmd (command.hpp).
#include "invariance-audit/command.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "nk/command.hpp"
#include "nk/error.hpp"

namespace ia {

namespace {

using nk::nn::Shape;

// One reply: int64 n (must be 'expected') then n float32 values.
void read_reply(nk::Coprocess& p, const std::string& name, float* out, int64_t expected, const std::string& what) {
  int64_t n = 0;
  p.read(&n, sizeof n, what + " (its length)");
  if (n != expected) {
    throw nk::Error(nk::Exit::input, name + ": " + what + " has " + std::to_string(n) + " values, " + std::to_string(expected) +
                                         " expected");
  }
  p.read(out, sizeof(float) * static_cast<size_t>(n), what);
  for (int64_t j = 0; j < n; ++j) {
    if (!std::isfinite(out[j])) throw nk::Error(nk::Exit::input, name + ": value " + std::to_string(j) + " of " + what + " is not finite");
  }
}

void write_head(nk::Coprocess& p, int64_t op, int64_t batch) {
  const int64_t head[2] = {op, batch};
  p.write(head, sizeof head);
}

class CommandExtractor : public Extractor {
 public:
  CommandExtractor(const std::string& command, Shape image, int64_t capacity)
      : p_(command, "--extractor-cmd", {{"NK_EXTRACTOR_INPUT", image.text()}, {"NK_EXTRACTOR_BATCH", std::to_string(capacity)}}),
        s_(image), name_("cmd:" + command) {
    const std::string line = p_.read_line(256, "its first line (\"features F\")");
    long long f = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "features %lld%c", &f, &tail) != 1 || f < 1 || f > (1LL << 24)) {
      throw nk::Error(nk::Exit::input, "--extractor-cmd '" + command + "': first line is '" + line +
                                           "', expected \"features F\" with 1 <= F <= 2^24");
    }
    f_ = f;
    x_.resize(static_cast<size_t>(capacity * s_.size()));
  }
  Shape input() const override { return s_; }
  int64_t dim() const override { return f_; }
  std::string name() const override { return name_; }
  void features(const float* x, int64_t batch, float* f) override {
    const int64_t d = s_.size();
    if (static_cast<int64_t>(x_.size()) < batch * d) x_.resize(static_cast<size_t>(batch * d));
    std::copy(x, x + batch * d, x_.begin());
    batch_ = batch;
    write_head(p_, 0, batch);
    p_.write(x, sizeof(float) * static_cast<size_t>(batch * d));
    read_reply(p_, "--extractor-cmd '" + name_.substr(4) + "'", f, batch * f_, "the features of a batch of " + std::to_string(batch));
    ++forwards;
  }
  void vjp(const float* g, int64_t batch, float* dx) override {
    if (batch != batch_) throw std::logic_error("extractor: vjp batch differs from the last features batch");
    const int64_t d = s_.size();
    write_head(p_, 1, batch);
    p_.write(x_.data(), sizeof(float) * static_cast<size_t>(batch * d));
    p_.write(g, sizeof(float) * static_cast<size_t>(batch * f_));
    read_reply(p_, "--extractor-cmd '" + name_.substr(4) + "'", dx, batch * d, "the input gradient of a batch of " + std::to_string(batch));
    ++backwards;
  }

 private:
  nk::Coprocess p_;
  Shape s_;
  std::string name_;
  int64_t f_ = 0, batch_ = 0;
  std::vector<float> x_;
};

class CommandField : public nk::nn::FlowField {
 public:
  CommandField(const std::string& command, Shape image, int64_t capacity)
      : p_(command, "--prior-cmd", {{"NK_PRIOR_INPUT", image.text()}, {"NK_PRIOR_BATCH", std::to_string(capacity)}}),
        s_(image), name_("--prior-cmd '" + command + "'") {
    const std::string line = p_.read_line(256, "its first line (\"velocity H,W,C\")");
    if (line != "velocity " + image.text()) {
      throw nk::Error(nk::Exit::input, name_ + ": first line is '" + line + "', expected \"velocity " + image.text() +
                                           "\" (the queries' shape)");
    }
  }
  void velocity(const float* x, float t, int64_t batch, float* v) override {
    const int64_t d = s_.size();
    x_.assign(x, x + batch * d);
    t_ = t;
    batch_ = batch;
    write_head(p_, 0, batch);
    p_.write(&t, sizeof t);
    p_.write(x, sizeof(float) * static_cast<size_t>(batch * d));
    read_reply(p_, name_, v, batch * d, "the velocity of a batch of " + std::to_string(batch));
  }
  void velocity_vjp(const float* g, int64_t batch, float* dx) override {
    if (batch != batch_) throw std::logic_error("prior: vjp batch differs from the last velocity batch");
    const int64_t d = s_.size();
    write_head(p_, 1, batch);
    p_.write(&t_, sizeof t_);
    p_.write(x_.data(), sizeof(float) * static_cast<size_t>(batch * d));
    p_.write(g, sizeof(float) * static_cast<size_t>(batch * d));
    read_reply(p_, name_, dx, batch * d, "the input gradient of a batch of " + std::to_string(batch));
  }

 private:
  nk::Coprocess p_;
  Shape s_;
  std::string name_;
  std::vector<float> x_;
  float t_ = 0;
  int64_t batch_ = 0;
};

}  // namespace

std::unique_ptr<Extractor> command_extractor(const std::string& command, Shape image, int64_t capacity) {
  return std::make_unique<CommandExtractor>(command, image, capacity);
}

std::unique_ptr<nk::nn::FlowField> command_field(const std::string& command, Shape image, int64_t capacity) {
  return std::make_unique<CommandField>(command, image, capacity);
}

}  // namespace ia
