// What every collective shares: the call it makes at a layout, and the backends' calls a build without
// that library never reaches (each collective's file writes the real ones under its #ifdef).
#include "comm/collectives/collective.h"

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

CollectiveCall Collective::call(int, const void* send, void* recv, const CollectiveLayout& lay, const CollectiveArgs& a) const {
  return {this, send, recv, lay.count, a.dtype, a.redop, a.root, 0, a.mpiReduceScatter};
}

void Collective::launch(Communicator& c, int l, const void* send, void* recv, const CollectiveLayout& lay,
                        const CollectiveArgs& a) const {
  c.run(l, call(c.rank(l), send, recv, lay, a));
}

void Collective::runMpi(const MpiCall&, const CollectiveCall&) const {
  throw Error(fmt::format("internal: {} has no MPI call in this build", name()));
}

bool Collective::startMpi(const MpiCall&, const CollectiveCall&, MpiRequest&, std::function<void()>&) const { return false; }

void Collective::runNccl(const NcclCall&, const CollectiveCall&) const {
  throw Error(fmt::format("internal: {} has no NCCL call in this build", name()));
}

}  // namespace ts
