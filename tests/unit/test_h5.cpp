// test_h5.cpp - typed HDF5 round trips, provenance, schema and bad-input errors.
#include <doctest/doctest.h>

#include <filesystem>

#include <fstream>

#include "nk/context.hpp"
#include "nk/h5.hpp"
#include "test_support.hpp"

using nk::Exit;
namespace h5 = nk::h5;

namespace {
Exit code_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const nk::Error& e) {
    return e.code();
  }
  return Exit::ok;
}
}  // namespace

TEST_SUITE("h5") {
  TEST_CASE("every supported type round-trips with dims, units and attributes") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("types.h5");
    nk::run_context().seed = 42;
    {
      h5::Writer out(path, "test.types/1");
      const std::vector<float> f32{1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, 7.0f};
      out.write("/f32", f32.data(), {2, 3}, "R,C", "m");
      const std::vector<double> f64{1.0 / 3.0};
      out.write("/group/deeper/f64", f64.data(), {1}, "N");
      const std::vector<int64_t> i64{-5, 0, 1LL << 40};
      out.write("/i64", i64.data(), {3}, "N");
      const std::vector<int32_t> i32{7};
      out.write("/i32", i32.data(), {1}, "N");
      const std::vector<uint8_t> u8{0, 255};
      out.write("/u8", u8.data(), {2}, "N");
      const std::vector<std::complex<double>> c128{{1, 2}, {-3, 0.5}};
      out.write("/c128", c128.data(), {2}, "F");
      const std::vector<std::complex<float>> c64{{0.25f, -1}};
      out.write("/c64", c64.data(), {1}, "F");
      out.write_strings("/names", {"alpha", "", "γ-ray"}, "N");
      Eigen::MatrixXd m(2, 2);
      m << 1, 2, 3, 4;
      out.write_matrix("/matrix", m, "R,C");
      out.attr("/", "threshold", 0.5);
      out.attr("/", "count", int64_t{12});
      out.attr("/f32", "range", std::vector<double>{0.0, 1.0});
      out.commit();
    }
    nk::run_context().seed.reset();
    const h5::File in = h5::File::open(path);
    CHECK(in.require_schema("test.types/") == "test.types/1");
    const auto f32 = in.read<float>("/f32", 2, "R,C");
    CHECK(f32.shape == std::vector<int64_t>{2, 3});
    CHECK(f32.data[2] == 3.25f);
    CHECK(f32.data[4] == 1e-30f);
    CHECK(in.read<double>("/group/deeper/f64").data[0] == doctest::Approx(1.0 / 3.0).epsilon(1e-16));
    CHECK(in.read<int64_t>("/i64").data[2] == (1LL << 40));
    CHECK(in.read<int32_t>("/i32").data[0] == 7);
    CHECK(in.read<uint8_t>("/u8").data[1] == 255);
    CHECK(in.read<std::complex<double>>("/c128").data[1] == std::complex<double>(-3, 0.5));
    CHECK(in.read<std::complex<float>>("/c64").data[0] == std::complex<float>(0.25f, -1));
    CHECK(in.read_strings("/names") == std::vector<std::string>{"alpha", "", "γ-ray"});
    const auto m = in.read_matrix<double>("/matrix");
    CHECK(m(1, 0) == 3.0);
    CHECK(m(0, 1) == 2.0);
    const h5::DatasetInfo info = in.info("/f32");
    CHECK(info.dims == "R,C");
    CHECK(info.units == "m");
    CHECK(info.dtype == h5::DType::f32);
    CHECK(in.info("/c128").dtype == h5::DType::c128);
    CHECK(in.attr_number("/", "threshold").value() == 0.5);
    CHECK(in.attr_number("/", "count").value() == 12);
    CHECK(in.attr_string("/f32", "range").value() == "0,1");
    CHECK(in.attr_string("/", "nk_seed").value() == "42");
    CHECK(in.attr_string("/", "nk_created").value().size() == 20);
    CHECK(in.datasets().size() == 9);
    CHECK(in.has("/group/deeper/f64"));
    CHECK_FALSE(in.has("/group"));
    CHECK_FALSE(in.has("/missing/child"));
  }

  TEST_CASE("a NaN or Inf in a written result is exit 1 naming file, dataset and index; nothing is published") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("bad.h5");
    const std::vector<double> values{1, 2, INFINITY, 4};
    try {
      h5::Writer out(path, "test.bad/1");
      out.write("/y", values.data(), {2, 2}, "A,B");
      out.commit();
      FAIL("a non-finite result was written");
    } catch (const nk::Error& e) {
      CHECK(e.code() == nk::Exit::runtime);
      const std::string what = e.what();
      CHECK(what.find("bad.h5") != std::string::npos);
      CHECK(what.find("/y") != std::string::npos);
      CHECK(what.find("Inf at index [1,0]") != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(path));
    const std::vector<int64_t> ints{1, 2};
    h5::Writer ok(path, "test.bad/1");
    ok.allow_nonfinite("/y");
    ok.write("/y", values.data(), {2, 2}, "A,B");
    ok.write("/n", ints.data(), {2}, "N");  // integers are never checked
    ok.commit();
    CHECK(std::filesystem::exists(path));
  }

  TEST_CASE("reading checks dtype kind, rank, presence and finiteness") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("checks.h5");
    {
      h5::Writer out(path, "test.checks/1");
      const std::vector<float> values{1, NAN, 3};
      out.allow_nonfinite("/x");
      out.write("/x", values.data(), {3}, "N");
      const std::vector<int64_t> ints{1, 2};
      out.write("/n", ints.data(), {2}, "N");
      out.commit();
    }
    const h5::File in = h5::File::open(path);
    CHECK(code_of([&] { in.read<int64_t>("/x"); }) == Exit::input);
    CHECK(code_of([&] { in.read<float>("/n"); }) == Exit::input);
    CHECK(code_of([&] { in.read<float>("/x", 2, "N,D"); }) == Exit::input);
    CHECK(code_of([&] { in.read<float>("/nope"); }) == Exit::input);
    CHECK(code_of([&] { in.require_schema("other.schema/"); }) == Exit::input);
    const auto x = in.read<float>("/x");
    try {
      h5::require_finite(path, "/x", x);
      FAIL("NaN not detected");
    } catch (const nk::Error& e) {
      CHECK(std::string(e.what()).find("dataset /x: NaN at index [1]") != std::string::npos);
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
  }

  TEST_CASE("foreign, truncated and missing files give exit 3 or 4 with the file name") {
    nk::test::ScratchDir dir;
    CHECK(code_of([&] { h5::File::open(dir.file("absent.h5")); }) == Exit::io);
    std::ofstream(dir.file("text.h5")) << "just some text\n";
    CHECK(code_of([&] { h5::File::open(dir.file("text.h5")); }) == Exit::input);
    std::ofstream(dir.file("empty.h5")).close();
    CHECK(code_of([&] { h5::File::open(dir.file("empty.h5")); }) == Exit::input);
    const std::string good = dir.file("good.h5");
    {
      h5::Writer out(good, "test/1");
      std::vector<double> big(20000, 1.0);
      out.write("/big", big.data(), {20000}, "N");
      out.commit();
    }
    std::ifstream source(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(source)), std::istreambuf_iterator<char>());
    std::ofstream(dir.file("truncated.h5"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    try {
      const h5::File t = h5::File::open(dir.file("truncated.h5"));
      t.read<double>("/big");
      FAIL("truncated file was read");
    } catch (const nk::Error& e) {
      CHECK(e.code() == Exit::input);
      CHECK(std::string(e.what()).find("truncated.h5") != std::string::npos);
    }
  }

  TEST_CASE("a corrupted global heap (variable-length strings) is exit 3 before the library reads it") {
    nk::test::ScratchDir dir;
    const std::string good = dir.file("strings.h5");
    {
      h5::Writer out(good, "test/1");
      out.write_strings("/names", {"alpha", "beta", "gamma"}, "N");
      out.attr("/", "note", std::string("a variable-length string attribute"));
      out.commit();
    }
    CHECK(h5::File::open(good).read_strings("/names").size() == 3);
    std::ifstream source(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(source)), std::istreambuf_iterator<char>());
    const size_t heap = bytes.find("GCOL");
    REQUIRE(heap != std::string::npos);
    // The first object's size field (after the 16-byte collection header and
    // the object's index, references and reserved bytes) claims 2^40 bytes.
    for (int i = 0; i < 8; ++i) bytes[heap + 16 + 8 + i] = i == 5 ? 1 : 0;
    std::ofstream(dir.file("heap.h5"), std::ios::binary) << bytes;
    try {
      h5::File::open(dir.file("heap.h5"));
      FAIL("a corrupted global heap was opened");
    } catch (const nk::Error& e) {
      CHECK(e.code() == Exit::input);
      CHECK(std::string(e.what()).find("heap.h5") != std::string::npos);
      CHECK(std::string(e.what()).find("global heap") != std::string::npos);
    }
  }
}
