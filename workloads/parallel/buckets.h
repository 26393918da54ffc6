#pragma once
// Gradient buckets: the parameters in backward order (the reverse of the model's order, so the first
// bucket fills first) packed into flat buffers of about --bucket-mb (a larger parameter is a bucket of
// its own), each padded to a multiple of `parts` so that it splits into equal chunks: the blocks of a
// reduce-scatter and all-gather, or the shards of the parameter servers. Chunk k of every bucket
// belongs to part k.
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
  Tensor flat;  // padded elements, on the model's device
  std::size_t ready = 0;
  bool launched = false;
  std::size_t chunk = 0;  // padded / parts
  float* chunkData(int k) const { return flat.data + static_cast<std::size_t>(k) * chunk; }
};

class Buckets {
 public:
  Buckets(const std::vector<Param*>& modelOrder, double bucketMb, int parts, Arena& arena);
  std::vector<Bucket>& all() { return buckets_; }
  // Copies p's gradient into its bucket; returns the bucket when that completed it.
  Bucket* deposit(Param& p);
  // Copies the gradients not deposited yet (a layer that never reported, or overlap off).
  void depositRest(Bucket& b);
  void gradsFromFlat(Bucket& b);   // flat -> every parameter's gradient
  void valuesToFlat(Bucket& b);    // every parameter's value -> flat
  void valuesFromFlat(Bucket& b);  // flat -> every parameter's value
  // The parts of the parameters that chunk k covers, named "<param>[from:to]": gradients at the matching
  // places of `grads` (chunk elements); values there in `values` when given (ZeRO-3's shard), else views
  // of the parameters' own values.
  std::vector<Param> pieces(const Bucket& b, int k, const Tensor& grads, const Tensor* values = nullptr) const;
  void startMicroBatch();  // nothing deposited, nothing launched

 private:
  std::vector<Bucket> buckets_;
  std::unordered_map<const Param*, std::pair<std::size_t, std::size_t>> where_;  // param -> (bucket, slot)
};

// A view of n elements of t from element `offset`.
Tensor viewOf(const Tensor& t, std::size_t offset, std::size_t n);

}  // namespace ts::wl
