// probe.hpp - downstream metrics from token labels (the labels verb):
// sparse probing and first-letter absorption.
//
// Sparse probing (after Gurnee et al. and SAEBench): for each part of speech
// (noun, verb, adjective, adverb) a one-vs-rest task over the tokens of
// WordNet words; the k latents with the largest |mean activation difference|
// between the classes on the training split feed an L2 logistic regression;
// F1 on the test split, beside the same probe on the raw activations.
// Absorption (after Chanin et al.): a first-letter probe on the raw
// activations of word-initial tokens; each letter's main latent is the one
// with the largest mean-activation difference; the absorption rate is the
// share of test tokens the probe gets right while that latent stays silent.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sae-buffer/sae.hpp"

namespace sb {

inline constexpr int kPosClasses = 4;  ///< noun, verb, adjective, adverb (labels 1..4; 0 = none)

struct TokenLabels {
  std::vector<int8_t> pos;           ///< [T] 0 none, 1 noun, 2 verb, 3 adj, 4 adv
  std::vector<int8_t> first_letter;  ///< [T] 0..25 on a word's first token, -1 elsewhere
};
/// A labels file (sae-buffer.labels/1) whose T must equal 'rows'; exit 3 otherwise.
TokenLabels read_labels(const std::string& path, int64_t rows);

struct ProbeScores {
  double f1_k1 = 0, f1_k5 = 0, f1_raw = 0;  ///< mean F1 over the tasks
  int64_t tasks = 0;
  double absorption = 0;  ///< share of correct first-letter predictions with the main latent silent
  int64_t letters = 0;    ///< letters with enough tokens to be scored
};

/// What does not depend on the SAE, computed once per activations and
/// labels: the seeded 70/30 split, the raw-activation probes and their F1,
/// and the first-letter probe's predictions on the test split.
struct ProbeSetup {
  std::vector<char> train;             ///< [T] in the training split
  std::vector<int8_t> pos, letter;     ///< the labels
  double f1_raw = 0;
  int64_t tasks = 0;
  std::vector<int> letters;            ///< letters with enough tokens
  std::vector<int8_t> predicted;       ///< [T] the letter probe's prediction on test word-initial tokens (-1 elsewhere)
};
/// x [T, m] the activations; the raw probes train on at most 'cap' tokens.
ProbeSetup prepare_probes(const Matrix<float>& x, const TokenLabels& labels, uint64_t seed, int64_t cap = 8192);
/// The SAE's sparse probes and absorption from its codes of the same rows.
ProbeScores score_probes(const ProbeSetup& setup, const CodesT<float>& codes, int64_t latents);

/// L2-regularised logistic regression by Newton's method (IRLS) on
/// standardised features; returns weights [d + 1] (bias last) in the
/// standardised space of 'mean' and 'scale'.
struct Logistic {
  Vector<double> w, mean, scale;
  double score(const double* x) const;  ///< the logit of one row
};
Logistic fit_logistic(const Matrix<double>& x, const std::vector<char>& y, double l2 = 1e-2, int iterations = 25);

}  // namespace sb
