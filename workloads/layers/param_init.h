#pragma once
// Materialising parameters: a parameter's initial values drawn for the part of it a rank keeps, with the values
// the whole tensor has there. A model built with deferred parameters (Arena::deferParameters) holds shapes and
// initialisations only; each layout then materialises what it keeps through these functions: the whole of its
// parameters (data parallel, ZeRO-1/2, a pipeline stage's, a tensor-parallel rank's slices) or its chunk of each
// (ZeRO-3), so no rank ever builds the whole model on the way to its share.
//
// Values are drawn on the host, in blocks of at most kInitBlock elements, and uploaded, so every device starts
// from the same weights and the host holds a block at a time, not a tensor.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "workloads/layers/layer.h"

namespace ts::wl {

inline constexpr std::size_t kInitBlock = std::size_t{1} << 20;  // elements

// Elements [from, from + dst.numel()) of p (its own elements, row-major: its slice's when sliced) as p.init
// draws them, into dst (device memory, any tensor or view of that many elements).
void drawInitialValues(const Param& p, std::size_t from, const Tensor& dst);
// The same on the host: n elements from `from` (a test's view, the reference the device copies come from).
std::vector<float> initialValues(const Param& p, std::size_t from, std::size_t n);

// What of a parameter is materialised whole: its value and gradient, its value alone (the gradient lives in a
// layout's buckets), or nothing (the layout draws its values into memory of its own: drawInitialValues).
enum class ParamParts { kValuesAndGradients, kValues, kNone };

// p's value (drawn whole) and its gradient (zeros) from the arena, as `parts` says; nothing for what p holds
// already.
void materialize(Param& p, Arena& arena, ParamParts parts = ParamParts::kValuesAndGradients);
void materialize(const std::vector<Param*>& params, Arena& arena, ParamParts parts = ParamParts::kValuesAndGradients);

}  // namespace ts::wl
