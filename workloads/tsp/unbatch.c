/* workloads/tsp/unbatch.c — a batch of independent samples read as its batch-1 graph.
 *
 * The TSP's schedule is one static program without loops, so a batch lowered as it is unrolls:
 * ResNet-50 at batch 8 and BERT-base at batch 4 do not fit (their text, or their constants, run out
 * of MEM words). Where no operator mixes the samples, the lowering compiles the batch-1 graph instead
 * and the program runs once per sample (docs/lowering-tsp.md, *Batches and groups*).
 *
 * The batch axis of every tensor is found by propagation from the data inputs: an axis of each
 * input of the batch's length N (axis 0 first, then the others: nn.TransformerEncoder without
 * batch_first carries the batch on axis 1), followed through every operator, which must keep the
 * samples apart (a Conv's or a pool's images, a MatMul's rows or batched axes, the axes a
 * LayerNorm, Softmax or ReduceMean does not reduce, a Reshape that keeps each sample's elements
 * together, a Transpose moving the axis, ...). The batch may be the outer factor of an axis a
 * Reshape merged (torch's [S, N, D] to [S, N h, d]); a tensor's axis then holds N times the
 * sample's length, samples outermost. Constants and weights that carry the batch's length on that
 * axis (a ConstantOfShape or an Expand folded on import) are cut to one sample's part, which every
 * sample must share where the values are carried. The copy keeps tensor and node ids, names and
 * values (inputs take sample 0's), with every batch axis divided by N, the attributes that carry the
 * batch following (a Reshape's or Expand's shape, a Slice's end); it is finalized again and must
 * come out with exactly those shapes.
 */
#include "workloads/tsp/unbatch.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/lower/fill.h"

/* The propagation's state: per tensor its batch axis (-1: none) and, for a weight or constant that
 * must be cut, the axis to cut (-1: none). */
typedef struct ub {
    const ts_graph *g;
    int64_t N;
    int *ax, *cut;
    int64_t *in;          /* per tensor: the samples' block on their axis (1: the samples outermost) */
    ts_graph_attrs *at;
    char *why;
    size_t cap;
} ub;

static bool refuse(ub *u, const ts_graph_node *nd, const char *what)
{
    snprintf(u->why, u->cap, "%s '%s' %s", ts_graph_op_name(nd->op), nd->name, what);
    return false;
}

static const ts_graph_tensor *T(const ub *u, int id)
{
    return ts_graph_get_tensor(u->g, id);
}

/* A tensor without the batch whose length on axis a (its own) is the batch's length there: a
 * weight or constant is cut to one sample's part; anything else mixes. */
static bool cut_or_refuse(ub *u, const ts_graph_node *nd, int id, int a, int64_t full, int64_t in)
{
    const ts_graph_tensor *t = T(u, id);
    if (a < 0 || t->dims[a] == 1)
        return true;
    if (t->dims[a] != full || full % u->N)
        return refuse(u, nd, "broadcasts a tensor across the samples");
    if (t->kind != TS_TENSOR_WEIGHT && t->kind != TS_TENSOR_CONST)
        return refuse(u, nd, "reads a tensor of the batch's length that does not carry the samples");
    if (u->cut[id] >= 0 && (u->cut[id] != a || u->in[id] != in))
        return refuse(u, nd, "reads a constant cut on two axes");
    u->cut[id] = a;
    u->in[id] = in;
    return true;
}

/* Elementwise with numpy broadcasting. */
static bool ewise(ub *u, const ts_graph_node *nd)
{
    const ts_graph_tensor *y = T(u, nd->out[0]);
    int r = y->rank, oa = -1;
    for (size_t i = 0; i < nd->nin; i++) {
        int a = u->ax[nd->in[i]];
        if (a < 0)
            continue;
        int o = a + r - T(u, nd->in[i])->rank;
        if (oa >= 0 && o != oa)
            return refuse(u, nd, "adds samples of two tensors whose batch axes differ");
        if (T(u, nd->in[i])->dims[a] != y->dims[o] || u->in[nd->in[i]] != u->in[nd->out[0]])
            return refuse(u, nd, "broadcasts the samples");
        oa = o;
    }
    if (oa < 0)
        return true;
    for (size_t i = 0; i < nd->nin; i++)
        if (u->ax[nd->in[i]] < 0 && !cut_or_refuse(u, nd, nd->in[i], oa - (r - T(u, nd->in[i])->rank), y->dims[oa],
                                                     u->in[nd->out[0]]))
            return false;
    u->ax[nd->out[0]] = oa;
    return true;
}

/* Inputs past the first must not carry the batch. */
static bool only_first(ub *u, const ts_graph_node *nd)
{
    for (size_t i = 1; i < nd->nin; i++)
        if (u->ax[nd->in[i]] >= 0)
            return refuse(u, nd, "takes the batch in an input other than its first");
    return true;
}

/* The axis of a reshape's output y that holds the samples of input x (axis a, blocks of in): the
 * reshape keeps the elements' order, so the samples' stride (in times the elements after axis a)
 * stays and lies within one output axis o, whose length must hold N blocks of *oin; -1 if none. */
static int reshape_axis(const ts_graph_tensor *x, int a, int64_t in, const ts_graph_tensor *y, int64_t N,
                        int64_t *oin)
{
    int64_t stride = in;
    for (int k = a + 1; k < x->rank; k++)
        stride *= x->dims[k];
    int64_t after = 1;
    for (int o = y->rank - 1; o >= 0; o--) {
        if (stride >= after && stride < after * y->dims[o]) {
            if (stride % after || y->dims[o] % (stride / after * N))
                return -1;
            *oin = stride / after;
            return o;
        }
        after *= y->dims[o];
    }
    return -1;
}

/* follow's layout operators: Transpose, Reshape, Flatten, Expand, Concat, Slice, Gather. */
static bool follow_layout(ub *u, const ts_graph_node *nd, ts_graph_attrs *at)
{
    const ts_graph_tensor *x = T(u, nd->in[0]), *y = T(u, nd->out[0]);
    int a = u->ax[nd->in[0]], out = nd->out[0];
    switch (nd->op) {
    case TS_OP_TRANSPOSE:
        for (int k = 0; k < y->rank; k++)
            if ((at->nperm ? at->perm[k] : y->rank - 1 - k) == a)
                u->ax[out] = k;
        return true;
    case TS_OP_RESHAPE:
    case TS_OP_FLATTEN: {
        int64_t oin = 1;
        int o = a < 0 ? -1 : reshape_axis(x, a, u->in[nd->in[0]], y, u->N, &oin);
        if (o < 0)
            return refuse(u, nd, "moves elements between the samples");
        u->in[out] = oin;
        if (nd->op == TS_OP_RESHAPE) {
            for (int k = 0; k < y->rank; k++)
                at->shape[k] = y->dims[k];
            at->nshape = y->rank;
            at->shape[o] /= u->N;
        }
        u->ax[out] = o;
        return true;
    }
    case TS_OP_EXPAND: {
        int o = a + y->rank - x->rank;
        if (x->dims[a] != y->dims[o])
            return refuse(u, nd, "expands along the samples");
        for (int k = 0; k < at->nshape; k++)
            if (k == o - (y->rank - at->nshape))
                at->shape[k] = at->shape[k] == 1 ? 1 : y->dims[o] / u->N;
        u->ax[out] = o;
        return true;
    }
    case TS_OP_CONCAT: {
        int k = (int)ts_graph_norm_axis(at->axis, y->rank), o = -1;
        for (size_t i = 0; i < nd->nin; i++)
            if (u->ax[nd->in[i]] >= 0) {
                if (o >= 0 && (u->ax[nd->in[i]] != o || u->in[nd->in[i]] != u->in[out]))
                    return refuse(u, nd, "joins tensors whose batch axes differ");
                o = u->ax[nd->in[i]];
            }
        if (o == k)
            return refuse(u, nd, "joins along the samples");
        for (size_t i = 0; i < nd->nin; i++)
            if (u->ax[nd->in[i]] < 0 && !cut_or_refuse(u, nd, nd->in[i], o, y->dims[o], u->in[out]))
                return false;
        u->ax[out] = o;
        return true;
    }
    case TS_OP_SLICE:
        if (at->nslice > a && (at->starts[a] != 0 || at->ends[a] != x->dims[a] || at->steps[a] != 1))
            return refuse(u, nd, "slices across the samples");
        if (at->nslice > a)
            at->ends[a] = x->dims[a] / u->N;
        u->ax[out] = a;
        return true;
    case TS_OP_GATHER: {
        int k = (int)ts_graph_norm_axis(at->axis, x->rank), ia = u->ax[nd->in[1]];
        if (a >= 0 && ia >= 0)
            return refuse(u, nd, "gathers samples by indices of the samples");
        if (a >= 0) {
            if (a == k)
                return refuse(u, nd, "gathers along the samples");
            u->ax[out] = a < k ? a : a + T(u, nd->in[1])->rank - 1;
        } else {
            u->ax[out] = k + ia;
        }
        return true;
    }
    default: return refuse(u, nd, "is not known to keep the samples apart");
    }
}

/* How node nd carries the batch: its output's axis, its attributes for the batch-1 copy. */
static bool follow(ub *u, size_t ni)
{
    const ts_graph_node *nd = ts_graph_get_node(u->g, (int)ni);
    bool any = false;
    for (size_t i = 0; i < nd->nin; i++)
        any |= u->ax[nd->in[i]] >= 0;
    if (!any)
        return true; /* computes on constants and weights alone */
    if (nd->nout != 1)
        return refuse(u, nd, "has more than one output");
    const ts_graph_tensor *x = T(u, nd->in[0]), *y = T(u, nd->out[0]);
    int a = u->ax[nd->in[0]], out = nd->out[0];
    ts_graph_attrs *at = &u->at[ni];
    for (size_t i = 0; i < nd->nin; i++) /* the samples' block passes on, but through a reshape */
        if (u->ax[nd->in[i]] >= 0) {
            u->in[out] = u->in[nd->in[i]];
            break;
        }
    switch (nd->op) {
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
    case TS_OP_POW:
    case TS_OP_SQRT:
    case TS_OP_RELU:
    case TS_OP_CLIP:
    case TS_OP_HARDSWISH:
    case TS_OP_SIGMOID:
    case TS_OP_TANH:
    case TS_OP_ERF:
    case TS_OP_GELU:
    case TS_OP_CAST: return ewise(u, nd);
    case TS_OP_CONV:
    case TS_OP_MAXPOOL:
    case TS_OP_AVGPOOL:
    case TS_OP_GLOBALAVGPOOL:
    case TS_OP_BATCHNORM:
        if (a != 0 || x->rank != 4)
            return refuse(u, nd, "reads an image whose batch is not its axis 0");
        u->ax[out] = 0;
        return only_first(u, nd);
    case TS_OP_LAYERNORM:
    case TS_OP_SOFTMAX: {
        int k = (int)ts_graph_norm_axis(at->axis, x->rank);
        if (a < 0 || (nd->op == TS_OP_LAYERNORM ? a >= k : a == k))
            return refuse(u, nd, "normalises across the samples");
        u->ax[out] = a;
        return only_first(u, nd);
    }
    case TS_OP_REDUCEMEAN: {
        if (a < 0 || !at->naxes)
            return refuse(u, nd, "reduces across the samples");
        int o = a;
        for (int k = 0; k < at->naxes; k++) {
            int r = (int)ts_graph_norm_axis(at->axes[k], x->rank);
            if (r == a)
                return refuse(u, nd, "reduces across the samples");
            if (r < a && !at->keepdims)
                o--;
        }
        u->ax[out] = o;
        return true;
    }
    case TS_OP_MATMUL: {
        const ts_graph_tensor *b = T(u, nd->in[1]);
        int bb = u->ax[nd->in[1]], r = y->rank;
        if (x->rank < 2 || b->rank < 2)
            return refuse(u, nd, "multiplies a vector of the batch");
        if ((a >= 0 && a == x->rank - 1) || (bb >= 0 && bb == b->rank - 2))
            return refuse(u, nd, "sums over the samples");
        int oa = a < 0 ? -1 : a == x->rank - 2 ? r - 2 : a + r - x->rank;
        int ob = bb < 0 ? -1 : bb == b->rank - 1 ? r - 1 : bb + r - b->rank;
        if (oa >= 0 && ob >= 0 && (oa != ob || oa >= r - 2 || u->in[nd->in[0]] != u->in[nd->in[1]]))
            return refuse(u, nd, "multiplies the samples of one operand by those of the other");
        int o = oa >= 0 ? oa : ob;
        if (o < r - 2) { /* a batched axis: the other operand broadcasts along it or is cut */
            int other = oa >= 0 ? 1 : 0;
            const ts_graph_tensor *t = T(u, nd->in[other]);
            if (u->ax[nd->in[other]] < 0 &&
                !cut_or_refuse(u, nd, nd->in[other], o - (r - t->rank), y->dims[o], u->in[out]))
                return false;
        }
        u->ax[out] = o;
        return true;
    }
    case TS_OP_GEMM:
        if (a != (at->trans_a ? 1 : 0))
            return refuse(u, nd, "reads the batch on its reduction axis");
        for (size_t i = 1; i < nd->nin; i++)
            if (u->ax[nd->in[i]] >= 0)
                return refuse(u, nd, "takes the batch in an input other than its first");
        if (nd->nin > 2 && T(u, nd->in[2])->rank == 2 && !cut_or_refuse(u, nd, nd->in[2], 0, y->dims[0], u->in[out]))
            return false;
        u->ax[out] = 0;
        return true;
    default: return follow_layout(u, nd, at);
    }
}

/* The batch from the data inputs with axis `cand` of the first one (0, or 1 for a seq-first layout
 * behind a first axis longer than 1; never the last axis, the features; at most LT_BATCH_MAX): the batch's length and every
 * input's axis; false when an input has no axis of that length. */
static bool inputs_axes(ub *u, int cand)
{
    size_t nt = ts_graph_tensor_count(u->g);
    u->N = 0;
    for (size_t i = 0; i < nt; i++) {
        const ts_graph_tensor *t = T(u, (int)i);
        u->ax[i] = u->cut[i] = -1;
        u->in[i] = 1;
        if (t->kind != TS_TENSOR_INPUT)
            continue;
        if (!u->N) { /* axis 1 only behind a first axis of more than 1 (seq-first), never the last */
            if (cand >= t->rank - 1 || t->dims[cand] < 2 || t->dims[cand] > LT_BATCH_MAX || (cand && t->dims[0] < 2))
                return false;
            u->N = t->dims[cand];
        }
        int a = cand < t->rank && t->dims[cand] == u->N ? cand : -1;
        for (int k = 0; k < t->rank && a < 0; k++)
            if (t->dims[k] == u->N)
                a = k;
        if (a < 0)
            return false;
        u->ax[i] = a;
    }
    return u->N > 1;
}

/* Propagate the batch with candidate axis cand of the first input; false with u->why set where an
 * operator mixes the samples or an output does not carry them. */
static bool propagate(ub *u, int cand)
{
    size_t nn = ts_graph_node_count(u->g);
    if (!inputs_axes(u, cand))
        return false;
    for (size_t i = 0; i < nn; i++) {
        u->at[i] = ts_graph_get_node(u->g, (int)i)->attrs;
        if (!follow(u, i))
            return false;
    }
    for (size_t i = 0; i < ts_graph_tensor_count(u->g); i++) {
        const ts_graph_tensor *t = T(u, (int)i);
        if (t->is_output && u->ax[i] < 0) {
            snprintf(u->why, u->cap, "output '%s' does not carry the samples", t->name);
            return false;
        }
    }
    return true;
}

/* Sample s's part of tensor t cut on axis a into n parts (NULL when t carries no values), as int8 for
 * a data input (its values as the lowering of the whole batch gives them, ts_fill_value_i8). */
static void *part(const ts_graph_tensor *t, int id, int a, int64_t in, int64_t n, int64_t s, bool as_i8,
                  size_t *bytes)
{
    int64_t outer = t->dims[a] / (n * in), blk = in; /* element (o, s, r): o N blk + s blk + r */
    for (int k = 0; k < a; k++)
        outer *= t->dims[k];
    for (int k = a + 1; k < t->rank; k++)
        blk *= t->dims[k];
    size_t es = as_i8 ? 1 : ts_dtype_size(t->dtype);
    *bytes = (size_t)(outer * blk) * es;
    if (!as_i8 && !t->data)
        return NULL;
    uint8_t *d = ts_malloc(*bytes ? *bytes : 1);
    if (!d)
        return NULL;
    for (int64_t o = 0; o < outer; o++) {
        uint64_t src = (uint64_t)((o * n + s) * blk);
        if (as_i8)
            for (int64_t e = 0; e < blk; e++)
                d[o * blk + e] = (uint8_t)ts_fill_value_i8(t, id, src + (uint64_t)e);
        else
            memcpy(d + (size_t)(o * blk) * es, (const uint8_t *)t->data + src * es, (size_t)blk * es);
    }
    return d;
}

/* Whether every sample's part of a cut constant equals sample 0's. */
static bool parts_equal(const ts_graph_tensor *t, int a, int64_t in, int64_t n)
{
    if (!t->data)
        return true;
    size_t b0, bs;
    void *p0 = part(t, -1, a, in, n, 0, false, &b0);
    bool eq = p0 != NULL;
    for (int64_t s = 1; s < n && eq; s++) {
        void *ps = part(t, -1, a, in, n, s, false, &bs);
        eq = ps && !memcmp(p0, ps, b0);
        ts_free(ps);
    }
    ts_free(p0);
    return eq;
}

struct lt_batch {
    int64_t n;
    int *ax, *cut;          /* owned, per tensor of the batch graph */
    int64_t *in;            /* owned, per tensor: the samples' block on their axis */
    ts_graph_attrs *at;     /* owned, per node */
    const ts_graph *g;      /* borrowed: the batch graph */
};

void lt_batch_free(lt_batch *b)
{
    if (!b)
        return;
    ts_free(b->ax);
    ts_free(b->cut);
    ts_free(b->in);
    ts_free(b->at);
    ts_free(b);
}

int64_t lt_batch_block(const lt_batch *b, int tensor)
{
    return b->in[tensor];
}

int64_t lt_batch_n(const lt_batch *b)
{
    return b->n;
}

int lt_batch_axis(const lt_batch *b, int tensor)
{
    return b->ax[tensor];
}

ts_status lt_batch_find(const ts_graph *g, lt_batch **out, char *why, size_t cap, ts_err *err)
{
    *out = NULL;
    why[0] = 0;
    size_t nt = ts_graph_tensor_count(g), nn = ts_graph_node_count(g);
    ub u = {.g = g, .why = why, .cap = cap};
    u.ax = ts_calloc(nt + 1, sizeof *u.ax);
    u.cut = ts_calloc(nt + 1, sizeof *u.cut);
    u.in = ts_calloc(nt + 1, sizeof *u.in);
    u.at = ts_calloc(nn + 1, sizeof *u.at);
    lt_batch *b = ts_calloc(1, sizeof *b);
    if (!u.ax || !u.cut || !u.in || !u.at || !b) {
        ts_free(u.ax);
        ts_free(u.cut);
        ts_free(u.in);
        ts_free(u.at);
        ts_free(b);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    /* the first input's axes of length 2 or more, axis 0 first; the first reason stands */
    char first[256] = "";
    bool ok = false;
    int rank = 0;
    for (size_t i = 0; i < nt && !rank; i++)
        if (T(&u, (int)i)->kind == TS_TENSOR_INPUT)
            rank = T(&u, (int)i)->rank;
    for (int cand = 0; cand < 2 && !ok; cand++) {
        why[0] = 0;
        ok = propagate(&u, cand);
        if (!ok && !first[0] && why[0])
            snprintf(first, sizeof first, "%s", why);
    }
    for (size_t i = 0; i < nt && ok; i++)
        if (u.cut[i] >= 0 && !parts_equal(T(&u, (int)i), u.cut[i], u.in[i], u.N)) {
            snprintf(why, cap, "constant '%s' differs between the samples", T(&u, (int)i)->name);
            ok = false;
        }
    if (!ok) {
        if (first[0])
            snprintf(why, cap, "%s", first);
        else if (!why[0])
            snprintf(why, cap, "the graph has no batch of 2 or more samples");
        ts_free(u.ax);
        ts_free(u.cut);
        ts_free(u.in);
        ts_free(u.at);
        ts_free(b);
        return TS_OK;
    }
    b->n = u.N;
    b->ax = u.ax;
    b->cut = u.cut;
    b->in = u.in;
    b->at = u.at;
    b->g = g;
    *out = b;
    return TS_OK;
}

/* Whether c's shapes are g's with every batch axis divided by n. */
static bool same_shapes(const lt_batch *b, const ts_graph *c)
{
    const ts_graph *g = b->g;
    if (ts_graph_node_count(g) != ts_graph_node_count(c) || ts_graph_tensor_count(g) != ts_graph_tensor_count(c))
        return false;
    for (size_t i = 0; i < ts_graph_tensor_count(g); i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i), *v = ts_graph_get_tensor(c, (int)i);
        int a = b->ax[i] >= 0 ? b->ax[i] : b->cut[i];
        if (v->rank != t->rank)
            return false;
        for (int k = 0; k < t->rank; k++)
            if (v->dims[k] != (k == a ? t->dims[k] / b->n : t->dims[k]))
                return false;
    }
    for (size_t i = 0; i < ts_graph_node_count(g); i++)
        if (strcmp(ts_graph_get_node(g, (int)i)->name, ts_graph_get_node(c, (int)i)->name))
            return false;
    return true;
}

ts_status lt_batch_sample(const lt_batch *b, int64_t s, bool flip, ts_graph **out, ts_err *err)
{
    const ts_graph *g = b->g;
    *out = NULL;
    ts_graph *c = ts_graph_create(ts_graph_name(g));
    if (!c)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    const ts_graph_llm *llm = ts_graph_llm_of(g);
    if (llm) {
        ts_graph_llm l1 = *llm;
        l1.batch = 1;
        ts_graph_set_llm(c, &l1);
    }
    ts_status rc = TS_OK;
    for (size_t i = 0; i < ts_graph_tensor_count(g) && rc == TS_OK; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i);
        bool act = t->kind == TS_TENSOR_ACTIVATION, in = t->kind == TS_TENSOR_INPUT;
        int a = b->ax[i] >= 0 ? b->ax[i] : b->cut[i];
        int64_t d[TS_GRAPH_MAX_RANK];
        for (int k = 0; k < t->rank && k < TS_GRAPH_MAX_RANK; k++)
            d[k] = k == a ? t->dims[k] / b->n : t->dims[k];
        int id;
        rc = ts_graph_add_tensor(c, t->name, t->kind, in ? TS_DT_I8 : t->dtype, act ? -1 : t->rank, d, &id, err);
        if (rc != TS_OK || act)
            continue;
        size_t bytes;
        void *v = a >= 0 ? part(t, (int)i, a, b->in[i], b->n, in ? s : 0, in, &bytes) : NULL;
        for (size_t k = 0; in && flip && v && k < bytes; k++)
            ((uint8_t *)v)[k] ^= 0xff;
        if (a >= 0 && !v && (in || t->data))
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
        else if (v)
            rc = ts_graph_set_data(c, id, v, bytes, err);
        else if (t->data)
            rc = ts_graph_set_data(c, id, t->data, (size_t)ts_graph_tensor_elems(t) * ts_dtype_size(t->dtype), err);
        ts_free(v);
    }
    for (size_t i = 0; i < ts_graph_tensor_count(g) && rc == TS_OK; i++)
        if (ts_graph_get_tensor(g, (int)i)->is_output)
            ts_graph_mark_output(c, (int)i);
    for (size_t i = 0; i < ts_graph_node_count(g) && rc == TS_OK; i++) {
        const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
        rc = ts_graph_add_node(c, nd->op, nd->name, nd->in, nd->nin, nd->out, nd->nout, &b->at[i], NULL, err);
    }
    if (rc == TS_OK && (rc = ts_graph_finalize(c, err)) == TS_OK && !same_shapes(b, c))
        rc = ts_err_set(err, TS_EINTERNAL, "the graph of one sample did not come out with the batch's shapes");
    if (rc != TS_OK) {
        ts_graph_destroy(c);
        return rc;
    }
    *out = c;
    return TS_OK;
}
