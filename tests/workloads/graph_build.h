/* tests/workloads/graph_build.h — building small graphs through the workloads API in the lowering
 * tests (each call asserts that it succeeded), and the deterministic values they fill weights and
 * inputs with. */
#ifndef TS_TESTS_WORKLOADS_GRAPH_BUILD_H
#define TS_TESTS_WORKLOADS_GRAPH_BUILD_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/graph.h"

static inline int tensor_dt(ts_graph *g, const char *name, ts_tensor_kind kind, ts_dtype dt, int rank,
                            const int64_t *dims)
{
    ts_err e;
    ts_err_init(&e);
    int id = -1;
    ck_assert_msg(ts_graph_add_tensor(g, name, kind, dt, rank, dims, &id, &e) == TS_OK, "%s", e.msg);
    return id;
}

/* An f32 tensor. */
static inline int tensor(ts_graph *g, const char *name, ts_tensor_kind kind, int rank, const int64_t *dims)
{
    return tensor_dt(g, name, kind, TS_DT_F32, rank, dims);
}

/* Values in [-1, 1) for element k of tensor id, varied so that products are not trivial. */
static inline float val(int id, int64_t k) { return (float)((k * 37 + id * 11) % 97) / 48.0f - 1.0f; }

/* Give f32 tensor id the data val(id, k) x scale, or with `magnitude` |val(id, k)| x scale. */
static inline void fill_values(ts_graph *g, int id, float scale, bool magnitude)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
    int64_t n = ts_graph_tensor_elems(t);
    float *v = ts_calloc((size_t)n, 4);
    ck_assert_ptr_nonnull(v);
    for (int64_t k = 0; k < n; k++) {
        float x = val(id, k);
        v[k] = (magnitude && x < 0 ? -x : x) * scale;
    }
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, id, v, (size_t)n * 4, &e), TS_OK);
    ts_free(v);
}

/* Give f32 tensor id the data val(id, k) x scale. */
static inline void fill_scaled(ts_graph *g, int id, float scale) { fill_values(g, id, scale, false); }

static inline void fill(ts_graph *g, int id) { fill_scaled(g, id, 1.0f); }

static inline void node(ts_graph *g, ts_graph_op op, const char *name, const int *in, size_t nin, int out,
                        const ts_graph_attrs *a)
{
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(ts_graph_add_node(g, op, name, in, nin, &out, 1, a, NULL, &e) == TS_OK, "%s", e.msg);
}

/* One step of a chain of operators: op named `name` reading x (and w when w >= 0) into a new
 * activation "<name>.y", which it returns. */
static inline int chain(ts_graph *g, ts_graph_op op, const char *name, int x, int w, const ts_graph_attrs *a)
{
    char yn[64];
    snprintf(yn, sizeof yn, "%s.y", name);
    int y = tensor_dt(g, yn, TS_TENSOR_ACTIVATION, ts_graph_get_tensor(g, x)->dtype, -1, NULL);
    node(g, op, name, (int[]){x, w}, w >= 0 ? 2 : 1, y, a);
    return y;
}

/* A Transpose of a rank-3 x by the permutation (p0, p1, p2), as a step of a chain. */
static inline int transpose3(ts_graph *g, const char *name, int x, int64_t p0, int64_t p1, int64_t p2)
{
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.nperm = 3;
    memcpy(a.perm, (int64_t[]){p0, p1, p2}, sizeof(int64_t[3]));
    return chain(g, TS_OP_TRANSPOSE, name, x, -1, &a);
}

static inline void finalize(ts_graph *g)
{
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(ts_graph_finalize(g, &e) == TS_OK, "%s", e.msg);
}

/* C[M,N] = A[M,K] x B[K,N], A an input and B a weight, both filled (fill): the graph, finalized,
 * and its tensors' ids in a, b, c. */
static inline ts_graph *matmul_filled(int M, int K, int N, int *a, int *b, int *c)
{
    ts_graph *g = ts_graph_create("mm");
    *a = tensor(g, "a", TS_TENSOR_INPUT, 2, (int64_t[]){M, K});
    *b = tensor(g, "b", TS_TENSOR_WEIGHT, 2, (int64_t[]){K, N});
    *c = tensor(g, "c", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, *a);
    fill(g, *b);
    node(g, TS_OP_MATMUL, "mm", (int[]){*a, *b}, 2, *c, NULL);
    ts_graph_mark_output(g, *c);
    finalize(g);
    return g;
}

#endif
