// sbr.hpp - the verbs of sbr-render: paint (decoder initialisation, test-time
// optimisation, single-stroke audit), render, audit, speed and train-decoder.
#pragma once
#include <cstdint>
#include <string>

#include "nk/run_env.hpp"
#include "sbr-render/paint.hpp"

namespace sbr {

struct PaintOptions {
  std::string input, output = "-", png, svg, frames, size, init = "decoder", decoder, scales = "0.25,0.5,1";
  std::string loss = "l2";
  bool no_clobber = false, audit = true, prune = true;
  int64_t index = -1;
  int strokes = 500, frame_count = 24;
  PaintConfig config;
};
/// The images of env.shard (or --index); every stroke stream from env.seed, split per image.
void paint(PaintOptions o, const nk::RunEnv& env);

struct RenderOptions {
  std::string input, output, svg, size;
  bool no_clobber = false;
  int64_t index = 0;
  float softness = 0.5f;
};
void render_verb(const RenderOptions& o, const nk::RunEnv& env);

struct AuditOptions {
  std::string input, target, output;
  bool no_clobber = false, summary = false;
  int64_t index = -1;
  AuditRule rule;
};
void audit_verb(const AuditOptions& o, const nk::RunEnv& env);

struct SpeedOptions {
  std::string input, target, size;
  int64_t index = 0;
  int segments = 16, repeats = 3;
  bool brute = true;
};
void speed_verb(const SpeedOptions& o, const nk::RunEnv& env);

}  // namespace sbr
