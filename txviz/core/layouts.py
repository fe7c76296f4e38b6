"""Where a model keeps its blocks: the few Hugging Face block layouts txviz knows point by point.

The block page writes these layouts out as code; recording stages and editing the residual stream,
the FFN or a head (txviz.core.interventions) find their points here.

Each family is recognised by its config's model type and then checked by the names of the block's
modules, so a model whose block does something else gets a clear message instead of wrong numbers.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from txviz.core.errors import UserError

FAMILIES = {  # config.model_type -> family
    "bert": "bert",
    "roberta": "bert",
    "xlm-roberta": "bert",
    "electra": "bert",
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "llama",
    "gpt2": "gpt2",
    "bart": "bart",
}
FORMS = {"bert": "post-LN", "bart": "post-LN", "llama": "pre-norm", "gpt2": "pre-norm", "generic": "unknown"}
# Any other causal LM: its blocks, final norm and output head found generically (the residual stream,
# the logit lens and stream interventions work; the block's inside is not written out).
GENERIC = "generic"
FINAL_NORM_NAMES = ("norm", "final_layer_norm", "ln_f", "final_layernorm", "norm_f", "final_norm")
# Modules every block of a family must have: its code below reads exactly these weights.
REQUIRED = {
    "bert": (
        "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
        "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm",
    ),
    "llama": (
        "input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
    ),
    "gpt2": ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"),
    "bart": (
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
        "self_attn_layer_norm", "fc1", "fc2", "final_layer_norm",
    ),
}  # fmt: skip
# Modules that would change the block's maths beyond what its code writes out.
FORBIDDEN = {"llama": ("self_attn.q_norm", "self_attn.k_norm", "pre_feedforward_layernorm")}
# The hooked module of each stage: its output is what the stage adds to the residual stream
# (before the add); for "ffn" its input is the FFN's hidden activations as well.
POINTS = {
    "bert": {"attn": "attention.output.dense", "ffn": "output.dense"},
    "llama": {"attn": "self_attn", "ffn": "mlp.down_proj"},
    "gpt2": {"attn": "attn", "ffn": "mlp.c_proj"},
    "bart": {"attn": "self_attn", "ffn": "fc2", "cross": "encoder_attn"},
    GENERIC: {},
}
# Each block's attention modules, the ones that call the attention function (per-head points).
ATTENTION = {"bert": "attention.self", "llama": "self_attn", "gpt2": "attn", "bart": "self_attn"}
CROSS_ATTENTION = {"bart": "encoder_attn"}
STACKS = {  # family -> (stack name, path from the base model to its ModuleList)
    "bert": (("encoder", "encoder.layer"),),
    "llama": (("decoder", "layers"),),
    "gpt2": (("decoder", "h"),),
    "bart": (("encoder", "encoder.layers"), ("decoder", "decoder.layers")),
}
FINAL_NORM = {"llama": "norm", "gpt2": "ln_f"}


_names_by_model: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def module_names(model: torch.nn.Module) -> dict[int, str]:
    """id -> name of every submodule, cached: walking the modules costs ~8 ms a call on SmolLM2."""
    names = _names_by_model.get(model)
    if names is None:
        names = _names_by_model[model] = {id(m): n for n, m in model.named_modules()}
    return names


class UnknownLayoutError(UserError):
    """The model's block is not one of the layouts txviz writes out as code."""


@dataclass(frozen=True)
class Stack:
    """One stack of blocks (an encoder or a decoder)."""

    name: str  # "encoder" or "decoder"
    path: str  # dotted path of its ModuleList from the top model
    n_layers: int
    cross: bool  # its blocks also attend to an encoder's output


@dataclass(frozen=True)
class Layout:
    """A model's blocks, final norm and output head, found by module path."""

    family: str
    form: str  # "post-LN" or "pre-norm"
    base: str  # dotted path of the base model ("" when the model is its own base)
    stacks: tuple[Stack, ...]
    final_norm: str | None
    lm_head: str | None
    model_type: str = ""

    def stack(self, name: str) -> Stack:
        for stack in self.stacks:
            if stack.name == name:
                return stack
        raise UserError(f"This model has no {name} stack; it has {', '.join(s.name for s in self.stacks)}.")

    def points(self, model: torch.nn.Module) -> dict[str, torch.nn.Module]:
        """Every hooked module: 'decoder.3.ffn' -> the module, 'decoder.3.resid' -> the block itself
        (its output is the stream after it), 'decoder.embed' -> the first block (its input is the
        embeddings' stream), 'final_norm' -> the final norm."""
        found = {}
        for stack in self.stacks:
            for i, block in enumerate(model.get_submodule(stack.path)):
                if i == 0:
                    found[f"{stack.name}.embed"] = block
                for kind, path in POINTS[self.family].items():
                    if kind != "cross" or stack.cross:
                        found[f"{stack.name}.{i}.{kind}"] = block.get_submodule(path)
                found[f"{stack.name}.{i}.resid"] = block
        if self.final_norm:
            found["final_norm"] = model.get_submodule(self.final_norm)
        return found

    def attention_name(self, stack: str, layer: int, cross: bool = False) -> str:
        """Module name of block ``layer``'s self-attention (or cross-attention) in ``stack``."""
        found = self.stack(stack)
        if not 0 <= layer < found.n_layers:
            raise UserError(f"The {stack} has layers 0 to {found.n_layers - 1}; there is no layer {layer}.")
        if cross and not found.cross:
            raise UserError(f"The {stack} of this model has no cross-attention.")
        if self.family == GENERIC:
            raise UnknownLayoutError(
                f"txviz does not know where the heads of this {self.model_type} model's blocks are, so "
                "it cannot change a head or cut attention edges in it; the residual stream, the logit "
                "lens and changes to the stream between blocks work."
            )
        part = CROSS_ATTENTION[self.family] if cross else ATTENTION[self.family]
        return f"{found.path}.{layer}.{part}"

    @property
    def last_stack(self) -> str:
        """The stack that makes the output (the decoder of an encoder-decoder)."""
        return self.stacks[-1].name

    def block(self, model: torch.nn.Module, stack: str, layer: int) -> torch.nn.Module:
        blocks = model.get_submodule(self.stack(stack).path)
        if not 0 <= layer < len(blocks):
            raise UserError(f"The {stack} has layers 0 to {len(blocks) - 1}; there is no layer {layer}.")
        return blocks[layer]


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _has(module: torch.nn.Module, path: str) -> bool:
    try:
        module.get_submodule(path)
    except AttributeError:
        return False
    return True


def layout_of(model: torch.nn.Module) -> Layout:
    """The model's layout, or an UnknownLayoutError that says what txviz understands."""
    model_type = getattr(model.config, "model_type", "?")
    family = FAMILIES.get(model_type)
    known = "BERT-style encoders, Llama-style and GPT-2-style decoders, and BART"
    if family is None and _causal_lm(model):
        return _generic(model, model_type)
    if family is None:
        raise UnknownLayoutError(
            f"txviz cannot write out the block of a '{model_type}' model: it knows {known}. "
            "Its attention is still on the Attention Explorer page."
        )
    base = module_names(model).get(id(model.base_model), "")
    stacks = []
    for name, path in STACKS[family]:
        full = _join(base, path)
        blocks = model.get_submodule(full) if _has(model, full) else None
        if not isinstance(blocks, torch.nn.ModuleList) or not len(blocks):
            raise UnknownLayoutError(
                f"This {model_type} model has no {name} blocks where txviz expects them."
            )
        missing = [p for p in REQUIRED[family] if not _has(blocks[0], p)]
        extra = [p for p in FORBIDDEN.get(family, ()) if _has(blocks[0], p)]
        if missing or extra:
            what = f"lacks {', '.join(missing)}" if missing else f"also has {', '.join(extra)}"
            raise UnknownLayoutError(
                f"This {model_type} model's block {what}: its layout is not the one txviz writes out as code "
                f"({known})."
            )
        stacks.append(Stack(name, full, len(blocks), family == "bart" and name == "decoder"))
    final = _join(base, FINAL_NORM[family]) if family in FINAL_NORM else None
    head = "lm_head" if _has(model, "lm_head") else None
    return Layout(family, FORMS[family], base, tuple(stacks), final, head, model_type)


def _causal_lm(model: torch.nn.Module) -> bool:
    return not getattr(model.config, "is_encoder_decoder", False) and _output_head(model) is not None


def _output_head(model: torch.nn.Module) -> torch.nn.Module | None:
    try:
        return model.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        return None


def _generic(model: torch.nn.Module, model_type: str) -> Layout:
    """A causal LM txviz has no code for: its blocks (the base model's list of as many modules as the
    config has layers), the final norm beside them and the output embedding, found generically."""
    names = module_names(model)
    base = names.get(id(model.base_model), "")
    n_layers = getattr(model.config.get_text_config(), "num_hidden_layers", None)
    lists = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList) and name.startswith(base) and len(m) == n_layers
    ]
    if not lists:
        raise UnknownLayoutError(
            f"txviz cannot find the {n_layers} blocks of this {model_type} model, so it cannot show its "
            "residual stream or logit lens. Its attention is still on the Attention Explorer page."
        )
    path = lists[0][0]
    final = None
    for parent in dict.fromkeys((path.rsplit(".", 1)[0] if "." in path else "", base)):
        for norm in FINAL_NORM_NAMES:
            if _has(model, _join(parent, norm)):
                final = _join(parent, norm)
                break
        if final:
            break
    head = names.get(id(_output_head(model)))
    stacks = (Stack("decoder", path, n_layers, False),)
    return Layout(GENERIC, FORMS[GENERIC], base, stacks, final, head, model_type)


_layouts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached_layout(model: torch.nn.Module) -> Layout:
    """``layout_of`` once per model: every recorded or edited run asks for it."""
    layout = _layouts.get(model)
    if layout is None:
        layout = _layouts[model] = layout_of(model)
    return layout
