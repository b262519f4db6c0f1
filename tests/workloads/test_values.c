/* tests/workloads/test_values.c — whole-model outputs against references: the reduced models of
 * tests/data/models/ (ResNet-18 and MobileNetV2 at 32 x 32, a 2-layer BERT encoder with sequence
 * 16, the NeRF MLP with 64 rays: scripts/make_test_models.py --refs) compiled with their inputs
 * (NAME_in.npz) as `tessera run --inputs` compiles them, run on ipu_mk2, tsp_v1 and wse2 (a
 * corner of it but for MobileNetV2: wse_corner below), and
 * their outputs read back as `--outputs` reads them (docs/values.md).
 *
 * Tolerances, per number format:
 *   f32 (the IPU and the wafer compute these f32 models in f32): torch's output in f64
 *   (NAME_ref.npz, with the same weights: the values `tessera compile --weights-out` gives). The
 *   only difference is the order and precision of accumulation: each dot product of K terms
 *   carries a rounding error of about sqrt(K) x 2^-24 of its terms' magnitude (at most K x 2^-24),
 *   K <= 4,608 here, and a network of about 20 layers adds those errors up, so the largest error
 *   is held to 1e-4 of the output's largest magnitude: about 400 x 2^-24 x sqrt(4608) / 20 for
 *   the typical case, and a wrong element (an index, a missed term, a wrong fill) is wrong by
 *   about its own size, far above it. ResNet-18 meets it with 1.1e-6. A model whose output is
 *   itself sensitive to rounding (MobileNetV2: a BatchNorm of a channel with a small variance
 *   scales its input's rounding up) carries torch's own f32 output too (NAME@f32 in NAME_ref.npz):
 *   its error against f64 measures that sensitivity, and an f32 computation in another summation
 *   order lands within a few times it, so the bound is the larger of 1e-4 and 8 times torch's
 *   own f32 error (MobileNetV2: torch's f32 5.4e-5, the IPU 1.4e-4).
 *   f16 (none of these models is f16): the same, with the f16 rounding of every product and sum
 *   over K terms, K x 2^-11 relative.
 *   int8 (the TSP): its numbers are its own int8 domain (workloads/tsp/lower_tsp.h: int8 fill
 *   values, a fixed requantisation scale 1 / (8 sqrt(K)); given f32 values are not quantised), so
 *   torch's output does not apply; the reference is the same quantisation computed here in C
 *   from the finalized graph (ref_int8): int32 sums, the f32 scale, rounding to nearest even,
 *   saturation; BERT's operators as the chip computes them (f32 steps of the VXM one at a time,
 *   the planes' f16 sums exact and rounded once to f32: ref_bert). It must match bit for bit (the
 *   LayerNorm's and elementwise chains' distance from double precision is bounded and checked per
 *   operator in test_lower_tsp_ops).
 * Every model must pass on every family. The 2-layer BERT on wse2 (its attention one stage of the
 * layer pipeline, workloads/wse/lower_wse_attn.c) is held to the same f32 bound: its softmax's
 * exp polynomial (1e-9) and Newton reciprocal (a few ulp) are far below the sums' rounding; it
 * lands at 9.4e-6 of the output's largest magnitude on the 160 x 160 corner, 3.4e-6 on the whole
 * wafer (another placement, another order of the sums; torch's own f32: 1.6e-5). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/half.h"
#include "core/npy.h"
#include "core/sim.h"
#include "workloads/graph.h"
#include "workloads/lower/fill.h"
#include "workloads/lower/lower.h"
#include "workloads/tsp/lower_tsp.h"
#include "tests/slow.h"
#include "tests/workloads/graph_build.h"
#include "tests/workloads/tsp_ref.h"

static const char *const models[] = {"resnet18_32", "mobilenetv2_32", "bert2_s16", "nerf_mlp_64"};
static const char *const configs[] = {"ipu_mk2", "tsp_v1", "wse2"};
/* wse2 as a corner of its fabric (as other tests shrink a chip, with --set): the same PEs, SRAM
 * and fabric, so the same arithmetic is checked, on fewer PEs (the whole wafer spread the 2-layer
 * BERT's stages over its 750 columns). 160 x 160 for ResNet-18 and the BERT (80 x 80 and
 * 100 x 100 are too narrow for their weights); 48 x 48 for the NeRF MLP, whose Gemms the lowering
 * spreads over as many PEs as the mesh offers: 3.8 s of CPU there against 66 s on 160 x 160 (the
 * same stages, a Gemm on 5 x 11 PEs instead of 8 x 32: 170,000 cycles instead of 71,000, each
 * with fewer busy PEs; debugoptimized build). MobileNetV2 runs on the whole wafer: the Convs of
 * its last blocks need 6 columns of PEs more than 160 for their weights, and a corner that holds
 * them (200 x 200) cost as much as the whole wafer (29.6 s of CPU against 28.3 s). */
static const char *const wse_corner[] = {"mesh.width=160", "mesh.height=160"};
static const char *const wse_corner_nerf[] = {"mesh.width=48", "mesh.height=48"};
#define NMODELS (sizeof models / sizeof models[0])
#define NCONFIGS (sizeof configs / sizeof configs[0])

static const char *model_path(const char *name, const char *suffix)
{
    static char p[4][1024];
    static int k;
    k = (k + 1) % 4;
    const char *r = getenv("TS_SOURCE_ROOT");
    snprintf(p[k], sizeof p[k], "%s/tests/data/models/%s%s", r ? r : ".", name, suffix);
    return p[k];
}

/* ---- the TSP's int8 arithmetic in C (workloads/tsp/lower_tsp.h, tests/workloads/test_lower_tsp.c) ---- */

static int8_t requant(int32_t acc, float scale)
{
    float f = (float)acc * scale;
    double r = nearbyint((double)f);
    return (int8_t)(r < -128 ? -128 : r > 127 ? 127 : (int)r);
}

static int8_t sat(int v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v); }

static void conv(const ts_graph *g, const ts_graph_node *nd, int8_t **v)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[0]), *w = ts_graph_get_tensor(g, nd->in[1]),
                          *y = ts_graph_get_tensor(g, nd->out[0]);
    int C = (int)x->dims[1], H = (int)x->dims[2], W = (int)x->dims[3], M = (int)w->dims[0], kh = (int)w->dims[2],
        kw = (int)w->dims[3], Ho = (int)y->dims[2], Wo = (int)y->dims[3];
    const ts_graph_attrs *a = &nd->attrs;
    int bid = nd->nin > 2 ? nd->in[2] : -1;
    /* groups: output m reads the Cg input channels of its group (MobileNetV2's depthwise: Cg 1); the
     * planes see zeros between groups, and the scale is that of the Cg kh kw terms */
    int G = a->group > 1 ? (int)a->group : 1, Cg = C / G, Mg = M / G;
    float s = ts_lower_tsp_scale((uint64_t)Cg * kh * kw);
    int8_t *out = ts_calloc((size_t)M * Ho * Wo, 1), *in = v[nd->in[0]];
    for (int m = 0; m < M; m++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                int32_t acc = bid >= 0 ? ts_fill_bias(bid, (uint64_t)m) : 0;
                for (int c = 0; c < Cg; c++)
                    for (int ky = 0; ky < kh; ky++)
                        for (int kx = 0; kx < kw; kx++) {
                            int iy = oy * (int)a->strides[0] - (int)a->pads[0] + ky * (int)a->dilations[0],
                                ix = ox * (int)a->strides[1] - (int)a->pads[1] + kx * (int)a->dilations[1];
                            if (iy >= 0 && ix >= 0 && iy < H && ix < W)
                                acc += in[((size_t)(m / Mg * Cg + c) * H + iy) * W + ix] *
                                       ts_fill_i8(nd->in[1], (((uint64_t)m * Cg + c) * kh + ky) * kw + kx);
                        }
                out[((size_t)m * Ho + oy) * Wo + ox] = requant(acc, s);
            }
    v[nd->out[0]] = out;
}

static void gemm(const ts_graph *g, const ts_graph_node *nd, int8_t **v)
{
    const ts_graph_tensor *y = ts_graph_get_tensor(g, nd->out[0]), *x = ts_graph_get_tensor(g, nd->in[0]);
    int64_t N = y->dims[y->rank - 1], K = x->dims[x->rank - 1], Mr = ts_graph_tensor_elems(y) / N;
    bool tb = nd->op == TS_OP_GEMM && nd->attrs.trans_b;
    int wid = nd->in[1], tp = ts_graph_get_tensor(g, wid)->producer;
    if (tp >= 0 && ts_graph_get_node(g, tp)->op == TS_OP_TRANSPOSE) { /* a weight given with its Transpose */
        wid = ts_graph_get_node(g, tp)->in[0];
        tb = true;
    }
    int bid = nd->nin > 2 ? nd->in[2] : -1, fb = -1; /* fb: an Add's bias folded (ts_lower_tsp_bias_add) */
    if (nd->op == TS_OP_MATMUL && tp < 0 && ts_lower_tsp_bias_add(g, nd, &fb) < 0)
        fb = -1;
    float s = ts_lower_tsp_scale((uint64_t)K);
    int8_t *out = ts_calloc((size_t)(Mr * N), 1), *in = v[nd->in[0]];
    for (int64_t i = 0; i < Mr; i++)
        for (int64_t n = 0; n < N; n++) {
            int32_t acc = bid >= 0 ? ts_fill_bias(bid, (uint64_t)n) : 0;
            if (fb >= 0)
                acc = ts_lower_tsp_bias_int(ts_fill_value_f32(ts_graph_get_tensor(g, fb), fb, (uint64_t)n), s);
            for (int64_t k = 0; k < K; k++)
                acc += in[i * K + k] * ts_fill_i8(wid, (uint64_t)(tb ? n * K + k : k * N + n));
            out[i * N + n] = requant(acc, s);
        }
    v[nd->out[0]] = out;
}

static void maxpool(const ts_graph *g, const ts_graph_node *nd, int8_t **v)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[0]), *y = ts_graph_get_tensor(g, nd->out[0]);
    int C = (int)x->dims[1], H = (int)x->dims[2], W = (int)x->dims[3], Ho = (int)y->dims[2], Wo = (int)y->dims[3];
    const ts_graph_attrs *a = &nd->attrs;
    int8_t *out = ts_calloc((size_t)C * Ho * Wo, 1), *in = v[nd->in[0]];
    for (int c = 0; c < C; c++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                int m = -128;
                for (int ky = 0; ky < a->kernel[0]; ky++)
                    for (int kx = 0; kx < a->kernel[1]; kx++) {
                        int iy = oy * (int)a->strides[0] - (int)a->pads[0] + ky,
                            ix = ox * (int)a->strides[1] - (int)a->pads[1] + kx;
                        if (iy >= 0 && ix >= 0 && iy < H && ix < W && in[((size_t)c * H + iy) * W + ix] > m)
                            m = in[((size_t)c * H + iy) * W + ix];
                    }
                out[((size_t)c * Ho + oy) * Wo + ox] = (int8_t)m;
            }
    v[nd->out[0]] = out;
}

/* ---- BERT's operators on the TSP (workloads/tsp/: concat.c, products.c, ewise.c, softmax.c,
 * layernorm.c), each step as the chip does it: int8 moves exact, products requantised, the VXM's
 * chains one f32 operation at a time (-ffp-contract=off), f16 sums of the planes exact in double
 * and rounded once ---- */

/* Element k of a Transpose's or Slice's output: the input element it comes from. */
static int64_t src_elem(const ts_graph *g, const ts_graph_node *nd, int64_t k)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[0]), *y = ts_graph_get_tensor(g, nd->out[0]);
    int64_t oi[TS_GRAPH_MAX_RANK], ii[TS_GRAPH_MAX_RANK], e = 0;
    for (int a = y->rank - 1; a >= 0; a--) {
        oi[a] = k % y->dims[a];
        k /= y->dims[a];
    }
    for (int a = 0; a < x->rank; a++) {
        if (nd->op == TS_OP_TRANSPOSE)
            ii[nd->attrs.perm[a]] = oi[a];
        else
            ii[a] = (a < nd->attrs.nslice ? nd->attrs.starts[a] : 0) + oi[a] * (a < nd->attrs.nslice ? nd->attrs.steps[a] : 1);
    }
    for (int a = 0; a < x->rank; a++)
        e = e * x->dims[a] + ii[a];
    return e;
}

/* A [H, M, K] x B [H, K, N], both activations (H: the leading axes, gpt's [1, h, ..]). */
static void matmul_act(const ts_graph *g, const ts_graph_node *nd, int8_t **v)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[0]), *b = ts_graph_get_tensor(g, nd->in[1]);
    int r = x->rank;
    int64_t H = 1, M = x->dims[r - 2], K = x->dims[r - 1], N = b->dims[r - 1];
    for (int a = 0; a < r - 2; a++)
        H *= x->dims[a];
    int8_t *out = ts_calloc((size_t)(H * M * N), 1), *A = v[nd->in[0]], *B = v[nd->in[1]];
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t n = 0; n < N; n++) {
                int32_t acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += A[(h * M + i) * K + k] * B[(h * K + k) * N + n];
                out[(h * M + i) * N + n] = requant(acc, ts_lower_tsp_scale((uint64_t)K));
            }
    v[nd->out[0]] = out;
}

/* Add or Div of an activation and a constant (one value, one per channel, or a matrix over the last
 * two axes: gpt's causal mask, broadcast over the heads): u + 16 c, u (1 / c). */
static void ewise_const(const ts_graph *g, const ts_graph_node *nd, int8_t **v, int64_t n)
{
    bool a0 = v[nd->in[0]] != NULL;
    int cid = nd->in[a0 ? 1 : 0];
    const ts_graph_tensor *y = ts_graph_get_tensor(g, nd->out[0]), *c = ts_graph_get_tensor(g, cid);
    int64_t C = y->dims[y->rank - 1], nc = ts_graph_tensor_elems(c);
    int8_t *a = v[nd->in[a0 ? 0 : 1]], *out = ts_calloc((size_t)n, 1);
    for (int64_t k = 0; k < n; k++) {
        double cv = ts_fill_value_f32(c, cid, (uint64_t)(nc == 1 ? 0 : nc > C ? k % nc : k % C));
        float u = (float)a[k];
        out[k] = tsp_ref_cvt8(nd->op == TS_OP_ADD ? u + (float)(cv * 16.0) : u * (float)(1.0 / cv));
    }
    v[nd->out[0]] = out;
}

/* Gelu's tanh form in units of q (ewise.c plan_gelu). */
static int8_t gelu8(int8_t q)
{
    double c0 = sqrt(2.0 / 3.14159265358979323846);
    float u = (float)q, x = u * (float)(1.0 / 16.0), x2 = x * x;
    float in = x2 * (float)(0.044715 * c0) + (float)c0;
    float t = tanhf(in * x);
    return tsp_ref_cvt8((t * 0.5f + 0.5f) * u);
}

/* Softmax of rows of N int8 values read as q / 16, int8 out as 127 p (what a MatMul reads). */
static void softmax8(const int8_t *x, int64_t N, int8_t *y)
{
    double s = 0;
    for (int64_t l = 0; l < N; l++)
        s += (double)ts_f16_to_f32(ts_f32_to_f16(expf((float)x[l] * (1.0f / 16.0f))));
    float r = 1.0f / sqrtf((float)s), inv = r * r;
    for (int64_t l = 0; l < N; l++)
        y[l] = tsp_ref_cvt8(expf((float)x[l] * (1.0f / 16.0f)) * inv * 127.0f);
}

/* The row-wise operators: Softmax and LayerNorm over the last axis. */
static void rows8(const ts_graph *g, const ts_graph_node *nd, int8_t **v, int64_t n)
{
    const ts_graph_tensor *y = ts_graph_get_tensor(g, nd->out[0]);
    int64_t D = y->dims[y->rank - 1];
    int8_t *out = ts_calloc((size_t)n, 1);
    float *g16 = ts_calloc((size_t)D, sizeof *g16), *b16 = ts_calloc((size_t)D, sizeof *b16);
    for (int64_t c = 0; c < D && nd->op == TS_OP_LAYERNORM; c++) {
        const ts_graph_tensor *gt = nd->nin > 1 ? ts_graph_get_tensor(g, nd->in[1]) : NULL;
        const ts_graph_tensor *bt = nd->nin > 2 ? ts_graph_get_tensor(g, nd->in[2]) : NULL;
        g16[c] = (float)(16.0 * (gt ? ts_fill_value_f32(gt, nd->in[1], (uint64_t)c) : 1.0));
        b16[c] = (float)(16.0 * (bt ? ts_fill_value_f32(bt, nd->in[2], (uint64_t)c) : 0.0));
    }
    for (int64_t m = 0; m < n / D; m++) {
        if (nd->op == TS_OP_SOFTMAX)
            softmax8(v[nd->in[0]] + m * D, D, out + m * D);
        else
            tsp_ref_layernorm(v[nd->in[0]] + m * D, D, g16, b16, (float)(nd->attrs.epsilon * 256.0), out + m * D);
    }
    ts_free(g16);
    ts_free(b16);
    v[nd->out[0]] = out;
}

/* Concat: element k of the output from the input that holds it (an activation's int8 values, or a
 * weight's fill values: gpt decode's KV cache). */
static void concat8(const ts_graph *g, const ts_graph_node *nd, int8_t **v, int64_t n)
{
    const ts_graph_tensor *y = ts_graph_get_tensor(g, nd->out[0]);
    int ax = (int)(nd->attrs.axis < 0 ? nd->attrs.axis + y->rank : nd->attrs.axis);
    int64_t inner = 1;
    for (int a = ax + 1; a < y->rank; a++)
        inner *= y->dims[a];
    v[nd->out[0]] = ts_calloc((size_t)n, 1);
    for (int64_t k = 0; k < n; k++) {
        int64_t outer = k / (inner * y->dims[ax]), pos = k / inner % y->dims[ax], off = 0;
        for (size_t i = 0; i < nd->nin; i++) {
            const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[i]);
            int64_t len = x->dims[ax];
            if (pos < off + len) {
                int64_t e = (outer * len + pos - off) * inner + k % inner;
                v[nd->out[0]][k] = v[nd->in[i]] ? v[nd->in[i]][e] : ts_fill_value_i8(x, nd->in[i], (uint64_t)e);
                break;
            }
            off += len;
        }
    }
}

/* The operators ref_int8 takes beyond ResNet's; false for another. */
static bool ref_bert(const ts_graph *g, const ts_graph_node *nd, int8_t **v, int64_t n)
{
    switch (nd->op) {
    case TS_OP_TRANSPOSE:
    case TS_OP_SLICE:
        if (!v[nd->in[0]]) /* a weight's Transpose: the MatMul reads the weight (gemm) */
            return true;
        v[nd->out[0]] = ts_calloc((size_t)n, 1);
        for (int64_t k = 0; k < n; k++)
            v[nd->out[0]][k] = v[nd->in[0]][src_elem(g, nd, k)];
        return true;
    case TS_OP_MATMUL: matmul_act(g, nd, v); return true;
    case TS_OP_CONCAT: concat8(g, nd, v, n); return true;
    case TS_OP_DIV:
    case TS_OP_ADD: ewise_const(g, nd, v, n); return true;
    case TS_OP_GELU:
        v[nd->out[0]] = ts_calloc((size_t)n, 1);
        for (int64_t k = 0; k < n; k++)
            v[nd->out[0]][k] = gelu8(v[nd->in[0]][k]);
        return true;
    case TS_OP_SOFTMAX:
    case TS_OP_LAYERNORM: rows8(g, nd, v, n); return true;
    default: return false;
    }
}

/* Whether Add nd is the bias a MatMul by a weight before it folds (ts_lower_tsp_bias_add). */
static bool folded_bias(const ts_graph *g, const ts_graph_node *nd, int ni)
{
    int b;
    for (size_t i = 0; i < nd->nin; i++) {
        int pr = ts_graph_get_tensor(g, nd->in[i])->producer;
        if (pr >= 0 && ts_lower_tsp_bias_add(g, ts_graph_get_node(g, pr), &b) == ni)
            return true;
    }
    return false;
}

/* Every node of g in order, on int8 values (v[tensor], owned): the operators of ResNet-18,
 * MobileNetV2 (grouped Convs, Clip as ReLU6), the NeRF MLP (Gemm, Concat) and BERT; false for an
 * op it does not know. */
static bool ref_int8(const ts_graph *g, int8_t **v)
{
    for (size_t t = 0; t < ts_graph_tensor_count(g); t++) {
        const ts_graph_tensor *T = ts_graph_get_tensor(g, (int)t);
        if (T->kind != TS_TENSOR_INPUT)
            continue;
        int64_t n = ts_graph_tensor_elems(T);
        v[t] = ts_calloc((size_t)n, 1);
        for (int64_t i = 0; i < n; i++)
            v[t][i] = ts_fill_value_i8(T, (int)t, (uint64_t)i);
    }
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
        int64_t n = ts_graph_tensor_elems(ts_graph_get_tensor(g, nd->out[0]));
        int8_t *a = v[nd->in[0]];
        switch (nd->op) {
        case TS_OP_CONV: conv(g, nd, v); break;
        case TS_OP_GEMM: case TS_OP_MATMUL:
            if (v[nd->in[1]] && !ref_bert(g, nd, v, n))
                return false;
            if (!v[nd->in[1]])
                gemm(g, nd, v);
            break;
        case TS_OP_MAXPOOL: maxpool(g, nd, v); break;
        case TS_OP_RELU:
        case TS_OP_FLATTEN:
        case TS_OP_RESHAPE:
            v[nd->out[0]] = ts_calloc((size_t)n, 1);
            for (int64_t k = 0; k < n; k++)
                v[nd->out[0]][k] = nd->op == TS_OP_RELU && a[k] < 0 ? 0 : a[k];
            break;
        case TS_OP_ADD:
            if (folded_bias(g, nd, (int)i)) { /* its bias was added to the MatMul's sums (gemm) */
                v[nd->out[0]] = ts_calloc((size_t)n, 1);
                memcpy(v[nd->out[0]], v[nd->in[0]] ? v[nd->in[0]] : v[nd->in[1]], (size_t)n);
                break;
            }
            if (!v[nd->in[0]] || !v[nd->in[1]]) {
                ewise_const(g, nd, v, n);
                break;
            }
            v[nd->out[0]] = ts_calloc((size_t)n, 1);
            for (int64_t k = 0; k < n; k++)
                v[nd->out[0]][k] = sat(a[k] + v[nd->in[1]][k]);
            break;
        case TS_OP_CLIP: { /* on the int8 q standing for q / 16: clamped to the bounds times 16, rounded */
            double lo = rint(nd->attrs.min * 16.0), hi = rint(nd->attrs.max * 16.0);
            v[nd->out[0]] = ts_calloc((size_t)n, 1);
            for (int64_t k = 0; k < n; k++)
                v[nd->out[0]][k] = (int8_t)fmin(fmax((double)a[k], fmax(lo, -128.0)), fmin(hi, 127.0));
            break;
        }
        case TS_OP_GLOBALAVGPOOL: {
            const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[0]);
            int64_t P = x->dims[2] * x->dims[3];
            v[nd->out[0]] = ts_calloc((size_t)n, 1);
            for (int64_t c = 0; c < n; c++) {
                int32_t sum = 0;
                for (int64_t p = 0; p < P; p++)
                    sum += a[c * P + p];
                v[nd->out[0]][c] = requant(sum, 1.0f / (float)P);
            }
            break;
        }
        default:
            if (!ref_bert(g, nd, v, n))
                return false;
        }
    }
    return true;
}

/* ---- the test ---- */

static ts_status read_back(void *ud, const struct ts_family *fam, ts_model *m, ts_err *err)
{
    return ts_lowered_read_outputs(ud, fam, m, err);
}

/* The int8 reference of the TSP's output: 0 mismatches expected. */
static int check_tsp(const ts_lowered *l, const ts_npy_array *out, const char *what, bool must)
{
    const ts_graph *g = ts_lowered_graph(l);
    int8_t **v = ts_calloc(ts_graph_tensor_count(g), sizeof *v);
    if (!ref_int8(g, v) && !must) {
        /* The TSP's elementwise chains (Clip, Concat through 0/1 blocks, ...) are checked one by one
         * in test_lower_tsp_ops; this whole-model reference models the zoo's reduced models'. */
        printf("skipped %s: the int8 reference lacks one of its operators\n", what);
        for (size_t t = 0; t < ts_graph_tensor_count(g); t++)
            ts_free(v[t]);
        ts_free(v);
        return 0;
    }
    ck_assert_msg(v[ts_graph_find(g, out->name)] != NULL, "%s: the int8 reference lacks one of the graph's operators",
                  what);
    int id = ts_graph_find(g, out->name), bad = 0;
    uint64_t nonzero = 0, n = ts_npy_elems(out);
    const float *got = out->data;
    for (uint64_t k = 0; k < n; k++) {
        nonzero += v[id][k] != 0;
        if (got[k] != (float)v[id][k] && bad++ < 5)
            fprintf(stderr, "%s: %s[%llu] = %g, want %d\n", what, out->name, (unsigned long long)k, (double)got[k],
                    v[id][k]);
    }
    /* a reference of zeros would prove little: ResNet-18's logits are 84% nonzero */
    ck_assert_msg(nonzero * 2 > n, "%s: only %llu of %llu reference values are not 0", what,
                  (unsigned long long)nonzero, (unsigned long long)n);
    fprintf(stderr, "%s: %llu int8 values equal the reference's, %llu of them not 0\n", what, (unsigned long long)n,
            (unsigned long long)nonzero);
    for (size_t t = 0; t < ts_graph_tensor_count(g); t++)
        ts_free(v[t]);
    ts_free(v);
    return bad;
}

/* The largest difference of a from b (same size) over b's largest magnitude. */
static double rel_err(const ts_npy_array *a, const ts_npy_array *b)
{
    ck_assert_uint_eq(ts_npy_elems(a), ts_npy_elems(b));
    double worst = 0, scale = 0;
    for (uint64_t k = 0; k < ts_npy_elems(b); k++) {
        scale = fmax(scale, fabs(ts_npy_get(b, k)));
        worst = fmax(worst, fabs(ts_npy_get(a, k) - ts_npy_get(b, k)));
    }
    return scale > 0 ? worst / scale : worst;
}

/* Normwise against torch's f64 output. */
static double check_f32(const ts_npy_array *out, const ts_npy_array *ref, const char *what)
{
    ck_assert_uint_eq(ts_npy_elems(out), ts_npy_elems(ref));
    double worst = 0, scale = 0;
    const float *got = out->data;
    for (uint64_t k = 0; k < ts_npy_elems(ref); k++)
        scale = fmax(scale, fabs(ts_npy_get(ref, k)));
    for (uint64_t k = 0; k < ts_npy_elems(ref); k++) {
        double d = fabs((double)got[k] - ts_npy_get(ref, k));
        ck_assert_msg(isfinite(got[k]), "%s: %s[%llu] is %g", what, out->name, (unsigned long long)k, (double)got[k]);
        worst = fmax(worst, d);
    }
    fprintf(stderr, "%s: largest error %.3g of the output's largest magnitude %.4g\n", what, worst / scale, scale);
    return worst / scale;
}

/* Run the lowered model l on cfg (its program taken into *prog, the results into *res, owned by
 * the caller); its one output read back. */
static const ts_npy_array *run_lowered(ts_lowered *l, const ts_family *fam, const ts_config *cfg, const char *what,
                                       ts_program **prog, ts_results *res)
{
    ts_err e;
    ts_err_init(&e);
    *prog = ts_lowered_take_program(l);
    ts_run_opts ro = {.max_cycles = TS_SIM_DEFAULT_MAX_CYCLES, .finished = read_back, .finished_ud = l};
    ck_assert_msg(ts_lowered_prepare(l, &ro, &e) == TS_OK, "%s", e.msg);
    ck_assert_msg(ts_sim_run(fam, cfg, *prog, &ro, NULL, res, &e) == TS_OK, "%s: %s", what, e.msg);
    const ts_npz *out = ts_lowered_outputs(l);
    ck_assert_uint_eq(out->n, 1);
    ts_err_free(&e);
    return &out->v[0];
}

/* Run the lowered model l on the TSP config cfg and check its output bit for bit against the
 * int8 C reference (check_tsp). */
static void run_check_tsp(ts_lowered *l, const ts_family *fam, const ts_config *cfg, const char *what)
{
    ts_program *prog;
    ts_results res;
    ck_assert_int_eq(check_tsp(l, run_lowered(l, fam, cfg, what, &prog, &res), what, true), 0);
    ts_results_free(&res);
    ts_program_destroy(prog);
}

START_TEST(test_values)
{
    const char *model = models[_i / NCONFIGS], *config = configs[_i % NCONFIGS];
    char what[128];
    snprintf(what, sizeof what, "%s on %s", model, config);
    /* Under a sanitizer (scripts/test.sh sets TS_SANITIZED) ResNet-18 runs on the IPU and the TSP
     * and the 2-layer BERT on the TSP (its attention), nothing else: the wafer's runs take 60 to
     * 80 s there (PE-cycles simulated one by one, each 5 to 10 times slower) and the suite's time
     * is bounded; their values are checked by the normal build, and their operators' lowerings
     * run under the sanitizer in test_lower_*_ops (the wafer's with values). */
    bool sanitized_set = !strcmp(config, "wse2") ? false
                         : !strcmp(model, "resnet18_32") || (!strcmp(model, "bert2_s16") && !strcmp(config, "tsp_v1"));
    if (getenv("TS_SANITIZED") && !sanitized_set) {
        printf("skipped %s under a sanitizer: the normal build checks its values\n", what);
        return;
    }
    ts_err e;
    ts_err_init(&e);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    if (!strcmp(config, "wse2") && !strcmp(model, "nerf_mlp_64")) {
        co.sets = wse_corner_nerf;
        co.nsets = sizeof wse_corner_nerf / sizeof wse_corner_nerf[0];
    } else if (!strcmp(config, "wse2") && strcmp(model, "mobilenetv2_32")) {
        co.sets = wse_corner;
        co.nsets = sizeof wse_corner / sizeof wse_corner[0];
    }
    ck_assert_msg(ts_config_load(&cfg, config, &co, &e) == TS_OK, "config %s: %s", config, e.msg);
    const ts_family *fam = ts_family_find(ts_config_arch(cfg));
    ts_npz in = {0}, ref = {0};
    ck_assert_msg(ts_npz_read(model_path(model, "_in.npz"), &in, &e) == TS_OK, "%s", e.msg);
    ck_assert_msg(ts_npz_read(model_path(model, "_ref.npz"), &ref, &e) == TS_OK, "%s", e.msg);
    ts_lower_values vals = {&in, model_path(model, "_in.npz"), true};
    ts_lowered *l = NULL;
    ts_status rc = ts_lower_model_values(model_path(model, ".onnx"), cfg, NULL, &vals, &l, &e);
    {
        ck_assert_msg(rc == TS_OK, "%s: %s", what, e.msg);
        ts_program *prog;
        ts_results res;
        const ts_npy_array *o = run_lowered(l, fam, cfg, what, &prog, &res);
        if (!strcmp(config, "tsp_v1")) {
            ck_assert_int_eq(check_tsp(l, o, what, true), 0);
        } else {
            const ts_npy_array *r = ts_npz_find(&ref, o->name);
            ck_assert_msg(r != NULL, "%s: the reference has no output '%s'", what, o->name);
            double bound = 1e-4;
            char f32name[160];
            snprintf(f32name, sizeof f32name, "%s@f32", o->name);
            const ts_npy_array *r32 = ts_npz_find(&ref, f32name);
            if (r32)
                bound = fmax(bound, 8 * rel_err(r32, r));
            ck_assert_msg(check_f32(o, r, what) <= bound, "%s: outputs differ from torch's by more than %.3g",
                          what, bound);
        }
        ts_results_free(&res);
        ts_program_destroy(prog);
    }
    ts_lowered_destroy(l);
    ts_npz_free(&in);
    ts_npz_free(&ref);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* The built-in decoder `gpt` (GPT-2's form: LayerNorm, tanh Gelu, biases; docs/llm.md), 2 layers,
 * decode against its KV cache and prefill under the causal mask, on tsp_v1: hazard-free (the run
 * stops on one) and its logits bit for bit the int8 reference's. Its attention is rank 4 with a
 * batch of 1, lowered as rank 3 (workloads/tsp/squeeze.c). The third case decodes on a tsp_v1 of
 * 200 words a MEM slice, where the layout as always finds no room for layer 1's bias constants
 * (`Add 'layers.1.o.bias': no room for the constants`): it fits in the compact layout
 * (docs/lowering-tsp.md, *Placement*), whose constants lie in a quarter of the east slices each,
 * with the same logits. The fourth decodes on a tsp_v1 of 128 words a MEM slice, where the
 * instruction text of every mode does not fit: it compiles LEAN, as GPT-2 small's decode does on
 * the whole tsp_v1 (docs/lowering-tsp.md, *Decoders*), with the same logits; its weight rows lie in
 * runs (products.c, wrow_at), the last products' in the east MEM, as GPT-2 small's LM head's do. */
START_TEST(test_gpt_tsp)
{
    static const char *const phases[] = {"decode", "prefill", "decode", "decode"};
    static const char *const small[] = {"mem.slice_bytes=64000"}, *const lean[] = {"mem.slice_bytes=40960"};
    char spec[160], what[200];
    /* Under a sanitizer the LEAN case is left to the normal build: LEAN's code runs there in
     * test_bert_lean. */
    if (_i == 3 && getenv("TS_SANITIZED")) {
        printf("skipped the LEAN decode under a sanitizer: test_bert_lean runs LEAN there\n");
        return;
    }
    snprintf(spec, sizeof spec, "gpt:layers=2,hidden=64,heads=2,ffn=128,vocab=100,seq=16,phase=%s", phases[_i]);
    snprintf(what, sizeof what, "%s on tsp_v1%s", spec,
             _i == 2 ? " with 200 words a MEM slice" : _i == 3 ? " with 128 words a MEM slice" : "");
    ts_err e;
    ts_err_init(&e);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find,
                         .sets = _i == 2 ? small : _i == 3 ? lean : NULL, .nsets = _i >= 2 ? 1 : 0};
    ck_assert_msg(ts_config_load(&cfg, "tsp_v1", &co, &e) == TS_OK, "%s", e.msg);
    const ts_family *fam = ts_family_find(ts_config_arch(cfg));
    ts_lowered *l = NULL;
    ck_assert_msg(ts_lower_model(spec, cfg, NULL, &l, &e) == TS_OK, "%s: %s", what, e.msg);
    run_check_tsp(l, fam, cfg, what);
    ts_lowered_destroy(l);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* GPT-2 small itself (`gpt2-small`, docs/llm.md) on the whole tsp_v1, decode against its cache and
 * prefill of 128 tokens: hazard-free and its 50,257 int8 logits bit for bit the int8 reference's.
 * Both compile only under *LEAN* (docs/lowering-tsp.md, *Decoders*), the decode's LM head rows on
 * both east halves in the compact layout: the reduced forms above reach those paths, but only the
 * whole model shows the text and the rows still fit the chip. Slow (about 7 and 25 s of CPU, and
 * the references' 0.1 and 16 G int8 MACs): in the suite "slow" (main). */
START_TEST(test_gpt2_small_tsp)
{
    static const char *const specs[] = {"gpt2-small:phase=decode", "gpt2-small:phase=prefill,seq=128"};
    char what[200];
    snprintf(what, sizeof what, "%s on tsp_v1", specs[_i]);
    ts_err e;
    ts_err_init(&e);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ck_assert_msg(ts_config_load(&cfg, "tsp_v1", &co, &e) == TS_OK, "%s", e.msg);
    const ts_family *fam = ts_family_find(ts_config_arch(cfg));
    ts_lowered *l = NULL;
    ck_assert_msg(ts_lower_model(specs[_i], cfg, NULL, &l, &e) == TS_OK, "%s: %s", what, e.msg);
    run_check_tsp(l, fam, cfg, what);
    ts_lowered_destroy(l);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* LEAN (docs/lowering-tsp.md, *The text does not fit*): the 2-layer BERT on a tsp_v1 of 500 words
 * a MEM slice, where the instruction text of every mode runs out of words free of data, compiles
 * on the last try, whose products keep their scales and biases and whose f32 chains (Gelu, Div)
 * their constants in VXM latches instead of reading them from the east MEM for every vector, its
 * text partly below the data (words first written soon taken first, LEAN_SOON); it runs hazard-free
 * (the run stops on one) and its outputs are bit for bit the int8 reference's. (At 680 words a
 * slice it now fits without LEAN; at 520, as before, no text read met a word written soon.) */
START_TEST(test_bert_lean)
{
    static const char *const small[] = {"mem.slice_bytes=320000"};
    const char *what = "bert2_s16 on tsp_v1 with 500 words a MEM slice";
    ts_err e;
    ts_err_init(&e);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find, .sets = small, .nsets = 1};
    ck_assert_msg(ts_config_load(&cfg, "tsp_v1", &co, &e) == TS_OK, "%s", e.msg);
    const ts_family *fam = ts_family_find(ts_config_arch(cfg));
    ts_npz in = {0};
    ck_assert_msg(ts_npz_read(model_path("bert2_s16", "_in.npz"), &in, &e) == TS_OK, "%s", e.msg);
    ts_lower_values vals = {&in, model_path("bert2_s16", "_in.npz"), true};
    ts_lowered *l = NULL;
    ck_assert_msg(ts_lower_model_values(model_path("bert2_s16", ".onnx"), cfg, NULL, &vals, &l, &e) == TS_OK, "%s: %s",
                  what, e.msg);
    run_check_tsp(l, fam, cfg, what);
    ts_lowered_destroy(l);
    ts_npz_free(&in);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* The BatchNormalization fold is exact when some of its operands carry values: the others take
 * their fill values (by their ids before finalize), so W' = W s and b' = (b - mean) s + shift with
 * s = scale / sqrt(var + eps), here with only the variance and the weight given. */
START_TEST(test_fold_partial)
{
    ts_graph *g = ts_graph_create("fold");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 2, 3, 3});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){4, 2, 1, 1});
    int p[4];
    const char *pn[4] = {"scale", "shift", "mean", "var"};
    for (int i = 0; i < 4; i++)
        p[i] = tensor(g, pn[i], TS_TENSOR_WEIGHT, 1, (int64_t[]){4});
    int c = tensor(g, "c", TS_TENSOR_ACTIVATION, -1, NULL), y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, w);
    float var[4] = {0.5f, 1.0f, 2.0f, 4.0f};
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, p[3], var, sizeof var, &e), TS_OK);
    node(g, TS_OP_CONV, "conv", (int[]){x, w}, 2, c, NULL);
    node(g, TS_OP_BATCHNORM, "bn", (int[]){c, p[0], p[1], p[2], p[3]}, 5, y, NULL);
    ts_graph_mark_output(g, y);
    float want_w[8], want_b[4];
    for (int m = 0; m < 4; m++) {
        double sc = ts_fill_f32(p[0], (uint64_t)m) / sqrt((double)var[m] + 1e-5);
        for (int k = 0; k < 2; k++)
            want_w[m * 2 + k] = (float)(val(w, m * 2 + k) * sc);
        want_b[m] = (float)((0.0 - ts_fill_f32(p[2], (uint64_t)m)) * sc + ts_fill_f32(p[1], (uint64_t)m));
    }
    finalize(g);
    ck_assert_uint_eq(ts_graph_node_count(g), 1);
    const ts_graph_node *nd = ts_graph_get_node(g, 0);
    ck_assert_uint_eq(nd->nin, 3);
    const float *gw = ts_graph_get_tensor(g, nd->in[1])->data, *gb = ts_graph_get_tensor(g, nd->in[2])->data;
    ck_assert_ptr_nonnull(gw);
    ck_assert_ptr_nonnull(gb);
    for (int k = 0; k < 8; k++)
        ck_assert_float_eq(gw[k], want_w[k]);
    for (int m = 0; m < 4; m++)
        ck_assert_float_eq(gb[m], want_b[m]);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

/* The tests; with `slow`, only GPT-2 small on tsp_v1 instead (the suite "slow": it runs with
 * TS_SLOW_TESTS=1 and is skipped with 77 otherwise, saying so). */
int main(int argc, char **argv)
{
    bool slow = argc > 1 && !strcmp(argv[1], "slow");
    if (slow && slow_skipped("test_values slow: GPT-2 small on tsp_v1"))
        return 77;
    Suite *s = suite_create("values");
    if (slow) {
        TCase *big = tcase_create("gpt2_small");
        tcase_set_timeout(big, 600);
        tcase_add_loop_test(big, test_gpt2_small_tsp, 0, 2);
        suite_add_tcase(s, big);
    } else {
        TCase *tc = tcase_create("values");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_fold_partial);
        tcase_add_loop_test(tc, test_values, 0, (int)(NMODELS * NCONFIGS));
        suite_add_tcase(s, tc);
        TCase *gpt = tcase_create("gpt"); /* alone: CK_RUN_CASE=gpt */
        tcase_set_timeout(gpt, 120);
        tcase_add_loop_test(gpt, test_gpt_tsp, 0, 4);
        suite_add_tcase(s, gpt);
        TCase *lean = tcase_create("lean"); /* alone: CK_RUN_CASE=lean */
        tcase_set_timeout(lean, 300);
        tcase_add_test(lean, test_bert_lean);
        suite_add_tcase(s, lean);
    }
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
