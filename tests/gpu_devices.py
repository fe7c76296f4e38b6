"""Where the GPU tier (tests/gpu) runs: `make test-gpu` runs its real-GPU half (`pytest -m cuda`).

Every test there takes the `device` fixture, parametrised twice. "cuda" is marked `cuda` and skipped without a
CUDA GPU (CI has none). "fake-gpu" runs the same test body on any machine with tests/fake_gpu.py's
pretend GPU: a CPU model whose tensors say they live on cuda:0 and fail where a GPU's would
(`.numpy()` without `.cpu()`, mixing with CPU tensors), so device mistakes show here too.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from fake_gpu import as_gpu, fake_gpu, on_gpu  # noqa: F401  (fake_gpu: a fixture used by name)
from topic_calls import loaded_model

from txviz.core import capture, layouts, stages
from txviz.core.errors import UserError
from txviz.core.stages import StageRecord


def pretend_on_gpu(loaded):
    """A CPU-loaded model as the pretend GPU sees it: the same weights, device 'cuda'."""
    model = on_gpu(loaded.model)
    # The wrapper is a second object for the same modules. The layout is found by module identity
    # (the base model's id among named_modules), which a wrapper cannot keep, and the stage hooks are
    # installed once per model object (twice would apply every edit twice): both are the real model's.
    with contextlib.suppress(UserError):
        layouts._layouts[model] = capture.prepared(loaded.model)
        stages._installed[model] = stages._installed[loaded.model]
    return dataclasses.replace(loaded, model=model, device="cuda")


needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"
)
DEVICES = ["fake-gpu", pytest.param("cuda", marks=[pytest.mark.cuda, needs_cuda])]


@dataclass(frozen=True)
class Device:
    """Where a test runs its models: 'fake-gpu' or 'cuda'."""

    name: str
    request: Any

    def load(self, source: str, dtype: str = "float32"):
        """The model (registry name or folder) on this device."""
        if self.name == "cuda":
            return loaded_model(source, "cuda", dtype)
        loaded = loaded_model(source, "cpu", dtype)  # loaded before the pretend GPU is installed
        self.install()
        return pretend_on_gpu(loaded)

    def install(self) -> None:
        """For the pretend GPU: `.to("cuda")` and tensors made on "cuda" are pretend GPU tensors from now on,
        and so are the stage records a forward pass keeps (on a GPU they stay on it)."""
        if self.name != "fake-gpu":
            return
        self.request.getfixturevalue("fake_gpu")
        on_device = lambda record_input, output: StageRecord(as_gpu(record_input), as_gpu(output))  # noqa: E731
        self.request.getfixturevalue("monkeypatch").setattr(stages, "StageRecord", on_device)


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "fake-gpu":
        yield Device(request.param, request)
        return
    # Compared with the CPU in float32: TensorFloat-32 (on by default for cuDNN convolutions, such as
    # a ViT's patch embedding) rounds to 10 bits, which is not what these tests measure.
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield Device(request.param, request)
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
