#include "core/pluecker.h"

#include <ATen/ATen.h>

#include <vector>

namespace grassaudit {

std::pair<at::Tensor, at::Tensor> pluecker_pair_indices(int64_t r) {
  std::vector<int64_t> I, J;
  I.reserve(static_cast<size_t>(pluecker_dim(r)));
  J.reserve(static_cast<size_t>(pluecker_dim(r)));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = i + 1; j < r; ++j) {
      I.push_back(i);
      J.push_back(j);
    }
  auto opts = at::TensorOptions().dtype(at::kLong);
  return {at::tensor(I, opts), at::tensor(J, opts)};
}

at::Tensor pluecker_coords(const at::Tensor& a, const at::Tensor& b) {
  const int64_t r = a.size(-1);
  auto [I, J] = pluecker_pair_indices(r);
  I = I.to(a.device());
  J = J.to(a.device());
  return a.index_select(-1, I) * b.index_select(-1, J) - a.index_select(-1, J) * b.index_select(-1, I);
}

at::Tensor wedge_norm_from_gram(const at::Tensor& a2, const at::Tensor& b2, const at::Tensor& ab,
                                double eps) {
  return (a2 * b2 - ab * ab).clamp_min(eps * eps).sqrt();
}

}  // namespace grassaudit

// ---------------------------------------------------------------------------------------------
// Fast kernels (custom autograd Functions). Raw loops over contiguous rows, parallel over rows.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>

namespace grassaudit {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per parallel task: about 64k scalar operations each.
int64_t grain_for(int64_t work_per_row) { return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, work_per_row)); }

template <typename T>
void wedge_forward_kernel(const T* a, const T* c, T* w, int64_t rows, int64_t r) {
  const int64_t C = r * (r - 1) / 2;
  at::parallel_for(0, rows, grain_for(C), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const T* an = a + n * r;
      const T* cn = c + n * r;
      T* wn = w + n * C;
      for (int64_t i = 0; i < r; ++i) {
        const T ai = an[i], ci = cn[i];
        const int64_t len = r - i - 1;
        const T* aj = an + i + 1;
        const T* cj = cn + i + 1;
        for (int64_t j = 0; j < len; ++j) wn[j] = ai * cj[j] - aj[j] * ci;
        wn += len;
      }
    }
  });
}

// w_ij = a_i c_j - a_j c_i (i < j): ga_i += g c_j, ga_j -= g c_i, gc_j += g a_i, gc_i -= g a_j.
template <typename T>
void wedge_backward_kernel(const T* a, const T* c, const T* gw, T* ga, T* gc, int64_t rows, int64_t r) {
  const int64_t C = r * (r - 1) / 2;
  at::parallel_for(0, rows, grain_for(2 * C), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const T* an = a + n * r;
      const T* cn = c + n * r;
      const T* gn = gw + n * C;
      T* gan = ga + n * r;
      T* gcn = gc + n * r;
      std::fill(gan, gan + r, T(0));
      std::fill(gcn, gcn + r, T(0));
      for (int64_t i = 0; i < r; ++i) {
        const T ai = an[i], ci = cn[i];
        const int64_t len = r - i - 1;
        const T* aj = an + i + 1;
        const T* cj = cn + i + 1;
        T* gaj = gan + i + 1;
        T* gcj = gcn + i + 1;
        T sa = 0, sc = 0;
        for (int64_t j = 0; j < len; ++j) {
          const T g = gn[j];
          sa += g * cj[j];
          sc += g * aj[j];
          gaj[j] -= g * ci;
          gcj[j] += g * ai;
        }
        gan[i] += sa;
        gcn[i] -= sc;
        gn += len;
      }
    }
  });
}

struct WedgeFunction : public torch::autograd::Function<WedgeFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a_in, const at::Tensor& c_in) {
    auto a = a_in.contiguous(), c = c_in.contiguous();
    const int64_t r = a.size(-1);
    auto sizes = a.sizes().vec();
    sizes.back() = pluecker_dim(r);
    auto w = at::empty(sizes, a.options());
    const int64_t rows = r > 0 ? a.numel() / r : 0;
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "pluecker_wedge", [&] {
      wedge_forward_kernel<scalar_t>(a.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), rows, r);
    });
    ctx->save_for_backward({a, c});
    return w;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto a = saved[0], c = saved[1];
    auto gw = grads[0].contiguous();
    const int64_t r = a.size(-1);
    auto ga = at::empty_like(a), gc = at::empty_like(c);
    const int64_t rows = r > 0 ? a.numel() / r : 0;
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "pluecker_wedge_backward", [&] {
      wedge_backward_kernel<scalar_t>(a.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), gw.data_ptr<scalar_t>(),
                                      ga.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(), rows, r);
    });
    return {ga, gc};
  }
};

// Offsets that can have a partner (D < L), in list order, duplicates kept.
struct OffsetPlan {
  std::vector<int64_t> D;      // usable offsets
  std::vector<int64_t> count;  // [L] number of usable offsets with a partner at position t
};
OffsetPlan plan_offsets(int64_t L, const std::vector<int64_t>& offsets, bool future) {
  OffsetPlan p;
  p.count.assign(static_cast<size_t>(L), 0);
  for (int64_t D : offsets) {
    if (D >= L || D < 0) continue;
    p.D.push_back(D);
    for (int64_t t = 0; t < L; ++t) {
      int64_t q = future ? t + D : t - D;
      if (q >= 0 && q < L) ++p.count[static_cast<size_t>(t)];
    }
  }
  return p;
}

template <typename T>
inline T dot(const T* x, const T* y, int64_t r) {
  T s = 0;
  for (int64_t i = 0; i < r; ++i) s += x[i] * y[i];
  return s;
}

// The partners of anchor row `row` (position t = row % L of its sequence): for each usable
// offset k whose partner p lies inside the sequence, visit(k, z_p, |z_t|^2, |z_p|^2, z_t.z_p).
// Both kernels walk the pairs this way, so they see the same pairs and the same dot products.
template <typename T, class Visit>
inline void for_each_partner(const T* z, int64_t row, int64_t L, int64_t r, const OffsetPlan& plan, bool future,
                             Visit&& visit) {
  const int64_t b = row / L, t = row % L;
  const T* zt = z + row * r;
  const T a2 = dot(zt, zt, r);
  const int64_t nD = static_cast<int64_t>(plan.D.size());
  for (int64_t k = 0; k < nD; ++k) {
    const int64_t p = future ? t + plan.D[k] : t - plan.D[k];
    if (p < 0 || p >= L) continue;
    const T* zp = z + (b * L + p) * r;
    const T b2 = dot(zp, zp, r), ab = dot(zt, zp, r);
    visit(k, zp, a2, b2, ab);
  }
}

template <typename T>
void partner_mean_forward_kernel(const T* z, T* c, int64_t B, int64_t L, int64_t r, const OffsetPlan& plan,
                                 bool future, double eps) {
  const T eps2 = static_cast<T>(eps * eps);
  const int64_t nD = static_cast<int64_t>(plan.D.size());
  at::parallel_for(0, B * L, grain_for(2 * r * std::max<int64_t>(1, nD)), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      T* ct = c + row * r;
      std::fill(ct, ct + r, T(0));
      const int64_t K = plan.count[static_cast<size_t>(row % L)];
      if (K == 0) continue;
      for_each_partner(z, row, L, r, plan, future, [&](int64_t, const T* zp, T a2, T b2, T ab) {
        const T n = std::sqrt(std::max(a2 * b2 - ab * ab, eps2));
        for (int64_t i = 0; i < r; ++i) ct[i] += zp[i] / n;
      });
      const T Kt = static_cast<T>(K);
      for (int64_t i = 0; i < r; ++i) ct[i] /= Kt;
    }
  });
}

// Backward of the partner mean. For a pair (t, p) with x = |z_t|^2 |z_p|^2 - (z_t.z_p)^2,
// n = sqrt(max(x, eps^2)), s = 1/(K_t n), u = gc_t . z_p, q = [x >= eps^2] (-u s / n) / (2 n):
//   grad z_t += 2q (|z_p|^2 z_t - (z_t.z_p) z_p)                        (pass 1, anchor rows)
//   grad z_p += s gc_t + 2q |z_t|^2 z_p - 2q (z_t.z_p) z_t               (pass 2, partner rows)
// Pass 1 stores (s, 2q|z_t|^2, -2q z_t.z_p) per (t, k); pass 2 pulls them from the anchor.
template <typename T>
void partner_mean_backward_kernel(const T* z, const T* gc, T* gz, int64_t B, int64_t L, int64_t r,
                                  const OffsetPlan& plan, bool future, double eps) {
  const T eps2 = static_cast<T>(eps * eps);
  const int64_t nD = static_cast<int64_t>(plan.D.size());
  std::vector<T> coef(static_cast<size_t>(B * L * std::max<int64_t>(1, nD) * 3), T(0));
  const int64_t grain = grain_for(4 * r * std::max<int64_t>(1, nD));
  at::parallel_for(0, B * L, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* zt = z + row * r;
      const T* gct = gc + row * r;
      T* gzt = gz + row * r;
      std::fill(gzt, gzt + r, T(0));
      const int64_t K = plan.count[static_cast<size_t>(row % L)];
      if (K == 0) continue;
      const T Kt = static_cast<T>(K);
      for_each_partner(z, row, L, r, plan, future, [&](int64_t k, const T* zp, T a2, T b2, T ab) {
        const T x = a2 * b2 - ab * ab;
        const T n = std::sqrt(std::max(x, eps2));
        const T s = T(1) / (Kt * n);
        const T u = dot(gct, zp, r);
        // d c_t / d n = -z_p / (K n^2); the clamp passes the gradient where x >= eps^2.
        const T q2 = x >= eps2 ? (-u / (Kt * n * n)) / n : T(0);  // = 2q
        for (int64_t i = 0; i < r; ++i) gzt[i] += q2 * (b2 * zt[i] - ab * zp[i]);
        T* cf = coef.data() + (row * nD + k) * 3;
        cf[0] = s;
        cf[1] = q2 * a2;
        cf[2] = -q2 * ab;
      });
    }
  });
  at::parallel_for(0, B * L, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t b = row / L, p = row % L;
      const T* zp = z + row * r;
      T* gzp = gz + row * r;
      for (int64_t k = 0; k < nD; ++k) {
        const int64_t t = future ? p - plan.D[k] : p + plan.D[k];
        if (t < 0 || t >= L) continue;
        const int64_t trow = b * L + t;
        const T* cf = coef.data() + (trow * nD + k) * 3;
        const T* zt = z + trow * r;
        const T* gct = gc + trow * r;
        for (int64_t i = 0; i < r; ++i) gzp[i] += cf[0] * gct[i] + cf[1] * zp[i] + cf[2] * zt[i];
      }
    }
  });
}

struct PartnerMeanFunction : public torch::autograd::Function<PartnerMeanFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& z_in, std::vector<int64_t> offsets,
                            bool future, double eps) {
    TORCH_CHECK(z_in.dim() == 3, "pluecker_partner_mean: z must be [B, L, r]");
    auto z = z_in.contiguous();
    const int64_t B = z.size(0), L = z.size(1), r = z.size(2);
    auto c = at::empty_like(z);
    auto plan = plan_offsets(L, offsets, future);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "pluecker_partner_mean", [&] {
      partner_mean_forward_kernel<scalar_t>(z.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), B, L, r, plan, future, eps);
    });
    ctx->save_for_backward({z});
    ctx->saved_data["offsets"] = offsets;
    ctx->saved_data["future"] = future;
    ctx->saved_data["eps"] = eps;
    return c;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto z = ctx->get_saved_variables()[0];
    auto offsets = ctx->saved_data["offsets"].toIntVector();
    const bool future = ctx->saved_data["future"].toBool();
    const double eps = ctx->saved_data["eps"].toDouble();
    auto gc = grads[0].contiguous();
    const int64_t B = z.size(0), L = z.size(1), r = z.size(2);
    auto gz = at::empty_like(z);
    auto plan = plan_offsets(L, offsets, future);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "pluecker_partner_mean_backward", [&] {
      partner_mean_backward_kernel<scalar_t>(z.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(), gz.data_ptr<scalar_t>(),
                                             B, L, r, plan, future, eps);
    });
    return {gz, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor pluecker_wedge(const at::Tensor& a, const at::Tensor& c) {
  TORCH_CHECK(a.sizes() == c.sizes(), "pluecker_wedge: a and c must have the same shape");
  return WedgeFunction::apply(a, c);
}

at::Tensor pluecker_partner_mean(const at::Tensor& z, const std::vector<int64_t>& offsets, bool future,
                                 double eps) {
  return PartnerMeanFunction::apply(z, offsets, future, eps);
}

}  // namespace grassaudit
