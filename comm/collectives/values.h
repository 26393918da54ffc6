#pragma once
// Input values chosen so that every reduction is exact in every dtype and any order of operations:
// small non-negative integers (sums stay below 2^8 for bfloat16 up to 85 ranks, products are powers of
// two that stay small, min/max pick among integers). Values differ by rank and index, so data that lands
// in the wrong place, or from the wrong rank, fails the check.
#include <cstddef>

#include "base/dtype.h"

namespace ts {

// The value rank `rank` contributes at element i to a reduction with `op`.
double reductionInput(RedOp op, int rank, std::size_t i);
// The value at element i of `rank`'s buffer for ops that only move data.
double movedInput(int rank, std::size_t i);
// op applied over ranks 0..nranks-1 of reductionInput(op, r, i); avg as NCCL defines it for the dtype
// (integer division for integer types).
double reducedValue(RedOp op, DType t, int nranks, std::size_t i);

}  // namespace ts
