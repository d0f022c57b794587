// rollout.hpp - who writes each token of a rollout y for a question x about a
// document C, and both models' distributions at every position.
//
// The student is pi_theta(.|x, y<t); the teacher pi_T(.|x, C, y<t) with the
// document in its context (its KV cache built once per document and forked).
// off-sft / off-fkl: the teacher writes; on-policy: the student writes (the
// teacher scores the finished rollout in one pass); skd: the student samples
// and the teacher replaces a token outside its own top K; ssd: the teacher
// writes y_t where delta_t = D_switch(student || teacher) > tau.
//
// Draws are keyed by (rollout key, position, writer), so the speculative ssd
// (the student drafts a chunk, the teacher scores it in one pass, the first
// position over tau is resampled by the teacher and the rest dropped) gives
// the same tokens as the token-by-token rule (in exact arithmetic: passes of
// 32 rows or more round differently from smaller ones, see ssd-distill(1)).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nk/lm/kv_cache.hpp"
#include "nk/lm/model.hpp"
#include "nk/lm/tokenizer.hpp"
#include "ssd-distill/ssd.hpp"

namespace ssd {

enum class Method { off_sft, off_fkl, on_policy, skd, ssd };
Method parse_method(const std::string& name);
const char* method_name(Method method);

struct RolloutConfig {
  Method method = Method::ssd;
  SwitchRule rule;
  double temperature = 1.0;  ///< 0: greedy
  int64_t max_new = 32;
  int64_t skd_topk = 25;
  int64_t chunk = 8;  ///< ssd: tokens the student drafts per teacher pass (0: token by token)
  uint64_t seed = 0;
};

struct Rollout {
  std::vector<int32_t> student_prefix, teacher_prefix, tokens;  ///< tokens: y, EOS included when emitted
  std::vector<int8_t> writer;                                   ///< per token: 1 the teacher wrote it
  std::vector<double> delta;                                    ///< per token: D_switch(student || teacher)
  std::vector<float> student_logits, teacher_logits;            ///< [n, V]: the distributions y_t was drawn against
  int64_t teacher_forward = 0, student_forward = 0;  ///< tokens each model ran (the document's prefill apart)
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

/// One rollout to run: 'question' about document 'doc' (its text
/// 'document'); 'key' names its draws.
struct RolloutRequest {
  const std::string* question = nullptr;
  int64_t doc = 0;
  const std::string* document = nullptr;
  uint64_t key = 0;
};

/// Rollouts against a student and a teacher model (the same architecture and
/// tokenizer; the weights may differ). Up to 'lanes' rollouts decode side by
/// side: every decoding step feeds one token of each through one forward of
/// each model (the rows share the weights' reads); a rollout's tokens do not
/// depend on which others run beside it, up to the forward's rounding (which
/// depends on a pass's row count). Not thread-safe: one per thread.
class Roller {
 public:
  Roller(const nk::lm::Model& student, const nk::lm::Model& teacher, const nk::lm::Tokenizer& tok,
         const RolloutConfig& config, int64_t lanes = 1);
  /// One rollout. The teacher's prompt must leave room for one answer token
  /// (a usage error otherwise; callers check first).
  Rollout run(const std::string& question, int64_t doc, const std::string& document, uint64_t key);
  /// Several, 'lanes' at a time, in the order given.
  std::vector<Rollout> run_batch(const std::vector<RolloutRequest>& requests);
  /// Tokens the teacher ran to prefill documents (counted apart).
  int64_t document_prefill() const { return prefill_; }
  const RolloutConfig& config() const { return config_; }

 private:
  struct Lane;
  int32_t document_slot(int64_t doc, const std::string& document);
  /// One forward of 'model' over segment i = seqs[i] continuing cache slot
  /// slots[i]; returns the logits (all rows, segments in order, or the last
  /// row of each).
  const float* feed(const nk::lm::Model& model, nk::lm::KvCache& cache, nk::lm::Workspace& ws,
                    const std::vector<int32_t>& slots, const std::vector<std::vector<int32_t>>& seqs, bool all_rows);
  /// Feeds one token (ys[k]) to lanes[which[k]] in the student and/or the
  /// teacher and keeps the next-token logits as their current rows.
  void step(std::vector<Lane>& lanes, const std::vector<size_t>& which, const std::vector<int32_t>& ys, bool student,
            bool teacher);
  int32_t draw(const float* logits, uint64_t key, int64_t position, int which) const;
  void start(std::vector<Lane>& lanes, bool student, bool teacher);
  void generate_plain(std::vector<Lane>& lanes);
  void generate_speculative(std::vector<Lane>& lanes);

  const nk::lm::Model& student_;
  const nk::lm::Model& teacher_;
  const nk::lm::Tokenizer& tok_;
  RolloutConfig config_;
  int64_t V_, lanes_;
  nk::lm::KvCache student_cache_, teacher_cache_;
  nk::lm::Workspace student_ws_, teacher_ws_;
  std::map<int64_t, int32_t> documents_;  ///< doc -> teacher slot holding BOS + document + "\n"
  std::vector<int64_t> document_order_;
  int64_t prefill_ = 0;
};

/// A training batch made of rollouts: the student's prompt + rollout of each,
/// packed; loss rows at the positions that predict rollout tokens, weighted
/// 1 / (|y| B) (the mean over positions, then over rollouts); the teacher's
/// logits there (or, for off-sft, the tokens).
struct DistillBatch {
  nk::lm::Packed packed;
  std::vector<int64_t> rows;
  std::vector<float> weights, targets;  ///< targets: [rows, V] teacher logits
  std::vector<int32_t> tokens;
};
DistillBatch distill_batch(const std::vector<Rollout>& rollouts);
/// After model.forward(batch.packed.batch(), ws): the loss (cross-entropy on
/// the tokens for off-sft, else 'loss' from the teacher) and, when 'grad', its
/// gradient in ws.dlogits().
double distill_loss(nk::lm::Workspace& ws, const DistillBatch& batch, Method method, nk::lm::Divergence loss, int64_t V,
                    bool grad);

/// BOS + document + "\n": the teacher's prefix shared by a document's questions.
std::vector<int32_t> document_tokens(const nk::lm::Tokenizer& tok, const std::string& document);
/// "Question: <q>\nAnswer:" (no BOS).
std::vector<int32_t> question_tokens(const nk::lm::Tokenizer& tok, const std::string& question);

}  // namespace ssd
