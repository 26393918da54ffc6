#include "workloads/layers/feed_forward.h"

namespace ts::wl {

FeedForward::FeedForward(Arena& arena, const Init& init, const std::string& name, const FeedForwardConfig& c)
    : fc_(arena, init, name + ".fc",
          {.rows = c.rows,
           .in = c.channels,
           .out = 4 * c.channels,
           .initStd = 0.02,
           .split = TensorSplit{TensorSplit::kColumn, c.tpRank, c.tpRanks, {}}}),
      gelu_(arena, ActivationKind::kGelu, {c.rows, 4 * c.channels / c.tpRanks}),
      proj_(arena, init, name + ".proj",
            {.rows = c.rows,
             .in = 4 * c.channels,
             .out = c.channels,
             .initStd = c.projStd,
             .split = TensorSplit{TensorSplit::kRow, c.tpRank, c.tpRanks, {}}}) {}

}  // namespace ts::wl
