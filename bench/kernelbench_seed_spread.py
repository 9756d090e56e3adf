#!/usr/bin/env python3
"""Why a task's reference differs from KernelBench's Model: the three things to tell apart, on the CPU.

    /usr/bin/python3 bench/kernelbench_seed_spread.py L2/25 --set batch_size=8 --seeds 42-51

1. forward: KernelBench's Model and the task's TorchScript forward on the same weights (the Model's
   own, read into `p` by name) and the same inputs; the largest difference. A lost argument (groups,
   eps, a dim, a constant) shows here.
2. init: each parameter as the task file draws it (the worker's makeParams: uniform_fan_in's bound
   1/sqrt(fan_in), randn, ones, zeros, constant, in the file's order) against the Model's own, both on
   the CPU under the same seed: identical, or the largest difference. A parameter made differently,
   or drawn in another order, shows here.
3. spread: mean, min and max of the output under each seed, KernelBench's reference (weights under
   the seed, inputs under the first correctness trial's seed, as scripts/check-kernelbench-tasks.py
   draws them) and the task's under other seeds (weights under seed + 1000, inputs under seed + 2000;
   the worker draws on the GPU's generator, whose numbers are not KernelBench's either): if 1 and 2
   agree, the two columns are one distribution, and how far one draw lies from another is its spread.

--set NAME=VALUE changes a module-level size in both (the task's dims and the problem file's
globals), to keep a forward within the CPU's reach with the same operations.
"""
import argparse
import glob
import os
import re
import statistics
import sys
import tomllib

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def resolve(value, dims):
    if isinstance(value, list):
        return tuple(resolve(v, dims) for v in value)
    return dims[value] if isinstance(value, str) else value


def prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


class Task:
    def __init__(self, task_id, overrides):
        level, number = re.fullmatch(r"L(\d)/(\d+)", task_id).groups()
        path = glob.glob(os.path.join(ROOT, "tasks", "level" + level, "%02d_*.toml" % int(number)))[0]
        with open(path, "rb") as f:
            self.toml = tomllib.load(f)
        self.dims = dict(self.toml.get("dims", {}), **overrides)
        # Python's TorchScript resolves torch.X through the torch module, which has no linear (libtorch's
        # compiler, the worker's, finds aten::linear); F.linear is the same aten op.
        self.forward = torch.jit.CompilationUnit(
            self.toml["forward"].replace("torch.linear(", "torch.nn.functional.linear(")).forward
        source = os.path.join(ROOT, "tasks", "kernelbench-src", self.toml["source"])
        self.kb = {"__name__": "kernelbench_problem"}
        with open(source) as f:
            exec(compile(f.read(), source, "exec"), self.kb)  # noqa: S102 - KernelBench's own problem file
        self.kb.update(overrides)  # get_inputs / get_init_inputs read the module's globals when called

    def kb_model(self, seed):
        torch.manual_seed(seed)
        init = self.kb["get_init_inputs"]()
        torch.manual_seed(seed)
        with torch.no_grad():
            return self.kb["Model"](*init)

    def kb_inputs(self, seed):
        torch.manual_seed(seed)
        trial_seed = torch.randint(0, 2**32 - 1, (1,)).item()
        torch.manual_seed(trial_seed)
        return self.kb["get_inputs"]()

    def our_params(self, seed):
        torch.manual_seed(seed)
        p = {}
        for spec in self.toml.get("params", []):
            shape = resolve(spec["shape"], self.dims)
            init = spec["init"]
            if init == "uniform_fan_in":
                bound = 1.0 / prod(resolve(spec["fan_in"], self.dims)) ** 0.5
                p[spec["name"]] = torch.empty(shape).uniform_(-bound, bound)
            elif init == "randn":
                p[spec["name"]] = torch.randn(shape)
            elif init == "ones":
                p[spec["name"]] = torch.ones(shape)
            elif init == "zeros":
                p[spec["name"]] = torch.zeros(shape)
            elif init == "constant":
                p[spec["name"]] = torch.full(shape, spec["value"])
            else:
                raise ValueError("unknown init " + init)
        return p

    def our_inputs(self, seed):
        torch.manual_seed(seed)
        out = []
        for spec in self.toml["inputs"]:
            if "shape" in spec:
                shape = resolve(spec["shape"], self.dims)
                out.append(torch.randn(shape) if spec["generator"] == "randn" else torch.rand(shape))
            else:
                out.append(spec["value"])
        return out

    def run(self, inputs, p):
        with torch.no_grad():
            return self.forward(*inputs, p)


def stats(t):
    return t.mean(dtype=torch.float64).item(), t.min().item(), t.max().item()


def seeds_of(text):
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("task")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    overrides = {k: int(v) for k, v in (s.split("=", 1) for s in a.set)}
    task = Task(a.task, overrides)
    seeds = seeds_of(a.seeds)
    print("%s, sizes %s, torch %s" % (a.task, task.dims, torch.__version__))

    model = task.kb_model(seeds[0])
    inputs = task.kb_inputs(seeds[0])
    kb_p = {n: t.detach() for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    with torch.no_grad():
        want = model(*inputs)
    got = task.run(inputs, kb_p)
    print("1. forward on KernelBench's weights and inputs: shape %s / %s, max |ours - KB| %.3g (|KB| up to %.3g)"
          % (list(got.shape), list(want.shape), (got - want).abs().max().item(), want.abs().max().item()))

    # The worker's makeParams draws in the task file's order, which is the Model's creation order: on
    # one generator under one seed the two draws are the same numbers, not only the same distribution.
    print("2. init: the task's parameters against the Model's, drawn on the CPU under the same seed")
    for seed in seeds:
        kb = {n: t.detach() for n, t in task.kb_model(seed).named_parameters()}
        ours = task.our_params(seed)
        # by name: named_parameters lists a module's own before its children's, not in creation order
        if sorted(kb) != sorted(ours):
            sys.exit("parameters differ: KB %s, ours %s" % (sorted(kb), sorted(ours)))
        diff = {n: (ours[n] - kb[n]).abs().max().item() for n in ours}
        print("   seed %d: %s" % (seed, ", ".join("%s %s" % (n, "identical" if d == 0 else "max diff %.3g" % d)
                                               for n, d in diff.items())))

    print("3. output statistics per seed: KernelBench's reference | the task's (weights under seed + 1000)")
    print("   seed  %12s %12s %12s | %12s %12s %12s" % ("KB mean", "KB min", "KB max", "mean", "min", "max"))
    cols = []
    for seed in seeds:
        model = task.kb_model(seed)
        with torch.no_grad():
            k = stats(model(*task.kb_inputs(seed)))
        del model
        # other seeds for ours: the worker's draw on the GPU is not KernelBench's numbers either
        w = stats(task.run(task.our_inputs(seed + 2000), task.our_params(seed + 1000)))
        cols.append(k + w)
        print("   %4d  %12.5g %12.5g %12.5g | %12.5g %12.5g %12.5g" % ((seed,) + k + w), flush=True)
    lo = [min(c) for c in zip(*cols)]
    hi = [max(c) for c in zip(*cols)]
    print("   range " + " ".join("%12s" % ("%.4g..%.4g" % (l, h)) if i != 3 else "| " + "%12s" % ("%.4g..%.4g" % (l, h))
                               for i, (l, h) in enumerate(zip(lo, hi))))
    if len(seeds) < 2:
        return
    sd = [statistics.stdev(c) for c in zip(*cols)]
    print("   stdev " + " ".join(("| " if i == 3 else "") + "%12.4g" % s for i, s in enumerate(sd)))


if __name__ == "__main__":
    main()
