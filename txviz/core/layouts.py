"""Where a model keeps its blocks: its family's record (txviz.core.model_map) placed on the model.

Recording stages and editing the residual stream, the FFN or a head (txviz.core.edits) find
their points here; the block page writes out the families whose record says so.

A family is recognised by its config's model type and then checked by the names of the block's
modules, so a model whose block does something else gets a clear message instead of wrong numbers.
A causal LM or a vision encoder with no record is placed by discovery: its blocks are the base model's list of as many
modules as the config has layers, and one short forward under the capture ContextVar shows which
module of each block calls the attention function (its heads).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch

from txviz.core.errors import UserError
from txviz.core.model_map import WRITTEN_OUT, Record, record_for

# Any other causal LM: its blocks, final norm and output head found generically, its attention by
# discovery (the residual stream, the logit lens, head edits and stream edits between blocks work;
# the block's inside is not written out).
GENERIC = "generic"
FINAL_NORM_NAMES = ("norm", "final_layer_norm", "ln_f", "final_layernorm", "norm_f", "final_norm")


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

    family: str  # the record's name, or "generic"
    form: str  # "post-LN", "pre-norm", "parallel", "sandwich", "post-norm" or "unknown"
    base: str  # dotted path of the base model ("" when the model is its own base)
    stacks: tuple[Stack, ...]
    final_norm: str | None
    lm_head: str | None
    model_type: str = ""
    record: Record | None = None  # None: placed by discovery
    attention: str | None = None  # discovered: the path in each block of the module that calls attention
    missing: str = ""  # discovered: why head points are absent, when they are
    attention_layers: tuple[int, ...] | None = None  # discovered: the blocks that call it (None: every one)

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
                for kind, path in self.block_points(stack).items():
                    found[f"{stack.name}.{i}.{kind}"] = block.get_submodule(path)
                found[f"{stack.name}.{i}.resid"] = block
        if self.final_norm:
            found["final_norm"] = model.get_submodule(self.final_norm)
        return found

    def block_points(self, stack: Stack) -> dict[str, str]:
        """Stage kind -> path in the block of the module whose output the block adds to the stream."""
        return self.record.in_stack(stack.name).points(stack.cross) if self.record else {}

    def check_layer(self, stack: str, layer: int) -> Stack:
        found = self.stack(stack)
        if not 0 <= layer < found.n_layers:
            raise UserError(f"The {stack} has layers 0 to {found.n_layers - 1}; there is no layer {layer}.")
        return found

    def attention_name(self, stack: str, layer: int, cross: bool = False) -> str:
        """Module name of block ``layer``'s self-attention (or cross-attention) in ``stack``."""
        found = self.check_layer(stack, layer)
        if cross and not found.cross:
            raise UserError(f"The {stack} of this model has no cross-attention.")
        if self.record is not None:
            part = (self.record.cross if cross else self.record.attention).module
        elif self.attention is not None:
            if self.attention_layers is not None and layer not in self.attention_layers:
                raise UnknownLayoutError(
                    f"Block {layer} of this {self.model_type} model does not call the attention function (it "
                    "mixes tokens another way), so it has no heads to change; blocks "
                    f"{', '.join(map(str, self.attention_layers))} have heads."
                )
            part = self.attention
        else:
            raise UnknownLayoutError(
                f"txviz cannot place the heads of this {self.model_type} model: {self.missing} So it "
                "cannot change a head or cut attention edges in it; the residual stream, the logit lens "
                "and changes to the stream between blocks work."
            )
        return f"{found.path}.{layer}.{part}"

    def place(self, stack: str, layer: int, cross: bool = False) -> str:
        """The canonical name of block ``layer``'s self- or cross-attention ('decoder.3.attn'), the key of
        its records; refused as ``attention_name`` refuses a place the map cannot give."""
        self.attention_name(stack, layer, cross)
        return f"{stack}.{layer}.{'cross' if cross else 'attn'}"

    def places(self) -> dict[str, str]:
        """Module path -> canonical name of every attention module the map places."""
        found = {}
        for stack in self.stacks:
            for layer in range(stack.n_layers):
                for cross in (False, True) if stack.cross else (False,):
                    try:
                        path = self.attention_name(stack.name, layer, cross)
                        found[path] = self.place(stack.name, layer, cross)
                    except UnknownLayoutError:  # a hybrid's other blocks, or heads discovery could not place
                        continue
        return found

    def point_name(self, point: str, stack: str, layer: int = 0) -> str:
        """The hooked point's canonical name ('decoder.3.ffn'), or a refusal naming the missing part."""
        if point == "embed":
            self.stack(stack)
            return f"{stack}.embed"
        if point == "final_norm":
            if not self.final_norm:
                raise UnknownLayoutError(f"txviz found no final norm in this {self.model_type} model.")
            return "final_norm"
        found = self.check_layer(stack, layer)
        if point in ("attn", "ffn", "cross") and point not in self.block_points(found):
            if point == "cross" and not found.cross:
                raise UserError(f"The {stack} of this model has no cross-attention.")
            part = {"attn": "attention", "ffn": "feed-forward network", "cross": "cross-attention"}[point]
            raise UnknownLayoutError(
                f"txviz does not know which module of this {self.model_type} model's block gives what its "
                f"{part} adds to the residual stream, so it cannot record or change {point!r}; the stream "
                "between blocks ('resid', 'embed') and the heads work."
            )
        return f"{stack}.{layer}.{point}"

    def unplaced(self, point: str, stack: str | None = None) -> str:
        """Why ``point`` ('ffn', 'attn', 'head_out', ...) cannot be placed in this model ("" when it can).

        A feature asks only for the points it needs: a head edit needs its attention module, not
        what the FFN adds, so a model placed by discovery runs it and refuses only the rest.
        """
        stack = stack or self.last_stack
        try:
            if point == "head_out":
                self.attention_name(stack, (self.attention_layers or (0,))[0])
            else:
                self.point_name(point, stack, 0)
        except UnknownLayoutError as error:
            return str(error)
        return ""

    def embeddings(self, model: torch.nn.Module) -> torch.nn.Module:
        """The module that makes the stream entering block 0 from ids and positions (BERT's embeddings)."""
        if self.record is None or self.record.embeddings is None or self.record.owner != "base":
            raise UnknownLayoutError(
                f"The model map names no embedding module of this {self.model_type} model."
            )
        return model.get_submodule(_join(self.base, self.record.embeddings))

    def owner(self, model: torch.nn.Module, stack: str | None = None) -> torch.nn.Module:
        """Where the stack's token and position tables live: the base model, or the stack's own module (BART)."""
        if self.record is not None and self.record.owner == "stack":
            return model.get_submodule(self.stack(stack or self.stacks[0].name).path.rsplit(".", 1)[0])
        return model.get_submodule(self.base) if self.base else model

    def token_table(self, model: torch.nn.Module, stack: str | None = None) -> torch.nn.Module:
        """The token embedding table of ``stack`` (the first stack by default)."""
        if self.record is None or self.record.tokens is None:
            return model.get_input_embeddings()
        return self.owner(model, stack).get_submodule(self.record.tokens)

    def position_table(self, model: torch.nn.Module, kind: str, stack: str | None = None) -> torch.nn.Module:
        """The module the record names for positions of ``kind`` ("learned" table or "rotary" angles)."""
        positions = self.record.positions if self.record is not None else None
        if positions is None or positions.kind != kind or positions.table is None:
            raise UnknownLayoutError(
                f"The model map names no {kind} position module of this {self.model_type} model."
            )
        return self.owner(model, stack).get_submodule(positions.table)

    def embedding_part(self, model: torch.nn.Module, role: str) -> torch.nn.Module | None:
        """BERT's embedding parts by role ("segments", "embedding_norm"), from the owner; None where unnamed."""
        path = getattr(self.record, role, None) if self.record is not None else None
        return None if path is None else self.owner(model).get_submodule(path)

    @property
    def norm_offset(self) -> float:
        """What an RMSNorm adds to its weight to make its gain (1 for Gemma, else 0)."""
        return self.record.norm_offset if self.record is not None else 0.0

    @property
    def in_out(self) -> bool:
        """True when projections store W as (in, out) (GPT-2's Conv1D)."""
        return self.record is not None and self.record.in_out

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
    record = record_for(model_type)
    if record is None and _causal_lm(model):
        return _generic(model, model_type)
    if record is None and _vision(model):
        return _generic(model, model_type, "encoder")
    if record is None:
        raise UnknownLayoutError(
            f"txviz cannot write out the block of a '{model_type}' model: it knows {WRITTEN_OUT}, the "
            "decoders listed in docs/model-families.md, and finds the blocks of other causal language "
            "models by itself. Its attention is still on the Attention Explorer page."
        )
    return _placed(model, model_type, record)


def _placed(model: torch.nn.Module, model_type: str, record: Record) -> Layout:
    base = module_names(model).get(id(model.base_model), "")
    stacks = []
    for name, path in record.stacks:
        full = _join(base, path)
        blocks = model.get_submodule(full) if _has(model, full) else None
        if not isinstance(blocks, torch.nn.ModuleList) or not len(blocks):
            raise UnknownLayoutError(
                f"This {model_type} model has no {name} blocks where txviz expects them ({full})."
            )
        cross = record.cross is not None and name == "decoder"
        missing = [p for p in record.in_stack(name).required(cross) if not _has(blocks[0], p)]
        extra = [p for p in record.forbidden if _has(blocks[0], p)]
        if missing or extra:
            what = f"lacks {', '.join(missing)}" if missing else f"also has {', '.join(extra)}"
            raise UnknownLayoutError(
                f"This {model_type} model's block {what}: its layout is not the {record.name} layout txviz "
                "knows for this model type."
            )
        stacks.append(Stack(name, full, len(blocks), cross))
    final = _join(base, record.final_norm) if record.final_norm else None
    head = record.head if record.head and _has(model, record.head) else None
    return Layout(record.name, record.form_of(model.config), base, tuple(stacks), final, head, model_type,
                  record)  # fmt: skip


def _causal_lm(model: torch.nn.Module) -> bool:
    return not getattr(model.config, "is_encoder_decoder", False) and _output_head(model) is not None


def _output_head(model: torch.nn.Module) -> torch.nn.Module | None:
    try:
        return model.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        return None


def _vision(model: torch.nn.Module) -> bool:
    """A vision encoder (ViT, DeiT, DINOv2...): it reads pixels and is not an encoder-decoder."""
    return getattr(model, "main_input_name", "") == "pixel_values" and not model.config.is_encoder_decoder


def probe_inputs(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A few tokens, or one blank image of the config's size for a vision encoder."""
    config, weight = model.config, next(model.parameters())
    device = weight.device
    if _vision(model):
        size = config.image_size if isinstance(config.image_size, (tuple, list)) else (config.image_size,) * 2
        shape = (1, getattr(config, "num_channels", 3), *size)
        return {"pixel_values": torch.zeros(shape, device=device, dtype=weight.dtype)}
    ids = torch.tensor([[1, 2, 3]], device=device) % max(int(getattr(config, "vocab_size", 4) or 4), 4)
    return {"input_ids": ids}


def _generic(model: torch.nn.Module, model_type: str, stack: str = "decoder") -> Layout:
    """A causal LM or a vision encoder with no record: its blocks (the base model's list of as many
    modules as the config has layers), the final norm beside them and the output embedding, found
    generically; the module of each block that calls the attention function, found by discovery."""
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
    stacks = (Stack(stack, path, n_layers, False),)
    attention, missing, layers = discover_attention(model, path, n_layers)
    return Layout(GENERIC, "unknown", base, stacks, final, head, model_type, None, attention, missing, layers)


_probed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> attention modules called


_probe: Callable[[torch.nn.Module], tuple[list[str] | None, str]] | None = None


def remember_probe(model: torch.nn.Module, called: list[str]) -> None:
    """The modules that called the attention function in the load's own probe forward, in call order."""
    _probed[model] = tuple(called)


def set_probe(probe: Callable[[torch.nn.Module], tuple[list[str] | None, str]]) -> None:
    """Install the short probe forward discovery runs on a model built elsewhere.

    txviz.core.running installs it as it is imported: the front door imports this module, so this
    module cannot import the front door back.
    """
    global _probe
    _probe = probe


def discover_attention(
    model: torch.nn.Module, path: str, n_layers: int
) -> tuple[str | None, str, tuple[int, ...] | None]:
    """(path in each block of the module that calls the attention function, "", the blocks that call
    it: None when every one does) or (None, why not, None).

    A hybrid model (attention in some blocks, another token mixer in the rest) has its heads placed
    in the blocks that call the attention function; a head of another block is refused by name.

    The load's probe forward ran under the capture ContextVar, where the attention function names
    every module that calls it, in call order; a model built elsewhere gets one short probe here.
    """
    called = _probed.get(model)
    if called is None:
        if _probe is None:
            return None, "no probe forward is installed (import txviz.core.running first).", None
        called, why = _probe(model)
        if called is None:
            return None, why, None
    parts = {}
    for name in called:
        layer, _, part = name.removeprefix(f"{path}.").partition(".")
        if not name.startswith(f"{path}.") or not layer.isdigit() or not part:
            return None, f"the module {name} calls the attention function outside the blocks in {path}.", None
        parts.setdefault(int(layer), set()).add(part)
    if not parts or not set(parts) <= set(range(n_layers)):
        return None, f"{len(parts)} of its {n_layers} blocks called the attention function in a probe.", None
    kinds = set.union(*parts.values())
    if len(kinds) != 1:
        return (
            None,
            f"each block calls the attention function from {len(kinds)} modules ({', '.join(sorted(kinds))}).",
            None,
        )
    layers = None if len(parts) == n_layers else tuple(sorted(parts))
    return kinds.pop(), "", layers


_layouts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_places: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def place_names(model: torch.nn.Module) -> dict[int, str]:
    """id -> canonical place name ('decoder.3.attn') of every attention module the map places, once per
    model; empty for a model the map cannot place (its records keep their module paths)."""
    names = _places.get(model)
    if names is None:
        try:
            places = cached_layout(model).places()
        except (UnknownLayoutError, AttributeError):  # no record and no discovery: an encoder of its own
            places = {}
        # By the ids module_names sees (named_modules), as the records' fallback keys are: the same module
        # object the attention call receives, whatever get_submodule would return on a wrapped model.
        by_path = {path: key for key, path in module_names(model).items()}
        names = _places[model] = {by_path[path]: place for path, place in places.items() if path in by_path}
    return names


def cached_layout(model: torch.nn.Module) -> Layout:
    """``layout_of`` once per model: every recorded or edited run asks for it (discovery probes once)."""
    layout = _layouts.get(model)
    if layout is None:
        layout = _layouts[model] = layout_of(model)
    return layout
