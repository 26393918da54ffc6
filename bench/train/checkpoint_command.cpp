// `trainscope checkpoint consolidate CKPT -o FILE [--optimizer]`: a checkpoint of any layout (each rank's
// shard, workloads/checkpoint/checkpoint.h) as one safetensors file of whole tensors by name, what
// PyTorch's load_state_dict takes (safetensors.torch.load_file).
#include <cstdio>

#include "base/terminal_text.h"
#include "bench/commands.h"
#include "workloads/checkpoint/checkpoint.h"

namespace ts {

Subcommand checkpointSubcommand() {
  return {"checkpoint",
          "Work on a training checkpoint: consolidate CKPT -o FILE writes the whole model as one safetensors file",
          [](CLI::App& app) -> Action {
            app.require_subcommand(1);
            CLI::App* c = app.add_subcommand(
                "consolidate",
                "Write the model (parameters and buffers, whole, by name) of a checkpoint of any layout as one file");
            auto path = std::make_shared<std::string>();
            auto out = std::make_shared<std::string>();
            auto optimizer = std::make_shared<bool>(false);
            c->add_option("checkpoint", *path, "A checkpoint directory (its latest step) or one step directory")->required();
            c->add_option("-o,--out", *out, "The safetensors file to write")->required();
            c->add_flag("--optimizer", *optimizer, "Add the optimizer state (<param>.exp_avg, ...)");
            return [path, out, optimizer](const std::vector<std::string>&) {
              const std::size_t n = ckpt::consolidate(*path, *out, *optimizer);
              std::printf("# %zu tensors of %s -> %s\n", n, printable(*path).c_str(), printable(*out).c_str());
              return 0;
            };
          },
          nullptr,
          {}};
}

}  // namespace ts
