#pragma once
// `--trace DIR`: every rank's spans as Chrome trace JSON (Perfetto, chrome://tracing, Holistic Trace
// Analysis: `distributedInfo.rank` is set, steps named ProfilerStep#N as PyTorch's profiler names them),
// DIR/rank-<r>.json, and DIR/merged/merged.json with every rank on one time axis (pid = rank; in a directory of
// its own, since HTA reads every JSON file of DIR as a rank's). Times are microseconds since a barrier all ranks left together at
// the start: the ranks' clocks are aligned to that barrier's exit, good to its exit skew (microseconds on one host, tens on a
// network), which trace.json's "clock" entry states. On a GPU (a build with CUPTI), each process's kernels, memcpys and memsets
// are added on tracks of their own (tid 100 + stream, category "kernel"/"memcpy"/"memset"), its CUDA runtime calls on tid 2
// ("cuda_runtime"; driver calls that launched work themselves, as NCCL's do, "cuda_driver"), with flow arrows from each launch to
// what it launched (and its name in the work's args.launch); the device-to-host clock offset and its uncertainty, and the records
// CUPTI dropped or left incomplete, are stated in "clock".
//
// Categories (`cat`) are Kineto's, so that HTA and Perfetto class our spans as they class PyTorch's: a step, a phase
// or a wait is a "user_annotation" (a record_function range), the host's compute and each collective a "cpu_op" (as
// aten ops and gloo's collectives are on a CPU trace), the device's work "kernel"/"gpu_memcpy"/"gpu_memset". What the
// span is to our analysis (kernels/trace.h's trace::Role: "compute", "communication", ...) is its args.role. The file
// says which format it is in `trainscope.format` (reports/schema/trace-v2.schema.json).
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "kernels/trace.h"

namespace ts {

class Bootstrap;
namespace cuda {
class ActivityTrace;
}

// A process group as Kineto describes it (distributedInfo.pg_config) and names it on each collective's span
// ("Process Group Name", "Process Group Ranks"): the spans whose args.group is `name` (workloads/parallel/process_group.h's
// traceName).
struct TraceGroup {
  std::string name;        // "dp0"
  std::string desc;        // "dp" (Kineto's "Process Group Description")
  std::vector<int> ranks;  // global ranks, in the group's rank order
};

// Kineto's category (`cat`) for a span of that role, which HTA classes spans by (the trace schema's rules).
std::string_view kinetoCategory(trace::Role role);

// The name of each rank's main thread on the host (its thread_name): what `trainscope analyze` finds it by, whatever
// its tid (the trace schema's $defs.mainThread; a unit test holds the two together).
inline constexpr std::string_view kMainThreadName = "main";

class TraceFiles {
 public:
  // Collective: every process calls it (and finish) with the same directory.
  TraceFiles(Bootstrap& boot, std::string dir, int worldSize);
  ~TraceFiles();
  // Stops recording and writes the files; collective. `about` (this rank's place in the run, e.g. its
  // data/tensor/pipeline coordinates) goes into the file's "trainscope" entry beside `what`; `groups` (this rank's
  // process groups, the world's is added) and `backend` (none when unknown) into distributedInfo.
  void finish(const std::string& what, const nlohmann::json& about = nlohmann::json::object(),
              const std::vector<TraceGroup>& groups = {}, std::optional<BackendKind> backend = std::nullopt);

 private:
  Bootstrap& boot_;
  std::string dir_;
  int world_;
  double originUs_ = 0;
  std::unique_ptr<cuda::ActivityTrace> device_;  // CUPTI's kernel-level spans, where a GPU and CUPTI are present
};

}  // namespace ts
