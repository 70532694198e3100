// Pluecker coordinates: hand-computed pairs, antisymmetry, the quadratic Pluecker relation,
// and Lagrange's identity used by the fast path.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "core/pluecker.h"

using namespace grassaudit;

TEST(Pluecker, HandComputedPairR3) {
  // a = (1, 2, 3), b = (4, 5, 6): p01 = 1*5-2*4 = -3, p02 = 1*6-3*4 = -6, p12 = 2*6-3*5 = -3
  auto a = at::tensor({1.0, 2.0, 3.0}, at::kDouble);
  auto b = at::tensor({4.0, 5.0, 6.0}, at::kDouble);
  auto p = pluecker_coords(a, b);
  ASSERT_EQ(p.size(0), 3);
  EXPECT_DOUBLE_EQ(p[0].item<double>(), -3.0);
  EXPECT_DOUBLE_EQ(p[1].item<double>(), -6.0);
  EXPECT_DOUBLE_EQ(p[2].item<double>(), -3.0);
}

TEST(Pluecker, BasisVectorsGiveOneCoordinate) {
  // e_1 ^ e_3 in r = 4: only p_{1,3} (row-major index 1) is 1.
  auto a = at::zeros({4}, at::kDouble), b = at::zeros({4}, at::kDouble);
  a[1] = 1.0;
  b[3] = 1.0;
  auto p = pluecker_coords(a, b);
  ASSERT_EQ(p.size(0), 6);  // C(4, 2)
  // row-major order: (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
  std::vector<double> expected{0, 0, 0, 0, 1, 0};
  for (int k = 0; k < 6; ++k) EXPECT_DOUBLE_EQ(p[k].item<double>(), expected[k]) << k;
}

TEST(Pluecker, AntisymmetryAndZeroOnParallel) {
  at::manual_seed(1);
  auto a = at::randn({5, 7}, at::kDouble), b = at::randn({5, 7}, at::kDouble);
  EXPECT_TRUE(at::equal(pluecker_coords(a, b), -pluecker_coords(b, a)));
  EXPECT_EQ(pluecker_coords(a, 2.0 * a).abs().max().item<double>(), 0.0);  // exact: x*2y == y*2x
}

TEST(Pluecker, QuadraticRelationR4) {
  // For r = 4 every decomposable 2-vector satisfies p01 p23 - p02 p13 + p03 p12 = 0.
  at::manual_seed(2);
  auto a = at::randn({100, 4}, at::kDouble), b = at::randn({100, 4}, at::kDouble);
  auto p = pluecker_coords(a, b);
  auto rel = p.select(1, 0) * p.select(1, 5) - p.select(1, 1) * p.select(1, 4) + p.select(1, 2) * p.select(1, 3);
  EXPECT_LT(rel.abs().max().item<double>(), 1e-12);
  // ... and a generic (non-decomposable) 2-vector does not: the check can fail.
  auto random_p = at::randn({100, 6}, at::kDouble);
  auto rel2 = random_p.select(1, 0) * random_p.select(1, 5) - random_p.select(1, 1) * random_p.select(1, 4) +
              random_p.select(1, 2) * random_p.select(1, 3);
  EXPECT_GT(rel2.abs().max().item<double>(), 1e-3);
}

TEST(Pluecker, LagrangeIdentityMatchesLiteralNorm) {
  at::manual_seed(3);
  auto a = at::randn({50, 32}, at::kDouble), b = at::randn({50, 32}, at::kDouble);
  auto literal = pluecker_coords(a, b).pow(2).sum(-1).sqrt();
  auto fast = wedge_norm_from_gram((a * a).sum(-1), (b * b).sum(-1), (a * b).sum(-1), 1e-8);
  EXPECT_LT((literal - fast).abs().max().item<double>(), 1e-12);
  // eps floor: parallel vectors give exactly eps, not 0 (and not NaN).
  auto par = wedge_norm_from_gram((a * a).sum(-1), (a * a).sum(-1) * 4, (a * a).sum(-1) * 2, 1e-8);
  EXPECT_GE(par.min().item<double>(), 1e-8 - 1e-20);
}
