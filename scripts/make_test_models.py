#!/usr/bin/python3
"""Make the ONNX test models in tests/data/models/ (run once; the outputs are committed).

Uses Debian's python3-torch, python3-torchvision and python3-onnx:
    apt-get install -y python3-torch python3-torchvision python3-onnx
    /usr/bin/python3 scripts/make_test_models.py [OUTDIR]

Real networks are exported with torch.onnx.export and then stripped of their weights: every
initializer becomes a graph input that carries only its type and shape, so a 100 MB ResNet-50
shrinks to some tens of kilobytes. Integer and one-element initializers (shape vectors, the
exponent of a Pow, an epsilon) keep their values and become Constant nodes, because the importer
needs them to keep shapes static. Weights are random: only shapes matter to tessera.

Outputs:
  resnet50.onnx      torchvision ResNet-50, batch 1, 3x224x224, opset 13, exported in training
                     mode preservation so BatchNormalization stays a separate node (the importer
                     folds it into the convolution before it)
  bert_layer.onnx    one BERT-base encoder layer (hidden 768, 12 heads, FFN 3072, sequence 128),
                     opset 13, so LayerNorm appears as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/
                     Mul/Add and GELU as Div/Erf/Add/Mul/Mul
  bert_layer_dyn.onnx  the same layer exported with dynamic batch and sequence axes, so the graph
                     computes its reshapes from Shape at run time (the importer folds them once
                     the symbolic dimensions are given)
  vit_b16.onnx       torchvision ViT-B/16, batch 1, 3x224x224, opset 17 (LayerNormalization op)
  conv.onnx          one 3x3 convolution with bias, 1x3x32x32 -> 1x16x32x32
  matmul.onnx        one MatMul of two data inputs, A[64,128] x B[128,32]
  softmax.onnx       Softmax over the last axis of a 2x10 input
  conv_bn.onnx       Conv (no bias) + BatchNormalization + Relu, weights kept (not stripped)
  unsupported.onnx   a graph with two unsupported operators, to test the error text
  unsupported10.onnx  a graph with ten unsupported operators (LRN and TopK twice): one error names all
  hardswish.onnx     HardSwish (opset 14) and torch's opset-13 forms of it (HardSigmoid and Mul;
                     Add, Clip, Mul and Div), then a HardSigmoid that is no HardSwish
  layout.onnx        the forms finalize rewrites: Expand to the same shape, constant-index Gather,
                     Split, Transpose of a weight without values and of a constant with values;
                     also an embedding Gather (data input ids) and a real Expand
  split18.onnx       Split into 3 by num_outputs (opset 18): 7 columns as 3, 3 and 1
  conv_dilated.onnx  a Conv at batch 3 with 4 groups, dilations 2x1, strides 2x1, pads 2,1,2,1
  ops.onnx           many operators in one graph: auto_pad, Clip with input bounds, shape
                     arithmetic (Shape, Gather, Unsqueeze, Concat, Range) feeding Reshape and
                     Gather, Squeeze/Unsqueeze of activations, Slice, ReduceMean, Softmax

The model zoo (written with --zoo, or with everything else): the models every chip must run,
exported as a user would (torch.onnx.export, opset 13, eval mode, the exporter's constant folding):
  resnet18.onnx      torchvision ResNet-18, batch 1, 3x224x224
  resnet50_b8.onnx   torchvision ResNet-50, batch 8, 3x224x224
  mobilenetv2.onnx   torchvision MobileNetV2, batch 1, 3x224x224 (ReLU6 as Clip, depthwise Conv)
  vit_b16_op13.onnx  torchvision ViT-B/16, batch 1, opset 13 (LayerNorm decomposed; the class token
                     through Expand and Concat, picked with Gather)
  bert_encoder.onnx  a 12-layer BERT-base encoder from nn.TransformerEncoder (d 768, 12 heads, FFN
                     3072, GELU, batch_first), batch 1, sequence 128: the packed in-projection comes
                     out as three Slices whose ends are computed from Shape
  bert_encoder_b4.onnx  the same at batch 4
  nerf_mlp.onnx      the NeRF MLP: 63 inputs, 8 x 256 with ReLU, the input joined again by Concat
                     before layer 5, a 4-wide output; 4,096 rays
  vit_b16_b4.onnx    vit_b16_op13.onnx's ViT-B/16 at batch 4

With --small only the graphs built with onnx.helper are rewritten; with --zoo only the zoo.
With --totals nothing is written: torch's MACs and parameter counts of each zoo model are printed
(counted from the aten products and convolutions of a forward pass), the figures the importer's
totals must equal (tests/workloads/test_onnx.c).
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision
from onnx import helper, numpy_helper, TensorProto
from torch.utils._python_dispatch import TorchDispatchMode

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
SMALL_ONLY = "--small" in sys.argv[1:]
ZOO_ONLY = "--zoo" in sys.argv[1:]
TOTALS_ONLY = "--totals" in sys.argv[1:]
OUT = ARGS[0] if ARGS else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "models")
KEEP_ELEMS = 1  # initializers this small (scalars), or of integer type, keep their values


def strip(model):
    """Turn initializers into shape-only graph inputs; small/integer ones into Constant nodes."""
    g = model.graph
    inputs = [i.name for i in g.input]
    consts = []
    for init in list(g.initializer):
        n = int(np.prod(init.dims)) if len(init.dims) else 1
        is_int = init.data_type in (TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL)
        if is_int or n <= KEEP_ELEMS:
            consts.append(helper.make_node("Constant", [], [init.name], name="const_" + init.name,
                                           value=init))
            if init.name in inputs:
                g.input.remove(next(i for i in g.input if i.name == init.name))
        elif init.name not in inputs:
            g.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    del g.initializer[:]
    nodes = consts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    return model


def randomise(module):
    """Give every parameter and buffer distinct random values: the exporter merges initializers
    with equal contents (fresh biases are all zero) into one, behind Identity nodes."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p))
        for name, b in module.named_buffers():
            if b.is_floating_point():
                b.copy_(torch.rand_like(b) + 0.5)


def export(module, args, name, opset, strip_weights=True, **kw):
    path = os.path.join(OUT, name)
    randomise(module)
    module.eval()
    torch.onnx.export(module, args, path, opset_version=opset, do_constant_folding=True, **kw)
    model = onnx.load(path)
    if strip_weights:
        model = strip(model)
    onnx.save(model, path)
    print("%-20s %8d bytes" % (name, os.path.getsize(path)))


class BertLayer(nn.Module):
    """One BERT-base encoder layer as in the original BERT (post-LayerNorm, GELU with erf)."""

    def __init__(self, hidden=768, heads=12, ffn=3072):
        super().__init__()
        self.h, self.nh, self.dh = hidden, heads, hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.nh, self.dh).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (self.dh ** 0.5)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, s, self.h)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.fc2(nn.functional.gelu(self.fc1(x))))


class ConvBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class BertEncoder(nn.Module):
    """A BERT-base encoder as torch users build it: nn.TransformerEncoder, post-LayerNorm, GELU."""

    def __init__(self, layers=12, hidden=768, heads=12, ffn=3072):
        super().__init__()
        layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)

    def forward(self, x):
        return self.enc(x)


class NerfMlp(nn.Module):
    """The NeRF MLP (Mildenhall et al. 2020): 8 x 256 ReLU layers, the encoded input (63 wide)
    joined again by concatenation before the fifth layer; here a 4-wide output (RGB and density)."""

    def __init__(self, inputs=63, width=256, depth=8, skip=5):
        super().__init__()
        self.skip = skip
        self.layers = nn.ModuleList(
            [nn.Linear(inputs if i == 0 else width + (inputs if i == skip else 0), width) for i in range(depth)])
        self.out = nn.Linear(width, 4)

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.layers):
            if i == self.skip:
                h = torch.cat([h, x], -1)
            h = torch.relu(layer(h))
        return self.out(h)


def zoo_models():
    """The zoo: (file name, module, example input, input name, output name), batch as exported."""
    img = torch.randn(1, 3, 224, 224)
    return [
        ("resnet18.onnx", torchvision.models.resnet18(), img, "input", "logits"),
        ("resnet50_b8.onnx", torchvision.models.resnet50(), torch.randn(8, 3, 224, 224), "input", "logits"),
        ("mobilenetv2.onnx", torchvision.models.mobilenet_v2(), img, "input", "logits"),
        ("vit_b16_op13.onnx", torchvision.models.vit_b_16(), img, "input", "logits"),
        ("bert_encoder.onnx", BertEncoder(), torch.randn(1, 128, 768), "hidden", "out"),
        ("bert_encoder_b4.onnx", BertEncoder(), torch.randn(4, 128, 768), "hidden", "out"),
        ("nerf_mlp.onnx", NerfMlp(), torch.randn(4096, 63), "rays", "rgba"),
        ("vit_b16_b4.onnx", torchvision.models.vit_b_16(), torch.randn(4, 3, 224, 224), "input", "logits"),
    ]


def zoo():
    torch.manual_seed(1)
    for name, module, x, iname, oname in zoo_models():
        export(module, x, name, 13, input_names=[iname], output_names=[oname])


class MacCounter(TorchDispatchMode):
    """Multiply-accumulates of the aten matrix products and convolutions a forward pass runs."""

    def __init__(self):
        super().__init__()
        self.macs = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        op = func.overloadpacket.__name__
        if op in ("mm", "addmm"):
            a, b = args[-2:] if op == "addmm" else args[:2]
            self.macs += a.shape[0] * a.shape[1] * b.shape[1]
        elif op in ("bmm", "baddbmm"):
            a, b = args[1:3] if op == "baddbmm" else args[:2]
            self.macs += a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
        elif op == "convolution":
            w = args[1]
            self.macs += out.numel() * w.shape[1] * w.shape[2] * w.shape[3]
        return out


def totals():
    """Print torch's MACs and parameters of each zoo model, the figures tests/workloads/test_onnx.c
    expects of the importer. Parameters are counted as the exported graph carries them: the
    exporter folds each BatchNormalization into the convolution before it, so a BatchNorm's
    scale and shift (2 C) become that convolution's bias (C)."""
    torch.manual_seed(1)
    for name, module, x, _, _ in zoo_models():
        module.eval()
        for p in module.parameters():
            p.requires_grad_(True)  # keeps nn.TransformerEncoder off its fused fast path
        with MacCounter() as c:
            module(x)
        params = sum(p.numel() for p in module.parameters())
        params -= sum(m.num_features for m in module.modules() if isinstance(m, nn.BatchNorm2d))
        print("%-22s macs %14d  params %10d" % (name, c.macs, params))


def small_graphs():
    conv = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv0", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1], strides=[1, 1])],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 32, 32])],
        [numpy_helper.from_array(np.ones((16, 3, 3, 3), np.float32), "w"),
         numpy_helper.from_array(np.zeros(16, np.float32), "b")])
    save(strip(helper.make_model(conv, opset_imports=[helper.make_opsetid("", 13)])), "conv.onnx")

    mm = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["C"], name="mm0")], "matmul",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [64, 128]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, [128, 32])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, [64, 32])])
    save(helper.make_model(mm, opset_imports=[helper.make_opsetid("", 13)]), "matmul.onnx")

    sm = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], name="softmax0", axis=-1)], "softmax",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])])
    save(helper.make_model(sm, opset_imports=[helper.make_opsetid("", 13)]), "softmax.onnx")

    un = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="relu0"),
         helper.make_node("LRN", ["a"], ["b"], name="lrn0", size=3),
         helper.make_node("Relu", ["b"], ["c"], name="relu1"),
         helper.make_node("LRN", ["c"], ["d"], name="lrn1", size=3),
         helper.make_node("NonMaxSuppression", ["d"], ["e"], name="nms0")], "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    save(helper.make_model(un, opset_imports=[helper.make_opsetid("", 13)]), "unsupported.onnx")

    # Ten operators the IR does not have, some of them twice, among supported ones: the import
    # error lists all ten with their first nodes, in graph order.
    ten = ["LRN", "NonMaxSuppression", "TopK", "ScatterND", "GridSample", "RoiAlign", "Resize", "CumSum",
           "ArgMax", "DepthToSpace"]
    nodes, prev = [], "x"
    for k, op in enumerate(ten + ["LRN", "TopK"]):
        nodes.append(helper.make_node("Relu", [prev], ["r%d" % k], name="relu%d" % k))
        nodes.append(helper.make_node(op, ["r%d" % k], ["u%d" % k], name="%s%d" % (op.lower(), k)))
        prev = "u%d" % k
    un10 = helper.make_graph(nodes, "unsupported10", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                             [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)])
    save(helper.make_model(un10, opset_imports=[helper.make_opsetid("", 13)]), "unsupported10.onnx")

    def const(name, values, dtype=np.int64):
        arr = np.array(values, dtype=dtype)
        return helper.make_node("Constant", [], [name], name="const_" + name,
                                value=numpy_helper.from_array(arr, name))

    f = np.float32
    nodes = [
        const("w", np.ones((8, 3, 3, 3)), f), const("lo", 0.0, f), const("hi", 6.0, f),
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], strides=[2, 2],
                         auto_pad="SAME_UPPER"),
        helper.make_node("Clip", ["c", "lo", "hi"], ["r"], name="clip"),
        helper.make_node("AveragePool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["shp"], name="shape"),
        const("zero", 0), const("ax0", [0]), const("minus1", [-1]),
        helper.make_node("Gather", ["shp", "zero"], ["batch"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["batch", "ax0"], ["batch1"], name="batch1"),
        helper.make_node("Concat", ["batch1", "minus1"], ["newshape"], name="newshape", axis=0),
        helper.make_node("Reshape", ["p", "newshape"], ["flat"], name="flat"),
        const("ax1", [1]),
        helper.make_node("Unsqueeze", ["flat", "ax1"], ["u"], name="unsqueeze"),
        helper.make_node("Squeeze", ["u", "ax1"], ["sq"], name="squeeze"),
        const("s0", [0]), const("s1", [64]),
        helper.make_node("Slice", ["sq", "s0", "s1", "ax1"], ["sl"], name="slice"),
        helper.make_node("Sigmoid", ["sl"], ["sg"], name="sigmoid"),
        helper.make_node("Tanh", ["sg"], ["th"], name="tanh"),
        const("r0", 0), const("r4", 4), const("r1", 1),
        helper.make_node("Range", ["r0", "r4", "r1"], ["idx"], name="range"),
        helper.make_node("Gather", ["th", "idx"], ["gth"], name="gather", axis=1),
        const("wm", np.ones((4, 10)), f),
        helper.make_node("MatMul", ["gth", "wm"], ["mm"], name="matmul"),
        helper.make_node("Softmax", ["mm"], ["y"], name="softmax", axis=-1),
        helper.make_node("ReduceMean", ["th"], ["mean"], name="mean", axes=[1], keepdims=0),
    ]
    ops = helper.make_graph(nodes, "ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                             helper.make_tensor_value_info("mean", TensorProto.FLOAT, None)])
    save(helper.make_model(ops, opset_imports=[helper.make_opsetid("", 13)]), "ops.onnx")
    hardswish_graph()
    layout_graphs()


def hardswish_graph():
    """HardSwish as ONNX opset 14 writes it and as torch exports it at opset 13: x * HardSigmoid(x)
    (alpha 1/6) and x * Clip(x + 3, 0, 6) / 6 with the Div after or before the Mul; then a
    HardSigmoid that is not part of a HardSwish (alpha 0.2)."""
    f = np.float32

    def const(name, v):
        return helper.make_node("Constant", [], [name], name="const_" + name,
                                value=numpy_helper.from_array(np.array(v, f), name))

    nodes = [
        helper.make_node("HardSwish", ["x"], ["a"], name="hswish"),
        helper.make_node("HardSigmoid", ["a"], ["hs"], name="hsig", alpha=1.0 / 6),
        helper.make_node("Mul", ["a", "hs"], ["b"], name="mul_hsig"),
        const("three", 3.0), const("zero", 0.0), const("six", 6.0),
        helper.make_node("Add", ["b", "three"], ["b3"], name="add3"),
        helper.make_node("Clip", ["b3", "zero", "six"], ["bc"], name="clip6"),
        helper.make_node("Mul", ["b", "bc"], ["bm"], name="mul_x"),
        helper.make_node("Div", ["bm", "six"], ["c"], name="div6"),
        helper.make_node("Add", ["three", "c"], ["c3"], name="add3b"),
        helper.make_node("Clip", ["c3", "zero", "six"], ["cc"], name="clip6b"),
        helper.make_node("Div", ["cc", "six"], ["cd"], name="div6b"),
        helper.make_node("Mul", ["cd", "c"], ["d"], name="mul_xb"),
        helper.make_node("HardSigmoid", ["d"], ["y"], name="hsig_plain", alpha=0.2),
    ]
    g = helper.make_graph(nodes, "hardswish", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), "hardswish.onnx")


def layout_graphs():
    """The forms finalize rewrites for the lowerings: an Expand to its input's own shape (from a
    folded Where, as ViT's class token), a real Expand, Gathers of a constant index (scalar and
    one-element vector) from an activation, an embedding Gather (indices a data input), Split
    with sizes as an input, Transposes of a weight without values and of a constant with values;
    Split by num_outputs (opset 18); a grouped, dilated, strided Conv at batch 3."""
    f, i64 = np.float32, np.int64

    def const(name, v, dtype=i64):
        return helper.make_node("Constant", [], [name], name="const_" + name,
                                value=numpy_helper.from_array(np.array(v, dtype), name))

    nodes = [
        const("shp", [2, 3, 4]), const("neg", [-1]), const("ones", [1, 1, 1]),
        helper.make_node("Equal", ["shp", "neg"], ["eq"], name="eq"),
        helper.make_node("Where", ["eq", "ones", "shp"], ["eshape"], name="where"),
        helper.make_node("Expand", ["x", "eshape"], ["xe"], name="expand_same"),
        const("big", [2, 2, 3, 4]),
        helper.make_node("Expand", ["xe", "big"], ["xb"], name="expand_real"),
        const("one", 1), const("last", [-1]),
        helper.make_node("Gather", ["xe", "one"], ["g1"], name="gather_scalar", axis=1),
        helper.make_node("Gather", ["xe", "last"], ["g2"], name="gather_vec", axis=2),
        helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed", axis=0),
        const("sizes", [1, 2]),
        helper.make_node("Split", ["xe", "sizes"], ["s0", "s1"], name="split", axis=1),
        helper.make_node("Transpose", ["wt"], ["wtt"], name="wt_t", perm=[1, 0]),
        helper.make_node("MatMul", ["emb", "wtt"], ["mm"], name="mm"),
        const("cm", np.arange(12).reshape(4, 3), f),
        helper.make_node("Transpose", ["cm"], ["cmt"], name="cm_t", perm=[1, 0]),
        helper.make_node("Mul", ["xe", "cmt"], ["m"], name="mul"),
    ]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "layout",
                          [vi("x", TensorProto.FLOAT, [2, 3, 4]), vi("ids", TensorProto.INT64, [5]),
                           vi("table", TensorProto.FLOAT, [10, 4]), vi("wt", TensorProto.FLOAT, [6, 4])],
                          [vi(o, TensorProto.FLOAT, None) for o in ("xb", "g1", "g2", "s0", "s1", "mm", "m")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "layout.onnx")
    sp = helper.make_graph([helper.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=1, num_outputs=3)],
                           "split18", [vi("x", TensorProto.FLOAT, [2, 7])],
                           [vi(o, TensorProto.FLOAT, None) for o in "abc"])
    save(helper.make_model(sp, opset_imports=[helper.make_opsetid("", 18)]), "split18.onnx")
    cd = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=4, dilations=[2, 1],
                                             strides=[2, 1], pads=[2, 1, 2, 1])],
                           "conv_dilated", [vi("x", TensorProto.FLOAT, [3, 8, 20, 20]),
                                            vi("w", TensorProto.FLOAT, [16, 2, 3, 3])],
                           [vi("y", TensorProto.FLOAT, None)])
    save(helper.make_model(cd, opset_imports=[helper.make_opsetid("", 13)]), "conv_dilated.onnx")


def save(model, name):
    path = os.path.join(OUT, name)
    onnx.save(model, path)
    print("%-20s %8d bytes" % (name, os.path.getsize(path)))


def reference_models():
    """The reduced models whose outputs are checked against torch (tests/workloads/test_values.c)."""
    torch.manual_seed(2)
    return [
        ("resnet18_32", torchvision.models.resnet18(), torch.randn(1, 3, 32, 32), "input", "logits"),
        ("mobilenetv2_32", torchvision.models.mobilenet_v2(), torch.randn(1, 3, 32, 32), "input", "logits"),
        ("bert2_s16", BertEncoder(layers=2), torch.randn(1, 16, 768), "hidden", "out"),
        ("nerf_mlp_64", NerfMlp(), torch.randn(64, 63), "rays", "rgba"),
    ]


def tessera_values(tessera, path, name, given):
    """Write NAME_in.npz from `given` and return every value tessera computes with for the model
    (`tessera compile --inputs NAME_in.npz --weights-out`)."""
    import subprocess
    import tempfile
    inputs = os.path.join(OUT, name + "_in.npz")
    np.savez(inputs, **given)
    with tempfile.TemporaryDirectory() as tmp:
        w = os.path.join(tmp, "w.npz")
        subprocess.run([tessera, "compile", "-c", "ipu_mk2", path, "-o", os.path.join(tmp, "p.bin"),
                        "--inputs", inputs, "--weights-out", w], stderr=subprocess.DEVNULL)
        return dict(np.load(w))


def load_values(module, state, values):
    """Load tessera's values of the float state into the module, by name."""
    sd = module.state_dict()
    for k in state:
        sd[k] = torch.from_numpy(values[k].astype(np.float32)).reshape(sd[k].shape).to(sd[k].dtype)
    module.load_state_dict(sd)


def calibrate(module, x):
    """Set every BatchNorm's running statistics to those of 16 random inputs shaped like x, in f64;
    False when the module has none."""
    bns = [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return False
    module.double()
    for m in bns:
        m.momentum = 1.0
        m.train()
    with torch.no_grad():
        module(torch.randn(16, *x.shape[1:], dtype=torch.float64))
    module.eval()
    return True


def references():
    """With --refs: the reduced models, their inputs and torch's outputs for the values tessera
    computes with (docs/values.md). Each model is exported with its state_dict keys as ONNX names
    (training mode preserved, no constant folding) and stripped; NAME_in.npz holds the input and
    the parameters that must be sane (the BatchNorm statistics, calibrated on a batch of 16 random
    inputs so that every BatchNorm normalises and the activations stay near 1); `tessera compile
    --weights-out` gives every value tessera uses (the rest are its fill values), which are
    loaded into the torch module by name, and NAME_ref.npz holds the output torch computes with
    them in f64. The tessera binary is $TESSERA, or build-rel/cli/tessera."""
    if "--refs" not in sys.argv[1:]:
        return False
    root = os.path.join(os.path.dirname(__file__), "..")
    tessera = os.environ.get("TESSERA", os.path.join(root, "build-rel", "cli", "tessera"))
    for name, module, x, in_name, out_name in reference_models():
        randomise(module)  # distinct values, so the exporter merges no two initializers
        module.eval()
        path = os.path.join(OUT, name + ".onnx")
        torch.onnx.export(module, x, path, opset_version=13, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE, input_names=[in_name], output_names=[out_name])
        model = strip(onnx.load(path))
        onnx.save(model, path)
        state = {k: v for k, v in module.state_dict().items() if v.is_floating_point()}
        graph_inputs = [i.name for i in model.graph.input]
        unmapped = [k for k in graph_inputs if k != in_name and k not in state]
        missing = [k for k in state if k not in graph_inputs and state[k].numel() > KEEP_ELEMS]
        assert not unmapped and not missing, (name, unmapped[:5], missing[:5])
        given = {in_name: x.numpy().astype(np.float32)}
        for k, v in state.items():
            if k.endswith("running_var"):
                given[k] = (np.random.RandomState(len(k)).rand(*v.shape) + 0.5).astype(np.float32)
        load_values(module, state, tessera_values(tessera, path, name, given))
        if calibrate(module, x):
            # the BatchNorm statistics of a batch through the model: each BN normalises, so the
            # activations stay near 1 instead of growing layer after layer with the fill's weights
            for k, v in module.state_dict().items():
                if k.endswith("running_var") or k.endswith("running_mean"):
                    given[k] = v.numpy().astype(np.float32)
            load_values(module, state, tessera_values(tessera, path, name, given))
        with torch.no_grad():
            y32 = module.float()(torch.from_numpy(given[in_name])).numpy()
            y = module.double()(torch.from_numpy(given[in_name]).double()).numpy()
        # torch's own f32 output beside the f64 one: how sensitive the output is to rounding
        np.savez(os.path.join(OUT, name + "_ref.npz"), **{out_name: y, out_name + "@f32": y32})
        print("%-20s %s -> %s %s, max |y| %.4g" % (name, in_name, out_name, y.shape, np.abs(y).max()))
    return True


def main():
    os.makedirs(OUT, exist_ok=True)
    if references():
        return
    if SMALL_ONLY:
        small_graphs()
        return
    if ZOO_ONLY:
        zoo()
        return
    if TOTALS_ONLY:
        totals()
        return
    torch.manual_seed(0)
    img = torch.randn(1, 3, 224, 224)
    export(torchvision.models.resnet50(), img, "resnet50.onnx", 13,
           training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"], output_names=["logits"])
    export(BertLayer(), torch.randn(1, 128, 768), "bert_layer.onnx", 13,
           input_names=["hidden"], output_names=["out"])
    export(BertLayer(), torch.randn(1, 128, 768), "bert_layer_dyn.onnx", 13,
           input_names=["hidden"], output_names=["out"], dynamic_axes={"hidden": {0: "batch", 1: "seq"}})
    export(torchvision.models.vit_b_16(), img, "vit_b16.onnx", 17,
           input_names=["input"], output_names=["logits"])
    export(ConvBn(), torch.randn(1, 3, 16, 16), "conv_bn.onnx", 13, strip_weights=False,
           training=torch.onnx.TrainingMode.PRESERVE, input_names=["x"], output_names=["y"])
    small_graphs()
    zoo()


if __name__ == "__main__":
    main()
