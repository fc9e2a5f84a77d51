#pragma once
// The determinant of a square matrix and its gradient, in double: ONNX's Det, run by the
// executor's host kernel (executor/src/ops/det_ops.cpp) and the rule evaluator (its definition's
// evaluate, core/src/ops/det.cpp) alike.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace unity::determinant {

// LU factorisation of the m x m row-major matrix `a` in place, with partial pivoting: returns the
// determinant (the product of the pivots, its sign flipped for each row swap) and leaves L (unit
// diagonal, below) and U (on and above the diagonal) in `a`, the row order in `perm`.
inline double lu(std::vector<double>& a, std::int64_t m, std::vector<std::int64_t>& perm) {
  perm.resize(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) perm[static_cast<std::size_t>(i)] = i;
  double det = 1;
  auto at = [&](std::int64_t r, std::int64_t c) -> double& {
    return a[static_cast<std::size_t>(r * m + c)];
  };
  for (std::int64_t k = 0; k < m; ++k) {
    std::int64_t pivot = k;
    for (std::int64_t r = k + 1; r < m; ++r)
      if (std::abs(at(r, k)) > std::abs(at(pivot, k))) pivot = r;
    if (at(pivot, k) == 0) return 0;
    if (pivot != k) {
      for (std::int64_t c = 0; c < m; ++c) std::swap(at(k, c), at(pivot, c));
      std::swap(perm[static_cast<std::size_t>(k)], perm[static_cast<std::size_t>(pivot)]);
      det = -det;
    }
    det *= at(k, k);
    for (std::int64_t r = k + 1; r < m; ++r) {
      const double l = at(r, k) / at(k, k);
      at(r, k) = l;
      for (std::int64_t c = k + 1; c < m; ++c) at(r, c) -= l * at(k, c);
    }
  }
  return det;
}

inline double det(const double* a, std::int64_t m) {
  std::vector<double> lu_a(a, a + m * m);
  std::vector<std::int64_t> perm;
  return lu(lu_a, m, perm);
}

// d(det A)/dA = adj(A)^T, the cofactor matrix: det(A) inv(A)^T where A is invertible. A singular
// A (rank m - 1 still has a nonzero adjugate) takes the cofactors one minor at a time.
inline std::vector<double> cofactors(const double* a, std::int64_t m) {
  std::vector<double> out(static_cast<std::size_t>(m * m), 0.0);
  if (m == 1) {
    out[0] = 1;
    return out;
  }
  std::vector<double> lu_a(a, a + m * m);
  std::vector<std::int64_t> perm;
  const double d = lu(lu_a, m, perm);
  if (d != 0) {
    // Column j of inv(A) solves A x = e_j: P A = L U, so L U x = P e_j.
    std::vector<double> x(static_cast<std::size_t>(m));
    for (std::int64_t j = 0; j < m; ++j) {
      for (std::int64_t i = 0; i < m; ++i) x[static_cast<std::size_t>(i)] = perm[i] == j ? 1 : 0;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t c = 0; c < i; ++c) x[i] -= lu_a[i * m + c] * x[c];
      for (std::int64_t i = m - 1; i >= 0; --i) {
        for (std::int64_t c = i + 1; c < m; ++c) x[i] -= lu_a[i * m + c] * x[c];
        x[i] /= lu_a[i * m + i];
      }
      // inv(A)[i][j] = x[i]; the cofactor C[j][i] = det inv(A)[i][j] (C = det inv(A)^T).
      for (std::int64_t i = 0; i < m; ++i) out[j * m + i] = d * x[i];
    }
    return out;
  }
  std::vector<double> minor(static_cast<std::size_t>((m - 1) * (m - 1)));
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < m; ++c) {
      std::size_t k = 0;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < m; ++j)
          if (i != r && j != c) minor[k++] = a[i * m + j];
      out[r * m + c] = ((r + c) % 2 == 0 ? 1.0 : -1.0) * det(minor.data(), m - 1);
    }
  return out;
}

}  // namespace unity::determinant
