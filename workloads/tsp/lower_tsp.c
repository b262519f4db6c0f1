/* workloads/tsp/lower_tsp.c — graph to one static TSP schedule: the driver (see lower_tsp.h,
 * docs/lowering-tsp.md, and lower_tsp_int.h for the rooms).
 *
 * The passes of one compilation: check that the target is one the lowering can use; set up the
 * scheduler's state from it; lower the graph's operators in order, each placing its output in MEM
 * and its instruction groups on exact cycles (products.c, vxm_ops.c, softmax.c); place the
 * instruction fetches of queues longer than the queue capacity (ifetch.c); emit every queue in
 * issue order, gaps filled with nop; fill the report.
 */
#include "workloads/tsp/lower_tsp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/lower/unsupported.h"
#include "workloads/tsp/lower_tsp_int.h"
#include "workloads/tsp/unbatch.h"

/* ---- layers ---- */

static ts_lower_tsp_layer *layer(lt *L, int node)
{
    if (ts_grow((void **)&L->layers, &L->caplayers, L->nlayers + 1, sizeof *L->layers)) {
        L->oom = true;
        return NULL;
    }
    ts_lower_tsp_layer *y = &L->layers[L->nlayers++];
    memset(y, 0, sizeof *y);
    y->node = node;
    y->first = UINT64_MAX;
    return y;
}

/* Widen a layer's cycle span to include a .. b. */
void lt_span(ts_lower_tsp_layer *y, uint64_t a, uint64_t b)
{
    if (a < y->first)
        y->first = a;
    if (b > y->last)
        y->last = b;
}

/* The consumer of a node's output when it is a lone Relu that can be fused, else -1. (The wafer-mesh
 * lowering decides on its chain of stages instead: a Relu after a stage that does not fork.) */
int lt_fused_relu(const lt *L, int out)
{
    size_t n;
    const int *c = ts_graph_consumers(L->g, out, &n);
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, out);
    if (n != 1 || t->is_output)
        return -1;
    const ts_graph_node *r = ts_graph_get_node(L->g, c[0]);
    return r->op == TS_OP_RELU ? c[0] : -1;
}

/* ---- the graph ---- */

/* Whether tensor id's pixels x channels hold its elements in row-major order (not an image of
 * more than one pixel). */
static bool same_layout(const lt *L, int id)
{
    int r;
    const int64_t *d = lt_dims(L, id, &r);
    return r != 4 || d[2] * d[3] == 1;
}

/* Whether a Reshape flattens an NCHW image's pixels, [N, C, H, W] to [N, C, H W], for a Transpose
 * (0, 2, 1) alone (ViT's patches): the pair is [N, H W, C], the image's own layout, so both are
 * renames. */
static bool img_flat(const ts_graph *g, const ts_graph_node *rs)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, rs->in[0]), *y = ts_graph_get_tensor(g, rs->out[0]);
    if (rs->op != TS_OP_RESHAPE || x->rank != 4 || y->rank != 3 || y->is_output || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1] || y->dims[2] != x->dims[2] * x->dims[3])
        return false;
    size_t n;
    const int *c = ts_graph_consumers(g, rs->out[0], &n);
    for (size_t i = 0; i < n; i++) {
        const ts_graph_node *tr = ts_graph_get_node(g, c[i]);
        if (tr->op != TS_OP_TRANSPOSE || tr->attrs.nperm != 3 || tr->attrs.perm[0] != 0 || tr->attrs.perm[1] != 2 ||
            tr->attrs.perm[2] != 1)
            return false;
    }
    return n > 0;
}

/* The Transpose of an img_flat Reshape's output. */
static bool img_unflat(const ts_graph *g, const ts_graph_node *tr)
{
    int p = ts_graph_get_tensor(g, tr->in[0])->producer;
    return tr->op == TS_OP_TRANSPOSE && p >= 0 && img_flat(g, ts_graph_get_node(g, p));
}

/* Flatten or Reshape that keeps the layout (pixels x channels, channels last: one-pixel images,
 * or matrices with the same last dimension): the output is another name for the input's region. */
static ts_status lower_rename(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    int out = nd->out[0];
    tens *x = &L->t[nd->in[0]], *y = &L->t[out];
    uint32_t Pp, C;
    ts_status rc = lt_shape_pc(L, nd, out, &Pp, &C);
    if (rc != TS_OK)
        return rc;
    bool flat = img_flat(L->g, nd) || img_unflat(L->g, nd); /* the pair keeps the image's layout */
    if (!x->placed || (!flat && (Pp != x->P || C != x->C || !same_layout(L, nd->in[0]) || !same_layout(L, out))))
        return ts_lower_fail(L->err, nd, "the TSP lowering only renames one-pixel tensors (no data movement)");
    *y = *x;
    y->users = 0;
    y->output = ts_graph_get_tensor(L->g, out)->is_output;
    /* the alias keeps the region: the source is never released */
    x->output = true;
    y->owner = x->owner;
    ly->first = ly->last = 0;
    return TS_OK;
}

/* Whether a Transpose keeps the channel axis (axis 1 of a rank-4 tensor, else the last) in place. */
static bool keeps_channels(const ts_graph *g, const ts_graph_node *nd)
{
    int r = ts_graph_get_tensor(g, nd->in[0])->rank, cax = r == 4 ? 1 : r - 1;
    if (r < 1)
        return false;
    int64_t p = nd->attrs.nperm ? nd->attrs.perm[cax] : r - 1 - cax;
    return p == cax;
}

/* Whether a Transpose leaves every element where it was: its axes longer than 1 keep their order
 * (BERT's [1, S, D] to [S, 1, D]); then it is a rename. */
static bool keeps_order(const ts_graph *g, const ts_graph_node *nd)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[0]);
    int64_t last = -1;
    if (nd->attrs.nperm != x->rank || x->rank == 4)
        return false;
    for (int k = 0; k < x->rank; k++) {
        int64_t a = nd->attrs.perm[k];
        if (a < 0 || a >= x->rank || x->dims[a] == 1)
            continue;
        if (a < last)
            return false;
        last = a;
    }
    return true;
}

/* Whether tensor id is read by MatMuls alone, each as its second input only. */
static bool only_b_of_matmuls(const ts_graph *g, int id)
{
    size_t n;
    const int *c = ts_graph_consumers(g, id, &n);
    for (size_t i = 0; i < n; i++) {
        const ts_graph_node *mm = ts_graph_get_node(g, c[i]);
        if (mm->op != TS_OP_MATMUL || mm->nin != 2 || mm->in[1] != id || mm->in[0] == id)
            return false;
    }
    return n > 0;
}

/* Whether every consumer of a Transpose is a MatMul taking it as its second input, with the
 * Transpose's input's channel axis (its last) as the MatMul's reduction axis (Kᵀ in attention),
 * and that input left with zeros past its channels by its producer: then the MatMul reads the
 * input's vectors as its blocks' rows and the Transpose is never computed (products.c). */
static bool kt_folds(const ts_graph *g, const ts_graph_node *tr)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, tr->in[0]), *y = ts_graph_get_tensor(g, tr->out[0]);
    int r = x->rank;
    if (r < 2 || r > 3 || r != y->rank || tr->attrs.nperm != r || tr->attrs.perm[r - 2] != r - 1 || y->is_output)
        return false;
    /* a Reshape that renames (gpt's k_same) keeps its input's lanes */
    while (x->producer >= 0 && ts_graph_get_node(g, x->producer)->op == TS_OP_RESHAPE &&
           !lt_reshape_moves(g, ts_graph_get_node(g, x->producer)))
        x = ts_graph_get_tensor(g, ts_graph_get_node(g, x->producer)->in[0]);
    if (x->producer >= 0) { /* lanes past the channels: zeros from a product or a LayerNorm */
        ts_graph_op op = ts_graph_get_node(g, x->producer)->op;
        if (op != TS_OP_MATMUL && op != TS_OP_GEMM && op != TS_OP_CONV && op != TS_OP_CONCAT && op != TS_OP_SLICE &&
            op != TS_OP_TRANSPOSE && op != TS_OP_EXPAND && op != TS_OP_LAYERNORM &&
            !lt_reshape_moves(g, ts_graph_get_node(g, x->producer)))
            return false;
    } else if (x->kind != TS_TENSOR_INPUT) {
        return false;
    }
    return only_b_of_matmuls(g, tr->out[0]);
}

/* Whether a Transpose swaps a 2-D weight for MatMuls alone (weights given with their values keep the
 * exported Transpose): the MatMuls read the weight as B[n][k], as Gemm's transB. */
static bool wt_folds(const ts_graph *g, const ts_graph_node *tr)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, tr->in[0]), *y = ts_graph_get_tensor(g, tr->out[0]);
    if ((x->kind != TS_TENSOR_WEIGHT && x->kind != TS_TENSOR_CONST) || x->rank != 2 || y->is_output ||
        (tr->attrs.nperm && (tr->attrs.nperm != 2 || tr->attrs.perm[0] != 1)))
        return false;
    return only_b_of_matmuls(g, tr->out[0]);
}

/* The Transpose that makes a MatMul's second input, or NULL. */
static const ts_graph_node *b_transpose(const ts_graph *g, const ts_graph_node *mm)
{
    int p = ts_graph_get_tensor(g, mm->in[1])->producer;
    const ts_graph_node *tr = p >= 0 ? ts_graph_get_node(g, p) : NULL;
    return tr && tr->op == TS_OP_TRANSPOSE ? tr : NULL;
}

const ts_graph_node *lt_wt_source(const ts_graph *g, const ts_graph_node *mm)
{
    const ts_graph_node *tr = b_transpose(g, mm);
    return tr && wt_folds(g, tr) ? tr : NULL;
}

const ts_graph_node *lt_kt_source(const ts_graph *g, const ts_graph_node *mm)
{
    const ts_graph_node *tr = b_transpose(g, mm);
    return tr && kt_folds(g, tr) ? tr : NULL;
}

/* The operators the TSP lowering refuses whatever their shapes (ts_lower_ops; lower_node asks it
 * too): kinds it has no room for, a Conv with groups or not of one NCHW image, a Gemm with transA,
 * alpha or beta. */
static bool refuse(const ts_graph *g, const ts_graph_node *nd, char *why, size_t cap)
{
    ts_geom_window w;
    switch (nd->op) {
    case TS_OP_CONV:
        if (!ts_geom_window_of(g, nd, &w))
            snprintf(why, cap, "of an image that is not NCHW");
        else if (nd->attrs.group < 1 || w.C % nd->attrs.group || w.M % nd->attrs.group)
            snprintf(why, cap, "with groups that do not divide the channels");
        return why[0] != '\0';
    case TS_OP_GEMM:
        if (nd->attrs.trans_a || nd->attrs.alpha != 1.0 || nd->attrs.beta != 1.0)
            snprintf(why, cap, "with transA, alpha or beta other than 1");
        return why[0] != '\0';
    case TS_OP_MATMUL: {
        const ts_graph_tensor *a = ts_graph_get_tensor(g, nd->in[0]), *b = ts_graph_get_tensor(g, nd->in[1]);
        if (lt_wt_source(g, nd)) {
            if (a->rank == 4 || a->rank < 1)
                snprintf(why, cap, "other than an activation times a 2-D weight");
        } else if (b->kind != TS_TENSOR_WEIGHT && b->kind != TS_TENSOR_CONST) {
            /* A [H, M, K] x B [H, K, N]: B's rows read through a Transpose (Kᵀ, kt_folds) or computed */
            if (b->rank != a->rank || (a->rank != 2 && a->rank != 3))
                snprintf(why, cap, "of two activations other than [H, M, K] x [H, K, N]");
        } else if (b->rank != 2 || a->rank == 4 || a->rank < 1) {
            snprintf(why, cap, "other than an activation times a 2-D weight");
        }
        return why[0] != '\0';
    }
    case TS_OP_RELU:
    case TS_OP_ADD:
    case TS_OP_MAXPOOL:
    case TS_OP_GLOBALAVGPOOL:
    case TS_OP_FLATTEN:
    case TS_OP_RESHAPE:
    case TS_OP_SOFTMAX:
    case TS_OP_LAYERNORM:
    case TS_OP_CLIP:
    case TS_OP_SIGMOID:
    case TS_OP_TANH:
    case TS_OP_GELU:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
    case TS_OP_CONCAT:
    case TS_OP_SLICE:
    case TS_OP_EXPAND: return false;
    case TS_OP_TRANSPOSE:
        if (!keeps_channels(g, nd) && !kt_folds(g, nd) && !wt_folds(g, nd) && !img_unflat(g, nd))
            snprintf(why, cap, "that moves the channel axis");
        return why[0] != '\0';
    default: return !lt_is_hardswish(nd);
    }
}

static const ts_lower_ops tsp_ops = {
    .family = "TSP",
    .refuse = refuse,
    .takes = "MatMul, Gemm, Conv, Relu, Add, Sub, Mul, Div, Clip, Sigmoid, Tanh, HardSwish, Gelu, Concat, Slice, "
             "Expand, Transpose keeping the channel axis, MaxPool, GlobalAveragePool, Flatten, layout-keeping "
             "Reshape, Softmax and LayerNormalization"};

static bool is_act(const lt *L, int id)
{
    ts_tensor_kind k = ts_graph_get_tensor(L->g, id)->kind;
    return k == TS_TENSOR_ACTIVATION || k == TS_TENSOR_INPUT;
}

/* An Add of an activation and a weight of the same shape (ViT's position embedding): the weight
 * is laid out as a graph input is and added as a second activation; its index, else -1. */
static int full_weight(const lt *L, const ts_graph_node *nd)
{
    for (int i = 0; i < 2 && nd->op == TS_OP_ADD && nd->nin == 2; i++) {
        const ts_graph_tensor *w = ts_graph_get_tensor(L->g, nd->in[i]), *a = ts_graph_get_tensor(L->g, nd->in[1 - i]);
        if (!is_act(L, nd->in[i]) && is_act(L, nd->in[1 - i]) && w->rank == a->rank && a->rank != 4 &&
            !memcmp(w->dims, a->dims, (size_t)a->rank * sizeof *a->dims) && ts_graph_tensor_elems(w) > 1)
            return nd->in[i];
    }
    return -1;
}

/* Whether Transpose tr is folded into the head join that alone reads it (lt_join_fold). */
static bool joined_after(const ts_graph *g, const ts_graph_node *tr)
{
    size_t n;
    const int *c = ts_graph_consumers(g, tr->out[0], &n);
    return n == 1 && lt_join_fold(g, ts_graph_get_node(g, c[0])) == tr;
}

/* How head split nd is read where it computes nothing: 1 A V reads its input (lt_v_split), 2 Q / 8
 * does, masked per head (lt_q_scale, lt_k_view), 3 Q Kᵀ does (lt_q_split), 4 K's split under lt_k_view;
 * 0 it is computed. */
static int view_kind(const ts_graph *g, const ts_graph_node *nd)
{
    const ts_graph_node *tr = nd->op == TS_OP_RESHAPE ? lt_split_fold(g, nd) : NULL;
    size_t n;
    const int *c = tr ? ts_graph_consumers(g, tr->out[0], &n) : NULL;
    if (nd->op == TS_OP_RESHAPE && !tr && lt_k_viewed(g, nd)) /* K's, Q / 8 masked per head (lt_k_view) */
        return 4;
    if (!c || n != 1)
        return 0;
    const ts_graph_node *mm = ts_graph_get_node(g, c[0]);
    if ((mm->op == TS_OP_DIV || mm->op == TS_OP_MUL) && (c = ts_graph_consumers(g, mm->out[0], &n)) && n == 1) {
        const ts_graph_node *m2 = ts_graph_get_node(g, c[0]);
        return lt_q_scale(g, m2) == mm && lt_q_split(g, m2) == nd ? (lt_k_view(g, m2) ? 2 : 3) : 0;
    }
    return lt_v_split(g, mm) == nd ? 1 : lt_q_split(g, mm) == nd ? 3 : 0;
}

/* Whether node nd is a head split whose A V or Q Kᵀ reads its input instead (lt_v_split, lt_q_split). */
static bool v_viewed(const ts_graph *g, const ts_graph_node *nd)
{
    return view_kind(g, nd) != 0;
}

/* Whether Slice sl computes nothing: it takes channels c0 .. of the last axis (step 1, the other
 * axes whole) for a head split read by A V (lt_v_split) or by Q / 8 masked per head (lt_k_view), c0
 * a multiple of the head width (and of 320 lanes for Q, whose heads must lie in K's lanes), read by
 * the split alone; the views read the Slice's input, channel c0 + c of it for the split's c. */
static bool slice_viewed(const lt *L, const ts_graph_node *sl, uint32_t *c0)
{
    const ts_graph *g = L->g;
    size_t n;
    const int *c = sl->op == TS_OP_SLICE ? ts_graph_consumers(g, sl->out[0], &n) : NULL;
    if (!c || n != 1 || ts_graph_get_tensor(g, sl->out[0])->is_output || !L->t[sl->in[0]].placed)
        return false;
    const ts_graph_node *sp = ts_graph_get_node(g, c[0]);
    int k = sp->op == TS_OP_RESHAPE ? view_kind(g, sp) : 0, r, ri, rs; /* 4: K's, from a tile's lane 0 (lt_qkv_pack) */
    if (k != 1 && k != 2 && k != 4)
        return false;
    const int64_t *od = lt_dims(L, sl->out[0], &r), *id = lt_dims(L, sl->in[0], &ri), *sd = lt_dims(L, sp->out[0], &rs);
    const ts_graph_attrs *a = &sl->attrs;
    if (r < 1 || ri != r || rs < 1 || sd[rs - 1] <= 0)
        return false;
    int64_t start = 0;
    for (int d = 0; d < r; d++) {
        int64_t st = d < a->nslice ? a->starts[d] : 0, step = d < a->nslice ? a->steps[d] : 1;
        if (step != 1 || st < 0 || st + od[d] > id[d] || (d + 1 < r && (st != 0 || od[d] != id[d])))
            return false;
        start = st;
    }
    *c0 = (uint32_t)start;
    return start % sd[rs - 1] == 0 && (k == 1 || start % L->VL == 0); /* Q's and K's heads in the same lanes */
}

const ts_graph_node *lt_av_join(const lt *L, const ts_graph_node *mm)
{
    const ts_graph *g = L->g;
    if (mm->op != TS_OP_MATMUL || mm->nin != 2 || mm->in[0] == mm->in[1] || lt_kt_source(g, mm))
        return NULL;
    ts_tensor_kind bk = ts_graph_get_tensor(g, mm->in[1])->kind;
    size_t n;
    const int *c = ts_graph_consumers(g, mm->out[0], &n);
    if (bk == TS_TENSOR_WEIGHT || bk == TS_TENSOR_CONST || n != 1 || ts_graph_get_tensor(g, mm->out[0])->is_output)
        return NULL;
    const ts_graph_node *tr = ts_graph_get_node(g, c[0]);
    if (tr->op != TS_OP_TRANSPOSE || ts_graph_get_tensor(g, tr->out[0])->is_output ||
        !(c = ts_graph_consumers(g, tr->out[0], &n)) || n != 1)
        return NULL;
    const ts_graph_node *jn = ts_graph_get_node(g, c[0]);
    int r, ra, rb;
    const int64_t *d = lt_dims(L, mm->out[0], &r);
    lt_dims(L, mm->in[0], &ra);
    lt_dims(L, mm->in[1], &rb);
    return lt_join_fold(g, jn) == tr && r == 3 && ra == 3 && rb == 3 && d[2] > 0 && L->VL % (uint32_t)d[2] == 0 ? jn
                                                                                                            : NULL;
}

/* Whether head join jn is written by the A V before it (lt_av_join). */
static bool av_joined(const lt *L, const ts_graph_node *jn)
{
    int p = jn->op == TS_OP_RESHAPE ? ts_graph_get_tensor(L->g, jn->in[0])->producer : -1;
    const ts_graph_node *tr = p >= 0 ? ts_graph_get_node(L->g, p) : NULL;
    int q = tr && tr->op == TS_OP_TRANSPOSE ? ts_graph_get_tensor(L->g, tr->in[0])->producer : -1;
    return q >= 0 && lt_av_join(L, ts_graph_get_node(L->g, q)) == jn;
}

int lt_head_base(const lt *L, int id, uint32_t *c0)
{
    int p = ts_graph_get_tensor(L->g, id)->producer;
    if (p >= 0 && slice_viewed(L, ts_graph_get_node(L->g, p), c0))
        return ts_graph_get_node(L->g, p)->in[0];
    *c0 = 0;
    return id;
}

/* Node ni: its activations that are graph inputs placed on first use (a Conv lays its own out),
 * then the operator's lowering into a new layer. */
static ts_status lower_node(lt *L, int ni)
{
    const ts_graph_node *nd = ts_graph_get_node(L->g, ni);
    ts_status rc = ts_lower_refused(L->err, L->g, nd, &tsp_ops);
    if (rc != TS_OK)
        return rc;
    if (nd->op == TS_OP_TRANSPOSE && wt_folds(L->g, nd)) { /* the MatMuls read the weight as B[n][k] */
        ts_lower_tsp_layer *ly = layer(L, ni);
        return ly ? TS_OK : ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    bool binary = nd->op == TS_OP_ADD || nd->op == TS_OP_SUB || nd->op == TS_OP_MUL || nd->op == TS_OP_DIV;
    bool moves = nd->op == TS_OP_CONCAT || nd->op == TS_OP_SLICE || nd->op == TS_OP_TRANSPOSE || nd->op == TS_OP_EXPAND;
    size_t nact = binary ? 2 : nd->op == TS_OP_CONCAT ? nd->nin : nd->op == TS_OP_CONV || nd->nin == 0 ? 0 : 1;
    for (size_t i = 0; i < nact && i < nd->nin; i++) {
        int id = nd->in[i];
        ts_tensor_kind k = ts_graph_get_tensor(L->g, id)->kind;
        /* a weight that is moved (ViT's class token) is laid out as an input is */
        if (!L->t[id].placed && (k == TS_TENSOR_INPUT || (moves && k != TS_TENSOR_ACTIVATION)) &&
            (rc = lt_place_input(L, id, nd)) != TS_OK)
            return rc;
    }
    ts_lower_tsp_layer *ly = layer(L, ni);
    if (!ly)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    ly->macs = ts_graph_node_macs(L->g, ni);
    if ((nd->op == TS_OP_TRANSPOSE || (nd->op == TS_OP_RESHAPE && !lt_reshape_moves(L->g, nd))) &&
        L->t[nd->in[0]].fused) { /* written by the head split before it (lt_split_fold) */
        L->t[nd->out[0]].fused = nd->op == TS_OP_RESHAPE;
        ly->first = ly->last = 0;
        return TS_OK;
    }
    uint32_t c0;
    if (v_viewed(L->g, nd) || slice_viewed(L, nd, &c0) || av_joined(L, nd)) { /* the A V or Q Kᵀ after it reads its input (lt_v_split, lt_q_split) */
        L->t[nd->out[0]].fused = true;
        ly->first = ly->last = 0;
        return TS_OK;
    }
    switch (nd->op) {
    case TS_OP_TRANSPOSE:
        if (joined_after(L->g, nd)) { /* read by the head join after it */
            ly->first = ly->last = 0;
            return TS_OK;
        }
        if (!keeps_channels(L->g, nd) && !img_unflat(L->g, nd)) { /* Kᵀ, read by the MatMul after it (kt_folds) */
            ly->first = ly->last = 0;
            return TS_OK;
        }
        if ((keeps_order(L->g, nd) || img_unflat(L->g, nd)) && L->t[nd->in[0]].placed)
            return lower_rename(L, nd, ly);
        return lt_lower_product(L, nd, ly);
    case TS_OP_MATMUL:
    case TS_OP_GEMM:
    case TS_OP_CONV:
    case TS_OP_CONCAT:
    case TS_OP_SLICE:
    case TS_OP_EXPAND:
        return lt_lower_product(L, nd, ly);
    case TS_OP_ADD: {
        if (nd->nin == 2 && (L->t[nd->in[0]].fused || L->t[nd->in[1]].fused)) {
            /* fused into the product before it (products.c, fused_add) */
            ly->first = ly->last = 0;
            return TS_OK;
        }
        int fw = full_weight(L, nd);
        if (fw >= 0 && !L->t[fw].placed && (rc = lt_place_input(L, fw, nd)) != TS_OK)
            return rc;
        if (fw < 0 && (!is_act(L, nd->in[0]) || !is_act(L, nd->in[1])))
            return lt_lower_ewise(L, nd, ly);
        return lt_lower_elem(L, nd, ly);
    }
    case TS_OP_RELU:
        return lt_lower_elem(L, nd, ly);
    case TS_OP_CLIP:
    case TS_OP_SIGMOID:
    case TS_OP_TANH:
    case TS_OP_GELU:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
        return lt_lower_ewise(L, nd, ly);
    case TS_OP_MAXPOOL:
        return lt_lower_maxpool(L, nd, ly);
    case TS_OP_GLOBALAVGPOOL:
        return lt_lower_gap(L, nd, ly);
    case TS_OP_RESHAPE:
        if (lt_reshape_moves(L->g, nd))
            return lt_lower_product(L, nd, ly);
        return lower_rename(L, nd, ly);
    case TS_OP_FLATTEN:
        return lower_rename(L, nd, ly);
    case TS_OP_SOFTMAX:
        return lt_lower_softmax(L, nd, ly);
    case TS_OP_LAYERNORM:
        return lt_lower_layernorm(L, nd, ly);
    default: /* refused above, but HardSwish */
        if (lt_is_hardswish(nd))
            return lt_lower_ewise(L, nd, ly);
        return ts_err_set(L->err, TS_EINTERNAL, "%s '%s': no room for this operator", ts_graph_op_name(nd->op),
                          nd->name);
    }
}

/* ---- output ---- */

/* Put a queue's instructions in issue order: by cycle, and a read/write pair after a lone write
 * starts with the write (docs/tsp.md, Issue). */
static void issue_order(lq *q)
{
    size_t i = 1;
    while (i < q->n && lt_cmp_rec(&q->v[i - 1], &q->v[i]) <= 0)
        i++;
    if (i < q->n) /* the fetch plan leaves every queue sorted (two recs never compare equal) */
        qsort(q->v, q->n, sizeof *q->v, lt_cmp_rec);
    for (i = 1; i + 1 < q->n; i++)
        if (q->v[i].t == q->v[i + 1].t && q->v[i - 1].t + 1 == q->v[i].t &&
            (i < 2 || q->v[i - 2].t != q->v[i - 1].t) && q->v[i - 1].in.op == LT_WRITE &&
            q->v[i + 1].in.op != LT_REPEAT) {
            rec tmp = q->v[i];
            q->v[i] = q->v[i + 1];
            q->v[i + 1] = tmp;
        }
}

/* Queue qi as program stream s: its instructions with the gaps filled by nop (at most 65535
 * cycles each). */
static ts_status emit_queue(lt *L, uint32_t qi, ts_stream *s)
{
    lq *q = &L->q[qi];
    uint64_t now = 0;
    for (size_t i = 0; i < q->n; i++) {
        uint64_t t = q->v[i].t;
        if (t < now && t + 1 != now) /* only the second of a read/write pair comes a cycle late */
            return ts_err_set(L->err, TS_EINTERNAL, "queue %u: two instructions at cycle %" PRIu64, qi, t);
        while (t > now) {
            uint64_t n = t - now > 65535 ? 65535 : t - now;
            ts_insn *in = ts_stream_emit(s, LT_NOP);
            if (!in)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
            in->a[0] = (int32_t)n;
            now += n;
        }
        ts_insn *in = ts_stream_emit(s, q->v[i].in.op);
        if (!in)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        memcpy(in->a, q->v[i].in.a, sizeof in->a);
        now = lt_rec_end(&q->v[i]) + 1;
    }
    return TS_OK;
}

static ts_status emit_queues(lt *L, ts_lower_tsp_report *rep)
{
    uint64_t maxq = 0, ninsn = 0;
    for (uint32_t qi = 0; qi < L->nq; qi++) {
        if (!L->q[qi].n)
            continue;
        issue_order(&L->q[qi]);
        ts_stream *s = ts_program_stream(L->prog, 0, qi);
        if (!s)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        ts_status rc = emit_queue(L, qi, s);
        if (rc != TS_OK)
            return rc;
        if (s->n > maxq)
            maxq = s->n;
        ninsn += s->n;
    }
    if (rep) {
        rep->instructions = ninsn;
        rep->max_queue = maxq;
    }
    return TS_OK;
}

/* The program's workload name. */
static void name_program(lt *L)
{
    char wl[160];
    snprintf(wl, sizeof wl, "%s (int8, lowered for the TSP)", ts_graph_name(L->g));
    L->prog->workload = ts_malloc(strlen(wl) + 1);
    if (L->prog->workload)
        memcpy(L->prog->workload, wl, strlen(wl) + 1);
}

/* What the lowering did: cycles, words, the layers (moved from L) and every placed tensor. */
static ts_status fill_report(lt *L, ts_lower_tsp_report *rep, size_t nt)
{
    rep->cycles = L->last + 1;
    rep->runs = 1;
    rep->words_used = (uint64_t)(L->al[0][0].top + L->al[0][1].top - L->al[0][1].first) * L->nW +
                      (uint64_t)(L->al[1][0].top + L->al[1][1].top - L->al[1][1].first) * L->nE;
    rep->layers = L->layers;
    rep->nlayers = L->nlayers;
    L->layers = NULL;
    size_t np = 0;
    for (size_t i = 0; i < nt; i++)
        np += L->t[i].placed && L->t[i].ready;
    rep->places = ts_calloc(np ? np : 1, sizeof *rep->places);
    if (!rep->places)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < nt; i++) {
        tens *x = &L->t[i];
        if (!x->placed || !x->ready)
            continue;
        rep->places[rep->nplaces++] = (ts_lower_tsp_place){.tensor = (int)i, .pixels = x->P, .tiles = x->T,
            .channels = x->C, .slice0 = 0, .nslices = L->nW, .base = x->base, .off = x->off};
    }
    return TS_OK;
}

void ts_lower_tsp_report_free(ts_lower_tsp_report *rep)
{
    if (!rep)
        return;
    ts_free(rep->places);
    ts_free(rep->layers);
    ts_graph_destroy(rep->sample);
    ts_free(rep->batch_axis);
    ts_free(rep->batch_block);
    memset(rep, 0, sizeof *rep);
}

/* ---- the lowering ---- */

/* The machines the lowering can use. */
static ts_status check_target(const ts_tsp_target *P, ts_err *err)
{
    if (P->streams < LT_STREAMS || P->mem_west < 16 || P->mem_east < 16 || P->mxm_west < 2 || P->vxm_alus < 5 ||
        P->mxm_dim != P->superlanes * P->lanes || (P->superlanes * P->lanes) % IW_STREAMS)
        return ts_err_set(err, TS_EINPUT, "the TSP lowering needs 32 streams per direction, 16 MEM slices and two MXM "
                                          "planes west, 5 VXM ALUs and planes as wide as a vector of a multiple of 16");
    return TS_OK;
}

/* The scheduler's state for graph g on target P: empty queues and reservations, the allocators
 * (word 0 of every west slice holds zeros), one tensor record per graph tensor. */
static ts_status lt_init(lt *L, const ts_graph *g, const ts_tsp_target *P, ts_err *err)
{
    *L = (lt){.g = g, .tg = P, .err = err};
    L->VL = P->superlanes * P->lanes;
    L->nW = P->mem_west;
    L->nE = P->mem_east;
    L->nalu = P->vxm_alus > TS_TSP_TARGET_MAX_ALUS ? TS_TSP_TARGET_MAX_ALUS : P->vxm_alus;
    L->nq = P->q_mxm + P->mxm_queues * (P->mxm_west + P->mxm_east) + P->sxm_queues * (P->sxm_west + P->sxm_east);
    L->half = P->banks == 2 ? (uint32_t)(P->words / 2) : (uint32_t)P->words;
    for (int h = 0; h < 2; h++) {
        L->al[h][0] = (alloc){.first = 0, .top = 0, .limit = L->half};
        L->al[h][1] = (alloc){.first = L->half, .top = L->half, .limit = (uint32_t)P->words};
    }
    L->al[0][0].first = L->al[0][0].top = 1; /* word 0 of every west slice: zeros */
    if (P->queue_capacity && P->ifetch_bytes && P->fetch_bpc)
        L->fwin = (uint32_t)ts_geom_cdiv(P->ifetch_bytes, P->fetch_bpc);
    L->prog = ts_program_create("tsp");
    L->q = ts_calloc(L->nq, sizeof *L->q);
    L->bank = ts_calloc(L->nW + L->nE, sizeof *L->bank);
    size_t nt = ts_graph_tensor_count(g);
    L->t = ts_calloc(nt ? nt : 1, sizeof *L->t);
    if (!L->prog || !L->q || !L->bank || !L->t)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        ts_geom_window w;
        const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
        if (nd->op == TS_OP_CONV && ts_geom_window_of(g, nd, &w) && w.N > 1)
            L->mono = true;
    }
    for (size_t i = 0; i < nt; i++) {
        size_t n;
        ts_graph_consumers(g, (int)i, &n);
        L->t[i].users = (int)n;
        L->t[i].output = ts_graph_get_tensor(g, (int)i)->is_output;
        L->t[i].owner = (int)i;
    }
    return TS_OK;
}

/* Free the scheduler's state (the program stays). */
static void lt_free(lt *L, size_t nt)
{
    for (size_t i = 0; L->t && i < nt; i++)
        if (L->t[i].ready && L->t[i].owner == (int)i)
            ts_free(L->t[i].ready);
    ts_free(L->t);
    ts_free(L->tnext);
    for (uint32_t i = 0; L->q && i < L->nq; i++) {
        ts_free(L->q[i].v);
        ts_free(L->q[i].issue.w);
        ts_free(L->q[i].wr.w);
    }
    ts_free(L->q);
    for (uint32_t i = 0; L->bank && i < L->nW + L->nE; i++) {
        ts_free(L->bank[i][0].w);
        ts_free(L->bank[i][1].w);
    }
    ts_free(L->bank);
    for (int i = 0; i < TS_TSP_TARGET_MAX_ALUS; i++)
        ts_free(L->lat[i].w);
    for (int g = 0; g < LT_SEGS; g++)
        for (int d = 0; d < 2; d++)
            for (int s = 0; s < TS_TSP_TARGET_MAX_STREAMS; s++)
                ts_free(L->diag[g][d][s].w);
    ts_free(L->u);
    ts_free(L->pd);
    ts_free(L->layers);
    for (size_t i = 0; i < L->ncats; i++)
        ts_free(L->cats[i].img);
    ts_free(L->cats);
    ts_free(L->wts);
    for (int i = 0; i < LT_ONEHOT_MAX; i++)
        ts_free(L->onehot[i].ready);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 2; k++)
            ts_free(L->al[h][k].v);
}

/* How many times the lowering is tried when the instruction fetches of its schedule cannot be
 * placed. Tries 1, 2, 3 have every queue ask for text 20, 20, 40 entries earlier (lt.fetch_slack);
 * tries 2 and 3 keep a free issue cycle in every 21 cycles instead of every fwin (40 on tsp_v1; 21
 * is the shortest window a 20-cycle weight install fits beside). The sweep's count
 * of a MEM slice's entries can fall short of the replay's when other queues' text reads go into a
 * slice whose own fetches run close (NeRF's 4096-row layers: MEM W0 ran dry a few cycles before
 * its last fetch landed): asking earlier leaves the margin. A queue that issues in 39 of every 40
 * cycles (MobileNetV2's elementwise chains on the VXM) has no fetch to spare when one cannot be
 * placed in its free cycle: more free cycles leave the margin. The first try is the schedule the
 * lowering always made. */
#define FETCH_TRIES 4

/* MODES: the lowering is tried first with the east planes taking the blocks of the products that
 * stream many vectors, on the wide stream pools (sched.c, lt_pool_sets; docs/lowering-tsp.md, *The
 * east planes*). Their schedule is shorter but issues more instructions a cycle, and where its text
 * does not fit (MobileNetV2's; a matrix product of 17,000 rows, whose text ran 10 words short) it is
 * tried again on the west planes alone (where mode 0 used the east planes), then with the narrow pools
 * too, which is the schedule every program had before the east planes: whatever compiled before still
 * compiles. A text whose count alone is over every word free of data (ifetch.c, L->text_over) is
 * refused in mode 0: ResNet-50 at batch 8, ViT-B/16, BERT-base. */

/* LEAN: where the instruction text of every mode does not fit (its count over the words free of data
 * by at most LT_LEAN_REACH times, or the fetch sweep running out of them), mode 0 is tried once more
 * with fewer entries (docs/lowering-tsp.md, *LEAN*): every product keeps its scale and (one zero
 * bias where it has none) its bias in latches, and its single-plane passes carry one tag; the f32
 * chains (ewise.c, LayerNorm, Softmax) keep their constants in latches on one tag per operator; a
 * word held in every slice is read for a stream from a slice of its own and a VXM operation takes
 * the first free ALU, so queues issue in runs; and runs of identical instructions at one spacing are
 * packed with `repeat` (ifetch.c). The one tag per product or operator weakens the simulator's
 * check of which value an instruction meets (tags are a checking aid that the published ISA does
 * not carry). A LEAN try that fails for another reason than its text leaves the modes' error. Only
 * schedules that did not compile take it, so every program that compiled before is the same. */

/* COMPACT: where the layout as always leaves a tensor without room, the lowering is tried again in
 * the compact layout (L->compact), which gives up nothing but the identity of the programs that
 * fit: the one-hot vectors of A V's transposes laid out once per shape instead of again whenever
 * the shape changes (a decoder's q Kᵀ and p V alternate: 54 words of each west slice a layer of
 * GPT-2 small); a product without a bias reads one set of 4 zero words for every tile of outputs
 * instead of 4 words a tile (GPT-2's LM head: 636 words of each east slice, 9 MB); and the
 * constants read from any east slice lie in one of LT_CGROUPS groups of east slices instead of
 * all (memory.c, lt_const_region). */

/* Try k of the schedule, in the compact layout or not; *fetch_failed when it failed only because
 * the instruction fetches could not be placed, *room_short when a region found no room. */
static ts_status lower_once(const ts_graph *g, const ts_tsp_target *P, uint32_t k, bool compact, int mode,
                            int lean, bool *live, ts_program **out, ts_lower_tsp_report *rep, ts_err *err, bool *fetch_failed,
                            bool *room_short, bool *east_used, bool *text_over, bool *text_short)
{
    lt L;
    size_t nt = ts_graph_tensor_count(g), nn = ts_graph_node_count(g);
    ts_status rc = lt_init(&L, g, P, err);
    L.compact = compact;
    L.mode = mode;
    L.lean = lean > 0;
    L.lean_runs = lean > 1;
    L.pools = lt_pool_sets[mode];
    static const uint32_t slack[FETCH_TRIES] = {0, 20, 20, 40};
    L.fetch_slack = slack[k];
    L.text_live = *live;
    /* the shorter window still fits a 20-cycle install, and the all-ones f16 block's reads from
     * each west slice in a row (softmax.c: 4 on a 2-superlane chip with 16 slices) */
    uint32_t w2 = P->superlanes * P->lanes / IW_STREAMS + 1, w1 = (uint32_t)ts_geom_cdiv(2 * (uint64_t)L.VL, L.nW) + 1;
    if (w1 > w2)
        w2 = w1;
    if (k >= 2 && L.fwin > w2)
        L.fwin = w2;
    *fetch_failed = false;
    for (size_t i = 0; i < nn && rc == TS_OK; i++)
        rc = lower_node(&L, (int)i);
    if (rc == TS_OK && L.oom)
        rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    if (rc == TS_OK) {
        rc = lt_plan_fetches(&L);
        *fetch_failed = rc == TS_EINPUT && !L.text_short;
        *live = *live || L.text_out;
    }
    if (rc == TS_OK)
        rc = emit_queues(&L, rep);
    if (rc == TS_OK) {
        name_program(&L);
        ts_program_canonicalize(L.prog);
    }
    if (rc == TS_OK && rep)
        rc = fill_report(&L, rep, nt);
    *room_short = rc == TS_EINPUT && L.room_short;
    *east_used = *east_used || L.east_used;
    *text_over = rc == TS_EINPUT && L.text_over;
    *text_short = rc == TS_EINPUT && L.text_short && !L.text_far;
    lt_free(&L, nt);
    if (rc == TS_OK) {
        *out = L.prog;
    } else {
        ts_program_destroy(L.prog);
        if (rep) {
            ts_free(rep->places);
            ts_free(rep->layers);
            memset(rep, 0, sizeof *rep);
        }
    }
    return rc;
}

/* One mode (MODES), lean or not (LEAN): the layout as always, then the compact one where a region
 * found no room (COMPACT), each over the fetch tries (FETCH_TRIES). */
/* The try that compiled: its mode, LEAN's kind (0 none, 1 as before, 2 partial sums in runs), layout and
 * fetch try, and whether its text went below the data from the start (the samples of a batch are
 * compiled with it again). */
typedef struct lt_try {
    int mode, lean;
    bool compact, live;
    uint32_t k;
} lt_try;

static ts_status lower_mode(const ts_graph *g, const ts_tsp_target *P, int mode, int lean, ts_program **out,
                            ts_lower_tsp_report *rep, ts_err *err, bool *room, bool *east, bool *over, bool *tshort,
                            lt_try *won)
{
    ts_status rc = TS_OK;
    *room = false;
    for (int compact = 0; compact < 2 && (!compact || *room); compact++) {
        bool again = true, live = false;
        for (uint32_t k = 0; again && k < FETCH_TRIES; k++) {
            if ((k || compact || mode || lean) && err) {
                ts_err_free(err);
                ts_err_init(err);
            }
            bool was = live;
            *won = (lt_try){mode, lean, compact != 0, live, k};
            rc = lower_once(g, P, k, compact, mode, lean, &live, out, rep, err, &again, room, east, over, tshort);
            if (again && live && !was) { /* the same try again with text below the data */
                if (err) {
                    ts_err_free(err);
                    ts_err_init(err);
                }
                won->live = live;
                rc = lower_once(g, P, k, compact, mode, lean, &live, out, rep, err, &again, room, east, over, tshort);
            }
        }
    }
    return rc;
}

/* The graph a schedule is made from, in *g: a batch of 1 in rank 4 read as rank 3 (*sq), then K of a
 * packed in-projection from a multiple of 320 lanes (*pk; both squeeze.c, owned, NULL where g needs
 * neither). */
static ts_status rewritten(const ts_graph **g, const ts_tsp_target *P, ts_graph **sq, ts_graph **pk, ts_err *err)
{
    ts_status rc = lt_squeeze(*g, sq, err);
    if (*sq)
        *g = *sq;
    if (rc == TS_OK)
        rc = lt_qkv_pack(*g, P->superlanes * P->lanes, pk, err);
    if (*pk)
        *g = *pk;
    return rc;
}

/* Graph g as one schedule: the modes, then LEAN (above); *won the try that compiled, *fits false when
 * the schedule was refused for room or text (a batch may then run one sample at a time). */
static ts_status lower_graph(const ts_graph *g, const ts_tsp_target *P, ts_program **out, ts_lower_tsp_report *rep,
                             ts_err *err, lt_try *won, bool *fits, bool *checked)
{
    ts_graph *sq = NULL, *pk = NULL;
    ts_status rc = rewritten(&g, P, &sq, &pk, err);
    if (rc == TS_OK)
        rc = ts_lower_check_ops(g, &tsp_ops, err);
    *checked = rc == TS_OK;
    /* the layout as always first; where a region finds no room, the compact one (COMPACT above); where
     * the instruction text of a schedule on the east planes too does not fit, the west planes alone,
     * then the narrow pools as well: the schedule of before the east planes (MODES) */
    bool ok = rc == TS_OK, room = false, east = false, over = false, tshort = false;
    for (int mode = 0; ok && mode < 3; mode++) {
        if (mode && (rc != TS_EINPUT || room || over))
            break; /* compiled, or refused for a reason another mode does not change */
        if (mode == 1 && !east)
            continue; /* the same schedule as mode 0 */
        rc = lower_mode(g, P, mode, 0, out, rep, err, &room, &east, &over, &tshort, won);
    }
    *fits = !(ok && rc == TS_EINPUT && (room || over || tshort));
    if (ok && rc == TS_EINPUT && tshort) { /* LEAN: the text of every mode does not fit */
        ts_err was = {.status = TS_OK};
        if (err) {
            was = *err;
            err->detail = NULL; /* moved to was */
        }
        lt_try mw = *won;
        /* first with the partial sums in runs (ViT-B/16 runs so), then as before (the 2-layer BERT of
         * test_bert_lean, whose fetch sweep runs out of words with them) */
        ts_status lrc = lower_mode(g, P, 0, 2, out, rep, err, &room, &east, &over, &tshort, won);
        if (lrc != TS_OK) {
            if (err) {
                ts_err_free(err);
                ts_err_init(err);
            }
            lrc = lower_mode(g, P, 0, 1, out, rep, err, &room, &east, &over, &tshort, won);
        }
        if (lrc == TS_OK || (lrc == TS_EINPUT && tshort)) { /* compiled, or its own text's figures */
            rc = lrc;
            ts_err_free(&was);
        } else if (err) { /* anything else: the modes' error stands */
            ts_err_free(err);
            *err = was;
            *won = mw;
        }
    }
    ts_graph_destroy(pk);
    ts_graph_destroy(sq);
    return rc;
}

/* Graph g compiled with the try that compiled another sample of its batch. */
static ts_status lower_again(const ts_graph *g, const ts_tsp_target *P, const lt_try *w, ts_program **out,
                             ts_lower_tsp_report *rep, ts_err *err)
{
    ts_graph *sq = NULL, *pk = NULL;
    ts_status rc = rewritten(&g, P, &sq, &pk, err);
    bool live = w->live, b0 = false, b1 = false, b2 = false, b3 = false, b4 = false;
    if (rc == TS_OK)
        rc = lower_once(g, P, w->k, w->compact, w->mode, w->lean, &live, out, rep, err, &b0, &b1, &b2, &b3, &b4);
    ts_graph_destroy(pk);
    ts_graph_destroy(sq);
    return rc;
}


/* ---- a batch run once per sample (docs/lowering-tsp.md, *Batches and groups*) ---- */

/* The words of the program's MEM slices whose first access is a read and which a later write
 * overwrites (a weight's or constant's region reused after its last read, text below the data, the
 * zeros of a word read before it is written): the host restores them before every run after the
 * first. A bit per slice and word (nm x words) into rst. A MEM slice's reads and writes are all in its
 * own queue, in issue order. */
static ts_status restored_words(const ts_program *p, uint32_t nm, uint64_t words, uint8_t *rst, ts_err *err)
{
    uint8_t *st = ts_malloc((size_t)words + 1); /* 0 untouched, 1 read first, 2 written first */
    if (!st)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_status rc = TS_OK;
    for (size_t i = 0; i < p->nstreams && rc == TS_OK; i++) {
        const ts_stream *sq = &p->streams[i];
        if (sq->kind != 0 || sq->index >= nm || !sq->n)
            continue;
        ts_insn *v = ts_malloc((size_t)sq->n * sizeof *v);
        rc = v ? ts_stream_unpack(sq, v, err) : ts_err_set(err, TS_ENOMEM, "out of memory");
        memset(st, 0, (size_t)words);
        for (uint32_t pc = 0; pc < sq->n && rc == TS_OK; pc++) {
            bool rd = v[pc].op == LT_READ, wr = v[pc].op == LT_WRITE;
            if ((!rd && !wr) || v[pc].a[0] < 0 || (uint64_t)v[pc].a[0] >= words)
                continue;
            uint64_t w = (uint64_t)v[pc].a[0], bit = sq->index * words + w;
            if (!st[w])
                st[w] = rd ? 1 : 2;
            else if (wr && st[w] == 1)
                rst[bit / 8] |= (uint8_t)(1u << (bit % 8));
        }
        ts_free(v);
    }
    ts_free(st);
    return rc;
}

/* Slice m's image in program p (its MEM data segments painted on zeros) into img (bytes). */
static void slice_image(const ts_program *p, uint32_t m, uint8_t *img, uint64_t bytes)
{
    memset(img, 0, (size_t)bytes);
    for (size_t j = 0; j < p->nsegs; j++) {
        const ts_segment *sg = &p->segs[j];
        if (sg->kind == 1 && sg->index == m && sg->addr + sg->len <= bytes)
            memcpy(img + sg->addr, sg->bytes, sg->len);
    }
}

static bool bit_of(const uint8_t *b, uint64_t i)
{
    return b[i / 8] >> (i % 8) & 1;
}

/* The words of every slice marked in hw, as segments of kind input of run s (the bytes of program ps:
 * that sample's), one a run of consecutive words; *bytes counts them. */
static ts_status host_words(ts_program *prog, const ts_program *ps, const uint8_t *hw, uint32_t nm, uint64_t words,
                            uint32_t VL, int64_t s, uint8_t *img, uint64_t *bytes, ts_err *err)
{
    uint64_t sb = words * VL;
    ts_status rc = TS_OK;
    for (uint32_t m = 0; m < nm && rc == TS_OK; m++) {
        bool any = false;
        for (uint64_t w = 0; w < words && !any; w++)
            any = bit_of(hw, m * words + w);
        if (!any)
            continue;
        slice_image(ps, m, img, sb);
        for (uint64_t w = 0; w < words && rc == TS_OK;) {
            if (!bit_of(hw, m * words + w)) {
                w++;
                continue;
            }
            uint64_t e = w;
            while (e < words && bit_of(hw, m * words + e))
                e++;
            rc = ts_program_add_segment(prog, TS_TSP_SEG_INPUT, m, (uint64_t)s * sb + w * VL, img + w * VL,
                                        (uint32_t)((e - w) * VL), err);
            *bytes += (e - w) * VL;
            w = e;
        }
    }
    return rc;
}

/* Every graph output's words in each slice, as segments of kind output (their bytes zeros). */
static ts_status host_outputs(ts_program *prog, const ts_graph *g, const ts_lower_tsp_report *r, uint32_t VL,
                              ts_err *err)
{
    ts_status rc = TS_OK;
    for (size_t i = 0; i < r->nplaces && rc == TS_OK; i++) {
        const ts_lower_tsp_place *pl = &r->places[i];
        if (!ts_graph_get_tensor(g, pl->tensor)->is_output)
            continue;
        /* vector v of [off, end) is word base + v / ns of slice v mod ns */
        uint64_t ns = pl->nslices, end = (uint64_t)pl->off + (uint64_t)pl->pixels * pl->tiles;
        uint8_t *z = ts_calloc((size_t)((end - pl->off) / ns + 2) * VL, 1);
        if (!z)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        for (uint64_t k = 0; k < ns && rc == TS_OK; k++) {
            uint64_t v0 = pl->off + (k + ns - pl->off % ns) % ns; /* the first vector in slice k */
            if (v0 >= end)
                continue;
            uint64_t v1 = end - 1 - (end - 1 + ns - k) % ns; /* the last */
            rc = ts_program_add_segment(prog, TS_TSP_SEG_OUTPUT, pl->slice0 + (uint32_t)k,
                                        (pl->base + v0 / ns) * VL, z, (uint32_t)((v1 / ns - v0 / ns + 1) * VL), err);
        }
        ts_free(z);
    }
    return rc;
}

/* Into hw, the words of p0 that hold inputs: those whose bytes differ in pp, the program of the same
 * sample with every input bit inverted (the layout does not depend on the values). */
static void input_words(const ts_program *p0, const ts_program *pp, uint32_t nm, uint64_t words, uint32_t VL,
                        uint8_t *img0, uint8_t *imgp, uint8_t *hw)
{
    for (uint32_t m = 0; m < nm; m++) {
        slice_image(p0, m, img0, words * VL);
        slice_image(pp, m, imgp, words * VL);
        for (uint64_t w = 0; w < words; w++)
            if (memcmp(img0 + w * VL, imgp + w * VL, VL)) {
                uint64_t bit = m * words + w;
                hw[bit / 8] |= (uint8_t)(1u << (bit % 8));
            }
    }
}

/* The host's part of the batch program prog (sample 0's, compiled with try w, its report r): before
 * each run after the first, that sample's inputs and the restored words (restored_words); after each
 * run, the outputs; the runs. r->host_bytes: what the host writes before a run. */
static ts_status batch_host(ts_program *prog, const lt_batch *b, const ts_tsp_target *P, const lt_try *w,
                            ts_lower_tsp_report *r, ts_err *err)
{
    int64_t n = lt_batch_n(b);
    uint32_t VL = P->superlanes * P->lanes, nm = P->mem_west + P->mem_east;
    uint64_t sb = P->words * VL, nbits = (uint64_t)nm * P->words;
    ts_graph *gs = NULL;
    ts_program *ps = NULL;
    uint8_t *hw = ts_calloc((size_t)(nbits / 8) + 1, 1), *rst = ts_calloc((size_t)(nbits / 8) + 1, 1);
    uint8_t *img0 = ts_malloc((size_t)sb + 1), *imgp = ts_malloc((size_t)sb + 1);
    ts_status rc = hw && rst && img0 && imgp ? TS_OK : ts_err_set(err, TS_ENOMEM, "out of memory");
    if (rc == TS_OK)
        rc = lt_batch_sample(b, 0, true, &gs, err);
    if (rc == TS_OK)
        rc = lower_again(gs, P, w, &ps, NULL, err);
    if (rc == TS_OK) {
        input_words(prog, ps, nm, P->words, VL, img0, imgp, hw);
        rc = restored_words(prog, nm, P->words, rst, err);
    }
    for (uint64_t i = 0; i < nbits / 8 + 1 && rc == TS_OK; i++)
        rst[i] &= (uint8_t)~hw[i]; /* the restored words that hold no input: sample 0's bytes every run */
    for (int64_t s = 1; s < n && rc == TS_OK; s++) {
        ts_graph_destroy(gs);
        ts_program_destroy(ps);
        gs = NULL;
        ps = NULL;
        uint64_t bs = 0;
        rc = lt_batch_sample(b, s, false, &gs, err);
        if (rc == TS_OK)
            rc = lower_again(gs, P, w, &ps, NULL, err);
        if (rc == TS_OK)
            rc = host_words(prog, ps, hw, nm, P->words, VL, s, img0, &bs, err);
        if (rc == TS_OK)
            rc = host_words(prog, prog, rst, nm, P->words, VL, s, img0, &bs, err);
        r->host_bytes = bs;
    }
    if (rc == TS_OK)
        rc = host_outputs(prog, r->sample, r, VL, err);
    if (rc == TS_OK)
        rc = ts_program_add_symbol(prog, TS_TSP_SYM_RUNS, TS_SYM_CONST, 0, n, err);
    ts_graph_destroy(gs);
    ts_program_destroy(ps);
    ts_free(hw);
    ts_free(rst);
    ts_free(img0);
    ts_free(imgp);
    if (rc == TS_OK)
        ts_program_canonicalize(prog);
    return rc;
}

/* The message of err with pre before it and post after it. */
static void reword(ts_err *err, const char *pre, const char *post)
{
    if (!err)
        return;
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    ts_err_set(err, err->status, "%s%s%s", pre, m, post);
}

/* A batch whose unrolled schedule does not fit: where no operator mixes its samples, the program of
 * one sample, run once per sample; the unrolled batch's error (err) stands otherwise, with why. */
static ts_status lower_batch(const ts_graph *g, const ts_tsp_target *P, ts_program **out, ts_lower_tsp_report *rep,
                             ts_err *err)
{
    char why[256], tail[320];
    lt_batch *b = NULL;
    ts_err e2;
    ts_err_init(&e2);
    ts_status rc = lt_batch_find(g, &b, why, sizeof why, &e2);
    if (rc != TS_OK || !b) {
        ts_err_free(&e2);
        if (rc != TS_OK)
            return ts_err_set(err, rc, "out of memory");
        if (!strstr(why, "no batch")) {
            snprintf(tail, sizeof tail, "; the batch cannot run one sample at a time: %s", why);
            reword(err, "", tail);
        }
        return TS_EINPUT;
    }
    ts_lower_tsp_report r = {0};
    ts_graph *g0 = NULL;
    lt_try w = {0};
    bool fits = true, checked = false;
    rc = lt_batch_sample(b, 0, false, &g0, &e2);
    if (rc == TS_OK)
        rc = lower_graph(g0, P, out, &r, &e2, &w, &fits, &checked);
    if (rc == TS_OK) {
        r.sample = g0;
        g0 = NULL;
        rc = batch_host(*out, b, P, &w, &r, &e2);
    }
    size_t nt = ts_graph_tensor_count(g);
    if (rc == TS_OK && (!(r.batch_axis = ts_malloc((nt + 1) * sizeof *r.batch_axis)) ||
                        !(r.batch_block = ts_malloc((nt + 1) * sizeof *r.batch_block))))
        rc = ts_err_set(&e2, TS_ENOMEM, "out of memory");
    if (rc == TS_OK) {
        for (size_t i = 0; i < nt; i++) {
            r.batch_axis[i] = lt_batch_axis(b, (int)i);
            r.batch_block[i] = lt_batch_block(b, (int)i);
        }
        r.runs = (uint32_t)lt_batch_n(b);
        r.nmem = P->mem_west + P->mem_east;
        if (err) { /* the unrolled batch's refusal is not an error any more */
            ts_err_free(err);
            ts_err_init(err);
        }
        if (rep)
            *rep = r;
        else
            ts_lower_tsp_report_free(&r);
    } else {
        if (err) { /* the unrolled batch's message, then the sample's */
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err->msg);
            ts_err_set(err, e2.status, "%.560s; one sample of the batch of %" PRId64 " at a time: %.400s", m,
                       lt_batch_n(b), e2.msg);
        }
        rc = err ? err->status : rc;
        ts_program_destroy(*out);
        *out = NULL;
        ts_lower_tsp_report_free(&r);
    }
    ts_err_free(&e2);
    ts_graph_destroy(g0);
    lt_batch_free(b);
    return rc;
}

ts_status ts_lower_tsp(const ts_graph *g, const void *params, ts_program **out, ts_lower_tsp_report *rep, ts_err *err)
{
    const ts_tsp_target *P = &((const ts_lower_tsp_params *)params)->target;
    *out = NULL;
    if (rep)
        memset(rep, 0, sizeof *rep);
    ts_status rc = check_target(P, err);
    lt_try won = {0};
    bool fits = true, one = ((const ts_lower_tsp_params *)params)->one_sample;
    bool checked = one;
    if (rc == TS_OK && one) /* the unrolled batch is not tried */
        rc = ts_err_set(err, TS_EINPUT, "the batch is lowered one sample at a time");
    else if (rc == TS_OK)
        rc = lower_graph(g, P, out, rep, err, &won, &fits, &checked);
    (void)fits;
    if (checked && rc == TS_EINPUT) { /* the unrolled batch is refused after the operator check */
        ts_lower_tsp_report_free(rep);
        rc = lower_batch(g, P, out, rep, err);
    }
    return rc;
}

int ts_lower_tsp_locate(const ts_lower_tsp_report *rep, int tensor, uint32_t pixel, uint32_t channel, uint32_t vl,
                        int *slice, uint64_t *addr)
{
    for (size_t i = 0; i < rep->nplaces; i++) {
        const ts_lower_tsp_place *p = &rep->places[i];
        if (p->tensor != tensor)
            continue;
        if (pixel >= p->pixels || channel >= p->channels)
            return -1;
        uint64_t k = p->off + (uint64_t)pixel * p->tiles + channel / vl;
        *slice = (int)(p->slice0 + k % p->nslices);
        *addr = (p->base + k / p->nslices) * (uint64_t)vl + channel % vl;
        return 0;
    }
    return -1;
}
