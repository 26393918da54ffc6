#pragma once
// The --timeout every measuring subcommand starts with (links, collectives, kernels, train), one figure for all
// so that a hang is called after the same wait whatever ran. 600 s: the longest any of them had (train's), so
// that no run that ended before is stopped now.
namespace ts {
inline constexpr double kDefaultTimeoutS = 600;
}
