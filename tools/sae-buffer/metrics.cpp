// metrics.cpp - reconstruction and feature-recovery metrics.
#include "sae-buffer/metrics.hpp"

#include <algorithm>

namespace sb {

Reconstruction reconstruct(const Sae& sae, const Matrix<float>& x, CodesT<float>* all_codes, int64_t batch) {
  const int64_t N = x.rows(), m = x.cols(), n = sae.latents();
  const Vector<double> mean = x.cast<double>().colwise().mean().transpose();
  double residual = 0, total = 0;
  int64_t active = 0;
  std::vector<char> fired(static_cast<size_t>(n), 0);
  if (all_codes) {
    all_codes->offsets.assign(1, 0);
    all_codes->latent.clear();
    all_codes->value.clear();
  }
  Matrix<float> pre, x_hat;
  CodesT<float> codes;
  for (int64_t begin = 0; begin < N; begin += batch) {
    const int64_t rows = std::min(batch, N - begin);
    pre_activations(sae, x.data() + begin * m, rows, pre);
    encode(sae, pre, codes);
    x_hat.resize(rows, m);
    decode(sae, codes, x_hat.data());
    const auto block = x.middleRows(begin, rows);
    residual += (block - x_hat).cast<double>().squaredNorm();
    total += (block.cast<double>().rowwise() - mean.transpose()).squaredNorm();
    active += codes.nonzeros();
    for (const int32_t j : codes.latent) fired[j] = 1;
    if (all_codes) {
      const int64_t base = all_codes->offsets.back();
      for (int64_t r = 1; r <= rows; ++r) all_codes->offsets.push_back(base + codes.offsets[r]);
      all_codes->latent.insert(all_codes->latent.end(), codes.latent.begin(), codes.latent.end());
      all_codes->value.insert(all_codes->value.end(), codes.value.begin(), codes.value.end());
    }
  }
  Reconstruction out;
  out.ev = total > 0 ? 1 - residual / total : 0;
  out.mse = residual / static_cast<double>(N * m);
  out.l0 = static_cast<double>(active) / static_cast<double>(N);
  out.dead_fraction = static_cast<double>(std::count(fired.begin(), fired.end(), 0)) / static_cast<double>(n);
  return out;
}

Recovery recovery(const Sae& sae, const Matrix<float>& dictionary) {
  Matrix<float> unit = dictionary;
  for (int64_t i = 0; i < unit.rows(); ++i)
    if (unit.row(i).norm() > 0) unit.row(i).normalize();
  Matrix<float> dec = sae.dec;
  for (int64_t j = 0; j < dec.rows(); ++j)
    if (dec.row(j).norm() > 0) dec.row(j).normalize();
  const Matrix<float> cosines = unit * dec.transpose();  // [F, n]
  Recovery r;
  r.best.resize(static_cast<size_t>(unit.rows()));
  int64_t hits = 0;
  for (int64_t i = 0; i < unit.rows(); ++i) {
    r.best[i] = cosines.row(i).maxCoeff();
    r.mmcs += r.best[i];
    hits += r.best[i] >= 0.9;
  }
  r.mmcs /= static_cast<double>(unit.rows());
  r.recovered = static_cast<double>(hits) / static_cast<double>(unit.rows());
  return r;
}

}  // namespace sb
