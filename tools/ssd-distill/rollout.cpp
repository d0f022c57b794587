// rollout.cpp - the five methods' rollouts, token by token or (ssd)
// speculatively, with the teacher's document caches forked per question.
#include "ssd-distill/rollout.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/loss.hpp"
#include "nk/rng.hpp"

namespace ssd {

namespace {

constexpr int kStudent = 0, kTeacher = 1;
constexpr int64_t kDocumentSlots = 32;

}  // namespace

Method parse_method(const std::string& name) {
  if (name == "off-sft") return Method::off_sft;
  if (name == "off-fkl") return Method::off_fkl;
  if (name == "on-policy") return Method::on_policy;
  if (name == "skd") return Method::skd;
  if (name == "ssd") return Method::ssd;
  throw nk::usage_error("a method is off-sft, off-fkl, on-policy, skd or ssd, not '" + name + "'");
}

const char* method_name(Method m) {
  switch (m) {
    case Method::off_sft:
      return "off-sft";
    case Method::off_fkl:
      return "off-fkl";
    case Method::on_policy:
      return "on-policy";
    case Method::skd:
      return "skd";
    case Method::ssd:
      return "ssd";
  }
  return "?";
}

std::vector<int32_t> document_tokens(const nk::lm::Tokenizer& tok, const std::string& document) {
  std::vector<int32_t> t{tok.bos()};
  const std::vector<int32_t> d = tok.encode(document + "\n");
  t.insert(t.end(), d.begin(), d.end());
  return t;
}

std::vector<int32_t> question_tokens(const nk::lm::Tokenizer& tok, const std::string& question) {
  return tok.encode("Question: " + question + "\nAnswer:");
}

struct Roller::Lane {
  Rollout r;
  std::vector<int32_t> q;  ///< the question's tokens (no BOS)
  int32_t s_slot = -1, t_slot = -1;
  int64_t limit = 0;
  uint64_t key = 0;
  std::vector<float> s_cur, t_cur;  ///< each model's logits for the next position
  // ssd, speculative: this round's draft and the student's logits before each token.
  std::vector<int32_t> draft;
  std::vector<float> draft_logits;
  int64_t chunk = 0;       ///< this round's draft length
  int64_t next_chunk = 0;  ///< the next round's (adapts to how much of the drafts the teacher keeps)
};

Roller::Roller(const nk::lm::Model& student, const nk::lm::Model& teacher, const nk::lm::Tokenizer& tok,
               const RolloutConfig& config, int64_t lanes)
    : student_(student),
      teacher_(teacher),
      tok_(tok),
      config_(config),
      V_(student.config().vocab),
      lanes_(std::max<int64_t>(1, lanes)),
      student_cache_(student.config(), {16, 0, static_cast<int64_t>(lanes_) + 1}),
      teacher_cache_(teacher.config(), {16, 0, kDocumentSlots + lanes_ + 1}),
      student_ws_(student.config(), {lanes_ * student.config().max_seq, student.config().max_seq, false}),
      teacher_ws_(teacher.config(), {lanes_ * teacher.config().max_seq, teacher.config().max_seq, false}) {
  if (student.config().vocab != teacher.config().vocab || student.config().max_seq != teacher.config().max_seq)
    throw nk::usage_error("the student and the teacher must share the vocabulary and the context");
  if (config_.max_new < 1) throw nk::usage_error("--max-new must be at least 1");
  if (config_.chunk < 0) throw nk::usage_error("--chunk must be at least 0");
}

const float* Roller::feed(const nk::lm::Model& model, nk::lm::KvCache& cache, nk::lm::Workspace& ws,
                          const std::vector<int32_t>& slots, const std::vector<std::vector<int32_t>>& seqs,
                          bool all_rows) {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  for (const auto& s : seqs) {
    tokens.insert(tokens.end(), s.begin(), s.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  nk::lm::ForwardOptions o;
  o.logits = all_rows ? nk::lm::LogitRows::all : nk::lm::LogitRows::last;
  o.cache = &cache;
  model.forward({tokens, offsets, {}, slots}, ws, o);
  return ws.logits();
}

int32_t Roller::document_slot(int64_t doc, const std::string& document) {
  if (const auto it = documents_.find(doc); it != documents_.end()) return it->second;
  if (static_cast<int64_t>(documents_.size()) >= kDocumentSlots) {  // the oldest document leaves (forks keep its pages)
    const int64_t old = document_order_.front();
    document_order_.erase(document_order_.begin());
    teacher_cache_.close(documents_.at(old));
    documents_.erase(old);
  }
  const std::vector<int32_t> tokens = document_tokens(tok_, document);
  const int32_t slot = teacher_cache_.open();
  feed(teacher_, teacher_cache_, teacher_ws_, {slot}, {tokens}, false);
  prefill_ += static_cast<int64_t>(tokens.size());
  documents_[doc] = slot;
  document_order_.push_back(doc);
  return slot;
}

int32_t Roller::draw(const float* logits, uint64_t key, int64_t position, int which) const {
  nk::lm::SamplerOptions o;
  o.greedy = config_.temperature <= 0;
  if (!o.greedy) o.temperature = config_.temperature;
  const double u = nk::Rng(config_.seed).split(key).split(static_cast<uint64_t>(2 * position + which)).uniform();
  return nk::lm::sample(logits, V_, o, u);
}

Rollout Roller::run(const std::string& question, int64_t doc, const std::string& document, uint64_t key) {
  return std::move(run_batch({{&question, doc, &document, key}}).front());
}

std::vector<Rollout> Roller::run_batch(const std::vector<RolloutRequest>& requests) {
  std::vector<Rollout> out;
  const int64_t context = student_.config().max_seq;
  for (size_t first = 0; first < requests.size(); first += static_cast<size_t>(lanes_)) {
    const size_t last = std::min(requests.size(), first + static_cast<size_t>(lanes_));
    std::vector<Lane> lanes(last - first);
    for (size_t i = first; i < last; ++i) {
      const RolloutRequest& q = requests[i];
      Lane& L = lanes[i - first];
      L.q = question_tokens(tok_, *q.question);
      L.r.student_prefix.push_back(tok_.bos());
      L.r.student_prefix.insert(L.r.student_prefix.end(), L.q.begin(), L.q.end());
      L.r.teacher_prefix = document_tokens(tok_, *q.document);
      L.r.teacher_prefix.insert(L.r.teacher_prefix.end(), L.q.begin(), L.q.end());
      L.limit = std::min<int64_t>(config_.max_new, context - static_cast<int64_t>(L.r.teacher_prefix.size()));
      if (L.limit < 1)
        throw nk::usage_error("the teacher's prompt takes " + std::to_string(L.r.teacher_prefix.size()) +
                              " tokens: no room for an answer in the context of " + std::to_string(context));
      L.key = q.key;
      L.t_slot = teacher_cache_.fork(document_slot(q.doc, *q.document));
      L.s_slot = student_cache_.open();
      L.s_cur.resize(static_cast<size_t>(V_));
      L.t_cur.resize(static_cast<size_t>(V_));
    }
    if (config_.method == Method::ssd && config_.chunk > 0)
      generate_speculative(lanes);
    else
      generate_plain(lanes);
    for (Lane& L : lanes) {
      teacher_cache_.close(L.t_slot);
      student_cache_.close(L.s_slot);
      // delta everywhere (both distributions are known at every position now).
      Rollout& r = L.r;
      const int64_t n = r.size();
      r.delta.resize(static_cast<size_t>(n));
      for (int64_t t = 0; t < n; ++t)
        r.delta[static_cast<size_t>(t)] =
            config_.rule.delta(r.student_logits.data() + t * V_, r.teacher_logits.data() + t * V_, V_);
      out.push_back(std::move(r));
    }
  }
  return out;
}

void Roller::start(std::vector<Lane>& lanes, bool student, bool teacher) {
  std::vector<int32_t> slots;
  std::vector<std::vector<int32_t>> seqs;
  if (student) {
    for (Lane& L : lanes) slots.push_back(L.s_slot), seqs.push_back(L.r.student_prefix);
    const float* l = feed(student_, student_cache_, student_ws_, slots, seqs, false);
    for (size_t i = 0; i < lanes.size(); ++i) {
      std::copy(l + static_cast<int64_t>(i) * V_, l + static_cast<int64_t>(i + 1) * V_, lanes[i].s_cur.begin());
      lanes[i].r.student_forward += static_cast<int64_t>(lanes[i].r.student_prefix.size());
    }
  }
  if (teacher) {
    slots.clear(), seqs.clear();
    for (Lane& L : lanes) slots.push_back(L.t_slot), seqs.push_back(L.q);
    const float* l = feed(teacher_, teacher_cache_, teacher_ws_, slots, seqs, false);
    for (size_t i = 0; i < lanes.size(); ++i) {
      std::copy(l + static_cast<int64_t>(i) * V_, l + static_cast<int64_t>(i + 1) * V_, lanes[i].t_cur.begin());
      lanes[i].r.teacher_forward += static_cast<int64_t>(lanes[i].q.size());
    }
  }
}

void Roller::step(std::vector<Lane>& lanes, const std::vector<size_t>& which, const std::vector<int32_t>& ys,
                  bool student, bool teacher) {
  if (which.empty()) return;
  std::vector<int32_t> slots;
  std::vector<std::vector<int32_t>> seqs;
  for (size_t k = 0; k < which.size(); ++k) seqs.push_back({ys[k]});
  for (int m = 0; m < 2; ++m) {
    if (!(m == 0 ? student : teacher)) continue;
    slots.clear();
    for (size_t i : which) slots.push_back(m == 0 ? lanes[i].s_slot : lanes[i].t_slot);
    const float* l = m == 0 ? feed(student_, student_cache_, student_ws_, slots, seqs, false)
                            : feed(teacher_, teacher_cache_, teacher_ws_, slots, seqs, false);
    for (size_t k = 0; k < which.size(); ++k) {
      Lane& L = lanes[which[k]];
      std::copy(l + static_cast<int64_t>(k) * V_, l + static_cast<int64_t>(k + 1) * V_,
                (m == 0 ? L.s_cur : L.t_cur).begin());
      (m == 0 ? L.r.student_forward : L.r.teacher_forward) += 1;
    }
  }
}

void Roller::generate_plain(std::vector<Lane>& lanes) {
  const Method m = config_.method;
  const bool need_student = m != Method::off_sft && m != Method::off_fkl;
  const bool need_teacher = m != Method::on_policy;
  start(lanes, need_student, need_teacher);
  std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(1, config_.skd_topk)));
  std::vector<float> values(ids.size());
  std::vector<size_t> live(lanes.size());
  std::iota(live.begin(), live.end(), size_t{0});
  std::vector<size_t> next;
  std::vector<int32_t> ys;
  while (!live.empty()) {
    next.clear(), ys.clear();
    for (size_t i : live) {
      Lane& L = lanes[i];
      Rollout& r = L.r;
      const int64_t t = r.size();
      const float* s_cur = L.s_cur.data();
      const float* t_cur = L.t_cur.data();
      if (need_student) r.student_logits.insert(r.student_logits.end(), L.s_cur.begin(), L.s_cur.end());
      if (need_teacher) r.teacher_logits.insert(r.teacher_logits.end(), L.t_cur.begin(), L.t_cur.end());
      int32_t y = 0;
      int8_t by_teacher = 0;
      switch (m) {
        case Method::off_sft:
        case Method::off_fkl:
          y = draw(t_cur, L.key, t, kTeacher), by_teacher = 1;
          break;
        case Method::on_policy:
          y = draw(s_cur, L.key, t, kStudent);
          break;
        case Method::ssd:
          if (config_.rule.delta(s_cur, t_cur, V_) > config_.rule.tau)
            y = draw(t_cur, L.key, t, kTeacher), by_teacher = 1;
          else
            y = draw(s_cur, L.key, t, kStudent);
          break;
        case Method::skd: {
          y = draw(s_cur, L.key, t, kStudent);
          const int64_t K = std::min<int64_t>(config_.skd_topk, V_);
          nk::lm::top_k(t_cur, 1, V_, K, ids.data(), values.data());
          if (std::find(ids.begin(), ids.begin() + K, y) == ids.begin() + K)
            y = draw(t_cur, L.key, t, kTeacher), by_teacher = 1;
          break;
        }
      }
      r.tokens.push_back(y);
      r.writer.push_back(by_teacher);
      if (y == tok_.eos() || t + 1 >= L.limit) continue;
      next.push_back(i);
      ys.push_back(y);
    }
    step(lanes, next, ys, need_student, need_teacher);
    live.swap(next);
  }
  // The model that did not write scores the finished rollouts in one pass.
  for (int which = 0; which < 2; ++which) {
    const bool scored = which == 0 ? !need_student : !need_teacher;
    if (!scored) continue;
    std::vector<int32_t> slots;
    std::vector<std::vector<int32_t>> seqs;
    for (Lane& L : lanes) {
      std::vector<int32_t> pass = which == 0 ? L.r.student_prefix : L.q;
      pass.insert(pass.end(), L.r.tokens.begin(), L.r.tokens.end() - 1);
      slots.push_back(which == 0 ? L.s_slot : L.t_slot);
      seqs.push_back(std::move(pass));
    }
    const float* l = which == 0 ? feed(student_, student_cache_, student_ws_, slots, seqs, true)
                                : feed(teacher_, teacher_cache_, teacher_ws_, slots, seqs, true);
    int64_t row = 0;
    for (size_t i = 0; i < lanes.size(); ++i) {
      Rollout& r = lanes[i].r;
      const int64_t rows = static_cast<int64_t>(seqs[i].size()), n = r.size();
      (which == 0 ? r.student_logits : r.teacher_logits).assign(l + (row + rows - n) * V_, l + (row + rows) * V_);
      (which == 0 ? r.student_forward : r.teacher_forward) += rows;
      row += rows;
    }
  }
}

void Roller::generate_speculative(std::vector<Lane>& lanes) {
  start(lanes, true, true);
  std::vector<size_t> live(lanes.size()), drafting, verifying, next, feed_lanes;
  std::iota(live.begin(), live.end(), size_t{0});
  for (Lane& L : lanes) L.next_chunk = config_.chunk;
  std::vector<int32_t> ys, slots;
  std::vector<std::vector<int32_t>> seqs;
  // Writes the teacher's keyed draw at position n of lane i from 'teacher_row'; queues the token
  // for both models unless the rollout ends.
  const auto teacher_writes = [&](size_t i, const float* student_row, const float* teacher_row) {
    Lane& L = lanes[i];
    Rollout& r = L.r;
    const int32_t y = draw(teacher_row, L.key, r.size(), kTeacher);
    r.student_logits.insert(r.student_logits.end(), student_row, student_row + V_);
    r.teacher_logits.insert(r.teacher_logits.end(), teacher_row, teacher_row + V_);
    r.tokens.push_back(y);
    r.writer.push_back(1);
    if (y == tok_.eos() || r.size() >= L.limit) return;
    feed_lanes.push_back(i);
    ys.push_back(y);
    next.push_back(i);
  };
  while (!live.empty()) {
    next.clear(), feed_lanes.clear(), ys.clear(), drafting.clear();
    // Position n's two distributions are known (s_cur, t_cur): where delta > tau there, the teacher
    // writes at once (no draft to drop); elsewhere the student drafts up to 'chunk' tokens
    // (stopping at EOS), feeding each.
    for (size_t i : live) {
      Lane& L = lanes[i];
      if (config_.rule.delta(L.s_cur.data(), L.t_cur.data(), V_) > config_.rule.tau) {
        teacher_writes(i, L.s_cur.data(), L.t_cur.data());
        continue;
      }
      L.draft.clear(), L.draft_logits.clear();
      L.chunk = std::min(L.next_chunk, L.limit - L.r.size());
      drafting.push_back(i);
    }
    verifying = drafting;
    std::vector<size_t> feeding;
    std::vector<int32_t> draft_ys;
    while (!drafting.empty()) {
      feeding.clear(), draft_ys.clear();
      for (size_t i : drafting) {
        Lane& L = lanes[i];
        const int64_t n = L.r.size(), j = static_cast<int64_t>(L.draft.size());
        L.draft_logits.insert(L.draft_logits.end(), L.s_cur.begin(), L.s_cur.end());
        const int32_t y = draw(L.s_cur.data(), L.key, n + j, kStudent);
        L.draft.push_back(y);
        if (y == tok_.eos() || n + j + 1 >= L.limit) continue;
        feeding.push_back(i);
        draft_ys.push_back(y);
      }
      step(lanes, feeding, draft_ys, true, false);
      drafting.clear();
      for (size_t i : feeding)
        if (static_cast<int64_t>(lanes[i].draft.size()) < lanes[i].chunk) drafting.push_back(i);
    }
    // The teacher scores every draft in one pass: its logits at positions n..n+d-1 are t_cur and
    // the rows after the first d-1 draft tokens; the row after the last continues the next round.
    if (!verifying.empty()) {
      slots.clear(), seqs.clear();
      for (size_t i : verifying) slots.push_back(lanes[i].t_slot), seqs.push_back(lanes[i].draft);
      const float* l = feed(teacher_, teacher_cache_, teacher_ws_, slots, seqs, true);
      int64_t row = 0;
      std::vector<float> teacher_rows;
      for (size_t i : verifying) {
        Lane& L = lanes[i];
        Rollout& r = L.r;
        const float* rows = l + row * V_;
        const int64_t n = r.size(), d = static_cast<int64_t>(L.draft.size());
        row += d;
        r.teacher_forward += d;
        teacher_rows.assign(L.t_cur.begin(), L.t_cur.end());
        teacher_rows.insert(teacher_rows.end(), rows, rows + (d - 1) * V_);
        int64_t reject = -1;
        for (int64_t j = 0; j < d && reject < 0; ++j)
          if (config_.rule.delta(L.draft_logits.data() + j * V_, teacher_rows.data() + j * V_, V_) > config_.rule.tau)
            reject = j;
        const int64_t keep = reject < 0 ? d : reject;
        for (int64_t j = 0; j < keep; ++j) {
          r.tokens.push_back(L.draft[static_cast<size_t>(j)]);
          r.writer.push_back(0);
        }
        r.student_logits.insert(r.student_logits.end(), L.draft_logits.begin(), L.draft_logits.begin() + keep * V_);
        r.teacher_logits.insert(r.teacher_logits.end(), teacher_rows.begin(), teacher_rows.begin() + keep * V_);
        if (reject < 0) {
          // All kept: draft longer next time.
          L.next_chunk = std::min(config_.chunk, 2 * d);
          std::copy(rows + (d - 1) * V_, rows + d * V_, L.t_cur.begin());
          if (!(L.draft.back() == tok_.eos() || r.size() >= L.limit)) next.push_back(i);
          continue;
        }
        // The teacher writes the rejected position; the rest of the draft is dropped (and the next
        // draft is as long as the part kept, plus one).
        L.next_chunk = std::max<int64_t>(1, reject + 1);
        student_cache_.truncate(L.s_slot, static_cast<int64_t>(r.student_prefix.size()) + n + reject);
        teacher_cache_.truncate(L.t_slot, static_cast<int64_t>(r.teacher_prefix.size()) + n + reject);
        teacher_writes(i, L.draft_logits.data() + reject * V_, teacher_rows.data() + reject * V_);
      }
    }
    step(lanes, feed_lanes, ys, true, true);
    std::sort(next.begin(), next.end());
    live.swap(next);
  }
}

DistillBatch distill_batch(const std::vector<Rollout>& rollouts) {
  DistillBatch d;
  const float B = static_cast<float>(rollouts.size());
  for (const Rollout& r : rollouts) {
    std::vector<int32_t> seq = r.student_prefix;
    seq.insert(seq.end(), r.tokens.begin(), r.tokens.end());
    const int64_t at = d.packed.rows() + static_cast<int64_t>(r.student_prefix.size()) - 1;
    d.packed.add(seq);
    const float w = 1.0f / (static_cast<float>(r.size()) * B);
    for (int64_t j = 0; j < r.size(); ++j) {
      d.rows.push_back(at + j);
      d.weights.push_back(w);
      d.tokens.push_back(r.tokens[static_cast<size_t>(j)]);
    }
    d.targets.insert(d.targets.end(), r.teacher_logits.begin(), r.teacher_logits.end());
  }
  return d;
}

double distill_loss(nk::lm::Workspace& ws, const DistillBatch& d, Method method, nk::lm::Divergence loss, int64_t V,
                    bool grad) {
  nk::lm::Target target;
  if (method == Method::off_sft) {
    target.kind = nk::lm::Target::Kind::token;
    target.token = d.tokens.data();
    loss = nk::lm::Divergence::cross_entropy;
  } else {
    target.kind = nk::lm::Target::Kind::full;
    target.logits = d.targets.data();
    target.stride = V;
  }
  return nk::lm::loss_and_grad(loss, ws.logits(), ws.logit_rows(), V, target, {d.rows, d.weights}, nullptr,
                               grad ? ws.dlogits() : nullptr);
}

}  // namespace ssd
