// rollout_verb.cpp - rollouts of a split's questions, written as padded rows
// with the prompts as CSR arrays (and with --dump-dists both models'
// log-probabilities at every position).
#include <cmath>
#include <limits>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "ssd-distill/rollout.hpp"

namespace ssd {

namespace {

constexpr int64_t kLanes = 16;  // rollouts decoded side by side

void write_csr(nk::h5::Writer& w, const std::string& name, const std::vector<std::vector<int32_t>>& rows) {
  std::vector<int32_t> flat;
  std::vector<int64_t> offsets{0};
  for (const auto& r : rows) {
    flat.insert(flat.end(), r.begin(), r.end());
    offsets.push_back(static_cast<int64_t>(flat.size()));
  }
  w.write(name, flat.data(), {static_cast<int64_t>(flat.size())}, "T");
  w.write(name + "_offsets", offsets.data(), {static_cast<int64_t>(offsets.size())}, "R1");
}

}  // namespace

void rollout_verb(const RolloutOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  const nk::lm::CausalModel m = nk::lm::load_causal_model(o.model);
  const Tasks t = read_tasks(o.input);
  const QaSplit& s = o.split == "train" ? t.train : t.test;
  const int64_t R = o.limit > 0 ? std::min(o.limit, s.size()) : s.size();
  RolloutConfig c;
  c.method = parse_method(o.method);
  c.rule = {parse_divergence(o.switch_name), o.tau};
  c.temperature = o.temperature;
  c.max_new = o.max_new;
  c.chunk = o.chunk;
  c.skd_topk = o.skd_topk;
  c.seed = env.seed;
  if (c.skd_topk > m.config().vocab)
    throw nk::input_error(o.model, "/",
                          "--skd-topk " + std::to_string(c.skd_topk) + " is above the vocabulary (" +
                              std::to_string(m.config().vocab) + ")");
  const nk::lm::Model model(m.checkpoint.weights);
  Roller roller(model, model, m.tokenizer(), c, kLanes);
  const int64_t N = o.max_new, V = m.config().vocab;
  std::vector<int32_t> tokens(static_cast<size_t>(R * N), -1);
  std::vector<int8_t> writer(static_cast<size_t>(R * N), -1);
  std::vector<double> delta(static_cast<size_t>(R * N), std::nan(""));
  std::vector<int64_t> length(static_cast<size_t>(R));
  std::vector<float> s_lp, t_lp;
  if (o.dump_dists) {
    s_lp.assign(static_cast<size_t>(R * N * V), std::nanf(""));
    t_lp.assign(static_cast<size_t>(R * N * V), std::nanf(""));
  }
  std::vector<std::vector<int32_t>> s_prefix, t_prefix;
  int64_t teacher_forward = 0, student_forward = 0, supervised = 0, teacher_written = 0;
  nk::Progress progress("rollout", R);
  for (int64_t i = 0; i < R; ++i) {
    const size_t u = static_cast<size_t>(i);
    const int64_t prompt =
        static_cast<int64_t>(document_tokens(m.tokenizer(), t.docs[static_cast<size_t>(s.doc[u])]).size() +
                             question_tokens(m.tokenizer(), s.question[u]).size());
    check_room(t, o.split, i, prompt, m.config().max_seq, true);
  }
  std::vector<Rollout> group;
  for (int64_t i = 0; i < R; ++i) {
    const size_t u = static_cast<size_t>(i);
    if (i % kLanes == 0) {
      std::vector<RolloutRequest> requests;
      for (int64_t k = i; k < std::min(R, i + kLanes); ++k) {
        const int64_t d = s.doc[static_cast<size_t>(k)];
        requests.push_back(
            {&s.question[static_cast<size_t>(k)], d, &t.docs[static_cast<size_t>(d)], static_cast<uint64_t>(k)});
      }
      group = roller.run_batch(requests);
    }
    const Rollout& r = group[static_cast<size_t>(i % kLanes)];
    const int64_t n = r.size();
    length[u] = n;
    for (int64_t j = 0; j < n; ++j) {
      tokens[static_cast<size_t>(i * N + j)] = r.tokens[static_cast<size_t>(j)];
      writer[static_cast<size_t>(i * N + j)] = r.writer[static_cast<size_t>(j)];
      delta[static_cast<size_t>(i * N + j)] = r.delta[static_cast<size_t>(j)];
      teacher_written += r.writer[static_cast<size_t>(j)];
    }
    if (o.dump_dists) {
      std::vector<float> lp(static_cast<size_t>(n * V));
      nk::lm::log_softmax_rows(r.student_logits.data(), n, V, lp.data());
      std::copy(lp.begin(), lp.end(), s_lp.begin() + i * N * V);
      nk::lm::log_softmax_rows(r.teacher_logits.data(), n, V, lp.data());
      std::copy(lp.begin(), lp.end(), t_lp.begin() + i * N * V);
    }
    s_prefix.push_back(r.student_prefix);
    t_prefix.push_back(r.teacher_prefix);
    teacher_forward += r.teacher_forward;
    student_forward += r.student_forward;
    supervised += n;
    progress.update(i + 1);
  }
  nk::h5::Writer w(o.output, kRolloutSchema, o.no_clobber);
  w.write("/rollouts/tokens", tokens.data(), {R, N}, "R,N");
  w.write("/rollouts/length", length.data(), {R}, "R");
  w.write("/rollouts/writer", writer.data(), {R, N}, "R,N");
  w.allow_nonfinite("/rollouts/delta");
  w.write("/rollouts/delta", delta.data(), {R, N}, "R,N");
  write_csr(w, "/rollouts/student_prefix", s_prefix);
  write_csr(w, "/rollouts/teacher_prefix", t_prefix);
  if (o.dump_dists) {
    w.allow_nonfinite("/rollouts/student_logprobs");
    w.allow_nonfinite("/rollouts/teacher_logprobs");
    w.write("/rollouts/student_logprobs", s_lp.data(), {R, N, V}, "R,N,V");
    w.write("/rollouts/teacher_logprobs", t_lp.data(), {R, N, V}, "R,N,V");
  }
  w.attr("/", "model", o.model);
  w.attr("/", "method", o.method);
  w.attr("/", "tau", o.tau);
  w.attr("/", "switch", o.switch_name);
  w.attr("/", "temperature", o.temperature);
  w.attr("/", "chunk", o.chunk);
  w.attr("/", "supervised_tokens", supervised);
  w.attr("/", "teacher_tokens", teacher_written);
  w.attr("/", "teacher_forward_tokens", teacher_forward);
  w.attr("/", "student_forward_tokens", student_forward);
  w.attr("/", "bos", static_cast<int64_t>(m.tokenizer().bos()));
  w.attr("/", "eos", static_cast<int64_t>(m.tokenizer().eos()));
  w.attr("/", "document_prefill_tokens", roller.document_prefill());
  w.commit();
  spdlog::info(
      "rollout: {} rollouts ({}), {} tokens, the teacher wrote {} ({:.1f}%); forward tokens: teacher {}, student {}", R,
      o.method, supervised, teacher_written,
      supervised ? 100.0 * static_cast<double>(teacher_written) / static_cast<double>(supervised) : 0.0,
      teacher_forward, student_forward);
}

}  // namespace ssd
