// capture.cpp - an MLA checkpoint's own cache under gen's names: for each
// held-out window, one layer's latents c and RoPE keys k_R of every token
// and the absorbed query of the last token (which attends to all of them),
// caught by an Observer on the model's forward.
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/model.hpp"
#include "snapmla-decode/model_cache.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

namespace {

struct LayerCatch : nk::lm::Observer {
  int64_t layer = 0, rows = 0, dc = 0, dr = 0, dq = 0;
  const float *ckv = nullptr, *kpe = nullptr, *q = nullptr;
  std::vector<float> c_rows, kr_rows, q_last;
  bool wants(int64_t l) const override { return l == layer; }
  void mla(const nk::lm::Site& site, const float* c, const float* k, const float* qa) override {
    const int64_t n = site.batch->rows();
    c_rows.assign(c, c + n * dc);
    kr_rows.assign(k, k + n * dr);
    q_last.assign(qa + (n - 1) * dq, qa + n * dq);
  }
};

}  // namespace

void capture(const CaptureOptions& o, const nk::RunEnv& env) {
  (void)env;
  if (!o.text.empty() == !o.corpus.empty()) throw nk::usage_error("capture: give exactly one of --corpus, --text");
  const nk::lm::Checkpoint ck = nk::lm::load_checkpoint(o.model);
  const nk::lm::Config& c = ck.weights.config();
  if (!c.mla())
    throw nk::usage_error("capture: " + o.model + " is not an mla model (train one with nk-lm train --attention mla)");
  if (o.layer < 0 || o.layer >= c.n_layers)
    throw nk::usage_error("capture: --layer " + std::to_string(o.layer) + " is not one of the model's " +
                          std::to_string(c.n_layers) + " layers (0-based)");
  const std::vector<std::vector<int32_t>> windows =
      held_out_windows(ck, o.model, o.corpus, o.text, o.windows, o.context, "capture");
  const int64_t B = static_cast<int64_t>(windows.size()), T = static_cast<int64_t>(windows.front().size());
  const int64_t H = c.n_heads, dc = c.kv_rank, dr = c.rope_dim, dq = dc + dr;
  const nk::lm::Model model(ck.weights);
  nk::lm::Workspace ws(c, {T, T, false});
  LayerCatch catcher;
  catcher.layer = o.layer, catcher.dc = dc, catcher.dr = dr, catcher.dq = H * dq;
  std::vector<float> ckv(static_cast<size_t>(B * T * dc)), kpe(static_cast<size_t>(B * T * dr)),
      q(static_cast<size_t>(B * H * dq));
  const std::vector<int64_t> offsets{0, T};
  for (int64_t b = 0; b < B; ++b) {
    nk::lm::ForwardOptions fo;
    fo.observer = &catcher;
    fo.logits = nk::lm::LogitRows::last;
    model.forward({windows[static_cast<size_t>(b)], offsets}, ws, fo);
    std::copy(catcher.c_rows.begin(), catcher.c_rows.end(), ckv.begin() + b * T * dc);
    std::copy(catcher.kr_rows.begin(), catcher.kr_rows.end(), kpe.begin() + b * T * dr);
    std::copy(catcher.q_last.begin(), catcher.q_last.end(), q.begin() + b * H * dq);
  }
  const std::vector<int32_t> lengths(static_cast<size_t>(B), static_cast<int32_t>(T));
  std::vector<int32_t> tokens;
  for (const auto& w : windows) tokens.insert(tokens.end(), w.begin(), w.end());
  nk::h5::Writer out(o.output, kCacheSchema, o.no_clobber);
  out.write("/ckv", ckv.data(), {B, T, dc}, "B,N,d_c");
  out.write("/kpe", kpe.data(), {B, T, dr}, "B,N,d_R");
  out.write("/q", q.data(), {B, H, dq}, "B,H,d_c+d_R");
  out.write("/lengths", lengths.data(), {B}, "B");
  out.write("/tokens", tokens.data(), {B, T}, "B,N");
  out.attr("/", "softmax_scale", 1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  out.attr("/", "profile", "captured");
  out.attr("/", "model", o.model);
  out.attr("/", "layer", o.layer);
  out.attr("/", "rope", "rotate-half pairs (i, i + d_R/2), inv_freq theta^(-2i/d_R)");
  out.attr("/", "theta", c.rope_theta);
  out.commit();
}

}  // namespace snapmla
