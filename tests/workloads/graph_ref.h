/* tests/workloads/graph_ref.h — a double-precision interpreter of a graph, the C reference of
 * whole-model tests: every input, weight and constant takes the value the lowerings give it
 * (ts_fill_value_f32: its data, or the deterministic fill, rounded to f16 for an f16 tensor), and
 * every node computes in double in graph order. Operators: MatMul (batched, numpy broadcasting),
 * Add, Sub, Mul, Div (numpy broadcasting), Reshape, Transpose, Concat, Slice (steps of 1),
 * Softmax, LayerNormalization and RMSNormalization (over the last axis), Gelu (both forms),
 * Sigmoid, Tanh, Relu. Any other operator fails the test that asks. Included after check.h. */
#ifndef TS_TESTS_WORKLOADS_GRAPH_REF_H
#define TS_TESTS_WORKLOADS_GRAPH_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/graph.h"
#include "workloads/lower/fill.h"

typedef struct gref {
    double **v; /* per tensor id: its values, or NULL */
    size_t n;
} gref;

/* Row-major strides of t. */
static inline void gref_strides(const ts_graph_tensor *t, int64_t *st)
{
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= t->dims[i];
    }
}

/* The index into a (of rank ra, broadcast to out's rank ro) of out's multi-index idx. */
static inline int64_t gref_bcast(const ts_graph_tensor *a, int ro, const int64_t *idx)
{
    int64_t st[TS_GRAPH_MAX_RANK], k = 0;
    gref_strides(a, st);
    for (int i = 0; i < a->rank; i++) {
        int j = ro - a->rank + i;
        k += (a->dims[i] == 1 ? 0 : idx[j]) * st[i];
    }
    return k;
}

static inline void gref_unravel(const ts_graph_tensor *t, int64_t k, int64_t *idx)
{
    for (int i = t->rank - 1; i >= 0; i--) {
        idx[i] = k % t->dims[i];
        k /= t->dims[i];
    }
}

static inline double gref_gelu(double x, bool tanh_form)
{
    if (tanh_form)
        return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static inline void gref_node(const ts_graph *g, gref *r, const ts_graph_node *n)
{
    const ts_graph_tensor *y = ts_graph_get_tensor(g, n->out[0]), *a = ts_graph_get_tensor(g, n->in[0]);
    int64_t ny = ts_graph_tensor_elems(y), idx[TS_GRAPH_MAX_RANK];
    double *o = calloc((size_t)(ny ? ny : 1), sizeof *o), *x = r->v[n->in[0]];
    ck_assert_ptr_nonnull(o);
    ck_assert_ptr_nonnull(x);
    const ts_graph_attrs *at = &n->attrs;
    switch (n->op) {
    case TS_OP_ADD: case TS_OP_SUB: case TS_OP_MUL: case TS_OP_DIV: {
        const ts_graph_tensor *b = ts_graph_get_tensor(g, n->in[1]);
        const double *w = r->v[n->in[1]];
        for (int64_t k = 0; k < ny; k++) {
            gref_unravel(y, k, idx);
            double p = x[gref_bcast(a, y->rank, idx)], q = w[gref_bcast(b, y->rank, idx)];
            o[k] = n->op == TS_OP_ADD ? p + q : n->op == TS_OP_SUB ? p - q : n->op == TS_OP_MUL ? p * q : p / q;
        }
        break;
    }
    case TS_OP_MATMUL: {
        const ts_graph_tensor *b = ts_graph_get_tensor(g, n->in[1]);
        const double *w = r->v[n->in[1]];
        ck_assert(a->rank >= 2 && b->rank >= 2);
        int64_t M = a->dims[a->rank - 2], K = a->dims[a->rank - 1], N = b->dims[b->rank - 1];
        int64_t sa[TS_GRAPH_MAX_RANK], sb[TS_GRAPH_MAX_RANK];
        gref_strides(a, sa);
        gref_strides(b, sb);
        for (int64_t k = 0; k < ny; k++) {
            gref_unravel(y, k, idx);
            int64_t i = idx[y->rank - 2], j = idx[y->rank - 1], ba = 0, bb = 0;
            for (int d = 0; d < a->rank - 2; d++)
                ba += (a->dims[d] == 1 ? 0 : idx[y->rank - a->rank + d]) * sa[d];
            for (int d = 0; d < b->rank - 2; d++)
                bb += (b->dims[d] == 1 ? 0 : idx[y->rank - b->rank + d]) * sb[d];
            double s = 0;
            for (int64_t q = 0; q < K; q++)
                s += x[ba + i * K + q] * w[bb + q * N + j];
            o[k] = s;
        }
        (void)M;
        break;
    }
    case TS_OP_GEMM: { /* 2-d: alpha A' B' + beta C, C broadcast to [M, N] */
        const ts_graph_tensor *b = ts_graph_get_tensor(g, n->in[1]);
        const double *w = r->v[n->in[1]], *c = n->nin > 2 ? r->v[n->in[2]] : NULL;
        ck_assert(a->rank == 2 && b->rank == 2 && y->rank == 2);
        const int64_t K = at->trans_a ? a->dims[0] : a->dims[1], N = y->dims[1];
        for (int64_t k = 0; k < ny; k++) {
            gref_unravel(y, k, idx);
            const int64_t i = idx[0], j = idx[1];
            double t = 0;
            for (int64_t q = 0; q < K; q++)
                t += x[at->trans_a ? q * a->dims[1] + i : i * K + q] * w[at->trans_b ? j * K + q : q * N + j];
            o[k] = at->alpha * t + (c ? at->beta * c[gref_bcast(ts_graph_get_tensor(g, n->in[2]), 2, idx)] : 0.0);
        }
        break;
    }
    case TS_OP_RESHAPE:
        memcpy(o, x, (size_t)ny * sizeof *o);
        break;
    case TS_OP_TRANSPOSE: case TS_OP_SLICE: { /* each output axis steps through the input by a stride */
        int64_t sa[TS_GRAPH_MAX_RANK], st[TS_GRAPH_MAX_RANK], base = 0;
        gref_strides(a, sa);
        for (int d = 0; d < y->rank; d++) {
            bool tr = n->op == TS_OP_TRANSPOSE;
            ck_assert(tr || at->steps[d] == 1);
            st[d] = sa[tr ? at->perm[d] : d];
            base += tr ? 0 : at->starts[d] * sa[d];
        }
        for (int64_t k = 0; k < ny; k++) {
            gref_unravel(y, k, idx);
            int64_t s = base;
            for (int d = 0; d < y->rank; d++)
                s += idx[d] * st[d];
            o[k] = x[s];
        }
        break;
    }
    case TS_OP_CONCAT: {
        int64_t ax = at->axis < 0 ? at->axis + y->rank : at->axis;
        for (int64_t k = 0; k < ny; k++) {
            gref_unravel(y, k, idx);
            int64_t pos = idx[ax];
            size_t i = 0;
            const ts_graph_tensor *t = ts_graph_get_tensor(g, n->in[0]);
            while (pos >= t->dims[ax]) {
                pos -= t->dims[ax];
                t = ts_graph_get_tensor(g, n->in[++i]);
            }
            int64_t st[TS_GRAPH_MAX_RANK], s = 0;
            gref_strides(t, st);
            for (int d = 0; d < y->rank; d++)
                s += (d == ax ? pos : idx[d]) * st[d];
            o[k] = r->v[n->in[i]][s];
        }
        break;
    }
    case TS_OP_SOFTMAX: case TS_OP_LAYERNORM: case TS_OP_RMSNORM: {
        int64_t L = y->dims[y->rank - 1];
        int64_t ax = at->axis < 0 ? at->axis + y->rank : at->axis;
        ck_assert_int_eq(ax, y->rank - 1);
        const double *sc = n->op != TS_OP_SOFTMAX && n->nin > 1 ? r->v[n->in[1]] : NULL;
        const double *bi = n->op == TS_OP_LAYERNORM && n->nin > 2 ? r->v[n->in[2]] : NULL;
        for (int64_t row = 0; row < ny / L; row++) {
            const double *p = x + row * L;
            double *q = o + row * L, m = 0, s = 0;
            if (n->op == TS_OP_SOFTMAX) {
                m = p[0];
                for (int64_t j = 1; j < L; j++)
                    m = fmax(m, p[j]);
                for (int64_t j = 0; j < L; j++)
                    s += (q[j] = exp(p[j] - m));
                for (int64_t j = 0; j < L; j++)
                    q[j] /= s;
                continue;
            }
            if (n->op == TS_OP_LAYERNORM)
                for (int64_t j = 0; j < L; j++)
                    m += p[j] / (double)L;
            for (int64_t j = 0; j < L; j++)
                s += (p[j] - m) * (p[j] - m) / (double)L;
            for (int64_t j = 0; j < L; j++)
                q[j] = (p[j] - m) / sqrt(s + at->epsilon) * (sc ? sc[j] : 1.0) + (bi ? bi[j] : 0.0);
        }
        break;
    }
    case TS_OP_GELU: case TS_OP_SIGMOID: case TS_OP_TANH: case TS_OP_RELU:
        for (int64_t k = 0; k < ny; k++) {
            double v = x[k];
            o[k] = n->op == TS_OP_GELU ? gref_gelu(v, at->approximate_tanh)
                   : n->op == TS_OP_SIGMOID ? 1.0 / (1.0 + exp(-v))
                   : n->op == TS_OP_TANH ? tanh(v) : fmax(v, 0.0);
        }
        break;
    default:
        ck_abort_msg("the reference has no %s (node '%s')", ts_graph_op_name(n->op), n->name);
    }
    r->v[n->out[0]] = o;
}

/* Every tensor of g: the values of its inputs, weights and constants, then of every node. */
static inline void gref_run(const ts_graph *g, gref *r)
{
    r->n = ts_graph_tensor_count(g);
    r->v = calloc(r->n, sizeof *r->v);
    ck_assert_ptr_nonnull(r->v);
    for (size_t i = 0; i < r->n; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i);
        if (t->kind == TS_TENSOR_ACTIVATION)
            continue;
        int64_t e = ts_graph_tensor_elems(t);
        r->v[i] = calloc((size_t)(e ? e : 1), sizeof(double));
        ck_assert_ptr_nonnull(r->v[i]);
        for (int64_t k = 0; k < e; k++)
            r->v[i][k] = ts_fill_value_f32(t, (int)i, (uint64_t)k);
    }
    for (size_t i = 0; i < ts_graph_node_count(g); i++)
        gref_node(g, r, ts_graph_get_node(g, (int)i));
}

static inline void gref_free(gref *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i]);
    free(r->v);
}

#endif
