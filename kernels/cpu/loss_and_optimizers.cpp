// The fused softmax cross-entropy (one pass for the loss and the logit gradients) and the optimizer updates.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/ops.h"

namespace ts::cpu {

void crossEntropyForwardBackward(float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N,
                                 std::size_t V, float dloss) {
  for (std::size_t i = 0; i < N; ++i) {
    const float* z = logits + i * V;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t v = 0; v < V; ++v) mx = std::max(mx, z[v]);
    double sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - mx);
    const auto t = static_cast<std::size_t>(targets[i]);
    if (losses) losses[i] = static_cast<float>(std::log(sum) - (static_cast<double>(z[t]) - mx));
    if (dlogits)
      for (std::size_t v = 0; v < V; ++v) {
        const double p = std::exp(static_cast<double>(z[v]) - mx) / sum;
        dlogits[i * V + v] = static_cast<float>((p - (v == t ? 1.0 : 0.0)) * dloss);
      }
  }
}

void adamwUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                 float eps, float weightDecay, int t) {
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), t);
  const double c2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * grads[i];
    v[i] = beta2 * v[i] + (1 - beta2) * grads[i] * grads[i];
    const double mhat = m[i] / c1, vhat = v[i] / c2;
    params[i] -= static_cast<float>(lr * (mhat / (std::sqrt(vhat) + eps) + weightDecay * params[i]));
  }
}

void adamwUpdateMulti(const AdamwTensor* tensors, std::size_t count, float lr, float beta1, float beta2, float eps,
                      float weightDecay, int t) {
  for (std::size_t i = 0; i < count; ++i)
    adamwUpdate(tensors[i].params, tensors[i].grads, tensors[i].m, tensors[i].v, tensors[i].n, lr, beta1, beta2, eps, weightDecay,
                t);
}

void adamUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                float eps, float weightDecay, int t) {
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), t);
  const double c2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + weightDecay * params[i];
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    params[i] -= static_cast<float>(lr * ((m[i] / c1) / (std::sqrt(v[i] / c2) + eps)));
  }
}

void rmspropUpdate(float* params, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps,
                   float weightDecay) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + weightDecay * params[i];
    sq[i] = alpha * sq[i] + (1 - alpha) * g * g;
    params[i] -= lr * g / (std::sqrt(sq[i]) + eps);
  }
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
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + weightDecay * params[i];
    momentum[i] = mu * momentum[i] + g;
    params[i] -= lr * momentum[i];
  }
}

}  // namespace ts::cpu
