// test_plot.cpp - axis ticks at nice numbers (1-2-5 steps, decades on log
// axes), labels without float noise, and valid SVG from awkward data.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nk/plot.hpp"

namespace {

using nk::plot::nice_ticks;
using nk::plot::Ticks;
using nk::plot::tick_labels;
using Strings = std::vector<std::string>;

// 1, 2 or 5 x 10^k.
bool is_nice(double v) {
  const double mantissa = v / std::pow(10.0, std::floor(std::log10(v) + 1e-9));
  for (double m : {1.0, 2.0, 5.0})
    if (std::abs(mantissa - m) < 1e-9) return true;
  return false;
}

// v = n x step for an integer n, to double precision.
bool is_multiple(double v, double step) {
  const double n = v / step;
  return std::abs(n - std::round(n)) <= 1e-9 * std::max(1.0, std::abs(n));
}

int decimals(const std::string& label) {
  const size_t dot = label.find('.');
  return dot == std::string::npos ? 0 : static_cast<int>(label.size() - dot - 1);
}

int exponent(double v) { return static_cast<int>(std::floor(std::log10(std::abs(v)) + 1e-9)); }

// Labels that say the tick values, with no digit more than the ticks need
// (no 0.30000000000000004), and one format on an evenly spaced axis.
void check_labels(const Ticks& t) {
  const Strings labels = tick_labels(t);
  REQUIRE(labels.size() == t.values.size());
  double biggest = 0;
  for (double v : t.values) biggest = std::max(biggest, std::abs(v));
  int fixed = 0, scientific = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i];
    INFO("label ", label, " of ", t.values[i], " (step ", t.step, ")");
    const double back = std::stod(label);
    CHECK(std::abs(back - t.values[i]) <= 1e-9 * std::max(std::abs(t.values[i]), t.step));
    if (label[0] == '-') CHECK(label.find_first_not_of("0.", 1) != std::string::npos);  // no "-0", "-0.00"
    if (i > 0) CHECK(label != labels[i - 1]);
    const size_t e = label.find('e');
    const int d = decimals(label.substr(0, e));
    if (label == "0") continue;
    if (e == std::string::npos) ++fixed;
    else ++scientific;
    if (t.step > 0) {
      if (e == std::string::npos) CHECK(d == std::max(0, -exponent(t.step)));
      else CHECK(d == std::max(0, exponent(biggest) - exponent(t.step)));
    } else {
      CHECK(d == (e == std::string::npos ? std::max(0, -exponent(t.values[i])) : 0));
    }
  }
  CHECK((fixed == 0 || scientific == 0));
}

void check_linear(double lo, double hi) {
  INFO("linear range [", lo, ", ", hi, "]");
  const Ticks t = nice_ticks(lo, hi, false);
  REQUIRE(t.step > 0);
  CHECK(is_nice(t.step));
  CHECK(t.values.size() >= 4);
  CHECK(t.values.size() <= 8);
  CHECK(t.lo <= std::min(lo, hi));
  CHECK(t.hi >= std::max(lo, hi));
  CHECK(t.lo == t.values.front());
  CHECK(t.hi == t.values.back());
  for (double v : t.values) CHECK(is_multiple(v, t.step));
  for (size_t i = 1; i < t.values.size(); ++i) CHECK(t.values[i] - t.values[i - 1] == doctest::Approx(t.step));
  if (std::abs(hi - lo) > 1e-9 * std::max(std::abs(lo), std::abs(hi))) {
    // The ticks just outside the data: one step less on either side would not enclose them.
    CHECK(t.values[1] > std::min(lo, hi));
    CHECK(t.values[t.values.size() - 2] < std::max(lo, hi));
  }
  check_labels(t);
}

// enclose: false for data beyond [1e-300, 1e300], which nice_ticks clamps.
void check_log(double lo, double hi, bool enclose = true) {
  INFO("log range [", lo, ", ", hi, "]");
  const Ticks t = nice_ticks(lo, hi, true);
  CHECK(t.values.size() >= 2);
  CHECK(t.values.size() <= 8);
  if (enclose) {
    CHECK(t.lo <= lo * (1 + 1e-12));
    CHECK(t.hi >= hi * (1 - 1e-12));
  }
  CHECK(std::isfinite(t.hi));
  CHECK(t.values.front() > 0);
  for (size_t i = 1; i < t.values.size(); ++i) CHECK(t.values[i] > t.values[i - 1]);
  if (t.step == 0)
    for (double v : t.values) CHECK(is_nice(v));
  else
    for (double v : t.values) CHECK(is_multiple(v, t.step));
  check_labels(t);
}

// The text of every <text> element.
Strings texts(const std::string& svg) {
  Strings out;
  for (size_t at = svg.find("<text"); at != std::string::npos; at = svg.find("<text", at + 1)) {
    const size_t open = svg.find('>', at) + 1;
    out.push_back(svg.substr(open, svg.find("</text>", open) - open));
  }
  return out;
}

bool has_text(const std::string& svg, const std::string& text) {
  for (const std::string& t : texts(svg))
    if (t == text) return true;
  return false;
}

void check_valid_svg(const std::string& svg) {
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.size() >= 7);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  size_t opened = 0, closed = 0;
  for (char c : svg) opened += c == '<', closed += c == '>';
  CHECK(opened == closed);
}

}  // namespace

TEST_SUITE("plot") {
  TEST_CASE("linear ticks: steps of 1, 2 or 5 x 10^k enclosing the data") {
    Ticks t = nice_ticks(0.9873, 2.962, false);
    CHECK(t.step == 0.5);
    CHECK(t.values == std::vector<double>{0.5, 1.0, 1.5, 2.0, 2.5, 3.0});
    CHECK(tick_labels(t) == Strings{"0.5", "1.0", "1.5", "2.0", "2.5", "3.0"});
    t = nice_ticks(65.99, 366.5, false);
    CHECK(t.step == 50);
    CHECK(tick_labels(t) == Strings{"50", "100", "150", "200", "250", "300", "350", "400"});
    t = nice_ticks(0, 366.5, false);
    CHECK(tick_labels(t) == Strings{"0", "100", "200", "300", "400"});
    // The decimal values themselves, not i * 0.1 (0.30000000000000004).
    t = nice_ticks(0.1, 0.7, false);
    CHECK(t.values == std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7});
    CHECK(tick_labels(t) == Strings{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"});
    t = nice_ticks(0, 0.3, false);
    CHECK(tick_labels(t) == Strings{"0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"});
    t = nice_ticks(-3.7, -0.2, false);
    CHECK(tick_labels(t) == Strings{"-4", "-3", "-2", "-1", "0"});
    t = nice_ticks(-12, 31, false);
    CHECK(tick_labels(t) == Strings{"-20", "-10", "0", "10", "20", "30", "40"});
    t = nice_ticks(1e-6, 3.3e-6, false);
    CHECK(tick_labels(t) == Strings{"1.0e-06", "1.5e-06", "2.0e-06", "2.5e-06", "3.0e-06", "3.5e-06"});
    t = nice_ticks(0, 1e9, false);
    CHECK(tick_labels(t) == Strings{"0", "2.0e+08", "4.0e+08", "6.0e+08", "8.0e+08", "1.0e+09"});
    t = nice_ticks(1234567, 1234568, false);
    CHECK(tick_labels(t) == Strings{"1234567.0", "1234567.2", "1234567.4", "1234567.6", "1234567.8", "1234568.0"});
    t = nice_ticks(1, 1 + 1e-6, false);
    CHECK(tick_labels(t).front() == "1.0000000");
    CHECK(tick_labels(t)[1] == "1.0000002");

    for (auto [lo, hi] : std::vector<std::pair<double, double>>{
             {0.9873, 2.962}, {65.99, 366.5}, {0, 1}, {0, 100}, {-3.7, -0.2}, {-12, 31}, {-1e-3, 1e-3}, {1e-6, 3.3e-6},
             {1e-12, 1.1e-12}, {0, 1e9}, {-5e15, 7e17}, {1234567, 1234568}, {1, 1 + 1e-6}, {0.25, 0.2500001},
             {-1e300, 1e300}, {3.3, 0.9873}}) {
      check_linear(lo, hi);
    }
    // Many random ranges, of every size and place.
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> unit(-1, 1), exponent(-15, 15);
    for (int i = 0; i < 2000; ++i) {
      const double scale = std::pow(10.0, exponent(rng)), centre = unit(rng) * scale * std::pow(10.0, 3 * unit(rng));
      check_linear(centre, centre + scale * (0.01 + std::abs(unit(rng))));
    }
  }

  TEST_CASE("log ticks: decades, with 2 and 5 between them over short ranges") {
    Ticks t = nice_ticks(0.0123, 4567, true);
    CHECK(t.step == 0);
    CHECK(tick_labels(t) == Strings{"0.01", "0.1", "1", "10", "100", "1000", "10000"});
    t = nice_ticks(65.99, 366.5, true);
    CHECK(t.values == std::vector<double>{50, 100, 200, 500});
    CHECK(tick_labels(t) == Strings{"50", "100", "200", "500"});
    t = nice_ticks(1, 100, true);
    CHECK(tick_labels(t) == Strings{"1", "2", "5", "10", "20", "50", "100"});
    t = nice_ticks(1, 1000, true);
    CHECK(tick_labels(t) == Strings{"1", "10", "100", "1000"});
    t = nice_ticks(0.0015, 0.04, true);
    CHECK(tick_labels(t) == Strings{"0.001", "0.002", "0.005", "0.01", "0.02", "0.05"});
    t = nice_ticks(28, 131054, true);  // the tnqe-encode sweep's depths
    CHECK(tick_labels(t) == Strings{"10", "100", "1000", "10000", "100000", "1000000"});
    t = nice_ticks(2e-7, 3e-5, true);
    CHECK(tick_labels(t) == Strings{"1e-07", "1e-06", "1e-05", "1e-04"});
    // Over many decades, every 2nd, 5th or 10th.
    t = nice_ticks(1e-6, 1e2, true);
    CHECK(tick_labels(t) == Strings{"1e-06", "1e-04", "1e-02", "1e+00", "1e+02"});
    t = nice_ticks(1e-30, 1e30, true);
    CHECK(tick_labels(t) == Strings{"1e-30", "1e-20", "1e-10", "1e+00", "1e+10", "1e+20", "1e+30"});
    // Within a factor of ~3, evenly spaced ticks.
    t = nice_ticks(2.1, 4.9, true);
    CHECK(t.step == 0.5);
    CHECK(tick_labels(t) == Strings{"2.0", "2.5", "3.0", "3.5", "4.0", "4.5", "5.0"});

    for (auto [lo, hi] : std::vector<std::pair<double, double>>{
             {0.0123, 4567}, {65.99, 366.5}, {1, 100}, {1, 1000}, {28, 131054}, {1e-30, 1e30}, {2.1, 4.9}, {3, 9},
             {1.5, 1.6}, {1e-300, 1e300}, {1e-5, 2e-5}, {999, 1001}, {0.9, 1.1e6}}) {
      check_log(lo, hi);
    }
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> exponent(-40, 40), decades(0.01, 30);
    for (int i = 0; i < 2000; ++i) {
      const double lo = std::pow(10.0, exponent(rng));
      check_log(lo, lo * std::pow(10.0, decades(rng)));
    }
  }

  TEST_CASE("degenerate ranges still give ticks") {
    Ticks t = nice_ticks(3, 3, false);
    CHECK(t.lo < 3);
    CHECK(t.hi > 3);
    check_linear(3, 3);
    check_linear(0, 0);
    check_linear(-7e-9, -7e-9);
    check_linear(1e300, 1e300);
    check_linear(1, std::nextafter(1.0, 2.0));
    t = nice_ticks(0, 0, false);
    CHECK(tick_labels(t) == Strings{"-1.0", "-0.5", "0.0", "0.5", "1.0"});
    CHECK(nice_ticks(5, 2, false).values == nice_ticks(2, 5, false).values);
    for (double bad : {NAN, INFINITY, -INFINITY}) {
      t = nice_ticks(bad, 5, false);
      CHECK(t.lo == 0);
      CHECK(t.hi == 1);
      CHECK(tick_labels(t) == Strings{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"});
    }
    CHECK(tick_labels(nice_ticks(-1, 5, true)) == Strings{"1", "2", "5", "10"});
    CHECK(tick_labels(nice_ticks(0, 0, true)) == Strings{"1", "2", "5", "10"});
    CHECK(tick_labels(nice_ticks(3, 3, true)) == Strings{"1", "2", "5", "10"});
    check_log(3, 3);
    check_log(1e-200, 1e-200);
    check_log(DBL_MAX, DBL_MAX, false);
    check_log(std::numeric_limits<double>::denorm_min(), 1, false);
  }

  TEST_CASE("labels carry the step's decimals and no float noise") {
    Ticks t;
    t.step = 0.1;
    t.values = {0.1 + 0.2, 0.30000000000000004 + 0.1};
    CHECK(tick_labels(t) == Strings{"0.3", "0.4"});
    t.step = 0.05;
    t.values = {-0.05, -0.0, 0.05, 0.25};
    CHECK(tick_labels(t) == Strings{"-0.05", "0.00", "0.05", "0.25"});
    t.step = 1;
    t.values = {-1e-17, 1, 2};
    CHECK(tick_labels(t) == Strings{"0", "1", "2"});
    t.step = 0;  // log marks
    t.values = {0.0001, 0.0002, 0.0005, 0.001};
    CHECK(tick_labels(t) == Strings{"0.0001", "0.0002", "0.0005", "0.001"});
    t.values = {5e-5, 1e-4};
    CHECK(tick_labels(t) == Strings{"5e-05", "1e-04"});
    t.values = {1e5, 2e5, 5e5, 1e6};
    CHECK(tick_labels(t) == Strings{"100000", "200000", "500000", "1000000"});
    t.values = {1e6, 2e6};
    CHECK(tick_labels(t) == Strings{"1e+06", "2e+06"});
    CHECK(tick_labels(Ticks{}).empty());
  }

  TEST_CASE("the SVG shows the nice ticks") {
    const nk::plot::Series s{"energy", {0.9873, 1.975, 2.962}, {65.99, 155.5, 366.5}};
    std::string svg = nk::plot::line_plot_svg({"t", "x", "y"}, {s});
    check_valid_svg(svg);
    // x from 0.5 to 3.0 in halves; y from 0 (the data lie near enough to it) to 400 in hundreds.
    for (const char* label : {"0.5", "1.0", "1.5", "2.0", "2.5", "3.0", "0", "100", "200", "300", "400"}) {
      INFO(label);
      CHECK(has_text(svg, label));
    }
    for (const char* label : {"0.9873", "1.975", "2.962", "65.99", "155.5", "366.5", "1", "2", "3"}) {
      INFO(label);
      CHECK_FALSE(has_text(svg, label));
    }
    CHECK(texts(svg).size() == 6 + 5 + 1 + 1 + 1 + 1);  // ticks, title, axis labels, legend
    // The first x tick sits on the frame's left edge, the last on its right (x = 70 + 480).
    CHECK(svg.find("<text x=\"70\" y=\"403\" text-anchor=\"middle\">0.5</text>") != std::string::npos);
    CHECK(svg.find("<text x=\"550\" y=\"403\" text-anchor=\"middle\">3.0</text>") != std::string::npos);

    nk::plot::Axes log_axes{"t", "x", "y", false, true};
    svg = nk::plot::line_plot_svg(log_axes, {s});
    check_valid_svg(svg);
    for (const char* label : {"50", "100", "200", "500"}) {
      INFO(label);
      CHECK(has_text(svg, label));
    }
    nk::plot::Series depths{"sequential", {178, 929, 3643, 14833}, {16.41, 19.17, 21.69, 25.52}, false, true};
    svg = nk::plot::line_plot_svg({"t", "x", "y", true, false}, {depths});
    check_valid_svg(svg);
    for (const char* label : {"100", "1000", "10000", "100000", "16", "18", "20", "22", "24", "26"}) {
      INFO(label);
      CHECK(has_text(svg, label));
    }
  }

  TEST_CASE("awkward series give a valid SVG") {
    using nk::plot::Series;
    const double inf = std::numeric_limits<double>::infinity();
    Series flat{"flat", {1, 2, 3}, {5, 5, 5}};
    Series one{"one", {4}, {2}, false, true};
    Series holes{"holes", {1, 2, 3, 4, 5}, {NAN, inf, 1, NAN, 2}};
    Series all_nan{"none", {NAN, 1}, {2, NAN}};
    Series ragged{"ragged", {1, 2, 3, 4}, {1, 2}};
    Series short_x{"short x", {1}, {1, 2, 3}};
    Series steps{"steps", {0, 1, 2}, {3, 4}, true};
    Series negative{"negative", {-1, 0, 1}, {-5, 0, -inf}};
    Series huge{"huge", {-DBL_MAX, DBL_MAX}, {DBL_MAX, -DBL_MAX}};
    Series empty{"empty", {}, {}};
    const std::vector<std::vector<Series>> cases{{flat}, {one},  {holes}, {all_nan}, {ragged}, {short_x}, {steps},
                                                 {negative}, {huge}, {empty}, {}, {flat, one, holes, steps}};
    for (bool log_x : {false, true})
      for (bool log_y : {false, true})
        for (const auto& series : cases) {
          INFO("log_x ", log_x, " log_y ", log_y, " first series ", series.empty() ? "-" : series[0].name);
          const std::string svg = nk::plot::line_plot_svg({"t", "x", "y", log_x, log_y}, series);
          check_valid_svg(svg);
          CHECK(texts(svg).size() >= 4 + 4 + 3);  // at least 4 ticks per axis
        }
    // A gap breaks the line: the holes series draws two pieces, the point 3,1 and the point 5,2.
    const std::string svg = nk::plot::line_plot_svg({"t", "x", "y"}, {holes});
    size_t lines = 0;
    for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
    CHECK(lines == 2);
  }
}
