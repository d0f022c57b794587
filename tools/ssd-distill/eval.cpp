// eval.cpp - greedy answers, closed- or open-book, scored against the gold
// answers; perplexity on held-out general text (forgetting).
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/answers.hpp"
#include "nk/log.hpp"
#include "ssd-distill/ssd.hpp"

namespace ssd {

AnswerScore score_answer(const std::string& prediction, const std::string& gold) {
  AnswerScore s;
  s.exact = nk::lm::exact_match(prediction, gold);
  s.f1 = nk::lm::word_f1(prediction, gold);
  s.correct = nk::lm::answer_words(gold).size() <= 3 ? s.exact : s.f1 >= 0.5;
  return s;
}

void check_room(const Tasks& t, const std::string& split, int64_t row, int64_t prompt, int64_t context,
                bool with_document) {
  if (prompt + 1 <= context) return;
  const QaSplit& s = split == "train" ? t.train : t.test;
  throw nk::input_error(t.path, "/" + split + "/question",
                        "row " + std::to_string(row) +
                            (with_document ? " with document " + std::to_string(s.doc[static_cast<size_t>(row)]) : "") +
                            ": the prompt takes " + std::to_string(prompt) +
                            " tokens, leaving no room for an answer in the model's context of " +
                            std::to_string(context));
}

std::vector<std::string> answers(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tasks& t,
                                 const std::string& split, bool open_book, int64_t max_new) {
  const QaSplit& s = split == "train" ? t.train : t.test;
  const int64_t context = model.config().max_seq;
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t i = 0; i < s.size(); ++i) {
    const size_t u = static_cast<size_t>(i);
    const int64_t d = s.doc[u];
    std::vector<int32_t> p =
        nk::lm::prompt_tokens(tok, s.question[u], open_book ? t.docs[static_cast<size_t>(d)] : std::string());
    check_room(t, split, i, static_cast<int64_t>(p.size()), context, open_book);
    prompts.push_back(std::move(p));
  }
  const std::vector<std::vector<int32_t>> out = nk::lm::greedy(model, tok, prompts, max_new);
  std::vector<std::string> text;
  for (const auto& o : out) {
    std::string a = tok.decode(o);
    // The answer is the first line (a model may go on with another question).
    if (const size_t nl = a.find('\n'); nl != std::string::npos) a.resize(nl);
    text.push_back(std::move(a));
  }
  return text;
}

double accuracy(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tasks& t, const std::string& split,
                bool open_book, int64_t max_new) {
  const QaSplit& s = split == "train" ? t.train : t.test;
  if (s.size() == 0) return std::nan("");
  const std::vector<std::string> text = answers(model, tok, t, split, open_book, max_new);
  int64_t right = 0;
  for (int64_t i = 0; i < s.size(); ++i)
    right += score_answer(text[static_cast<size_t>(i)], s.answer[static_cast<size_t>(i)]).correct ? 1 : 0;
  return static_cast<double>(right) / static_cast<double>(s.size());
}

void eval_verb(const EvalOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  const nk::lm::CausalModel m = nk::lm::load_causal_model(o.model);
  const Tasks t = read_tasks(o.input);
  if (o.split != "train" && o.split != "test") throw nk::usage_error("--split must be train or test");
  const QaSplit& s = o.split == "train" ? t.train : t.test;
  const nk::lm::Tokenizer& tok = m.tokenizer();
  const nk::lm::Model model(m.checkpoint.weights);
  const std::vector<std::string> text = answers(model, tok, t, o.split, o.open_book, o.max_new);
  std::vector<std::string> prediction;
  std::vector<int8_t> exact, correct;
  std::vector<double> f1;
  int64_t right = 0;
  for (int64_t i = 0; i < s.size(); ++i) {
    const AnswerScore a = score_answer(text[static_cast<size_t>(i)], s.answer[static_cast<size_t>(i)]);
    prediction.push_back(text[static_cast<size_t>(i)]);
    exact.push_back(a.exact ? 1 : 0);
    correct.push_back(a.correct ? 1 : 0);
    f1.push_back(a.f1);
    right += a.correct ? 1 : 0;
  }
  const double accuracy = s.size() ? static_cast<double>(right) / static_cast<double>(s.size()) : std::nan("");
  double ppl = std::nan("");
  if (o.ppl) ppl = nk::lm::perplexity(model, tok, nk::lm::general_text(o.ppl_text, o.ppl_docs));
  nk::h5::Writer w(o.output, kEvalSchema, o.no_clobber);
  w.write_strings("/eval/prediction", prediction, "Q");
  w.write("/eval/exact", exact.data(), {s.size()}, "Q");
  w.write("/eval/f1", f1.data(), {s.size()}, "Q");
  w.write("/eval/correct", correct.data(), {s.size()}, "Q");
  w.attr("/eval", "accuracy", accuracy);
  w.attr("/eval", "split", o.split);
  w.attr("/eval", "open_book", static_cast<int64_t>(o.open_book));
  w.attr("/eval", "model", o.model);
  if (o.ppl) w.attr("/eval", "ppl_general", ppl);
  w.commit();
  spdlog::info("eval: {} {} questions {}, accuracy {:.3f}{}", s.size(), o.split,
               o.open_book ? "open-book" : "closed-book", accuracy,
               o.ppl ? fmt::format(", perplexity {:.2f}", ppl) : std::string());
  (void)env;
}

}  // namespace ssd
