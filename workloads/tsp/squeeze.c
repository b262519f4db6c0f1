/* workloads/tsp/squeeze.c — rank-4 tensors of a batch of 1 read as rank 3.
 *
 * The TSP lowering reads a rank-4 tensor as an NCHW image (channels on axis 1). A transformer
 * written with a batch axis of 1 ([batch, heads, seq, head dim], the built-in `gpt`, BERT exported
 * in rank 4) holds no image: its rank-4 tensors are attention's [1, h, S, d], whose channel axis
 * is the last. When the graph has no image operator, every rank-4 activation or weight whose
 * first axis is 1 (not a graph input or output, whose layouts the callers read) is dropped to
 * [h, S, d] in a copy of the graph, the attributes of the nodes that touch it following (a
 * Transpose's perm, a Reshape's or Expand's shape, a Concat's, Softmax's or LayerNorm's axis, a
 * Slice's bounds). Tensor and node ids, names and values stay, so the report's places and layers
 * are the original graph's. Numpy broadcasting aligns the trailing axes, so dropping a leading 1
 * leaves every elementwise operator's meaning. */
#include <string.h>

#include "core/alloc.h"
#include "workloads/tsp/lower_tsp_int.h"

/* Whether tensor id is dropped to rank 3. */
static bool drops(const ts_graph *g, int id)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
    return t->rank == 4 && t->dims[0] == 1 && !t->is_output && t->kind != TS_TENSOR_INPUT;
}

/* Whether the graph holds an operator that reads rank 4 as an image. */
static bool has_images(const ts_graph *g)
{
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        switch (ts_graph_get_node(g, (int)i)->op) {
        case TS_OP_CONV:
        case TS_OP_MAXPOOL:
        case TS_OP_AVGPOOL:
        case TS_OP_GLOBALAVGPOOL:
        case TS_OP_BATCHNORM:
        case TS_OP_FLATTEN: return true;
        default: break;
        }
    }
    return false;
}

/* An axis of a dropped tensor: one less, negative ones as they are; false for axis 0. */
static bool drop_axis(int64_t *ax)
{
    if (*ax == 0 || *ax == -4)
        return false;
    if (*ax > 0)
        (*ax)--;
    return true;
}

/* The attributes of node nd with its dropped inputs (din) and outputs (dout) as rank 3; false when
 * the node cannot follow (a dropped axis 0 is moved, an input and output that disagree). */
static bool follow(const ts_graph *g, const ts_graph_node *nd, bool din, bool dout, ts_graph_attrs *a)
{
    const ts_graph_tensor *y = ts_graph_get_tensor(g, nd->out[0]);
    switch (nd->op) {
    case TS_OP_TRANSPOSE:
        if (din != dout)
            return false;
        if (din) {
            if (a->nperm != 4 || a->perm[0] != 0)
                return false;
            for (int k = 0; k < 3; k++)
                a->perm[k] = a->perm[k + 1] - 1;
            a->nperm = 3;
        }
        return true;
    case TS_OP_RESHAPE:
    case TS_OP_EXPAND:
        if (dout) {
            for (int k = 0; k < 3; k++)
                a->shape[k] = y->dims[k + 1];
            a->nshape = 3;
        }
        return nd->op == TS_OP_RESHAPE || din == dout;
    case TS_OP_CONCAT:
    case TS_OP_SOFTMAX:
    case TS_OP_LAYERNORM: return din != dout ? false : !din || drop_axis(&a->axis);
    case TS_OP_SLICE:
        if (din != dout)
            return false;
        if (din && a->nslice == 4) {
            if (a->starts[0] != 0 || a->ends[0] != 1)
                return false;
            for (int k = 0; k < 3; k++) {
                a->starts[k] = a->starts[k + 1];
                a->ends[k] = a->ends[k + 1];
                a->steps[k] = a->steps[k + 1];
            }
            a->nslice = 3;
        }
        return true;
    case TS_OP_MATMUL:
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
    case TS_OP_RELU:
    case TS_OP_GELU:
    case TS_OP_TANH:
    case TS_OP_SIGMOID:
    case TS_OP_CLIP:
    case TS_OP_HARDSWISH: return true;
    default: return !din && !dout;
    }
}

/* Tensors of g into c, dropped ones as rank 3 (activations take their shapes from inference). */
static ts_status copy_tensors(const ts_graph *g, ts_graph *c, ts_err *err)
{
    ts_status rc = TS_OK;
    for (size_t i = 0; i < ts_graph_tensor_count(g) && rc == TS_OK; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i);
        bool d = drops(g, (int)i), act = t->kind == TS_TENSOR_ACTIVATION;
        int id;
        rc = ts_graph_add_tensor(c, t->name, t->kind, t->dtype, act ? -1 : d ? 3 : t->rank, d ? t->dims + 1 : t->dims,
                                 &id, err);
        if (rc == TS_OK && t->data)
            rc = ts_graph_set_data(c, id, t->data, (size_t)ts_graph_tensor_elems(t) * ts_dtype_size(t->dtype), err);
        if (rc == TS_OK && t->is_output)
            ts_graph_mark_output(c, id);
    }
    return rc;
}

/* Whether the copy's shapes are the original's, dropped ones without their leading 1. */
static bool same_shapes(const ts_graph *g, const ts_graph *c)
{
    if (ts_graph_node_count(g) != ts_graph_node_count(c) || ts_graph_tensor_count(g) != ts_graph_tensor_count(c))
        return false;
    for (size_t i = 0; i < ts_graph_tensor_count(g); i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i), *u = ts_graph_get_tensor(c, (int)i);
        int k0 = drops(g, (int)i) ? 1 : 0;
        if (u->rank != t->rank - k0 || memcmp(u->dims, t->dims + k0, (size_t)u->rank * sizeof *u->dims))
            return false;
    }
    for (size_t i = 0; i < ts_graph_node_count(g); i++)
        if (strcmp(ts_graph_get_node(g, (int)i)->name, ts_graph_get_node(c, (int)i)->name))
            return false;
    return true;
}

ts_status lt_squeeze(const ts_graph *g, ts_graph **out, ts_err *err)
{
    *out = NULL;
    bool any = false;
    for (size_t i = 0; i < ts_graph_tensor_count(g) && !any; i++)
        any = drops(g, (int)i);
    if (!any || has_images(g))
        return TS_OK;
    ts_graph_attrs *at = ts_calloc(ts_graph_node_count(g) + 1, sizeof *at);
    if (!at)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    bool ok = true;
    for (size_t i = 0; i < ts_graph_node_count(g) && ok; i++) {
        const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
        bool din = false;
        for (size_t k = 0; k < nd->nin; k++)
            din |= drops(g, nd->in[k]);
        at[i] = nd->attrs;
        ok = nd->nout == 1 && follow(g, nd, din, drops(g, nd->out[0]), &at[i]);
    }
    ts_graph *c = ok ? ts_graph_create(ts_graph_name(g)) : NULL;
    ts_status rc = ok && !c ? ts_err_set(err, TS_ENOMEM, "out of memory") : TS_OK;
    if (c) {
        ts_graph_set_llm(c, ts_graph_llm_of(g));
        rc = copy_tensors(g, c, err);
        for (size_t i = 0; i < ts_graph_node_count(g) && rc == TS_OK; i++) {
            const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
            rc = ts_graph_add_node(c, nd->op, nd->name, nd->in, nd->nin, nd->out, nd->nout, &at[i], NULL, err);
        }
        /* a copy that does not come out as the same graph is not used: the original is lowered
         * (and refused where it must be) */
        ts_err e2;
        ts_err_init(&e2);
        if (rc == TS_OK && (ts_graph_finalize(c, &e2) != TS_OK || !same_shapes(g, c))) {
            ts_graph_destroy(c);
            c = NULL;
        }
        ts_err_free(&e2);
    }
    ts_free(at);
    if (rc != TS_OK) {
        ts_graph_destroy(c);
        c = NULL;
    }
    *out = c;
    return rc;
}

/* ---- the packed in-projection with K on a tile boundary ----
 *
 * An in-projection packed as one MatMul by a weight [C, 3 D], its bias Add and three Slices of
 * the last axis (BERT's and ViT's nn.MultiheadAttention export: Q from 0, K from D, V from 2 D),
 * where K's head split is read through Q / 8 masked per head (lt_k_view): Q's heads lie in lanes
 * (64 h) mod 320 from its Slice's start, a multiple of 320, and K's must lie in the same lanes for
 * its Slice to compute nothing. With D = 768, K's Slice starts at lane 128 of a tile. In a copy the
 * weight's columns and the bias are laid out Q, V, zeros, K, K from the next multiple of the vector
 * (1,600 for D = 768: 2,368 columns, as many tiles as 2,304), and the Slices follow; every value of
 * Q, K and V is the original's (the weight's int8 values and the bias's carried, the zero columns
 * read by no Slice). Only where the tiles stay as many. */

typedef struct qkv {
    int w, b;        /* the weight [C, 3 D] and the bias [3 D] */
    int sl[3];       /* the Slices of Q, K and V (node ids) */
    int y, z;        /* the MatMul's and the Add's outputs */
    int64_t d, koff; /* D and K's new first column */
} qkv;

/* Whether node sl is a Slice of the last axis (step 1, the other axes whole); its columns in *a .. *e. */
static bool last_slice(const ts_graph *g, const ts_graph_node *sl, int64_t *a, int64_t *e)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, sl->in[0]), *y = ts_graph_get_tensor(g, sl->out[0]);
    const ts_graph_attrs *at = &sl->attrs;
    int r = x->rank;
    if (sl->op != TS_OP_SLICE || r < 1 || y->rank != r || at->nslice != r || y->is_output)
        return false;
    for (int k = 0; k + 1 < r; k++)
        if (y->dims[k] != x->dims[k] || at->starts[k] != 0 || at->steps[k] != 1)
            return false;
    *a = at->starts[r - 1];
    *e = *a + y->dims[r - 1];
    return at->steps[r - 1] == 1 && *a >= 0 && *e <= x->dims[r - 1];
}

/* Whether MatMul mm is such an in-projection; its parts in *q. */
static bool qkv_of(const ts_graph *g, const ts_graph_node *mm, uint32_t vl, qkv *q)
{
    if (mm->op != TS_OP_MATMUL || mm->nin != 2)
        return false;
    const ts_graph_tensor *w = ts_graph_get_tensor(g, mm->in[1]);
    size_t n;
    const int *c = ts_graph_consumers(g, mm->out[0], &n);
    if ((w->kind != TS_TENSOR_WEIGHT && w->kind != TS_TENSOR_CONST) || w->rank != 2 || w->dims[1] % 3 || n != 1 ||
        ts_graph_get_tensor(g, mm->out[0])->is_output)
        return false;
    const ts_graph_node *ad = ts_graph_get_node(g, c[0]);
    int bi = ad->op == TS_OP_ADD && ad->nin == 2 ? (ad->in[0] == mm->out[0] ? 1 : 0) : -1;
    const ts_graph_tensor *b = bi >= 0 ? ts_graph_get_tensor(g, ad->in[bi]) : NULL;
    q->d = w->dims[1] / 3;
    if (!b || (b->kind != TS_TENSOR_WEIGHT && b->kind != TS_TENSOR_CONST) || b->rank != 1 || b->dims[0] != 3 * q->d ||
        b->dtype != TS_DT_F32 || ts_graph_get_tensor(g, ad->out[0])->is_output ||
        !(c = ts_graph_consumers(g, ad->out[0], &n)) || n != 3 || q->d % vl == 0)
        return false;
    q->w = mm->in[1];
    q->b = ad->in[bi];
    size_t nw, nb;
    ts_graph_consumers(g, q->w, &nw);
    ts_graph_consumers(g, q->b, &nb);
    if (nw != 1 || nb != 1 || w->is_output || b->is_output) /* read by these two alone */
        return false;
    q->y = mm->out[0];
    q->z = ad->out[0];
    unsigned seen = 0;
    for (size_t i = 0; i < 3; i++) {
        const ts_graph_node *sl = ts_graph_get_node(g, c[i]);
        int64_t a, e;
        size_t m;
        const int *s = ts_graph_consumers(g, sl->out[0], &m);
        if (!last_slice(g, sl, &a, &e) || a % q->d || e - a != q->d)
            return false;
        int k = (int)(a / q->d); /* 0 Q, 1 K, 2 V */
        const ts_graph_node *sp = m == 1 ? ts_graph_get_node(g, s[0]) : NULL;
        if ((seen >> k & 1) || (k == 1 && !(sp && sp->op == TS_OP_RESHAPE && lt_k_viewed(g, sp))))
            return false;
        seen |= 1u << k;
        q->sl[k] = c[i];
    }
    q->koff = (2 * q->d + vl - 1) / vl * vl;
    return (q->koff + q->d + vl - 1) / vl == (3 * q->d + vl - 1) / vl;
}

/* Column n of the original's 3 D in the copy's koff + D. */
static int64_t qkv_col(const qkv *q, int64_t n)
{
    return n < q->d ? n : n < 2 * q->d ? q->koff + n - q->d : n - q->d;
}

ts_status lt_qkv_pack(const ts_graph *g, uint32_t vl, ts_graph **out, ts_err *err)
{
    *out = NULL;
    size_t nn = ts_graph_node_count(g), nt = ts_graph_tensor_count(g), nq = 0;
    qkv *q = ts_calloc(nn + 1, sizeof *q);
    int *of = ts_calloc(nt + 1, sizeof *of); /* tensor: 1 + its in-projection, 0 none */
    ts_graph_attrs *at = ts_calloc(nn + 1, sizeof *at);
    ts_status rc = q && of && at ? TS_OK : ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < nn && rc == TS_OK; i++) {
        at[i] = ts_graph_get_node(g, (int)i)->attrs;
        if (qkv_of(g, ts_graph_get_node(g, (int)i), vl, &q[nq]) && !of[q[nq].w] && !of[q[nq].b]) {
            of[q[nq].w] = of[q[nq].b] = of[q[nq].y] = of[q[nq].z] = (int)nq + 1;
            nq++;
        }
    }
    for (size_t k = 0; k < nq; k++)
        for (int j = 0; j < 3; j++) {
            ts_graph_attrs *a = &at[q[k].sl[j]];
            a->starts[a->nslice - 1] = qkv_col(&q[k], j * q[k].d);
            a->ends[a->nslice - 1] = a->starts[a->nslice - 1] + q[k].d;
        }
    ts_graph *c = rc == TS_OK && nq ? ts_graph_create(ts_graph_name(g)) : NULL;
    if (rc == TS_OK && nq && !c)
        rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    void *buf = NULL;
    if (c)
        ts_graph_set_llm(c, ts_graph_llm_of(g));
    for (size_t i = 0; c && i < nt && rc == TS_OK; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i);
        bool act = t->kind == TS_TENSOR_ACTIVATION;
        const qkv *p = of[i] && !act ? &q[of[i] - 1] : NULL;
        int64_t dims[TS_GRAPH_MAX_RANK];
        memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
        if (p)
            dims[t->rank - 1] = p->koff + p->d;
        int id;
        rc = ts_graph_add_tensor(c, t->name, t->kind, p && p->w == (int)i ? TS_DT_I8 : t->dtype, act ? -1 : t->rank,
                                 dims, &id, err);
        if (rc == TS_OK && p) { /* the columns rearranged: int8 weights, f32 bias */
            int64_t rows = p->w == (int)i ? t->dims[0] : 1, cols = 3 * p->d, nc = p->koff + p->d;
            size_t es = p->w == (int)i ? 1 : 4;
            ts_free(buf);
            if (!(buf = ts_calloc((size_t)(rows * nc), es)))
                rc = ts_err_set(err, TS_ENOMEM, "out of memory");
            for (int64_t r = 0; r < rows && rc == TS_OK; r++)
                for (int64_t n = 0; n < cols; n++) {
                    uint64_t e = (uint64_t)(r * cols + n), f = (uint64_t)(r * nc + qkv_col(p, n));
                    if (es == 1)
                        ((int8_t *)buf)[f] = ts_fill_value_i8(t, (int)i, e);
                    else
                        ((float *)buf)[f] = ts_fill_value_f32(t, (int)i, e);
                }
            if (rc == TS_OK)
                rc = ts_graph_set_data(c, id, buf, (size_t)(rows * nc) * es, err);
        } else if (rc == TS_OK && t->data)
            rc = ts_graph_set_data(c, id, t->data, (size_t)ts_graph_tensor_elems(t) * ts_dtype_size(t->dtype), err);
        if (rc == TS_OK && t->is_output)
            ts_graph_mark_output(c, id);
    }
    ts_free(buf);
    for (size_t i = 0; c && i < nn && rc == TS_OK; i++) {
        const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
        rc = ts_graph_add_node(c, nd->op, nd->name, nd->in, nd->nin, nd->out, nd->nout, &at[i], NULL, err);
    }
    if (c && rc == TS_OK) { /* a copy that does not come out as the same graph is not used */
        ts_err e2;
        ts_err_init(&e2);
        bool same = ts_graph_finalize(c, &e2) == TS_OK && ts_graph_node_count(c) == nn &&
                    ts_graph_tensor_count(c) == nt;
        for (size_t i = 0; same && i < nn; i++)
            same = !strcmp(ts_graph_get_node(g, (int)i)->name, ts_graph_get_node(c, (int)i)->name);
        for (size_t i = 0; same && i < nt; i++) {
            const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i), *u = ts_graph_get_tensor(c, (int)i);
            int r = of[i] ? t->rank - 1 : t->rank; /* the in-projection's last axis is the copy's */
            same = u->rank == t->rank && !memcmp(u->dims, t->dims, (size_t)(r > 0 ? r : 0) * sizeof *u->dims);
        }
        ts_err_free(&e2);
        if (!same) {
            ts_graph_destroy(c);
            c = NULL;
        }
    }
    if (rc != TS_OK) {
        ts_graph_destroy(c);
        c = NULL;
    }
    ts_free(q);
    ts_free(of);
    ts_free(at);
    *out = c;
    return rc;
}
