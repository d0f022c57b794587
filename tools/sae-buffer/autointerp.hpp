// autointerp.hpp - automated interpretability through an outside judge
// (an LLM a user runs): detection scoring, after Bills et al. and
// EleutherAI's delphi.
//
// For each of a seeded sample of live latents the judge command receives
// one JSON object on standard input:
//   {"latent": j, "examples": [10 top-activating contexts],
//    "queries": [5 other activating and 5 non-activating contexts, shuffled]}
// (a context is up to 'window' tokens either side of the token, which is
// marked <<like this>>) and prints one JSON object on standard output:
//   {"fires": [true/false or 1/0 for each query]}
// A latent's score is the share of queries judged right (0.5 is chance).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sae-buffer/sae.hpp"

namespace sb {

struct JudgeOptions {
  std::string command;  ///< run by /bin/sh once per latent
  std::string model;    ///< the nk-lm model whose tokenizer made the capture
  int64_t latents = 16, examples = 10, queries = 10, window = 8;
};

struct JudgeScores {
  std::vector<int32_t> latent;
  std::vector<double> score;
  double mean = 0;
};

/// tokens [T] and row offsets [R+1] of the captured rows whose codes are
/// given. Exit 1 when the command fails or answers out of protocol (naming
/// the latent); exit 3 when too few latents fire often enough to be judged.
JudgeScores judge_latents(const JudgeOptions& options, const std::vector<int32_t>& tokens,
                          const std::vector<int64_t>& offsets, const CodesT<float>& codes, int64_t latents, uint64_t seed);

}  // namespace sb
