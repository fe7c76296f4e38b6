"""Which calls in a source file run (part of) a model: the front door's AST check, by where a value came from.

A value is a model, or a piece of one, when it came from what ``loaded`` or the model map hands out:
any ``.model`` attribute (``loaded.model``, ``run.model``), a parameter annotated as a torch module or
a transformers model, a module getter called on one (``get_submodule(...)``, ``get_input_embeddings()``,
``get_encoder()``...), an attribute or an item of one that is not a method (``model.lm_head``,
``base.rotary_emb``, a block ``layers[3]``), a loop over one, ``type(model).from_pretrained(...)``, and
the return value of a function in the same file that returns one, and a parameter that some call,
in this file or another of the project (``project_forward_calls``), gives one. Calling such a value, or its
``forward``, ``generate`` or ``__call__``, is a forward pass; calling one of its methods
(``eval()``, ``parameters()``, ``get_input_embeddings()``) is not.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from functools import cache

# Methods whose result is a module again: a later call of that result is a forward.
GETTERS = {
    "get_submodule",
    "get_input_embeddings",
    "get_output_embeddings",
    "get_encoder",
    "get_decoder",
    "get_base_model",
    "eval",
    "train",
    "to",
    "float",
    "half",
    "bfloat16",
    "cpu",
    "cuda",
    "requires_grad_",
}
FORWARDS = {"forward", "generate", "__call__"}
LOADERS = {"from_pretrained", "from_config", "_from_config"}
# Attributes of a model that hold data, not modules: calling their methods runs nothing.
DATA = {"config", "generation_config", "weight", "bias", "data", "grad", "shape", "device", "dtype"}
MODULE_TYPES = ("Module", "PreTrainedModel", "ModuleList")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@cache
def methods() -> frozenset[str]:
    """Every method name of a torch module or a transformers model (their calls are not forwards)."""
    import torch
    import transformers

    names = set()
    for cls in (torch.nn.Module, transformers.PreTrainedModel, transformers.GenerationMixin):
        # properties (``base_model``) hand out modules; only functions are methods
        names |= {n for n in dir(cls) if not isinstance(inspect.getattr_static(cls, n, None), property)}
    return frozenset(names - FORWARDS)


class _Scope:
    """The names bound to a model in one function (and the functions around it)."""

    def __init__(self, parent: _Scope | None, returns_module: set[str]):
        self.parent = parent
        self.names: set[str] = set()
        self.returns_module = returns_module

    def has(self, name: str) -> bool:
        return name in self.names or (self.parent is not None and self.parent.has(name))

    def is_module(self, node: ast.expr) -> bool:
        """Whether ``node`` evaluates to a model or a piece of one (not a bound method, not data)."""
        if isinstance(node, ast.Name):
            return self.has(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "model":
                return True
            if node.attr in DATA or node.attr in methods() or node.attr in FORWARDS:
                return False
            return self.is_module(node.value)
        if isinstance(node, ast.Subscript):
            return self.is_module(node.value)
        if isinstance(node, ast.IfExp):
            return self.is_module(node.body) or self.is_module(node.orelse)
        if isinstance(node, ast.BoolOp):
            return any(self.is_module(v) for v in node.values)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                if func.id == "getattr" and node.args:
                    named = node.args[1] if len(node.args) > 1 else None
                    if isinstance(named, ast.Constant) and (named.value in DATA or named.value in methods()):
                        return False  # getattr(norm, "weight"): data, like norm.weight
                    return self.is_module(node.args[0])
                return func.id in self.returns_module
            if isinstance(func, ast.Attribute):
                if func.attr in GETTERS:
                    return self.is_module(func.value)
                if func.attr in LOADERS:
                    return _is_model_class(func.value, self)
        return False

    def is_forward(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in FORWARDS:
            return self.is_module(func.value)
        return self.is_module(func)


def _is_model_class(node: ast.expr, scope: _Scope) -> bool:
    """``type(model)`` or a class named like a model (``AutoModelForCausalLM``)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and node.args
    ):
        return scope.is_module(node.args[0])
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return "Model" in name or "For" in name


def _annotated_module(arg: ast.arg) -> bool:
    return arg.annotation is not None and any(t in ast.unparse(arg.annotation) for t in MODULE_TYPES)


def _assigned(scope: _Scope, target: ast.expr, value: ast.expr) -> list[str]:
    """Names of ``target`` that ``value`` binds to a model (pairwise for ``a, b = x, y``)."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return [n for t, v in zip(target.elts, value.elts, strict=True) for n in _assigned(scope, t, v)]
    return _targets(target) if scope.is_module(value) else []


def _yields_modules(scope: _Scope, iterable: ast.expr) -> bool:
    """A loop over blocks (``model.layers``, ``enumerate(blocks)``, ``model.modules()``)."""
    if scope.is_module(iterable):
        return True
    if isinstance(iterable, ast.Call):
        func = iterable.func
        if isinstance(func, ast.Name) and func.id in ("enumerate", "zip", "reversed", "list", "sorted"):
            return any(_yields_modules(scope, a) for a in iterable.args)
        if isinstance(func, ast.Attribute) and func.attr in (
            "modules",
            "children",
            "named_modules",
            "named_children",
        ):
            return scope.is_module(func.value)
        if isinstance(func, ast.Attribute) and func.attr in ("items", "values"):
            return _yields_modules(scope, func.value)
    return False


def _targets(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _bind(scope: _Scope, body: list[ast.stmt]) -> None:
    """Add to the scope every name assigned a model in this body, until nothing changes."""
    statements = [n for stmt in body for n in _walk_here(stmt)]
    changed = True
    while changed:
        changed = False
        for node in statements:
            names: list[str] = []
            if isinstance(node, ast.Assign):
                names = [n for t in node.targets for n in _assigned(scope, t, node.value)]
            elif (
                (
                    isinstance(node, (ast.AnnAssign, ast.NamedExpr))
                    and node.value
                    and scope.is_module(node.value)
                )
                or isinstance(node, (ast.For, ast.comprehension))
                and _yields_modules(scope, node.iter)
            ):
                names = _targets(node.target)
            elif isinstance(node, ast.withitem) and node.optional_vars and scope.is_module(node.context_expr):
                names = _targets(node.optional_vars)
            new = set(names) - scope.names
            if new:
                scope.names |= new
                changed = True


def _walk_here(node: ast.AST):
    """Every node of ``node`` except the insides of nested functions (they get their own scope)."""
    if isinstance(node, FUNCTIONS):
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _walk_here(child)


def forward_calls(source: str) -> list[int]:
    """Line numbers of every call that runs a model or a piece of one in ``source``."""
    return _fixed_point(ast.parse(source), frozenset(), None)[0]


def project_forward_calls(sources: dict[str, str]) -> dict[str, list[int]]:
    """``forward_calls`` of every file ("txviz/positional/relative.py" -> source), following a model
    given to a function of another file: that function's parameter is a model there too."""
    trees = {path: ast.parse(source) for path, source in sources.items()}
    by_module = {_module_name(path): path for path in trees}
    defs = {path: _defs(tree) for path, tree in trees.items()}

    def resolver(path: str):
        imports = _imports(trees[path])

        def resolve(call: ast.Call):
            func = call.func
            if isinstance(func, ast.Name) and func.id in imports:
                target = imports[func.id]
            elif (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in imports
            ):
                target = f"{imports[func.value.id]}.{func.attr}"
            else:
                return None
            module, _, name = target.rpartition(".")
            other = by_module.get(module)
            return (other, defs[other][name]) if other is not None and name in defs[other] else None

        return resolve

    given: dict[str, frozenset] = {path: frozenset() for path in trees}
    while True:  # what files hand each other, to a fixed point
        lines, handed = {}, {path: set(given[path]) for path in trees}
        for path, tree in trees.items():
            lines[path], external = _fixed_point(tree, given[path], resolver(path))
            for other, function, parameter in external:
                handed[other].add((function, parameter))
        handed = {path: frozenset(pairs) for path, pairs in handed.items()}
        if handed == given:
            return lines
        given = handed


def _module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _defs(tree: ast.Module) -> dict:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as (absolute imports only)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.asname: a.name for a in node.names if a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return found


def _fixed_point(tree: ast.Module, given: frozenset, resolve) -> tuple[list[int], set]:
    """(forward lines, (file, function, parameter) of other files' functions handed a model)."""
    known = Known(params=given)
    while True:  # what this file's functions hand out and are handed, to a fixed point
        lines, found, external = _scan(tree, known, resolve)
        if found == known:
            return sorted(set(lines)), external
        known = found


@dataclass(frozen=True)
class Known:
    """Functions of one file that return a model, and their parameters that some call gives one."""

    returns_module: frozenset[str] = frozenset()
    params: frozenset[tuple[str, str]] = frozenset()  # (function, parameter)


def _given(call: ast.Call, defs: dict, scope: _Scope) -> set[tuple[str, str]]:
    """(function, parameter) pairs that this call of a function of the file gives a model."""
    if not isinstance(call.func, ast.Name) or call.func.id not in defs:
        return set()
    fn = defs[call.func.id]
    return {(fn.name, p) for p in _handed(fn, call, scope)}


def _handed(fn: ast.FunctionDef, call: ast.Call, scope: _Scope) -> set[str]:
    """The parameters of ``fn`` that ``call`` gives a model."""
    positional = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    names = {p for p, a in zip(positional, call.args, strict=False) if scope.is_module(a)}
    return names | {k.arg for k in call.keywords if k.arg and scope.is_module(k.value)}


def _scan(tree: ast.Module, known: Known, resolve=None) -> tuple[list[int], Known, set]:
    lines: list[int] = []
    returning: set[str] = set(known.returns_module)
    params: set[tuple[str, str]] = set(known.params)
    external: set[tuple[str, str, str]] = set()
    defs = _defs(tree)

    def visit(node: ast.AST, parent: _Scope | None) -> None:
        scope = _Scope(parent, set(known.returns_module))
        if isinstance(node, FUNCTIONS):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            scope.names |= {a.arg for a in every if _annotated_module(a)}
            if not isinstance(node, ast.Lambda):
                scope.names |= {a.arg for a in every if (node.name, a.arg) in known.params}
                if node.returns is not None and any(t in ast.unparse(node.returns) for t in MODULE_TYPES):
                    returning.add(node.name)
            body = node.body if isinstance(node.body, list) else [ast.Expr(node.body)]
        else:
            body = node.body
        _bind(scope, body)
        for stmt in body:
            if isinstance(stmt, FUNCTIONS):
                visit(stmt, scope)
            for sub in _walk_here(stmt):
                if isinstance(sub, ast.Call):
                    if scope.is_forward(sub):
                        lines.append(sub.lineno)
                    params.update(_given(sub, defs, scope))
                    target = resolve(sub) if resolve is not None else None
                    if target is not None:
                        other, fn = target
                        external.update((other, fn.name, p) for p in _handed(fn, sub, scope))
                if (
                    isinstance(sub, ast.Return)
                    and sub.value is not None
                    and isinstance(node, ast.FunctionDef)
                ):
                    values = sub.value.elts if isinstance(sub.value, ast.Tuple) else [sub.value]
                    if any(scope.is_module(v) for v in values):
                        returning.add(node.name)
                for child in ast.iter_child_nodes(sub):
                    if isinstance(child, FUNCTIONS):
                        visit(child, scope)

    visit(tree, None)
    return lines, Known(frozenset(returning), frozenset(params)), external
