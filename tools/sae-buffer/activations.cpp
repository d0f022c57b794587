// activations.cpp - the synthetic superposition source and the readers of
// activation files.
#include "sae-buffer/activations.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"

namespace sb {

namespace {

constexpr uint64_t kDictionaryStream = (uint64_t{1} << 62) + 7;
constexpr int64_t kReadBlock = 65536;  // rows per hyperslab when gathering scattered rows

}  // namespace

Synthetic::Synthetic(const SyntheticSpec& spec) : spec_(spec) {
  const int64_t F = spec.features, m = spec.dim;
  nk::Rng rng = nk::Rng(spec.seed).split(kDictionaryStream);
  dictionary_.resize(F, m);
  for (int64_t i = 0; i < F; ++i) {
    for (int64_t c = 0; c < m; ++c) dictionary_(i, c) = static_cast<float>(rng.normal());
    dictionary_.row(i).normalize();
  }
  probability_.resize(static_cast<size_t>(F));
  for (int64_t i = 0; i < F; ++i) probability_[i] = std::pow(static_cast<double>(i + 1), -spec.zipf);
  const double total = std::accumulate(probability_.begin(), probability_.end(), 0.0);
  for (double& p : probability_) p /= total;
  // Vose's alias method: O(1) draws from the Zipf probabilities.
  alias_cut_.assign(static_cast<size_t>(F), 1.0);
  alias_.resize(static_cast<size_t>(F));
  std::iota(alias_.begin(), alias_.end(), int64_t{0});
  std::vector<double> scaled(static_cast<size_t>(F));
  std::vector<int64_t> small, large;
  for (int64_t i = 0; i < F; ++i) {
    scaled[i] = probability_[i] * static_cast<double>(F);
    (scaled[i] < 1.0 ? small : large).push_back(i);
  }
  while (!small.empty() && !large.empty()) {
    const int64_t s = small.back(), l = large.back();
    small.pop_back();
    alias_cut_[s] = scaled[s];
    alias_[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
}

void Synthetic::row(int64_t r, float* out) const {
  nk::Rng rng = nk::Rng(spec_.seed).split(static_cast<uint64_t>(r));
  const int64_t m = spec_.dim, F = spec_.features;
  std::vector<int64_t> drawn(static_cast<size_t>(spec_.active));
  for (int64_t& d : drawn) {
    const int64_t i = static_cast<int64_t>(rng.below(static_cast<uint64_t>(F)));
    d = rng.uniform() < alias_cut_[i] ? i : alias_[i];
  }
  std::sort(drawn.begin(), drawn.end());
  drawn.erase(std::unique(drawn.begin(), drawn.end()), drawn.end());
  Eigen::Map<Vector<float>> x(out, m);
  x.setZero();
  for (const int64_t i : drawn) {
    const float magnitude = static_cast<float>(std::exp(spec_.magnitude_sigma * rng.normal()));
    x += magnitude * dictionary_.row(i).transpose();
  }
  for (int64_t c = 0; c < m; ++c) x[c] += static_cast<float>(spec_.noise * rng.normal());
}

void Synthetic::rows(const int64_t* index, int64_t count, float* out) const {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) row(index[i], out + i * spec_.dim);
}

std::vector<double> Synthetic::frequency() const {
  std::vector<double> f(probability_.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0 - std::pow(1.0 - probability_[i], static_cast<double>(spec_.active));
  return f;
}

void require_memory(const std::string& path, const std::string& dataset, int64_t rows, int64_t dim, const char* what) {
  const double bytes = static_cast<double>(rows) * static_cast<double>(dim) * 4.0;
  if (bytes > 0.8 * nk::h5::available_memory_bytes())
    throw nk::input_error(path, dataset,
                          std::string(what) + " of " + std::to_string(rows) + " rows x " + std::to_string(dim) + " needs " +
                              std::to_string(bytes / 1073741824.0) + " GiB, more than the memory available: refused");
}

Activations Activations::open(const std::string& path, const std::string& hook) {
  Activations a;
  a.path_ = path;
  a.file_ = std::make_shared<nk::h5::File>(nk::h5::File::open(path));
  const nk::h5::File& f = *a.file_;
  const std::string schema = f.attr_string("/", "nk_schema").value_or("");
  if (schema.rfind("nk-lm.capture/", 0) == 0) {
    const int64_t layers = static_cast<int64_t>(f.attr_number("/", "layers").value_or(0));
    const std::string h = hook.empty() ? "middle" : hook;
    int64_t layer = -1;
    if (h == "early") layer = 1;
    else if (h == "middle") layer = layers / 2;
    else if (h == "last") layer = layers;
    else if (!h.empty() && h.size() <= 9 && std::all_of(h.begin(), h.end(), ::isdigit)) layer = std::stoll(h);
    else throw nk::usage_error("--hook '" + h + "': expected early, middle, last or a layer number");
    char name[48];
    std::snprintf(name, sizeof name, "/capture/layer_%02lld/resid", static_cast<long long>(layer));
    a.dataset_ = name;
    if (!f.has(a.dataset_))
      throw nk::input_error(path, a.dataset_, "missing: the capture holds no residual of layer " + std::to_string(layer) +
                                                  " (--hook " + h + "; capture it with nk-lm capture --layers)");
  } else {
    if (!hook.empty()) throw nk::usage_error("--hook applies to nk-lm capture files; '" + path + "' is not one");
    a.dataset_ = "/acts";
    if (!f.has(a.dataset_)) throw nk::input_error(path, "/acts", "missing (expected /acts [N,m] or an nk-lm capture file)");
  }
  const nk::h5::DatasetInfo info = f.info(a.dataset_);
  if (!nk::h5::is_float(info.dtype))
    throw nk::input_error(path, a.dataset_, "expected floating-point activations, found " + info.type_text);
  if (info.shape.size() != 2)
    throw nk::input_error(path, a.dataset_, "expected rank 2 [N,m], found rank " + std::to_string(info.shape.size()) + " " +
                                                nk::h5::shape_text(info.shape));
  a.rows_ = info.shape[0];
  a.dim_ = info.shape[1];
  if (a.rows_ < 1 || a.dim_ < 1) throw nk::input_error(path, a.dataset_, "holds no activations " + nk::h5::shape_text(info.shape));
  if (a.dim_ > (int64_t{1} << 20)) throw nk::input_error(path, a.dataset_, "width " + std::to_string(a.dim_) + " is absurd (at most 2^20)");

  if (schema.rfind("sae-buffer.acts/", 0) == 0 && f.attr_string("/", "source").value_or("") == "synthetic") {
    SyntheticSpec s;
    auto number = [&](const char* name) {
      const auto v = f.attr_number("/", name);
      if (!v || !std::isfinite(*v)) throw nk::input_error(path, "", "synthetic source without a valid root attribute " + std::string(name));
      return *v;
    };
    s.dim = static_cast<int64_t>(number("dim"));
    s.features = static_cast<int64_t>(number("features"));
    s.active = static_cast<int64_t>(number("active"));
    s.zipf = number("zipf");
    s.noise = number("noise");
    s.magnitude_sigma = number("magnitude_sigma");
    const std::string seed = f.attr_string("/", "generator_seed").value_or("");
    if (seed.empty() || seed.find_first_not_of("0123456789") != std::string::npos || seed.size() > 20)
      throw nk::input_error(path, "", "synthetic source without a valid root attribute generator_seed");
    s.seed = std::stoull(seed);
    a.first_row_ = static_cast<int64_t>(number("first_row"));
    if (s.dim != a.dim_ || s.features < 1 || s.features > (int64_t{1} << 24) || s.active < 1 || s.active > s.features)
      throw nk::input_error(path, "", "synthetic source attributes do not match /acts (dim, features, active)");
    a.synthetic_ = std::make_shared<Synthetic>(s);
  }
  return a;
}

int64_t Activations::pool() const { return synthetic_ ? kUnboundedRows : rows_; }

std::vector<int32_t> Activations::tokens() const {
  if (!file_->has("/capture/tokens")) return {};
  const auto t = file_->read<int32_t>("/capture/tokens", 1, "T");
  if (t.size() != rows_) throw nk::input_error(path_, "/capture/tokens", "has " + std::to_string(t.size()) + " entries, " + dataset_ + " has " + std::to_string(rows_) + " rows");
  return t.data;
}

std::vector<int64_t> Activations::row_offsets() const {
  if (!file_->has("/capture/offsets")) return {0, rows_};
  std::vector<int64_t> o = file_->read<int64_t>("/capture/offsets", 1, "R+1").data;
  if (o.size() < 2 || o.front() != 0 || o.back() != rows_ || !std::is_sorted(o.begin(), o.end()))
    throw nk::input_error(path_, "/capture/offsets", "must rise from 0 to the " + std::to_string(rows_) + " captured tokens");
  return o;
}

Matrix<float> Activations::read(const std::vector<int64_t>& index) const {
  const int64_t count = static_cast<int64_t>(index.size());
  require_memory(path_, dataset_, count, dim_, "reading");
  Matrix<float> out(count, dim_);
  std::vector<int64_t> order(index.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return index[a] < index[b]; });
  std::vector<int64_t> generated_rows, generated_at;
  size_t o = 0;
  while (o < order.size()) {
    const int64_t r = index[order[o]];
    if (r < 0 || (!synthetic_ && r >= rows_))
      throw nk::input_error(path_, dataset_, "row " + std::to_string(r) + " does not exist (N = " + std::to_string(pool()) + ")");
    if (r >= rows_) {  // a synthetic row past those stored: generator row first_row + r
      generated_rows.push_back(first_row_ + r);
      generated_at.push_back(order[o]);
      ++o;
      continue;
    }
    const int64_t begin = r, end = std::min(rows_, begin + kReadBlock);
    const nk::h5::Array<float> block = file_->read_rows<float>(dataset_, begin, end);
    nk::h5::require_finite(path_, dataset_, block, begin);
    for (; o < order.size() && index[order[o]] < end; ++o)
      out.row(order[o]) = Eigen::Map<const Vector<float>>(block.data.data() + (index[order[o]] - begin) * dim_, dim_);
  }
  if (!generated_rows.empty()) {
    Matrix<float> g(static_cast<int64_t>(generated_rows.size()), dim_);
    synthetic_->rows(generated_rows.data(), g.rows(), g.data());
    for (size_t i = 0; i < generated_at.size(); ++i) out.row(generated_at[i]) = g.row(static_cast<int64_t>(i));
  }
  return out;
}

Matrix<float> Activations::read_range(int64_t begin, int64_t end) const {
  std::vector<int64_t> index(static_cast<size_t>(std::max<int64_t>(0, end - begin)));
  std::iota(index.begin(), index.end(), begin);
  return read(index);
}

}  // namespace sb
