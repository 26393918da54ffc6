#pragma once
// The GPU tests of `trainscope links`: host<->device (pinned and pageable), device-local copies, every
// GPU pair through the copy engines and the SMs (one direction and both, P2P on and off), and latencies
// (small copies and a pointer chase). On each host, the first process tests all the GPUs it sees while
// the others wait, so that no two tests share a link.
#include <cstddef>
#include <functional>

namespace ts {

struct LinksOptions;
struct LinkMeasurement;
struct RunContext;

// UsageError when --gpus names a GPU this host does not have (checked before any test runs).
void validateGpuSelection(const LinksOptions& o);

// Returns the number of tests whose payload check failed; `emit` receives each measurement on the process
// that made it. Prints a note and returns 0 where there is no GPU or no CUDA.
std::size_t runGpuLinks(const LinksOptions& o, RunContext& ctx, const std::function<void(const LinkMeasurement&)>& emit);

}  // namespace ts
