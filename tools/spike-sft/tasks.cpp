// tasks.cpp - new tasks derived from one labelled image set, for adaptation:
// rotated, inverted, pixel-permuted, noisy inputs and relabelled classes,
// each with its own train and test examples. Every task keeps the input size
// and the number of classes, so one architecture serves them all.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

namespace {

const std::vector<std::string> kKinds = {"identity", "rotate90", "invert", "permute", "noise", "relabel", "shift", "contrast", "blur"};

/// Applies task 'kind' to example x (H, W, C laid out row-major) in place.
void transform(const std::string& kind, const std::vector<int64_t>& shape, const std::vector<int64_t>& pixel_order,
               double noise, nk::Rng& rng, float* x, std::vector<float>& scratch) {
  const int64_t h = shape.size() == 3 ? shape[0] : 1, w = shape.size() == 3 ? shape[1] : shape[0];
  const int64_t c = shape.size() == 3 ? shape[2] : 1, n = h * w * c;
  if (kind == "invert") {
    for (int64_t i = 0; i < n; ++i) x[i] = 1.0f - x[i];
  } else if (kind == "noise") {
    for (int64_t i = 0; i < n; ++i) x[i] = std::clamp(static_cast<float>(x[i] + noise * rng.normal()), 0.0f, 1.0f);
  } else if (kind == "rotate90") {  // 90 degrees clockwise: out[i][j] = in[h-1-j][i]
    scratch.assign(x, x + n);
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        for (int64_t k = 0; k < c; ++k) x[(i * w + j) * c + k] = scratch[static_cast<size_t>(((h - 1 - j) * w + i) * c + k)];
  } else if (kind == "shift") {  // moved 4 pixels right and down, zeros shifted in
    scratch.assign(x, x + n);
    constexpr int64_t s = 4;
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        for (int64_t k = 0; k < c; ++k)
          x[(i * w + j) * c + k] = (i >= s && j >= s) ? scratch[static_cast<size_t>(((i - s) * w + j - s) * c + k)] : 0.0f;
  } else if (kind == "contrast") {  // a third of the contrast, around mid-grey
    for (int64_t i = 0; i < n; ++i) x[i] = 0.5f + (x[i] - 0.5f) / 3.0f;
  } else if (kind == "blur") {  // 5x5 box blur (zero padding)
    scratch.assign(x, x + n);
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        for (int64_t k = 0; k < c; ++k) {
          float sum = 0;
          for (int64_t di = -2; di <= 2; ++di)
            for (int64_t dj = -2; dj <= 2; ++dj) {
              const int64_t y = i + di, z = j + dj;
              if (y >= 0 && y < h && z >= 0 && z < w) sum += scratch[static_cast<size_t>((y * w + z) * c + k)];
            }
          x[(i * w + j) * c + k] = sum / 25.0f;
        }
  } else if (kind == "permute") {
    scratch.assign(x, x + n);
    for (int64_t p = 0; p < h * w; ++p)
      for (int64_t k = 0; k < c; ++k) x[p * c + k] = scratch[static_cast<size_t>(pixel_order[static_cast<size_t>(p)] * c + k)];
  }
}

}  // namespace

void tasks(const TasksOptions& o, const nk::RunEnv& env) {
  for (const std::string& kind : o.kinds) {
    if (std::find(kKinds.begin(), kKinds.end(), kind) == kKinds.end()) {
      throw nk::usage_error("--kinds: unknown task '" + kind + "' (identity, rotate90, invert, permute, noise, relabel, shift, contrast, blur)");
    }
    if (std::count(o.kinds.begin(), o.kinds.end(), kind) > 1) {
      throw nk::usage_error("--kinds: task '" + kind + "' is given twice (each kind is one group of the tasks file)");
    }
  }
  const Dataset all = read_dataset(o.input);
  if (std::find(o.kinds.begin(), o.kinds.end(), "rotate90") != o.kinds.end() &&
      (all.shape.size() != 3 || all.shape[0] != all.shape[1])) {
    throw nk::input_error(o.input, "/images", "rotate90 needs square images [N,H,H,C]");
  }
  nk::Rng rng(env.seed);
  // Disjoint train and test examples: a seeded permutation, cut in two.
  std::vector<int64_t> order(static_cast<size_t>(all.size()));
  std::iota(order.begin(), order.end(), 0);
  nk::shuffle(order, rng);
  int64_t train = o.train, test = o.test;
  if (train + test > all.size()) {  // scale both down to what there is
    train = all.size() * o.train / (o.train + o.test);
    test = all.size() - train;
  }
  if (train < 1 || test < 1) throw nk::input_error(o.input, "/images", "has too few examples for a train and a test split");
  nk::h5::Writer out(o.output, kTasksSchema, o.no_clobber);
  const int64_t d = all.x.cols();
  std::vector<int64_t> shape = all.shape.size() == 3 ? all.shape : std::vector<int64_t>{1, d, 1};
  std::vector<float> scratch;
  for (size_t k = 0; k < o.kinds.size(); ++k) {
    const std::string& kind = o.kinds[k];
    nk::Rng task_rng = rng.split(k + 1);
    std::vector<int64_t> pixels(static_cast<size_t>(shape[0] * shape[1]));
    std::iota(pixels.begin(), pixels.end(), 0);
    nk::shuffle(pixels, task_rng);
    // relabel: a fixed derangement of the classes (a cyclic shift by a random offset).
    const int64_t shift = 1 + static_cast<int64_t>(task_rng.below(static_cast<uint64_t>(std::max<int64_t>(1, all.classes - 1))));
    for (const char* split : {"train", "test"}) {
      const bool is_train = split[1] == 'r';
      const int64_t first = is_train ? 0 : train, count = is_train ? train : test;
      std::vector<float> images(static_cast<size_t>(count * d));
      std::vector<int64_t> labels(static_cast<size_t>(count));
      for (int64_t r = 0; r < count; ++r) {
        const int64_t i = order[static_cast<size_t>(first + r)];
        float* x = images.data() + r * d;
        Eigen::Map<Eigen::VectorXf>(x, d) = all.x.row(i).transpose();
        transform(kind, shape, pixels, o.noise, task_rng, x, scratch);
        const int64_t y = all.labels[static_cast<size_t>(i)];
        labels[static_cast<size_t>(r)] = kind == "relabel" ? (y + shift) % all.classes : y;
      }
      const std::string group = "/tasks/" + kind + "/" + split;
      out.write(group + "/images", images.data(), {count, shape[0], shape[1], shape[2]}, "N,H,W,C");
      out.write(group + "/labels", labels.data(), {count}, "N");
    }
    out.attr("/tasks/" + kind, "classes", all.classes);
  }
  out.commit();
  spdlog::info("{} task(s), {} training and {} test examples each", o.kinds.size(), train, test);
}

Task read_task(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    throw nk::usage_error("--task expects FILE:NAME (a file from spike-sft tasks and one of its tasks), got '" + spec + "'");
  }
  const std::string path = spec.substr(0, colon), name = spec.substr(colon + 1);
  const nk::h5::File file = nk::h5::File::open(path);
  file.require_schema(kTasksSchema);
  const std::string group = "/tasks/" + name;
  if (!file.has(group + "/train/images")) {
    std::string known;
    for (const std::string& dataset : file.datasets()) {
      if (dataset.size() > 20 && dataset.compare(dataset.size() - 13, 13, "/train/images") == 0) {
        known += (known.empty() ? "" : ", ") + dataset.substr(7, dataset.size() - 20);
      }
    }
    throw nk::input_error(file.path(), group, "no such task (the file holds: " + known + ")");
  }
  Task task;
  task.name = name;
  task.train = read_dataset(file, group + "/train");
  task.test = read_dataset(file, group + "/test");
  return task;
}

}  // namespace spike
