"""all-MiniLM-L6-v2 as an ONNX graph built straight from its safetensors weights (no torch).

The graph is the BERT encoder of the checkpoint (embeddings, 6 layers of self-attention and
feed-forward, post-layer-norm), then mean pooling over the attention mask and L2 normalisation,
so its output is the sentence embedding sentence-transformers gives. Building it needs only
numpy and the `onnx` package, on any CPython the wheels exist for; `prepare.py` verifies the
result against the reference before anything uses it.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17  # LayerNormalization is a single operator from 17 on
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file (an 8-byte header length, a JSON header of names,
    dtypes, shapes and byte ranges, then the raw little-endian data)."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}, not supported")
        start, end = info["data_offsets"]
        arr = np.frombuffer(raw[base + start : base + end], dtype=_DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"]).astype(np.float32, copy=False)
    return out


class _Graph:
    """Nodes and initializers, named in order."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, w: dict[str, np.ndarray], prefix: str) -> str:
        """x @ W.T + b, as the checkpoint stores W (out, in)."""
        weight = self.const(prefix + ".weight_t", w[prefix + ".weight"].T)
        bias = self.const(prefix + ".bias", w[prefix + ".bias"])
        return self.op("Add", self.op("MatMul", x, weight), bias)

    def layer_norm(self, x: str, w: dict[str, np.ndarray], prefix: str, eps: float) -> str:
        gamma = self.const(prefix + ".weight", w[prefix + ".weight"])
        beta = self.const(prefix + ".bias", w[prefix + ".bias"])
        return self.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)


def build_model(folder: Path) -> Any:
    """The ONNX model (inputs input_ids, attention_mask, token_type_ids of shape [batch, tokens];
    output sentence_embedding [batch, hidden]) for the BERT checkpoint in `folder`."""
    from onnx import TensorProto, checker, helper

    config = json.loads((folder / "config.json").read_text())
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise ValueError(f"{folder}: not a BERT checkpoint with exact GELU ({config})")
    w = read_safetensors(folder / "model.safetensors")
    w = {k.removeprefix("bert."): v for k, v in w.items()}
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config["layer_norm_eps"])
    g = _Graph()

    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    # positions 0..tokens-1, as a slice of the checkpoint's position ids (the form onnxruntime's
    # fusions expect: a Range from a scalar count made its fused embedding read a bad Slice)
    tokens = g.op("Shape", ids, start=1, end=2)
    position_ids = np.arange(int(config["max_position_embeddings"]), dtype=np.int64)[None, :]
    positions = g.op(
        "Slice",
        g.const("position_ids", position_ids),
        g.const("zero_1d", np.array([0], dtype=np.int64)),
        tokens,
        g.const("axis_1", np.array([1], dtype=np.int64)),
    )
    emb = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", g.const("word", w["embeddings.word_embeddings.weight"]), ids),
            g.op(
                "Gather", g.const("position", w["embeddings.position_embeddings.weight"]), positions
            ),
        ),
        g.op("Gather", g.const("token_type", w["embeddings.token_type_embeddings.weight"]), types),
    )
    h = g.layer_norm(emb, w, "embeddings.LayerNorm", eps)

    mask_f = g.op("Cast", mask, to=TensorProto.FLOAT)
    # padded keys get the float32 minimum added to their scores, as transformers does
    keep = g.op("Unsqueeze", mask_f, g.const("axes_1_2", np.array([1, 2], dtype=np.int64)))
    one_f = g.const("one_f", np.array(1.0, dtype=np.float32))
    fmin = g.const("fmin", np.array(np.finfo(np.float32).min, dtype=np.float32))
    key_bias = g.op("Mul", g.op("Sub", one_f, keep), fmin)
    split = g.const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge = g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        # queries and values [batch, heads, tokens, head_dim]; keys [batch, heads, head_dim, tokens]
        q, k, v = (
            g.op(
                "Transpose",
                g.op("Reshape", g.linear(h, w, p + "attention.self." + name), split),
                perm=perm,
            )
            for name, perm in (
                ("query", [0, 2, 1, 3]),
                ("key", [0, 2, 3, 1]),
                ("value", [0, 2, 1, 3]),
            )
        )
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), key_bias)
        ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        ctx = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]), merge)
        attended = g.linear(ctx, w, p + "attention.output.dense")
        h1 = g.layer_norm(g.op("Add", attended, h), w, p + "attention.output.LayerNorm", eps)
        inner = g.linear(h1, w, p + "intermediate.dense")
        gelu = g.op(
            "Mul",
            g.op("Mul", inner, g.op("Add", g.op("Erf", g.op("Div", inner, sqrt2)), one_f)),
            half,
        )
        out = g.linear(gelu, w, p + "output.dense")
        h = g.layer_norm(g.op("Add", out, h1), w, p + "output.LayerNorm", eps)

    axis_1 = "axis_1"
    weights = g.op("Unsqueeze", mask_f, g.const("axis_2", np.array([2], dtype=np.int64)))
    summed = g.op("ReduceSum", g.op("Mul", h, weights), axis_1, keepdims=0)
    floor = g.const("count_floor", np.array(1e-9, dtype=np.float32))
    count = g.op("Max", g.op("ReduceSum", weights, axis_1, keepdims=0), floor)
    pooled = g.op("Div", summed, count)
    norm = g.op("Sqrt", g.op("ReduceSum", g.op("Mul", pooled, pooled), axis_1, keepdims=1))
    norm = g.op("Max", norm, g.const("norm_floor", np.array(1e-12, dtype=np.float32)))
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"]))

    dims = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2-sentence-embedding",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in (ids, mask, types)],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="reos-memory",
    )
    model.ir_version = 8  # read by every onnxruntime since 1.10
    checker.check_model(model, full_check=True)
    return model


def export(folder: Path, target: Path) -> None:
    """Write the model built from `folder` to the file `target`."""
    import onnx

    onnx.save_model(build_model(folder), str(target))
