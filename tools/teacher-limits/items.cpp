// items.cpp - the items of hmc and adam.
#include "teacher-limits/items.hpp"

#include "nk/error.hpp"

namespace tl {

Workload::Workload(const std::string& path, const ItemOptions& o, const std::string& verb) : test_(o.test) {
  const nk::h5::File file = nk::h5::File::open(path);
  if (file.has("/train/X")) {
    if (!o.n.empty() || !o.data_seeds.empty())
      throw nk::usage_error(verb + ": '" + path +
                            "' is a data file (it has /train/X); --n and --data-seeds take a teacher file");
    file_data_ = read_data(file);
    teacher_ = file_data_->teacher;
    int64_t seed = -1;
    if (const auto s = file.attr_string("/", "data_seed")) {
      try {
        seed = std::stoll(*s);
      } catch (const std::exception&) {
        seed = -1;
      }
    }
    items_.push_back({file_data_->train_X.rows(), seed});
    return;
  }
  if (o.n.empty())
    throw nk::usage_error(verb + ": '" + path + "' has no /train/X: give a data file, or a teacher file with --n LIST");
  teacher_ = read_teacher(file);
  const std::vector<int64_t> seeds = o.data_seeds.empty() ? std::vector<int64_t>{0} : o.data_seeds;
  for (int64_t n : o.n) {
    if (n < 1) throw nk::usage_error(verb + ": --n takes positive sample counts, not " + std::to_string(n));
    require_memory("--n " + std::to_string(n), n, teacher_.d());
    for (int64_t s : seeds) {
      if (s < 0) throw nk::usage_error(verb + ": --data-seeds takes seeds >= 0, not " + std::to_string(s));
      items_.push_back({n, s});
    }
  }
}

Data Workload::data(size_t i) const {
  if (file_data_) return *file_data_;
  return make_data(teacher_, items_[i].n, test_, static_cast<uint64_t>(items_[i].seed));
}

void write_items(nk::h5::Writer& out, const std::string& group, const std::vector<Item>& items, int64_t first,
                 int64_t last) {
  std::vector<int64_t> n, seed;
  for (int64_t i = first; i < last; ++i) {
    n.push_back(items[i].n);
    seed.push_back(items[i].seed);
  }
  out.write(group + "/n", n.data(), {last - first}, "item");
  out.write(group + "/seed", seed.data(), {last - first}, "item");
}

}  // namespace tl
