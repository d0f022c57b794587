// test_helpers.cpp - the small helpers every tool shares (neurkit(7) SHARED
// HELPERS): timing, shuffles, tables, sizes, distributions, the cosine rate,
// Adam over caller-kept float moments, GPU timing attributes, float64 attention,
// the shipped data folder.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nk/distribution.hpp"
#include "nk/error.hpp"
#include "nk/shipped.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/image.hpp"
#include "nk/kernels/attention.hpp"
#include "nk/kernels/cuda_call.hpp"
#include "nk/nn/optim.hpp"
#include "nk/rng.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "test_support.hpp"

namespace {

/// What a Table writes, read back through a temporary file.
template <class F>
std::string captured(F&& write) {
  FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  write(f);
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace

TEST_SUITE("helpers") {
  TEST_CASE("Stopwatch and best_seconds: the fastest run, at least one run") {
    nk::Stopwatch watch;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double lap = watch.lap();
    CHECK(lap >= 0.019);
    CHECK(watch.seconds() < lap);
    int runs = 0;
    const double best = nk::best_seconds(4, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(runs == 2 ? 5 : 30));
      ++runs;
    });
    CHECK(runs == 4);
    CHECK(best >= 0.004);
    CHECK(best < 0.025);  // the 5 ms run, not a 30 ms one
    runs = 0;
    nk::best_seconds(0, [&] { ++runs; });
    CHECK(runs == 1);
  }

  TEST_CASE("shuffle: a permutation, the documented draws, uniform over small n") {
    std::vector<int> v(50);
    std::iota(v.begin(), v.end(), 0);
    nk::Rng rng(3);
    nk::shuffle(v, rng);
    std::vector<int> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 50; ++i) CHECK(sorted[i] == i);
    // Textbook Fisher-Yates with the same stream gives the same order.
    std::vector<int> w(50);
    std::iota(w.begin(), w.end(), 0);
    nk::Rng again(3);
    for (int64_t i = 49; i > 0; --i) std::swap(w[i], w[again.below(static_cast<uint64_t>(i + 1))]);
    CHECK(v == w);
    // All 6 orders of 3 items, each about 1/6 of the time.
    std::map<std::vector<int>, int> counts;
    nk::Rng r(11);
    for (int t = 0; t < 60000; ++t) {
      std::vector<int> x = {0, 1, 2};
      nk::shuffle(x, r);
      ++counts[x];
    }
    CHECK(counts.size() == 6);
    for (const auto& [order, n] : counts) CHECK(std::abs(n - 10000) < 500);
    std::vector<int> empty;
    nk::shuffle(empty, r);
    CHECK(empty.empty());
  }

  TEST_CASE("shuffle_prefix: k distinct items, each equally likely to be drawn") {
    nk::Rng rng(5);
    std::vector<int> hits(10, 0);
    for (int t = 0; t < 20000; ++t) {
      std::vector<int> v(10);
      std::iota(v.begin(), v.end(), 0);
      nk::shuffle_prefix(v, 3, rng);
      CHECK(std::set<int>(v.begin(), v.begin() + 3).size() == 3);
      for (int i = 0; i < 3; ++i) ++hits[v[i]];
    }
    for (int h : hits) CHECK(std::abs(h - 6000) < 350);
    std::vector<int> small = {4, 5};
    nk::shuffle_prefix(small, 7, rng);  // k > n: a whole shuffle
    CHECK((small == std::vector<int>{4, 5} || small == std::vector<int>{5, 4}));
  }

  TEST_CASE("Table: TSV off a terminal, aligned columns when asked") {
    const std::vector<std::string> header = {"name", "n", "value"};
    const std::vector<std::vector<std::string>> rows = {{"alpha", "1", "0.5"}, {"b", "12345", "x\ty"}};
    CHECK(captured([&](FILE* f) { nk::Table::print(f, header, rows); }) == "name\tn\tvalue\nalpha\t1\t0.5\nb\t12345\tx y\n");
    const std::string aligned =
        captured([&](FILE* f) { nk::Table::print(f, header, rows, nk::Table::Layout::aligned); });
    CHECK(aligned == "name       n  value\nalpha      1    0.5\nb      12345    x\ty\n");
    const std::string left =
        captured([&](FILE* f) { nk::Table::print(f, header, rows, nk::Table::Layout::aligned, {2}); });
    CHECK(left == "name       n  value\nalpha      1  0.5\nb      12345  x\ty\n");
    // Streaming: the least widths hold before the rows are known.
    const std::string streamed = captured([&](FILE* f) {
      nk::Table t(f, {"k", "v"}, {3, 6}, nk::Table::Layout::aligned);
      t.row({"a", "1"});
      t.row({"bbbb", "22"});
    });
    CHECK(streamed == "k         v\na         1\nbbbb      22\n");
    CHECK(nk::cell(0.123456, "%.3f") == "0.123");
    CHECK(nk::cell(42LL) == "42");
  }

  TEST_CASE("parse_size: WxH or a usage error naming the option") {
    CHECK(nk::parse_size("640x480", "--size") == std::pair<int, int>{640, 480});
    for (const char* bad : {"640", "0x5", "5x0", "64x", "x64", "64x64x", "65537x2", "-4x4", "4X4"}) {
      CAPTURE(bad);
      try {
        nk::parse_size(bad, "--resize");
        FAIL("accepted");
      } catch (const nk::Error& e) {
        CHECK(e.code() == nk::Exit::usage);
        CHECK(std::string(e.what()).find("--resize: expected WxH") != std::string::npos);
      }
    }
  }

  TEST_CASE("Distribution: one spelling, lognormal takes the median") {
    nk::Rng rng(9);
    const nk::Distribution ln("--work", "lognormal:3,0.5");
    std::vector<double> x(40001);
    for (double& v : x) v = ln(rng);
    std::nth_element(x.begin(), x.begin() + 20000, x.end());
    CHECK(x[20000] == doctest::Approx(3.0).epsilon(0.02));
    double sum_log = 0, sum_sq = 0;
    for (double v : x) sum_log += std::log(v), sum_sq += std::log(v) * std::log(v);
    const double mean = sum_log / x.size(), sd = std::sqrt(sum_sq / x.size() - mean * mean);
    CHECK(mean == doctest::Approx(std::log(3.0)).epsilon(0.01));
    CHECK(sd == doctest::Approx(0.5).epsilon(0.02));
    CHECK(nk::Distribution("--x", "fixed:2.5")(rng) == 2.5);
    const nk::Distribution u("--x", "uniform:1,2");
    const nk::Distribution p("--x", "pareto:1,3");
    for (int i = 0; i < 1000; ++i) {
      const double a = u(rng), b = p(rng);
      CHECK((a >= 1 && a < 2));
      CHECK(b >= 1);
    }
    for (const char* bad : {"lognormal:0,1", "lognormal:1", "lognormal:1,-1", "lognormal:x,1", "uniform:2,1", "fixed:0",
                            "pareto:1,0", "gamma:1,1", "lognormal:nan,1", "lognormal:1,inf"}) {
      CAPTURE(bad);
      CHECK(nk::test::exit_code([&] { nk::Distribution("--work", bad); }) == 2);
    }
    try {
      nk::Distribution("--doc-lengths", "uniform:1,2", {"lognormal", "fixed"});
      FAIL("accepted a kind the verb does not take");
    } catch (const nk::Error& e) {
      const std::string what = e.what();
      CHECK(what.find("--doc-lengths: expected lognormal:MEDIAN,SIGMA") == 0);
      CHECK(what.find("uniform:A,B") == std::string::npos);
    }
    const nk::Spec s = nk::parse_spec("--arrivals", "bursty:2,5");
    CHECK(s.name == "bursty");
    CHECK(s.arg(1, 0) == 5);
    CHECK(s.arg(2, 7) == 7);
  }

  TEST_CASE("cosine_rate: from the rate down to its floor") {
    CHECK(nk::cosine_rate(0.1, 0) == doctest::Approx(0.1));
    CHECK(nk::cosine_rate(0.1, 0.5) == doctest::Approx(0.05));
    CHECK(nk::cosine_rate(0.1, 1) == doctest::Approx(0.0));
    CHECK(nk::cosine_rate(0.1, 1, 0.1) == doctest::Approx(0.01));
    CHECK(nk::cosine_rate(0.1, 2, 0.1) == doctest::Approx(0.01));  // clamped
    double last = 1;
    for (int i = 0; i <= 20; ++i) {
      const double r = nk::cosine_rate(1, i / 20.0, 0.1);
      CHECK(r <= last + 1e-15);
      last = r;
    }
  }

  TEST_CASE("Adam::step_entries: the update of Adam::step, in float, on caller-kept moments") {
    nk::AdamConfig cfg;
    cfg.learning_rate = 0.05;
    const int n = 16;
    nk::Adam reference(n, cfg), entries(0, cfg);
    Eigen::VectorXd p(n);
    std::vector<float> q(n), m(n, 0.f), v(n, 0.f), g(n);
    nk::Rng rng(1);
    for (int i = 0; i < n; ++i) p[i] = q[i] = static_cast<float>(rng.normal());
    for (int step = 0; step < 50; ++step) {
      Eigen::VectorXd grad(n);
      for (int i = 0; i < n; ++i) grad[i] = g[i] = static_cast<float>(2 * p[i] + rng.normal() * 0.1);
      reference.step(p, grad);
      entries.begin_step();
      entries.step_entries(n, g.data(), m.data(), v.data(), [&](int64_t e) -> float& { return q[e]; });
    }
    CHECK(entries.steps() == 50);
    for (int i = 0; i < n; ++i) CHECK(q[i] == doctest::Approx(p[i]).epsilon(1e-4).scale(1));
  }

  TEST_CASE("GpuTiming: from the module's milliseconds; the attributes every GPU verb writes") {
    nk_cuda_timing t{1.0, 2.0, 3.0, 4.0};
    nk::kernels::GpuTiming g = nk::kernels::GpuTiming::from(t);
    CHECK(g.upload == doctest::Approx(0.001));
    CHECK(g.compute == doctest::Approx(0.003));
    g += g;
    CHECK(g.download == doctest::Approx(0.008));
    const std::string path = (std::filesystem::temp_directory_path() / ("nk_timing_" + std::to_string(getpid()) + ".h5")).string();
    {
      nk::h5::Writer w(path, "test/1");
      nk::kernels::write_timing(w, g);
      w.commit();
    }
    nk::h5::File f = nk::h5::File::open(path);
    CHECK(f.attr_number("/", "upload_seconds").value_or(-1) == doctest::Approx(0.002));
    CHECK(f.attr_number("/", "download_seconds").value_or(-1) == doctest::Approx(0.008));
    CHECK_FALSE(f.attr_number("/", "prepare_seconds").has_value());  // no preparation, no attribute
    std::filesystem::remove(path);
  }

  TEST_CASE("attention_row and softmax_combine against the textbook formula") {
    nk::Rng rng(2);
    const int64_t n = 40, d = 8, dv = 5;
    std::vector<float> q(d), k(n * d), v(n * dv);
    for (float& x : q) x = static_cast<float>(rng.normal());
    for (float& x : k) x = static_cast<float>(rng.normal() * 3);
    for (float& x : v) x = static_cast<float>(rng.normal());
    const std::vector<int64_t> ids = {3, 17, 0, 39, 22};
    for (const bool subset : {false, true}) {
      const int64_t count = subset ? static_cast<int64_t>(ids.size()) : n;
      std::vector<double> logits(count), out(dv);
      const double lse = nk::kernels::attention_row(q.data(), k.data(), v.data(), d, dv, 0.7, subset ? ids.data() : nullptr,
                                                    count, logits.data(), out.data());
      double z = 0;
      std::vector<double> expect(dv, 0.0);
      for (int64_t r = 0; r < count; ++r) {
        const int64_t key = subset ? ids[r] : r;
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += double(q[c]) * k[key * d + c];
        const double w = std::exp(0.7 * dot);
        z += w;
        for (int64_t j = 0; j < dv; ++j) expect[j] += w * v[key * dv + j];
      }
      CHECK(lse == doctest::Approx(std::log(z)).epsilon(1e-12));
      for (int64_t j = 0; j < dv; ++j) CHECK(out[j] == doctest::Approx(expect[j] / z).epsilon(1e-12));
    }
    std::vector<double> out(dv, 7.0);
    CHECK(std::isinf(nk::kernels::softmax_combine(nullptr, 0, v.data(), dv, nullptr, out.data())));
    CHECK(out[0] == 0.0);
    // Huge logits do not overflow (max-subtracted).
    const double big[2] = {1000.0, 1000.0};
    const double lse = nk::kernels::softmax_combine(big, 2, v.data(), dv, nullptr, out.data());
    CHECK(lse == doctest::Approx(1000.0 + std::log(2.0)));
    CHECK(out[0] == doctest::Approx(0.5 * (v[0] + v[dv])));
  }

  TEST_CASE("shipped_data: NK_DATA first, then the source tree; a missing file is exit 4 naming the places") {
    nk::test::ScratchDir dir;
    std::filesystem::create_directories(dir.file("lm"));
    { std::FILE* f = std::fopen(dir.file("lm/causal.h5").c_str(), "w"); std::fclose(f); }
    ::setenv("NK_DATA", dir.file("").c_str(), 1);
    CHECK(std::filesystem::equivalent(nk::shipped_data("lm/causal.h5"), dir.file("lm/causal.h5")));
    ::unsetenv("NK_DATA");
    // The build's own source tree ships it.
    CHECK(std::filesystem::is_regular_file(nk::shipped_data("lm/causal.h5")));
    try {
      nk::shipped_data("no/such.file");
      FAIL("a missing shipped file must throw");
    } catch (const nk::Error& e) {
      CHECK(e.code() == nk::Exit::io);
      CHECK(std::string(e.what()).find("data/no/such.file") != std::string::npos);
      CHECK(std::string(e.what()).find("NK_DATA") != std::string::npos);
    }
  }
}
