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


# A KernelBench-only problem file (an LSTM): its inputs sized by module constants.
KB_ONLY = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, input_size, hidden_size, image_size=32):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
        SHARED
    def forward(self, x, labels):
        batch_size = x.size(0)  # a local: not the module's batch_size
        out, _ = self.lstm(x)
        return out[:, -1, :] + labels.float().mean()

batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_classes = 4096
input_shape = (num_classes,)
image_size = 32
features = input_size * 2

def get_inputs():
    return [torch.rand(batch_size, sequence_length, input_size), torch.randint(0, num_classes, input_shape)]

def get_init_inputs():
    return [input_size, hidden_size]
'''


class KernelBenchOnlySets(unittest.TestCase):
    def free(self, source):
        return kc.free_constants(source)

    def test_the_batch_and_the_sequence_are_free_the_constructor_arguments_stay(self):
        free, kept = self.free(KB_ONLY.replace("SHARED", "pass"))
        self.assertEqual(free, [("batch_size", 10), ("sequence_length", 512), ("num_classes", 4096)])
        self.assertIn("input_size", kept)  # get_init_inputs reads it
        self.assertNotIn("hidden_size", kept)  # get_inputs does not read it: nothing to change
        self.assertNotIn("image_size", free + list(kept))

    def test_a_constant_reached_through_another_module_value(self):
        # num_classes reaches get_inputs() through input_shape: free (the worker evaluates input_shape
        # again); input_size reaches get_init_inputs() through features: stays
        source = KB_ONLY.replace("SHARED", "pass").replace("return [input_size, hidden_size]",
                                                          "return [features // 2, hidden_size]")
        free, kept = self.free(source)
        self.assertIn(("num_classes", 4096), free)
        self.assertEqual(kept["input_size"], "Model's side reads it (get_init_inputs, Model or what they read)")
        # a module value with a call in it could not be evaluated again
        called = source.replace("input_shape = (num_classes,)", "input_shape = tuple([num_classes])")
        free, kept = self.free(called)
        self.assertNotIn("num_classes", dict(free))
        self.assertIn("not plain arithmetic", kept["num_classes"])

    def test_couplings_that_stay(self):
        # Model reads the module's batch_size itself (L3/33's hidden state)
        free, kept = self.free(KB_ONLY.replace("SHARED", "self.h0 = torch.randn(batch_size, hidden_size)"))
        self.assertNotIn("batch_size", dict(free))
        self.assertIn("Model's side reads it", kept["batch_size"])
        # ... or through a module function it calls
        helper = KB_ONLY.replace("SHARED", "self.n = steps()") + "\ndef steps():\n    return sequence_length\n"
        self.assertIn("sequence_length", self.free(helper)[1])
        # a value Model writes as a literal (a default image size the input must match: L3/29, L3/32)
        sized = KB_ONLY.replace("SHARED", "pass").replace("torch.rand(batch_size, sequence_length, input_size)",
                                                          "torch.rand(batch_size, image_size, input_size)")
        free, kept = self.free(sized)
        self.assertEqual(kept["image_size"], "Model's code writes its value 32 as a literal")
        # a coupling only running the reference shows (--run-sets): L1/100's batch must equal its
        # 32768 columns, which KB_ONLY_COUPLED keeps
        with open(os.path.join(kc.SRC_DIR, "level1", "100_HingeLoss.py")) as f:
            hinge = f.read()
        self.assertEqual(self.free(hinge)[0], [("batch_size", 32768)])
        free, kept = kc.free_constants(hinge, "L1/100")
        self.assertEqual(free, [])
        self.assertIn("the reference runs only at batch_size = 32768", kept["batch_size"])
        # rebound by a function (global)
        rebound = KB_ONLY.replace("SHARED", "pass") + "\ndef grow():\n    global batch_size\n    batch_size = 20\n"
        self.assertEqual(self.free(rebound)[1]["batch_size"], "a function rebinds it (global)")

    def test_the_sets_override_module_constants_at_full_scale(self):
        c = kc.convert(3, 99, "99_Test", KB_ONLY.replace("SHARED", "pass"))
        self.assertIn("torch.randint", c.reason)  # KernelBench only
        c.source_path = "level3/99_Test.py"
        text = kc.to_toml(c, "423217d")
        self.assertIn("\n\n[[shape_sets]]\nname = \"odd\"\n"
                      "dims = { batch_size = 9, sequence_length = 511, num_classes = 4095 }\n", text)
        self.assertIn("name = \"held_out\"\nheld_out = true\n"
                      "dims = { batch_size = 7, sequence_length = 385, num_classes = 3073 }\n", text)
        self.assertNotIn("smoke", text.split("reference_python")[1].split("'''")[-1])
        # no free constant (every one read by Model's side): no sets
        fixed = KB_ONLY.replace("SHARED", "self.k = batch_size * sequence_length * num_classes")
        c = kc.convert(3, 99, "99_Test", fixed)
        c.source_path = "level3/99_Test.py"
        self.assertNotIn("[[shape_sets]]", kc.to_toml(c, "423217d"))


if __name__ == "__main__":
    unittest.main()
