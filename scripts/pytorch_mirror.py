"""PyTorch mirrors of trainscope's models (workloads/models/, workloads/layers/), for the scripts that set
trainscope against PyTorch (compare-pytorch-cpu.py, compare-pytorch-train.py) and for tests of loss agreement.

Same architectures, sizes, parameter names and initial distributions as trainscope's, float32:

- mlp: `layers` = nn.Sequential(Linear, act, Linear, act, ..., Linear): `depth` hidden Linear layers of `width`,
  ReLU or tanh-GELU, a Linear head to the classes; names layers.0, layers.2, ... (workloads/models/mlp.cpp).
- cnn: a ResNet of basic blocks with torchvision's names (conv1, bn1, layer<s>.<b>.conv1/bn1/conv2/bn2,
  .downsample.0/.1, fc); convolutions without bias, BatchNorm2d (eps 1e-5, momentum 0.1, batch statistics in
  training, running_var unbiased), global average pooling, a Linear head (workloads/models/cnn.cpp).
- transformer: GPT-2 style, pre-layernorm blocks (h.<i>.ln_1, .attn.qkv, .attn.proj, .ln_2, .mlp.fc, .mlp.proj),
  causal softmax attention, tanh-GELU, ln_f and an untied lm_head without bias (workloads/models/transformer.cpp).
  With experts (the moe-* presets), each block's MLP is a mixture of experts (h.<i>.moe.router, .moe.experts.<e>.fc,
  .proj; workloads/layers/moe.h): softmax router, top-k (ties: the lower index), gates renormalised for k = 2,
  capacity ceil(factor N k / E) first come first served (first choices before second ones), and the load-balancing
  loss coef E sum_e f_e P_e added to the objective; the model's `lm_loss` keeps the cross-entropy alone (trainscope's
  reported loss).

The loss is the mean cross-entropy (over samples, or over every position for the transformer). The optimizer
mirror (make_optimizer) applies weight decay to weights only (tensors of 2 or more dimensions), never to
biases and normalisation gains, as workloads/optim/optimizer.h. load_safetensors() loads the file that
`trainscope checkpoint consolidate DIR -o FILE` writes into a mirror (names match one to one; the mirror's
BatchNorm num_batches_tracked, which trainscope does not keep, is left as it is).

Checked by hand (2026-11-27, torch 1.13): loaded with trainscope's weights (one step at lr 1e-12, consolidated), each
tiny mirror's first loss equals the one `train --dump-logits` wrote to 1e-7 (transformer on text:GPL-3; mlp and cnn on
a made-up cifar10 directory, whose pixels the mirror normalised as workloads/data/cifar10.cpp does).

Torch is imported by the caller and passed in, so that this module imports without it.
"""
import json
import math
import struct

# The presets of workloads/models/presets.cpp.
MLP_PRESETS = {"tiny": (2, 64), "small": (4, 512), "base": (8, 2048), "deep": (32, 1024)}  # depth, width
CNN_PRESETS = {  # stage widths, blocks per stage, stem
    "tiny": ((16, 32, 64), (1, 1, 1), "cifar"),
    "resnet20": ((16, 32, 64), (3, 3, 3), "cifar"),
    "resnet18": ((64, 128, 256, 512), (2, 2, 2, 2), "imagenet"),
    "resnet34": ((64, 128, 256, 512), (3, 4, 6, 3), "imagenet"),
}
GPT_PRESETS = {  # layers, hidden, heads, seq_len, vocab
    "tiny": (2, 64, 4, 32, 256),
    "small": (6, 384, 6, 256, 256),
    "gpt2": (12, 768, 12, 1024, 50304),
    "gpt2-medium": (24, 1024, 16, 1024, 50304),
    "moe-tiny": (2, 64, 4, 32, 256),
    "moe-small": (6, 384, 6, 256, 256),
}
MOE_PRESETS = {"moe-tiny": (4, 2), "moe-small": (8, 2)}  # experts, top_k
MOE_DEFAULTS = {"capacity_factor": 1.25, "aux_loss_coef": 0.01}  # --capacity-factor, --aux-loss-coef
PRESETS = {"mlp": MLP_PRESETS, "cnn": CNN_PRESETS, "transformer": GPT_PRESETS}
# trainscope's synthetic data (workloads/trainer.cpp, workloads/data/data_source.h): what the classifiers see.
MLP_INPUT, CNN_INPUT, CLASSES = (784,), (3, 32, 32), 10
# trainscope's optimizer defaults (workloads/optim/optimizer.h, schedule.h): adamw, constant lr.
OPTIMIZER_DEFAULTS = {"kind": "adamw", "lr": 1e-3, "weight_decay": 0.0, "betas": (0.9, 0.999), "eps": 1e-8,
                      "momentum": 0.9, "alpha": 0.99}


def build_mlp(torch, depth, width, classes=CLASSES, inputs=MLP_INPUT[0], activation="relu"):
    nn = torch.nn

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            mods, fan_in = [], inputs
            for _ in range(depth):
                mods += [nn.Linear(fan_in, width), nn.ReLU() if activation == "relu" else nn.GELU(approximate="tanh")]
                fan_in = width
            mods.append(nn.Linear(fan_in, classes))
            self.layers = nn.Sequential(*mods)  # PyTorch's default Linear init is trainscope's: U(+-1/sqrt(in))

        def forward(self, x, targets):
            return nn.functional.cross_entropy(self.layers(x.flatten(1)), targets)

    return Mlp()


def build_cnn(torch, widths, blocks, stem="cifar", classes=CLASSES, channels=CNN_INPUT[0]):
    nn = torch.nn
    F = nn.functional

    def conv(cin, cout, k, stride):
        c = nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)
        nn.init.kaiming_normal_(c.weight, mode="fan_out", nonlinearity="relu")  # std sqrt(2 / (K R S)), as trainscope
        return c

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, cout, 3, stride), nn.BatchNorm2d(cout)
            self.conv2, self.bn2 = conv(cout, cout, 3, 1), nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(conv(cin, cout, 1, stride), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            return F.relu(y + (self.downsample(x) if self.downsample is not None else x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            imagenet = stem == "imagenet"
            self.conv1 = conv(channels, widths[0], 7 if imagenet else 3, 2 if imagenet else 1)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.maxpool = nn.MaxPool2d(3, 2, 1) if imagenet else None
            ch = widths[0]
            for s, (w, n) in enumerate(zip(widths, blocks)):
                stage = []
                for b in range(n):
                    stage.append(BasicBlock(ch, w, 2 if s > 0 and b == 0 else 1))
                    ch = w
                setattr(self, f"layer{s + 1}", nn.Sequential(*stage))
            self.stages = len(widths)
            self.fc = nn.Linear(ch, classes)

        def forward(self, x, targets):
            x = F.relu(self.bn1(self.conv1(x)))
            if self.maxpool is not None:
                x = self.maxpool(x)
            for s in range(self.stages):
                x = getattr(self, f"layer{s + 1}")(x)
            return F.cross_entropy(self.fc(x.mean((2, 3))), targets)

    return ResNet()


def build_gpt(torch, layers, hidden, heads, seq_len, vocab, experts=0, top_k=1,
              capacity_factor=MOE_DEFAULTS["capacity_factor"], aux_loss_coef=MOE_DEFAULTS["aux_loss_coef"]):
    nn = torch.nn
    F = nn.functional
    C, NH, D = hidden, heads, hidden // heads

    def linear(cin, cout, std, bias=True):
        m = nn.Linear(cin, cout, bias=bias)
        nn.init.normal_(m.weight, 0.0, std)
        if bias:
            nn.init.zeros_(m.bias)  # GPT-2's, as trainscope
        return m

    proj_std = 0.02 / math.sqrt(2.0 * layers)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = linear(C, 3 * C, 0.02), linear(C, C, proj_std)

        def forward(self, x, mask):
            B, T, _ = x.shape
            q, k, v = (t.view(B, T, NH, D).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D)) + mask[:T, :T]
            return self.proj((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.proj = linear(C, 4 * C, 0.02), linear(4 * C, C, proj_std)

        def forward(self, x):
            return self.proj(F.gelu(self.fc(x), approximate="tanh"))

    class Moe(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = linear(C, experts, 0.02, bias=False)
            self.experts = nn.ModuleList(Mlp() for _ in range(experts))
            self.aux = None

        def forward(self, x):
            shape, x = x.shape, x.reshape(-1, C)
            N, E, k = x.shape[0], experts, top_k
            probs = self.router(x).softmax(-1)
            chosen = torch.sort(probs, dim=-1, descending=True, stable=True).indices[:, :k]  # ties: the lower index
            p = probs.gather(1, chosen)
            gate = p if k == 1 else p / p.sum(-1, keepdim=True)
            capacity = N if capacity_factor <= 0 else min(N, math.ceil(capacity_factor * N * k / E))
            order = chosen.t().reshape(-1)  # every first choice in token order, then the second choices
            onehot = F.one_hot(order, E)
            taken = ((onehot.cumsum(0) - 1) * onehot).sum(-1)
            kept = (taken < capacity).reshape(k, N).t()
            y = torch.zeros_like(x)
            for e, expert in enumerate(self.experts):
                for j in range(k):
                    rows = (chosen[:, j] == e) & kept[:, j]
                    if rows.any():
                        y = y.index_add(0, rows.nonzero().squeeze(1), gate[rows, j:j + 1] * expert(x[rows]))
            f = onehot.sum(0).to(probs.dtype) / (N * k)  # counts: not differentiated
            self.aux = aux_loss_coef * E * (f * probs.mean(0)).sum()
            return y.reshape(shape)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(C), Attention(), nn.LayerNorm(C)
            if experts:
                self.moe = Moe()
            else:
                self.mlp = Mlp()

        def forward(self, x, mask):
            x = x + self.attn(self.ln_1(x), mask)
            return x + (self.moe if experts else self.mlp)(self.ln_2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, C), nn.Embedding(seq_len, C)
            nn.init.normal_(self.wte.weight, 0.0, 0.02)
            nn.init.normal_(self.wpe.weight, 0.0, 0.01)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f, self.lm_head = nn.LayerNorm(C), linear(C, vocab, 0.02, bias=False)
            # Constants, not state (not in checkpoints): the positions and the causal mask, 0 where a position may
            # attend and -inf above the diagonal (float: gloo, under DistributedDataParallel, broadcasts no bool).
            self.register_buffer("positions", torch.arange(seq_len), persistent=False)
            mask = torch.full((seq_len, seq_len), float("-inf")).triu(1)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(self.positions[:idx.shape[1]])
            for b in self.h:
                x = b(x, self.mask)
            logits = self.lm_head(self.ln_f(x))
            self.lm_loss = F.cross_entropy(logits.float().view(-1, vocab), targets.view(-1))
            return self.lm_loss + sum(b.moe.aux for b in self.h) if experts else self.lm_loss

    return Gpt()


def build(torch, model, preset):
    """The mirror of `trainscope train --model MODEL --preset PRESET` on its synthetic data."""
    if model == "mlp":
        return build_mlp(torch, *MLP_PRESETS[preset])
    if model == "cnn":
        return build_cnn(torch, *CNN_PRESETS[preset])
    if model == "transformer":
        return build_gpt(torch, *GPT_PRESETS[preset], *MOE_PRESETS.get(preset, ()))
    raise ValueError(f"unknown model '{model}' (mlp, cnn, transformer)")


def random_batch(torch, model, preset, batch, generator=None):
    """(inputs, targets) of the shapes trainscope's synthetic data gives the model: float samples and class
    labels for mlp and cnn, tokens and next tokens [batch, seq_len] for the transformer."""
    if model == "transformer":
        _, _, _, T, V = GPT_PRESETS[preset]
        tokens = torch.randint(0, V, (batch, T + 1), generator=generator)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    shape = MLP_INPUT if model == "mlp" else CNN_INPUT
    return torch.randn(batch, *shape, generator=generator), torch.randint(0, CLASSES, (batch,), generator=generator)


def make_optimizer(torch, model, kind="adamw", lr=1e-3, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-8, momentum=0.9,
                   alpha=0.99):
    """trainscope's optimizer (workloads/optim/optimizer.h) over a mirror: weight decay on weights only. sgd:
    momentum, coupled decay, no dampening, no Nesterov; adam: L2 decay in the gradient; adamw: decoupled;
    rmsprop: PyTorch's form. (trainscope's lamb has no PyTorch counterpart in torch.optim.)"""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
    o = torch.optim
    if kind == "adamw":
        return o.AdamW(groups, lr=lr, betas=betas, eps=eps)
    if kind == "adam":
        return o.Adam(groups, lr=lr, betas=betas, eps=eps)
    if kind == "sgd":
        return o.SGD(groups, lr=lr, momentum=momentum)
    if kind == "rmsprop":
        return o.RMSprop(groups, lr=lr, alpha=alpha, eps=eps)
    raise ValueError(f"optimizer '{kind}' has no mirror here (adamw, adam, sgd, rmsprop)")


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (float32, float16, bfloat16 as float32; int types as they
    are), without the safetensors package (Debian has none)."""
    import numpy as np
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    dtypes = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32, "I64": np.int64, "U8": np.uint8}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        if t["dtype"] == "BF16":
            bits = np.frombuffer(data[lo:hi], dtype=np.uint16).astype(np.uint32) << 16
            a = bits.view(np.float32)
        else:
            a = np.frombuffer(data[lo:hi], dtype=dtypes[t["dtype"]])
        out[name] = a.reshape(t["shape"]).copy()
    return out


def load_safetensors(torch, model, path):
    """Loads trainscope's consolidated checkpoint (`trainscope checkpoint consolidate DIR -o FILE`) into a
    mirror built for the same model and preset. Every parameter and buffer of the mirror must be in the file
    with its shape (but BatchNorm's num_batches_tracked, which trainscope does not keep); the file's optimizer
    state (<param>.exp_avg, ...), if any, is returned, not loaded. Raises ValueError naming what differs."""
    tensors = read_safetensors(path)
    own = model.state_dict()
    missing = [k for k in own if k not in tensors and not k.endswith("num_batches_tracked")]
    unknown = [k for k in tensors if k not in own]
    optimizer = {k: v for k, v in tensors.items() if k in unknown and "." in k and
                 k.rsplit(".", 1)[1] in ("exp_avg", "exp_avg_sq", "momentum_buffer", "square_avg")}
    unknown = [k for k in unknown if k not in optimizer]
    if missing or unknown:
        raise ValueError(f"{path} does not fit the mirror: missing {missing[:5]}, not in the mirror {unknown[:5]}")
    for k, v in own.items():
        if k in tensors:
            if tuple(tensors[k].shape) != tuple(v.shape):
                raise ValueError(f"{path}: {k} is {list(tensors[k].shape)} in the file, {list(v.shape)} in the mirror")
            with torch.no_grad():
                v.copy_(torch.from_numpy(tensors[k]))
    return optimizer


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())
