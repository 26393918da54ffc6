// The fused softmax cross-entropy (one pass for the loss and the logit gradients) and the optimizer updates.
// Float arithmetic, SIMD loops and the compute threads (vector_math.h, threads.h): the optimizers are
// memory-bound, reading and writing each parameter's state once; float64 is kept where a sum needs it
// (cross-entropy's sum of exponentials, LAMB's norms).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/cpu/vector_math.h"

namespace ts::cpu {

namespace {
// Below this many parameters an optimizer step stays on one thread.
constexpr std::size_t kOptimizerGrain = 1 << 15;

// The loss and the logit gradients of one row: exp in float (vector_math.h), the sum of exponentials and
// the log in float64.
TS_SIMD_CLONES void crossEntropyRow(float* loss, float* dlogits, const float* z, int target, std::size_t V, float dloss) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (std::size_t v = 0; v < V; ++v) mx = std::max(mx, z[v]);
  // The exponentials once: kept in dlogits when there is one (then scaled in place), else summed as made.
  double sum = 0;
  if (dlogits) {
#pragma omp simd
    for (std::size_t v = 0; v < V; ++v) dlogits[v] = vmath::exp(z[v] - mx);
    sum = vmath::blockedSum(V, [dlogits](std::size_t v) { return double(dlogits[v]); });
  } else {
    sum = vmath::blockedSum(V, [z, mx](std::size_t v) { return double(vmath::exp(z[v] - mx)); });
  }
  const auto t = static_cast<std::size_t>(target);
  if (loss) *loss = static_cast<float>(std::log(sum) - (static_cast<double>(z[t]) - mx));
  if (!dlogits) return;
  const auto scale = static_cast<float>(dloss / sum);
#pragma omp simd
  for (std::size_t v = 0; v < V; ++v) dlogits[v] *= scale;
  dlogits[t] -= dloss;
}
}  // namespace

void crossEntropyForwardBackward(float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N,
                                 std::size_t V, float dloss) {
  parallelChunks(N, std::max<std::size_t>(1, (std::size_t{1} << 15) / std::max<std::size_t>(1, V)),
                 [&](std::size_t a, std::size_t z) {
                   for (std::size_t i = a; i < z; ++i)
                     crossEntropyRow(losses ? losses + i : nullptr, dlogits ? dlogits + i * V : nullptr, logits + i * V,
                                     targets[i], V, dloss);
                 });
}

namespace {
// AdamW in float, one pass (PyTorch's arithmetic: the decay, then the step over the corrected moments):
// p -= lr (m / c1) / (sqrt(v) / sqrt(c2) + eps) + lr wd p. Reads p, g, m, v; writes p, m, v.
TS_SIMD_CLONES void adamwRange(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float b1, float b2,
                               float eps, float wd, float stepSize, float invSqrtC2) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float mi = b1 * m[i] + (1 - b1) * g[i];
    const float vi = b2 * v[i] + (1 - b2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] - lr * wd * p[i] - stepSize * mi / (std::sqrt(vi) * invSqrtC2 + eps);
  }
}
}  // namespace

void adamwUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                 float eps, float weightDecay, int t) {
  const AdamFactors f = adamFactors(lr, beta1, beta2, t);
  parallelChunks(n, kOptimizerGrain, [&](std::size_t a, std::size_t z) {
    adamwRange(params + a, grads + a, m + a, v + a, z - a, lr, beta1, beta2, eps, weightDecay, f.stepSize, f.invSqrtC2);
  });
}

namespace {
// Adam with L2 decay in the gradient, in float (PyTorch's arithmetic): g = grad + wd p, the moments, then
// p -= (lr / c1) m / (sqrt(v) / sqrt(c2) + eps). Reads p, g, m, v; writes p, m, v.
TS_SIMD_CLONES void adamRange(float* p, const float* grads, float* m, float* v, std::size_t n, float b1, float b2, float eps,
                              float wd, float stepSize, float invSqrtC2) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + wd * p[i];
    const float mi = b1 * m[i] + (1 - b1) * g;
    const float vi = b2 * v[i] + (1 - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] - stepSize * mi / (std::sqrt(vi) * invSqrtC2 + eps);
  }
}

TS_SIMD_CLONES void rmspropRange(float* p, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps,
                                 float wd) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + wd * p[i];
    sq[i] = alpha * sq[i] + (1 - alpha) * g * g;
    p[i] -= lr * g / (std::sqrt(sq[i]) + eps);
  }
}

TS_SIMD_CLONES void sgdRange(float* p, const float* grads, float* momentum, std::size_t n, float lr, float mu, float wd) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + wd * p[i];
    momentum[i] = mu * momentum[i] + g;
    p[i] -= lr * momentum[i];
  }
}
}  // namespace

void adamUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                float eps, float weightDecay, int t) {
  const AdamFactors f = adamFactors(lr, beta1, beta2, t);
  parallelChunks(n, kOptimizerGrain, [&](std::size_t a, std::size_t z) {
    adamRange(params + a, grads + a, m + a, v + a, z - a, beta1, beta2, eps, weightDecay, f.stepSize, f.invSqrtC2);
  });
}

void rmspropUpdate(float* params, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps,
                   float weightDecay) {
  parallelChunks(n, kOptimizerGrain, [&](std::size_t a, std::size_t z) {
    rmspropRange(params + a, grads + a, sq + a, z - a, lr, alpha, eps, weightDecay);
  });
}

namespace {
// Adam's bias corrections 1 - beta^t.
double correction(float beta, int t) { return 1.0 - std::pow(static_cast<double>(beta), t); }
// LAMB's direction: the AdamW step's u = mhat / (sqrt(vhat) + eps) + wd p, rounded to float (m, v updated).
float lambDirection(float m, float v, float p, double c1, double c2, float eps, float weightDecay) {
  return static_cast<float>((m / c1) / (std::sqrt(v / c2) + eps) + weightDecay * p);
}
}  // namespace

double lambTrust(double pSquared, double uSquared) {
  return (pSquared > 0 && uSquared > 0) ? std::sqrt(pSquared) / std::sqrt(uSquared) : 1.0;
}

void lambUpdate(float* params, const float* grads, float* m, float* v, float* update, std::size_t n, float lr, float beta1,
                float beta2, float eps, float weightDecay, int t) {
  const double c1 = correction(beta1, t), c2 = correction(beta2, t);
  double pNorm = 0, uNorm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * grads[i];
    v[i] = beta2 * v[i] + (1 - beta2) * grads[i] * grads[i];
    update[i] = lambDirection(m[i], v[i], params[i], c1, c2, eps, weightDecay);
    pNorm += double(params[i]) * params[i];
    uNorm += double(update[i]) * update[i];
  }
  const double trust = lambTrust(pNorm, uNorm);
  for (std::size_t i = 0; i < n; ++i) params[i] -= static_cast<float>(lr * trust * update[i]);
}

void lambMoments(const float* params, const float* grads, float* m, float* v, std::size_t n, float beta1, float beta2, float eps,
                 float weightDecay, int t, double* sums) {
  const double c1 = correction(beta1, t), c2 = correction(beta2, t);
  double pNorm = 0, uNorm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * grads[i];
    v[i] = beta2 * v[i] + (1 - beta2) * grads[i] * grads[i];
    const double u = lambDirection(m[i], v[i], params[i], c1, c2, eps, weightDecay);
    pNorm += double(params[i]) * params[i];
    uNorm += u * u;
  }
  sums[0] += pNorm;
  sums[1] += uNorm;
}

void lambApply(float* params, const float* m, const float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
               float weightDecay, int t, double trust) {
  const double c1 = correction(beta1, t), c2 = correction(beta2, t);
  for (std::size_t i = 0; i < n; ++i)
    params[i] -= static_cast<float>(lr * trust * lambDirection(m[i], v[i], params[i], c1, c2, eps, weightDecay));
}

void sgdMomentumUpdate(float* params, const float* grads, float* momentum, std::size_t n, float lr, float mu, float weightDecay) {
  parallelChunks(n, kOptimizerGrain, [&](std::size_t a, std::size_t z) {
    sgdRange(params + a, grads + a, momentum + a, z - a, lr, mu, weightDecay);
  });
}

namespace {
// Elements [from, from + n) of one tensor under rule r (f: Adam's factors).
void updateRange(const UpdateRule& r, const AdamFactors& f, const UpdateTensor& x, std::size_t from, std::size_t n) {
  float *p = x.params + from, *a = x.a + from, *b = x.b ? x.b + from : nullptr;
  const float* g = x.grads + from;
  switch (r.kind) {
    case ElementwiseUpdate::kSgd:
      return sgdRange(p, g, a, n, r.lr, r.momentum, x.weightDecay);
    case ElementwiseUpdate::kAdam:
      return adamRange(p, g, a, b, n, r.beta1, r.beta2, r.eps, x.weightDecay, f.stepSize, f.invSqrtC2);
    case ElementwiseUpdate::kAdamW:
      return adamwRange(p, g, a, b, n, r.lr, r.beta1, r.beta2, r.eps, x.weightDecay, f.stepSize, f.invSqrtC2);
    case ElementwiseUpdate::kRmsprop:
      return rmspropRange(p, g, a, n, r.lr, r.alpha, r.eps, x.weightDecay);
  }
}
}  // namespace

void updateMany(const UpdateRule& rule, const UpdateTensor* tensors, std::size_t count) {
  const bool adam = rule.kind == ElementwiseUpdate::kAdam || rule.kind == ElementwiseUpdate::kAdamW;
  const AdamFactors f = adam ? adamFactors(rule.lr, rule.beta1, rule.beta2, rule.t) : AdamFactors{0.0f, 0.0f};
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += tensors[i].n;
  parallelChunks(total, kOptimizerGrain, [&](std::size_t from, std::size_t to) {
    // The tensors overlapping [from, to) of the concatenation, each its overlapping part.
    std::size_t offset = 0;
    for (std::size_t i = 0; i < count && offset < to; offset += tensors[i].n, ++i) {
      const std::size_t lo = std::max(from, offset), hi = std::min(to, offset + tensors[i].n);
      if (lo < hi) updateRange(rule, f, tensors[i], lo - offset, hi - lo);
    }
  });
}

}  // namespace ts::cpu
