// divergence.cpp - the switch rule and the distillation loss at each
// position, on bare logits (the trainer's code, exposed for checking).
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "ssd-distill/ssd.hpp"

namespace ssd {

nk::lm::Divergence parse_divergence(const std::string& name) {
  if (name == "fkl") return nk::lm::Divergence::forward_kl;
  if (name == "rkl") return nk::lm::Divergence::reverse_kl;
  if (name == "jsd") return nk::lm::Divergence::jsd;
  throw nk::usage_error("a divergence is fkl, rkl or jsd, not '" + name + "'");
}

void positions(const SwitchRule& rule, nk::lm::Divergence loss, const float* student, const float* teacher, int64_t N,
               int64_t V, double* delta, int8_t* writer, double* loss_out, float* grad) {
  for (int64_t r = 0; r < N; ++r) {
    delta[r] = rule.delta(student + r * V, teacher + r * V, V);
    writer[r] = delta[r] > rule.tau ? 1 : 0;
  }
  std::vector<int64_t> rows(static_cast<size_t>(N));
  std::iota(rows.begin(), rows.end(), int64_t{0});
  nk::lm::Target target;
  target.kind = nk::lm::Target::Kind::full;
  target.logits = teacher;
  target.stride = V;
  std::vector<float> per_row(static_cast<size_t>(N));
  nk::lm::loss_and_grad(loss, student, N, V, target, {rows, {}}, per_row.data(), grad);
  for (int64_t r = 0; r < N; ++r) loss_out[r] = per_row[static_cast<size_t>(r)];
}

void divergence_verb(const DivergenceOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  const SwitchRule rule{parse_divergence(o.switch_name), o.tau};
  const nk::lm::Divergence loss = parse_divergence(o.loss);
  const nk::h5::File f = nk::h5::File::open(o.input);
  const nk::h5::Array<float> s = f.read<float>("/student_logits", 2, "N,V");
  const nk::h5::Array<float> t = f.read<float>("/teacher_logits", 2, "N,V");
  if (s.shape != t.shape)
    throw nk::input_error(o.input, "/teacher_logits",
                          "is [" + std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) +
                              "], /student_logits [" + std::to_string(s.shape[0]) + ", " + std::to_string(s.shape[1]) +
                              "]");
  const int64_t N = s.shape[0], V = s.shape[1];
  if (V < 2)
    throw nk::input_error(o.input, "/student_logits", "has " + std::to_string(V) + " logits per row (at least 2)");
  nk::h5::require_finite(o.input, "/student_logits", s);
  nk::h5::require_finite(o.input, "/teacher_logits", t);
  std::vector<double> delta(static_cast<size_t>(N)), loss_values(static_cast<size_t>(N));
  std::vector<int8_t> writer(static_cast<size_t>(N));
  std::vector<float> grad(static_cast<size_t>(N * V));
  positions(rule, loss, s.data.data(), t.data.data(), N, V, delta.data(), writer.data(), loss_values.data(),
            grad.data());
  nk::h5::Writer w(o.output, kDivergenceSchema, o.no_clobber);
  w.write("/delta", delta.data(), {N}, "N");
  w.write("/writer", writer.data(), {N}, "N");
  w.write("/loss", loss_values.data(), {N}, "N");
  w.write("/grad", grad.data(), {N, V}, "N,V");
  w.attr("/", "switch", o.switch_name);
  w.attr("/", "loss", o.loss);
  w.attr("/", "tau", o.tau);
  const int64_t teacher = std::accumulate(writer.begin(), writer.end(), int64_t{0});
  w.attr("/", "teacher_positions", teacher);
  w.commit();
  spdlog::info("divergence: {} positions, the teacher writes {} (tau {})", N, teacher, o.tau);
  (void)env;
}

}  // namespace ssd
