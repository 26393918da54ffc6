#pragma once
// The console table of `trainscope kernels`: one row per op and shape, from its record.
#include <string>
#include <string_view>

#include "bench/kernels/kernel_record.h"

namespace ts {

std::string kernelsTableHeader();
std::string kernelsTableRow(const KernelRecord& r);
// An op without an implementation for the backend at that shape.
std::string kernelsSkippedRow(std::string_view op, const std::string& shape);
// "M=128 N=384 K=128": the dimensions in the shape's own order.
std::string dimsText(const KernelShape& s);

}  // namespace ts
