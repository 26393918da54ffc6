#pragma once
// Counter-based random numbers: every random value the data sources use is a pure function of a key
// (seed, stream tag, sample index) and a position in that key's stream, never of how many values were
// drawn before. That is what makes a batch a pure function of its step, so that a resumed run, a run on
// another number of ranks and a rerun all see the same bytes.
//
// Mixing is the splitmix64 finaliser (Steele, Lea and Flood 2014), which passes BigCrush as a stream;
// keys are folded in with it one word at a time.
#include <cstdint>

namespace ts::data {

// A bijective 64-bit mix: nearby inputs give unrelated outputs.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Folds words into one key, left to right: hashKey(seed, tag, index). Order matters.
template <typename... Words>
constexpr std::uint64_t hashKey(Words... words) {
  std::uint64_t h = 0x243f6a8885a308d3ULL;  // any fixed start; the digits of pi
  ((h = mix64(h ^ mix64(static_cast<std::uint64_t>(words) + 0x9e3779b97f4a7c15ULL))), ...);
  return h;
}

// Tags that separate the streams of one seed (teacher weights vs. sample values vs. sample order).
enum class Stream : std::uint64_t { kSampleOrder = 1, kFeatures = 2, kTeacher = 3, kTokens = 4, kSuccessor = 5, kAugment = 6 };

// The stream of one key: value i is mix64(start + (i+1)·golden ratio) — splitmix64 started at a hash of the key.
class CounterRng {
 public:
  explicit constexpr CounterRng(std::uint64_t key) : state_(mix64(key)) {}
  constexpr std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) (n > 0); the modulo bias is below 2^-40 for every n this code uses.
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // Approximately N(0, 1): the sum of four 16-bit uniforms, centred and scaled to unit variance
  // (Irwin–Hall, |x| < 3.47). One mix per value, so generating inputs never holds the loader up;
  // the exact shape of the tails does not matter for a learnable synthetic task.
  float normal() {
    const std::uint64_t r = next();
    const double s = static_cast<double>(r & 0xffff) + static_cast<double>((r >> 16) & 0xffff) +
                     static_cast<double>((r >> 32) & 0xffff) + static_cast<double>(r >> 48);
    // Each term is uniform on {0..65535}: mean 32767.5, variance (65536^2 - 1)/12.
    constexpr double kMean = 4 * 32767.5;
    constexpr double kInvStd = 1.0 / 37837.227237206;  // 1 / sqrt(4 (65536^2 - 1) / 12)
    return static_cast<float>((s - kMean) * kInvStd);
  }

 private:
  std::uint64_t state_;
};

}  // namespace ts::data
