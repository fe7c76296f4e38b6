"""A pretend GPU for machines without one: device mistakes fail here as they would on CUDA.

`on_gpu(model)` wraps a CPU model so that everything read from it (parameters, buffers, outputs,
`.device`) says it lives on cuda:0. Those tensors are `OnGpu` views of CPU tensors: `.numpy()` on
one fails, and so does mixing one with a CPU tensor of one or more dimensions (in any torch
function or module), as on a real GPU. The `fake_gpu` fixture makes `.to("cuda")` and `.cuda()`
return such views. The numbers are the CPU model's, so a test can compare them with a CPU run.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils import _pytree as pytree

CUDA = torch.device("cuda", 0)
MIXED = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def plain(x: Any) -> Any:
    """The CPU tensor under an OnGpu view (anything else unchanged)."""
    return x.as_subclass(torch.Tensor) if isinstance(x, OnGpu) else x


def as_gpu(x: Any) -> Any:
    """A tensor as an OnGpu view; a device as cuda:0 (anything else unchanged)."""
    if isinstance(x, torch.Tensor):
        return x if isinstance(x, OnGpu) else x.as_subclass(OnGpu)
    return CUDA if isinstance(x, torch.device) else x


def check_one_device(args: Any, kwargs: Any = None) -> None:
    """Refuse OnGpu tensors mixed with CPU tensors (CPU scalars mix with GPU ones in torch too)."""
    leaves = [x for x in pytree.tree_leaves((args, kwargs or {})) if isinstance(x, torch.Tensor)]
    generator = (kwargs or {}).get("generator")
    on_gpu = any(isinstance(x, OnGpu) for x in leaves)
    on_cpu = any(not isinstance(x, OnGpu) and x.dim() > 0 for x in leaves)
    if on_gpu and (on_cpu or (generator is not None and generator.device.type == "cpu")):
        raise RuntimeError(MIXED)


class OnGpu(torch.Tensor):
    """A CPU tensor that says it is on cuda:0 and fails where a GPU tensor would."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.numpy:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() first.")
        if func == torch.Tensor.device.__get__:
            return CUDA
        if func is torch.Tensor.cpu:
            return plain(args[0]).clone()
        if func is not torch.Tensor.__getitem__:  # CUDA tensors take CPU index tensors
            check_one_device(args, kwargs)
        return super().__torch_function__(func, types, args, kwargs)


class OnGpuModule:
    """A CPU module seen as if it were on cuda:0: what is read from it or returned is on the GPU."""

    def __init__(self, module: torch.nn.Module, wrappers: dict[int, OnGpuModule] | None = None):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_wrappers", {} if wrappers is None else wrappers)

    @property
    def __class__(self):  # isinstance(wrapped, torch.nn.ModuleList) etc. hold, as for the module itself
        return type(self._module)

    def _leaf(self, value: Any) -> Any:
        """A module as its one wrapper (so `is` and `id` agree however it was reached); a tensor on the GPU."""
        if isinstance(value, torch.nn.Module):
            if id(value) not in self._wrappers:
                self._wrappers[id(value)] = OnGpuModule(value, self._wrappers)
            return self._wrappers[id(value)]
        return as_gpu(value)

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, (torch.nn.Module, torch.Tensor, torch.device)):
            return self._leaf(value)
        if callable(value) and hasattr(value, "__self__"):  # a method: its results are wrapped too
            return lambda *a, **k: self._wrap_tree(
                value(*pytree.tree_map(plain, a), **pytree.tree_map(plain, k))
            )
        return value

    def _wrap_tree(self, value: Any) -> Any:
        if isinstance(value, (torch.nn.Module, torch.Tensor, torch.device)):
            return self._leaf(value)
        if hasattr(value, "to_tuple") and hasattr(value, "items"):  # a transformers ModelOutput
            for key, item in value.items():
                value[key] = pytree.tree_map(as_gpu, item)
            return value
        return pytree.tree_map(self._leaf, value) if isinstance(value, (tuple, list, dict)) else value

    def __getattr__(self, name: str) -> Any:
        if name == "device":
            return CUDA
        return self._wrap(getattr(self._module, name))

    def __call__(self, *args, **kwargs):
        leaves = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        if any(not isinstance(x, OnGpu) and x.dim() > 0 for x in leaves):
            raise RuntimeError(MIXED)
        return self._wrap_tree(self._module(*pytree.tree_map(plain, args), **pytree.tree_map(plain, kwargs)))

    def __iter__(self):
        return (self._leaf(m) for m in self._module)

    def __getitem__(self, index):
        return self._wrap(self._module[index])

    def __len__(self) -> int:
        return len(self._module)


def on_gpu(model: torch.nn.Module) -> Any:
    """The model as if it had been moved to cuda:0."""
    root = OnGpuModule(model)
    root._wrappers[id(model)] = root
    return root


@pytest.fixture
def fake_gpu(monkeypatch):
    """`.to("cuda")`, `.cuda()` and tensors made with device="cuda" are OnGpu views; `.to("cpu")` is the CPU tensor."""
    original = torch.Tensor.to

    def to(self, *args, **kwargs):
        target = kwargs.get("device", args[0] if args else None)
        if isinstance(target, (str, torch.device)) and torch.device(target).type in ("cuda", "cpu"):
            # the data stays on the CPU: the same call with the CPU as its device
            cpu = [torch.device("cpu") if a is target else a for a in args]
            moved = original(
                plain(self), *cpu, **{k: "cpu" if k == "device" else v for k, v in kwargs.items()}
            )
            return as_gpu(moved) if torch.device(target).type == "cuda" else plain(moved)
        return original(self, *args, **kwargs)

    def made_on(factory):
        def make(*args, device=None, **kwargs):
            if device is not None and torch.device(device).type == "cuda":
                grad = kwargs.pop("requires_grad", False)  # a leaf of its own, as a GPU tensor would be
                return as_gpu(factory(*args, **kwargs)).requires_grad_(grad)
            return factory(*args, device=device, **kwargs)

        return make

    for name in ("tensor", "as_tensor", "zeros", "ones", "full", "empty", "arange", "randn"):
        monkeypatch.setattr(torch, name, made_on(getattr(torch, name)))
    monkeypatch.setattr(torch.Tensor, "to", to)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: as_gpu(plain(self)))
    return CUDA
