// gen_exact.cpp - the gen-exact verb: a sticky Markov prior and a cost on
// all A^n strings (Hamming distance to a target string, or random costs).
#include <cmath>

#include "aldrift/aldrift.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"

namespace ald {

namespace {
std::vector<int> parse_target(const std::string& text, int A, int n) {
  std::vector<int> t;
  if (text.find(',') != std::string::npos) {
    size_t pos = 0;
    while (pos <= text.size()) {
      const size_t comma = std::min(text.find(',', pos), text.size());
      const std::string item = text.substr(pos, comma - pos);
      if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 6)
        throw nk::usage_error("--target: '" + item + "' is not a symbol number");
      t.push_back(std::stoi(item));
      pos = comma + 1;
    }
  } else {
    for (char c : text) {
      if (c < '0' || c > '9') throw nk::usage_error(std::string("--target: '") + c + "' is not a digit (use a comma list for A > 10)");
      t.push_back(c - '0');
    }
  }
  if (static_cast<int>(t.size()) != n)
    throw nk::usage_error("--target has " + std::to_string(t.size()) + " symbols, --length is " + std::to_string(n));
  for (int v : t)
    if (v >= A) throw nk::usage_error("--target symbol " + std::to_string(v) + " is outside the alphabet 0.." + std::to_string(A - 1));
  return t;
}
}  // namespace

void gen_exact(const GenExactOptions& o, const nk::RunEnv& env) {
  Problem p;
  p.A = o.alphabet;
  p.n = o.length;
  p.N = count_states(p.A, p.n);
  if (p.N < 0) throw nk::usage_error("--alphabet^--length exceeds " + std::to_string(kMaxStates) + " strings (the space is enumerated)");
  p.init.assign(p.A, 1.0 / p.A);
  p.trans.assign(static_cast<size_t>(p.A) * p.A, (1.0 - o.stay) / (p.A - 1));
  for (int a = 0; a < p.A; ++a) p.trans[static_cast<size_t>(a) * p.A + a] = o.stay;
  p.cost.resize(p.N);
  std::vector<int> s(p.n);
  if (o.cost == "hamming") {
    const std::vector<int> target = parse_target(o.target, p.A, p.n);
    for (int64_t i = 0; i < p.N; ++i) {
      decode(i, p.A, p.n, s.data());
      int d = 0;
      for (int j = 0; j < p.n; ++j) d += s[j] != target[j];
      p.cost[i] = d;
    }
  } else {  // random: d uniform in [0, n), no structure a Markov family could follow
    nk::Rng rng(env.seed);
    for (auto& c : p.cost) c = rng.uniform() * p.n;
  }
  nk::h5::Writer out(o.output, kProblemSchema, o.no_clobber);
  write_problem(out, p);
  out.attr("/", "cost", o.cost);
  if (o.cost == "hamming") out.attr("/", "target", o.target);
  out.attr("/", "stay", o.stay);
  out.commit();
  spdlog::info("gen-exact: {} strings (A = {}, n = {}), {} cost, stay {} -> {}", p.N, p.A, p.n, o.cost, o.stay,
               nk::display_name(o.output, true));
}

}  // namespace ald
