// engine.hpp - the scheduler that simulate and testbed share (sagesched(1)
// SIMULATOR, TESTBED): the engine walks requests in policy order, fills each
// iteration's batch within the server's limits and paged KV, preempts, and
// records; a Backend runs the batch (the profile's cost, or a real model) and
// says what has arrived.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "sagesched/policy.hpp"

namespace sage {

/// One request in an iteration's batch.
struct Member {
  int64_t id;
  int64_t chunk;               ///< prefill tokens this iteration; 0 for a decode
  const RequestState* state;   ///< its progress before the iteration
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// The start of an iteration after 'now' (the end of the last one): the
  /// simulator keeps 'now'; a real server reads its clock here and fixes
  /// what has been submitted by then.
  virtual double start(double now) { return now; }
  /// Whether request i has arrived by the iteration that starts at 'now'.
  virtual bool arrived(const Trace& trace, size_t i, double now) const { return trace.arrival[i] <= now; }
  /// Nothing is active: the time at which request 'next' has arrived.
  virtual double idle(const Trace& trace, double now, size_t next) { return std::max(now, trace.arrival[next]); }
  /// Runs the batch (w: its work in the profile's terms); returns the duration.
  virtual double execute(double now, const std::vector<Member>& batch, const Work& w) = 0;
  /// The request's KV is gone: it finished, or was preempted by recompute.
  virtual void released(int64_t /*id*/) {}
  /// Whether an unchanged batch may advance in closed form (no real work).
  virtual bool closed_form() const { return true; }
};

/// Runs the trace to the end through 'backend'.
SimResult run_engine(const Trace& trace, const Profile& profile, const SimOptions& options, uint64_t seed, Backend& backend);

/// Writes a run in simulate's schema (/per_request, /iterations, summary
/// attributes); 'extra' adds attributes before the commit; 'measured' says
/// a real server produced it (the log line).
void write_run(const std::string& output, bool no_clobber, const Trace& trace, const SimResult& result, const SimOptions& sim,
               const Profile& profile, const std::function<void(nk::h5::Writer&)>& extra, bool measured);

}  // namespace sage
