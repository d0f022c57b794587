// index_io.cpp - the index file: keys, and per head and subspace the
// codebook, codes and residuals, checked on the way in.
#include "louver-index/index_io.hpp"

#include <cmath>

#include "louver-index/louver.hpp"
#include "nk/error.hpp"

namespace louver {

namespace {
}  // namespace

Vectors read_vectors(const nk::h5::File& file, const std::string& dataset) {
  const nk::h5::DatasetInfo info = file.info(dataset);
  if (info.shape.size() != 2 && info.shape.size() != 3) {
    throw nk::input_error(file.path(), dataset, "expected [N,d] or [H,N,d], found " + nk::h5::shape_text(info.shape));
  }
  Vectors v;
  v.heads = info.shape.size() == 3 ? info.shape[0] : 1;
  v.count = info.shape[info.shape.size() - 2];
  v.dims = info.shape.back();
  if (v.heads < 1 || v.count < 1 || v.dims < 1) {
    throw nk::input_error(file.path(), dataset, "is empty: shape " + nk::h5::shape_text(info.shape));
  }
  nk::h5::Array<float> array = file.read<float>(dataset);
  nk::h5::require_finite(file.path(), dataset, array);
  v.data = std::move(array.data);
  return v;
}

void write_index(nk::h5::Writer& out, const Index& index) {
  const int64_t heads = static_cast<int64_t>(index.heads.size()), n = index.keys_per_head(), d = index.dims;
  const int64_t s_count = index.subspaces.count();
  std::vector<float> keys, values;
  for (const HeadIndex& head : index.heads) {
    keys.insert(keys.end(), head.keys.begin(), head.keys.end());
    values.insert(values.end(), head.values.begin(), head.values.end());
  }
  out.write("/keys", keys.data(), {heads, n, d}, "H,N,d");
  if (index.value_dims) out.write("/values", values.data(), {heads, n, index.value_dims}, "H,N,dv");
  out.attr("/", "subspaces", s_count);
  out.attr("/", "branching", index.params.branching);
  out.attr("/", "leaf_size", index.params.leaf_size);
  out.attr("/", "buffer", index.params.buffer);
  for (int64_t h = 0; h < heads; ++h) {
    const HeadIndex& head = index.heads[static_cast<size_t>(h)];
    const std::string group = "/head" + std::to_string(h);
    std::vector<int32_t> codes;
    std::vector<float> residuals;
    for (int64_t s = 0; s < s_count; ++s) {
      codes.insert(codes.end(), head.code[static_cast<size_t>(s)].begin(), head.code[static_cast<size_t>(s)].begin() + head.coded);
      residuals.insert(residuals.end(), head.residual[static_cast<size_t>(s)].begin(), head.residual[static_cast<size_t>(s)].begin() + head.coded);
    }
    out.write(group + "/codes", codes.data(), {s_count, head.coded}, "S,N");
    out.write(group + "/residuals", residuals.data(), {s_count, head.coded}, "S,N");
    out.attr(group, "built", head.built);
    for (int64_t s = 0; s < s_count; ++s) {
      const Codebook& book = head.books[static_cast<size_t>(s)];
      out.write(group + "/centroids" + std::to_string(s), book.centroid.data(), {book.clusters(), book.width}, "cluster,width");
    }
  }
}

Index read_index(const nk::h5::File& file) {
  file.require_schema("louver-index.index/");
  const std::string& name = file.path();
  Index index;
  auto number = [&](const char* key) {
    const auto value = file.attr_number("/", key);
    if (!value || *value < 1) throw nk::input_error(name, "", std::string("root attribute ") + key + " is missing or < 1");
    return static_cast<int64_t>(*value);
  };
  index.params.subspaces = number("subspaces");
  index.params.branching = number("branching");
  index.params.leaf_size = number("leaf_size");
  index.params.buffer = number("buffer");
  const Vectors keys = read_vectors(file, "/keys");
  index.dims = keys.dims;
  if (index.params.subspaces > index.dims) throw nk::input_error(name, "", "more subspaces than dimensions");
  index.subspaces = Subspaces::split(index.dims, index.params.subspaces);
  Vectors values;
  if (file.has("/values")) {
    values = read_vectors(file, "/values");
    if (values.heads != keys.heads || values.count != keys.count) throw nk::input_error(name, "/values", "does not match /keys");
    index.value_dims = values.dims;
  }
  const int64_t n = keys.count, d = keys.dims, s_count = index.subspaces.count();
  for (int64_t h = 0; h < keys.heads; ++h) {
    HeadIndex head;
    head.keys.assign(keys.data.begin() + h * n * d, keys.data.begin() + (h + 1) * n * d);
    if (index.value_dims) {
      head.values.assign(values.data.begin() + h * n * index.value_dims, values.data.begin() + (h + 1) * n * index.value_dims);
    }
    const std::string group = "/head" + std::to_string(h);
    const nk::h5::Array<int32_t> codes = file.read<int32_t>(group + "/codes", 2, "S,N");
    const nk::h5::Array<float> residuals = file.read<float>(group + "/residuals", 2, "S,N");
    nk::h5::require_finite(name, group + "/residuals", residuals);
    if (codes.shape[0] != s_count || codes.shape[1] > n || residuals.shape != codes.shape) {
      throw nk::input_error(name, group + "/codes", "shape " + nk::h5::shape_text(codes.shape) + " does not fit N = " +
                                                       std::to_string(n) + ", S = " + std::to_string(s_count));
    }
    head.coded = codes.shape[1];
    // Files from before the attribute: every coded key counts as built.
    const auto built = file.attr_number(group, "built");
    head.built = built ? static_cast<int64_t>(*built) : head.coded;
    if (head.built < 0 || head.built > head.coded) {
      throw nk::input_error(name, group, "attribute built = " + std::to_string(head.built) + " outside 0.." + std::to_string(head.coded));
    }
    for (int64_t s = 0; s < s_count; ++s) {
      head.code.emplace_back(codes.data.begin() + s * head.coded, codes.data.begin() + (s + 1) * head.coded);
      head.residual.emplace_back(residuals.data.begin() + s * head.coded, residuals.data.begin() + (s + 1) * head.coded);
    }
    for (int64_t s = 0; s < s_count; ++s) {
      const std::string dataset = group + "/centroids" + std::to_string(s);
      const nk::h5::Array<double> centroids = file.read<double>(dataset, 2, "cluster,width");
      nk::h5::require_finite(name, dataset, centroids);
      Codebook book;
      book.width = index.subspaces.width(s);
      if (centroids.shape[1] != book.width || centroids.shape[0] < 1 || centroids.shape[0] > 65536) {
        throw nk::input_error(name, dataset, "shape " + nk::h5::shape_text(centroids.shape) + " does not fit subspace width " +
                                                 std::to_string(book.width));
      }
      book.centroid = centroids.data;
      for (int64_t c = 0; c < centroids.shape[0]; ++c) {
        double norm = 0;
        for (int64_t j = 0; j < book.width; ++j) norm += std::pow(book.centroid[static_cast<size_t>(c * book.width + j)], 2);
        book.norm.push_back(std::sqrt(norm));
      }
      head.books.push_back(std::move(book));
    }
    // The guarantee rests on every residual being an upper bound: check them
    // all (one pass over the keys) rather than trust the file.
    for (int64_t i = 0; i < head.coded; ++i) {
      for (int64_t s = 0; s < s_count; ++s) {
        const int32_t c = head.code[static_cast<size_t>(s)][static_cast<size_t>(i)];
        Codebook& book = head.books[static_cast<size_t>(s)];
        if (c < 0 || c >= book.clusters()) {
          throw nk::input_error(name, group + "/codes", "key " + std::to_string(i) + " has cluster " + std::to_string(c) +
                                                           " outside 0.." + std::to_string(book.clusters() - 1));
        }
        const float rho = head.residual[static_cast<size_t>(s)][static_cast<size_t>(i)];
        const float* k = head.keys.data() + i * d + index.subspaces.begin[static_cast<size_t>(s)];
        if (!(rho >= residual_up(k, book.centroid.data() + c * book.width, book.width))) {
          throw nk::input_error(name, group + "/residuals", "key " + std::to_string(i) + ", subspace " + std::to_string(s) +
                                                               ": residual is not an upper bound (corrupt index)");
        }
        book.max_residual = std::max(book.max_residual, rho);
      }
    }
    finish_head(head, d);
    index.heads.push_back(std::move(head));
  }
  return index;
}

}  // namespace louver
