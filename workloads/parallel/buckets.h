#pragma once
// Gradient buckets: the parameters in backward order (the reverse of the model's order, so the first
// bucket fills first) packed into flat buffers of about --bucket-mb (a larger parameter is a bucket of
// its own), each padded to a multiple of `parts` so that it splits into equal chunks: the blocks of a
// reduce-scatter and all-gather, or the shards of the parameter servers. Chunk k of every bucket
// belongs to part k.
//
// The flats are where the backward writes: a parameter's gradient is a view of its place in its bucket
// (PyTorch DDP's gradient_as_bucket_view), so a bucket costs no memory beside the gradients. The layouts
// that keep gradients for the backward only (ZeRO 2 and 3) take a bucket's flat when its first layer's
// backward starts and give it back once it is sent (take/give); the others take every flat once.
#include <cstddef>
#include <unordered_map>
#include <vector>

#include "workloads/layers/layer.h"

namespace ts::wl {

struct Bucket {
  struct Slot {
    Param* param;
    std::size_t offset;  // in the bucket, elements
    bool deposited = false;
  };
  std::vector<Slot> slots;
  std::size_t elements = 0, padded = 0;
  Tensor flat;  // padded elements, on the model's device (no data while a transient bucket is not taken)
  std::size_t ready = 0;
  bool launched = false;
  int op = -1;            // the collective in flight on it (CommTracker id)
  std::size_t chunk = 0;  // padded / parts
  float* chunkData(int k) const { return flat.data + static_cast<std::size_t>(k) * chunk; }
};

class Buckets {
 public:
  // The layout only: no flat is taken yet, the parameters' gradients are untouched.
  Buckets(const std::vector<Param*>& modelOrder, double bucketMb, int parts);
  std::vector<Bucket>& all() { return buckets_; }
  const std::vector<Bucket>& all() const { return buckets_; }
  // Gives the parameters' own gradient memory back to `arena` (at setup, while every gradient is zero):
  // from now on a gradient lives in its bucket's flat only.
  void releaseParamGrads(Arena& arena);
  // Takes b's flat (zeroed) from `arena` and makes its parameters' gradients views of it; give() hands it
  // back and leaves them without memory. takeFlat takes the flat alone, counted as `kind` (gathered values).
  void take(Bucket& b, Arena& arena);
  void takeFlat(Bucket& b, Arena& arena, MemoryKind kind);
  void give(Bucket& b, Arena& arena);
  void takeAll(Arena& arena);  // every flat, for the whole run
  // The parameters' gradients or values as views of `flat` (b's layout: ZeRO-3's gathered layer and its
  // gradients), or without memory.
  static void gradsAsViewsOf(Bucket& b, const Tensor& flat);
  // Moves b's parameters' values into a flat of their own laid out as b (counted as parameters) and makes
  // them views of it: a layout that updates or receives chunks of them in place. A deferred parameter's
  // initial values are drawn there (param_init.h).
  static Tensor moveValuesIntoFlat(Bucket& b, Arena& arena);
  static void valuesAsViewsOf(Bucket& b, const Tensor& flat);
  static void unbindGrads(Bucket& b);
  static void unbindValues(Bucket& b);
  // Chunk k of the parameters' current values, into dst (chunk elements; the padding zero): a deferred
  // parameter's initial values, drawn for the chunk alone (param_init.h).
  void chunkOfValues(const Bucket& b, int k, const Tensor& dst) const;
  // Notes p's gradient as final (copying it into the bucket when it is not a view of it); returns the
  // bucket when that completed it.
  Bucket* deposit(Param& p);
  // Copies the gradients not deposited yet (a layer that never reported, or overlap off).
  void depositRest(Bucket& b);
  void valuesToFlat(Bucket& b);    // every parameter's value -> flat
  void valuesFromFlat(Bucket& b);  // flat -> every parameter's value
  // The parts of the parameters that chunk k covers, named "<param>[from:to]": gradients at the matching
  // places of `grads` (chunk elements); values there in `values` when given (ZeRO-3's shard), else views
  // of the parameters' own values.
  std::vector<Param> pieces(const Bucket& b, int k, const Tensor& grads, const Tensor* values = nullptr) const;
  void startMicroBatch();  // nothing deposited, nothing launched
  // The index (in all()) of the bucket holding p.
  std::size_t bucketOf(const Param& p) const;
  // Whether a bucket holds p (a layer's parameters may be split between syncs: expert parallelism's two groups).
  bool holds(const Param& p) const { return where_.count(&p) > 0; }

 private:
  std::vector<Bucket> buckets_;
  std::unordered_map<const Param*, std::pair<std::size_t, std::size_t>> where_;  // param -> (bucket, slot)
};

// A view of n elements of t from element `offset`.
Tensor viewOf(const Tensor& t, std::size_t offset, std::size_t n);

// An owner's chunk of a reduce-scatter into the shard that accumulates it over micro-batches: copied for
// the step's first micro-batch, added after.
void accumulateInto(const Tensor& shard, const Tensor& reduced, bool first);

}  // namespace ts::wl
