#pragma once
// One collective = one small file answering four questions (as nccl-tests does): how many bytes a size
// moves and in what buffers (shape, hence layout), the bus-bandwidth factor, how inputs are filled, and
// what every output element must be. A shared driver (bench/collectives/collectives_runner) does the rest.
// registry.cpp is the one list of them: everything else that names the collectives (--ops, the tracker's
// records, the schema's enum, the report's order) derives from it or is tested against it.
#include <cstddef>
#include <optional>
#include <string>
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

// Which of the op's buffers hold one block of `count` elements per rank; the others hold one block.
enum class BufferShape {
  kFlat,       // every rank sends and receives `count` (all_reduce, broadcast, reduce, sendrecv)
  kGathered,   // the receive buffer holds nranks blocks (all_gather, gather)
  kScattered,  // the send buffer holds nranks blocks (reduce_scatter, scatter)
  kExchanged,  // both do (alltoall)
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

  virtual BufferShape shape() const = 0;
  // The layout for a requested size, rounded down to what the op can divide among nranks.
  CollectiveLayout layout(std::size_t bytes, std::size_t eltSize, int nranks) const;
  // The layout of a call with this count argument (what a training step issues): its bytes are those the
  // sweep records for the same call, so the two compare.
  CollectiveLayout layoutOfCount(std::size_t count, std::size_t eltSize, int nranks) const;
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

// The registry (registry.cpp), in its order: that of `--ops all`, the help and the report.
const std::vector<const Collective*>& allCollectives();
// By name ("all_reduce", ...); UsageError listing the known names otherwise.
const Collective& findCollective(std::string_view name);
// The collective a Communicator call of this kind runs.
const Collective& collectiveOf(CollectiveKind kind);
// "all_reduce, all_gather, ..., sendrecv": the registry's names in order, for help texts and errors.
std::string collectiveNameList();

inline double ringFactor(int n) { return n > 1 ? static_cast<double>(n - 1) / n : 0.0; }

}  // namespace ts
