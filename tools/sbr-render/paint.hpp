// paint.hpp - test-time stroke optimisation (Adam, coarse to fine, pixel loss
// plus stroke coherence) with the single-stroke audit, and the audit itself.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nk/rng.hpp"
#include "sbr-render/qbs.hpp"

namespace sbr {

/// A target image as RGB in [0, 1] (gray is replicated).
struct Target {
  int width = 0, height = 0;
  RGB pixels;  ///< H x W x 3
};
/// The mean colour of the target (the background of a fresh painting).
std::array<float, 3> mean_colour(const Target& target);
/// The target resampled to another size (stb's filter).
Target resample(const Target& target, int width, int height);

/// The single-stroke audit rule. A stroke is judged alone, on its footprint F
/// (the pixels where its coverage alpha > 0), at the scale being optimised:
///   vanished: sum_F alpha < min_area pixels;
///   hidden:   visible fraction sum_F alpha T / sum_F alpha < min_visible (T:
///             transmittance of the strokes above it);
///   off-colour: RMS error of its own colour against the target where it is
///             seen, sqrt(sum_F alpha T |c - target|^2 / (3 sum_F alpha T)) > max_colour_error;
///   useless:  removing it does not raise the L2 loss on F (delta <= 0).
/// Any one of these makes it defective.
struct AuditRule {
  double min_area = 1.0;
  double min_visible = 0.2;
  double max_colour_error = 0.25;
};

enum Defect : uint8_t { kGood = 0, kVanished = 1, kHidden = 2, kOffColour = 4, kUseless = 8 };

/// What the audit found for one stroke.
struct StrokeAudit {
  double area = 0, visible = 0, colour_error = 0, loss_delta = 0;
  uint8_t defects = kGood;
};

/// Audits every stroke of 'painting' against 'target' (rendered at the
/// target's size). 'loss_out' gets the L2 loss (mean over pixels and channels).
std::vector<StrokeAudit> audit(const Painting& painting, const Target& target, const AuditRule& rule,
                               double softness, int threads, double* loss_out = nullptr);
/// Short names of a defect mask, e.g. "hidden,off-colour".
std::string defect_names(uint8_t defects);

struct PaintConfig {
  int iterations = 500;                   ///< Adam steps over all scales
  std::vector<double> scales{0.25, 0.5, 1.0};  ///< render size / canvas, coarse to fine
  Loss loss = Loss::l2;
  double coherence = 1e-4;                ///< weight of the stroke-coherence term
  double fidelity = 0.0;                  ///< weight of the colour-fidelity pull (with the audit only)
  double hidden_penalty = 0.001;          ///< weight of the hidden-coverage penalty (with the audit only)
  double min_opacity = 0.6;               ///< least stroke opacity with the audit (0.05 without: glazes allowed)
  bool repair = true;                     ///< remove the hidden strokes at 80% and 90% of the finest scale (with the audit only)
  double relocate = 0.03;                 ///< largest fraction of good strokes one audit relocates (the least contributing)
  bool colour_bound = true;               ///< keep every stroke's own colour within the audit's bound while settling
  double learning_rate = 0.04;            ///< Adam step in normalised units (see the man page)
  bool audit = true;
  int audit_every = 25;                   ///< iterations between audits
  double max_respawn = 0.05;              ///< largest fraction of strokes one audit re-spawns
  AuditRule rule;
  bool prune = true;                      ///< remove strokes still defective after the last step
  float softness = 0.5f;
  int threads = 1;                        ///< OpenMP threads: the resolved --threads, at least 1
  uint64_t seed = 0;
};

struct PaintReport {
  double loss = 0;         ///< final pixel loss at full size
  int audits = 0;
  int64_t respawned = 0;   ///< defective strokes re-spawned by the audits
  int64_t relocated = 0;   ///< good but least contributing strokes moved by the audits
  int64_t recoloured = 0;  ///< colour projections onto the audit's bound while settling
  int64_t pruned = 0;      ///< strokes removed (the repair's and the final prune's)
  int64_t repaired = 0;    ///< hidden strokes removed by the repair
  int64_t defective_before_prune = 0;
  double seconds = 0;
};

/// What one audit does with the strokes it judged (indices into the verdict).
struct RespawnPlan {
  std::vector<int64_t> defective;  ///< re-spawned: nothing first, then hidden, then off-colour; at most max_respawn
  std::vector<int64_t> weak;       ///< relocated: good strokes whose loss_delta is below a quarter of the
                                   ///< median, least first; at most 'relocate' of the strokes
};
/// Strokes (re-)spawned less than audit_every steps before 'step' (born[i])
/// are still settling and are neither re-spawned nor relocated.
RespawnPlan plan_respawn(const std::vector<StrokeAudit>& verdict, const std::vector<int>& born, int step,
                         const PaintConfig& config);

/// The colour bound: where the stroke's RMS colour error over what it is
/// seen on (footprint sums) exceeds 'bound', its colour moves straight
/// towards the mean colour it is seen over, just far enough to meet the
/// bound. Returns false when no colour meets it (the stroke straddles
/// colours farther apart than the bound allows); the colour is then left.
bool bound_colour(Stroke& stroke, const StrokeFootprint& footprint, double bound);

/// Test-time optimisation of 'painting' (initial strokes, any number) towards
/// 'target'. 'on_step' (optional) is called after every iteration with the
/// 1-based step and the total.
PaintReport optimise(Painting& painting, const Target& target, const PaintConfig& config,
                     const std::function<void(int, int)>& on_step = {});

/// The final audit: removes the defective strokes whose removal does not
/// raise the loss (vanished, useless), in rounds, auditing again after each
/// (a removal changes what the others show); within a round never two with
/// overlapping boxes (two strokes that cover each other both look useless
/// alone). Hidden and off-colour strokes carry part of the picture and are
/// left for the optimisation's audits to re-spawn; what remains of them is
/// what 'sbr-render audit' reports. At most 32 rounds. Returns (defective
/// at the first audit, strokes removed).
std::pair<int64_t, int64_t> prune_defective(Painting& painting, const Target& target, const AuditRule& rule,
                                            double softness, int threads);

/// The stroke-coherence energy mean_i |P0 - 2P1 + P2|^2 / (|P2 - P0|^2 + w^2 + 1):
/// large for kinked, folded or blob-like strokes. Adds weight * dE/dparam to grad.
double coherence_energy(const Painting& painting, double weight, std::vector<float>* grad);

/// Random initialisation (the prior practice): strokes at uniform positions,
/// random directions, length and width from the budget, the target's colour
/// at the centre. Grid initialisation: the same on a regular grid, horizontal.
Painting random_init(const Target& target, int strokes, uint64_t seed);
Painting grid_init(const Target& target, int strokes);

/// Puts new strokes where the residual |render - target|^2 is large: a pixel
/// drawn with probability proportional to it (then cleared around the new
/// stroke, so the next one goes elsewhere), the stroke laid along the local
/// edge (structure tensor of the target) in the target's colour there.
/// Coordinates are those of the target.
class Spawner {
 public:
  Spawner(const Target& target, const RGB& rendered);
  Stroke spawn(double length, double width, nk::Rng& rng);

 private:
  const Target& target_;
  std::vector<double> residual_;
};

}  // namespace sbr
