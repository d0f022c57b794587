// prepare.cpp - the reader checkpoint: open-book QA on the warm-up pool, so
// the teacher (the model with the document in context) answers from it while
// the closed-book student knows none of the evaluation tasks' facts.
#include "nk/error.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "ssd-distill/ssd.hpp"

namespace ssd {

void prepare_verb(const PrepareOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  nk::lm::CausalModel m = nk::lm::load_causal_model(o.model);
  const nk::lm::Tokenizer& tok = m.tokenizer();
  const int64_t context = m.config().max_seq;
  std::vector<nk::lm::QaSequence> data;
  int64_t skipped = 0;
  for (const char* kind : {"memo", "update", "skill"}) {
    TaskSpec spec;
    spec.task = kind;
    spec.docs = o.docs;
    spec.seed = env.seed;
    spec.pool = Pool::warmup;
    spec.wordnet = o.wordnet;
    const Tasks t = generate_tasks(spec);
    for (const QaSplit* s : {&t.train, &t.test})
      for (int64_t i = 0; i < s->size(); ++i) {
        const size_t u = static_cast<size_t>(i);
        const std::string& doc = t.docs[static_cast<size_t>(s->doc[u])];
        try {
          data.push_back(nk::lm::qa_sequence(tok, s->question[u], s->answer[u], context, kind, "warm-up", i, doc));
        } catch (const nk::Error&) {
          ++skipped;  // a generated document too long for the context: left out
        }
      }
  }
  const std::vector<int32_t> general =
      o.config.replay_windows > 0 ? nk::lm::replay_stream(tok) : std::vector<int32_t>{};
  nk::lm::FinetuneConfig c = o.config;
  c.seed = env.seed;
  spdlog::info(
      "prepare: {} open-book QA pairs from {} warm-up documents of each kind ({} too long, left out); {} epochs "
      "of batch {}, {} replay windows of {} tokens a step",
      data.size(), o.docs, skipped, c.epochs, c.batch, c.replay_windows, c.replay_length);
  nk::Progress progress("prepare", c.epochs);
  nk::lm::finetune(m.checkpoint.weights, data, general, tok.bos(), c, [&](int64_t epoch, double loss) {
    progress.update(epoch);
    spdlog::info("prepare: epoch {} mean answer loss {:.4f}", epoch, loss);
  });
  progress.finish();
  nk::lm::save_checkpoint(o.output, m.checkpoint.weights, &tok, nullptr, nk::lm::StoreAs::bf16);
}

}  // namespace ssd
