"""The inputs of a live module read from the module, for grassaudit.audit(model, seq_len=L)
without `inputs`, as `grassaudit audit --model FILE` reads them from a file:

  an argument named like token ids (input_ids, ids, tokens, ..._ids)   tokens:V, V the
                                                                       num_embeddings of the
                                                                       module's first nn.Embedding
  an argument named like a mask (attention_mask), without a default    ones
  the other argument without a default                                 from the module's first
                                                                       nn.Embedding (tokens:V),
                                                                       nn.Linear (features:in_features)
                                                                       or nn.Conv1d (features:in_channels),
                                                                       whichever comes first
Arguments with defaults that are none of these are left to their defaults. Anything the module
does not say is a ValueError with one line naming each argument and what to pass.
"""
import inspect
from typing import List, Optional, Tuple

import torch.nn as nn

from ._adapter import annotation_str

_IDS = ("ids", "input_ids", "tokens", "token_ids", "input_tokens", "idx")


def _looks_like_ids(name: str) -> bool:
    lower = name.lower()
    return lower in _IDS or lower.endswith("_ids")


def _first(model: nn.Module, kinds: tuple) -> Optional[nn.Module]:
    return next((m for m in model.modules() if isinstance(m, kinds)), None)


def _kind_of_first_layer(model: nn.Module) -> Optional[str]:
    layer = _first(model, (nn.Embedding, nn.Linear, nn.Conv1d))
    if isinstance(layer, nn.Embedding):
        return f"tokens:{layer.num_embeddings}"
    if isinstance(layer, nn.Linear):
        return f"features:{layer.in_features}"
    if isinstance(layer, nn.Conv1d):
        return f"features:{layer.in_channels}"
    return None


def infer_inputs(model: nn.Module, label: str) -> List[Tuple[str, str]]:
    """[(argument, KIND)] in forward's order; ValueError with one line when the module does not
    say enough (`label` starts it, as the engine's messages start with the module)."""
    params = [p for p in inspect.signature(model.forward).parameters.values()
              if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    found: List[Tuple[str, str, Optional[str], str]] = []  # name, type, KIND or None, what to pass
    first_layer_used = False
    for p in params:
        required = p.default is inspect.Parameter.empty
        kind: Optional[str] = None
        if _looks_like_ids(p.name):
            emb = _first(model, (nn.Embedding,))
            kind = None if emb is None else f"tokens:{emb.num_embeddings}"
            hint = f"{p.name}=tokens:V (the module has no nn.Embedding)"
        elif "mask" in p.name.lower():
            kind = "ones" if required else None
            hint = f"{p.name}=ones"
        elif required and not first_layer_used:
            first_layer_used = True  # the first layer's width tells one argument, the first
            kind = _kind_of_first_layer(model)
            hint = f"{p.name}=features:C or {p.name}=tokens:V (no nn.Embedding, nn.Linear or nn.Conv1d to read it from)"
        else:
            hint = f"{p.name}=features:C or {p.name}=tokens:V"
        if kind is None and not required:
            continue  # left to its default
        found.append((p.name, annotation_str(p.annotation), kind, hint))
    if not found:
        raise ValueError(f"{label}: cannot infer the inputs: forward names no argument to bind; pass inputs=[...]")
    if all(kind is not None for _, _, kind, _ in found):
        return [(name, kind) for name, _, kind, _ in found]
    parts = [f"{name} ({type_}: {kind})" if kind is not None else f"{name} ({type_}: pass {hint})"
             for name, type_, kind, hint in found]
    raise ValueError(f"{label}: cannot infer the inputs: {', '.join(parts)}; pass inputs=[...], one per argument")

