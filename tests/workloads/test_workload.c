/* tests/workloads/test_workload.c — built-in YAML workloads: graphs, totals, parameters, and the
 * errors for bad parameters and bad workload files. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/half.h"
#include "workloads/graph.h"
#include "workloads/info.h"
#include "workloads/workload.h"

static ts_graph *builtin(const char *spec, ts_graph_totals *t)
{
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ts_status st = ts_wl_builtin(spec, &g, &err);
    char msg[2048];
    ts_err_format(&err, msg, sizeof msg);
    ck_assert_msg(st == TS_OK, "%s: %s", spec, msg);
    ts_err_free(&err);
    ts_graph_get_totals(g, t);
    return g;
}

static const char *builtin_fail(const char *spec)
{
    static char msg[2048];
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ck_assert_msg(ts_wl_builtin(spec, &g, &err) == TS_EINPUT, "%s should fail", spec);
    ck_assert_ptr_null(g);
    ts_err_format(&err, msg, sizeof msg);
    ts_err_free(&err);
    return msg;
}

static const char *text_fail(const char *text)
{
    static char msg[2048];
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ck_assert_msg(ts_wl_load_text(text, strlen(text), "w.yaml", NULL, &g, &err) != TS_OK, "should fail: %s", text);
    ck_assert_ptr_null(g);
    ts_err_format(&err, msg, sizeof msg);
    ts_err_free(&err);
    return msg;
}

START_TEST(matmul)
{
    ts_graph_totals t;
    ts_graph *g = builtin("matmul", &t);
    ck_assert_uint_eq(t.macs, 1024ull * 1024 * 1024);
    ck_assert_uint_eq(t.params, 1024 * 1024);
    ck_assert_uint_eq(t.nodes, 1);
    ts_graph_destroy(g);
    g = builtin("matmul:m=64,k=256,n=32,dtype=f16", &t);
    ck_assert_uint_eq(t.macs, 64 * 256 * 32);
    ck_assert_uint_eq(t.param_bytes, 256 * 32 * 2);
    ck_assert_uint_eq(t.input_bytes, 64 * 256 * 2);
    const ts_graph_tensor *c = ts_graph_get_tensor(g, ts_graph_find(g, "C"));
    ck_assert_int_eq(c->dtype, TS_DT_F16);
    ck_assert_int_eq(c->rank, 2);
    ck_assert_int_eq(c->dims[0], 64);
    ck_assert_int_eq(c->dims[1], 32);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(conv2d_and_mlp)
{
    ts_graph_totals t;
    ts_graph *g = builtin("conv2d", &t);
    ck_assert_uint_eq(t.macs, 64ull * 56 * 56 * 64 * 3 * 3);
    ck_assert_uint_eq(t.params, 64 * 64 * 9 + 64);
    ts_graph_destroy(g);
    /* depthwise, strided */
    g = builtin("conv2d:c=32,k=32,group=32,stride=2,h=32,w=32", &t);
    ck_assert_uint_eq(t.macs, 32ull * 16 * 16 * 9);
    ck_assert_uint_eq(t.params, 32 * 9 + 32);
    ts_graph_destroy(g);
    g = builtin("mlp", &t);
    ck_assert_uint_eq(t.macs, 32ull * (784 * 1024 + 1024 * 1024 + 1024 * 10));
    ck_assert_uint_eq(t.params, 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10);
    ck_assert_uint_eq(t.nodes, 5);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(resnet50)
{
    /* The same totals as the torchvision export imported from ONNX (test_onnx). */
    ts_graph_totals t;
    ts_graph *g = builtin("resnet50", &t);
    ck_assert_uint_eq(t.macs, 4089184256ull);
    ck_assert_uint_eq(t.params, 25530472ull);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_CONV], 53);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_ADD], 16);
    ts_graph_destroy(g);
    /* MACs scale with the batch */
    g = builtin("resnet50:batch=2", &t);
    ck_assert_uint_eq(t.macs, 2 * 4089184256ull);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(bert_layer)
{
    ts_graph_totals t;
    ts_graph *g = builtin("bert-base-layer", &t);
    const uint64_t S = 128, H = 768, F = 3072;
    ck_assert_uint_eq(t.macs, 4 * S * H * H + 2 * S * S * H + 2 * S * H * F);
    ck_assert_uint_eq(t.params, 4 * (H * H + H) + H * F + F + F * H + H + 4 * H);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_LAYERNORM], 2);
    ts_graph_destroy(g);
    g = builtin("bert-base-layer:seq=384", &t);
    ck_assert_uint_eq(t.macs, 4 * 384 * H * H + 2 * 384 * 384 * H + 2 * 384 * H * F);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(builtin_list)
{
    ck_assert_uint_eq(ts_wl_builtin_count(), 10);
    const char *want[] = {"matmul",     "conv2d",      "mlp",       "resnet50", "bert-base-layer",
                          "gpt",        "gpt2-small",  "gpt2-medium", "llama3-8b", "opt-13b"};
    for (size_t i = 0; i < 10; i++) {
        ck_assert_str_eq(ts_wl_builtin_name(i), want[i]);
        size_t len = 0;
        ck_assert_ptr_nonnull(ts_wl_builtin_text(i, &len));
        ck_assert_uint_gt(len, 0);
    }
    ck_assert_ptr_null(ts_wl_builtin_name(10));
}
END_TEST

START_TEST(parameter_errors)
{
    ck_assert_str_eq(builtin_fail("matmul:q=1"), "matmul: unknown parameter 'q' (parameters: m, k, n, dtype)");
    ck_assert_str_eq(builtin_fail("matmul:m=abc"), "matmul: parameter 'm' must be a non-negative integer, got 'abc'");
    ck_assert_str_eq(builtin_fail("matmul:m=-4"), "matmul: parameter 'm' must be a non-negative integer, got '-4'");
    ck_assert_str_eq(builtin_fail("matmul:m"), "matmul: expected key=value, got 'm'");
    ck_assert_str_eq(builtin_fail("matmul:dtype=f33"),
                     "matmul: unknown dtype 'f33' for parameter 'dtype' (f32, f16, bf16, f64, i8, u8, i16, i32, i64)");
    ck_assert_str_eq(builtin_fail("nosuch"),
                     "no built-in workload 'nosuch' (built-ins: matmul, conv2d, mlp, resnet50, bert-base-layer, gpt, "
                     "gpt2-small, gpt2-medium, llama3-8b, opt-13b)");
    /* a zero dimension is caught where the shape is written */
    ck_assert_str_eq(builtin_fail("matmul:m=0"),
                     "workloads/builtin/matmul.yaml:10:23: dimension 'm' is 0; dimensions must be positive");
    /* a shape that does not fit: a 3x3 window on a 2x2 image without padding */
    const char *m = builtin_fail("conv2d:h=2,w=2,pad=0");
    ck_assert_str_eq(m, "workloads/builtin/conv2d.yaml:19:5: node 'conv' (Conv): window 3x3 with stride 1 does not "
                        "fit input x 2x2");
    /* heads that do not divide hidden */
    m = builtin_fail("bert-base-layer:heads=7");
    ck_assert_msg(strstr(m, "cannot reshape"), "%s", m);
}
END_TEST

START_TEST(file_errors)
{
    ck_assert_str_eq(text_fail("params: {m: 4\nnodes: ["),
                     "w.yaml:2:6: bad yaml: did not find expected ',' or '}'");
    ck_assert_str_eq(text_fail("nodez: []\n"),
                     "w.yaml:1:1: unknown key 'nodez' (keys: name, description, params, derived, blocks, inputs, "
                     "weights, nodes, outputs, llm)");
    ck_assert_str_eq(text_fail("inputs:\n  - {name: x, shape: [2, 3]}\nnodes:\n  - {op: Frobnicate, in: x, out: y}\n"),
                     "w.yaml:4:10: unknown op 'Frobnicate'");
    ck_assert_str_eq(text_fail("nodes:\n  - {op: Relu, name: r, in: nope, out: y}\n"),
                     "w.yaml:2:29: node 'r' reads 'nope', which is not defined before it");
    ck_assert_str_eq(text_fail("params: {n: 4}\ninputs:\n  - {name: x, shape: [n, n + ]}\n"),
                     "w.yaml:3:26: bad expression 'n +': unexpected end");
    ck_assert_str_eq(text_fail("inputs:\n  - {name: x, shape: [2, q]}\n"),
                     "w.yaml:2:26: bad expression 'q': unknown parameter 'q'");
    ck_assert_str_eq(text_fail("inputs:\n  - {name: a, shape: [4, 5]}\n  - {name: b, shape: [6, 7]}\n"
                               "nodes:\n  - {op: MatMul, name: mm, in: [a, b], out: c}\n"),
                     "w.yaml:5:5: node 'mm' (MatMul): inner dimensions differ: [4,5] x [6,7]");
    ck_assert_str_eq(text_fail("inputs:\n  - {name: x, shape: [2]}\nnodes:\n  - {op: Relu, in: x, out: y, colour: red}\n"),
                     "w.yaml:4:31: unknown node key 'colour'");
    ck_assert_str_eq(text_fail("nodes:\n  - {block: nope, in: x, out: y}\n"), "w.yaml:2:13: no block named 'nope'");
    ck_assert_str_eq(text_fail("params: {n: 4}\ninputs:\n  - {name: x, shape: [n / 0]}\n"),
                     "w.yaml:3:23: bad expression 'n / 0': division by zero");
    char deep[400];
    snprintf(deep, sizeof deep, "inputs:\n  - {name: x, shape: [%s]}\n",
             "----------------------------------------------------------------------1");
    ck_assert_str_eq(text_fail(deep), "w.yaml:2:23: bad expression "
                                      "'----------------------------------------------------------------------1': "
                                      "expression nested more than 64 levels");
}
END_TEST

/* The front end's limits (core/limit.h): a billion-row matmul is refused where its shape is
 * written, before any memory is asked for it; an output over the limit at its node; a block
 * nesting that multiplies operators at the graph_nodes limit. */
START_TEST(limits)
{
    ck_assert_str_eq(builtin_fail("matmul:m=1000000000,k=2,n=2"),
                     "workloads/builtin/matmul.yaml:10:22: tensor 'A' has 2000000000 elements, more than the limit "
                     "of 268435456 (raise it with TESSERA_LIMITS=tensor_elems=N)");
    ck_assert_str_eq(builtin_fail("matmul:m=16384,k=16384,n=2,dtype=f64"),
                     "workloads/builtin/matmul.yaml:10:22: tensor 'A' has 2147483648 bytes, more than the limit "
                     "of 1073741824 (raise it with TESSERA_LIMITS=tensor_bytes=N)");
    ck_assert_str_eq(builtin_fail("matmul:m=65536,k=2,n=65536"),
                     "workloads/builtin/matmul.yaml:14:5: node 'matmul' (MatMul): output 'C' has 4294967296 elements, "
                     "more than the limit of 268435456 (raise it with TESSERA_LIMITS=tensor_elems=N)");
    /* ten blocks of ten blocks of ... six levels deep: a million Relus from a few lines */
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, "blocks:\n");
    for (int l = 0; l < 6; l++) {
        ts_buf_printf(&b, "  b%d:\n    in: [x]\n    out: y\n    nodes:\n", l);
        for (int k = 0; k < 10; k++) {
            char in[16] = "x", out[16] = "y";
            if (k)
                snprintf(in, sizeof in, "t%d", k - 1);
            if (k < 9)
                snprintf(out, sizeof out, "t%d", k);
            if (l == 0)
                ts_buf_printf(&b, "      - {op: Relu, name: r%d, in: %s, out: %s}\n", k, in, out);
            else
                ts_buf_printf(&b, "      - {block: b%d, name: k%d, in: %s, out: %s}\n", l - 1, k, in, out);
        }
    }
    ts_buf_puts(&b, "inputs:\n  - {name: x, shape: [4]}\nnodes:\n  - {block: b5, in: x, out: y}\n");
    ck_assert_msg(strstr(text_fail(ts_buf_str(&b)), "is one more than the limit of 100000 operators (raise it with "
                                                    "TESSERA_LIMITS=graph_nodes=N)"), "%s", text_fail(ts_buf_str(&b)));
    ts_buf_free(&b);
}
END_TEST

START_TEST(file_with_blocks)
{
    const char *text = "name: twice\n"
                       "params: {n: 8, dtype: bf16}\n"
                       "blocks:\n"
                       "  dense:\n"
                       "    params: [width]\n"
                       "    in: [x]\n"
                       "    out: y\n"
                       "    nodes:\n"
                       "      - {op: MatMul, name: mm, in: [x, {weight: [n, width]}], out: h}\n"
                       "      - {op: Relu, name: act, in: h, out: y}\n"
                       "inputs:\n"
                       "  - {name: x, shape: [4, n]}\n"
                       "nodes:\n"
                       "  - {block: dense, name: l1, in: x, out: a, args: {width: n}}\n"
                       "  - {block: dense, name: l2, in: a, out: b, args: {width: n}}\n"
                       "outputs: [b]\n";
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_load_text(text, strlen(text), "w.yaml", "n=16", &g, &err), TS_OK);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.macs, 2 * 4 * 16 * 16);
    ck_assert_uint_eq(t.params, 2 * 16 * 16);
    ck_assert_uint_eq(t.param_bytes, 2 * 16 * 16 * 2);
    ck_assert_int_ge(ts_graph_find(g, "l1.mm.w1"), 0);
    ck_assert_int_ge(ts_graph_find(g, "l2.h"), 0);
    ck_assert_str_eq(ts_graph_name(g), "twice");
    ts_graph_destroy(g);
    ts_err_free(&err);
}
END_TEST

/* The decoder: prefill's and decode's MACs and parameters by the formulas of gpt.yaml, the
 * presets' shapes, the layer stack (repeat) and the causal mask's values. */
START_TEST(gpt_decoder)
{
    ts_graph_totals t;
    const uint64_t L = 12, H = 768, F = 3072, V = 50257, S = 128;
    const uint64_t layer_params = 4 * (H * H + H) + 2 * H * F + F + H + 4 * H;
    ts_graph *g = builtin("gpt2-small", &t);
    ck_assert_uint_eq(t.macs, L * (4 * S * H * H + 2 * S * S * H + 2 * S * H * F) + H * V);
    /* GPT-2 small's published 124,439,808 less its 1,024 x 768 position table (added before the
     * first layer, so outside the graph); its token table is the LM head's weight (tied) */
    ck_assert_uint_eq(t.params, L * layer_params + 2 * H + H * V);
    ck_assert_uint_eq(t.params + 1024 * H, 124439808);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_LAYERNORM], 2 * L + 1);
    ck_assert_int_ge(ts_graph_find(g, "layers.11.ln2.ln.w1"), 0);
    ck_assert_int_lt(ts_graph_find(g, "layers.12.ln2.ln.w1"), 0);
    /* the mask: 0 on and below the diagonal, -30000 above (f16) */
    const ts_graph_tensor *m = ts_graph_get_tensor(g, ts_graph_find(g, "mask"));
    ck_assert_int_eq(m->kind, TS_TENSOR_CONST);
    ck_assert_ptr_nonnull(m->data);
    const uint16_t *h = m->data;
    ck_assert_uint_eq(h[0], 0);
    ck_assert_uint_eq(h[1], 0xF753); /* -30000 in f16 rounds to -29984 */
    ck_assert_uint_eq(h[S * S - 1], 0);
    ck_assert_uint_eq(h[(S - 1) * S], 0);
    ts_graph_destroy(g);
    /* decode: one token against seq - 1 cached positions; the cache is held as weights */
    g = builtin("gpt2-small:phase=decode", &t);
    ck_assert_uint_eq(t.macs, L * (4 * H * H + 2 * S * H + 2 * H * F) + H * V);
    ck_assert_uint_eq(t.params, L * (layer_params + 2 * (S - 1) * H) + 2 * H + H * V);
    ck_assert_int_lt(ts_graph_find(g, "mask"), 0);
    ts_graph_destroy(g);
    g = builtin("gpt2-medium:phase=decode,seq=1024", &t);
    ck_assert_uint_eq(t.macs, 24 * (4 * 1024 * 1024 + 2 * 1024 * 1024 + 2 * 1024 * 4096) + 1024 * V);
    ts_graph_destroy(g);
    /* Llama 3 8B: grouped-query attention (8 KV heads of 128), SwiGLU, RMSNorm, no biases; its
     * published 8,030,261,248 parameters less the token table (outside the graph) */
    const uint64_t H8 = 4096, K8 = 8 * 128, F8 = 14336, V8 = 128256, L8 = 32;
    const uint64_t l8 = 2 * H8 * H8 + 2 * H8 * K8 + 3 * H8 * F8 + 2 * H8;
    g = builtin("llama3-8b", &t);
    ck_assert_uint_eq(t.params, L8 * l8 + H8 + H8 * V8);
    ck_assert_uint_eq(t.params + H8 * V8, 8030261248ull);
    ck_assert_uint_eq(t.macs, L8 * (S * (2 * H8 * H8 + 2 * H8 * K8) + 2 * S * S * H8 + 3 * S * H8 * F8) + H8 * V8);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_RMSNORM], 2 * L8 + 1);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_LAYERNORM], 0);
    /* the rotary tables (f16, [seq, heads, 128]): position p, element j: cos and sin of
     * p 500000^(-2 (j mod 64) / 128), the same for every head */
    const ts_graph_tensor *cs = ts_graph_get_tensor(g, ts_graph_find(g, "cos"));
    const ts_graph_tensor *sn = ts_graph_get_tensor(g, ts_graph_find(g, "sin"));
    ck_assert_int_eq(cs->kind, TS_TENSOR_CONST);
    for (int p = 0; p < 128; p += 37)
        for (int j = 0; j < 128; j += 21) {
            double ang = p * pow(500000.0, -2.0 * (j % 64) / 128.0);
            size_t at = (size_t)(p * 32 + p % 32) * 128 + (size_t)j; /* head p mod 32 of position p */
            uint16_t c16 = ((const uint16_t *)cs->data)[at], s16 = ((const uint16_t *)sn->data)[at];
            ck_assert_uint_eq(c16, ts_f32_to_f16((float)cos(ang)));
            ck_assert_uint_eq(s16, ts_f32_to_f16((float)sin(ang)));
        }
    /* the grouped mask [4 x 128, 128]: query row r is position r mod 128 */
    const uint16_t *gm = ts_graph_get_tensor(g, ts_graph_find(g, "mask"))->data;
    ck_assert_uint_eq(gm[(128 + 5) * 128 + 5], 0);
    ck_assert_uint_eq(gm[(128 + 5) * 128 + 6], 0xF753);
    ts_graph_destroy(g);
    g = builtin("llama3-8b:phase=decode,seq=4096", &t);
    ck_assert_uint_eq(t.macs, L8 * (2 * H8 * H8 + 2 * H8 * K8 + 2 * 4096 * H8 + 3 * H8 * F8) + H8 * V8);
    ck_assert_uint_eq(t.params, L8 * (l8 + 2 * 4095 * K8) + H8 + H8 * V8);
    /* decode's tables are one row, at position seq - 1 */
    cs = ts_graph_get_tensor(g, ts_graph_find(g, "cos"));
    ck_assert_uint_eq(((const uint16_t *)cs->data)[1], ts_f32_to_f16((float)cos(4095 * pow(500000.0, -2.0 / 128))));
    ts_graph_destroy(g);
    ck_assert_str_eq(builtin_fail("gpt:phase=train"), "gpt: parameter 'phase' is one of prefill, decode; got 'train'");
    /* OPT-13B: ReLU feed-forward, LayerNorm, biases; with its 2,050 x 5,120 position table
     * (outside the graph) 12,853,473,280 parameters, its token table tied to the LM head */
    const uint64_t H13 = 5120, F13 = 20480;
    g = builtin("opt-13b", &t);
    ck_assert_uint_eq(t.params, 40 * (4 * (H13 * H13 + H13) + 2 * H13 * F13 + F13 + H13 + 4 * H13) + 2 * H13 +
                                    H13 * 50272);
    ck_assert_uint_eq(t.params + 2050 * H13, 12853473280ull);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_RELU], 40);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_GELU], 0);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_SIGMOID], 0);
    ts_graph_destroy(g);
    /* errors at their place in gpt.yaml: a cache of no positions, no layers */
    const char *msg = builtin_fail("gpt2-small:phase=decode,seq=1");
    ck_assert_msg(!strncmp(msg, "workloads/builtin/gpt.yaml:", 27) && strstr(msg, ": dimension 'seq - 1' is 0; dimensions "
                  "must be positive"), "%s", msg);
    msg = builtin_fail("gpt2-small:layers=0");
    ck_assert_msg(!strncmp(msg, "workloads/builtin/gpt.yaml:", 27) && strstr(msg, ": repeat is 0; it must be 1 to 4096"),
                  "%s", msg);
    /* kv_heads 0 (the default) is as many as heads; one that does not divide them is refused */
    ts_graph_totals t2;
    ts_graph_destroy(builtin("gpt:heads=2,hidden=32,layers=1,seq=8,vocab=10,ffn=8", &t2));
    msg = builtin_fail("gpt:heads=4,kv_heads=3,hidden=32,layers=1,seq=8,vocab=10,ffn=8");
    ck_assert_msg(strstr(msg, "cannot reshape"), "%s", msg);
}
END_TEST

/* The template features the decoder uses, in a file: repeat, a choice parameter, a preset
 * (base:), Slice's starts and ends, and their errors. */
START_TEST(repeat_choice_base)
{
    const char *text = "params: {n: 2, depth: 3, act: {default: relu, choices: [none, relu]}}\n"
                       "derived: {n2: n * 2}\n"
                       "blocks:\n"
                       "  dense:\n"
                       "    in: [x, w]\n"
                       "    out: y\n"
                       "    nodes:\n"
                       "      - {op: MatMul, name: mm, in: [x, w], out: h, if: 1 - act}\n"
                       "      - {op: MatMul, name: mm, in: [x, w], out: y, if: act}\n"
                       "      - {op: Relu, name: r, in: h, out: y, if: 1 - act}\n"
                       "inputs:\n"
                       "  - {name: x, shape: [2, n2]}\n"
                       "weights:\n"
                       "  - {name: w, shape: [n2, n2]}\n"
                       "  - {name: unused, if: 0, shape: [n2]}\n"
                       "nodes:\n"
                       "  - {block: dense, name: l, repeat: depth, in: [x, w], out: y}\n"
                       "  - {op: Slice, name: s, in: y, out: z, starts: [1, 0], ends: [2, n2]}\n"
                       "outputs: [z]\n";
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_load_text(text, strlen(text), "w.yaml", "depth=5,act=none", &g, &err), TS_OK);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.macs, 5 * 2 * 4 * 4);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_RELU], 5);
    ck_assert_int_ge(ts_graph_find(g, "l.3#out"), 0); /* copy 3's output, copy 4's input */
    ck_assert_int_ge(ts_graph_find(g, "l.4.h"), 0);
    ck_assert_int_lt(ts_graph_find(g, "unused"), 0);
    const ts_graph_tensor *z = ts_graph_get_tensor(g, ts_graph_find(g, "z"));
    ck_assert_int_eq(z->rank, 2);
    ck_assert_int_eq(z->dims[0], 1);
    ck_assert_int_eq(z->dims[1], 4);
    ts_graph_destroy(g);
    g = NULL;
    ck_assert_int_eq(ts_wl_load_text(text, strlen(text), "w.yaml", "act=relu", &g, &err), TS_OK);
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_RELU], 0);
    ts_graph_destroy(g);
    ts_err_free(&err);
    ck_assert_str_eq(text_fail("params: {a: {default: x}}\n"),
                     "w.yaml:1:13: parameter 'a': a choice is {default: NAME, choices: [NAME, ...]}");
    ck_assert_str_eq(text_fail("params: {a: {default: x, choices: [y, z]}}\n"),
                     "w.yaml:1:23: parameter 'a' is one of y, z; got 'x'");
    ck_assert_str_eq(text_fail("params: {a: 1, a: 2}\n"), "w.yaml:1:16: parameter 'a' is declared twice");
    ck_assert_str_eq(text_fail("params: {a: 1}\nderived: {a: 2}\n"), "w.yaml:2:11: 'a' is a parameter already");
    /* params and derived values both check the name's length (47 characters at most) */
    char yaml[256], want[256], longname[49];
    memset(longname, 'n', 48);
    longname[48] = 0;
    snprintf(yaml, sizeof yaml, "params: {%s: 1}\n", longname);
    snprintf(want, sizeof want, "w.yaml:1:10: parameter name '%s' longer than 47 characters", longname);
    ck_assert_str_eq(text_fail(yaml), want);
    snprintf(yaml, sizeof yaml, "params: {a: 1}\nderived: {%s: 2}\n", longname);
    snprintf(want, sizeof want, "w.yaml:2:11: parameter name '%s' longer than 47 characters", longname);
    ck_assert_str_eq(text_fail(yaml), want);
    ck_assert_str_eq(text_fail("params: {a: 1}\nderived: {b: a / 0}\n"),
                     "w.yaml:2:14: bad expression 'a / 0': division by zero");
    ck_assert_str_eq(text_fail("base: gpt\nparams: {layerz: 2}\n"),
                     "w.yaml:2:10: the base workload has no parameter 'layerz'");
    ck_assert_str_eq(text_fail("base: nope\n"), "w.yaml:1:7: base 'nope' is not a built-in workload");
    /* an empty file has no tree at all (found by fuzz_workload) */
    ck_assert_str_eq(text_fail(""), "w.yaml: a workload is a map with params, inputs, weights, nodes and outputs");
    ck_assert_str_eq(text_fail("base: gpt2-small\n"), "w.yaml:1:7: built-in 'gpt2-small' has a base itself");
    ck_assert_str_eq(text_fail("base: gpt\nnodes: []\n"),
                     "w.yaml:2:1: a workload with base: takes name, description, base and params, not 'nodes'");
    ck_assert_str_eq(text_fail("inputs:\n  - {name: x, shape: [2, 2]}\nnodes:\n"
                               "  - {op: Slice, in: x, out: y, starts: [0, 0]}\n"),
                     "w.yaml:4:5: starts and ends come together, one of each per axis");
    ck_assert_str_eq(text_fail("weights:\n  - {name: m, shape: [2, 2], values: zeros}\n"),
                     "w.yaml:2:38: values: the generators are causal, rope_cos and rope_sin");
    ck_assert_str_eq(text_fail("inputs:\n  - {name: m, shape: [2, 2], values: causal}\n"),
                     "w.yaml:2:38: only weights take values");
}
END_TEST

START_TEST(info_for_builtin)
{
    ts_err err;
    ts_err_init(&err);
    ts_buf b = TS_BUF_INIT;
    ck_assert_int_eq(ts_wl_info("matmul:m=2,k=3,n=4", NULL, NULL, true, &b, &err), TS_OK);
    ck_assert_str_eq(ts_buf_str(&b), "{\n"
                                     "  \"model\": \"matmul\",\n"
                                     "  \"nodes\": 1,\n"
                                     "  \"nodes_by_op\": {\"MatMul\": 1},\n"
                                     "  \"macs\": 24,\n"
                                     "  \"params\": 12,\n"
                                     "  \"param_bytes\": 48,\n"
                                     "  \"activation_bytes\": 56,\n"
                                     "  \"input_bytes\": 24,\n"
                                     "  \"output_bytes\": 32,\n"
                                     "  \"inputs\": [{\"name\": \"A\", \"dtype\": \"f32\", \"shape\": [2, 3]}],\n"
                                     "  \"outputs\": [{\"name\": \"C\", \"dtype\": \"f32\", \"shape\": [2, 4]}]\n"
                                     "}\n");
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_wl_info("matmul:m=2,k=3,n=4", NULL, NULL, false, &b, &err), TS_OK);
    ck_assert_msg(strstr(ts_buf_str(&b), "MACs                 24"), "%s", ts_buf_str(&b));
    ts_buf_free(&b);
    ck_assert_int_eq(ts_wl_info("/nonexistent.yaml", NULL, NULL, false, &b, &err), TS_EIO);
    /* the per-node listing */
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin("mlp:batch=2,in=3,hidden=4,out=5", &g, &err), TS_OK);
    ts_buf_reset(&b);
    ts_wl_graph_dump(g, &b);
    ck_assert_str_eq(ts_buf_str(&b), "   0 Gemm fc1: x[2x3] fc1.w1[4x3]w fc1.w2[4]w -> h1[2x4]  24 MACs\n"
                                     "   1 Relu relu1: h1[2x4] -> a1[2x4]\n"
                                     "   2 Gemm fc2: a1[2x4] fc2.w1[4x4]w fc2.w2[4]w -> h2[2x4]  32 MACs\n"
                                     "   3 Relu relu2: h2[2x4] -> a2[2x4]\n"
                                     "   4 Gemm fc3: a2[2x4] fc3.w1[5x4]w fc3.w2[5]w -> y[2x5]  40 MACs\n");
    ts_graph_destroy(g);
    ts_buf_free(&b);
    ts_err_free(&err);
}
END_TEST

START_TEST(load_model)
{
    char path[] = "/tmp/ts_test_wl_XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("params: {n: 2}\ninputs:\n  - {name: x, shape: [n, 3]}\nnodes:\n  - {op: Relu, in: x, out: y}\n", f);
    fclose(f);
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_load_model(path, NULL, NULL, &g, &err), TS_OK);
    ck_assert_int_eq(ts_graph_get_tensor(g, ts_graph_find(g, "y"))->dims[0], 2);
    ts_graph_destroy(g);
    char spec[64];
    snprintf(spec, sizeof spec, "%s:n=7", path);
    ck_assert_int_eq(ts_wl_load_model(spec, NULL, NULL, &g, &err), TS_OK);
    ck_assert_int_eq(ts_graph_get_tensor(g, ts_graph_find(g, "y"))->dims[0], 7);
    ts_graph_destroy(g);
    ck_assert_int_eq(ts_wl_load_model("matmul:m=4,k=4,n=4", NULL, NULL, &g, &err), TS_OK);
    ts_graph_destroy(g);
    /* models versus chip configs */
    ck_assert(ts_wl_is_model(path));
    ck_assert(ts_wl_is_model(spec));
    ck_assert(ts_wl_is_model("resnet50"));
    ck_assert(ts_wl_is_model("matmul:m=4"));
    ck_assert(ts_wl_is_model("whatever.onnx"));
    ck_assert(!ts_wl_is_model("ipu_mk1"));
    ck_assert(!ts_wl_is_model("/nonexistent.yaml"));
    char cfg[] = "/tmp/ts_test_cfg_XXXXXX.yaml";
    int cfd = mkstemps(cfg, 5);
    ck_assert_int_ge(cfd, 0);
    FILE *cf = fdopen(cfd, "w");
    fputs("arch: ipu\nnodes: 4\n", cf);
    fclose(cf);
    ck_assert(!ts_wl_is_model(cfg));
    remove(cfg);
    ck_assert_int_eq(ts_wl_load_model("matmul", "A", NULL, &g, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "data input names and dimension values apply to ONNX models only, not 'matmul'");
    ck_assert_ptr_null(g);
    remove(path);
    ts_err_free(&err);
}
END_TEST

START_TEST(alloc_failures)
{
    for (long n = 1; n < 3000; n += 13) {
        ts_err err;
        ts_err_init(&err);
        ts_graph *g = NULL;
        ts_alloc_fail_after(n);
        ts_status st = ts_wl_builtin("bert-base-layer", &g, &err);
        long fails = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (fails)
            ck_assert_msg(st == TS_ENOMEM, "allocation %ld: status %d: %s", n, (int)st, err.msg);
        ts_graph_destroy(g);
        ts_err_free(&err);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("workload");
    TCase *tc = tcase_create("workload");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, matmul);
    tcase_add_test(tc, conv2d_and_mlp);
    tcase_add_test(tc, resnet50);
    tcase_add_test(tc, bert_layer);
    tcase_add_test(tc, builtin_list);
    tcase_add_test(tc, parameter_errors);
    tcase_add_test(tc, file_errors);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, file_with_blocks);
    tcase_add_test(tc, gpt_decoder);
    tcase_add_test(tc, repeat_choice_base);
    tcase_add_test(tc, info_for_builtin);
    tcase_add_test(tc, load_model);
    tcase_add_test(tc, alloc_failures);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
