// simulator.cpp - discrete-event, iteration-level continuous batching with
// paged KV (sagesched(1) SIMULATOR). Each iteration walks the active requests
// in policy order and fills the batch within --max-batch, --max-tokens and the
// KV blocks, preempting the lowest-priority holders of KV when memory is
// needed. Between events an unchanged batch of decodes advances in a scalar
// loop: no per-request work until something happens.
#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

#include "nk/error.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "sagesched/engine.hpp"

namespace sage {

namespace {

struct Entry {
  mutable double key;  ///< changed in place only where the order is kept (Engine::set_key)
  int64_t id;
  bool operator<(const Entry& o) const { return key < o.key || (key == o.key && id < o.id); }
};
using Queue = std::set<Entry>;

struct Request {
  RequestState state;
  int64_t blocks = 0;   ///< KV blocks held on the device
  int64_t swapped = 0;  ///< tokens of KV held on the host (swap mode)
  double key = 0;
  int64_t until = kNever;
  Queue::iterator in_active, in_holders;  ///< valid while active / while holding blocks
};

class Engine {
 public:
  Engine(const Trace& trace, const Profile& profile, const SimOptions& options, uint64_t seed, Backend& backend)
      : trace_(trace), profile_(profile), server_(options.server), record_(options.record_iterations), backend_(backend) {
    const int64_t capacity = server_.kv_tokens > 0 ? server_.kv_tokens : profile.kv_tokens;
    if (server_.block < 1) throw nk::usage_error("--block must be >= 1");
    if (server_.max_batch < 1 || server_.max_tokens < 1) throw nk::usage_error("--max-batch and --max-tokens must be >= 1");
    if (server_.swap && profile.cw < 0) {
      throw nk::usage_error("--swap needs the profile's swap cost (cw: the 6th --iter-cost coefficient, or pcie_bandwidth)");
    }
    const bool unbounded = capacity <= 0;
    total_blocks_ = unbounded ? (int64_t{1} << 60) : capacity / server_.block;
    free_blocks_ = total_blocks_;
    result_.kv_capacity = unbounded ? 0 : total_blocks_ * server_.block;
    for (size_t i = 0; i < trace.size(); ++i) {
      const int64_t need = blocks_for(trace.prompt_tokens[i] + trace.output_tokens[i] - 1);
      if (need > total_blocks_) {
        throw nk::input_error("", "/requests", "request " + std::to_string(i) + " needs " + std::to_string(need * server_.block) +
                                                   " KV tokens (prompt + output), more than the cache's " +
                                                   std::to_string(total_blocks_ * server_.block));
      }
    }
    policy_ = make_policy(options.policy, profile, server_, result_.kv_capacity, options.per_octave, seed);
    requests_.resize(trace.size());
    for (size_t i = 0; i < trace.size(); ++i) {
      RequestState& s = requests_[i].state;
      s.id = static_cast<int64_t>(i);
      s.prompt = trace.prompt_tokens[i];
      s.output = trace.output_tokens[i];
      s.target = s.prompt;
    }
    result_.first_token.assign(trace.size(), NAN);
    result_.finish.assign(trace.size(), NAN);
    result_.preemptions.assign(trace.size(), 0);
  }

  SimResult run() {
    nk::Stopwatch watch;
    nk::Progress progress("simulate", static_cast<int64_t>(trace_.size()));
    const size_t n = trace_.size();
    double now = trace_.arrival.front();
    int64_t turns = 0;
    while (finished_ < n) {
      now = backend_.start(now);
      admit(now);
      if (active_.empty()) {
        now = backend_.idle(trace_, now, next_arrival_);
        continue;
      }
      now = iteration(now);
      if (backend_.closed_form()) now = fast_forward(now);
      if ((++turns & 1023) == 0) progress.update(static_cast<int64_t>(finished_));
    }
    progress.finish();
    result_.seconds = watch.seconds();
    return std::move(result_);
  }

 private:
  int64_t blocks_for(int64_t tokens) const { return (tokens + server_.block - 1) / server_.block; }

  /// Moves an entry to a new key: in place where its neighbours stay in
  /// order (the common case: every running request's key moves a little),
  /// else by re-linking the same node.
  static Queue::iterator set_key(Queue& q, Queue::iterator it, double key) {
    const Entry moved{key, it->id};
    const bool after_prev = it == q.begin() || *std::prev(it) < moved;
    const auto next = std::next(it);
    if (after_prev && (next == q.end() || moved < *next)) {
      it->key = key;
      return it;
    }
    auto node = q.extract(it);
    node.value().key = key;
    return q.insert(std::move(node)).position;
  }

  void rekey(Request& r) {
    const double before = r.key;
    r.key = policy_->key(r.state, &r.until);
    if (r.key == before) return;
    if (r.key > before) worsened_ = true;
    r.in_active = set_key(active_, r.in_active, r.key);
    if (r.blocks > 0) r.in_holders = set_key(holders_, r.in_holders, r.key);
  }

  void admit(double now) {
    while (next_arrival_ < trace_.size() && backend_.arrived(trace_, next_arrival_, now)) {
      const auto id = static_cast<int64_t>(next_arrival_);
      if (policy_->predicts()) {
        // The predictor sees only results finished strictly before this arrival.
        while (!results_.empty() && results_.front().first < trace_.arrival[next_arrival_]) {
          policy_->learn(results_.front().second, trace_.output_tokens[static_cast<size_t>(results_.front().second)]);
          results_.pop_front();
        }
      }
      Request& r = requests_[next_arrival_];
      policy_->admit(r.state, trace_);
      r.key = policy_->key(r.state, &r.until);
      r.in_active = active_.insert({r.key, id}).first;
      ++next_arrival_;
    }
  }

  /// Frees blocks by preempting the lowest-ranked holders until 'need' are
  /// free, while 'above' ranks before them. A request without KV ('admission')
  /// must also rank before the key a holder would have once preempted (a
  /// recompute adds its prefill to what remains): new work does not evict
  /// running work unless it is worth the recompute. A holder that needs a
  /// block goes by the keys alone, so the top holder can always run.
  /// Returns how many of 'need' are free.
  int64_t make_room(int64_t need, const Entry& above, bool admission) {
    // New work leaves 'reserve' blocks per holder of KV free for their growth.
    const int64_t keep = admission ? server_.reserve * static_cast<int64_t>(holders_.size()) : 0;
    // Walking running work first, new work takes free blocks only: the holders
    // below it in key order may already be in this iteration's batch.
    const bool may_preempt = !(admission && server_.running_first);
    while (may_preempt && free_blocks_ - keep < need && !holders_.empty()) {
      const Entry victim = *holders_.rbegin();
      if (!(above < victim)) break;  // every holder left ranks before the requester
      Request& v = requests_[static_cast<size_t>(victim.id)];
      double after = victim.key;
      if ((admission || !plain_preemption_) && policy_->dynamic() && !server_.swap) {
        after = policy_->key_protected(v.state);
      }
      if (!(above < Entry{after, victim.id})) break;
      preempt(v);
    }
    const int64_t reserve = admission ? server_.reserve * static_cast<int64_t>(holders_.size()) : 0;
    return std::clamp<int64_t>(free_blocks_ - reserve, 0, need);
  }

  void preempt(Request& r) {
    RequestState& s = r.state;
    holders_.erase(r.in_holders);
    free_blocks_ += r.blocks;
    used_blocks_ -= r.blocks;
    const bool decoding = s.prefilled == s.target && s.generated > 0;
    if (server_.swap && decoding) {
      r.swapped = s.prompt + s.generated - 1;  // its whole KV goes to the host
      swapped_now_ += static_cast<double>(r.swapped);
    } else {
      // Recompute: prompt and generated tokens are prefilled again; the last
      // chunk emits the next token.
      s.target = s.prompt + s.generated;
      s.prefilled = 0;
      r.swapped = 0;
      backend_.released(s.id);
    }
    r.blocks = 0;
    ++result_.preemptions[static_cast<size_t>(s.id)];
    if (policy_->dynamic()) {
      r.key = policy_->key(s, &r.until);
      r.in_active = set_key(active_, r.in_active, r.key);
    }
  }

  void take_blocks(Request& r, int64_t n) {
    if (n <= 0) return;
    if (r.blocks == 0) r.in_holders = holders_.insert({r.key, r.state.id}).first;
    r.blocks += n;
    free_blocks_ -= n;
    used_blocks_ += n;
  }

  /// One iteration from 'now': the walk, the work, the progress. Returns its end.
  double iteration(double now) {
    batch_.clear();
    Work w;
    w.swapped = swapped_now_;  // swap-outs of preemptions count in this iteration
    int64_t tokens_left = server_.max_tokens;
    all_decode_ = true;
    worsened_ = false;
    auto full = [&] { return static_cast<int64_t>(batch_.size()) >= server_.max_batch || tokens_left <= 0; };
    // Whether nothing at or after 'it' can get memory: no free block, it holds
    // none, and no holder ranks below it.
    auto stuck = [&](const Entry& e) {
      return free_blocks_ == 0 && requests_[static_cast<size_t>(e.id)].blocks == 0 &&
             (holders_.empty() || !(e < *holders_.rbegin()));
    };
    auto schedule = [&](const Entry& here) {
      Request& r = requests_[static_cast<size_t>(here.id)];
      RequestState& s = r.state;
      if (r.swapped > 0 || (s.prefilled == s.target && s.generated > 0)) {
        // Decode (after swapping in, when on the host): KV for prompt + generated tokens.
        const int64_t need = blocks_for(s.prompt + s.generated) - r.blocks;
        if (need > 0 && make_room(need, here, r.blocks == 0) < need) return;
        take_blocks(r, need);
        if (r.swapped > 0) {
          w.swapped += static_cast<double>(r.swapped);
          r.swapped = 0;
          all_decode_ = false;
        }
        batch_.push_back({here.id, 0, &s});
        tokens_left -= 1;
        w.sequences += 1;
        w.context += static_cast<double>(s.prompt + s.generated);
      } else {
        // Admission takes KV for the whole prefill at once (as vLLM's block
        // manager checks before it admits a request): a half-admitted prompt
        // would hold blocks it cannot use and compete for the rest.
        const int64_t need = blocks_for(s.target) - r.blocks;
        if (need > 0) {
          if (make_room(need, here, r.blocks == 0) < need) return;
          take_blocks(r, need);
        }
        const int64_t chunk = std::min(s.target - s.prefilled, tokens_left);
        if (chunk <= 0) return;
        batch_.push_back({here.id, chunk, &s});
        tokens_left -= chunk;
        w.prefill += static_cast<double>(chunk);
        w.attn += static_cast<double>(chunk) * static_cast<double>(s.prefilled + chunk);
        w.sequences += 1;
        all_decode_ = false;
      }
    };
    plain_preemption_ = false;
    walk(full, stuck, schedule);
    if (batch_.empty()) {
      // Every holder that could run needs a block and none was worth its
      // victim's recompute: go by the keys alone, so the top holder runs.
      plain_preemption_ = true;
      walk(full, stuck, schedule);
    }
    swapped_now_ = 0;
    if (batch_.empty()) throw nk::Error(nk::Exit::runtime, "simulate: no request could run with work waiting (a bug)");
    return apply(now, w);
  }

  template <class Full, class Stuck, class Schedule>
  void walk(const Full& full, const Stuck& stuck, const Schedule& schedule) {
    if (server_.running_first) {
      // Requests holding KV first (in key order), then the others: new work
      // takes only what running work leaves (vLLM's running-then-waiting walk).
      for (auto it = holders_.begin(); it != holders_.end() && !full();) {
        const Entry here = *it;
        schedule(here);
        it = std::next(it);  // victims were below 'here': 'it' is still valid
      }
      for (auto it = active_.begin(); it != active_.end() && !full(); ++it) {
        if (requests_[static_cast<size_t>(it->id)].blocks > 0) continue;
        if (stuck(*it)) break;
        schedule(*it);
      }
    } else {
      for (auto it = active_.begin(); it != active_.end() && !full(); ++it) {
        if (stuck(*it)) break;  // nothing further can run
        schedule(*it);
      }
    }
  }

  /// The iteration's duration and progress: emitted tokens, finished requests, new keys.
  double apply(double now, const Work& w) {
    const double duration = backend_.execute(now, batch_, w);
    const double end = now + duration;
    int64_t emitted = 0;
    finished_now_ = false;
    for (const Member& m : batch_) {
      Request& r = requests_[static_cast<size_t>(m.id)];
      RequestState& s = r.state;
      if (m.chunk > 0) {
        s.prefilled += m.chunk;
        if (s.prefilled < s.target) {
          if (policy_->dynamic()) rekey(r);
          continue;
        }
      }
      ++s.generated;
      ++emitted;
      if (s.generated == 1) result_.first_token[static_cast<size_t>(m.id)] = end;
      if (s.generated == s.output) {
        finish(r, end);
      } else if (policy_->dynamic()) {
        rekey(r);
      }
    }
    record(now, duration, static_cast<int64_t>(batch_.size()), static_cast<int64_t>(w.prefill), w.attn,
           static_cast<int64_t>(w.context), emitted);
    return end;
  }

  void finish(Request& r, double end) {
    RequestState& s = r.state;
    result_.finish[static_cast<size_t>(s.id)] = end;
    active_.erase(r.in_active);
    if (r.blocks > 0) holders_.erase(r.in_holders);
    free_blocks_ += r.blocks;
    used_blocks_ -= r.blocks;
    r.blocks = 0;
    backend_.released(s.id);
    policy_->finished(s);
    if (policy_->predicts()) results_.emplace_back(end, s.id);
    ++finished_;
    finished_now_ = true;
  }

  void record(double start, double duration, int64_t batch, int64_t prefill, double attn, int64_t context, int64_t emitted) {
    ++result_.iterations;
    if (!record_) return;
    result_.start.push_back(start);
    result_.duration.push_back(duration);
    result_.batch.push_back(batch);
    result_.prefill_tokens.push_back(prefill);
    result_.attn_work.push_back(attn);
    result_.context_tokens.push_back(context);
    result_.emitted.push_back(emitted);
    result_.kv_used.push_back(used_blocks_ * server_.block);
  }

  /// Repeats the last iteration's batch while nothing can change it: all
  /// decodes, no arrival, no member finishing or reaching a point where its
  /// key may worsen, and free blocks for every block boundary crossed.
  double fast_forward(double now) {
    // A member whose key got worse may now rank below a waiting request, and
    // swap-outs of this iteration's victims are charged to the next one.
    if (!all_decode_ || finished_now_ || worsened_ || swapped_now_ > 0 || batch_.empty()) return now;
    const int64_t b = server_.block;
    int64_t horizon = kNever;
    double context = 0;
    phases_.assign(static_cast<size_t>(b), 0);
    for (const Member& m : batch_) {
      const RequestState& s = requests_[static_cast<size_t>(m.id)].state;
      horizon = std::min(horizon, s.output - s.generated - 1);  // the finishing step runs as a full iteration
      if (requests_[static_cast<size_t>(m.id)].until != kNever) {
        horizon = std::min(horizon, requests_[static_cast<size_t>(m.id)].until - s.generated);
      }
      context += static_cast<double>(s.prompt + s.generated);
      // Held: prompt + generated - 1 tokens; step j needs one more block when
      // (held + j - 1) is a multiple of the block size.
      ++phases_[static_cast<size_t>((s.prompt + s.generated - 1) % b)];
    }
    if (horizon <= 0) return now;
    const double next_arrival = next_arrival_ < trace_.size() ? trace_.arrival[next_arrival_] : INFINITY;
    const auto sequences = static_cast<double>(batch_.size());
    Work w;
    w.sequences = sequences;
    int64_t steps = 0;
    while (steps < horizon && next_arrival > now) {
      const int64_t phase = (b - (steps % b)) % b;
      const int64_t need = phases_[static_cast<size_t>(phase)];
      if (need > free_blocks_) break;
      free_blocks_ -= need;
      used_blocks_ += need;
      w.context = context;
      const double duration = profile_.iteration_time(w);
      record(now, duration, static_cast<int64_t>(batch_.size()), 0, 0, static_cast<int64_t>(context),
             static_cast<int64_t>(batch_.size()));
      now += duration;
      context += sequences;
      ++steps;
    }
    if (steps == 0) return now;
    for (const Member& m : batch_) {
      Request& r = requests_[static_cast<size_t>(m.id)];
      r.state.generated += steps;
      r.blocks = blocks_for(r.state.prompt + r.state.generated - 1);
      if (policy_->dynamic()) rekey(r);
    }
    return now;
  }

  const Trace& trace_;
  const Profile& profile_;
  Server server_;
  bool record_;
  Backend& backend_;
  int64_t total_blocks_ = 0, free_blocks_ = 0, used_blocks_ = 0;
  std::unique_ptr<Policy> policy_;
  std::vector<Request> requests_;
  Queue active_, holders_;
  std::deque<std::pair<double, int64_t>> results_;  ///< finish time, id: for the predictor
  std::vector<Member> batch_;
  std::vector<int64_t> phases_;
  bool all_decode_ = false, finished_now_ = false, worsened_ = false, plain_preemption_ = false;
  double swapped_now_ = 0;
  size_t next_arrival_ = 0, finished_ = 0;
  SimResult result_;
};

}  // namespace

namespace {

/// The simulator's backend: an iteration lasts what the profile says.
class ProfileBackend final : public Backend {
 public:
  explicit ProfileBackend(const Profile& profile) : profile_(profile) {}
  double execute(double /*now*/, const std::vector<Member>& /*batch*/, const Work& w) override {
    return profile_.iteration_time(w);
  }

 private:
  const Profile& profile_;
};

}  // namespace

SimResult run_engine(const Trace& trace, const Profile& profile, const SimOptions& options, uint64_t seed, Backend& backend) {
  Engine engine(trace, profile, options, seed, backend);
  return engine.run();
}

SimResult simulate(const Trace& trace, const Profile& profile, const SimOptions& options, uint64_t seed) {
  ProfileBackend backend(profile);
  return run_engine(trace, profile, options, seed, backend);
}

Summary summarise(const Trace& trace, const SimResult& r) {
  Summary s;
  const size_t n = trace.size();
  std::vector<double> ttlt(n);
  double first = INFINITY, last = 0, tokens = 0;
  for (size_t i = 0; i < n; ++i) {
    ttlt[i] = r.finish[i] - trace.arrival[i];
    s.mean_ttlt += ttlt[i] / static_cast<double>(n);
    s.mean_ttft += (r.first_token[i] - trace.arrival[i]) / static_cast<double>(n);
    s.preemptions += r.preemptions[i];
    first = std::min(first, trace.arrival[i]);
    last = std::max(last, r.finish[i]);
    tokens += static_cast<double>(trace.output_tokens[i]);
  }
  std::sort(ttlt.begin(), ttlt.end());
  const auto rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n)));
  s.p99_ttlt = ttlt[std::max<size_t>(rank, 1) - 1];
  s.throughput = last > first ? tokens / (last - first) : 0;
  return s;
}

}  // namespace sage
