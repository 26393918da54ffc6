// Sharded initialisation (issue #39): a part of a parameter materialised alone (a ZeRO-3 chunk, a pipeline stage's
// layers, a tensor-parallel slice) holds exactly the elements the whole tensor has there, and the whole tensor is
// what it was before parameters were deferred: the reference below is the draw every layer made until then (the
// whole tensor's stream on the host, then the slice taken), kept here verbatim as the values to match.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "workloads/layers/linear.h"
#include "workloads/layers/param_init.h"
#include "workloads/models/model.h"
#include "workloads/parallel/buckets.h"

namespace ts::wl {
namespace {

double unit(std::mt19937_64& g) { return (static_cast<double>(g() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

std::vector<float> oldNormal(std::uint64_t seed, const std::string& name, double stddev, std::size_t n) {
  std::mt19937_64 g(seed ^ nameHash(name));
  std::vector<float> v(n);
  for (std::size_t i = 0; i < v.size(); i += 2) {
    const double r = std::sqrt(-2.0 * std::log(unit(g))), a = 6.283185307179586 * unit(g);
    v[i] = static_cast<float>(stddev * r * std::cos(a));
    if (i + 1 < v.size()) v[i + 1] = static_cast<float>(stddev * r * std::sin(a));
  }
  return v;
}

std::vector<float> oldUniform(std::uint64_t seed, const std::string& name, double bound, std::size_t n) {
  std::mt19937_64 g(seed ^ nameHash(name));
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>((2 * unit(g) - 1) * bound);
  return v;
}

std::vector<float> oldSliced(const std::vector<float>& full, const TensorSlice& s) {
  std::vector<std::int64_t> rows = s.rows;
  if (rows.empty())
    for (std::int64_t r = 0; r < s.fullRows; ++r) rows.push_back(r);
  std::vector<float> out;
  for (std::int64_t r : rows)
    for (std::int64_t c = s.colFrom; c < s.colTo; ++c) out.push_back(full[static_cast<std::size_t>(r * s.fullCols + c)]);
  return out;
}

std::vector<float> oldWhole(const Param& p) {
  const std::size_t n = p.value.numel();
  return p.init.kind == InitKind::kNormal ? oldNormal(p.init.seed, p.name, p.init.scale, n)
                                          : oldUniform(p.init.seed, p.name, p.init.scale, n);
}

std::vector<float> part(const std::vector<float>& v, std::size_t from, std::size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + n)};
}

TEST(ParamInit, AWholeTensorIsTheOldDrawNormalAndUniformOddSizes) {
  Arena a;
  for (const ParamInit init : {Init(7).normal(0.02), Init(7).uniform(0.3)}) {
    Param p = makeParam(a, "h.0.mlp.fc.weight", {13, 7}, true, init);
    EXPECT_EQ(p.value.toHost(), oldWhole(p));
    EXPECT_EQ(p.grad.toHost(), std::vector<float>(91, 0.0f));
  }
}

TEST(ParamInit, AnyRangeDrawnAloneIsThatRangeOfTheWholeTensorOddOffsetsAndPastABlock) {
  const std::size_t n = kInitBlock + 5;  // past one host block
  Arena a;
  a.deferParameters();
  for (const ParamInit init : {Init(3).normal(1.5), Init(3).uniform(2.0)}) {
    Param p = makeParam(a, "wte.weight", {static_cast<std::int64_t>(n)}, true, init);
    ASSERT_EQ(p.value.data, nullptr);  // deferred: no memory
    const std::vector<float> whole = oldWhole(p);
    for (const auto& [from, count] : std::vector<std::pair<std::size_t, std::size_t>>{
             {0, 1}, {1, 1}, {1, 2}, {2, 3}, {3, 4}, {kInitBlock - 1, 4}, {7, kInitBlock - 2}, {n - 1, 1}}) {
      EXPECT_EQ(initialValues(p, from, count), part(whole, from, count)) << from << " " << count;
      Arena on;
      const Tensor dst = on.tensor({static_cast<std::int64_t>(count)});
      drawInitialValues(p, from, dst);
      EXPECT_EQ(dst.toHost(), part(whole, from, count)) << from << " " << count;
    }
  }
}

TEST(ParamInit, AZeroThreeChunkOfDeferredParametersIsThoseElementsOfTheWholeModel) {
  // Three parameters in one bucket over 4 parts: 91 + 7 + 5 = 103 elements, padded to 104, chunks of 26 that start
  // at odd offsets inside the parameters.
  Arena deferred, whole;
  deferred.deferParameters();
  std::vector<Param> lazy, built;
  for (Arena* a : {&deferred, &whole}) {
    std::vector<Param>& ps = a == &deferred ? lazy : built;
    ps.push_back(makeParam(*a, "l.0.weight", {13, 7}, true, Init(11).normal(0.7)));
    ps.push_back(makeParam(*a, "l.0.bias", {7}, false, Init(11).uniform(0.4)));
    ps.push_back(makeParam(*a, "ln.weight", {5}, false, Init::constant(1.0f)));
  }
  std::vector<Param*> lazyOrder, builtOrder;
  for (std::size_t i = 0; i < lazy.size(); ++i) {
    lazyOrder.push_back(&lazy[i]);
    builtOrder.push_back(&built[i]);
  }
  Buckets fromRecipes(lazyOrder, 1e12, 4), fromValues(builtOrder, 1e12, 4);
  const Bucket &b = fromRecipes.all().front(), &c = fromValues.all().front();
  ASSERT_EQ(b.chunk, 26u);
  for (int k = 0; k < 4; ++k) {
    Arena out;
    const Tensor mine = out.tensor({26}), reference = out.tensor({26});
    fromRecipes.chunkOfValues(b, k, mine);
    fromValues.chunkOfValues(c, k, reference);
    EXPECT_EQ(mine.toHost(), reference.toHost()) << "chunk " << k;
  }
  EXPECT_EQ(built[0].value.toHost(), oldWhole(built[0]));
  EXPECT_EQ(built[1].value.toHost(), oldWhole(built[1]));
  EXPECT_EQ(built[2].value.toHost(), std::vector<float>(5, 1.0f));
  for (const Param& p : lazy) EXPECT_EQ(p.value.data, nullptr);  // nothing whole was built to draw the chunks
}

TEST(ParamInit, ATensorParallelSliceIsTheOldSliceOfTheWholeDrawRowsInAnyOrder) {
  Arena a;
  // Column-parallel with rows held out of order (the stream restarts for a row before the last one read).
  const TensorSplit rows{TensorSplit::kColumn, 1, 2, {9, 2, 5, 6, 0}};
  Linear column(a, Init(5), "fc", {.rows = 2, .in = 7, .out = 10, .split = rows});
  Linear row(a, Init(5), "proj", {.rows = 2, .in = 10, .out = 3, .initStd = 0.02, .split = {TensorSplit::kRow, 1, 2, {}}});
  std::vector<Param*> ps;
  column.params(ps);
  row.params(ps);
  ASSERT_EQ(ps.size(), 4u);
  const double bound = 1.0 / std::sqrt(7.0);
  EXPECT_EQ(ps[0]->value.toHost(), oldSliced(oldUniform(5, "fc.weight", bound, 70), ps[0]->slice));
  EXPECT_EQ(ps[1]->value.toHost(), oldSliced(oldUniform(5, "fc.bias", bound, 10), ps[1]->slice));
  EXPECT_EQ(ps[2]->value.toHost(), oldSliced(oldNormal(5, "proj.weight", 0.02, 30), ps[2]->slice));  // columns [5, 10)
  EXPECT_EQ(ps[3]->value.toHost(), std::vector<float>(3, 0.0f));                                     // GPT-2's zero bias
}

TEST(ParamInit, APipelineStageMaterialisedAloneHoldsTheWholeModelsValuesAndNothingElse) {
  ModelConfig c = modelPreset(ModelKind::kMlp, "tiny");
  c.inputShape = {12};
  c.classes = 3;
  c.depth = 3;
  c.width = 9;
  c.seed = 42;
  auto whole = makeModel(c, 2), staged = makeModel(c, 2, Device::hostCpu(), {}, ParamStorage::kDeferred);
  const std::vector<Layer*> layers = staged->layers();
  std::vector<Param*> stage;
  for (std::size_t i = 2; i < 5; ++i) layers[i]->params(stage);  // the second linear and its neighbours
  ASSERT_FALSE(stage.empty());
  materialize(stage, staged->arena());
  const std::vector<Param*> all = whole->params(), lazy = staged->params();
  std::size_t held = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i]->value.toHost(), oldWhole(*all[i])) << all[i]->name;  // the model's values are the old ones
    if (!lazy[i]->value.data) continue;
    ++held;
    EXPECT_EQ(lazy[i]->value.toHost(), all[i]->value.toHost()) << lazy[i]->name;
  }
  EXPECT_EQ(held, stage.size());
}

}  // namespace
}  // namespace ts::wl
