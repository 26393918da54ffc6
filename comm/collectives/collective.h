#pragma once
// One collective = one small file answering four questions (as nccl-tests does): how many bytes a size
// moves and in what buffers (layout), the bus-bandwidth factor, how inputs are filled, and what every
// output element must be. A shared driver (bench/collectives_runner) does the rest.
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "comm/communicator.h"

namespace ts {

// Buffer geometry of one collective at one size, in elements of the dtype.
struct CollectiveLayout {
  std::size_t count = 0;      // the op's count argument (per rank, as NCCL's API takes it); 0 = size too small
  std::size_t sendElems = 0;  // this rank's input buffer
  std::size_t recvElems = 0;  // this rank's output buffer
  std::size_t bytes = 0;      // bytes of the record: the whole buffer for gather-type ops (docs/architecture.md "Formulas")
};

struct CollectiveArgs {
  DType dtype = DType::kFloat32;
  RedOp redop = RedOp::kSum;
  int root = 0;
  int nranks = 1;
};

// Where the single buffer of an in-place call holds the input and the output.
struct InPlaceGeometry {
  bool outputInsideInput = false;  // false: send = recv + offset; true: recv = send + offset
  std::size_t offsetElems = 0;
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string_view name() const = 0;
  virtual CollectiveKind kind() const = 0;
  virtual bool reduces() const { return false; }  // takes --redop
  virtual bool rooted() const { return false; }   // takes --root

  // The layout for a requested size, rounded down to what the op can divide among nranks.
  virtual CollectiveLayout layout(std::size_t bytes, std::size_t eltSize, int nranks) const = 0;
  // busbw = algbw * busFactor: the fraction of the data each rank's busiest link carries, so that the
  // figure compares with the hardware's link bandwidth whatever the rank count.
  virtual double busFactor(int nranks) const = 0;
  // Element i of `rank`'s input buffer.
  virtual double input(const CollectiveArgs& a, int rank, std::size_t i) const = 0;
  // Element i of `rank`'s output buffer after the op; nullopt where the op defines nothing (non-root ranks).
  virtual std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const = 0;
  virtual InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const = 0;
  virtual void launch(Communicator& c, int l, const void* send, void* recv, const CollectiveLayout& lay,
                      const CollectiveArgs& a) const = 0;
};

const std::vector<const Collective*>& allCollectives();
// By name ("all_reduce", ...); UsageError listing the known names otherwise.
const Collective& findCollective(std::string_view name);

// The collectives, one per file.
const Collective& allReduceCollective();
const Collective& allGatherCollective();
const Collective& reduceScatterCollective();
const Collective& broadcastCollective();
const Collective& reduceCollective();
const Collective& allToAllCollective();
const Collective& gatherCollective();
const Collective& scatterCollective();
const Collective& sendRecvCollective();

}  // namespace ts

namespace ts {

// The two buffer shapes the collectives share.
// Every rank sends and receives `count` elements (all_reduce, broadcast, reduce, send/recv).
inline CollectiveLayout flatLayout(std::size_t bytes, std::size_t eltSize) {
  const std::size_t count = bytes / eltSize;
  return {count, count, count, count * eltSize};
}
// A whole buffer of nranks blocks of `count` elements, on the send side, the receive side, or both
// (all_gather, reduce_scatter, all_to_all, gather, scatter); the record's bytes are the whole buffer.
inline CollectiveLayout blockedLayout(std::size_t bytes, std::size_t eltSize, int nranks, bool wholeSend, bool wholeRecv) {
  const std::size_t n = static_cast<std::size_t>(nranks);
  const std::size_t count = bytes / (eltSize * n);
  return {count, wholeSend ? count * n : count, wholeRecv ? count * n : count, count * n * eltSize};
}
inline double ringFactor(int n) { return n > 1 ? static_cast<double>(n - 1) / n : 0.0; }

}  // namespace ts
