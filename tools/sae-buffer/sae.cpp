// sae.cpp - encodings, decoding, and the loss with its explicit gradient.
// One dense product per step (the encoder's); the decoder and every gradient
// are computed from the sparse codes, latent by latent.
#include "sae-buffer/sae.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "nk/error.hpp"
#include "nk/kernels/gemm.hpp"

namespace sb {

std::string arch_name(Arch arch) {
  switch (arch) {
    case Arch::topk: return "topk";
    case Arch::batchtopk: return "batchtopk";
    case Arch::jumprelu: return "jumprelu";
  }
  return "?";
}

Arch parse_arch(const std::string& text, const std::string& where) {
  if (text == "topk") return Arch::topk;
  if (text == "batchtopk") return Arch::batchtopk;
  if (text == "jumprelu") return Arch::jumprelu;
  throw nk::Error(nk::Exit::input, where + ": arch '" + text + "' is not topk, batchtopk or jumprelu");
}

template <class T>
SaeT<T> init_sae(Arch arch, int64_t dim, int64_t latents, int64_t k, nk::Rng& rng, double initial_threshold) {
  SaeT<T> sae;
  sae.arch = arch;
  sae.k = k;
  sae.dec.resize(latents, dim);
  for (int64_t j = 0; j < latents; ++j)
    for (int64_t c = 0; c < dim; ++c) sae.dec(j, c) = static_cast<T>(rng.normal());
  normalize_decoder(sae);
  sae.enc = sae.dec;
  sae.b_enc = Vector<T>::Zero(latents);
  sae.b_dec = Vector<T>::Zero(dim);
  sae.threshold = Vector<T>::Constant(latents, arch == Arch::jumprelu ? static_cast<T>(initial_threshold) : T(0));
  return sae;
}

template <class T>
void pre_activations(const SaeT<T>& sae, const T* x, int64_t rows, Matrix<T>& pre) {
  const Eigen::Map<const Matrix<T>> X(x, rows, sae.dim());
  // (x - b_dec) W_enc + b_enc = x W_enc + (b_enc - W_enc^T b_dec): no centred copy of x.
  const Vector<T> shift = sae.b_enc - sae.enc * sae.b_dec;
  pre.resize(rows, sae.latents());
  if constexpr (std::is_same_v<T, float>)  // the step's one dense product: the ISA-dispatched SGEMM
    nk::kernels::gemm_nt(x, sae.enc.data(), pre.data(), rows, sae.latents(), sae.dim());
  else
    pre.noalias() = X * sae.enc.transpose();
  pre.rowwise() += shift.transpose();
}

namespace {

// The k largest positive values of one row, as (index, value) sorted by
// index; ties go to the lower index. One pass keeps candidates above a
// running threshold (the k-th best so far), so that nearly every value fails
// one well-predicted comparison; when 4k candidates pile up they are cut back
// to the best k and the threshold rises.
template <class T>
struct Candidate {
  T value;
  int32_t index;
  bool operator<(const Candidate& o) const { return value > o.value || (value == o.value && index < o.index); }
};

template <class T>
int64_t row_topk(const T* row, int64_t n, int64_t k, int32_t* index, T* value, std::vector<Candidate<T>>& cand) {
  cand.clear();
  T threshold = T(0);
  const size_t cap = static_cast<size_t>(4 * k);
  for (int64_t j = 0; j < n; ++j) {
    if (!(row[j] > threshold)) continue;
    cand.push_back({row[j], static_cast<int32_t>(j)});
    if (cand.size() >= cap) {
      std::nth_element(cand.begin(), cand.begin() + (k - 1), cand.end());
      cand.resize(static_cast<size_t>(k));
      threshold = cand[static_cast<size_t>(k - 1)].value;  // the smallest kept: a later equal value loses the tie
    }
  }
  if (static_cast<int64_t>(cand.size()) > k) {
    std::nth_element(cand.begin(), cand.begin() + (k - 1), cand.end());
    cand.resize(static_cast<size_t>(k));
  }
  std::sort(cand.begin(), cand.end(), [](const Candidate<T>& a, const Candidate<T>& b) { return a.index < b.index; });
  for (size_t i = 0; i < cand.size(); ++i) index[i] = cand[i].index, value[i] = cand[i].value;
  return static_cast<int64_t>(cand.size());
}

// Compacts per-row slots of width 'width' (counts[r] used) into CSR codes.
template <class T>
void compact(const std::vector<int32_t>& index, const std::vector<T>& value, const std::vector<int64_t>& counts,
             int64_t width, CodesT<T>& codes) {
  const int64_t rows = static_cast<int64_t>(counts.size());
  codes.offsets.assign(static_cast<size_t>(rows + 1), 0);
  for (int64_t r = 0; r < rows; ++r) codes.offsets[r + 1] = codes.offsets[r] + counts[r];
  codes.latent.resize(static_cast<size_t>(codes.offsets[rows]));
  codes.value.resize(codes.latent.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(index.begin() + r * width, counts[r], codes.latent.begin() + codes.offsets[r]);
    std::copy_n(value.begin() + r * width, counts[r], codes.value.begin() + codes.offsets[r]);
  }
}

// Row r keeps the entries of 'pre' above per-latent thresholds (jumprelu, batchtopk inference).
template <class T>
void threshold_rows(const Matrix<T>& pre, const Vector<T>& threshold, CodesT<T>& codes) {
  const int64_t rows = pre.rows(), n = pre.cols();
  codes.offsets.assign(static_cast<size_t>(rows + 1), 0);
  codes.latent.clear();
  codes.value.clear();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j)
      if (pre(r, j) > threshold[j] && pre(r, j) > T(0)) {
        codes.latent.push_back(static_cast<int32_t>(j));
        codes.value.push_back(pre(r, j));
      }
    codes.offsets[r + 1] = static_cast<int64_t>(codes.latent.size());
  }
}

}  // namespace

template <class T>
void topk_rows(const Matrix<T>& pre, int64_t k, CodesT<T>& codes) {
  const int64_t rows = pre.rows(), n = pre.cols(), width = std::min(k, n);
  std::vector<int32_t> index(static_cast<size_t>(rows * width));
  std::vector<T> value(index.size());
  std::vector<int64_t> counts(static_cast<size_t>(rows));
#pragma omp parallel
  {
    std::vector<Candidate<T>> cand;
    cand.reserve(static_cast<size_t>(4 * width));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      counts[r] = row_topk(pre.row(r).data(), n, width, index.data() + r * width, value.data() + r * width, cand);
  }
  compact(index, value, counts, width, codes);
}

template <class T>
T topk_batch(const Matrix<T>& pre, int64_t k, CodesT<T>& codes) {
  const int64_t rows = pre.rows(), n = pre.cols(), keep = k * rows;
  std::vector<T> positive;
  positive.reserve(static_cast<size_t>(rows * n / 2));
  for (int64_t i = 0; i < rows * n; ++i)
    if (pre.data()[i] > T(0)) positive.push_back(pre.data()[i]);
  T cut = T(0);  // keep values > cut, and values == cut in flat order up to 'keep'
  int64_t above_budget = keep;
  if (static_cast<int64_t>(positive.size()) > keep) {
    std::nth_element(positive.begin(), positive.begin() + (keep - 1), positive.end(), std::greater<T>());
    cut = positive[static_cast<size_t>(keep - 1)];
    int64_t above = 0;
    for (const T v : positive)
      if (v > cut) ++above;
    above_budget = keep - above;  // how many entries equal to 'cut' are kept
  }
  const bool all = static_cast<int64_t>(positive.size()) <= keep;
  codes.offsets.assign(static_cast<size_t>(rows + 1), 0);
  codes.latent.clear();
  codes.value.clear();
  T smallest = T(0);
  bool any = false;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const T v = pre(r, j);
      const bool kept = all ? v > T(0) : (v > cut || (v == cut && above_budget-- > 0));
      if (!kept) continue;
      codes.latent.push_back(static_cast<int32_t>(j));
      codes.value.push_back(v);
      smallest = any ? std::min(smallest, v) : v;
      any = true;
    }
    codes.offsets[r + 1] = static_cast<int64_t>(codes.latent.size());
  }
  return smallest;
}

template <class T>
void encode(const SaeT<T>& sae, const Matrix<T>& pre, CodesT<T>& codes) {
  if (sae.arch == Arch::topk)
    topk_rows(pre, sae.k, codes);
  else
    threshold_rows(pre, sae.threshold, codes);
}

template <class T>
void decode(const SaeT<T>& sae, const CodesT<T>& codes, T* x_hat) {
  const int64_t rows = codes.rows(), m = sae.dim();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    Eigen::Map<Vector<T>> out(x_hat + r * m, m);
    out = sae.b_dec;
    for (int64_t e = codes.offsets[r]; e < codes.offsets[r + 1]; ++e)
      out += codes.value[e] * sae.dec.row(codes.latent[e]).transpose();
  }
}

template <class T>
void GradT<T>::resize_like(const SaeT<T>& sae) {
  enc.resize(sae.enc.rows(), sae.enc.cols());
  dec.resize(sae.dec.rows(), sae.dec.cols());
  b_enc.resize(sae.b_enc.size());
  b_dec.resize(sae.b_dec.size());
  threshold.resize(sae.threshold.size());
  zero();
}

template <class T>
void GradT<T>::zero() {
  enc.setZero();
  dec.setZero();
  b_enc.setZero();
  b_dec.setZero();
  threshold.setZero();
}

namespace {

// Entries of a batch that carry gradient to a latent: codes entry e of row r
// with value z (the code) and g (dL/dpre), plus which row-gradient (G or the
// aux residual's) its decoder term uses.
template <class T>
struct Entry {
  int32_t row;
  int32_t latent;
  T z, dpre;
  bool aux;
};

// The aux-K codes: per row, the aux_k largest positive pre-activations among dead latents.
template <class T>
void aux_codes(const Matrix<T>& pre, const std::vector<int32_t>& dead, int64_t aux_k, CodesT<T>& codes) {
  const int64_t rows = pre.rows(), d = static_cast<int64_t>(dead.size()), width = std::min(aux_k, d);
  std::vector<int32_t> index(static_cast<size_t>(rows * width));
  std::vector<T> value(index.size());
  std::vector<int64_t> counts(static_cast<size_t>(rows));
#pragma omp parallel
  {
    std::vector<T> gathered(static_cast<size_t>(d));
    std::vector<Candidate<T>> cand;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < d; ++i) gathered[i] = pre(r, dead[i]);
      int32_t* idx = index.data() + r * width;
      counts[r] = row_topk(gathered.data(), d, width, idx, value.data() + r * width, cand);
      for (int64_t i = 0; i < counts[r]; ++i) idx[i] = dead[idx[i]];
    }
  }
  compact(index, value, counts, width, codes);
}

}  // namespace

template <class T>
LossParts loss_and_grad(const SaeT<T>& sae, const T* x, int64_t rows, const LossConfig& config,
                        const std::vector<char>& dead, GradT<T>* grad, CodesT<T>& codes, T* batch_min) {
  const int64_t m = sae.dim(), n = sae.latents();
  const Eigen::Map<const Matrix<T>> X(x, rows, m);
  Matrix<T> pre;
  pre_activations(sae, x, rows, pre);
  if (sae.arch == Arch::topk) {
    topk_rows(pre, sae.k, codes);
  } else if (sae.arch == Arch::batchtopk) {
    const T smallest = topk_batch(pre, sae.k, codes);
    if (batch_min) *batch_min = smallest;
  } else {
    threshold_rows(pre, sae.threshold, codes);
  }
  Matrix<T> x_hat(rows, m);
  decode(sae, codes, x_hat.data());
  const Matrix<T> error = x_hat - X;  // x_hat - x
  LossParts parts;
  const T inv_rows = T(1) / static_cast<T>(rows);
  parts.mse = static_cast<double>(error.squaredNorm() * inv_rows);
  parts.l0 = static_cast<double>(codes.nonzeros()) / static_cast<double>(rows);

  std::vector<int32_t> dead_list;
  if (sae.arch != Arch::jumprelu && config.aux_coef > 0)
    for (int64_t j = 0; j < n && j < static_cast<int64_t>(dead.size()); ++j)
      if (dead[j]) dead_list.push_back(static_cast<int32_t>(j));
  CodesT<T> aux;
  Matrix<T> aux_error;  // e_hat - e, e = x - x_hat
  if (!dead_list.empty()) {
    aux_codes(pre, dead_list, config.aux_k > 0 ? config.aux_k : std::max<int64_t>(1, m / 2), aux);
    aux_error.resize(rows, m);
    decode(sae, aux, aux_error.data());
    aux_error.rowwise() -= sae.b_dec.transpose();  // e_hat has no bias
    aux_error += error;  // e_hat - (x - x_hat) = e_hat + (x_hat - x)
    parts.aux = config.aux_coef * static_cast<double>(aux_error.squaredNorm() * inv_rows);
  }
  if (sae.arch == Arch::jumprelu) parts.l0_penalty = config.l0_coef * parts.l0;
  if (!grad) return parts;

  // dL/dx_hat = (2/b)(x_hat - x); the aux residual's gradient likewise.
  const Matrix<T> G = (T(2) * inv_rows) * error;
  const Matrix<T> Ga = aux_error.size() ? Matrix<T>((T(2) * inv_rows * static_cast<T>(config.aux_coef)) * aux_error) : Matrix<T>();

  std::vector<Entry<T>> entries(static_cast<size_t>(codes.nonzeros() + aux.nonzeros()));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = codes.offsets[r]; e < codes.offsets[r + 1]; ++e) {
      const int32_t j = codes.latent[e];
      entries[e] = {static_cast<int32_t>(r), j, codes.value[e], G.row(r).dot(sae.dec.row(j)), false};
    }
    for (int64_t e = aux.offsets.empty() ? 0 : aux.offsets[r]; !aux.offsets.empty() && e < aux.offsets[r + 1]; ++e) {
      const int32_t j = aux.latent[e];
      entries[codes.nonzeros() + e] = {static_cast<int32_t>(r), j, aux.value[e], Ga.row(r).dot(sae.dec.row(j)), true};
    }
  }
  // bucket the entries by latent (a counting sort; row order kept, so sums are deterministic)
  std::vector<int64_t> start(static_cast<size_t>(n + 1), 0);
  for (const auto& en : entries) ++start[en.latent + 1];
  for (int64_t j = 0; j < n; ++j) start[j + 1] += start[j];
  std::vector<int64_t> order(entries.size()), fill(start.begin(), start.end() - 1);
  for (int64_t e = 0; e < static_cast<int64_t>(entries.size()); ++e) order[fill[entries[e].latent]++] = e;

  grad->resize_like(sae);
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t o = start[j]; o < start[j + 1]; ++o) {
      const Entry<T>& en = entries[order[o]];
      grad->dec.row(j) += en.z * (en.aux ? Ga.row(en.row) : G.row(en.row));
      grad->enc.row(j) += en.dpre * X.row(en.row);
      grad->b_enc[j] += en.dpre;
    }
    grad->enc.row(j) -= grad->b_enc[j] * sae.b_dec.transpose();  // pre uses x - b_dec
  }
  grad->b_dec = G.colwise().sum().transpose() - sae.enc.transpose() * grad->b_enc;

  if (sae.arch == Arch::jumprelu) {
    // Straight-through threshold gradient: entries within bandwidth/2 of
    // their threshold, active or not, carry dL/dz * (-theta/eps) and the L0
    // term's -(l0_coef/b)/eps.
    const T eps = static_cast<T>(config.bandwidth);
    const T l0_term = static_cast<T>(config.l0_coef) * inv_rows;
    // Blocks of latents in parallel, rows in order: the sums do not depend on the thread count.
    constexpr int64_t kBlock = 64;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
      const int64_t j1 = std::min(n, j0 + kBlock);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = j0; j < j1; ++j) {
          const T theta = sae.threshold[j];
          if (std::abs(pre(r, j) - theta) < eps / 2) {
            const T dz = G.row(r).dot(sae.dec.row(j));
            grad->threshold[j] += -(theta / eps) * dz - l0_term / eps;
          }
        }
    }
  }
  return parts;
}

template <class T>
void project_decoder_grad(const SaeT<T>& sae, GradT<T>& grad) {
  const int64_t n = sae.latents();
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n; ++j) grad.dec.row(j) -= grad.dec.row(j).dot(sae.dec.row(j)) * sae.dec.row(j);
}

template <class T>
void normalize_decoder(SaeT<T>& sae) {
  for (int64_t j = 0; j < sae.latents(); ++j) {
    const T norm = sae.dec.row(j).norm();
    if (norm > T(0)) sae.dec.row(j) /= norm;
  }
}

#define SB_INSTANTIATE(T)                                                                                          \
  template SaeT<T> init_sae<T>(Arch, int64_t, int64_t, int64_t, nk::Rng&, double);                                 \
  template void pre_activations<T>(const SaeT<T>&, const T*, int64_t, Matrix<T>&);                                 \
  template void encode<T>(const SaeT<T>&, const Matrix<T>&, CodesT<T>&);                                          \
  template void topk_rows<T>(const Matrix<T>&, int64_t, CodesT<T>&);                                              \
  template T topk_batch<T>(const Matrix<T>&, int64_t, CodesT<T>&);                                                \
  template void decode<T>(const SaeT<T>&, const CodesT<T>&, T*);                                                   \
  template struct GradT<T>;                                                                                        \
  template LossParts loss_and_grad<T>(const SaeT<T>&, const T*, int64_t, const LossConfig&, const std::vector<char>&, \
                                      GradT<T>*, CodesT<T>&, T*);                                                   \
  template void project_decoder_grad<T>(const SaeT<T>&, GradT<T>&);                                                \
  template void normalize_decoder<T>(SaeT<T>&);
SB_INSTANTIATE(float)
SB_INSTANTIATE(double)
#undef SB_INSTANTIATE

}  // namespace sb
