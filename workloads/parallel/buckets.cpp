#include "workloads/parallel/buckets.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/device_ops.h"
#include "workloads/layers/param_init.h"

namespace ts::wl {

Tensor viewOf(const Tensor& t, std::size_t offset, std::size_t n) {
  if (offset + n > t.numel()) throw Error(fmt::format("internal: a view of [{}, {}) of {}", offset, offset + n, t.shapeText()));
  return Tensor{t.data + offset, {static_cast<std::int64_t>(n)}, t.device};
}

void accumulateInto(const Tensor& shard, const Tensor& reduced, bool first) {
  if (first)
    copy(shard, reduced);
  else
    ops::axpy(*shard.device, shard.data, reduced.data, 1.0f, shard.numel());
}

Buckets::Buckets(const std::vector<Param*>& modelOrder, double bucketMb, int parts) {
  const std::size_t cap = static_cast<std::size_t>(bucketMb * 1024 * 1024 / sizeof(float));
  std::vector<Bucket> list;
  for (auto it = modelOrder.rbegin(); it != modelOrder.rend(); ++it) {
    Param* p = *it;
    const std::size_t n = p->value.numel();
    if (list.empty() || (list.back().elements > 0 && list.back().elements + n > cap)) list.emplace_back();
    Bucket& b = list.back();
    b.slots.push_back({p, b.elements});
    b.elements += n;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    Bucket& b = list[i];
    b.padded = (b.elements + parts - 1) / parts * parts;
    b.chunk = b.padded / parts;
    b.flat.shape = {static_cast<std::int64_t>(b.padded)};
    for (std::size_t s = 0; s < b.slots.size(); ++s) where_[b.slots[s].param] = {i, s};
  }
  buckets_ = std::move(list);
}

void Buckets::releaseParamGrads(Arena& arena) {
  for (Bucket& b : buckets_)
    for (auto& s : b.slots)
      if (s.param->grad.data) arena.release(s.param->grad);
}

void Buckets::takeFlat(Bucket& b, Arena& arena, MemoryKind kind) {
  if (b.flat.data) throw Error("internal: a bucket taken twice");
  b.flat = arena.tensor(b.flat.shape, kind);
}

void Buckets::take(Bucket& b, Arena& arena) {
  takeFlat(b, arena, MemoryKind::kGradients);
  gradsAsViewsOf(b, b.flat);
}

void Buckets::give(Bucket& b, Arena& arena) {
  unbindGrads(b);
  arena.release(b.flat);
}

void Buckets::gradsAsViewsOf(Bucket& b, const Tensor& flat) {
  for (auto& s : b.slots) s.param->grad.data = flat.data + s.offset;
}

void Buckets::valuesAsViewsOf(Bucket& b, const Tensor& flat) {
  for (auto& s : b.slots) s.param->value.data = flat.data + s.offset;
}

void Buckets::unbindGrads(Bucket& b) {
  for (auto& s : b.slots) s.param->grad.data = nullptr;
}

void Buckets::takeAll(Arena& arena) {
  for (Bucket& b : buckets_) take(b, arena);
}

void Buckets::unbindValues(Bucket& b) {
  for (auto& s : b.slots) s.param->value.data = nullptr;
}

void Buckets::chunkOfValues(const Bucket& b, int k, const Tensor& dst) const {
  const std::size_t lo = static_cast<std::size_t>(k) * b.chunk, hi = lo + b.chunk;
  zero(dst);
  for (const auto& s : b.slots) {
    const std::size_t n = s.param->value.numel();
    const std::size_t a = std::max(lo, s.offset), z = std::min(hi, s.offset + n);
    if (a >= z) continue;
    if (s.param->value.data)
      copy(viewOf(dst, a - lo, z - a), viewOf(s.param->value, a - s.offset, z - a));
    else  // deferred: drawn for the chunk alone
      drawInitialValues(*s.param, a - s.offset, viewOf(dst, a - lo, z - a));
  }
}

std::size_t Buckets::bucketOf(const Param& p) const {
  const auto it = where_.find(&p);
  if (it == where_.end()) throw Error(fmt::format("internal: {} is in no bucket", p.name));
  return it->second.first;
}

Bucket* Buckets::deposit(Param& p) {
  const auto it = where_.find(&p);
  if (it == where_.end()) throw Error(fmt::format("internal: gradient of {} reported, and it is in no bucket", p.name));
  Bucket& b = buckets_[it->second.first];
  Bucket::Slot& s = b.slots[it->second.second];
  if (!b.flat.data) throw Error(fmt::format("internal: gradient of {} reported, and its bucket is not taken", p.name));
  if (s.deposited) throw Error(fmt::format("internal: gradient of {} reported twice in one backward", p.name));
  const Tensor place = viewOf(b.flat, s.offset, p.grad.numel());
  if (place.data != p.grad.data) copy(place, p.grad);
  s.deposited = true;
  return ++b.ready == b.slots.size() ? &b : nullptr;
}

void Buckets::depositRest(Bucket& b) {
  if (!b.flat.data) throw Error("internal: the rest of a bucket that is not taken");
  for (auto& s : b.slots)
    if (!s.deposited) {
      const Tensor place = viewOf(b.flat, s.offset, s.param->grad.numel());
      if (place.data != s.param->grad.data) copy(place, s.param->grad);
      s.deposited = true;
      ++b.ready;
    }
}

void Buckets::valuesToFlat(Bucket& b) {
  for (const auto& s : b.slots) copy(viewOf(b.flat, s.offset, s.param->value.numel()), s.param->value);
}

void Buckets::valuesFromFlat(Bucket& b) {
  for (const auto& s : b.slots) copy(s.param->value, viewOf(b.flat, s.offset, s.param->value.numel()));
}

Tensor Buckets::moveValuesIntoFlat(Bucket& b, Arena& arena) {
  Tensor values = arena.tensor(b.flat.shape, MemoryKind::kParameters);
  for (const auto& s : b.slots) {
    const Tensor place = viewOf(values, s.offset, s.param->value.numel());
    if (!s.param->value.data) {  // deferred: drawn in place, never held twice
      drawInitialValues(*s.param, 0, place);
      continue;
    }
    copy(place, s.param->value);
    arena.release(s.param->value);
  }
  valuesAsViewsOf(b, values);
  return values;
}

std::vector<Param> Buckets::pieces(const Bucket& b, int k, const Tensor& grads, const Tensor* values) const {
  std::vector<Param> out;
  const std::size_t lo = static_cast<std::size_t>(k) * b.chunk, hi = lo + b.chunk;
  for (const auto& s : b.slots) {
    const std::size_t n = s.param->value.numel();
    const std::size_t a = std::max(lo, s.offset), z = std::min(hi, s.offset + n);
    if (a >= z) continue;
    Param piece;
    piece.name = fmt::format("{}[{}:{}]", s.param->name, a - s.offset, z - s.offset);
    piece.value = values ? viewOf(*values, a - lo, z - a) : viewOf(s.param->value, a - s.offset, z - a);
    piece.grad = viewOf(grads, a - lo, z - a);
    piece.decay = s.param->decay;
    piece.expert = s.param->expert;  // its squares and its LAMB pair are the experts' (expert_sync.h)
    piece.slice = s.param->slice;
    piece.pieceOf = s.param->name;
    piece.pieceOffset = static_cast<std::int64_t>(a - s.offset);
    out.push_back(std::move(piece));
  }
  return out;
}

void Buckets::startMicroBatch() {
  for (auto& b : buckets_) {
    b.ready = 0;
    b.launched = false;
    b.op = -1;
    for (auto& s : b.slots) s.deposited = false;
  }
}

}  // namespace ts::wl
