// policy.hpp - scheduling policies: a priority key per request (lower runs
// first; ties: earlier arrival, then lower index), and where it may get worse.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "sagesched/sagesched.hpp"

namespace sage {

/// What a policy may know of a request: its prompt, its progress, and (for
/// the oracle only) its true output length.
struct RequestState {
  int64_t id = 0;
  int64_t prompt = 0;     ///< prompt tokens p
  int64_t output = 0;     ///< true output tokens o (srpt-oracle only)
  int64_t target = 0;     ///< prefill target: p, or p + g after a recompute preemption
  int64_t prefilled = 0;  ///< tokens of the target in KV
  int64_t generated = 0;  ///< tokens emitted g
};

/// The price of a request (sagesched(1) COST): c(o) = prefill(p) + (o - 1) cs
/// + (cc + beta) ((o - 1) p + (o - 1) o / 2) seconds, beta pricing a token of
/// KV held for one iteration.
struct CostModel {
  double cs = 0, cc = 0, beta = 0;
  double prefill_per_token = 0, prefill_attn = 0;  ///< prefill(p) = max over roofs of kp p + ka p^2
  std::vector<double> roof_kp, roof_ka;
  CostModel(const Profile& profile, const Server& server, int64_t kv_capacity, bool with_memory);
  double prefill(double p) const;
  /// Cost of a request of prompt p having emitted o tokens (o >= 0, real).
  double cost(double p, double o) const;
};

class Policy {
 public:
  virtual ~Policy() = default;
  /// The request arrives: predict what the policy needs.
  virtual void admit(const RequestState& r, const Trace& trace) = 0;
  /// Its key now; *until = the generated count at which the key may next get
  /// worse (the simulator re-keys then; between, a key only improves).
  virtual double key(const RequestState& r, int64_t* until) = 0;
  /// The key of a request holding KV with the prefill that preempting it
  /// would waste counted as done: what a requester must beat to preempt it.
  virtual double key_protected(const RequestState& r) {
    int64_t until = 0;
    return key(r, &until);
  }
  /// A request finished (the predictor learns it when a later one arrives).
  virtual void finished(const RequestState& /*r*/) {}
  /// A finished result becomes visible to the predictor.
  virtual void learn(int64_t /*id*/, int64_t /*output*/) {}
  /// Whether keys change with progress (false: fixed at admission).
  virtual bool dynamic() const { return false; }
  /// Whether the policy uses the predictor (its results must be fed).
  virtual bool predicts() const { return false; }
};

std::unique_ptr<Policy> make_policy(const std::string& name, const Profile& profile, const Server& server,
                                    int64_t kv_capacity, int per_octave, uint64_t seed);

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

}  // namespace sage
