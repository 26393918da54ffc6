#pragma once
// Where a piece of a checkpoint's tensor belongs in the whole (one-device) tensor, so that a checkpoint
// written under one layout loads into another (torch.distributed.checkpoint's chunk metadata, for the
// shapes trainscope's layouts cut):
//   the whole tensor, of `shape`, seen as a [rows, cols] matrix;
//   a tensor-parallel slice of it: some of its rows (runs, in the order the slice holds them; all when
//   none are named) and the columns [colFrom, colTo);
//   a sharded layout's piece (ZeRO, the parameter server): the elements [from, to) of that slice, row-major.
// A tensor that is neither sliced nor sharded is one row of all its elements.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts::ckpt {

struct Region {
  std::vector<std::int64_t> shape;
  std::int64_t rows = 1, cols = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> rowRuns;  // [begin, end) runs; empty: every row in order
  std::int64_t colFrom = 0, colTo = 0;
  std::int64_t from = 0, to = 0;

  // All of a tensor of this shape.
  static Region whole(std::vector<std::int64_t> shape);
  // All of a tensor-parallel slice: the tensor of `shape` seen as [rows, cols], the rows held (all when
  // none are listed) and the columns [colFrom, colTo).
  static Region sliced(std::vector<std::int64_t> shape, std::int64_t rows, std::int64_t cols,
                       const std::vector<std::int64_t>& heldRows, std::int64_t colFrom, std::int64_t colTo);
  // Rows held as listed (a tensor-parallel slice), packed into runs.
  static std::vector<std::pair<std::int64_t, std::int64_t>> runsOf(const std::vector<std::int64_t>& rows);

  std::int64_t wholeElements() const;  // the product of shape
  std::int64_t sliceRows() const;
  std::int64_t sliceElements() const { return sliceRows() * (colTo - colFrom); }
  std::int64_t elements() const { return to - from; }
  // Same tensor-parallel slice (the element ranges may differ).
  bool sameSlice(const Region& o) const;
  // Covers the whole tensor in its own order (what a PyTorch reader sees as the tensor itself).
  bool isWhole() const;
  // Calls run(offsetInPiece, offsetInWhole, n) for each stretch of the piece's elements that is contiguous
  // in both, in order.
  void forEachRun(const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& run) const;

  // {"shape", "view": [rows, cols], "rows": [[b, e], ...] (only when sliced by rows), "cols", "elements"}
  nlohmann::json toJson() const;
  // Parsed and checked: UsageError "ORIGIN: ..." for anything missing, inconsistent or out of range.
  static Region fromJson(const nlohmann::json& j, const std::string& origin);
  // UsageError "ORIGIN: ..." unless every field is consistent with the others.
  void check(const std::string& origin) const;
};

}  // namespace ts::ckpt
