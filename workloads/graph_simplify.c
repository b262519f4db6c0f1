/* workloads/graph_simplify.c — the rewrites of ts_graph_finalize that leave the lowerings fewer
 * forms to take:
 *   - an Expand whose output has its input's shape is removed (its readers read the input);
 *   - a Gather of one constant index from an activation or data input becomes a Slice of one
 *     element along the axis, then (for a scalar index) a Reshape that drops the axis; a Gather
 *     whose indices carry no values (an embedding lookup) stays;
 *   - a layout op (Transpose, Reshape, Flatten, Slice; Expand of a constant) of a weight or
 *     constant is folded: with values, they are rearranged into the op's output, which becomes
 *     a weight or constant itself; a weight without values becomes a weight of the output's
 *     shape, also without values (a lowering then gives it values of its own).
 * They run after the first shape inference, so every tensor they read has its shape. */
#include "workloads/graph.h"

#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/graph_int.h"

/* An Expand of a constant is folded into at most this many elements (the other layout folds
 * make no more values than their input holds already). */
#define FOLD_MAX_ELEMS (INT64_C(1) << 20)

static bool same_shape(const ts_graph_tensor *a, const ts_graph_tensor *b)
{
    return a->rank == b->rank && !memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]);
}

/* The alive nodes reading y read x instead. */
static void redirect(ts_graph *g, int y, int x)
{
    for (size_t i = 0; i < g->nn; i++) {
        if (g->dead[i])
            continue;
        int *in = (int *)(uintptr_t)g->n[i].in;
        for (size_t j = 0; j < g->n[i].nin; j++)
            if (in[j] == y)
                in[j] = x;
    }
}

static void remove_identity_expand(ts_graph *g)
{
    for (size_t i = 0; i < g->nn; i++) {
        const ts_graph_node *nd = &g->n[i];
        if (g->dead[i] || nd->op != TS_OP_EXPAND || g->t[nd->out[0]].is_output ||
            !same_shape(&g->t[nd->in[0]], &g->t[nd->out[0]]))
            continue;
        g->dead[i] = true;
        g->t[nd->out[0]].producer = -1;
        redirect(g, nd->out[0], nd->in[0]);
    }
}

/* The value of a one-element integer tensor with values; false if t is not one. */
static bool const_index(const ts_graph_tensor *t, int64_t *v)
{
    if (!t->data || ts_graph_tensor_elems(t) != 1 || t->rank > 1)
        return false;
    switch (t->dtype) {
    case TS_DT_I64: *v = *(const int64_t *)t->data; return true;
    case TS_DT_I32: *v = *(const int32_t *)t->data; return true;
    default: return false;
    }
}

/* Gather(x, constant index i) on axis a: Slice [i, i+1) on a, then Reshape without a when the
 * index is a scalar (with a one-element index vector the Slice alone has the Gather's shape). */
static ts_status gather_to_slice(ts_graph *g, int node, ts_err *err)
{
    const ts_graph_node *nd = &g->n[node];
    int x = nd->in[0], y = nd->out[0];
    const ts_graph_tensor *xt = &g->t[x];
    int64_t ix, ax = ts_graph_norm_axis(nd->attrs.axis, xt->rank);
    if ((xt->kind != TS_TENSOR_ACTIVATION && xt->kind != TS_TENSOR_INPUT) || !const_index(&g->t[nd->in[1]], &ix) ||
        ax < 0 || ax >= xt->rank)
        return TS_OK;
    ix = ix < 0 ? ix + xt->dims[ax] : ix;
    if (ix < 0 || ix >= xt->dims[ax])
        return TS_OK; /* shape inference does not look at values: leave the Gather as it is */
    ts_graph_attrs sa, ra;
    ts_graph_attrs_init(&sa);
    ts_graph_attrs_init(&ra);
    sa.nslice = xt->rank;
    for (int k = 0; k < xt->rank; k++) {
        sa.starts[k] = k == ax ? ix : 0;
        sa.ends[k] = k == ax ? ix + 1 : xt->dims[k];
        sa.steps[k] = 1;
        if (k != ax)
            ra.shape[ra.nshape++] = xt->dims[k];
    }
    bool scalar = g->t[nd->in[1]].rank == 0;
    char name[600], tname[600], base[580];
    snprintf(name, sizeof name, "%s.slice", nd->name);
    int s = y;
    if (scalar) {
        snprintf(base, sizeof base, "%s.slice", g->t[y].name);
        ts_graph_unique_name(g, base, tname, sizeof tname);
        ts_status st = ts_graph_add_tensor(g, tname, TS_TENSOR_ACTIVATION, g->t[x].dtype, -1, NULL, &s, err);
        if (st)
            return st;
    }
    int dead = node;
    ts_status st = ts_graph_replace(g, &dead, 1, TS_OP_SLICE, name, &x, 1, s, &sa, err);
    if (st || !scalar)
        return st;
    snprintf(name, sizeof name, "%s.reshape", g->n[node].name);
    return ts_graph_replace(g, NULL, 0, TS_OP_RESHAPE, name, &s, 1, y, &ra, err);
}

/* For each axis of the layout op's output, the stride of the element it reads in x, and the
 * first element read (*base); false for an op that only copies (Reshape, Flatten). */
static bool source_strides(const ts_graph_node *nd, const ts_graph_tensor *x, const ts_graph_tensor *y,
                           int64_t *stride, int64_t *base)
{
    int64_t xs[TS_GRAPH_MAX_RANK];
    int64_t k = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        xs[i] = k;
        k *= x->dims[i];
    }
    *base = 0;
    const ts_graph_attrs *a = &nd->attrs;
    switch (nd->op) {
    case TS_OP_TRANSPOSE:
        for (int i = 0; i < y->rank; i++)
            stride[i] = xs[a->perm[i]];
        return true;
    case TS_OP_SLICE:
        for (int i = 0; i < y->rank; i++) {
            stride[i] = xs[i] * a->steps[i];
            *base += a->starts[i] * xs[i];
        }
        return true;
    case TS_OP_EXPAND:
        for (int i = 0; i < y->rank; i++) {
            int j = i - (y->rank - x->rank);
            stride[i] = j < 0 || x->dims[j] == 1 ? 0 : xs[j];
        }
        return true;
    default:
        return false;
    }
}

/* Node nd's output values from its input's, element by element (es bytes each). */
static void *rearrange(const ts_graph_node *nd, const ts_graph_tensor *x, const ts_graph_tensor *y, size_t es)
{
    int64_t n = ts_graph_tensor_elems(y), stride[TS_GRAPH_MAX_RANK], base, idx[TS_GRAPH_MAX_RANK] = {0};
    uint8_t *out = ts_malloc((size_t)n * es + 1);
    if (!out)
        return NULL;
    if (!source_strides(nd, x, y, stride, &base)) {
        memcpy(out, x->data, (size_t)n * es);
        return out;
    }
    const uint8_t *src = x->data;
    for (int64_t k = 0; k < n; k++) {
        int64_t at = base;
        for (int i = 0; i < y->rank; i++)
            at += idx[i] * stride[i];
        memcpy(out + (size_t)k * es, src + (size_t)at * es, es);
        for (int i = y->rank - 1; i >= 0 && ++idx[i] == y->dims[i]; i--)
            idx[i] = 0;
    }
    return out;
}

/* Every element a Slice reads lies inside its input (shape inference allows a start of -1). */
static bool slice_inside(const ts_graph_node *nd, const ts_graph_tensor *x, const ts_graph_tensor *y)
{
    for (int i = 0; nd->op == TS_OP_SLICE && i < y->rank; i++) {
        int64_t first = nd->attrs.starts[i], last = first + (y->dims[i] - 1) * nd->attrs.steps[i];
        if (first < 0 || first >= x->dims[i] || last < 0 || last >= x->dims[i])
            return false;
    }
    return true;
}

/* Fold a layout op of a weight or constant (see the top of the file). A weight is folded only
 * when this op is its one reader, so the parameters are not counted twice. */
static ts_status fold_layout(ts_graph *g, int node, ts_err *err)
{
    const ts_graph_node *nd = &g->n[node];
    int x = nd->in[0], y = nd->out[0], first;
    const ts_graph_tensor *xt = &g->t[x], *yt = &g->t[y];
    bool weight = xt->kind == TS_TENSOR_WEIGHT, same_count = nd->op != TS_OP_SLICE && nd->op != TS_OP_EXPAND;
    if ((!weight && xt->kind != TS_TENSOR_CONST) || yt->is_output || nd->nout != 1 || yt->rank < 0)
        return TS_OK;
    if (weight && (ts_graph_readers(g, x, &first) != 1 || xt->is_output || (!xt->data && !same_count) ||
                   nd->op == TS_OP_EXPAND))
        return TS_OK;
    if (!xt->data && !weight)
        return TS_OK;
    if (xt->data) {
        size_t es = ts_dtype_size(xt->dtype);
        /* only an Expand can make more values than its input has: the others are bounded by it */
        if ((nd->op == TS_OP_EXPAND && ts_graph_tensor_elems(yt) > FOLD_MAX_ELEMS) || !es || yt->dtype != xt->dtype ||
            !slice_inside(nd, xt, yt))
            return TS_OK;
        void *v = rearrange(nd, xt, yt, es);
        if (!v)
            return ts_err_set(err, TS_ENOMEM, "out of memory folding '%s'", nd->name);
        ts_status st = ts_graph_set_data(g, y, v, (size_t)ts_graph_tensor_elems(yt) * es, err);
        ts_free(v);
        if (st)
            return st;
    }
    g->t[y].kind = g->t[x].kind;
    g->t[y].producer = -1;
    g->dead[node] = true;
    return TS_OK;
}

ts_status ts_graph_simplify(ts_graph *g, ts_err *err)
{
    remove_identity_expand(g);
    for (size_t i = 0; i < g->nn; i++) { /* in order: a fold's output may feed the next layout op */
        if (g->dead[i])
            continue;
        ts_status st = TS_OK;
        switch (g->n[i].op) {
        case TS_OP_GATHER:
            st = gather_to_slice(g, (int)i, err);
            break;
        case TS_OP_TRANSPOSE: case TS_OP_RESHAPE: case TS_OP_FLATTEN: case TS_OP_SLICE: case TS_OP_EXPAND:
            st = fold_layout(g, (int)i, err);
            break;
        default:
            break;
        }
        if (st)
            return st;
    }
    return TS_OK;
}
