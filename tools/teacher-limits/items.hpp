// items.hpp - what hmc and adam run on: one data file, or a teacher file with
// --n LIST x --data-seeds LIST (data made on the fly as 'data' makes it), the
// items in n-major order and the slice of them --shard takes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/shard.hpp"
#include "teacher-limits/model.hpp"

namespace tl {

struct Item {
  int64_t n = 0;
  int64_t seed = -1;  ///< the data seed (-1: a data file without data_seed)
};

struct ItemOptions {
  std::vector<int64_t> n;
  std::vector<int64_t> data_seeds;
  int64_t test = 2000;
};

class Workload {
 public:
  /// Reads 'path': a data file (/train/X present; --n and --data-seeds
  /// refused) or a teacher file with --n (data seeds default to 0).
  Workload(const std::string& path, const ItemOptions& options, const std::string& verb);
  const Teacher& teacher() const { return teacher_; }
  const std::vector<Item>& items() const { return items_; }
  bool from_file() const { return file_data_.has_value(); }
  /// The data of item i: the file's, or make_data(teacher, n, test, seed).
  Data data(size_t i) const;

 private:
  Teacher teacher_;
  std::optional<Data> file_data_;
  std::vector<Item> items_;
  int64_t test_ = 2000;
};

/// Writes /<group>/n and /<group>/seed for items [first, last).
void write_items(nk::h5::Writer& out, const std::string& group, const std::vector<Item>& items, int64_t first,
                 int64_t last);

}  // namespace tl
