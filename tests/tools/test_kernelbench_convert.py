#!/usr/bin/env python3
"""scripts/kernelbench_convert.py: the committed tasks are its output byte for byte, its check
catches a changed file and a hand-written task that disagrees, and what it cannot translate
becomes a KernelBench-only task with the construct and the reason. No torch, no network."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "kernelbench_convert.py")
sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the source tree
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import kernelbench_convert as kc  # noqa: E402


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


class Committed(unittest.TestCase):
    def test_tasks_match_a_new_conversion(self):
        r = run("--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("byte for byte", r.stderr)

    def test_source_names_its_commit_and_licence(self):
        with open(os.path.join(kc.SRC_DIR, "COMMIT")) as f:
            self.assertTrue(f.read().startswith("423217d"))
        with open(os.path.join(kc.SRC_DIR, "LICENSE")) as f:
            self.assertIn("MIT License", f.read())
        counts = [len([n for n in os.listdir(os.path.join(kc.SRC_DIR, "level%d" % lv)) if n.endswith(".py")])
                  for lv in (1, 2, 3)]
        self.assertEqual(counts, [100, 100, 50])


class CheckFails(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.tasks = os.path.join(self.tmp, "tasks")
        shutil.copytree(os.path.join(ROOT, "tasks"), self.tasks, ignore=shutil.ignore_patterns("kernelbench-src"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, rel, old, new):
        path = os.path.join(self.tasks, rel)
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))

    def test_a_changed_generated_file(self):
        self.edit("level2/20_convtranspose3d_sum_residualadd_multiply_residualadd.toml", "batch_size = 16",
                  "batch_size = 17")
        r = run("--check", "--tasks", self.tasks)
        self.assertEqual(r.returncode, 1)
        self.assertIn("level2/20_convtranspose3d_sum_residualadd_multiply_residualadd.toml differs", r.stderr)

    def test_a_missing_and_an_extra_file(self):
        os.remove(os.path.join(self.tasks, "level1/11_4d_tensor_matrix_multiplication.toml"))
        shutil.copy(os.path.join(self.tasks, "level1/12_matmul_with_diagonal_matrices.toml"),
                    os.path.join(self.tasks, "level1/12_copy.toml"))
        r = run("--check", "--tasks", self.tasks)
        self.assertEqual(r.returncode, 1)
        self.assertIn("level1/11_4d_tensor_matrix_multiplication.toml is missing", r.stderr)
        self.assertIn("level1/12_copy.toml is not made by the converter", r.stderr)

    def test_a_hand_written_task_that_disagrees(self):
        # L2/1's bias is N(0,1) in KernelBench; a hand-written task saying otherwise is caught.
        self.edit("level2/01_conv2d_relu_biasadd.toml", 'name = "bias"\nshape = ["C_out", 1, 1]\ninit = "randn"',
                  'name = "bias"\nshape = ["C_out", 1, 1]\ninit = "zeros"')
        r = run("--check", "--tasks", self.tasks)
        self.assertEqual(r.returncode, 1)
        self.assertIn("hand-written task disagrees: L2/1: params differ", r.stderr)


PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """Conv, then something."""
    def __init__(self, in_channels, out_channels, kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.blocks = nn.ModuleList([nn.ReLU() for _ in range(2)])
        self.scale = nn.Parameter(torch.randn(out_channels, 1, 1))
        LAYER
    def forward(self, x):
        x = self.conv(x)
        for b in self.blocks:
            x = b(x)
        return x * self.scale

batch_size = 8
in_channels = 3
out_channels = 16
height = 64
width = 64
kernel_size = 3

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
'''


class Convert(unittest.TestCase):
    def test_a_module_becomes_functional_torchscript(self):
        c = kc.convert(2, 99, "99_Test", PROBLEM.replace("LAYER", "pass"))
        self.assertIsNone(c.reason)
        self.assertEqual(c.forward, 'def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n'
                         '    x = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [1, 1], [1, 1], 1)\n'
                         '    x = torch.relu(x)\n'
                         '    x = torch.relu(x)\n'
                         '    return x * p["scale"]\n')
        self.assertEqual([(p.name, p.shape, p.init, p.fan_in) for p in c.params],
                         [("conv.weight", ["out_channels", "in_channels", 3, 3], "uniform_fan_in", ["in_channels", 3, 3]),
                          ("conv.bias", ["out_channels"], "uniform_fan_in", ["in_channels", 3, 3]),
                          ("scale", ["out_channels", 1, 1], "randn", None)])
        # constructor arguments never shrink; the batch and the image do
        self.assertEqual(c.smoke, {"batch_size": 2, "height": 32, "width": 32})

    def test_an_unknown_layer_makes_a_kernelbench_only_task(self):
        c = kc.convert(2, 99, "99_Test", PROBLEM.replace("LAYER", "self.rnn = nn.LSTM(4, 4)"))
        self.assertEqual(c.reason, "line 12: nn.LSTM (no functional translation here)")
        c.source_path = "level2/99_Test.py"
        text = kc.to_toml(c, "423217d")
        self.assertIn('kernelbench_only = "line 12: nn.LSTM (no functional translation here)"', text)
        self.assertIn("reference_python = '''\n\nimport torch", text)
        self.assertNotIn("forward = ", text)

    def test_an_in_place_op_on_a_shared_tensor_is_not_translated(self):
        # Python's ReLU(inplace=True) changes `identity` too; a functional relu would not.
        shared = PROBLEM.replace("LAYER", "self.act = nn.ReLU(inplace=True)").replace(
            "        x = self.conv(x)\n", "        identity = x\n        x = self.act(x)\n        x = self.conv(x) + identity\n")
        c = kc.convert(2, 99, "99_Test", shared)
        self.assertEqual(c.reason, "line 15: nn.ReLU(inplace=True) changes x in place, which identity also holds "
                                   "(Python changes both; the functional form would change one)")
        aug = PROBLEM.replace("LAYER", "pass").replace("        return x * self.scale",
                                                       "        y = x\n        y += 1.0\n        return x * self.scale")
        self.assertIn("y += changes y in place, which x also holds", kc.convert(2, 99, "99_Test", aug).reason)
        # on a tensor nothing else holds, in place and functional agree
        fresh = PROBLEM.replace("LAYER", "self.act = nn.ReLU(inplace=True)").replace(
            "        x = self.conv(x)\n", "        x = self.conv(x)\n        x = self.act(x)\n        x += 1.0\n")
        c = kc.convert(2, 99, "99_Test", fresh)
        self.assertIsNone(c.reason)
        self.assertIn("    x = torch.relu(x)\n    x = x + 1.0\n", c.forward)

    def test_an_einops_call_says_it_needs_einops(self):
        # Mamba2's (L3/48-49) rearrange: not translated, so KernelBench's Model runs, which imports einops
        mamba = PROBLEM.replace("import torch\n", "import torch\nfrom einops import rearrange\n", 1).replace(
            "LAYER", "pass").replace("        x = self.conv(x)\n", "        x = rearrange(x, 'b c h w -> b h w c')\n")
        c = kc.convert(3, 99, "99_Test", mamba)
        self.assertRegex(c.reason, r"^line \d+: needs einops: einops.rearrange is not translated here, and "
                                   "KernelBench's Model runs only where the worker's Python has the einops package")

    def test_an_input_the_format_cannot_draw(self):
        c = kc.convert(1, 99, "99_Test", PROBLEM.replace("LAYER", "pass").replace(
            "torch.rand(batch_size, in_channels, height, width)", "torch.randint(0, 2, (batch_size,))"))
        self.assertIn("an input made by torch.randint", c.reason)


if __name__ == "__main__":
    unittest.main()
