// The registry (kernels/specs/registry.cpp) is the one list of kernel ops, built from the result schema's
// enum (kernels/CMakeLists.txt): one name each, each op's file answering to the name it is listed under,
// and what reads it (the --ops help, the errors) says the same, in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands.h"
#include "kernels/specs/kernel_op.h"
#include "test_support.h"

namespace ts {
namespace {

std::vector<std::string> kernelRegistryNames() {
  std::vector<std::string> names;
  for (const KernelOp* op : allKernelOps()) names.emplace_back(op->name());
  return names;
}

const Subcommand& kernelsCommand() {
  const auto& all = subcommands();
  const auto cmd = std::find_if(all.begin(), all.end(), [](const Subcommand& s) { return s.name == "kernels"; });
  if (cmd == all.end()) throw std::runtime_error("no kernels subcommand");
  return *cmd;
}

}  // namespace

TEST(KernelRegistry, SchemaEnumIsTheRegistryInOrder) {
  std::ifstream in(TRAINSCOPE_SOURCE_DIR "/reports/schema/result-v1.schema.json");
  ASSERT_TRUE(in) << "cannot read the result schema";
  const nlohmann::json schema = nlohmann::json::parse(in);
  const auto schemaOps = schema.at("$defs").at("kernel").at("properties").at("op").at("enum").get<std::vector<std::string>>();
  EXPECT_EQ(schemaOps, kernelRegistryNames())
      << "reports/schema/result-v1.schema.json's kernel op enum must list the registry, in its order";
}

TEST(KernelRegistry, EachOpAnswersToTheNameItIsListedUnder) {
  // An op file whose name() says other than its TS_DEFINE_KERNEL_OP would record ops the schema refuses.
  const std::vector<std::pair<std::string, const KernelOp*>> listed = {
#define TS_KERNEL_OP(name) {#name, &kernel_ops::name()},
#include "kernels/specs/kernel_op_list.inc"
#undef TS_KERNEL_OP
  };
  std::set<std::string> names;
  for (const auto& [name, op] : listed) {
    EXPECT_EQ(op->name(), name);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(&findKernelOp(name), op) << name;
  }
  EXPECT_EQ(names.size(), allKernelOps().size());
}

TEST(KernelRegistry, NameListAndErrorsListTheRegistry) {
  std::string joined;
  for (const auto& n : kernelRegistryNames()) joined += (joined.empty() ? "" : ", ") + n;
  EXPECT_EQ(kernelOpNameList(), joined);
  EXPECT_EQ(test::usageError([] { findKernelOp("conv9"); }),
            "--ops: unknown kernel 'conv9' (all, or a comma list of " + joined + ")");
}

TEST(KernelRegistry, OpsHelpAndDescriptionListTheRegistry) {
  const Subcommand& cmd = kernelsCommand();
  const auto ops = std::find_if(cmd.options.begin(), cmd.options.end(), [](const OptionInfo& o) { return o.names == "--ops"; });
  ASSERT_NE(ops, cmd.options.end());
  EXPECT_EQ(ops->help, "all, or a comma list of " + kernelOpNameList());
  EXPECT_NE(cmd.description.find(kernelOpNameList()), std::string::npos) << cmd.description;
}

}  // namespace ts
