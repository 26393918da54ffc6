#pragma once
// --sync ps-async's side of training: a server updates its shard at each clock once every worker's gradient is in.
// The steps of a dedicated server and the end of a worker's step are Trainer's (ps_async_steps.cpp defines them).
#include "workloads/device.h"
#include "workloads/optim/optimizer.h"
#include "workloads/optim/schedule.h"
#include "workloads/parallel/async_ps.h"

namespace ts::wl {

// A ps-async server updates its shard when a clock's gradients are all in, at that step's rate (schedule and
// device must outlive ps).
void installPsAsyncUpdate(AsyncPsSync& ps, Optimizer& optimizer, const Schedule& schedule, Device& device);

}  // namespace ts::wl
