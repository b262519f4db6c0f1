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
