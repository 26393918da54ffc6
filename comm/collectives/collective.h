#pragma once
// One collective = its declaration and one small file. The declaration is its entry in the result
// schema's collective op (reports/schema/result-v1.schema.json, the op's oneOf): its name, buffer shape,
// bus factor, whether it reduces or takes a root, and the backends that run it. The build compiles
// comm/collectives/<name>.cpp for each entry, in that order, with those facts (CollectiveFacts, from the
// generated collective_list.inc), and the reports and tests read the same entries
// (reports/common/collective_facts.py); --ops, its help, the tracker's records and the report's order follow.
// The file (as nccl-tests has one per collective) says how inputs are filled, what every output element
// must be, and the MPI and NCCL calls that run it. A shared driver (bench/collectives/collectives_runner)
// does the rest.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "comm/collectives/exchange_matrix.h"
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
  kExchanged,  // both do (alltoall; alltoallv, whose blocks are the per-pair counts of an ExchangeMatrix)
};

// The backends' handles on one rank, for the calls each collective makes itself (comm/mpi/mpi_call.h,
// comm/nccl/nccl_call.h); declared only, so that this header needs neither library.
struct MpiCall;
struct MpiRequest;
struct NcclCall;

// busbw = algbw x this factor on n ranks: the share of the data each rank's busiest link carries, so that
// the figure compares with the hardware's link bandwidth whatever the rank count (nccl-tests' factors). The
// schema's x-bus-factor spells each as its formula.
enum class BusFactor {
  kTwiceRing,  // 2(n-1)/n: a ring reduce-scatter then all-gather (all_reduce)
  kRing,       // (n-1)/n: all but this rank's block crosses a link (the gathered, scattered and exchanged ops)
  kOne,        // 1: each byte crosses each link once (broadcast, reduce, sendrecv)
};
double busFactorOn(BusFactor f, int nranks);

// What the schema declares of one collective, as the build compiles it in (collective_list.inc).
struct CollectiveFacts {
  std::string_view name;
  BufferShape shape;
  BusFactor busFactor;
  bool reduces;  // takes --redop
  bool rooted;   // takes --root
  bool onMpi;    // the backends that run it (x-backends)
  bool onNccl;
};

struct CollectiveArgs {
  DType dtype = DType::kFloat32;
  RedOp redop = RedOp::kSum;
  int root = 0;
  int nranks = 1;
  MpiReduceScatter mpiReduceScatter = kDefaultMpiReduceScatter;  // the call reduce_scatter makes on MPI
  // The per-pair counts of an op that takes them (alltoallv, --alltoallv-counts); none: uniform, alltoall's exchange.
  std::shared_ptr<const ExchangeMatrix> exchange = nullptr;
};

// The pattern of an op with per-pair counts: the args' matrix, or the uniform one of their ranks.
const ExchangeMatrix& exchangeOf(const CollectiveArgs& a);

// Where the single buffer of an in-place call holds the input and the output.
struct InPlaceGeometry {
  bool outputInsideInput = false;  // false: send = recv + offset; true: recv = send + offset
  std::size_t offsetElems = 0;
};

class Collective {
 public:
  explicit Collective(const CollectiveFacts& facts) : facts_(facts) {}
  virtual ~Collective() = default;
  const CollectiveFacts& facts() const { return facts_; }
  std::string_view name() const { return facts_.name; }
  bool reduces() const { return facts_.reduces; }
  bool rooted() const { return facts_.rooted; }
  BufferShape shape() const { return facts_.shape; }
  // Whether the declaration names this backend (a resolved one: mpi or nccl).
  bool runsOn(BackendKind b) const;
  // "the nccl backend does not run it (its backends: mpi)": why not, for a backend it does not run on.
  std::string whyNotOn(BackendKind b) const;

  // The layout for a requested size, rounded down to what the op can divide among nranks. `exchange`: the per-pair
  // counts of an op that takes them (perPairCounts; none: uniform), whose busiest rank's buffer is the size; the other
  // ops ignore it.
  CollectiveLayout layout(std::size_t bytes, std::size_t eltSize, int nranks, const ExchangeMatrix* exchange = nullptr) const;
  // The layout of a call with this count argument (what a training step issues): its bytes are those the
  // sweep records for the same call, so the two compare.
  CollectiveLayout layoutOfCount(std::size_t count, std::size_t eltSize, int nranks,
                                 const ExchangeMatrix* exchange = nullptr) const;
  // Whether the op's blocks are per-pair counts (CollectiveArgs::exchange): alltoallv.
  virtual bool perPairCounts() const { return false; }
  // busbw = algbw * busFactor (BusFactor).
  double busFactor(int nranks) const { return busFactorOn(facts_.busFactor, nranks); }
  // Element i of `rank`'s input buffer.
  virtual double input(const CollectiveArgs& a, int rank, std::size_t i) const = 0;
  // Element i of `rank`'s output buffer after the op; nullopt where the op defines nothing (non-root ranks).
  virtual std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const = 0;
  virtual InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const = 0;
  // The call this collective makes at this layout for `rank` (the count, root and, for sendrecv, peers).
  virtual CollectiveCall call(int rank, const void* send, void* recv, const CollectiveLayout& lay, const CollectiveArgs& a) const;
  // Runs call(...) on local rank l of `c`.
  void launch(Communicator& c, int l, const void* send, void* recv, const CollectiveLayout& lay, const CollectiveArgs& a) const;

  // The backends' calls, each written in the collective's own file (under TRAINSCOPE_HAVE_MPI and
  // TRAINSCOPE_HAVE_NCCL; these defaults, for a build without the library, are never reached).
  // The blocking MPI call, with NCCL's buffer conventions (communicator.h): runMpi, then finishMpi.
  virtual void runMpi(const MpiCall& m, const CollectiveCall& c) const;
  // Local work that NCCL's conventions need once the MPI call has returned and that moves nothing between
  // ranks (the root's copy of an out-of-place broadcast: MPI_Bcast has one buffer). The sweep's timed loop
  // runs it after its clock has stopped, as OSU times MPI_Bcast alone.
  virtual void finishMpi(const MpiCall&, const CollectiveCall&) const {}
  // Whether the collective has a nonblocking MPI form (startMpi); where not, Communicator::start runs it blocking and
  // `collectives --issue nonblocking` leaves it out.
  virtual bool startsOnMpi() const { return false; }
  // Issues the nonblocking MPI form (where startsOnMpi). `finish` is what must run once the request completes, if
  // anything: the local work of NCCL's conventions (finishMpi's, a moved in-place block, an average's division).
  virtual void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& request, std::function<void()>& finish) const;
  // The NCCL call, on the local rank's stream.
  virtual void runNccl(const NcclCall& n, const CollectiveCall& c) const;
  // Whether NCCL defines the op with send == recv (its in-place form).
  virtual bool ncclInPlace() const { return true; }
  // Whether the sweep measures the op in place on MPI (MPI_IN_PLACE).
  virtual bool mpiInPlace() const { return true; }

 private:
  const CollectiveFacts facts_;
};

// The registry (registry.cpp), in its order: that of `--ops all`, the help and the report.
const std::vector<const Collective*>& allCollectives();
// By name ("all_reduce", ...); UsageError listing the known names otherwise.
const Collective& findCollective(std::string_view name);
// The registry's names in order, joined by ", ", for help texts and errors.
std::string collectiveNameList();

// Each collective's declaration, by name (collective_facts::all_reduce): one per entry of the generated list.
namespace collective_facts {
#define TS_COLLECTIVE(name, ...) inline constexpr CollectiveFacts name{#name, __VA_ARGS__};
#include "comm/collectives/collective_list.inc"
#undef TS_COLLECTIVE
}  // namespace collective_facts

// Each collective by name, as code calls it (collectives::all_reduce()): one accessor per entry of the
// generated list, defined in the collective's file by TS_DEFINE_COLLECTIVE.
namespace collectives {
#define TS_COLLECTIVE(name, ...) const Collective& name();
#include "comm/collectives/collective_list.inc"
#undef TS_COLLECTIVE
}  // namespace collectives

// In comm/collectives/<name>.cpp, after the class (which takes its facts: `using Collective::Collective;`):
// the accessor the registry and callers use, the collective built with its declaration.
#define TS_DEFINE_COLLECTIVE(name, Class)         \
  const Collective& collectives::name() {         \
    static const Class c(collective_facts::name); \
    return c;                                     \
  }

}  // namespace ts
