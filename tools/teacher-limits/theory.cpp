// theory.cpp - the theory verb: both branches and the Bayes-optimal one over
// n, each feature's jump (onset) and the end of its uninformed branch
// (spinodal), the effective width k_c, the eps_kc predictor and
// width-limited students.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/table.hpp"
#include "teacher-limits/teacher_limits.hpp"

namespace tl {
namespace {

const double kNoValue = std::numeric_limits<double>::quiet_NaN();

// The n in (n_prev, n_next] where feature i's overlap on 'rule' reaches 1/2,
// with its effective noise interpolated in log n between the two solutions.
double crossing(const StateEvolution& se, int64_t i, Rule rule, double n_prev, double n_next, double noise_prev,
                double noise_next) {
  const double v2 = se.spec().v[i] * se.spec().v[i], d = static_cast<double>(se.spec().d);
  auto learned = [&](double t) {
    const double n = std::exp((1 - t) * std::log(n_prev) + t * std::log(n_next));
    const double noise = std::exp((1 - t) * std::log(noise_prev) + t * std::log(noise_next));
    const FixedPoints fp = se.fixed_points(n / d, v2 / noise);
    const double q = rule == Rule::lowest ? fp.low : rule == Rule::highest ? fp.high : fp.best;
    return q >= 0.5;
  };
  double a = 0, b = 1;
  for (int it = 0; it < 50; ++it) {
    const double m = 0.5 * (a + b);
    (learned(m) ? b : a) = m;
  }
  return std::exp((1 - b) * std::log(n_prev) + b * std::log(n_next));
}

std::vector<double> crossings(const StateEvolution& se, const std::vector<double>& n, const std::vector<Branch>& branch,
                              Rule rule) {
  const int64_t k = se.spec().k();
  const size_t m = n.size();
  std::vector<std::vector<double>> noise(m);
  for (size_t j = 0; j < m; ++j) noise[j] = se.feature_noises(branch[j]);
  std::vector<double> out(static_cast<size_t>(k), kNoValue);
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < m; ++j) {
      if (branch[j].q[i] < 0.5) continue;
      if (j > 0) out[i] = crossing(se, i, rule, n[j - 1], n[j], noise[j - 1][i], noise[j][i]);
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<double> parse_range(const std::string& text, const std::string& option) {
  std::stringstream ss(text);
  std::string a, b, c;
  if (!std::getline(ss, a, ':') || !std::getline(ss, b, ':') || !std::getline(ss, c) )
    throw nk::usage_error(option + " takes A:B:POINTS, not '" + text + "'");
  double lo = 0, hi = 0;
  long points = 0;
  try {
    size_t used = 0;
    lo = std::stod(a, &used);
    if (used != a.size()) throw std::invalid_argument(a);
    hi = std::stod(b, &used);
    if (used != b.size()) throw std::invalid_argument(b);
    points = std::stol(c, &used);
    if (used != c.size()) throw std::invalid_argument(c);
  } catch (const std::exception&) {
    throw nk::usage_error(option + " takes A:B:POINTS with numbers, not '" + text + "'");
  }
  if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi) || points < 1 || points > 100000)
    throw nk::usage_error(option + ": need 0 < A <= B and 1 <= POINTS <= 100000, not '" + text + "'");
  std::vector<double> out(static_cast<size_t>(points));
  for (long p = 0; p < points; ++p)
    out[p] = points == 1 ? lo : std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * p / (points - 1));
  out.front() = lo;  // the ends exactly as given
  if (points > 1) out.back() = hi;
  return out;
}

TheoryResult solve_theory(const TeacherSpec& spec, const std::vector<double>& n, const std::vector<int64_t>& widths,
                          bool progress) {
  const StateEvolution se(spec);
  const int64_t k = spec.k();
  const size_t m = n.size();
  const double d = static_cast<double>(spec.d);
  TheoryResult r;
  r.n = n;
  r.widths = widths;
  std::vector<Branch> bo(m), un(m);
  std::vector<Branch> student(widths.size());
  r.student_eps.assign(widths.size() * m, 0.0);
  nk::Progress bar("theory", static_cast<int64_t>(m));
  int unconverged = 0;
  for (size_t j = 0; j < m; ++j) {
    const double alpha = n[j] / d;
    bo[j] = se.solve(alpha, Rule::best, j ? &bo[j - 1] : nullptr);
    un[j] = se.solve(alpha, Rule::lowest, j ? &un[j - 1] : nullptr);
    const Branch in = se.solve(alpha, Rule::highest);
    unconverged += !bo[j].converged + !un[j].converged + !in.converged;
    r.alpha.push_back(alpha);
    r.eps_bo.push_back(bo[j].eps);
    r.eps_uninformed.push_back(un[j].eps);
    r.eps_informed.push_back(in.eps);
    r.residual.push_back(std::max({bo[j].residual, un[j].residual, in.residual}));
    r.overlap.insert(r.overlap.end(), bo[j].q.begin(), bo[j].q.end());
    r.overlap_uninformed.insert(r.overlap_uninformed.end(), un[j].q.begin(), un[j].q.end());
    r.k_c.push_back(std::count_if(bo[j].q.begin(), bo[j].q.end(), [](double q) { return q >= 0.5; }));
    for (size_t w = 0; w < widths.size(); ++w) {
      student[w] = se.solve(alpha, Rule::best, j ? &student[w] : nullptr, widths[w]);
      r.student_eps[w * m + j] = student[w].eps;
    }
    if (progress) bar.update(static_cast<int64_t>(j + 1));
  }
  if (progress) bar.finish();
  if (unconverged > 0) spdlog::warn("theory: {} solves stopped at the iteration cap (see /theory/residual)", unconverged);
  r.onset_n = crossings(se, n, bo, Rule::best);
  r.spinodal_n = crossings(se, n, un, Rule::lowest);

  // eps_kc = sum_{i > k_c} v_i^2 + C k_c d Delta / n, C by least squares in log.
  std::vector<double> tail(static_cast<size_t>(k) + 1, 0.0);
  for (int64_t i = k - 1; i >= 0; --i) tail[i] = tail[i + 1] + spec.v[i] * spec.v[i];
  auto predictor = [&](double C, size_t j) { return tail[r.k_c[j]] + C * r.k_c[j] * d * spec.noise / n[j]; };
  auto loss = [&](double logC) {
    double s = 0;
    for (size_t j = 0; j < m; ++j)
      if (r.k_c[j] >= 1 && r.eps_bo[j] > 0) {
        const double e = std::log(predictor(std::exp(logC), j)) - std::log(r.eps_bo[j]);
        s += e * e;
      }
    return s;
  };
  double a = -20, b = 20;
  for (int it = 0; it < 200; ++it) {  // golden section
    const double x1 = b - 0.618034 * (b - a), x2 = a + 0.618034 * (b - a);
    (loss(x1) < loss(x2) ? b : a) = loss(x1) < loss(x2) ? x2 : x1;
  }
  r.C = std::exp(0.5 * (a + b));
  for (size_t j = 0; j < m; ++j) r.eps_kc.push_back(predictor(r.C, j));
  return r;
}

void theory(const TheoryOptions& o, const nk::RunEnv&) {
  TeacherSpec spec;
  std::optional<double> beta;
  if (!o.input.empty()) {
    if (o.d || o.k || o.kappa || o.beta)
      throw nk::usage_error("theory: give -i FILE or --d/--k/--kappa/--beta, not both");
    const nk::h5::File in = nk::h5::File::open(o.input);
    const Teacher t = read_teacher(in, o.activation, o.noise);
    spec = t.spec();
    beta = t.beta;
  } else {
    spec.d = o.d.value_or(64);
    const int64_t k = o.k ? *o.k : std::max<int64_t>(1, std::llround(o.kappa.value_or(1.0) * static_cast<double>(spec.d)));
    beta = o.beta.value_or(1.0);
    if (!(*beta > 0.5))
      throw nk::usage_error("--beta " + std::to_string(*beta) +
                            ": beta must exceed 1/2 (the readout variance sum_i i^-2beta diverges with k)");
    spec.v = power_readouts(k, *beta);
    spec.activation = parse_activation(o.activation.value_or("he3"));
    spec.noise = o.noise.value_or(0.1);
  }
  // The readouts have unit norm, so Delta is the inverse SNR; the state
  // evolution's iterations and channel table grow without bound as Delta -> 0
  // (1e-3 takes seconds at small k, 1e-6 minutes).
  if (!(spec.noise >= 1e-3)) {
    throw nk::usage_error("theory: Delta = " + nk::cell(spec.noise, "%g") +
                          " (from " + std::string(o.noise ? "--noise" : "the teacher file") +
                          "): the equations are solved for Delta >= 1e-3 (readouts of unit norm)");
  }
  std::vector<double> n = o.n;
  if (!o.n_range.empty()) {
    if (!n.empty()) throw nk::usage_error("theory: give --n or --n-range, not both");
    n = parse_range(o.n_range, "--n-range");
  }
  if (n.empty()) throw nk::usage_error("theory: give --n LIST or --n-range A:B:POINTS");
  for (double x : n)
    if (!(x > 0) || !std::isfinite(x)) throw nk::usage_error("--n: every n must be a finite number > 0");
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  const int64_t k = spec.k();
  if (static_cast<double>(k) * static_cast<double>(n.size()) > double(1 << 28))
    throw nk::usage_error("theory: k x points = " + std::to_string(k) + " x " + std::to_string(n.size()) +
                          " overlaps is more than 2^28: use fewer n");
  const Activation act(spec.activation);
  const double d2 = static_cast<double>(spec.d) * static_cast<double>(spec.d);
  if (std::abs(act.mu2()) > 1e-12 && n.back() > d2)
    throw nk::usage_error("theory: " + activation_name(spec.activation) +
                          " has a quadratic part, which a collective d x d mode learns once n ~ d^2 (the universal "
                          "phase); these equations leave that mode out, so n must stay at or below d^2 = " +
                          std::to_string(static_cast<int64_t>(d2)));
  std::vector<int64_t> widths = o.widths;
  if (!o.widths_given) {
    for (int64_t w = 1; w < k; w *= 2) widths.push_back(w);
    widths.push_back(k);
  }
  for (int64_t w : widths)
    if (w < 1 || w > k) throw nk::usage_error("--widths: every width must be in 1.." + std::to_string(k));

  const TheoryResult r = solve_theory(spec, n, widths);
  const int64_t m = static_cast<int64_t>(n.size()), w = static_cast<int64_t>(widths.size());
  nk::h5::Writer out(o.output, kTheorySchema, o.no_clobber);
  out.write("/theory/n", r.n.data(), {m}, "m");
  out.write("/theory/alpha", r.alpha.data(), {m}, "m");
  out.write("/theory/eps_bo", r.eps_bo.data(), {m}, "m");
  out.write("/theory/eps_uninformed", r.eps_uninformed.data(), {m}, "m");
  out.write("/theory/eps_informed", r.eps_informed.data(), {m}, "m");
  out.write("/theory/eps_kc", r.eps_kc.data(), {m}, "m");
  out.write("/theory/k_c", r.k_c.data(), {m}, "m");
  out.write("/theory/overlap", r.overlap.data(), {m, k}, "m,k");
  out.write("/theory/overlap_uninformed", r.overlap_uninformed.data(), {m, k}, "m,k");
  out.allow_nonfinite("/theory/onset_n");  // NaN: no onset in the range
  out.allow_nonfinite("/theory/spinodal_n");
  out.write("/theory/onset_n", r.onset_n.data(), {k}, "k");
  out.write("/theory/spinodal_n", r.spinodal_n.data(), {k}, "k");
  out.write("/theory/widths", r.widths.data(), {w}, "w");
  out.write("/theory/student_eps", r.student_eps.data(), {w, m}, "w,m");
  out.write("/theory/residual", r.residual.data(), {m}, "m");
  out.attr("/theory", "C", r.C);
  out.attr("/theory", "linear_mode", k >= 2 && std::abs(act.mu1()) > 1e-12 ? "collective" : "none");
  out.attr("/", "activation", activation_name(spec.activation));
  out.attr("/", "noise", spec.noise);
  if (beta) out.attr("/", "beta", *beta);
  out.attr("/", "d", spec.d);
  out.attr("/", "k", k);
  out.commit();
  spdlog::info("theory: d = {}, k = {}, {} n from {} to {}: k_c {} -> {}, eps_bo {:.4g} -> {:.4g}; eps_kc fit C = {:.4g} -> {}",
               spec.d, k, m, n.front(), n.back(), r.k_c.front(), r.k_c.back(), r.eps_bo.front(), r.eps_bo.back(), r.C,
               nk::display_name(o.output, true));
}

}  // namespace tl
