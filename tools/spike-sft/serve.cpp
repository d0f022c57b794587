// serve.cpp - serve: a model as a program that other tools feed, in the
// frame protocol of proxy-certify(1) MODEL COMMAND: "classes K" first; then
// per frame an int64 B and B x D float32 items in, B x K float32 out (the
// log of the readout's softmax: its arg-max and margins are the logits').
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "nk/error.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

namespace {

constexpr int64_t kMaxFrame = int64_t{1} << 20;

}  // namespace

void serve(const ServeOptions& o, const nk::RunEnv& env) {
  if (o.input == "-") throw nk::usage_error("serve reads its frames on standard input: give the model as -i FILE");
  const snn::Network net = read_model(o.input);
  const int64_t values = net.config.sizes.front(), classes = net.config.sizes.back();
  if (const char* shape = std::getenv("NK_MODEL_INPUT")) {
    long long h = 0, w = 0, c = 0;
    if (std::sscanf(shape, "%lld,%lld,%lld", &h, &w, &c) == 3 && h * w * c != values) {
      throw nk::input_error(o.input, "/model", "takes " + std::to_string(values) + " values, the items are " + shape);
    }
  }
  std::printf("classes %lld\n", static_cast<long long>(classes));
  std::fflush(stdout);
  nk::Rng rng(env.seed);
  std::unique_ptr<snn::Workspace> ws;
  std::vector<float> reply;
  for (int64_t frame = 0;; ++frame) {
    int64_t batch = 0;
    const size_t got = std::fread(&batch, 1, sizeof batch, stdin);
    if (got == 0) break;
    const std::string at = "frame " + std::to_string(frame);
    if (got != sizeof batch) throw nk::input_error("-", "", at + ": ends inside its item count");
    if (batch < 1 || batch > kMaxFrame) throw nk::input_error("-", "", at + ": " + std::to_string(batch) + " items (expected 1 to 2^20)");
    snn::Matrix x(batch, values);
    const size_t want = static_cast<size_t>(batch * values);
    if (std::fread(x.data(), sizeof(float), want, stdin) != want) {
      throw nk::input_error("-", "", at + ": ends before its " + std::to_string(batch) + " x " + std::to_string(values) + " values");
    }
    if (!x.allFinite()) throw nk::input_error("-", "", at + ": holds a NaN or Inf");
    if (!ws || ws->batch() != batch) ws = std::make_unique<snn::Workspace>(net.config, batch);
    snn::forward(net, x, nullptr, *ws, &rng);
    const snn::Matrix& p = ws->output_probabilities();
    reply.resize(static_cast<size_t>(batch * classes));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t k = 0; k < classes; ++k) reply[b * classes + k] = std::log(std::max(p(b, k), 1e-30f));
    if (std::fwrite(reply.data(), sizeof(float), reply.size(), stdout) != reply.size() || std::fflush(stdout) != 0) {
      throw nk::Error(nk::Exit::io, "serve: cannot write to standard output (did the reader exit?)");
    }
  }
}

}  // namespace spike
