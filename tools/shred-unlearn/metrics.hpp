// metrics.hpp - TOFU's and MUSE's measures on plain numbers: ROUGE-L recall,
// the two-sample Kolmogorov-Smirnov test, AUC, Min-K% and harmonic means.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace shred {

/// Lower-cased words; every character that is not an ASCII letter or digit
/// separates words (no stemming, unlike TOFU's rouge_score).
std::vector<std::string> rouge_words(const std::string& text);
/// ROUGE-L recall: |LCS(prediction, reference)| / |reference| over words (0
/// for an empty reference).
double rouge_l_recall(const std::string& prediction, const std::string& reference);

struct KsResult {
  double statistic = 0, pvalue = 1;
};
/// scipy.stats.ks_2samp(a, b) (two-sided, method auto) for samples of equal
/// size (the exact distribution: both forget sets come from the same split);
/// unequal or empty samples are a usage error.
KsResult ks_2samp_equal(std::vector<double> a, std::vector<double> b);

/// P(member > non-member) + half the ties.
double auc(const std::vector<double>& members, const std::vector<double>& non_members);

/// Mean of the lowest max(1, round(fraction n)) values (Min-K% Prob).
double min_k_mean(std::vector<double> values, double fraction);

/// n / sum(1/x); 0 when any x <= 0.
double harmonic_mean(const std::vector<double>& values);

}  // namespace shred
