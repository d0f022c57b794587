// rollout.cpp - the five methods' rollouts, token by token or (ssd)
// speculatively, with the teacher's document caches forked per question.
#include "ssd-distill/rollout.hpp"

#include <algorithm>
#include <cmath>

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

Roller::Roller(const nk::lm::Model& student, const nk::lm::Model& teacher, const nk::lm::Tokenizer& tok,
               const RolloutConfig& config)
    : student_(student),
      teacher_(teacher),
      tok_(tok),
      config_(config),
      V_(student.config().vocab),
      student_cache_(student.config(), {16, 0, 2}),
      teacher_cache_(teacher.config(), {16, 0, kDocumentSlots + 2}),
      student_ws_(student.config(), {student.config().max_seq, student.config().max_seq, false}),
      teacher_ws_(teacher.config(), {teacher.config().max_seq, teacher.config().max_seq, false}) {
  if (student.config().vocab != teacher.config().vocab || student.config().max_seq != teacher.config().max_seq)
    throw nk::usage_error("the student and the teacher must share the vocabulary and the context");
  if (config_.max_new < 1) throw nk::usage_error("--max-new must be at least 1");
  if (config_.chunk < 0) throw nk::usage_error("--chunk must be at least 0");
}

const float* Roller::feed(const nk::lm::Model& model, nk::lm::KvCache& cache, nk::lm::Workspace& ws, int32_t slot,
                          const std::vector<int32_t>& tokens, bool all_rows) {
  const std::vector<int64_t> offsets{0, static_cast<int64_t>(tokens.size())};
  const std::vector<int32_t> slots{slot};
  nk::lm::ForwardOptions o;
  o.logits = all_rows ? nk::lm::LogitRows::all : nk::lm::LogitRows::last;
  o.cache = &cache;
  model.forward({tokens, offsets, {}, slots}, ws, o);
  return ws.logits();
}

int32_t Roller::document_slot(int64_t doc, const std::string& document) {
  if (const auto it = documents_.find(doc); it != documents_.end()) return it->second;
  if (static_cast<int64_t>(documents_.size()) >= kDocumentSlots) {  // the oldest document leaves
    const int64_t old = document_order_.front();
    document_order_.erase(document_order_.begin());
    teacher_cache_.close(documents_.at(old));
    documents_.erase(old);
  }
  const std::vector<int32_t> tokens = document_tokens(tok_, document);
  const int32_t slot = teacher_cache_.open();
  feed(teacher_, teacher_cache_, teacher_ws_, slot, tokens, false);
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
  Rollout r;
  const std::vector<int32_t> q = question_tokens(tok_, question);
  r.student_prefix.push_back(tok_.bos());
  r.student_prefix.insert(r.student_prefix.end(), q.begin(), q.end());
  r.teacher_prefix = document_tokens(tok_, document);
  r.teacher_prefix.insert(r.teacher_prefix.end(), q.begin(), q.end());
  const int64_t context = student_.config().max_seq;
  const int64_t limit = std::min<int64_t>(config_.max_new, context - static_cast<int64_t>(r.teacher_prefix.size()));
  if (limit < 1)
    throw nk::usage_error("the teacher's prompt takes " + std::to_string(r.teacher_prefix.size()) +
                          " tokens: no room for an answer in the context of " + std::to_string(context));
  const int32_t doc_slot = document_slot(doc, document);
  const int32_t t_slot = teacher_cache_.fork(doc_slot);
  const int32_t s_slot = student_cache_.open();
  if (config_.method == Method::ssd && config_.chunk > 0)
    generate_speculative(r, s_slot, t_slot, limit, key);
  else
    generate_plain(r, s_slot, t_slot, limit, key);
  teacher_cache_.close(t_slot);
  student_cache_.close(s_slot);
  // delta everywhere (both distributions are known at every position now).
  const int64_t n = r.size();
  r.delta.resize(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t)
    r.delta[static_cast<size_t>(t)] =
        config_.rule.delta(r.student_logits.data() + t * V_, r.teacher_logits.data() + t * V_, V_);
  return r;
}

void Roller::generate_plain(Rollout& r, int32_t s_slot, int32_t t_slot, int64_t limit, uint64_t key) {
  const Method m = config_.method;
  const bool need_student = m != Method::off_sft && m != Method::off_fkl;
  const bool need_teacher = m != Method::on_policy;
  std::vector<float> s_cur(static_cast<size_t>(V_)), t_cur(static_cast<size_t>(V_));
  const std::vector<int32_t> q(r.student_prefix.begin() + 1, r.student_prefix.end());
  if (need_student) {
    const float* l = feed(student_, student_cache_, student_ws_, s_slot, r.student_prefix, false);
    std::copy(l, l + V_, s_cur.begin());
    r.student_forward += static_cast<int64_t>(r.student_prefix.size());
  }
  if (need_teacher) {
    const float* l = feed(teacher_, teacher_cache_, teacher_ws_, t_slot, q, false);
    std::copy(l, l + V_, t_cur.begin());
    r.teacher_forward += static_cast<int64_t>(q.size());
  }
  std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(1, config_.skd_topk)));
  std::vector<float> values(ids.size());
  for (int64_t t = 0; t < limit; ++t) {
    if (need_student) r.student_logits.insert(r.student_logits.end(), s_cur.begin(), s_cur.end());
    if (need_teacher) r.teacher_logits.insert(r.teacher_logits.end(), t_cur.begin(), t_cur.end());
    int32_t y = 0;
    int8_t by_teacher = 0;
    switch (m) {
      case Method::off_sft:
      case Method::off_fkl:
        y = draw(t_cur.data(), key, t, kTeacher), by_teacher = 1;
        break;
      case Method::on_policy:
        y = draw(s_cur.data(), key, t, kStudent);
        break;
      case Method::ssd:
        if (config_.rule.delta(s_cur.data(), t_cur.data(), V_) > config_.rule.tau)
          y = draw(t_cur.data(), key, t, kTeacher), by_teacher = 1;
        else
          y = draw(s_cur.data(), key, t, kStudent);
        break;
      case Method::skd: {
        y = draw(s_cur.data(), key, t, kStudent);
        const int64_t K = std::min<int64_t>(config_.skd_topk, V_);
        nk::lm::top_k(t_cur.data(), 1, V_, K, ids.data(), values.data());
        if (std::find(ids.begin(), ids.begin() + K, y) == ids.begin() + K)
          y = draw(t_cur.data(), key, t, kTeacher), by_teacher = 1;
        break;
      }
    }
    r.tokens.push_back(y);
    r.writer.push_back(by_teacher);
    if (y == tok_.eos() || t + 1 >= limit) break;
    const std::vector<int32_t> one{y};
    if (need_student) {
      const float* l = feed(student_, student_cache_, student_ws_, s_slot, one, false);
      std::copy(l, l + V_, s_cur.begin());
      r.student_forward += 1;
    }
    if (need_teacher) {
      const float* l = feed(teacher_, teacher_cache_, teacher_ws_, t_slot, one, false);
      std::copy(l, l + V_, t_cur.begin());
      r.teacher_forward += 1;
    }
  }
  // The model that did not write scores the finished rollout in one pass.
  const int64_t n = r.size();
  std::vector<int32_t> pass;
  if (!need_teacher) {
    pass = q;
    pass.insert(pass.end(), r.tokens.begin(), r.tokens.end() - 1);
    const float* l = feed(teacher_, teacher_cache_, teacher_ws_, t_slot, pass, true);
    const int64_t rows = static_cast<int64_t>(pass.size());
    r.teacher_logits.assign(l + (rows - n) * V_, l + rows * V_);
    r.teacher_forward += rows;
  }
  if (!need_student) {
    pass = r.student_prefix;
    pass.insert(pass.end(), r.tokens.begin(), r.tokens.end() - 1);
    const float* l = feed(student_, student_cache_, student_ws_, s_slot, pass, true);
    const int64_t rows = static_cast<int64_t>(pass.size());
    r.student_logits.assign(l + (rows - n) * V_, l + rows * V_);
    r.student_forward += rows;
  }
}

void Roller::generate_speculative(Rollout& r, int32_t s_slot, int32_t t_slot, int64_t limit, uint64_t key) {
  const int64_t s_base = static_cast<int64_t>(r.student_prefix.size());
  const int64_t t_base = static_cast<int64_t>(r.teacher_prefix.size());
  const std::vector<int32_t> q(r.student_prefix.begin() + 1, r.student_prefix.end());
  std::vector<float> s_cur(static_cast<size_t>(V_)), t_cur(static_cast<size_t>(V_));
  const float* l = feed(student_, student_cache_, student_ws_, s_slot, r.student_prefix, false);
  std::copy(l, l + V_, s_cur.begin());
  r.student_forward += s_base;
  l = feed(teacher_, teacher_cache_, teacher_ws_, t_slot, q, false);
  std::copy(l, l + V_, t_cur.begin());
  r.teacher_forward += static_cast<int64_t>(q.size());
  std::vector<int32_t> draft;
  std::vector<float> draft_logits, teacher_rows;
  bool done = false;
  while (!done) {
    const int64_t n = r.size();
    const int64_t c = std::min(config_.chunk, limit - n);
    // The student drafts up to c tokens (stopping at EOS), feeding each.
    draft.clear();
    draft_logits.clear();
    for (int64_t j = 0; j < c; ++j) {
      draft_logits.insert(draft_logits.end(), s_cur.begin(), s_cur.end());
      const int32_t y = draw(s_cur.data(), key, n + j, kStudent);
      draft.push_back(y);
      if (y == tok_.eos() || n + j + 1 >= limit) break;
      l = feed(student_, student_cache_, student_ws_, s_slot, {y}, false);
      std::copy(l, l + V_, s_cur.begin());
      r.student_forward += 1;
    }
    const int64_t d = static_cast<int64_t>(draft.size());
    // The teacher scores the draft in one pass: its logits at positions n..n+d-1 are t_cur and the
    // rows after the first d-1 draft tokens; the row after the last one continues the next round.
    l = feed(teacher_, teacher_cache_, teacher_ws_, t_slot, draft, true);
    r.teacher_forward += d;
    teacher_rows.assign(t_cur.begin(), t_cur.end());
    teacher_rows.insert(teacher_rows.end(), l, l + (d - 1) * V_);
    int64_t reject = -1;
    for (int64_t j = 0; j < d && reject < 0; ++j)
      if (config_.rule.delta(draft_logits.data() + j * V_, teacher_rows.data() + j * V_, V_) > config_.rule.tau)
        reject = j;
    const int64_t keep = reject < 0 ? d : reject;
    for (int64_t j = 0; j < keep; ++j) {
      r.tokens.push_back(draft[static_cast<size_t>(j)]);
      r.writer.push_back(0);
    }
    r.student_logits.insert(r.student_logits.end(), draft_logits.begin(), draft_logits.begin() + keep * V_);
    r.teacher_logits.insert(r.teacher_logits.end(), teacher_rows.begin(), teacher_rows.begin() + keep * V_);
    if (reject < 0) {
      std::copy(l + (d - 1) * V_, l + d * V_, t_cur.begin());
      done = draft.back() == tok_.eos() || r.size() >= limit;
      continue;
    }
    // The teacher writes the rejected position; the rest of the draft is dropped.
    const float* t_row = teacher_rows.data() + reject * V_;
    const int32_t y = draw(t_row, key, n + reject, kTeacher);
    r.student_logits.insert(r.student_logits.end(), draft_logits.begin() + reject * V_,
                            draft_logits.begin() + (reject + 1) * V_);
    r.teacher_logits.insert(r.teacher_logits.end(), t_row, t_row + V_);
    r.tokens.push_back(y);
    r.writer.push_back(1);
    student_cache_.truncate(s_slot, s_base + n + reject);
    teacher_cache_.truncate(t_slot, t_base + n + reject);
    if (y == tok_.eos() || r.size() >= limit) break;
    l = feed(student_, student_cache_, student_ws_, s_slot, {y}, false);
    std::copy(l, l + V_, s_cur.begin());
    r.student_forward += 1;
    l = feed(teacher_, teacher_cache_, teacher_ws_, t_slot, {y}, false);
    std::copy(l, l + V_, t_cur.begin());
    r.teacher_forward += 1;
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
