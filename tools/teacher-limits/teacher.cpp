// teacher.cpp - the teacher verb.
#include <cmath>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "teacher-limits/teacher_limits.hpp"

namespace tl {

void teacher(const TeacherOptions& o, const nk::RunEnv& env) {
  const Act act = parse_activation(o.activation);
  const int64_t k = o.k > 0 ? o.k : std::max<int64_t>(1, std::llround(o.kappa * static_cast<double>(o.d)));
  if (!(o.beta > 0.5)) throw nk::usage_error("--beta must exceed 1/2 (the readout variance sum_i i^-2beta diverges with k)");
  const Teacher t = make_teacher(o.d, k, o.beta, act, o.noise, env.seed);
  nk::h5::Writer out(o.output, kTeacherSchema, o.no_clobber);
  write_teacher(out, t);
  out.commit();
  spdlog::info("teacher: d = {}, k = {}, {} activation, beta = {}, Delta = {} -> {}", o.d, k, o.activation, o.beta, o.noise,
               nk::display_name(o.output, true));
}

void data(const DataOptions& o, const nk::RunEnv& env) {
  const nk::h5::File in = nk::h5::File::open(o.input);
  const Teacher t = read_teacher(in);
  const Data d = make_data(t, o.n, o.test, env.seed);
  nk::h5::Writer out(o.output, kDataSchema, o.no_clobber);
  write_data(out, d);
  out.commit();
  spdlog::info("data: n = {} train, {} test rows of d = {} -> {}", o.n, o.test, t.d(), nk::display_name(o.output, true));
}

}  // namespace tl
