"""examples/python/moe_layer.py runs and passes its own checks: the forward against eager PyTorch,
the training step against fp32 autograd."""
import os
import subprocess
import sys

from conftest import requires_torch_cuda

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "moe_layer.py")


@requires_torch_cuda
def test_moe_layer_example_passes_its_check():
    run = subprocess.run([sys.executable, EXAMPLE, "--tokens", "1024", "--no-timing"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("(ok, bound 1e-2)") == 2, run.stdout  # the forward and the training step
