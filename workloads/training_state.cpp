#include "workloads/training_state.h"

#include <unordered_map>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/parallel/part_sums.h"

namespace ts::wl {
namespace {

// Where n values from `offset` of a tensor (whole of `shape`, or a tensor-parallel slice) sit in the whole.
ckpt::Region regionOf(const std::vector<std::int64_t>& shape, const TensorSlice& slice, std::int64_t offset, std::int64_t n) {
  ckpt::Region r = slice.sliced()
                       ? ckpt::Region::sliced(slice.shape, slice.fullRows, slice.fullCols, slice.rows, slice.colFrom, slice.colTo)
                       : ckpt::Region::whole(shape);
  r.from = offset;
  r.to = offset + n;
  r.check("internal: the region of a tensor this rank holds");
  return r;
}

}  // namespace

// "dp" tags the replicas as a whole, whichever axes replicate (kReplicaAxes): a checkpoint's copies resume
// on any layout with as many replicas.
std::string replicaName(const std::string& tensor, int replica) { return fmt::format("{}@dp{}", tensor, replica); }

std::vector<StateTensor> stateTensors(GradientSync& sync, Optimizer& optimizer, const ModelPart& part, const Mesh& mesh,
                                      StateUse use) {
  const bool firstReplica = mesh.replicaIndex() == 0, firstTp = mesh.coordinate(GroupKind::kTp) == 0;
  // Each element once: the copies that count (part_sums.h).
  auto writes = [&](const Param& p) { return countsHere(p, mesh); };
  std::unordered_map<std::string, const Param*> whole;  // a piece's parameter, for its shape
  for (const Param* p : part.params) whole[p->name] = p;
  auto regionOfParam = [&](const Param& p) {
    const std::int64_t n = static_cast<std::int64_t>(p.value.numel());
    if (p.pieceOf.empty()) return regionOf(p.value.shape, p.slice, 0, n);
    const auto it = whole.find(p.pieceOf);
    if (it == whole.end())
      throw Error(fmt::format("internal: {} is a piece of {}, which this rank does not train", p.name, p.pieceOf));
    return regionOf(it->second->value.shape, p.slice, p.pieceOffset, n);
  };
  auto nameOf = [](const Param& p) { return p.pieceOf.empty() ? p.name : p.pieceOf; };

  // A data-parallel rank after the first writes its own copy where the replicas differ: what data-parallel
  // rank 0 writes of the tensor (its tensor-parallel share), under the replica's name.
  const int replica = mesh.replicaIndex();
  const GradientSync::Divergence differ = use == StateUse::kSave && replica > 0 ? sync.divergence() : GradientSync::Divergence{};
  std::vector<StateTensor> out;
  auto add = [&](const std::string& name, ckpt::StateKind kind, const ckpt::Region& region, Tensor* value, bool counted,
                 bool ownCopy) {
    if (use == StateUse::kLoad || counted) out.push_back({name, kind, region, value});
    if (ownCopy) out.push_back({replicaName(name, replica), ckpt::StateKind::kReplica, region, value});
  };
  // The values kept between steps (keptParams: the model's, or ZeRO-3's pieces); those written are the
  // updated ones (updateParams: the model's, or this rank's pieces, which the others do not hold).
  for (Param* p : use == StateUse::kLoad ? sync.keptParams() : sync.updateParams())
    add(nameOf(*p), ckpt::StateKind::kParameter, regionOfParam(*p), &p->value, writes(*p),
        differ.params && (p->tpShard() || firstTp));
  for (const Optimizer::State& s : optimizer.state())
    add(nameOf(*s.param) + "." + s.suffix, ckpt::StateKind::kOptimizer, regionOfParam(*s.param), s.tensor, writes(*s.param),
        differ.optimizer && (s.param->tpShard() || firstTp));
  for (Layer* l : part.layers) {
    std::vector<NamedTensor> buffers;
    l->buffers(buffers);
    for (const NamedTensor& b : buffers)
      add(b.name, ckpt::StateKind::kBuffer, regionOf(b.tensor->shape, b.slice, 0, static_cast<std::int64_t>(b.tensor->numel())),
          b.tensor, firstReplica && (b.slice.sliced() || firstTp), differ.buffers && (b.slice.sliced() || firstTp));
  }
  return out;
}

}  // namespace ts::wl
