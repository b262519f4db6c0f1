/* tests/workloads/test_graph.c — the graph IR: shape inference per op (with broadcasting),
 * MACs, totals, BatchNormalization folding, LayerNorm recognition, dead nodes, order, cycles. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "workloads/graph.h"

static ts_graph *g;
static ts_err err;

static void setup(void)
{
    g = ts_graph_create("t");
    ck_assert_ptr_nonnull(g);
    ts_err_init(&err);
}

static void teardown(void)
{
    ts_graph_destroy(g);
    ts_err_free(&err);
}

/* Add a tensor of the given kind and shape (rank then dims). */
static int tensor(const char *name, ts_tensor_kind kind, int rank, ...)
{
    int64_t d[TS_GRAPH_MAX_RANK];
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        d[i] = va_arg(ap, int);
    va_end(ap);
    int id;
    ck_assert_int_eq(ts_graph_add_tensor(g, name, kind, TS_DT_F32, rank, d, &id, &err), TS_OK);
    return id;
}

static int in(const char *name, int rank, ...)
{
    int64_t d[TS_GRAPH_MAX_RANK];
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        d[i] = va_arg(ap, int);
    va_end(ap);
    int id;
    ck_assert_int_eq(ts_graph_add_tensor(g, name, TS_TENSOR_INPUT, TS_DT_F32, rank, d, &id, &err), TS_OK);
    return id;
}

/* Add a node with inputs ins[0..nin) and one new output named out; infer; return the status. */
static ts_status node(ts_graph_op op, const ts_graph_attrs *a, const char *out, int nin, const int *ins, int *oid)
{
    int o;
    ck_assert_int_eq(ts_graph_add_tensor(g, out, TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL, &o, &err), TS_OK);
    int id;
    char name[64];
    snprintf(name, sizeof name, "n_%s", out);
    ck_assert_int_eq(ts_graph_add_node(g, op, name, ins, (size_t)nin, &o, 1, a, &id, &err), TS_OK);
    if (oid)
        *oid = o;
    return ts_graph_infer_node(g, id, &err);
}

/* The output's shape as "[a,b,c]" after a node that must succeed. */
static const char *shape_of(int id)
{
    static char buf[128];
    const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
    size_t k = (size_t)snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < t->rank; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    snprintf(buf + k, sizeof buf - k, "]");
    return buf;
}

static const char *ok(ts_graph_op op, const ts_graph_attrs *a, int nin, const int *ins)
{
    static int n;
    char out[32];
    snprintf(out, sizeof out, "y%d", n++);
    int o;
    ts_status st = node(op, a, out, nin, ins, &o);
    ck_assert_msg(st == TS_OK, "%s: %s", ts_graph_op_name(op), err.msg);
    return shape_of(o);
}

static const char *bad(ts_graph_op op, const ts_graph_attrs *a, int nin, const int *ins)
{
    static int n;
    char out[32];
    snprintf(out, sizeof out, "bad%d", n++);
    ts_status st = node(op, a, out, nin, ins, NULL);
    ck_assert_msg(st == TS_EINPUT, "%s should fail", ts_graph_op_name(op));
    return err.msg;
}

START_TEST(conv_shapes)
{
    int x = in("x", 4, 1, 3, 224, 224);
    int w = tensor("w", TS_TENSOR_WEIGHT, 4, 64, 3, 7, 7);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.strides[0] = a.strides[1] = 2;
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 3;
    ck_assert_str_eq(ok(TS_OP_CONV, &a, 2, (int[]){x, w}), "[1,64,112,112]");
    /* grouped, dilated */
    int x2 = in("x2", 4, 2, 32, 20, 20);
    int wd = tensor("wd", TS_TENSOR_WEIGHT, 4, 64, 8, 3, 3);
    ts_graph_attrs_init(&a);
    a.group = 4;
    a.dilations[0] = a.dilations[1] = 2;
    ck_assert_str_eq(ok(TS_OP_CONV, &a, 2, (int[]){x2, wd}), "[2,64,16,16]");
    ck_assert_uint_eq(ts_graph_node_macs(g, 1), 2ull * 64 * 16 * 16 * 8 * 9);
    /* bad group */
    a.group = 3;
    ck_assert_str_eq(bad(TS_OP_CONV, &a, 2, (int[]){x2, wd}),
                     "node 'n_bad0' (Conv): group 3 does not divide 32 input and 64 output channels");
    ts_graph_attrs_init(&a);
    ck_assert_str_eq(bad(TS_OP_CONV, &a, 2, (int[]){x, wd}),
                     "node 'n_bad1' (Conv): weight 'wd' expects 8 input channels per group, input has 3 in 1 groups");
    int b = tensor("b", TS_TENSOR_WEIGHT, 1, 63);
    ck_assert_str_eq(bad(TS_OP_CONV, &a, 3, (int[]){x, w, b}), "node 'n_bad2' (Conv): bias 'b' must have shape [64]");
}
END_TEST

START_TEST(pool_shapes)
{
    int x = in("x", 4, 1, 64, 112, 112);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = 3;
    a.strides[0] = a.strides[1] = 2;
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    ck_assert_str_eq(ok(TS_OP_MAXPOOL, &a, 1, &x), "[1,64,56,56]");
    int x2 = in("x2", 4, 1, 8, 6, 6);
    ts_graph_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = 3;
    a.strides[0] = a.strides[1] = 2;
    ck_assert_str_eq(ok(TS_OP_AVGPOOL, &a, 1, &x2), "[1,8,2,2]");
    a.ceil_mode = true;
    ck_assert_str_eq(ok(TS_OP_AVGPOOL, &a, 1, &x2), "[1,8,3,3]");
    ck_assert_str_eq(ok(TS_OP_GLOBALAVGPOOL, NULL, 1, &x2), "[1,8,1,1]");
    a.kernel[0] = a.kernel[1] = 9;
    ck_assert_str_eq(bad(TS_OP_MAXPOOL, &a, 1, &x2),
                     "node 'n_bad0' (MaxPool): window 9x9 with stride 2 does not fit input x2 6x6");
}
END_TEST

START_TEST(matmul_gemm_shapes)
{
    int a = in("a", 3, 12, 197, 64), b = in("b", 3, 12, 64, 197);
    ck_assert_str_eq(ok(TS_OP_MATMUL, NULL, 2, (int[]){a, b}), "[12,197,197]");
    ck_assert_uint_eq(ts_graph_node_macs(g, 0), 12ull * 197 * 197 * 64);
    /* broadcast batch, 2-d weight */
    int w = tensor("w", TS_TENSOR_WEIGHT, 2, 64, 10);
    ck_assert_str_eq(ok(TS_OP_MATMUL, NULL, 2, (int[]){a, w}), "[12,197,10]");
    int c = in("c", 4, 2, 1, 5, 6), d = in("d", 3, 3, 6, 7);
    ck_assert_str_eq(ok(TS_OP_MATMUL, NULL, 2, (int[]){c, d}), "[2,3,5,7]");
    /* 1-d operands */
    int v = in("v", 1, 6), m = in("m", 2, 6, 4);
    ck_assert_str_eq(ok(TS_OP_MATMUL, NULL, 2, (int[]){v, m}), "[4]");
    int m2 = in("m2", 2, 4, 6);
    ck_assert_str_eq(ok(TS_OP_MATMUL, NULL, 2, (int[]){m2, v}), "[4]");
    ck_assert_str_eq(bad(TS_OP_MATMUL, NULL, 2, (int[]){a, a}),
                     "node 'n_bad0' (MatMul): inner dimensions differ: [12,197,64] x [12,197,64]");
    /* Gemm with transposes and a broadcast bias */
    int x = in("x", 2, 8, 16), wt = tensor("wt", TS_TENSOR_WEIGHT, 2, 32, 16), bias = tensor("bias", TS_TENSOR_WEIGHT, 1, 32);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    ck_assert_str_eq(ok(TS_OP_GEMM, &at, 3, (int[]){x, wt, bias}), "[8,32]");
    ck_assert_uint_eq(ts_graph_node_macs(g, 6), 8 * 32 * 16);
    at.trans_b = false;
    ck_assert_str_eq(bad(TS_OP_GEMM, &at, 2, (int[]){x, wt}),
                     "node 'n_bad1' (Gemm): inner dimensions differ: [8,16] x [32,16] (transA 0, transB 0)");
    at.trans_a = true;
    int xt = in("xt", 2, 16, 8);
    at.trans_b = true;
    ck_assert_str_eq(ok(TS_OP_GEMM, &at, 2, (int[]){xt, wt}), "[8,32]");
}
END_TEST

START_TEST(elementwise_shapes)
{
    int a = in("a", 3, 2, 1, 5), b = in("b", 2, 4, 1), s = in("s", 0);
    ck_assert_str_eq(ok(TS_OP_ADD, NULL, 2, (int[]){a, b}), "[2,4,5]");
    ck_assert_str_eq(ok(TS_OP_MUL, NULL, 2, (int[]){a, s}), "[2,1,5]");
    ck_assert_str_eq(ok(TS_OP_SUB, NULL, 2, (int[]){s, b}), "[4,1]");
    ck_assert_str_eq(ok(TS_OP_DIV, NULL, 2, (int[]){b, b}), "[4,1]");
    ck_assert_str_eq(ok(TS_OP_POW, NULL, 2, (int[]){a, s}), "[2,1,5]");
    int c = in("c", 2, 3, 5), e = in("e", 3, 2, 4, 5);
    ck_assert_str_eq(ok(TS_OP_ADD, NULL, 2, (int[]){a, c}), "[2,3,5]");
    ck_assert_str_eq(bad(TS_OP_ADD, NULL, 2, (int[]){e, c}), "node 'n_bad0' (Add): shapes [2,4,5] and [3,5] do not broadcast");
    ts_graph_op unary[] = {TS_OP_RELU, TS_OP_SIGMOID, TS_OP_TANH, TS_OP_ERF, TS_OP_GELU, TS_OP_SQRT, TS_OP_CLIP,
                           TS_OP_HARDSWISH};
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
        ck_assert_str_eq(ok(unary[i], NULL, 1, &a), "[2,1,5]");
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.to = TS_DT_F16;
    int o;
    ck_assert_int_eq(node(TS_OP_CAST, &at, "cast", 1, &a, &o), TS_OK);
    ck_assert_int_eq(ts_graph_get_tensor(g, o)->dtype, TS_DT_F16);
    at.axis = -1;
    ck_assert_str_eq(ok(TS_OP_SOFTMAX, &at, 1, &a), "[2,1,5]");
    at.axis = 3;
    ck_assert_str_eq(bad(TS_OP_SOFTMAX, &at, 1, &a), "node 'n_bad1' (Softmax): axis 3 is out of range for rank 3");
}
END_TEST

START_TEST(reduce_and_norm_shapes)
{
    int x = in("x", 3, 2, 128, 768);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.naxes = 1;
    a.axes[0] = -1;
    ck_assert_str_eq(ok(TS_OP_REDUCEMEAN, &a, 1, &x), "[2,128,1]");
    a.keepdims = false;
    ck_assert_str_eq(ok(TS_OP_REDUCEMEAN, &a, 1, &x), "[2,128]");
    a.naxes = 0;
    ck_assert_str_eq(ok(TS_OP_REDUCEMEAN, &a, 1, &x), "[]");
    int gam = tensor("gamma", TS_TENSOR_WEIGHT, 1, 768), bet = tensor("beta", TS_TENSOR_WEIGHT, 1, 768);
    ts_graph_attrs_init(&a);
    a.axis = -1;
    ck_assert_str_eq(ok(TS_OP_LAYERNORM, &a, 3, (int[]){x, gam, bet}), "[2,128,768]");
    int wrong = tensor("wrong", TS_TENSOR_WEIGHT, 1, 767);
    ck_assert_str_eq(bad(TS_OP_LAYERNORM, &a, 2, (int[]){x, wrong}),
                     "node 'n_bad0' (LayerNormalization): 'wrong' [767] does not match the normalised axes");
    ck_assert_str_eq(ok(TS_OP_RMSNORM, &a, 2, (int[]){x, gam}), "[2,128,768]");
    ck_assert_str_eq(bad(TS_OP_RMSNORM, &a, 3, (int[]){x, gam, bet}),
                     "node 'n_bad1' (RMSNormalization): takes an input and a scale, and gives one output");
    ck_assert_str_eq(bad(TS_OP_RMSNORM, &a, 2, (int[]){x, wrong}),
                     "node 'n_bad2' (RMSNormalization): 'wrong' [767] does not match the normalised axes");
    int img = in("img", 4, 1, 4, 8, 8);
    int c4[4];
    for (int i = 0; i < 4; i++) {
        char n[16];
        snprintf(n, sizeof n, "bn%d", i);
        c4[i] = tensor(n, TS_TENSOR_WEIGHT, 1, 4);
    }
    ck_assert_str_eq(ok(TS_OP_BATCHNORM, NULL, 5, (int[]){img, c4[0], c4[1], c4[2], c4[3]}), "[1,4,8,8]");
}
END_TEST

START_TEST(layout_shapes)
{
    int x = in("x", 4, 1, 768, 14, 14);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.nshape = 3;
    a.shape[0] = 1;
    a.shape[1] = 768;
    a.shape[2] = 196;
    ck_assert_str_eq(ok(TS_OP_RESHAPE, &a, 1, &x), "[1,768,196]");
    a.shape[2] = 195;
    ck_assert_str_eq(bad(TS_OP_RESHAPE, &a, 1, &x),
                     "node 'n_bad0' (Reshape): cannot reshape [1,768,14,14] (150528 elements) to 149760 elements");
    ts_graph_attrs_init(&a);
    a.nperm = 4;
    a.perm[0] = 0, a.perm[1] = 2, a.perm[2] = 3, a.perm[3] = 1;
    ck_assert_str_eq(ok(TS_OP_TRANSPOSE, &a, 1, &x), "[1,14,14,768]");
    ts_graph_attrs_init(&a);
    ck_assert_str_eq(ok(TS_OP_TRANSPOSE, &a, 1, &x), "[14,14,768,1]");
    a.nperm = 4;
    a.perm[0] = 0, a.perm[1] = 0, a.perm[2] = 1, a.perm[3] = 2;
    ck_assert_str_eq(bad(TS_OP_TRANSPOSE, &a, 1, &x), "node 'n_bad1' (Transpose): perm is not a permutation of 0..3");
    ts_graph_attrs_init(&a);
    a.axis = 1;
    ck_assert_str_eq(ok(TS_OP_FLATTEN, &a, 1, &x), "[1,150528]");
    a.axis = 2;
    ck_assert_str_eq(ok(TS_OP_FLATTEN, &a, 1, &x), "[768,196]");
    int y = in("y", 4, 1, 10, 14, 14);
    ts_graph_attrs_init(&a);
    a.axis = 1;
    ck_assert_str_eq(ok(TS_OP_CONCAT, &a, 3, (int[]){x, y, y}), "[1,788,14,14]");
    a.axis = 2;
    ck_assert_str_eq(bad(TS_OP_CONCAT, &a, 2, (int[]){x, y}),
                     "node 'n_bad2' (Concat): cannot concatenate [1,768,14,14] and [1,10,14,14] on axis 2");
    /* Slice: the middle third of axis 1, every other row of axis 2 */
    ts_graph_attrs_init(&a);
    a.nslice = 4;
    for (int i = 0; i < 4; i++)
        a.starts[i] = 0, a.ends[i] = ts_graph_get_tensor(g, x)->dims[i], a.steps[i] = 1;
    a.starts[1] = 256, a.ends[1] = 512;
    a.steps[2] = 2;
    ck_assert_str_eq(ok(TS_OP_SLICE, &a, 1, &x), "[1,256,7,14]");
    /* Gather of one row (scalar index) and of a matrix of indices */
    int table = tensor("table", TS_TENSOR_WEIGHT, 2, 30522, 768);
    int ids = in("ids", 2, 1, 128), one = tensor("one", TS_TENSOR_CONST, 0);
    ts_graph_attrs_init(&a);
    ck_assert_str_eq(ok(TS_OP_GATHER, &a, 2, (int[]){table, ids}), "[1,128,768]");
    int seq = in("seq", 3, 1, 197, 768);
    a.axis = 1;
    ck_assert_str_eq(ok(TS_OP_GATHER, &a, 2, (int[]){seq, one}), "[1,768]");
    /* Expand */
    int cls = tensor("cls", TS_TENSOR_WEIGHT, 3, 1, 1, 768);
    ts_graph_attrs_init(&a);
    a.nshape = 3;
    a.shape[0] = 4, a.shape[1] = 1, a.shape[2] = 768;
    ck_assert_str_eq(ok(TS_OP_EXPAND, &a, 1, &cls), "[4,1,768]");
}
END_TEST

START_TEST(totals_and_dead_nodes)
{
    int x = in("x", 2, 4, 8);
    int w1 = tensor("w1", TS_TENSOR_WEIGHT, 2, 8, 16), w2 = tensor("w2", TS_TENSOR_WEIGHT, 2, 8, 32);
    int h, dead;
    ck_assert_int_eq(node(TS_OP_MATMUL, NULL, "h", 2, (int[]){x, w1}, &h), TS_OK);
    ck_assert_int_eq(node(TS_OP_MATMUL, NULL, "unused", 2, (int[]){x, w2}, &dead), TS_OK);
    int y;
    ck_assert_int_eq(node(TS_OP_RELU, NULL, "y", 1, &h, &y), TS_OK);
    ts_graph_mark_output(g, y);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    /* the MatMul nothing reads is gone, with its weight */
    ck_assert_uint_eq(ts_graph_node_count(g), 2);
    ck_assert_int_eq(ts_graph_find(g, "unused"), -1);
    ck_assert_int_eq(ts_graph_find(g, "w2"), -1);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.macs, 4 * 8 * 16);
    ck_assert_uint_eq(t.params, 8 * 16);
    ck_assert_uint_eq(t.param_bytes, 8 * 16 * 4);
    ck_assert_uint_eq(t.activation_bytes, (4 * 8 + 4 * 16 + 4 * 16) * 4);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_MATMUL], 1);
    ck_assert_uint_eq(t.nodes_by_op[TS_OP_RELU], 1);
    /* consumer lists for the lowerings */
    size_t n;
    const int *c = ts_graph_consumers(g, ts_graph_find(g, "h"), &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(ts_graph_get_node(g, c[0])->name, "n_y");
    c = ts_graph_consumers(g, ts_graph_find(g, "x"), &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(c[0], 0);
    ts_graph_consumers(g, ts_graph_find(g, "y"), &n);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(ts_graph_consumers(g, 99, &n));
}
END_TEST

START_TEST(topological_order_and_cycles)
{
    /* nodes added consumer first */
    int x = in("x", 1, 4);
    int a, b, c;
    ck_assert_int_eq(ts_graph_add_tensor(g, "a", TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL, &a, &err), TS_OK);
    ck_assert_int_eq(ts_graph_add_tensor(g, "b", TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL, &b, &err), TS_OK);
    ck_assert_int_eq(ts_graph_add_node(g, TS_OP_RELU, "second", &a, 1, &b, 1, NULL, NULL, &err), TS_OK);
    ck_assert_int_eq(ts_graph_add_node(g, TS_OP_RELU, "first", &x, 1, &a, 1, NULL, NULL, &err), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_str_eq(ts_graph_get_node(g, 0)->name, "first");
    ck_assert_str_eq(ts_graph_get_node(g, 1)->name, "second");
    ck_assert_str_eq(shape_of(ts_graph_find(g, "b")), "[4]");
    /* a cycle */
    ts_graph *h = ts_graph_create("cyc");
    ck_assert_int_eq(ts_graph_add_tensor(h, "p", TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL, &a, &err), TS_OK);
    ck_assert_int_eq(ts_graph_add_tensor(h, "q", TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL, &c, &err), TS_OK);
    ck_assert_int_eq(ts_graph_add_node(h, TS_OP_RELU, "n1", &a, 1, &c, 1, NULL, NULL, &err), TS_OK);
    ck_assert_int_eq(ts_graph_add_node(h, TS_OP_RELU, "n2", &c, 1, &a, 1, NULL, NULL, &err), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(h, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "the graph has a cycle through node 'n1'");
    ts_graph_destroy(h);
    /* duplicate names and double producers */
    ck_assert_int_eq(ts_graph_add_tensor(g, "x", TS_TENSOR_INPUT, TS_DT_F32, 0, NULL, NULL, &err), TS_EINPUT);
    ck_assert_str_eq(err.msg, "tensor 'x' is defined twice");
}
END_TEST

/* A scalar constant of value v. */
static int scalar(const char *name, float v)
{
    int id;
    ck_assert_int_eq(ts_graph_add_tensor(g, name, TS_TENSOR_CONST, TS_DT_F32, 0, NULL, &id, &err), TS_OK);
    ck_assert_int_eq(ts_graph_set_data(g, id, &v, sizeof v, &err), TS_OK);
    return id;
}

/* A weight of shape [n] (or [n,1,1,1] when conv) with values v. */
static int valued(const char *name, int n, bool conv, const float *v)
{
    int id = conv ? tensor(name, TS_TENSOR_WEIGHT, 4, n, 1, 1, 1) : tensor(name, TS_TENSOR_WEIGHT, 1, n);
    ck_assert_int_eq(ts_graph_set_data(g, id, v, (size_t)n * sizeof *v, &err), TS_OK);
    return id;
}

START_TEST(batchnorm_folding_values)
{
    /* s = scale / sqrt(var + eps) = [4, 1] / sqrt(3 + 1) = [2, 0.5]
     * W' = W * s = [2, 0.5]; b' = (0 - mean) * s + shift = [-1*2 + 10, -2*0.5 + 20] = [8, 19] */
    int x = in("x", 4, 1, 1, 4, 4);
    int w = valued("w", 2, true, (float[]){1, 1});
    int sc = valued("scale", 2, false, (float[]){4, 1}), sh = valued("shift", 2, false, (float[]){10, 20});
    int mean = valued("mean", 2, false, (float[]){1, 2}), var = valued("var", 2, false, (float[]){3, 3});
    int c, y;
    ck_assert_int_eq(node(TS_OP_CONV, NULL, "c", 2, (int[]){x, w}, &c), TS_OK);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.epsilon = 1;
    ck_assert_int_eq(node(TS_OP_BATCHNORM, &a, "y", 5, (int[]){c, sc, sh, mean, var}, &y), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    const ts_graph_node *n = ts_graph_get_node(g, 0);
    ck_assert_uint_eq(n->nin, 3);
    const float *wv = ts_graph_get_tensor(g, n->in[1])->data, *bv = ts_graph_get_tensor(g, n->in[2])->data;
    ck_assert_ptr_nonnull(wv);
    ck_assert_ptr_nonnull(bv);
    ck_assert(fabs(wv[0] - 2) < 1e-6 && fabs(wv[1] - 0.5) < 1e-6);
    ck_assert(fabs(bv[0] - 8) < 1e-5 && fabs(bv[1] - 19) < 1e-5);
}
END_TEST

START_TEST(batchnorm_folding)
{
    int x = in("x", 4, 1, 3, 8, 8), w = tensor("w", TS_TENSOR_WEIGHT, 4, 16, 3, 3, 3);
    int c, y;
    ck_assert_int_eq(node(TS_OP_CONV, NULL, "c", 2, (int[]){x, w}, &c), TS_OK);
    int p[4];
    for (int i = 0; i < 4; i++) {
        char n[16];
        snprintf(n, sizeof n, "bn%d", i);
        p[i] = tensor(n, TS_TENSOR_WEIGHT, 1, 16);
    }
    ck_assert_int_eq(node(TS_OP_BATCHNORM, NULL, "y", 5, (int[]){c, p[0], p[1], p[2], p[3]}, &y), TS_OK);
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.params, 16 * 27 + 4 * 16);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_uint_eq(ts_graph_node_count(g), 1);
    const ts_graph_node *n = ts_graph_get_node(g, 0);
    ck_assert_int_eq(n->op, TS_OP_CONV);
    ck_assert_uint_eq(n->nin, 3);
    ck_assert_str_eq(ts_graph_get_tensor(g, n->out[0])->name, "y");
    ck_assert_str_eq(ts_graph_get_tensor(g, n->in[2])->name, "n_c.bias");
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.params, 16 * 27 + 16);
    ck_assert_str_eq(shape_of(ts_graph_find(g, "y")), "[1,16,6,6]");
}
END_TEST


START_TEST(layernorm_pattern)
{
    int x = in("x", 3, 1, 4, 32);
    ts_graph_attrs r;
    ts_graph_attrs_init(&r);
    r.naxes = 1;
    r.axes[0] = -1;
    int m, d, p, v, ve, s, nrm, sc, y;
    int two = scalar("two", 2), eps = scalar("eps", 1e-12f);
    int gam = tensor("gamma", TS_TENSOR_WEIGHT, 1, 32), bet = tensor("beta", TS_TENSOR_WEIGHT, 1, 32);
    ck_assert_int_eq(node(TS_OP_REDUCEMEAN, &r, "m", 1, &x, &m), TS_OK);
    ck_assert_int_eq(node(TS_OP_SUB, NULL, "d", 2, (int[]){x, m}, &d), TS_OK);
    ck_assert_int_eq(node(TS_OP_POW, NULL, "p", 2, (int[]){d, two}, &p), TS_OK);
    ck_assert_int_eq(node(TS_OP_REDUCEMEAN, &r, "v", 1, &p, &v), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "ve", 2, (int[]){v, eps}, &ve), TS_OK);
    ck_assert_int_eq(node(TS_OP_SQRT, NULL, "s", 1, &ve, &s), TS_OK);
    ck_assert_int_eq(node(TS_OP_DIV, NULL, "nrm", 2, (int[]){d, s}, &nrm), TS_OK);
    ck_assert_int_eq(node(TS_OP_MUL, NULL, "sc", 2, (int[]){nrm, gam}, &sc), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "y", 2, (int[]){sc, bet}, &y), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_uint_eq(ts_graph_node_count(g), 1);
    const ts_graph_node *n = ts_graph_get_node(g, 0);
    ck_assert_int_eq(n->op, TS_OP_LAYERNORM);
    ck_assert_uint_eq(n->nin, 3);
    ck_assert_int_eq(n->attrs.axis, 2);
    ck_assert(fabs(n->attrs.epsilon - 1e-12) < 1e-18);
    ck_assert_str_eq(ts_graph_get_tensor(g, n->out[0])->name, "y");
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    ck_assert_uint_eq(t.params, 64);
}
END_TEST

START_TEST(layernorm_pattern_not_matched)
{
    /* Pow with exponent 3 is not a variance: nothing is rewritten */
    int x = in("x", 2, 4, 32);
    ts_graph_attrs r;
    ts_graph_attrs_init(&r);
    r.naxes = 1;
    r.axes[0] = -1;
    int m, d, p, v, ve, s, nrm;
    int three = scalar("three", 3), eps = scalar("eps", 1e-5f);
    ck_assert_int_eq(node(TS_OP_REDUCEMEAN, &r, "m", 1, &x, &m), TS_OK);
    ck_assert_int_eq(node(TS_OP_SUB, NULL, "d", 2, (int[]){x, m}, &d), TS_OK);
    ck_assert_int_eq(node(TS_OP_POW, NULL, "p", 2, (int[]){d, three}, &p), TS_OK);
    ck_assert_int_eq(node(TS_OP_REDUCEMEAN, &r, "v", 1, &p, &v), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "ve", 2, (int[]){v, eps}, &ve), TS_OK);
    ck_assert_int_eq(node(TS_OP_SQRT, NULL, "s", 1, &ve, &s), TS_OK);
    ck_assert_int_eq(node(TS_OP_DIV, NULL, "nrm", 2, (int[]){d, s}, &nrm), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_uint_eq(ts_graph_node_count(g), 7);
}
END_TEST

START_TEST(gelu_pattern)
{
    int x = in("x", 2, 4, 64);
    int rt2 = scalar("sqrt2", 1.4142135f), one = scalar("one", 1), half = scalar("half", 0.5f);
    int d, e, a, m, y;
    ck_assert_int_eq(node(TS_OP_DIV, NULL, "d", 2, (int[]){x, rt2}, &d), TS_OK);
    ck_assert_int_eq(node(TS_OP_ERF, NULL, "e", 1, &d, &e), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "a", 2, (int[]){e, one}, &a), TS_OK);
    ck_assert_int_eq(node(TS_OP_MUL, NULL, "m", 2, (int[]){x, a}, &m), TS_OK);
    ck_assert_int_eq(node(TS_OP_MUL, NULL, "y", 2, (int[]){m, half}, &y), TS_OK);
    int z;
    ck_assert_int_eq(node(TS_OP_RELU, NULL, "z", 1, &y, &z), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_uint_eq(ts_graph_node_count(g), 2);
    const ts_graph_node *n = ts_graph_get_node(g, 0);
    ck_assert_int_eq(n->op, TS_OP_GELU);
    ck_assert_str_eq(ts_graph_get_tensor(g, n->in[0])->name, "x");
    ck_assert_str_eq(ts_graph_get_tensor(g, n->out[0])->name, "y");
    ck_assert(!n->attrs.approximate_tanh);
    ck_assert_int_eq(ts_graph_get_node(g, 1)->op, TS_OP_RELU);
}
END_TEST

START_TEST(gelu_pattern_not_matched)
{
    /* the intermediate 'a' is also read elsewhere: the pattern must stay */
    int x = in("x", 2, 4, 64);
    int rt2 = scalar("sqrt2", 1.4142135f), one = scalar("one", 1), half = scalar("half", 0.5f);
    int d, e, a, m, y, w;
    ck_assert_int_eq(node(TS_OP_DIV, NULL, "d", 2, (int[]){x, rt2}, &d), TS_OK);
    ck_assert_int_eq(node(TS_OP_ERF, NULL, "e", 1, &d, &e), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "a", 2, (int[]){e, one}, &a), TS_OK);
    ck_assert_int_eq(node(TS_OP_MUL, NULL, "m", 2, (int[]){x, a}, &m), TS_OK);
    ck_assert_int_eq(node(TS_OP_MUL, NULL, "y", 2, (int[]){m, half}, &y), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "w", 2, (int[]){y, a}, &w), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_uint_eq(ts_graph_node_count(g), 6);
}
END_TEST

START_TEST(layout_folding)
{
    /* A Transpose of a weight with values: the output is a weight whose values are permuted, and
     * the parameters are counted once. */
    int x = in("x", 2, 4, 3);
    int w = tensor("w", TS_TENSOR_WEIGHT, 2, 2, 3);
    const float wv[6] = {1, 2, 3, 4, 5, 6};
    ck_assert_int_eq(ts_graph_set_data(g, w, wv, sizeof wv, &err), TS_OK);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.nperm = 2;
    a.perm[0] = 1;
    a.perm[1] = 0;
    int wt, y;
    ck_assert_int_eq(node(TS_OP_TRANSPOSE, &a, "wt", 1, &w, &wt), TS_OK);
    ck_assert_int_eq(node(TS_OP_MATMUL, NULL, "y", 2, (int[]){x, wt}, &y), TS_OK);
    /* a weight without values reshaped, then sliced with step 2 (a slice of a weight without
     * values would change the parameters: it stays) */
    int v = tensor("v", TS_TENSOR_WEIGHT, 1, 16), vr, vs, z;
    ts_graph_attrs r;
    ts_graph_attrs_init(&r);
    r.nshape = 2;
    r.shape[0] = 8;
    r.shape[1] = 2;
    ck_assert_int_eq(node(TS_OP_RESHAPE, &r, "vr", 1, &v, &vr), TS_OK);
    ts_graph_attrs sl;
    ts_graph_attrs_init(&sl);
    sl.nslice = 2;
    sl.starts[0] = 0, sl.ends[0] = 8, sl.steps[0] = 2;
    sl.starts[1] = 0, sl.ends[1] = 2, sl.steps[1] = 1;
    ck_assert_int_eq(node(TS_OP_SLICE, &sl, "vs", 1, &vr, &vs), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "z", 2, (int[]){y, vs}, &z), TS_OK);
    /* a Slice of a constant starting at -1 (which inference allows) reads outside it: not folded */
    int c = tensor("c", TS_TENSOR_CONST, 1, 2), cs, zc;
    ck_assert_int_eq(ts_graph_set_data(g, c, wv, 2 * sizeof *wv, &err), TS_OK);
    ts_graph_attrs cl;
    ts_graph_attrs_init(&cl);
    cl.nslice = 1;
    cl.starts[0] = -1, cl.ends[0] = 1, cl.steps[0] = 1;
    ck_assert_int_eq(node(TS_OP_SLICE, &cl, "cs", 1, &c, &cs), TS_OK);
    ck_assert_int_eq(node(TS_OP_ADD, NULL, "zc", 2, (int[]){z, cs}, &zc), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_uint_eq(ts_graph_node_count(g), 5); /* MatMul, Slice, Add, Slice of c, Add */
    const ts_graph_tensor *t = ts_graph_get_tensor(g, ts_graph_find(g, "wt"));
    ck_assert_int_eq(t->kind, TS_TENSOR_WEIGHT);
    ck_assert_str_eq(shape_of(ts_graph_find(g, "wt")), "[3,2]");
    const float want[6] = {1, 4, 2, 5, 3, 6};
    ck_assert_mem_eq(t->data, want, sizeof want);
    t = ts_graph_get_tensor(g, ts_graph_find(g, "vr"));
    ck_assert_int_eq(t->kind, TS_TENSOR_WEIGHT);
    ck_assert_ptr_null(t->data);
    ck_assert_int_eq(ts_graph_find(g, "w"), -1);
    ck_assert_int_eq(ts_graph_find(g, "v"), -1);
    ck_assert_int_eq(ts_graph_get_node(g, 1)->op, TS_OP_SLICE);
    ts_graph_totals tt;
    ts_graph_get_totals(g, &tt);
    ck_assert_uint_eq(tt.params, 6 + 16);
}
END_TEST

START_TEST(gather_and_expand_rewrites)
{
    /* Gather of a constant scalar index from an activation: Slice then Reshape; Expand to the
     * same shape: removed; Gather with indices without values: stays. */
    int x = in("x", 3, 2, 5, 4), r, e, gy, emb;
    ck_assert_int_eq(node(TS_OP_RELU, NULL, "r", 1, &x, &r), TS_OK);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.nshape = 3;
    a.shape[0] = 2, a.shape[1] = 1, a.shape[2] = 4;
    ck_assert_int_eq(node(TS_OP_EXPAND, &a, "e", 1, &r, &e), TS_OK);
    int64_t minus2 = -2;
    int ix;
    ck_assert_int_eq(ts_graph_add_tensor(g, "ix", TS_TENSOR_CONST, TS_DT_I64, 0, NULL, &ix, &err), TS_OK);
    ck_assert_int_eq(ts_graph_set_data(g, ix, &minus2, sizeof minus2, &err), TS_OK);
    ts_graph_attrs ga;
    ts_graph_attrs_init(&ga);
    ga.axis = 1;
    ck_assert_int_eq(node(TS_OP_GATHER, &ga, "gy", 2, (int[]){e, ix}, &gy), TS_OK);
    ck_assert_str_eq(shape_of(gy), "[2,4]");
    int table = tensor("table", TS_TENSOR_WEIGHT, 2, 10, 4), ids;
    ck_assert_int_eq(ts_graph_add_tensor(g, "ids", TS_TENSOR_INPUT, TS_DT_I64, 1, (int64_t[]){3}, &ids, &err), TS_OK);
    ck_assert_int_eq(node(TS_OP_GATHER, NULL, "emb", 2, (int[]){table, ids}, &emb), TS_OK);
    ck_assert_int_eq(ts_graph_finalize(g, &err), TS_OK);
    ck_assert_uint_eq(ts_graph_node_count(g), 4); /* Relu, Gather (embedding), Slice, Reshape */
    const ts_graph_node *n = ts_graph_get_node(g, 2);
    ck_assert_int_eq(ts_graph_get_node(g, 1)->op, TS_OP_GATHER);
    ck_assert_int_eq(n->op, TS_OP_SLICE);
    ck_assert_str_eq(ts_graph_get_tensor(g, n->in[0])->name, "r"); /* the Expand is gone */
    ck_assert(n->attrs.nslice == 3 && n->attrs.starts[1] == 3 && n->attrs.ends[1] == 4 && n->attrs.steps[1] == 1);
    ck_assert(n->attrs.starts[2] == 0 && n->attrs.ends[2] == 4);
    ck_assert_str_eq(shape_of(n->out[0]), "[2,1,4]");
    n = ts_graph_get_node(g, 3);
    ck_assert_int_eq(n->op, TS_OP_RESHAPE);
    ck_assert_str_eq(ts_graph_get_tensor(g, n->out[0])->name, "gy");
    ck_assert_str_eq(shape_of(n->out[0]), "[2,4]");
}
END_TEST

START_TEST(names_and_dtypes)
{
    ts_graph_op op;
    ck_assert_int_eq(ts_graph_op_parse("GlobalAveragePool", &op), 0);
    ck_assert_int_eq(op, TS_OP_GLOBALAVGPOOL);
    ck_assert_int_eq(ts_graph_op_parse("LRN", &op), -1);
    ck_assert_str_eq(ts_graph_op_name(TS_OP_LAYERNORM), "LayerNormalization");
    ts_dtype dt;
    ck_assert_int_eq(ts_dtype_parse("fp16", &dt), 0);
    ck_assert_int_eq(dt, TS_DT_F16);
    ck_assert_int_eq(ts_dtype_parse("bf16", &dt), 0);
    ck_assert_uint_eq(ts_dtype_size(dt), 2);
    ck_assert_int_eq(ts_dtype_parse("f7", &dt), -1);
    ck_assert_str_eq(ts_dtype_name(TS_DT_I64), "i64");
    ck_assert_str_eq(ts_tensor_kind_name(TS_TENSOR_WEIGHT), "weight");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("graph");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, conv_shapes);
    tcase_add_test(tc, pool_shapes);
    tcase_add_test(tc, matmul_gemm_shapes);
    tcase_add_test(tc, elementwise_shapes);
    tcase_add_test(tc, reduce_and_norm_shapes);
    tcase_add_test(tc, layout_shapes);
    tcase_add_test(tc, totals_and_dead_nodes);
    tcase_add_test(tc, topological_order_and_cycles);
    tcase_add_test(tc, batchnorm_folding);
    tcase_add_test(tc, batchnorm_folding_values);
    tcase_add_test(tc, layernorm_pattern);
    tcase_add_test(tc, layernorm_pattern_not_matched);
    tcase_add_test(tc, gelu_pattern);
    tcase_add_test(tc, gelu_pattern_not_matched);
    tcase_add_test(tc, names_and_dtypes);
    tcase_add_test(tc, layout_folding);
    tcase_add_test(tc, gather_and_expand_rewrites);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
