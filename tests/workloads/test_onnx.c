/* tests/workloads/test_onnx.c — ONNX import: real networks against closed-form MAC counts,
 * weights stripped or kept, folding, the data-input rule and error messages. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "ts_build.h"
#include "workloads/graph.h"
#include "workloads/info.h"
#include "workloads/onnx.h"
#if TS_HAVE_ONNX
#include "workloads/onnx.pb-c.h"
#endif

static const char *model(const char *name)
{
    static char path[1024];
    const char *root = getenv("TS_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/data/models/%s", root ? root : ".", name);
    return path;
}

static ts_graph *load(const char *name, const ts_onnx_opts *opts)
{
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ts_status st = ts_onnx_load(model(name), opts, &g, &err);
    char msg[2048];
    ts_err_format(&err, msg, sizeof msg);
    ck_assert_msg(st == TS_OK, "%s: %s", name, msg);
    ts_err_free(&err);
    return g;
}

/* Load expecting failure; returns the formatted message in a static buffer. */
static const char *load_fail(const char *path, const ts_onnx_opts *opts)
{
    static char msg[2048];
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ts_status st = ts_onnx_load(path, opts, &g, &err);
    ck_assert_msg(st != TS_OK, "%s should fail", path);
    ck_assert_ptr_null(g);
    ts_err_format(&err, msg, sizeof msg);
    ts_err_free(&err);
    return msg;
}

static int count_op(const ts_graph *g, ts_graph_op op)
{
    int c = 0;
    for (size_t i = 0; i < ts_graph_node_count(g); i++)
        c += ts_graph_get_node(g, (int)i)->op == op;
    return c;
}

START_TEST(resnet50_totals)
{
    ts_graph *g = load("resnet50.onnx", NULL);
    ck_assert_str_eq(ts_graph_name(g), "resnet50");
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    /* torchvision ResNet-50, batch 1, 224x224: the published 4.09 GMACs and 25.56 M parameters.
     * Folding BatchNormalization drops its scale and shift (2 x 26,560 channels) and gives each
     * of the 53 convolutions a bias (26,560 elements): 25,557,032 - 26,560 = 25,530,472. */
    ck_assert_uint_eq(t.macs, 4089184256ull);
    ck_assert_uint_eq(t.params, 25530472ull);
    ck_assert_int_eq(count_op(g, TS_OP_BATCHNORM), 0);
    ck_assert_int_eq(count_op(g, TS_OP_CONV), 53);
    ck_assert_int_eq(count_op(g, TS_OP_GEMM), 1);
    ck_assert_int_eq(count_op(g, TS_OP_ADD), 16);
    ck_assert_uint_eq(t.nodes, 53 + 49 + 1 + 16 + 1 + 1 + 1);
    /* the data input is the image; the output is [1,1000] */
    int in = ts_graph_find(g, "input");
    ck_assert_int_ge(in, 0);
    ck_assert_int_eq(ts_graph_get_tensor(g, in)->kind, TS_TENSOR_INPUT);
    ck_assert_uint_eq(t.input_bytes, 3 * 224 * 224 * 4);
    ck_assert_uint_eq(t.output_bytes, 1000 * 4);
    /* nodes are in topological order */
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)i);
        for (size_t j = 0; j < n->nin; j++)
            ck_assert_int_lt(ts_graph_get_tensor(g, n->in[j])->producer, (int)i);
    }
    ts_graph_destroy(g);
}
END_TEST

START_TEST(bert_layer_macs)
{
    ts_graph *g = load("bert_layer.onnx", NULL);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    /* One BERT-base encoder layer, batch 1, S = 128 tokens, H = 768, 12 heads of 64, F = 3072:
     *   Q, K and V projections   3 * S * H * H
     *   scores Q K^T per head    12 * S * S * 64 = S * S * H
     *   context softmax(.) V     S * S * H
     *   output projection        S * H * H
     *   FFN up and down          2 * S * H * F
     * = 4*128*768^2 + 2*128^2*768 + 2*128*768*3072 = 931,135,488 */
    const uint64_t S = 128, H = 768, F = 3072;
    ck_assert_uint_eq(t.macs, 4 * S * H * H + 2 * S * S * H + 2 * S * H * F);
    ck_assert_uint_eq(t.macs, 931135488ull);
    /* weights: 4 (H*H + H) attention, H*F + F + F*H + H FFN, 2 * 2H LayerNorm */
    ck_assert_uint_eq(t.params, 4 * (H * H + H) + H * F + F + F * H + H + 4 * H);
    /* the exporter's decomposed LayerNorm (opset 13) is recognised as one op, twice */
    ck_assert_int_eq(count_op(g, TS_OP_LAYERNORM), 2);
    ck_assert_int_eq(count_op(g, TS_OP_REDUCEMEAN), 0);
    ck_assert_int_eq(count_op(g, TS_OP_POW), 0);
    ck_assert_int_eq(count_op(g, TS_OP_SQRT), 0);
    ck_assert_int_eq(count_op(g, TS_OP_MATMUL), 8);
    ck_assert_int_eq(count_op(g, TS_OP_SOFTMAX), 1);
    /* and the exporter's erf GELU as one Gelu */
    ck_assert_int_eq(count_op(g, TS_OP_GELU), 1);
    ck_assert_int_eq(count_op(g, TS_OP_ERF), 0);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(bert_layer_dynamic_axes)
{
    /* Exported with symbolic batch and sequence: the reshapes are computed from Shape, Gather,
     * Unsqueeze and Concat, which fold once the dimensions have values. */
    ck_assert_msg(strstr(load_fail(model("bert_layer_dyn.onnx"), NULL),
                         "graph input 'hidden' has symbolic dimension 'batch' (tessera needs static shapes: "
                         "give batch=N)"),
                  "symbolic dimensions need values");
    const uint64_t H = 768, F = 3072;
    uint64_t s[] = {128, 384};
    for (int i = 0; i < 2; i++) {
        char dims[64];
        snprintf(dims, sizeof dims, "batch=2,seq=%llu", (unsigned long long)s[i]);
        ts_onnx_opts o = {NULL, 0, dims};
        ts_graph *g = load("bert_layer_dyn.onnx", &o);
        ts_graph_totals t;
        ts_graph_get_totals(g, &t);
        uint64_t S = s[i];
        ck_assert_uint_eq(t.macs, 2 * (4 * S * H * H + 2 * S * S * H + 2 * S * H * F));
        ck_assert_int_eq(count_op(g, TS_OP_LAYERNORM), 2);
        ck_assert_int_eq(count_op(g, TS_OP_RESHAPE), 4);
        ts_graph_destroy(g);
    }
}
END_TEST

START_TEST(vit_b16_macs)
{
    ts_graph *g = load("vit_b16.onnx", NULL);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    /* torchvision ViT-B/16, batch 1, 224x224: P = 196 patches of 16x16, N = 197 tokens (class
     * token first), D = 768, 12 heads of 64, MLP 3072, L = 12 layers, 1000 classes:
     *   patch embedding (conv 16x16 stride 16)   P * D * (3*16*16) = P * D * D
     *   per layer: QKV in one matmul            N * D * 3D
     *              scores and context            2 * N * N * D
     *              output projection             N * D * D
     *              MLP                           2 * N * D * 3072
     *   head on the class token                  D * 1000
     * = 115,605,504 + 12 * 1,453,954,560 + 768,000 = 17,563,828,224 */
    const uint64_t P = 196, N = 197, D = 768, M = 3072, L = 12;
    uint64_t layer = N * D * 3 * D + 2 * N * N * D + N * D * D + 2 * N * D * M;
    ck_assert_uint_eq(t.macs, P * D * D + L * layer + D * 1000);
    ck_assert_uint_eq(t.macs, 17563828224ull);
    /* the standard ViT-B/16 parameter count */
    ck_assert_uint_eq(t.params, 86567656ull);
    ck_assert_int_eq(count_op(g, TS_OP_LAYERNORM), 25);
    ck_assert_int_eq(count_op(g, TS_OP_SOFTMAX), 12);
    ck_assert_int_eq(count_op(g, TS_OP_GELU), 12);
    ck_assert_int_eq(count_op(g, TS_OP_ERF), 0);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(small_models)
{
    ts_graph *g = load("conv.onnx", NULL);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.macs, 16ull * 32 * 32 * 3 * 3 * 3);
    ck_assert_uint_eq(t.params, 16 * 3 * 3 * 3 + 16);
    const ts_graph_tensor *y = ts_graph_get_tensor(g, ts_graph_find(g, "y"));
    ck_assert_int_eq(y->rank, 4);
    ck_assert_int_eq(y->dims[1], 16);
    ck_assert_int_eq(y->dims[2], 32);
    ts_graph_destroy(g);

    /* conv_dilated.onnx: batch 3, 8 channels in 4 groups, 3x3 dilated 2x1, stride 2x1, pads 2
     * and 1: height (20 + 4 - 2*2 - 1) / 2 + 1 = 10, width 20; each output 2 * 9 products */
    g = load("conv_dilated.onnx", NULL);
    ts_graph_get_totals(g, &t);
    y = ts_graph_get_tensor(g, ts_graph_find(g, "y"));
    ck_assert(y->rank == 4 && y->dims[0] == 3 && y->dims[1] == 16 && y->dims[2] == 10 && y->dims[3] == 20);
    ck_assert_uint_eq(t.macs, 3ull * 16 * 10 * 20 * 2 * 9);
    ts_graph_destroy(g);

    /* matmul.onnx has two graph inputs and no initializers: by default only A is data */
    g = load("matmul.onnx", NULL);
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.macs, 64 * 128 * 32);
    ck_assert_uint_eq(t.params, 128 * 32);
    ts_graph_destroy(g);
    /* naming both makes both data */
    const char *both[] = {"A", "B"};
    ts_onnx_opts o = {both, 2, NULL};
    g = load("matmul.onnx", &o);
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.params, 0);
    ck_assert_uint_eq(t.input_bytes, (64 * 128 + 128 * 32) * 4);
    ts_graph_destroy(g);

    g = load("softmax.onnx", NULL);
    ck_assert_int_eq(ts_graph_node_count(g), 1);
    ck_assert_int_eq(ts_graph_get_node(g, 0)->op, TS_OP_SOFTMAX);
    ts_graph_destroy(g);
}
END_TEST

static const char *shape(const ts_graph *g, const char *name)
{
    static char buf[128];
    int id = ts_graph_find(g, name);
    ck_assert_msg(id >= 0, "no tensor '%s'", name);
    const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
    size_t k = (size_t)snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < t->rank; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    snprintf(buf + k, sizeof buf - k, "]");
    return buf;
}

START_TEST(zoo_totals)
{
    /* The model zoo (scripts/make_test_models.py --zoo): MACs and parameters equal torch's, as
     * `make_test_models.py --totals` counts them from the aten matrix products and convolutions
     * of a forward pass (the parameters with each BatchNorm folded into its convolution's bias,
     * as the exporter writes them). Batches: ResNet-50 at 8, the BERT encoder and ViT-B/16 at 4
     * (BERT's attention a [48,128,64] batch of heads), NeRF's 4,096 rays; MobileNetV2's depthwise
     * convolutions have group = channels. */
    static const struct { const char *file; uint64_t macs, params; const char *in, *out; } zoo[] = {
        {"resnet18.onnx", 1814073344ull, 11684712ull, "[1,3,224,224]", "[1,1000]"},
        {"resnet50_b8.onnx", 32713474048ull, 25530472ull, "[8,3,224,224]", "[8,1000]"},
        {"mobilenetv2.onnx", 300774272ull, 3487816ull, "[1,3,224,224]", "[1,1000]"},
        {"vit_b16_op13.onnx", 17563828224ull, 86567656ull, "[1,3,224,224]", "[1,1000]"},
        {"bert_encoder.onnx", 11173625856ull, 85054464ull, "[1,128,768]", "[1,128,768]"},
        {"bert_encoder_b4.onnx", 44694503424ull, 85054464ull, "[4,128,768]", "[4,128,768]"},
        {"nerf_mlp.onnx", 2015363072ull, 494084ull, "[4096,63]", "[4096,4]"},
        {"vit_b16_b4.onnx", 70255312896ull, 86567656ull, "[4,3,224,224]", "[4,1000]"},
    };
    for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) {
        ts_graph *g = load(zoo[i].file, NULL);
        ts_graph_totals t;
        ts_graph_get_totals(g, &t);
        ck_assert_msg(t.macs == zoo[i].macs, "%s: %llu MACs, torch counts %llu", zoo[i].file,
                      (unsigned long long)t.macs, (unsigned long long)zoo[i].macs);
        ck_assert_msg(t.params == zoo[i].params, "%s: %llu parameters, torch counts %llu", zoo[i].file,
                      (unsigned long long)t.params, (unsigned long long)zoo[i].params);
        for (size_t k = 0; k < ts_graph_tensor_count(g); k++) {
            const ts_graph_tensor *tt = ts_graph_get_tensor(g, (int)k);
            if (tt->kind == TS_TENSOR_INPUT || tt->is_output)
                ck_assert_str_eq(shape(g, tt->name), tt->is_output ? zoo[i].out : zoo[i].in);
        }
        ts_graph_destroy(g);
    }
}
END_TEST

START_TEST(many_ops)
{
    /* ops.onnx: auto_pad, Clip bounds as inputs, shape arithmetic folded into Reshape, activation
     * Squeeze/Unsqueeze as Reshape, Slice, Range as Gather indices, ReduceMean, Softmax. */
    ts_graph *g = load("ops.onnx", NULL);
    ck_assert_str_eq(shape(g, "c"), "[1,8,8,8]");   /* SAME_UPPER, stride 2 */
    ck_assert_str_eq(shape(g, "p"), "[1,8,4,4]");
    ck_assert_str_eq(shape(g, "flat"), "[1,128]");  /* Reshape to [Shape(p)[0], -1] */
    ck_assert_str_eq(shape(g, "u"), "[1,1,128]");
    ck_assert_str_eq(shape(g, "sl"), "[1,64]");
    ck_assert_str_eq(shape(g, "gth"), "[1,4]");     /* indices Range(0, 4, 1) */
    ck_assert_str_eq(shape(g, "y"), "[1,10]");
    ck_assert_str_eq(shape(g, "mean"), "[1]");
    const ts_graph_node *conv = ts_graph_get_node(g, 0);
    ck_assert_int_eq(conv->op, TS_OP_CONV);
    ck_assert_int_eq(conv->attrs.pads[0], 0);       /* total padding 1: SAME_UPPER puts it at the end */
    ck_assert_int_eq(conv->attrs.pads[2], 1);
    const ts_graph_node *clip = ts_graph_get_node(g, 1);
    ck_assert_int_eq(clip->op, TS_OP_CLIP);
    ck_assert_uint_eq(clip->nin, 1);
    ck_assert(clip->attrs.min == 0.0 && clip->attrs.max == 6.0);
    ck_assert_int_eq(count_op(g, TS_OP_RESHAPE), 3);
    ck_assert_int_eq(count_op(g, TS_OP_GATHER), 1);
    ck_assert_int_eq(count_op(g, TS_OP_SLICE), 1);
    ck_assert_int_eq(count_op(g, TS_OP_REDUCEMEAN), 1);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.macs, 8ull * 8 * 8 * 27 + 4 * 10);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(hardswish_forms)
{
    /* hardswish.onnx: HardSwish itself, then torch's opset-13 forms x * HardSigmoid(x) and
     * x * Clip(x + 3, 0, 6) / 6 (Div after or before the Mul) each become one HardSwish; a
     * HardSigmoid of alpha 0.2 stays Mul, Add and Clip 0..1. */
    ts_graph *g = load("hardswish.onnx", NULL);
    ck_assert_int_eq(count_op(g, TS_OP_HARDSWISH), 4);
    ck_assert_int_eq(count_op(g, TS_OP_DIV), 0);
    ck_assert_uint_eq(ts_graph_node_count(g), 7);
    const char *outs[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        const ts_graph_node *n = ts_graph_get_node(g, i);
        ck_assert_int_eq(n->op, TS_OP_HARDSWISH);
        ck_assert_str_eq(ts_graph_get_tensor(g, n->out[0])->name, outs[i]);
        ck_assert_str_eq(shape(g, outs[i]), "[2,8]");
    }
    const ts_graph_node *mul = ts_graph_get_node(g, 4), *clip = ts_graph_get_node(g, 6);
    ck_assert_int_eq(mul->op, TS_OP_MUL);
    ck_assert_float_eq_tol(*(const float *)ts_graph_get_tensor(g, mul->in[1])->data, 0.2f, 1e-7f);
    ck_assert_int_eq(ts_graph_get_node(g, 5)->op, TS_OP_ADD);
    ck_assert(clip->op == TS_OP_CLIP && clip->attrs.min == 0.0 && clip->attrs.max == 1.0);
    ck_assert_str_eq(shape(g, "y"), "[2,8]");
    ts_graph_destroy(g);
}
END_TEST

START_TEST(layout_forms)
{
    /* layout.onnx: what finalize leaves the lowerings (see the model's description in
     * scripts/make_test_models.py); ids is a data input, table and wt weights without values. */
    static const char *data[] = {"x", "ids"};
    ts_onnx_opts o = {data, 2, NULL};
    ts_graph *g = load("layout.onnx", &o);
    ck_assert_int_eq(count_op(g, TS_OP_EXPAND), 1);    /* the real broadcast to [2,2,3,4] */
    ck_assert_str_eq(shape(g, "xb"), "[2,2,3,4]");
    ck_assert_int_eq(ts_graph_find(g, "xe"), -1);      /* Expand to [2,3,4] of [2,3,4]: gone */
    ck_assert_int_eq(count_op(g, TS_OP_GATHER), 1);    /* the embedding */
    ck_assert_int_eq(count_op(g, TS_OP_TRANSPOSE), 0);
    ck_assert_int_eq(count_op(g, TS_OP_SLICE), 4);     /* two Gathers, two Split parts */
    ck_assert_int_eq(count_op(g, TS_OP_RESHAPE), 1);   /* the scalar Gather drops its axis */
    ck_assert_str_eq(shape(g, "g1"), "[2,4]");
    ck_assert_str_eq(shape(g, "g2"), "[2,3,1]");
    ck_assert_str_eq(shape(g, "s0"), "[2,1,4]");
    ck_assert_str_eq(shape(g, "s1"), "[2,2,4]");
    const ts_graph_tensor *s1 = ts_graph_get_tensor(g, ts_graph_find(g, "s1"));
    const ts_graph_node *sp = ts_graph_get_node(g, s1->producer);
    ck_assert(sp->attrs.starts[1] == 1 && sp->attrs.ends[1] == 3);
    ck_assert_str_eq(ts_graph_get_tensor(g, sp->in[0])->name, "x");
    const ts_graph_tensor *wtt = ts_graph_get_tensor(g, ts_graph_find(g, "wtt"));
    ck_assert_int_eq(wtt->kind, TS_TENSOR_WEIGHT);      /* the Transpose of wt [6,4] */
    ck_assert_ptr_null(wtt->data);
    ck_assert_str_eq(shape(g, "wtt"), "[4,6]");
    ck_assert_str_eq(shape(g, "mm"), "[5,6]");
    const ts_graph_tensor *cmt = ts_graph_get_tensor(g, ts_graph_find(g, "cmt"));
    ck_assert_int_eq(cmt->kind, TS_TENSOR_CONST);       /* arange(12) as [4,3], transposed */
    const float want[12] = {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11};
    ck_assert_mem_eq(cmt->data, want, sizeof want);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.params, 10 * 4 + 6 * 4);
    ts_graph_destroy(g);
    /* Split into 3 by num_outputs (opset 18): 7 as 3, 3 and 1 */
    g = load("split18.onnx", NULL);
    ck_assert_int_eq(count_op(g, TS_OP_SLICE), 3);
    ck_assert_str_eq(shape(g, "a"), "[2,3]");
    ck_assert_str_eq(shape(g, "b"), "[2,3]");
    ck_assert_str_eq(shape(g, "c"), "[2,1]");
    ts_graph_destroy(g);
}
END_TEST

START_TEST(conv_bn_with_weights)
{
    /* Weights kept as initializers: the graph inputs that are initializers are weights. */
    ts_graph *g = load("conv_bn.onnx", NULL);
    ck_assert_int_eq(count_op(g, TS_OP_BATCHNORM), 0);
    ck_assert_int_eq(count_op(g, TS_OP_CONV), 1);
    ck_assert_int_eq(count_op(g, TS_OP_RELU), 1);
    const ts_graph_node *c = ts_graph_get_node(g, 0);
    ck_assert_int_eq(c->op, TS_OP_CONV);
    ck_assert_int_eq(c->nin, 3); /* the folded bias, with values: every input carried them */
    ck_assert_ptr_nonnull(ts_graph_get_tensor(g, c->in[2])->data);
    ck_assert_ptr_nonnull(ts_graph_get_tensor(g, c->in[1])->data);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.params, 8 * 3 * 3 * 3 + 8);
    ck_assert_uint_eq(t.macs, 8ull * 16 * 16 * 27);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(unsupported_ops)
{
    const char *m = load_fail(model("unsupported.onnx"), NULL);
    const char *want = "unsupported operators: LRN (first at node 'lrn0'), NonMaxSuppression (first at "
                       "node 'nms0')";
    ck_assert_msg(strstr(m, want), "got: %s", m);
    ck_assert_msg(strstr(m, "unsupported.onnx: "), "the file is named: %s", m);
    /* ten at once, each with its first node (LRN and TopK come twice), in graph order */
    m = load_fail(model("unsupported10.onnx"), NULL);
    ck_assert_msg(strstr(m, "unsupported10.onnx: unsupported operators: LRN (first at node 'lrn0'), "
                            "NonMaxSuppression (first at node 'nonmaxsuppression1'), TopK (first at node "
                            "'topk2'), ScatterND (first at node 'scatternd3'), GridSample (first at node "
                            "'gridsample4'), RoiAlign (first at node 'roialign5'), Resize (first at node "
                            "'resize6'), CumSum (first at node 'cumsum7'), ArgMax (first at node 'argmax8'), "
                            "DepthToSpace (first at node 'depthtospace9')"),
                  "got: %s", m);
    ck_assert_ptr_null(strstr(m, "lrn10"));
}
END_TEST

START_TEST(malformed)
{
    char path[] = "/tmp/ts_test_onnx_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "wb");
    fputs("\x0a\xff\xff\xff\xff\x0f garbage", f);
    fclose(f);
    const char *m = load_fail(path, NULL);
    char want[512];
    snprintf(want, sizeof want, "%s: not a valid onnx model (malformed protobuf)", path);
    ck_assert_str_eq(m, want);
    remove(path);
    m = load_fail("/nonexistent/model.onnx", NULL);
    ck_assert_msg(strstr(m, "/nonexistent/model.onnx"), "got: %s", m);
}
END_TEST

START_TEST(bad_input_name)
{
    const char *names[] = {"nope"};
    ts_onnx_opts o = {names, 1, NULL};
    const char *m = load_fail(model("matmul.onnx"), &o);
    ck_assert_msg(strstr(m, "no graph input named 'nope'"), "got: %s", m);
}
END_TEST

START_TEST(info_render)
{
    ts_graph *g = load("resnet50.onnx", NULL);
    ts_buf b = TS_BUF_INIT;
    ts_wl_info_render(g, true, &b);
    const char *s = ts_buf_str(&b);
    ck_assert_msg(strstr(s, "\"nodes\": 122"), "%s", s);
    ck_assert_msg(strstr(s, "\"macs\": 4089184256"), "%s", s);
    ck_assert_msg(strstr(s, "\"params\": 25530472"), "%s", s);
    ck_assert_msg(strstr(s, "\"Conv\": 53"), "%s", s);
    ck_assert_msg(strstr(s, "\"activation_bytes\": "), "%s", s);
    ts_buf_reset(&b);
    ts_wl_info_render(g, false, &b);
    ck_assert_msg(strstr(ts_buf_str(&b), "4089184256"), "%s", ts_buf_str(&b));
    ts_buf_free(&b);
    ts_graph_destroy(g);

    ts_err err;
    ts_err_init(&err);
    ts_buf c = TS_BUF_INIT;
    ck_assert_int_eq(ts_wl_info(model("matmul.onnx"), "A,B", NULL, true, &c, &err), TS_OK);
    ck_assert_msg(strstr(ts_buf_str(&c), "\"params\": 0"), "%s", ts_buf_str(&c));
    ts_buf_free(&c);
    ts_err_free(&err);
}
END_TEST

/* Every allocation failure is reported as TS_ENOMEM and leaks nothing (checked under ASan). */
START_TEST(alloc_failures)
{
    for (long n = 1; n < 400; n += 7) {
        ts_err err;
        ts_err_init(&err);
        ts_graph *g = NULL;
        ts_alloc_fail_after(n);
        ts_status st = ts_onnx_load(model("bert_layer.onnx"), NULL, &g, &err);
        long fails = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (fails)
            ck_assert_msg(st == TS_ENOMEM, "allocation %ld: status %d", n, (int)st);
        ts_graph_destroy(g);
        ts_err_free(&err);
    }
}
END_TEST

#if TS_HAVE_ONNX
/* ---------------------------------------------------------------------------------------------
 * Models built here with the generated protobuf-c structs, for error paths no exporter writes. */

typedef struct mb {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto nodes[8], *pnodes[8];
    Onnx__ValueInfoProto vi[8], *pin[8], *pout[8];
    Onnx__TypeProto ty[8];
    Onnx__TypeProto__Tensor tt[8];
    Onnx__TensorShapeProto sh[8];
    Onnx__TensorShapeProto__Dimension dims[8][4], *pdims[8][4];
    Onnx__TensorProto init[4], *pinit[4];
    size_t nvi;
} mb;

static void mb_init(mb *m)
{
    memset(m, 0, sizeof *m);
    onnx__model_proto__init(&m->model);
    onnx__graph_proto__init(&m->graph);
    onnx__operator_set_id_proto__init(&m->opset);
    m->opset.has_version = 1;
    m->opset.version = 13;
    m->opsets[0] = &m->opset;
    m->model.n_opset_import = 1;
    m->model.opset_import = m->opsets;
    m->model.graph = &m->graph;
    m->graph.name = "built";
    m->graph.node = m->pnodes;
    m->graph.input = m->pin;
    m->graph.output = m->pout;
    m->graph.initializer = m->pinit;
}

/* A float tensor value info; a dim of -1 is symbolic ("batch"). */
static Onnx__ValueInfoProto *mb_vi(mb *m, const char *name, int rank, const int64_t *d)
{
    size_t k = m->nvi++;
    onnx__value_info_proto__init(&m->vi[k]);
    onnx__type_proto__init(&m->ty[k]);
    onnx__type_proto__tensor__init(&m->tt[k]);
    onnx__tensor_shape_proto__init(&m->sh[k]);
    for (int i = 0; i < rank; i++) {
        onnx__tensor_shape_proto__dimension__init(&m->dims[k][i]);
        if (d[i] < 0) {
            m->dims[k][i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            m->dims[k][i].dim_param = "batch";
        } else {
            m->dims[k][i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            m->dims[k][i].dim_value = d[i];
        }
        m->pdims[k][i] = &m->dims[k][i];
    }
    m->sh[k].n_dim = (size_t)rank;
    m->sh[k].dim = m->pdims[k];
    m->tt[k].has_elem_type = 1;
    m->tt[k].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    m->tt[k].shape = &m->sh[k];
    m->ty[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    m->ty[k].tensor_type = &m->tt[k];
    m->vi[k].name = (char *)(uintptr_t)name;
    m->vi[k].type = &m->ty[k];
    return &m->vi[k];
}

static void mb_input(mb *m, const char *name, int rank, const int64_t *d)
{
    m->pin[m->graph.n_input++] = mb_vi(m, name, rank, d);
}

static void mb_output(mb *m, const char *name)
{
    m->pout[m->graph.n_output++] = mb_vi(m, name, 0, NULL);
}

static void mb_node(mb *m, const char *op, const char *name, char **ins, size_t nin, char **outs, size_t nout)
{
    Onnx__NodeProto *n = &m->nodes[m->graph.n_node];
    onnx__node_proto__init(n);
    n->op_type = (char *)(uintptr_t)op;
    n->name = (char *)(uintptr_t)name;
    n->input = ins;
    n->n_input = nin;
    n->output = outs;
    n->n_output = nout;
    m->pnodes[m->graph.n_node++] = n;
}

/* Serialise and import; returns the formatted error ("" on success, graph destroyed). */
static const char *mb_import(mb *m, const ts_onnx_opts *opts, ts_graph **keep)
{
    static char msg[2048];
    size_t len = onnx__model_proto__get_packed_size(&m->model);
    uint8_t *buf = malloc(len + 1);
    onnx__model_proto__pack(&m->model, buf);
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    msg[0] = 0;
    if (ts_onnx_load_mem(buf, len, "built.onnx", opts, &g, &err))
        ts_err_format(&err, msg, sizeof msg);
    if (keep)
        *keep = g;
    else
        ts_graph_destroy(g);
    ts_err_free(&err);
    free(buf);
    return msg;
}

START_TEST(built_errors)
{
    static char *x[] = {"x"}, *y[] = {"y"}, *nope[] = {"nope"}, *xs[] = {"x", "s"};
    int64_t sym[2] = {-1, 4}, d2[2] = {2, 4}, d1[1] = {2};
    mb *m = malloc(sizeof *m);

    mb_init(m);
    mb_input(m, "x", 2, sym);
    mb_node(m, "Relu", "r", x, 1, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL),
                     "built.onnx: graph input 'x' has symbolic dimension 'batch' (tessera needs static shapes: "
                     "give batch=N)");
    /* bound by the caller */
    ts_onnx_opts bind = {NULL, 0, "seq=3,batch=5"};
    ts_graph *gb = NULL;
    ck_assert_str_eq(mb_import(m, &bind, &gb), "");
    ck_assert_int_eq(ts_graph_get_tensor(gb, ts_graph_find(gb, "y"))->dims[0], 5);
    ts_graph_destroy(gb);
    bind.dims = "batch=x";
    ck_assert_str_eq(mb_import(m, &bind, NULL), "built.onnx: the value given for dimension 'batch' is not a whole number");

    mb_init(m);
    mb_input(m, "x", 2, d2);
    mb_node(m, "Relu", "r", nope, 1, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL),
                     "built.onnx: node 'r' (Relu): input 'nope' is not defined before it (nodes must be in "
                     "topological order)");

    /* a Reshape whose shape is a data input cannot be made static */
    mb_init(m);
    mb_input(m, "x", 2, d2);
    mb_input(m, "s", 1, d1);
    mb_node(m, "Reshape", "rs", xs, 2, y, 1);
    mb_output(m, "y");
    const char *names[] = {"x", "s"};
    ts_onnx_opts o = {names, 2, NULL};
    ck_assert_str_eq(mb_import(m, &o, NULL),
                     "built.onnx: node 'rs' (Reshape): the target shape is not known at import (it must be a "
                     "constant)");

    mb_init(m);
    mb_input(m, "x", 2, d2);
    mb_node(m, "Relu", "r", x, 1, y, 1);
    mb_output(m, "zz");
    ck_assert_str_eq(mb_import(m, NULL, NULL), "built.onnx: graph output 'zz' is not produced by any node");

    /* an op of another domain */
    mb_init(m);
    mb_input(m, "x", 2, d2);
    mb_node(m, "FusedMatMul", "f", x, 1, y, 1);
    m->nodes[0].domain = "com.microsoft";
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL),
                     "built.onnx: unsupported operator: com.microsoft.FusedMatMul (first at node 'f')");

    /* an initializer whose raw bytes do not fit its shape */
    mb_init(m);
    mb_input(m, "x", 2, d2);
    Onnx__TensorProto *w = &m->init[0];
    onnx__tensor_proto__init(w);
    static int64_t wd[2] = {4, 2};
    w->n_dims = 2;
    w->dims = wd;
    w->has_data_type = 1;
    w->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    w->name = "w";
    w->has_raw_data = 1;
    static uint8_t raw[32];
    w->raw_data.data = raw;
    w->raw_data.len = 3;
    m->pinit[m->graph.n_initializer++] = w;
    static char *xw[] = {"x", "w"};
    mb_node(m, "MatMul", "mm", xw, 2, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL), "built.onnx: tensor 'w' has 3 bytes of raw data, its shape needs 32");

    /* fixed: the initializer is a weight with values, x (not an initializer) is data */
    w->raw_data.len = 32;
    ts_graph *g = NULL;
    ck_assert_str_eq(mb_import(m, NULL, &g), "");
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.params, 8);
    ck_assert_uint_eq(t.macs, 2 * 4 * 2);
    const ts_graph_tensor *wt = ts_graph_get_tensor(g, ts_graph_find(g, "w"));
    ck_assert_int_eq(wt->kind, TS_TENSOR_WEIGHT);
    ck_assert_ptr_nonnull(wt->data);
    ck_assert_int_eq(ts_graph_get_tensor(g, ts_graph_find(g, "x"))->kind, TS_TENSOR_INPUT);
    ts_graph_destroy(g);

    /* half-precision values in int32_data keep their bits */
    w->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    w->has_raw_data = 0;
    static int32_t halves[8] = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700, 0x4800};
    w->int32_data = halves;
    w->n_int32_data = 8;
    ck_assert_str_eq(mb_import(m, NULL, &g), "");
    wt = ts_graph_get_tensor(g, ts_graph_find(g, "w"));
    ck_assert_int_eq(wt->dtype, TS_DT_F16);
    const uint16_t *hv = wt->data;
    ck_assert_ptr_nonnull(hv);
    ck_assert_uint_eq(hv[0], 0x3c00);
    ck_assert_uint_eq(hv[7], 0x4800);
    ts_graph_destroy(g);

    /* Split into equal parts by its outputs (no sizes): 2 rows do not split in 3, do in 2 */
    static char *abc[] = {"a", "b", "c"};
    mb_init(m);
    mb_input(m, "x", 2, (int64_t[]){2, 4});
    mb_node(m, "Split", "sp", x, 1, abc, 3);
    mb_output(m, "a");
    ck_assert_str_eq(mb_import(m, NULL, NULL),
                     "built.onnx: node 'sp' (Split): an axis of 2 does not split into 3 equal parts");
    m->nodes[0].n_output = 2;
    ck_assert_str_eq(mb_import(m, NULL, &g), "");
    ck_assert_int_eq(ts_graph_get_tensor(g, ts_graph_find(g, "a"))->dims[0], 1);
    ts_graph_destroy(g);
    m->nodes[0].op_type = "HardSigmoid";
    m->nodes[0].n_output = 0;
    ck_assert_str_eq(mb_import(m, NULL, NULL), "built.onnx: node 'sp' (HardSigmoid): has no output");
    /* a Where of two constants (it takes three) is refused, not folded from a missing input */
    static char *cc[] = {"c", "c"};
    mb_init(m);
    mb_input(m, "x", 2, (int64_t[]){2, 4});
    Onnx__TensorProto *c = &m->init[0];
    onnx__tensor_proto__init(c);
    static int64_t cd[1] = {2};
    static uint8_t craw[8];
    c->n_dims = 1;
    c->dims = cd;
    c->has_data_type = 1;
    c->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    c->name = "c";
    c->has_raw_data = 1;
    c->raw_data.data = craw;
    c->raw_data.len = sizeof craw;
    m->pinit[m->graph.n_initializer++] = c;
    mb_node(m, "Where", "wh", cc, 2, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL),
                     "built.onnx: node 'wh' (Where): its constant inputs do not fold (an input missing, or a shape or "
                     "type tessera does not fold)");
    free(m);
}
END_TEST

/* A weight with a dimension of 0 and a kernel_shape of 0 are refused at import, naming the node
 * (they divided by zero in the lowerings' plans, or ran forever). */
START_TEST(zero_dims)
{
    static char *xw[] = {"x", "w"}, *y[] = {"y"};
    int64_t x4[4] = {1, 1, 4, 4}, x2[2] = {2, 4};
    mb *m = malloc(sizeof *m);

    /* a Conv whose weight is 1 x 1 x 0 x 0: a 0 x 0 kernel */
    mb_init(m);
    mb_input(m, "x", 4, x4);
    mb_input(m, "w", 4, (int64_t[]){1, 1, 0, 0});
    mb_node(m, "Conv", "c", xw, 2, y, 1);
    mb_output(m, "y");
    const char *names[] = {"x"};
    ts_onnx_opts o = {names, 1, NULL};
    ck_assert_str_eq(mb_import(m, &o, NULL),
                     "built.onnx: node 'c' (Conv): input 'w' has shape [1,1,0,0]: dimensions must be positive");

    /* the same Conv with a written kernel_shape of 0 x 0 and a 1 x 1 weight */
    mb_init(m);
    mb_input(m, "x", 4, x4);
    mb_input(m, "w", 4, (int64_t[]){1, 1, 1, 1});
    mb_node(m, "Conv", "c", xw, 2, y, 1);
    Onnx__AttributeProto ks, *pks = &ks;
    onnx__attribute_proto__init(&ks);
    ks.name = "kernel_shape";
    ks.has_type = 1;
    ks.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    ks.n_ints = 2;
    ks.ints = (int64_t[]){0, 0};
    m->nodes[0].n_attribute = 1;
    m->nodes[0].attribute = &pks;
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, &o, NULL), "built.onnx: node 'c' (Conv): kernel_shape 0x0: a kernel is at least 1x1");

    /* a MaxPool with kernel_shape 0 x 0 */
    static char *xo[] = {"x"};
    mb_init(m);
    mb_input(m, "x", 4, x4);
    mb_node(m, "MaxPool", "p", xo, 1, y, 1);
    m->nodes[0].n_attribute = 1;
    m->nodes[0].attribute = &pks;
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL), "built.onnx: node 'p' (MaxPool): kernel_shape 0x0: a kernel is at least 1x1");

    /* a MatMul with a [4, 0] weight, and a zero-width output */
    mb_init(m);
    mb_input(m, "x", 2, x2);
    mb_input(m, "w", 2, (int64_t[]){4, 0});
    mb_node(m, "MatMul", "mm", xw, 2, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, &o, NULL),
                     "built.onnx: node 'mm' (MatMul): input 'w' has shape [4,0]: dimensions must be positive");
    /* a zero-row data input */
    mb_init(m);
    mb_input(m, "x", 2, (int64_t[]){0, 4});
    mb_input(m, "w", 2, (int64_t[]){4, 3});
    mb_node(m, "MatMul", "mm", xw, 2, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, &o, NULL),
                     "built.onnx: node 'mm' (MatMul): input 'x' has shape [0,4]: dimensions must be positive");
    free(m);
}
END_TEST

/* A tensor of 2^31 elements is refused at import (the tensor limits of core/limit.h), before a
 * lowering could ask memory for it; so is a node output past the limit. */
START_TEST(tensor_limits)
{
    static char *x[] = {"x"}, *xw[] = {"x", "w"}, *y[] = {"y"};
    mb *m = malloc(sizeof *m);
    mb_init(m);
    mb_input(m, "x", 2, (int64_t[]){INT64_C(1) << 16, INT64_C(1) << 15});
    mb_node(m, "Relu", "r", x, 1, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL), "built.onnx: tensor 'x' has 2147483648 elements, more than the limit "
                                               "of 268435456 (raise it with TESSERA_LIMITS=tensor_elems=N)");
    /* a shape-only initializer */
    mb_init(m);
    mb_input(m, "x", 2, (int64_t[]){2, 4});
    Onnx__TensorProto *w = &m->init[0];
    onnx__tensor_proto__init(w);
    static int64_t wd[2] = {4, INT64_C(1) << 29};
    w->n_dims = 2;
    w->dims = wd;
    w->has_data_type = 1;
    w->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    w->name = "w";
    m->pinit[m->graph.n_initializer++] = w;
    mb_node(m, "MatMul", "mm", xw, 2, y, 1);
    mb_output(m, "y");
    ck_assert_str_eq(mb_import(m, NULL, NULL), "built.onnx: tensor 'w' has 2147483648 elements, more than the limit "
                                               "of 268435456 (raise it with TESSERA_LIMITS=tensor_elems=N)");
    /* an output: [65536, 1] x [1, 65536] */
    mb_init(m);
    mb_input(m, "x", 2, (int64_t[]){65536, 1});
    mb_input(m, "w", 2, (int64_t[]){1, 65536});
    mb_node(m, "MatMul", "mm", xw, 2, y, 1);
    mb_output(m, "y");
    const char *names[] = {"x"};
    ts_onnx_opts o = {names, 1, NULL};
    ck_assert_str_eq(mb_import(m, &o, NULL),
                     "built.onnx: node 'mm' (MatMul): output 'y' has 4294967296 elements, more than the limit of "
                     "268435456 (raise it with TESSERA_LIMITS=tensor_elems=N)");
    free(m);
}
END_TEST
#endif

/* A tessera built without protobuf-c says so, naming the file. */
START_TEST(availability)
{
    ck_assert_int_eq(ts_onnx_available(), TS_HAVE_ONNX);
    if (TS_HAVE_ONNX)
        return;
    const char *m = load_fail(model("conv.onnx"), NULL);
    char want[1200];
    snprintf(want, sizeof want, "%s: this tessera was built without ONNX support", model("conv.onnx"));
    ck_assert_str_eq(m, want);
}
END_TEST

/* The import cases; with `availability`, only the check that the build's ONNX support is what
 * the library says (a meson test of its own that runs in every build). Without ONNX support the
 * import cases exit 77 (skipped), saying so. */
int main(int argc, char **argv)
{
    bool avail = argc > 1 && !strcmp(argv[1], "availability");
    if (!avail && !TS_HAVE_ONNX) {
        printf("SKIP: test_onnx: this build has no ONNX support (protobuf-c not found, or -Donnx=disabled): the "
               "import cases are skipped\n");
        return 77;
    }
    Suite *s = suite_create("onnx");
    TCase *tc = tcase_create("onnx");
    tcase_set_timeout(tc, 120);
    if (avail) {
        tcase_add_test(tc, availability);
    } else {
        tcase_add_test(tc, resnet50_totals);
        tcase_add_test(tc, bert_layer_macs);
        tcase_add_test(tc, bert_layer_dynamic_axes);
        tcase_add_test(tc, vit_b16_macs);
        tcase_add_test(tc, zoo_totals);
        tcase_add_test(tc, small_models);
        tcase_add_test(tc, conv_bn_with_weights);
        tcase_add_test(tc, many_ops);
        tcase_add_test(tc, hardswish_forms);
        tcase_add_test(tc, layout_forms);
        tcase_add_test(tc, unsupported_ops);
        tcase_add_test(tc, malformed);
        tcase_add_test(tc, bad_input_name);
        tcase_add_test(tc, info_render);
        tcase_add_test(tc, alloc_failures);
#if TS_HAVE_ONNX
        tcase_add_test(tc, built_errors);
        tcase_add_test(tc, zero_dims);
        tcase_add_test(tc, tensor_limits);
#endif
    }
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
