// test_atomic.cpp - outputs appear whole or not at all.
#include <doctest/doctest.h>

#include <fstream>

#include "nk/atomic_file.hpp"
#include "nk/h5.hpp"
#include "test_support.hpp"

TEST_SUITE("atomic") {
  TEST_CASE("an uncommitted writer leaves nothing behind and keeps an existing file") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("out.h5");
    std::ofstream(path) << "precious";
    {
      nk::h5::Writer out(path, "test/1");
      const std::vector<float> v{1, 2, 3};
      out.write("/v", v.data(), {3}, "N");
      // no commit: as if the run failed after writing
    }
    CHECK(dir.entries() == 1);
    std::ifstream kept(path);
    std::string text;
    kept >> text;
    CHECK(text == "precious");
  }

  TEST_CASE("commit replaces, and no-clobber refuses before any work") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("out.bin");
    nk::write_output_bytes(path, {1, 2, 3}, false);
    nk::write_output_bytes(path, {4, 5}, false);
    CHECK(std::filesystem::file_size(path) == 2);
    try {
      nk::write_output_bytes(path, {9}, true);
      FAIL("no-clobber did not refuse");
    } catch (const nk::Error& e) {
      CHECK(e.code() == nk::Exit::io);
    }
    CHECK(std::filesystem::file_size(path) == 2);
    CHECK(dir.entries() == 1);
  }

  TEST_CASE("a missing folder is an I/O error naming the path") {
    nk::test::ScratchDir dir;
    try {
      nk::h5::Writer out(dir.file("no/such/folder/out.h5"), "test/1");
      FAIL("writer opened in a missing folder");
    } catch (const nk::Error& e) {
      CHECK(e.code() == nk::Exit::io);
      CHECK(std::string(e.what()).find("does not exist") != std::string::npos);
    }
  }
}
