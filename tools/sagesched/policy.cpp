// policy.cpp - fcfs, sjf-pred, ltr, mlfq, srpt-oracle and SageSched (the
// Gittins index of the predicted compute+memory cost) with its ablations.
#include "sagesched/policy.hpp"

#include <algorithm>
#include <cmath>

#include "nk/error.hpp"

namespace sage {

CostModel::CostModel(const Profile& profile, const Server& server, int64_t kv_capacity, bool with_memory) {
  // Decode: the roof that binds a full batch prices a decode token and its
  // context: max-batch sequences at context 1024, or as many as the cache holds.
  Work reference;
  reference.sequences = static_cast<double>(server.max_batch);
  if (kv_capacity > 0) reference.sequences = std::clamp(std::floor(static_cast<double>(kv_capacity) / 1024), 1.0, reference.sequences);
  reference.context = reference.sequences * 1024;
  const Roof* binding = &profile.roofs.front();
  for (const Roof& r : profile.roofs) {
    if (r.time(reference) > binding->time(reference)) binding = &r;
  }
  cs = binding->ks;
  cc = binding->kc;
  for (const Roof& r : profile.roofs) {
    roof_kp.push_back(r.kp);
    roof_ka.push_back(r.ka);
  }
  // Memory: holding the whole cache for one iteration costs one iteration of
  // a full cache of decodes, so beta = that time / capacity; no price without a bound.
  if (with_memory && kv_capacity > 0) {
    Work full;
    full.sequences = static_cast<double>(server.max_batch);
    full.context = static_cast<double>(kv_capacity);
    beta = profile.iteration_time(full) / static_cast<double>(kv_capacity);
  }
}

double CostModel::prefill(double p) const {
  double t = 0;
  for (size_t r = 0; r < roof_kp.size(); ++r) t = std::max(t, roof_kp[r] * p + roof_ka[r] * p * p);
  return t;
}

double CostModel::cost(double p, double o) const {
  if (o <= 0) return 0;
  const double d = o - 1;
  return prefill(p) + cs * (1 + d) + (cc + beta) * (d * p + 0.5 * d * o);
}

namespace {

class Fcfs : public Policy {
 public:
  void admit(const RequestState&, const Trace&) override {}
  double key(const RequestState&, int64_t* until) override {
    *until = kNever;
    return 0;  // ties: earlier arrival first
  }
};

class SrptOracle : public Policy {
 public:
  SrptOracle(const Profile& profile, const Server& server) : profile_(profile), max_tokens_(server.max_tokens) {}
  void admit(const RequestState&, const Trace&) override {}
  double key(const RequestState& r, int64_t* until) override {
    *until = kNever;  // remaining work only shrinks as the request runs
    return profile_.solo_time(r.prompt, r.target, r.prefilled, r.generated, r.output, max_tokens_);
  }
  double key_protected(const RequestState& r) override {
    int64_t until = 0;
    const int64_t redo = r.prompt + r.generated;  // recomputed tokens: prompt and generated
    return key(r, &until) - profile_.solo_time(redo, redo, 0, 0, 1, max_tokens_);
  }
  bool dynamic() const override { return true; }

 private:
  const Profile& profile_;
  int64_t max_tokens_;
};

/// FastServe's skip-join MLFQ: quanta q_k = q0 2^k of solo service time, q0 =
/// one solo decode step at the prompt's context; a request joins the first
/// level whose quantum covers its prefill, and drops a level each time it
/// uses up the level's quantum.
class Mlfq : public Policy {
 public:
  Mlfq(const Profile& profile, const Server& server) : profile_(profile), max_tokens_(server.max_tokens) {}
  void admit(const RequestState&, const Trace&) override {}
  double key(const RequestState& r, int64_t* until) override {
    const double q0 = profile_.solo_decode_time(r.prompt + 1, r.prompt + 1);
    const double prefill = profile_.solo_time(r.prompt, r.prompt, 0, 0, 1, max_tokens_);
    int join = 0;
    while (q0 * std::exp2(join) < prefill && join < 60) ++join;
    // Service since joining: the decode steps run so far (the prefill ran in the join quantum's place).
    auto used = [&](int64_t g) { return g <= 1 ? 0.0 : profile_.solo_decode_time(r.prompt + 1, r.prompt + g - 1); };
    const double spent = used(r.generated);
    int level = join;
    double limit = q0 * std::exp2(join);  // cumulative quota through 'level'
    while (spent >= limit && level < join + 60) {
      ++level;
      limit += q0 * std::exp2(level);
    }
    // The first g whose service reaches the limit: binary search (used() grows with g).
    int64_t lo = r.generated, hi = std::max<int64_t>(r.generated + 1, 2);
    while (used(hi) < limit && hi < (int64_t{1} << 40)) hi *= 2;
    while (lo + 1 < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      (used(mid) >= limit ? hi : lo) = mid;
    }
    *until = hi;
    return level;
  }
  bool dynamic() const override { return true; }

 private:
  const Profile& profile_;
  int64_t max_tokens_;
};

/// Policies that consult the output-length predictor at arrival.
class Predicted : public Policy {
 public:
  Predicted(int per_octave, uint64_t seed) : predictor_(Bins::log_spaced(65536, per_octave), seed) {}
  void admit(const RequestState& r, const Trace& trace) override {
    const auto i = static_cast<size_t>(r.id);
    if (pmf_.size() < trace.size()) pmf_.resize(trace.size());
    std::vector<double> pmf(predictor_.bins().size());
    predictor_.predict(r.id, trace.prompt.empty() ? std::string() : trace.prompt[i], trace.category[i], r.prompt, pmf.data());
    pmf_[i] = std::move(pmf);
    admitted(r);
  }
  void finished(const RequestState& r) override {
    std::vector<double>().swap(pmf_[static_cast<size_t>(r.id)]);
    released(r.id);
  }
  void learn(int64_t id, int64_t output) override { predictor_.learn(id, output); }
  bool predicts() const override { return true; }

 protected:
  virtual void admitted(const RequestState&) {}
  virtual void released(int64_t /*id*/) {}
  const std::vector<double>& pmf(int64_t id) const { return pmf_[static_cast<size_t>(id)]; }
  Predictor predictor_;
  std::vector<std::vector<double>> pmf_;
};

class SjfPred : public Predicted {
 public:
  using Predicted::Predicted;
  double key(const RequestState& r, int64_t* until) override {
    *until = kNever;
    return pmf_mean(predictor_.bins(), pmf(r.id).data());
  }
};

class Ltr : public Predicted {
 public:
  using Predicted::Predicted;
  double key(const RequestState& r, int64_t* until) override {
    *until = kNever;
    return score_[static_cast<size_t>(r.id)];
  }

 protected:
  void admitted(const RequestState& r) override {
    if (score_.size() <= static_cast<size_t>(r.id)) score_.resize(static_cast<size_t>(r.id) + 1);
    score_[static_cast<size_t>(r.id)] = predictor_.rank_score(r.id);
  }

 private:
  std::vector<double> score_;
};

/// SageSched: the request's cost c(o) under the predicted pmf of o (mass at
/// the bins' geometric centres); key = -Gittins index at attained c(g). The
/// support's costs and the pmf's tail sums are computed once, at arrival.
class Sagesched : public Predicted {
 public:
  Sagesched(const CostModel& cost, bool point, int per_octave, uint64_t seed)
      : Predicted(per_octave, seed), cost_(cost), point_(point) {}
  double key(const RequestState& r, int64_t* until) override { return index_key(r, until, 0.0); }
  double key_protected(const RequestState& r) override {
    int64_t until = 0;
    return index_key(r, &until, cost_.prefill(static_cast<double>(r.prompt + r.generated)));
  }

 private:
  /// Minus the Gittins index at the attained cost plus 'credit'.
  double index_key(const RequestState& r, int64_t* until, double credit) {
    Prepared& d = prepared_[static_cast<size_t>(r.id)];
    const auto p = static_cast<double>(r.prompt);
    const double g = static_cast<double>(r.generated);
    double attained = r.generated > 0 ? cost_.cost(p, g) : d.prefill * static_cast<double>(r.prefilled) / std::max(1.0, p);
    if (r.generated > 0 && r.prefilled < r.target) {
      // Preempted by recompute: the prefill to redo adds to what remains.
      const auto target = static_cast<double>(r.target);
      attained -= cost_.prefill(target) * (target - static_cast<double>(r.prefilled)) / target;
    }
    attained += credit;
    const Bins& bins = predictor_.bins();
    if (point_) {
      if (d.mean > g) {
        *until = static_cast<int64_t>(std::ceil(d.mean));
        return -1.0 / (d.mean_cost - attained);
      }
      *until = r.generated + 1;  // past the point: taken as ending with the next token
      return -1.0 / (cost_.cost(p, g + 1) - attained);
    }
    // The first support point above g; Gittins' scan from there.
    size_t k = d.next;  // g never decreases: resume from the last call's point
    while (k < bins.size() && bins.centre[k] <= g) ++k;
    d.next = k;
    if (k == bins.size()) {  // beyond the last bin: one more token
      *until = r.generated + 1;
      return -1.0 / (cost_.cost(p, g + 1) - attained);
    }
    *until = static_cast<int64_t>(std::ceil(bins.centre[k]));
    const double* q = pmf(r.id).data();
    return -gittins_scan(d.support.data() + k, q + k, bins.size() - k, attained, d.tail[k]).index;
  }

 public:
  bool dynamic() const override { return true; }

 protected:
  void admitted(const RequestState& r) override {
    const auto i = static_cast<size_t>(r.id);
    if (prepared_.size() <= i) prepared_.resize(pmf_.size());
    const Bins& bins = predictor_.bins();
    const std::vector<double>& q = pmf(r.id);
    Prepared& d = prepared_[i];
    const auto p = static_cast<double>(r.prompt);
    d.prefill = cost_.prefill(p);
    d.support.resize(bins.size());
    d.tail.assign(bins.size() + 1, 0.0);
    for (size_t b = 0; b < bins.size(); ++b) d.support[b] = cost_.cost(p, bins.centre[b]);
    for (size_t b = bins.size(); b-- > 0;) d.tail[b] = d.tail[b + 1] + q[b];
    d.mean = pmf_mean(bins, q.data());
    d.mean_cost = cost_.cost(p, d.mean);
  }
  void released(int64_t id) override { prepared_[static_cast<size_t>(id)] = Prepared(); }

 private:
  struct Prepared {
    std::vector<double> support, tail;  ///< c(centre_k), sum_{j >= k} q_j
    double prefill = 0, mean = 0, mean_cost = 0;
    size_t next = 0;  ///< the first bin whose centre is above the generated count
  };
  CostModel cost_;
  bool point_;
  std::vector<Prepared> prepared_;
};

}  // namespace

std::vector<std::string> policy_names() {
  return {"fcfs", "sjf-pred", "ltr", "mlfq", "srpt-oracle", "sagesched", "sagesched-nomem", "sagesched-point"};
}

std::unique_ptr<Policy> make_policy(const std::string& name, const Profile& profile, const Server& server,
                                    int64_t kv_capacity, int per_octave, uint64_t seed) {
  if (name == "fcfs") return std::make_unique<Fcfs>();
  if (name == "srpt-oracle") return std::make_unique<SrptOracle>(profile, server);
  if (name == "mlfq") return std::make_unique<Mlfq>(profile, server);
  if (name == "sjf-pred") return std::make_unique<SjfPred>(per_octave, seed);
  if (name == "ltr") return std::make_unique<Ltr>(per_octave, seed);
  if (name == "sagesched" || name == "sagesched-point") {
    return std::make_unique<Sagesched>(CostModel(profile, server, kv_capacity, true), name == "sagesched-point", per_octave,
                                       seed);
  }
  if (name == "sagesched-nomem") {
    return std::make_unique<Sagesched>(CostModel(profile, server, kv_capacity, false), false, per_octave, seed);
  }
  std::string all;
  for (const std::string& p : policy_names()) all += (all.empty() ? "" : ", ") + p;
  throw nk::usage_error("--policy '" + name + "': expected one of " + all);
}

}  // namespace sage
