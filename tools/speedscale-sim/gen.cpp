// gen.cpp - random and adversarial instances, and user traces from CSV.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nk/context.hpp"
#include "nk/distribution.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "speedscale-sim/speedscale.hpp"

namespace ss {

namespace {

constexpr double kPi = 3.14159265358979323846;

using nk::Spec;

double exponential(nk::Rng& rng, double rate) { return -std::log(1.0 - rng.uniform()) / rate; }

std::vector<double> arrivals(const std::string& text, int64_t n, nk::Rng& rng) {
  const Spec s = nk::parse_spec("--arrivals", text);
  std::vector<double> r(static_cast<size_t>(n));
  const double rate = s.arg(0, 1.0);
  if (!(rate > 0)) throw nk::usage_error("--arrivals '" + text + "': the rate must be > 0");
  if (s.name == "poisson") {
    double t = 0;
    for (double& x : r) x = (t += exponential(rng, rate));
  } else if (s.name == "uniform") {
    // uniform:RATE: n releases uniform on [0, n / RATE]
    for (double& x : r) x = rng.uniform() * static_cast<double>(n) / rate;
    std::sort(r.begin(), r.end());
  } else if (s.name == "bursty") {
    // bursty:RATE,FACTOR,MEAN_PHASE: calm phases at RATE alternate with bursts
    // at FACTOR * RATE; phase lengths are exponential with mean MEAN_PHASE.
    const double factor = s.arg(1, 10.0), phase = s.arg(2, 10.0 / rate);
    if (!(factor >= 1) || !(phase > 0)) throw nk::usage_error("--arrivals bursty:RATE,FACTOR,PHASE needs FACTOR >= 1, PHASE > 0");
    double t = 0, phase_end = exponential(rng, 1.0 / phase);
    bool burst = false;
    for (double& x : r) {
      while (true) {
        const double gap = exponential(rng, burst ? rate * factor : rate);
        if (t + gap <= phase_end) {
          t += gap;
          break;
        }
        t = phase_end;  // memoryless: restart the clock in the next phase
        burst = !burst;
        phase_end = t + exponential(rng, 1.0 / phase);
      }
      x = t;
    }
  } else if (s.name == "diurnal") {
    // diurnal:RATE,PERIOD: rate RATE (1 + 0.9 sin(2 pi t / PERIOD)), by thinning.
    const double period = s.arg(1, 24.0);
    if (!(period > 0)) throw nk::usage_error("--arrivals diurnal:RATE,PERIOD needs PERIOD > 0");
    double t = 0;
    for (double& x : r) {
      do t += exponential(rng, 1.9 * rate);
      while (rng.uniform() * 1.9 > 1.0 + 0.9 * std::sin(2 * kPi * t / period));
      x = t;
    }
  } else {
    throw nk::usage_error("--arrivals '" + text + "': expected poisson:RATE, uniform:RATE, bursty:RATE,FACTOR,PHASE or diurnal:RATE,PERIOD");
  }
  return r;
}

Instance adversarial(const std::string& family, int64_t n, double alpha) {
  Instance inst;
  const double dn = static_cast<double>(n);
  if (family == "oa") {
    // Work arrives at rate (1 - t)^-gamma until deadline 1 (all jobs share it),
    // faster and faster before the deadline; OA spreads what it knows evenly up
    // to the deadline and is caught out by what follows (measured OA/OPT: 4.8
    // at n = 10, 15.4 at n = 10000, alpha = 3).
    const double gamma = (1.0 - 1.0 / std::log(dn + 2.0)) / alpha;
    const double span = std::log(dn + 1.0);
    for (int64_t i = 0; i < n; ++i) {
      const double t0 = 1 - std::exp(-span * static_cast<double>(i) / dn);
      const double t1 = i + 1 < n ? 1 - std::exp(-span * static_cast<double>(i + 1) / dn) : 1.0;
      inst.release.push_back(t0);
      inst.deadline.push_back(1.0);
      inst.work.push_back((std::pow(1 - t0, 1 - gamma) - std::pow(1 - t1, 1 - gamma)) / (1 - gamma));
    }
  } else if (family == "avr") {
    // Released together, deadlines i/n, work 1/n: OPT runs at speed 1, AVR at
    // about ln(1/t), so AVR / OPT -> Gamma(alpha + 1) (6 at alpha = 3).
    for (int64_t i = 1; i <= n; ++i) {
      inst.release.push_back(0);
      inst.deadline.push_back(static_cast<double>(i) / dn);
      inst.work.push_back(1.0 / dn);
    }
  } else {
    throw nk::usage_error("--adversarial must be oa or avr");
  }
  return inst;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) {
    cell.erase(0, cell.find_first_not_of(" \t\r"));
    cell.erase(cell.find_last_not_of(" \t\r") + 1);
    cells.push_back(cell);
  }
  return cells;
}

Instance from_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw nk::io_error(path, "cannot be read");
  std::string line;
  if (!std::getline(in, line)) throw nk::input_error(path, "", "empty CSV: expected a header release,deadline,work");
  const std::vector<std::string> header = split_csv_line(line);
  auto column = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const int cr = column("release"), cd = column("deadline"), cw = column("work"), cid = column("id");
  if (cr < 0 || cd < 0 || cw < 0) throw nk::input_error(path, "", "header must name the columns release, deadline and work");
  Instance inst;
  inst.name = "000000";
  int64_t row = 1;
  double last_id = -INFINITY;
  while (std::getline(in, line)) {
    ++row;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> cells = split_csv_line(line);
    auto number = [&](int c, const char* what) {
      if (c >= static_cast<int>(cells.size())) throw nk::input_error(path, "", "row " + std::to_string(row) + ": no " + what + " column");
      try {
        size_t used = 0;
        const double v = std::stod(cells[static_cast<size_t>(c)], &used);
        if (used != cells[static_cast<size_t>(c)].size()) throw std::invalid_argument("");
        return v;
      } catch (const std::exception&) {
        throw nk::input_error(path, "", "row " + std::to_string(row) + ": " + what + " '" + cells[static_cast<size_t>(c)] + "' is not a number");
      }
    };
    if (cid >= 0) {
      const double id = number(cid, "id");
      if (!(id > last_id)) {
        throw nk::input_error(path, "", "row " + std::to_string(row) + ": id " + cells[static_cast<size_t>(cid)] +
                                            (id == last_id ? " is a duplicate" : " is out of order (ids must increase)"));
      }
      last_id = id;
    }
    inst.release.push_back(number(cr, "release"));
    inst.deadline.push_back(number(cd, "deadline"));
    inst.work.push_back(number(cw, "work"));
  }
  return inst;
}

}  // namespace

std::string instance_name(int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(i));
  return buf;
}

void gen(const GenOptions& o, const nk::RunEnv& env) {
  std::vector<Instance> all;
  if (!o.from_csv.empty()) {
    all.push_back(from_csv(o.from_csv));
    validate(o.from_csv, all.back());
  } else {
    if (o.jobs < 1 || o.instances < 1) throw nk::usage_error("--jobs and --instances must be >= 1");
    if (3.0 * 8 * static_cast<double>(o.jobs) * static_cast<double>(o.instances) * 2 > nk::h5::available_memory_bytes()) {
      throw nk::usage_error("--jobs x --instances needs more memory than is available");
    }
    const nk::Rng root(env.seed);
    const nk::Distribution work("--work", o.work), slack("--slack", o.slack);
    for (int64_t k = 0; k < o.instances; ++k) {
      Instance inst;
      if (!o.adversarial.empty()) {
        inst = adversarial(o.adversarial, o.jobs, o.alpha);
      } else {
        nk::Rng rng = root.split(static_cast<uint64_t>(k));
        inst.release = arrivals(o.arrivals, o.jobs, rng);
        for (int64_t j = 0; j < o.jobs; ++j) {
          const double w = work(rng);
          inst.work.push_back(w);
          inst.deadline.push_back(inst.release[j] + w * slack(rng));
        }
      }
      inst.name = instance_name(k);
      validate(o.output, inst);
      all.push_back(std::move(inst));
    }
  }
  nk::h5::Writer out(o.output, kInstancesSchema, o.no_clobber);
  for (const Instance& inst : all) {
    const std::string g = "/instances/" + inst.name + "/";
    out.write(g + "release", inst.release.data(), {inst.size()}, "n");
    out.write(g + "deadline", inst.deadline.data(), {inst.size()}, "n");
    out.write(g + "work", inst.work.data(), {inst.size()}, "n");
    for (const char* f : {"release", "deadline", "work"}) out.attr(g + f, "nk_merge", "item");
  }
  if (!o.from_csv.empty()) {
    out.attr("/", "source", o.from_csv);
  } else if (!o.adversarial.empty()) {
    out.attr("/", "adversarial", o.adversarial);
  } else {
    out.attr("/", "arrivals", o.arrivals);
    out.attr("/", "work", o.work);
    out.attr("/", "slack", o.slack);
  }
  out.commit();
  spdlog::info("wrote {} instance(s), {} job(s) each", all.size(), all.empty() ? 0 : all.front().size());
}

}  // namespace ss
