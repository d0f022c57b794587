// test_shard.cpp - --shard I/N slicing and its Slurm defaults.
#include <doctest/doctest.h>

#include <cstdlib>

#include "nk/error.hpp"
#include "nk/shard.hpp"

TEST_SUITE("shard") {
  TEST_CASE("shards tile the batch in order with sizes differing by at most one") {
    for (int64_t items : {0, 1, 5, 10, 1001}) {
      for (int64_t count : {1, 2, 3, 7, 16}) {
        int64_t next = 0, smallest = items, largest = 0;
        for (int64_t i = 0; i < count; ++i) {
          const auto [begin, end] = nk::shard_range({i, count}, items);
          CHECK(begin == next);
          next = end;
          smallest = std::min(smallest, end - begin);
          largest = std::max(largest, end - begin);
        }
        CHECK(next == items);
        CHECK(largest - smallest <= 1);
      }
    }
  }

  TEST_CASE("parsing accepts I/N and refuses everything else") {
    const nk::Shard s = nk::parse_shard("3/8");
    CHECK(s.index == 3);
    CHECK(s.count == 8);
    for (const char* bad : {"8/8", "-1/4", "1/0", "1", "a/b", "1/2/3", "", "1/ 2"}) {
      CHECK_THROWS_AS(nk::parse_shard(bad), nk::Error);
    }
  }

  TEST_CASE("the default comes from SLURM_ARRAY_TASK_* relative to the array's first index") {
    setenv("SLURM_ARRAY_TASK_ID", "12", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "10", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
    const nk::Shard s = nk::shard_from_environment();
    CHECK(s.text() == "2/4");
    setenv("SLURM_ARRAY_TASK_ID", "14", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
    setenv("SLURM_ARRAY_TASK_STEP", "2", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "8", 1);
    CHECK(nk::shard_from_environment().text() == "7/8");
    unsetenv("SLURM_ARRAY_TASK_STEP");
    unsetenv("SLURM_ARRAY_TASK_ID");
    unsetenv("SLURM_ARRAY_TASK_MIN");
    unsetenv("SLURM_ARRAY_TASK_COUNT");
    CHECK(nk::shard_from_environment().whole());
  }
}
