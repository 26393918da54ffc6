// What every collective shares: its bus factor and backends as declared, the call it makes at a layout, and
// the backends' calls that a build without that library, or a collective declared without that backend,
// never reaches (each collective's file writes the real ones under its #ifdef).
#include "comm/collectives/collective.h"

#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"

namespace ts {

double busFactorOn(BusFactor f, int n) {
  const double ring = n > 1 ? static_cast<double>(n - 1) / n : 0.0;
  switch (f) {
    case BusFactor::kTwiceRing:
      return 2 * ring;
    case BusFactor::kRing:
      return ring;
    case BusFactor::kOne:
      return 1.0;
  }
  return 1.0;
}

const ExchangeMatrix& exchangeOf(const CollectiveArgs& a) { return a.exchange ? *a.exchange : uniformExchange(a.nranks); }

bool Collective::runsOn(BackendKind b) const {
  switch (b) {
    case BackendKind::kMpi:
      return facts_.onMpi;
    case BackendKind::kNccl:
      return facts_.onNccl;
    case BackendKind::kAuto:
      break;
  }
  throw Error(fmt::format("internal: {}: which backends run it is asked of an unresolved backend", name()));
}

std::string Collective::whyNotOn(BackendKind b) const {
  std::vector<std::string_view> names;
  for (const BackendKind k : {BackendKind::kMpi, BackendKind::kNccl})
    if (runsOn(k)) names.push_back(nameOf(k));
  return fmt::format("the {} backend does not run it (its backends: {})", nameOf(b), fmt::join(names, ", "));
}

CollectiveCall Collective::call(int, const void* send, void* recv, const CollectiveLayout& lay, const CollectiveArgs& a) const {
  return {this, send, recv, lay.count, a.dtype, a.redop, a.root, 0, a.mpiReduceScatter};
}

void Collective::launch(Communicator& c, int l, const void* send, void* recv, const CollectiveLayout& lay,
                        const CollectiveArgs& a) const {
  c.run(l, call(c.rank(l), send, recv, lay, a));
}

void Collective::runMpi(const MpiCall&, const CollectiveCall&) const {
  throw Error(fmt::format("internal: {} has no MPI call in this build or none at all", name()));
}

void Collective::startMpi(const MpiCall&, const CollectiveCall&, MpiRequest&, std::function<void()>&) const {
  throw Error(fmt::format("internal: {} has no nonblocking MPI call in this build or none at all", name()));
}

void Collective::runNccl(const NcclCall&, const CollectiveCall&) const {
  throw Error(fmt::format("internal: {} has no NCCL call in this build or none at all", name()));
}

}  // namespace ts
