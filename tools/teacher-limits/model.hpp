// model.hpp - the teacher f*(x) = sum_i v_i sigma(w_i.x / sqrt d), its files
// and the data it makes.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "teacher-limits/activation.hpp"
#include "teacher-limits/state_evolution.hpp"

namespace tl {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;

struct Teacher {
  Matrix W;   ///< [k, d]
  Vector v;   ///< [k]
  Act activation = Act::he3;
  double noise = 0.1;
  std::optional<double> beta;  ///< when v is the power law
  int64_t d() const { return W.cols(); }
  int64_t k() const { return W.rows(); }
  TeacherSpec spec() const;
};

/// v_i = i^-beta / ||(j^-beta)_j||, i = 1..k.
std::vector<double> power_readouts(int64_t k, double beta);
/// W_ij ~ N(0, 1) from Rng(seed).split(0), row by row.
Teacher make_teacher(int64_t d, int64_t k, double beta, Act activation, double noise, uint64_t seed);

/// Reads /teacher/W [k,d], /teacher/v [k] and the root attributes activation
/// and noise (a file without them needs 'activation'/'noise' given); every
/// failure is exit 3 naming the file and the dataset or attribute.
Teacher read_teacher(const nk::h5::File& file, const std::optional<std::string>& activation = {},
                     const std::optional<double>& noise = {});
void write_teacher(nk::h5::Writer& out, const Teacher& t);

/// f*(X) (noiseless), X [n, d].
Vector teacher_output(const Teacher& t, const Matrix& X);

struct Data {
  Teacher teacher;
  Matrix train_X, test_X;
  Vector train_y, test_f, test_y;
  std::optional<uint64_t> seed;
};
/// Rows of x ~ N(0, I_d) from Rng(seed).split(1) (train) and split(3) (test),
/// noise from split(2) and split(4): the first n rows of a larger n are the same.
Data make_data(const Teacher& t, int64_t n, int64_t m, uint64_t seed);
/// /teacher, /train/{X,y}, /test/{X,f,y} with shape and finiteness checks.
Data read_data(const nk::h5::File& file);
void write_data(nk::h5::Writer& out, const Data& data);

/// Throws exit 3 ("needs at most ... GiB") when n x d doubles would not fit.
void require_memory(const std::string& what, int64_t rows, int64_t cols);

}  // namespace tl
