/* workloads/wse/lower_wse_attn.c — multi-head attention as one stage of the layer pipeline.
 *
 * Region. A stream tensor F that feeds three or more operators opens an attention region: the
 * operators from there on whose activations all come from F or from the region, up to the first
 * point where one tensor is left that later operators read. The region is read symbolically,
 * whatever the exporter's arrangement of Slices, Reshapes and Transposes:
 *   moves   Slice, Reshape, Flatten, Transpose: each element of their output is an element of F
 *           (a map, element by element), optionally times a scale (Div or Mul by a scalar);
 *   scores  a MatMul of two moves A [.., M, K] x B [.., K, N]: per batch index b (an instance:
 *           a head of one sequence), B's (k, n) must be F's row base(b) + n, column kc(b) + k
 *           (the keys of a sequence of S = N rows, base(b) a multiple of S), A's row m F's row
 *           base(b) + m % S and its column k F's column qc(b, m / S) + k: Q K^T of one head
 *           over the rows of one sequence; M / S query heads stacked along the rows share the
 *           instance's keys (grouped-query attention). F's rows are those of the stream, in its
 *           order: after a Transpose of rows (torch's [batch, seq, d] to [seq, batch, d]) a
 *           sequence's rows are consecutive in the stream though not in the tensor;
 *   rotary  a Mul of a move by a parameter broadcast to its shape (cos, sin tables), Concats of
 *           scaled moves (rotate_half's -x2 and x1), the Add of two such: each element a sum of
 *           two elements of one row of F, c1 F[e] + c2 F[e'] (av.cf, cf2, map2); the scores read
 *           F's element e rotated (region.rc1, rc2, rp) and a stage before the attention
 *           (K_ROPE, ts_lww_emit_rope) rotates those columns of each row;
 *   probs   a Softmax over the scores' last axis (a scalar Div or Mul before it scales them);
 *   mask    a parameter added to the scores (kept per head; the same in every sequence);
 *   out     a MatMul of probs [.., M, N] x a move V [.., N, DV] whose (n, c) is F's row
 *           base(b) + n, column vc(b) + c; then moves again, until the region's output, each of
 *           whose rows must hold one row of every query head of one sequence side by side, each
 *           head (column block) reading the same columns of F in every sequence; the stream's
 *           order of the output's rows (sequence after sequence) goes with it to the operators
 *           after (lw_cur.rows).
 * Anything else in the region is refused with the operator's name.
 *
 * Stage (below in more detail: K parts and V parts). One column per query head, in output order,
 * a query head of a group keeping its key head's keys and values. Every row of F is
 * multicast to all of them (east along row 0, south down each column, as a product's rows);
 * each PE keeps its instance's columns and drops the rest into a junk word:
 *   row 2 (Q)  Q[m][0..K) for every row; once every row is in, sends them one by one north;
 *   row 1 (K)  K^T[k][n] (stored with stride N); per query row from the south: the scores row
 *              (fmacs of K^T's rows by q[k]), the softmax (max, exp of the scaled difference,
 *              sum, reciprocal: the scale folded into the exponent), the probabilities north;
 *   row 0 (V)  V[n][0..DV); per probabilities row: the output row (fmacs of V's rows by p[n]),
 *              then the row chain east: PE j passes on the outputs of the instances west of
 *              it, then sends its own.
 * A decode head too long for one K and one V part (three V parts or more; one row against a cache,
 * no mask) is split by positions instead (s->nbk, attn_block): a column of PEs, each a block of
 * the positions' keys and values of every column, its scores, max, exps, sum and outputs, combined
 * by a tree up the column with the online softmax's rescaling (about log2 of the blocks levels,
 * so the blocks are small: split_blocks); the top block divides and joins the chain.
 * The stage reads the whole of F before it gives anything out (the skip path's lag). A batch of
 * sequences (F's rows in the stream: sequence after sequence) goes through it one sequence after
 * another, every PE keeping one sequence's keys and values at a time: the same PEs and memory as
 * one sequence, its code once per sequence, and a lag of one sequence.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

enum { AV_NONE, AV_MOVE, AV_SCORES, AV_PROBS, AV_OUT };

/* What the region knows of one tensor: its kind; a move's or an out's map (element to F's
 * element, or to (b M + m) DV + c of the instances' outputs), owned; scores and probs: their
 * instances' q and k columns (qc, kc, owned) and the scale. */
typedef struct av {
    int kind;
    int64_t *map;
    int64_t *qc, *kc, *vc;
    int64_t *base; /* scores, probs, out: per instance the first row of its sequence in the stream (owned) */
    int64_t grp;   /* scores, probs, out: query heads per instance (its rows: grp blocks of a sequence's
                    * S rows, each block a query head's, qc[b grp + g]; grouped-query attention) */
    int64_t nb, M, N, K, DV;
    double scale;
    float *mask; /* scores, probs, out: added to instance b's scores before the scale, [b][m][n] (owned) */
    /* a move that is a sum of two (rotary positions): element i is scale (cf[i] F[map[i]] + cf2[i]
     * F[map2[i]]) (owned; NULL: a plain move, scale F[map[i]]); a parameter's element (map < 0) has
     * cf 1 and cf2 0 */
    float *cf, *cf2;
    int64_t *map2;
} av;

typedef struct region {
    const ts_graph *g;
    av *v;         /* per tensor */
    int F;         /* the tensor the region starts from */
    int64_t R, W;  /* F as R rows of W, in the stream's order */
    int64_t S;     /* the rows of one sequence (the keys from the stream of one instance) */
    /* parameters joined to the keys and values (a KV cache): element e of pt_t[q] is coded in a
     * map as -(1 + pt_base[q] + e) */
    int pt_t[8];
    int64_t pt_base[8], pt_next;
    int npt;
    int64_t Nc;             /* the keys and values before the stream's: the cache's */
    float *kcache, *vcache; /* per instance: K x Nc keys, Nc x DV values (owned) */
    /* rotary positions: F's element e read by the scores as rc1[e] F[e] + rc2[e] F[rp[e]] (rp[e] in
     * e's row), where rset[e] (R x W each, owned; NULL when nothing is rotated) */
    float *rc1, *rc2;
    int64_t *rp;
    bool *rset;
} region;

/* The value of a parameter code (a map entry < 0). */
static float param_at(const region *G, int64_t code)
{
    int64_t idx = -code - 1;
    for (int q = 0; q < G->npt; q++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(G->g, G->pt_t[q]);
        if (idx >= G->pt_base[q] && idx < G->pt_base[q] + ts_graph_tensor_elems(t))
            return (float)ts_fill_value_f32(t, G->pt_t[q], (uint64_t)(idx - G->pt_base[q]));
    }
    return 0.0f;
}

/* The number of leading keys (n < Nc) of instance i that are parameters: along axis `n` of a
 * map of nb x A x B (keys: A = K, B = N, n the column; values: A = N, n the row). */
static int64_t cache_len(const av *x, int64_t i, int64_t A, int64_t B, bool keys_last)
{
    int64_t n = 0, lim = keys_last ? B : A;
    while (n < lim && x->map[keys_last ? (i * A) * B + n : (i * A + n) * B] < 0)
        n++;
    return n;
}

static void av_free(av *a)
{
    ts_free(a->map);
    ts_free(a->qc);
    ts_free(a->kc);
    ts_free(a->vc);
    ts_free(a->base);
    ts_free(a->mask);
    ts_free(a->cf);
    ts_free(a->cf2);
    ts_free(a->map2);
    memset(a, 0, sizeof *a);
}

/* y's copies of x's instances' columns and first rows (qc, kc, vc when x has them, base; owned),
 * and its grp; nonzero when out of memory. */
static int copy_cols(const av *x, av *y)
{
    const int64_t nb = x->nb, nq = x->nb * x->grp;
    y->grp = x->grp;
    y->qc = ts_malloc((size_t)(nq ? nq : 1) * sizeof *y->qc);
    y->kc = ts_malloc((size_t)(nb ? nb : 1) * sizeof *y->kc);
    y->base = ts_malloc((size_t)(nb ? nb : 1) * sizeof *y->base);
    y->vc = x->vc ? ts_malloc((size_t)(nb ? nb : 1) * sizeof *y->vc) : NULL;
    if (!y->qc || !y->kc || !y->base || (x->vc && !y->vc))
        return -1;
    memcpy(y->qc, x->qc, (size_t)nq * sizeof *y->qc);
    memcpy(y->kc, x->kc, (size_t)nb * sizeof *y->kc);
    memcpy(y->base, x->base, (size_t)nb * sizeof *y->base);
    if (x->vc)
        memcpy(y->vc, x->vc, (size_t)nb * sizeof *y->vc);
    return 0;
}

/* A copy of x's mask into y (none when x has none); nonzero when out of memory. */
static int copy_mask(const av *x, av *y)
{
    y->mask = NULL;
    if (!x->mask)
        return 0;
    size_t n = (size_t)(x->nb * x->M * x->N);
    if (!(y->mask = ts_malloc(n * sizeof *y->mask)))
        return -1;
    memcpy(y->mask, x->mask, n * sizeof *y->mask);
    return 0;
}

/* y's sum-of-two terms: element i is x's element at[i] (at NULL: i), n elements; nonzero when out of
 * memory. */
static int copy_terms(const av *x, av *y, const int64_t *at, int64_t n)
{
    y->cf = y->cf2 = NULL;
    y->map2 = NULL;
    if (!x->cf)
        return 0;
    y->cf = ts_malloc((size_t)(n ? n : 1) * 4);
    y->cf2 = ts_malloc((size_t)(n ? n : 1) * 4);
    y->map2 = ts_malloc((size_t)(n ? n : 1) * sizeof *y->map2);
    if (!y->cf || !y->cf2 || !y->map2)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const int64_t j = at ? at[i] : i;
        y->cf[i] = x->cf[j], y->cf2[i] = x->cf2[j], y->map2[i] = x->map2[j];
    }
    return 0;
}

/* x's element i as a sum of two: coefficients (the scale included) and F's second element. */
static void term_of(const av *x, int64_t i, float *c1, float *c2, int64_t *e2)
{
    *c1 = (float)x->scale * (x->cf ? x->cf[i] : 1.0f);
    *c2 = x->cf ? (float)x->scale * x->cf2[i] : 0.0f;
    *e2 = x->cf ? x->map2[i] : x->map[i];
}

/* The input element of each output element of a move node (Slice, Reshape, Flatten, Transpose);
 * map[i] for output element i (owned by the caller); NULL when out of memory. */
static int64_t *move_map(const ts_graph_node *n, const ts_graph_tensor *x, const ts_graph_tensor *y)
{
    const int64_t ny = ts_graph_tensor_elems(y);
    int64_t *m = ts_malloc((size_t)(ny ? ny : 1) * sizeof *m);
    if (!m)
        return NULL;
    int64_t xs[TS_GRAPH_MAX_RANK]; /* x's strides */
    for (int k = x->rank - 1, st = 1; k >= 0; k--) {
        xs[k] = st;
        st *= (int)x->dims[k];
    }
    for (int64_t i = 0; i < ny; i++) {
        if (n->op != TS_OP_TRANSPOSE && n->op != TS_OP_SLICE) {
            m[i] = i;
            continue;
        }
        int64_t o[TS_GRAPH_MAX_RANK], r = i, src = 0;
        for (int k = y->rank - 1; k >= 0; k--) {
            o[k] = r % y->dims[k];
            r /= y->dims[k];
        }
        const ts_graph_attrs *a = &n->attrs;
        for (int k = 0; k < y->rank; k++)
            if (n->op == TS_OP_TRANSPOSE)
                src += o[k] * xs[a->nperm ? a->perm[k] : y->rank - 1 - k];
            else
                src += (a->nslice ? a->starts[k] + o[k] * a->steps[k] : o[k]) * xs[k];
        m[i] = src;
    }
    return m;
}

/* The batch count and the last two dims of t. */
static void mat_dims(const ts_graph_tensor *t, int64_t *nb, int64_t *r, int64_t *c)
{
    *c = t->dims[t->rank - 1];
    *r = t->rank > 1 ? t->dims[t->rank - 2] : 1;
    *nb = ts_graph_tensor_elems(t) / (*r * *c);
}

/* The rotation of scores operand x (a sum of two: rotary positions) into G's tables: F's element
 * e = map[i] is read as rc1[e] F[e] + rc2[e] F[rp[e]], the same wherever it is read; a cached key
 * (a parameter) must be taken as it is. Its scale is then 1. */
static ts_status absorb_terms(lw *L, region *G, const ts_graph_node *n, const av *x, int64_t nx, double *scale)
{
    *scale = x->scale;
    if (!x->cf)
        return TS_OK;
    *scale = 1.0;
    const size_t nf = (size_t)(G->R * G->W);
    if (!G->rset && (!(G->rc1 = ts_malloc(nf * 4)) || !(G->rc2 = ts_malloc(nf * 4)) ||
                     !(G->rp = ts_malloc(nf * sizeof *G->rp)) || !(G->rset = ts_calloc(nf, 1))))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t i = 0; i < nx; i++) {
        float c1, c2;
        int64_t e2, e = x->map[i];
        term_of(x, i, &c1, &c2, &e2);
        if (e < 0) {
            if (c1 != 1.0f || c2 != 0.0f)
                return ts_lower_fail(L->err, n, "scales or rotates a cached key; the cache is kept as it is given");
            continue;
        }
        if (e2 < 0 || e2 / G->W != e / G->W)
            return ts_lower_fail(L->err, n, "rotates a query or key of '%s' with an element of another row",
                                 ts_graph_get_tensor(G->g, G->F)->name);
        if (G->rset[e] && (G->rc1[e] != c1 || G->rc2[e] != c2 || G->rp[e] != e2))
            return ts_lower_fail(L->err, n, "reads element %lld of '%s' rotated in two ways", (long long)e,
                                 ts_graph_get_tensor(G->g, G->F)->name);
        G->rset[e] = true, G->rc1[e] = c1, G->rc2[e] = c2, G->rp[e] = e2;
    }
    return TS_OK;
}

/* A product of two moves, Q K^T: per instance b its keys are one sequence's S rows of F (from row
 * base(b), after Nc cached ones) at columns kc(b); its M query rows are grp blocks of those S rows
 * (one block a query head, at columns qc(b grp + g): grouped-query attention stacks a key head's
 * query heads along the rows). */
static ts_status scores(lw *L, region *G, const ts_graph_node *n, av *a, av *b, av *y)
{
    int64_t nb, M, K, nb2, K2, N;
    mat_dims(ts_graph_get_tensor(G->g, n->in[0]), &nb, &M, &K);
    mat_dims(ts_graph_get_tensor(G->g, n->in[1]), &nb2, &K2, &N);
    const int64_t Nc = nb ? cache_len(b, 0, K, N, true) : 0, S = N - Nc;
    const char *fn = ts_graph_get_tensor(G->g, G->F)->name;
    if (nb != nb2 || K != K2 || S < 1 || M % S || G->R % S)
        return ts_lower_fail(L->err, n, "multiplies two activations that are not one head's queries by its keys over "
                             "every row of a sequence of '%s' (a batch broadcast, or rows of another sequence)", fn);
    const int64_t grp = M / S;
    double sa, sb;
    ts_status trc = absorb_terms(L, G, n, a, nb * M * K, &sa);
    if (!trc)
        trc = absorb_terms(L, G, n, b, nb * K * N, &sb);
    if (trc)
        return trc;
    y->qc = ts_malloc((size_t)(nb * grp) * sizeof *y->qc);
    y->kc = ts_malloc((size_t)nb * sizeof *y->kc);
    y->base = ts_malloc((size_t)nb * sizeof *y->base);
    G->Nc = Nc;
    G->S = S;
    if (Nc && !(G->kcache = ts_malloc((size_t)(nb * K * Nc) * sizeof *G->kcache)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (!y->qc || !y->kc || !y->base)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t i = 0; i < nb; i++) {
        const int64_t f0 = b->map[i * K * N + Nc];
        y->base[i] = f0 < 0 ? -1 : f0 / G->W;
        y->kc[i] = f0 < 0 ? -1 : f0 % G->W;
        if (y->base[i] < 0 || y->base[i] % S)
            return ts_lower_fail(L->err, n, "its second operand's keys of instance %lld do not start a sequence "
                                 "of %lld rows of '%s'", (long long)i, (long long)S, fn);
        for (int64_t g = 0; g < grp; g++)
            y->qc[i * grp + g] = a->map[(i * M + g * S) * K] % G->W;
        for (int64_t m = 0; m < M; m++)
            for (int64_t k = 0; k < K; k++) {
                int64_t fa = a->map[(i * M + m) * K + k];
                if (fa < 0 || fa / G->W != y->base[i] + m % S || fa % G->W != y->qc[i * grp + m / S] + k)
                    return ts_lower_fail(L->err, n, "its first operand's element (%lld, %lld, %lld) is not a query "
                                         "of one head (row %lld, a column range of '%s')", (long long)i, (long long)m,
                                         (long long)k, (long long)(y->base[i] + m % S), fn);
            }
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < N; c++) {
                int64_t fb = b->map[(i * K + k) * N + c];
                if (c < Nc && fb < 0) { /* a cached key */
                    G->kcache[(i * K + k) * Nc + c] = param_at(G, fb);
                    continue;
                }
                if (fb < 0 || c < Nc || fb / G->W != y->base[i] + c - Nc || fb % G->W != y->kc[i] + k)
                    return ts_lower_fail(L->err, n, "its second operand's element (%lld, %lld, %lld) is not a key "
                                         "of one head (transposed: row %lld, a column range of '%s')", (long long)i,
                                         (long long)k, (long long)c, (long long)(y->base[i] + c - Nc), fn);
            }
    }
    y->kind = AV_SCORES;
    y->grp = grp;
    y->nb = nb, y->M = M, y->N = N, y->K = K;
    y->scale = sa * sb;
    return TS_OK;
}

/* Probabilities times a move V: the instances' outputs. */
static ts_status outputs(lw *L, region *G, const ts_graph_node *n, av *p, av *v, av *y)
{
    int64_t nb, M, N, nb2, N2, DV;
    mat_dims(ts_graph_get_tensor(G->g, n->in[0]), &nb, &M, &N);
    mat_dims(ts_graph_get_tensor(G->g, n->in[1]), &nb2, &N2, &DV);
    if (nb != nb2 || N != N2 || nb != p->nb || (nb && cache_len(v, 0, N, DV, false) != G->Nc))
        return ts_lower_fail(L->err, n, "multiplies attention probabilities by values of another shape (or another "
                             "number of cached values than keys)");
    const int64_t Nc = G->Nc;
    if (Nc && !(G->vcache = ts_malloc((size_t)(nb * Nc * DV) * sizeof *G->vcache)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (v->scale != 1.0 || v->cf)
        return ts_lower_fail(L->err, n, "multiplies by scaled or rotated values; a scale before the Softmax is lowered");
    if (copy_cols(p, y)) /* p has no value columns: y's are new */
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    y->vc = ts_malloc((size_t)nb * sizeof *y->vc);
    y->map = ts_malloc((size_t)(nb * M * DV) * sizeof *y->map);
    if (!y->vc || !y->map)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (copy_mask(p, y))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t i = 0; i < nb; i++) {
        y->vc[i] = v->map[(i * N + Nc) * DV] % G->W;
        for (int64_t r = 0; r < N; r++)
            for (int64_t c = 0; c < DV; c++) {
                int64_t f = v->map[(i * N + r) * DV + c];
                if (r < Nc && f < 0) { /* a cached value */
                    G->vcache[(i * Nc + r) * DV + c] = param_at(G, f);
                    continue;
                }
                if (f < 0 || r < Nc || f / G->W != p->base[i] + r - Nc || f % G->W != y->vc[i] + c)
                    return ts_lower_fail(L->err, n, "its second operand's element (%lld, %lld, %lld) is not a value "
                                         "of one head (row %lld, a column range of '%s')", (long long)i, (long long)r,
                                         (long long)c, (long long)(p->base[i] + r - Nc),
                                         ts_graph_get_tensor(G->g, G->F)->name);
            }
    }
    for (int64_t i = 0; i < nb * M * DV; i++)
        y->map[i] = i;
    y->kind = AV_OUT;
    y->nb = nb, y->M = M, y->N = N, y->K = p->K, y->DV = DV;
    y->scale = p->scale;
    return TS_OK;
}

/* The scalar of a Div or Mul by a one-element parameter, or NAN. */
static double scalar_of(const ts_graph *g, const ts_graph_node *n, int *act)
{
    if (n->nin != 2)
        return NAN;
    for (int q = 0; q < 2; q++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, n->in[q]);
        if (lw_is_param(t) && ts_graph_tensor_elems(t) == 1) {
            *act = n->in[1 - q];
            double v = ts_fill_value_f32(t, n->in[q], 0);
            return n->op == TS_OP_DIV ? (q == 1 ? 1.0 / v : NAN) : v;
        }
    }
    return NAN;
}

/* A Mul of a move by a parameter broadcast to its shape (rotary positions' cos and sin tables): a
 * sum of two whose coefficients are the products. */
static ts_status table_mul(lw *L, region *G, const ts_graph_node *n, av *y)
{
    const ts_graph *g = G->g;
    const int q = n->nin == 2 && lw_is_param(ts_graph_get_tensor(g, n->in[1])) ? 1 : 0;
    const ts_graph_tensor *pt = ts_graph_get_tensor(g, n->in[q]), *yt = ts_graph_get_tensor(g, n->out[0]);
    const av *x = n->nin == 2 ? &G->v[n->in[1 - q]] : NULL;
    if (!x || !lw_is_param(pt) || x->kind != AV_MOVE || pt->rank > yt->rank ||
        ts_graph_tensor_elems(ts_graph_get_tensor(g, n->in[1 - q])) != ts_graph_tensor_elems(yt))
        return ts_lower_fail(L->err, n, "in attention: a product of queries or keys by a parameter broadcast to their "
                             "shape (rotary positions' tables) or by a scalar is lowered, nothing else");
    for (int k = 0; k < pt->rank; k++)
        if (pt->dims[k] != 1 && pt->dims[k] != yt->dims[yt->rank - pt->rank + k])
            return ts_lower_fail(L->err, n, "multiplies attention queries or keys by '%s', which does not broadcast to "
                                 "their shape", pt->name);
    const int64_t ny = ts_graph_tensor_elems(yt);
    *y = *x;
    y->qc = y->kc = y->vc = y->base = NULL;
    y->mask = NULL;
    y->cf = ts_malloc((size_t)ny * 4);
    y->cf2 = ts_malloc((size_t)ny * 4);
    y->map = ts_malloc((size_t)ny * sizeof *y->map);
    y->map2 = ts_malloc((size_t)ny * sizeof *y->map2);
    if (!y->cf || !y->cf2 || !y->map || !y->map2)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    y->scale = 1.0;
    for (int64_t i = 0; i < ny; i++) {
        int64_t r = i, at = 0, st = 1; /* the parameter's element under broadcasting */
        for (int k = yt->rank - 1; k >= 0; k--) {
            const int64_t o = r % yt->dims[k];
            r /= yt->dims[k];
            const int kp = k - (yt->rank - pt->rank);
            if (kp >= 0) {
                at += (pt->dims[kp] == 1 ? 0 : o) * st;
                st *= pt->dims[kp];
            }
        }
        const float v = (float)ts_fill_value_f32(pt, n->in[q], (uint64_t)at);
        float c1, c2;
        term_of(x, i, &c1, &c2, &y->map2[i]);
        y->map[i] = x->map[i];
        y->cf[i] = c1 * v, y->cf2[i] = c2 * v;
    }
    return TS_OK;
}

/* The Add of two moves of the same shape, each of one term of F's element in the same row (the
 * halves of rotary positions: x cos + rotate_half(x) sin): a sum of two. */
static ts_status move_sum(lw *L, region *G, const ts_graph_node *n, av *y)
{
    const ts_graph *g = G->g;
    const av *a = &G->v[n->in[0]], *b = &G->v[n->in[1]];
    const int64_t ny = ts_graph_tensor_elems(ts_graph_get_tensor(g, n->out[0]));
    if (ts_graph_tensor_elems(ts_graph_get_tensor(g, n->in[0])) != ny ||
        ts_graph_tensor_elems(ts_graph_get_tensor(g, n->in[1])) != ny)
        return ts_lower_fail(L->err, n, "adds attention queries or keys of another shape (no broadcasting)");
    *y = *a;
    y->qc = y->kc = y->vc = y->base = NULL;
    y->mask = NULL;
    y->cf = ts_malloc((size_t)(ny ? ny : 1) * 4);
    y->cf2 = ts_malloc((size_t)(ny ? ny : 1) * 4);
    y->map = ts_malloc((size_t)(ny ? ny : 1) * sizeof *y->map);
    y->map2 = ts_malloc((size_t)(ny ? ny : 1) * sizeof *y->map2);
    if (!y->cf || !y->cf2 || !y->map || !y->map2)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    y->scale = 1.0;
    for (int64_t i = 0; i < ny; i++) {
        float a1, a2, b1, b2;
        int64_t ea, eb;
        term_of(a, i, &a1, &a2, &ea);
        term_of(b, i, &b1, &b2, &eb);
        if (a2 != 0.0f || b2 != 0.0f || a->map[i] < 0 || b->map[i] < 0 || a->map[i] / G->W != b->map[i] / G->W)
            return ts_lower_fail(L->err, n, "adds attention queries or keys that are not each one element of one row "
                                 "of '%s' (element %lld)", ts_graph_get_tensor(g, G->F)->name, (long long)i);
        y->map[i] = a->map[i], y->cf[i] = a1;
        y->map2[i] = b->map[i], y->cf2[i] = b1;
    }
    return TS_OK;
}

/* One node of the region read symbolically. */
static ts_status region_node(lw *L, region *G, const ts_graph_node *n)
{
    const ts_graph *g = G->g;
    av *y = &G->v[n->out[0]];
    const ts_graph_tensor *yt = ts_graph_get_tensor(g, n->out[0]);
    switch (n->op) {
    case TS_OP_SLICE:
    case TS_OP_RESHAPE:
    case TS_OP_FLATTEN:
    case TS_OP_TRANSPOSE: {
        av *x = &G->v[n->in[0]];
        if (x->kind != AV_MOVE && x->kind != AV_OUT)
            return ts_lower_fail(L->err, n, "moves attention scores or probabilities; only queries, keys, values and "
                                 "outputs are moved");
        int64_t *m = move_map(n, ts_graph_get_tensor(g, n->in[0]), yt);
        if (!m)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        *y = *x;
        if (copy_terms(x, y, m, ts_graph_tensor_elems(yt))) {
            ts_free(m);
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
        for (int64_t i = 0; i < ts_graph_tensor_elems(yt); i++)
            m[i] = x->map[m[i]];
        y->map = m;
        y->qc = y->kc = y->vc = NULL;
        if (copy_mask(x, y))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        y->base = NULL;
        if (x->kind == AV_OUT && copy_cols(x, y)) /* the instances' columns stay with the out tensors */
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        return TS_OK;
    }
    case TS_OP_CONCAT: { /* keys or values joined to parameters (a KV cache): parameter codes in the map */
        const int64_t ny = ts_graph_tensor_elems(yt);
        int64_t ax = ts_graph_norm_axis(n->attrs.axis, yt->rank), inner = 1, off = 0;
        for (int k = (int)ax + 1; k < yt->rank; k++)
            inner *= yt->dims[k];
        y->kind = AV_MOVE;
        y->scale = 1.0;
        if (!(y->map = ts_malloc((size_t)ny * sizeof *y->map)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        bool terms = false; /* a scaled or summed input (rotary positions' halves): y a sum of two */
        for (size_t q = 0; q < n->nin; q++) {
            const av *x = &G->v[n->in[q]];
            terms |= !lw_is_param(ts_graph_get_tensor(g, n->in[q])) && x->kind == AV_MOVE && (x->cf || x->scale != 1.0);
        }
        if (terms && (!(y->cf = ts_malloc((size_t)ny * 4)) || !(y->cf2 = ts_malloc((size_t)ny * 4)) ||
                      !(y->map2 = ts_malloc((size_t)ny * sizeof *y->map2))))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (size_t q = 0; q < n->nin; q++) {
            const ts_graph_tensor *xt = ts_graph_get_tensor(g, n->in[q]);
            const av *x = &G->v[n->in[q]];
            const int64_t w = xt->dims[ax] * inner, nx = ts_graph_tensor_elems(xt);
            int64_t base = 0;
            if (lw_is_param(xt)) {
                if (G->npt == 8)
                    break;
                G->pt_t[G->npt] = n->in[q];
                G->pt_base[G->npt++] = base = G->pt_next;
                G->pt_next += nx;
            } else if (x->kind != AV_MOVE || (!terms && x->scale != 1.0))
                return ts_lower_fail(L->err, n, "joins attention tensors other than keys or values");
            for (int64_t e = 0; e < nx; e++) { /* element e of input q: block e / w, position e % w */
                int64_t at = (e / w) * (yt->dims[ax] * inner) + off + e % w;
                y->map[at] = lw_is_param(xt) ? -(1 + base + e) : x->map[e];
                if (!terms)
                    continue;
                if (lw_is_param(xt))
                    y->cf[at] = 1.0f, y->cf2[at] = 0.0f, y->map2[at] = y->map[at];
                else
                    term_of(x, e, &y->cf[at], &y->cf2[at], &y->map2[at]);
            }
            off += w;
        }
        if (off != yt->dims[ax] * inner)
            return ts_lower_fail(L->err, n, "joins too many parameters in an attention");
        return TS_OK;
    }
    case TS_OP_DIV:
    case TS_OP_MUL: {
        int act = -1;
        double s = scalar_of(g, n, &act);
        av *x = act >= 0 ? &G->v[act] : NULL;
        if (n->op == TS_OP_MUL && !isfinite(s))
            return table_mul(L, G, n, y);
        if (!isfinite(s) || !x || (x->kind != AV_MOVE && x->kind != AV_SCORES))
            return ts_lower_fail(L->err, n, "in attention: a scale by a scalar constant of queries, keys or scores is "
                                 "lowered, nothing else");
        *y = *x;
        y->cf = y->cf2 = NULL;
        y->map2 = NULL;
        y->map = NULL, y->qc = y->kc = y->vc = y->base = NULL;
        if (copy_mask(x, y))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        if (x->map && !(y->map = ts_malloc((size_t)ts_graph_tensor_elems(yt) * sizeof *y->map)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        if (x->map)
            memcpy(y->map, x->map, (size_t)ts_graph_tensor_elems(yt) * sizeof *y->map);
        if (copy_terms(x, y, NULL, ts_graph_tensor_elems(yt)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        if (x->qc && copy_cols(x, y))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        y->scale = x->scale * s;
        return TS_OK;
    }
    case TS_OP_SOFTMAX: {
        av *x = &G->v[n->in[0]];
        const ts_graph_tensor *xt = ts_graph_get_tensor(g, n->in[0]);
        int64_t ax = ts_graph_norm_axis(n->attrs.axis, xt->rank);
        if (x->kind != AV_SCORES || ax != xt->rank - 1)
            return ts_lower_fail(L->err, n, "in attention: a Softmax over the last axis of the scores is lowered");
        if (!(x->scale > 0))
            return ts_lower_fail(L->err, n, "scales its scores by %g; a positive scale is lowered", x->scale);
        *y = *x;
        y->map = NULL;
        y->qc = y->kc = y->vc = y->base = NULL;
        if (copy_mask(x, y) || copy_cols(x, y))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        y->kind = AV_PROBS;
        return TS_OK;
    }
    case TS_OP_MATMUL: {
        if (n->nin != 2)
            break;
        av *a = &G->v[n->in[0]], *b = &G->v[n->in[1]];
        if (a->kind == AV_MOVE && b->kind == AV_MOVE)
            return scores(L, G, n, a, b, y);
        if (a->kind == AV_PROBS && b->kind == AV_MOVE)
            return outputs(L, G, n, a, b, y);
        return ts_lower_fail(L->err, n, "multiplies two activations other than queries by keys or probabilities by "
                             "values");
    }
    case TS_OP_ADD: { /* a mask: a parameter of the scores' shape, or one [M, N] for every instance */
        if (n->nin == 2 && G->v[n->in[0]].kind == AV_MOVE && G->v[n->in[1]].kind == AV_MOVE)
            return move_sum(L, G, n, y);
        int q = n->nin == 2 && G->v[n->in[0]].kind == AV_SCORES ? 0 : n->nin == 2 && G->v[n->in[1]].kind == AV_SCORES ? 1 : -1;
        if (q < 0)
            break;
        av *x = &G->v[n->in[q]];
        const ts_graph_tensor *mt = ts_graph_get_tensor(g, n->in[1 - q]);
        const int64_t per = x->M * x->N, nm = ts_graph_tensor_elems(mt);
        if (!lw_is_param(mt) || (nm != per && nm != x->nb * per) || mt->dims[mt->rank - 1] != x->N)
            return ts_lower_fail(L->err, n, "adds '%s' to the attention scores; a parameter mask of the scores' shape "
                                 "(or one for every head) is lowered", mt->name);
        *y = *x;
        y->map = NULL;
        y->qc = y->kc = y->vc = y->base = NULL;
        y->mask = ts_malloc((size_t)(x->nb * per) * sizeof *y->mask);
        if (!y->mask || copy_cols(x, y))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (int64_t i = 0; i < x->nb * per; i++) /* the kernel scales the sum: the mask over the scale so far */
            y->mask[i] = (x->mask ? x->mask[i] : 0.0f) +
                         (float)(ts_fill_value_f32(mt, n->in[1 - q], (uint64_t)(i % nm)) / x->scale);
        return TS_OK;
    }
    default: break;
    }
    return ts_lower_fail(L->err, n, "is part of an attention (from '%s') that the WSE lowering does not map",
                         ts_graph_get_tensor(g, G->F)->name);
}

/* The region's nodes from `first` (inreg: its tensors; done: its nodes), up to the node whose
 * output is the one tensor of the region read after it; *last that node. */
static ts_status collect(lw *L, int F, const int *seed, int nseed, int first, bool *inreg, bool *done, int *last)
{
    const ts_graph *g = L->g;
    const size_t nn = ts_graph_node_count(g);
    for (int q = 0; q < nseed; q++)
        inreg[seed[q]] = true;
    *last = -1;
    for (size_t id = (size_t)first; id < nn; id++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)id);
        bool in = false, other = false;
        for (size_t k = 0; k < n->nin; k++) {
            const ts_graph_tensor *t = ts_graph_get_tensor(g, n->in[k]);
            if (inreg[n->in[k]])
                in = true;
            else if (!lw_is_param(t))
                other = true;
        }
        if (!in)
            continue;
        if (other)
            return ts_lower_fail(L->err, n, "reads an activation from outside the attention that starts at '%s'",
                                 ts_graph_get_tensor(g, F)->name);
        done[id] = true;
        for (size_t k = 0; k < n->nout; k++)
            inreg[n->out[k]] = true;
        /* the tensors of the region still read by nodes not yet in it */
        size_t live = 0;
        int only = -1;
        for (size_t t = 0; t < ts_graph_tensor_count(g); t++) {
            if (!inreg[t])
                continue;
            size_t nc = 0;
            const int *c = ts_graph_consumers(g, (int)t, &nc);
            bool open = ts_graph_get_tensor(g, (int)t)->is_output;
            for (size_t q = 0; q < nc; q++)
                open |= !done[c[q]];
            if (open) {
                live++;
                only = (int)t;
            }
        }
        if (live == 1 && only == n->out[0]) { /* closed: the moves after it go with it */
            size_t nc = 0;
            const int *c = ts_graph_consumers(g, only, &nc);
            ts_graph_op op = nc == 1 ? ts_graph_get_node(g, c[0])->op : TS_OP_COUNT;
            if (op != TS_OP_RESHAPE && op != TS_OP_FLATTEN && op != TS_OP_TRANSPOSE) {
                *last = (int)id;
                return TS_OK;
            }
        }
    }
    return ts_err_set(L->err, TS_EINPUT, "the attention from '%s' never closes into one tensor",
                      ts_graph_get_tensor(g, F)->name);
}

/* Whether every one of the nb masks of R x N is constant along its diagonals (m[r][c] depends on
 * c - r alone, as a causal or sliding-window mask is): then R + N - 1 values hold each. */
static bool mask_is_band(const float *mask, int64_t nb, int64_t R, int64_t N)
{
    for (int64_t j = 0; j < nb; j++)
        for (int64_t r = 1; r < R; r++)
            for (int64_t c = 1; c < N; c++)
                if (memcmp(&mask[(j * R + r) * N + c], &mask[(j * R + r - 1) * N + c - 1], 4))
                    return false;
    return true;
}

/* Values of one head's mask the top K part keeps. */
static size_t mask_keep(bool band, int64_t R, int64_t N) { return (size_t)(band ? R + N - 1 : R * N); }

/* SRAM of a K part (cs query columns of R rows, cs key columns of N keys for each of nkv
 * sequences, the scores row, its reciprocal, a zero and a junk word, the query row's address)
 * and of a V part (cv value columns of N for each of nkv sequences, the probabilities row, the
 * outputs). nkv: the sequences whose keys and values are kept at once (1, or a batch's when each
 * has its cache). */
static uint64_t attn_kmem(uint64_t R, uint64_t N, uint64_t cs, uint64_t nkv)
{
    return R * cs * 4 + nkv * cs * N * 4 + N * 4 + 16;
}
static uint64_t attn_vmem(uint64_t N, uint64_t cv, uint64_t nkv) { return nkv * N * cv * 4 + N * 4 + cv * 4 + 8; }
/* SRAM of a block PE of a decode head whose positions are split (s->nbk): the scores of nb
 * positions, the block's header (max, sum) and outputs, the header from below, a scalar, a zero
 * and a junk word, the query, the block's keys (K x nb) and values (nb x DV). */
static uint64_t attn_bmem(uint64_t K, uint64_t DV, uint64_t nb)
{
    return (nb + 2 + DV + 2 + 3 + K + K * nb + nb * DV) * 4;
}
/* The sequences whose keys and values a stage keeps at once. */
static int64_t attn_nkv(const lw_stage *s) { return s->nc && s->nseq > 1 ? s->nseq : 1; }

/* The heads of the region's output o (its tensor ln's output): output row lr, columns
 * [j DV, (j + 1) DV) must be one query head's outputs (a sub-instance u = b grp + g: instance b's
 * query block g) at one row of its sequence, each head (column block j) reading the same columns
 * of F in every sequence. *H the heads; head[j nseq + q] the sub-instance of head j in sequence q
 * (nseq = R / S); orow[p] the output row the stream's row p (sequence p / S, its row p % S) is
 * (owned). */
static ts_status out_heads(lw *L, const region *G, const ts_graph_node *ln, const av *o, int64_t *H, int64_t **head,
                           int64_t **orow)
{
    const ts_graph_tensor *yt = ts_graph_get_tensor(G->g, ln->out[0]);
    const int64_t Wo = yt->dims[yt->rank - 1], DV = o->DV, M = o->M, S = G->S, grp = o->grp, nu = o->nb * grp;
    const int64_t ny = ts_graph_tensor_elems(yt), R = G->R;
    *H = 0;
    if (Wo % DV || ny != o->nb * M * DV || ny != R * Wo)
        return ts_lower_fail(L->err, ln, "gives attention outputs in rows of %lld, not the %lld heads' %lld values "
                             "side by side", (long long)Wo, (long long)(nu * S / (R ? R : 1)), (long long)DV);
    const int64_t nh = Wo / DV, nseq = R / S;
    int64_t *hd = ts_malloc((size_t)(nh * nseq) * sizeof *hd), *ow = ts_malloc((size_t)R * sizeof *ow);
    int64_t *uh = ts_malloc((size_t)nu * sizeof *uh);
    bool *seen = ts_calloc((size_t)ny, 1);
    ts_status rc = TS_OK;
    if (!hd || !ow || !uh || !seen)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t j = 0; !rc && j < nh * nseq; j++)
        hd[j] = -1;
    for (int64_t p = 0; !rc && p < R; p++)
        ow[p] = -1;
    for (int64_t u = 0; !rc && u < nu; u++)
        uh[u] = -1;
    for (int64_t e = 0; !rc && e < ny; e++) {
        const int64_t lr = e / Wo, j = e % Wo / DV, c = e % DV, src = o->map[e];
        const int64_t b = src / (M * DV), m = src / DV % M, u = b * grp + m / S, pr = o->base[b] + m % S;
        if (src % DV != c || (uh[u] >= 0 && uh[u] != j) || (ow[pr] >= 0 && ow[pr] != lr) || seen[pr * Wo + e % Wo])
            rc = ts_lower_fail(L->err, ln, "element %lld of its output is head %lld's (%lld, %lld): the heads' "
                               "outputs must lie side by side in each row", (long long)e, (long long)u,
                               (long long)m, (long long)(src % DV));
        else {
            uh[u] = j, ow[pr] = lr, seen[pr * Wo + e % Wo] = true;
            hd[j * nseq + o->base[b] / S] = u;
        }
    }
    for (int64_t u = 0; !rc && u < nu; u++) { /* a head reads the same columns in every sequence */
        if (uh[u] < 0) {
            rc = ts_lower_fail(L->err, ln, "gives out no output of query head %lld (another's twice)", (long long)u);
            break;
        }
        const int64_t v = hd[uh[u] * nseq];
        if (o->qc[u] != o->qc[v] || o->kc[u / grp] != o->kc[v / grp] || o->vc[u / grp] != o->vc[v / grp])
            rc = ts_lower_fail(L->err, ln, "gives head %lld the outputs of other columns of '%s' in another sequence",
                               (long long)uh[u], ts_graph_get_tensor(G->g, G->F)->name);
    }
    ts_free(uh);
    ts_free(seen);
    if (rc) {
        ts_free(hd);
        ts_free(ow);
        return rc;
    }
    *H = nh, *head = hd, *orow = ow;
    return TS_OK;
}

/* The mask rows (S x NK) of sub-instance u (instance u / grp's query block u % grp). */
static const float *sub_mask(const av *o, int64_t u, int64_t S, int64_t NK)
{
    return o->mask + (size_t)((u / o->grp * o->M + u % o->grp * S) * NK);
}

/* The mask of each head (S x NK, in head order; owned): the rows of its query block; the same in
 * every sequence of the batch, which the top K part takes one after another. */
static ts_status head_masks(lw *L, const ts_graph_node *ln, const av *o, int64_t S, int64_t NK, int64_t H,
                            int64_t nseq, const int64_t *head, float **out)
{
    const size_t per = (size_t)(S * NK);
    float *hm = ts_malloc((size_t)H * per * 4);
    if (!hm)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t j = 0; j < H; j++) { /* instance b's rows (g S ..) */
        const int64_t u = head[j * nseq];
        memcpy(hm + (size_t)j * per, sub_mask(o, u, S, NK), per * 4);
    }
    for (int64_t u = 0; u < o->nb * o->grp; u++) {
        const float *m = sub_mask(o, u, S, NK);
        bool found = false;
        for (int64_t j = 0; j < H && !found; j++)
            found = !memcmp(m, hm + (size_t)j * per, per * 4) && o->qc[u] == o->qc[head[j * nseq]] &&
                    o->kc[u / o->grp] == o->kc[head[j * nseq] / o->grp];
        if (!found) {
            ts_free(hm);
            return ts_lower_fail(L->err, ln, "adds another mask to query head %lld's scores in another sequence; one "
                                 "mask per head is kept", (long long)u);
        }
    }
    *out = hm;
    return TS_OK;
}

/* Cycles a block of a split decode head takes per position (its column of scores over the K
 * query columns, its row of outputs over the DV value columns: a cycle a MAC each, and about
 * BLOCK_POS more: its max, exp and sum, scalar), and a level of the combining tree besides its DV
 * outputs coming in (the header from below, its exp and sums: BLOCK_STEP); assumed, from the
 * scalar code of attn_block, and the best of 20 to 170 for a chain's step on the reduced layer
 * (80). */
enum { BLOCK_POS = 40, BLOCK_STEP = 80 };

/* The colour of level l of a split head's combining tree (attn_block): the stage's two colours
 * of partial sums, then those past the four sets' 16; the levels a config's colours allow. */
static uint32_t tree_colour(const lw_stage *s, uint32_t l) { return l < 2 ? lw_rcol(s, l) : 16 + (l - 2); }
static uint32_t tree_levels(uint32_t colours) { return colours > 16 ? 2 + (colours - 16) : 2; }

/* The levels of a tree of B blocks: the fewest d with 2^d >= B. */
static uint32_t tree_depth(uint64_t B)
{
    uint32_t d = 0;
    while (((uint64_t)1 << d) < B)
        d++;
    return d;
}

/* Whether a decode head (one query row against a cache, no mask) is split by positions: blocks
 * of s->nbk positions, one PE each down the head's column, as even as they go (at least two; the
 * value columns apart from the query and key columns), combined by a tree: the size whose
 * block's cycles, nb (K + DV + BLOCK_POS), and tree's, (DV + BLOCK_STEP) a level, are the fewest,
 * of those whose PE fits, whose blocks take at most rows and whose tree's levels have colours. */
static bool split_blocks(lw_stage *s, const av *o, uint64_t sram, uint64_t rows, uint32_t colours)
{
    const uint64_t N = (uint64_t)(s->M + s->nc), K = (uint64_t)o->K, DV = (uint64_t)o->DV;
    for (int64_t j = 0; j < s->N; j++) {
        const int64_t q0 = s->cols[3 * j], k0 = s->cols[3 * j + 1], v0 = s->cols[3 * j + 2];
        if ((v0 < q0 + o->K && q0 < v0 + o->DV) || (v0 < k0 + o->K && k0 < v0 + o->DV))
            return false;
    }
    uint64_t nb = 0;
    while (nb < N && attn_bmem(K, DV, nb + 1) <= sram)
        nb++;
    if (nb == 0 || nb >= N)
        return false;
    uint64_t best = nb, cost = UINT64_MAX;
    for (uint64_t b = nb; b >= 1; b--) { /* fewer positions a block: more blocks, as many levels or more */
        const uint64_t B = ts_geom_cdiv(N, b);
        if (B > rows || tree_depth(B) > tree_levels(colours))
            break;
        const uint64_t c = b * (K + DV + BLOCK_POS) + tree_depth(B) * (DV + BLOCK_STEP);
        if (c < cost) {
            cost = c;
            best = b;
        }
    }
    if (cost == UINT64_MAX)
        return false;
    s->nbk = (int64_t)ts_geom_cdiv(N, ts_geom_cdiv(N, best));
    return true;
}

/* The attention stage s of the region G (its output o, given by node ln; F its stream ft): H
 * query heads (head[j nseq + q] the sub-instance of head j in sequence q, hmask their masks or
 * NULL), its sequences, cached keys and values (each sequence's: a batch decoding), masks and
 * columns, and the fewest K and V parts whose PEs fit. */
static ts_status fill_stage(lw *L, const region *G, const av *o, const ts_graph_node *ln, const ts_graph_tensor *ft,
                            int64_t H, const int64_t *head, const float *hmask, lw_stage *s)
{
    ts_status rc = TS_OK;
    const int64_t S = G->S, nseq = G->R / S, NK = S + G->Nc;
    s->M = S, s->L = G->W, s->N = H, s->K = o->K, s->C = o->DV;
    s->nc = G->Nc;
    s->nseq = nseq;
    if (G->Nc) { /* per head in output order and sequence: its cached keys (K x Nc), then values (Nc x DV) */
        const size_t kn = (size_t)(o->K * G->Nc), vn = (size_t)(G->Nc * o->DV);
        if (!(s->cache = ts_malloc((size_t)(H * nseq) * (kn + vn) * 4)))
            rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (int64_t j = 0; !rc && j < H * nseq; j++) {
            const size_t i = (size_t)(head[j] / o->grp);
            memcpy(s->cache + (size_t)j * (kn + vn), G->kcache + i * kn, kn * 4);
            memcpy(s->cache + (size_t)j * (kn + vn) + kn, G->vcache + i * vn, vn * 4);
        }
    }
    if (!rc && hmask) { /* per head in output order: the top K part's */
        const size_t per = (size_t)(S * NK);
        s->band = mask_is_band(hmask, H, S, NK);
        const size_t keep = mask_keep(s->band, S, NK);
        if (!(s->vals = ts_malloc((size_t)H * keep * 4)))
            rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (int64_t j = 0; !rc && j < H; j++) {
            const float *m = hmask + (size_t)j * per;
            float *d = s->vals + (size_t)j * keep;
            if (!s->band)
                memcpy(d, m, per * 4);
            else { /* d[S - 1 - r + c] = m[r][c]: the first column upwards, then row 0 */
                for (int64_t r = 0; r < S; r++)
                    d[S - 1 - r] = m[r * NK];
                memcpy(d + S - 1, m, (size_t)NK * 4);
            }
        }
    }
    s->lo = (float)o->scale;
    for (int64_t j = 0; j < H; j++) {
        s->cols[3 * j] = o->qc[head[j * nseq]];
        s->cols[3 * j + 1] = o->kc[head[j * nseq] / o->grp];
        s->cols[3 * j + 2] = o->vc[head[j * nseq] / o->grp];
    }
    s->in_n = (uint64_t)(G->R * G->W);
    s->out_n = (uint64_t)(G->R * H * o->DV);
    s->macs = (uint64_t)(H * nseq * S * NK * (o->K + o->DV));
    /* the fewest K parts (queries' and keys' columns split) and V parts (values' columns) whose
     * PEs fit */
    const uint64_t R = (uint64_t)S, K = (uint64_t)o->K, DV = (uint64_t)o->DV, sram = L->t->sram_bytes;
    uint64_t kp = 1, vp = 1;
    const uint64_t N = (uint64_t)NK, mb = hmask ? mask_keep(s->band, S, NK) * 4 : 0; /* in the top K part */
    const uint64_t nkv = (uint64_t)attn_nkv(s);
    while (kp < K && attn_kmem(R, N, ts_geom_cdiv(K, kp), nkv) + mb > sram)
        kp++;
    while (vp < DV && attn_vmem(N, ts_geom_cdiv(DV, vp), nkv) > sram)
        vp++;
    s->kr = s->akr = (uint32_t)kp;
    s->kc = s->akc = (uint32_t)vp;
    /* three V parts or more: a head's V parts after its first go down the column east of its K
     * parts (two columns a head), not along row 0 (vp columns a head); or, decoding one row
     * against a cache with no mask, the head's positions split in blocks down one column, each
     * PE a block's keys and values of every column (split_blocks) */
    s->fold = vp >= 3;
    if (s->fold && G->Nc && nseq == 1 && S == 1 && !hmask &&
        split_blocks(s, o, sram, L->t->height / 2, L->t->colours)) {
        s->fold = false;
        s->kr = s->kc = 1;
        s->w = (uint32_t)H;
        s->h = (uint32_t)ts_geom_cdiv(N, (uint64_t)s->nbk);
        s->mem = attn_bmem(K, DV, (uint64_t)s->nbk);
    } else {
        s->w = (uint32_t)(H * (int64_t)(s->fold ? 2 : vp));
        s->h = (uint32_t)(1 + (s->fold && vp - 2 > kp ? vp - 2 : kp));
        uint64_t mk = attn_kmem(R, N, ts_geom_cdiv(K, kp), nkv) + mb, mv = attn_vmem(N, ts_geom_cdiv(DV, vp), nkv);
        s->mem = mk > mv ? mk : mv;
    }
    if (s->mem > sram)
        rc = ts_lower_fail(L->err, ln, "keeps a score row%s and one query and key column of %lld rows: %.1f KiB in "
                           "one PE of %.1f KiB: does not fit by %.1f KiB (%llu bytes)", mb ? ", the mask" : "",
                           (long long)S,
                           s->mem / 1024.0, sram / 1024.0, (s->mem - sram) / 1024.0,
                           (unsigned long long)(s->mem - sram));
    for (int64_t j = 0; !rc && j < H; j++) {
        int64_t q0 = s->cols[3 * j], k0 = s->cols[3 * j + 1];
        if (q0 < k0 + o->K && k0 < q0 + o->K)
            rc = ts_lower_fail(L->err, ln, "reads head %lld's queries and keys from overlapping columns of '%s'",
                               (long long)j, ft->name);
    }
    return rc;
}

/* Bytes a rotary PE keeps for column c of rows of R: the value, and for a rotated one its
 * rotated value, its (own, partner) addresses and its two coefficients per row. */
static uint64_t rope_cost(bool rot, int64_t R) { return rot ? 16 + 8 * (uint64_t)R : 4; }

/* The runs of rotated columns j0 .. j0 + n of a rotary stage's (own, partner) pairs (int32, in
 * column order): columns one after another whose partners are one after another too, each at most
 * PIECE long. Llama's rotation (each half of a head the other's partner) gives two runs a head. */
static int64_t rope_runs(const void *pairs, int64_t j0, int64_t n)
{
    int64_t runs = 0, len = 0;
    int32_t c0 = 0, p0 = 0;
    for (int64_t j = j0; j < j0 + n; j++) {
        int32_t c, p;
        memcpy(&c, (const char *)pairs + 8 * j, 4);
        memcpy(&p, (const char *)pairs + 8 * j + 4, 4);
        if (!len || c != c0 + 1 || p != p0 + 1 || len >= PIECE) {
            runs++;
            len = 0;
        }
        c0 = c, p0 = p;
        len++;
    }
    return runs;
}

/* Runs of a PE's rotated columns up to which it rotates them with vector ops, a run at a time
 * (its code unrolled over the runs); more, and it takes the scalar loop (about 30 cycles a
 * column). */
enum { ROPE_RUNS_MAX = 256 };

/* Cycles a rotary PE takes for a row of n rotated columns in r runs: the vector form about 4 a
 * column (two products at 1 a cycle, a sum at 2, a move back at 1) and 24 a run (its
 * descriptors), assumed; the scalar loop about 30 a column. */
static uint64_t rope_row_cycles(int64_t n, int64_t r)
{
    return r <= ROPE_RUNS_MAX ? (uint64_t)(4 * n + 24 * r) : (uint64_t)(30 * n);
}

/* The rotary stage of region G (its rotation tables): the columns rotated must be the same in
 * every row of F, each with the same partner; split over PEs in a row by column ranges that keep
 * each partner with its column: each as wide as its SRAM allows, and with at most a share of the
 * rotated columns that keeps a PE's work (rope_row_cycles a row) near ROPE_CYCLES, or for a stream
 * of one row (a decode: its latency is every stage's) near ROPE_ROW_CYCLES, up to 64 PEs; node ln
 * names it. In a decode the PE with the row's last rotated part holds the row back while it
 * rotates its part, so its work is on the token's path: ROPE_ROW_CYCLES is small enough that a
 * part is about one head (no cut falls between a column and its partner, so none is smaller;
 * Llama 3 8B: 40 PEs of 128 rotated columns, about 560 cycles each, where 2,048 gave 14). */
enum { ROPE_CYCLES = 16384, ROPE_ROW_CYCLES = 256 };
static ts_status rope_stage(lw *L, const region *G, const ts_graph_node *ln, int node)
{
    const int64_t R = G->R, W = G->W;
    const char *fn = ts_graph_get_tensor(G->g, G->F)->name;
    int64_t nr = 0;
    for (int64_t c = 0; c < W; c++)
        nr += G->rset[c];
    for (int64_t e = 0; e < R * W; e++)
        if (G->rset[e] != G->rset[e % W] || (G->rset[e] && G->rp[e] % W != G->rp[e % W] % W))
            return ts_lower_fail(L->err, ln, "rotates other columns of '%s' in row %lld than in row 0 (or with other "
                                 "partners)", fn, (long long)(e / W));
    int *span = ts_calloc((size_t)W + 2, sizeof *span); /* pairs across each cut: span[p] > 0 for a cut before p */
    int64_t *cuts = ts_malloc((size_t)(2 * (nr ? nr : 1)) * sizeof *cuts);
    lw_stage *s = NULL;
    ts_status rc = TS_OK;
    if (!span || !cuts)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t c = 0; !rc && c < W; c++)
        if (G->rset[c]) {
            const int64_t p = G->rp[c] % W, lo = c < p ? c : p, hi = c < p ? p : c;
            span[lo + 1]++, span[hi + 1]--;
        }
    for (int64_t p = 1; !rc && p <= W; p++)
        span[p] += span[p - 1];
    const uint64_t sram = L->t->sram_bytes - 16;
    int32_t *pairs = ts_malloc((size_t)(2 * (nr ? nr : 1)) * sizeof *pairs);
    if (!pairs)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t c = 0, j = 0; !rc && c < W; c++)
        if (G->rset[c]) {
            pairs[2 * j] = (int32_t)c, pairs[2 * j + 1] = (int32_t)(G->rp[c] % W);
            j++;
        }
    const int64_t nrun = rc ? 0 : rope_runs(pairs, 0, nr);
    ts_free(pairs);
    uint64_t want = ts_geom_cdiv((uint64_t)R * rope_row_cycles(nr, nrun), R == 1 ? ROPE_ROW_CYCLES : ROPE_CYCLES);
    want = want < 1 ? 1 : want > 64 ? 64 : want;
    const int64_t cap = (int64_t)ts_geom_cdiv((uint64_t)nr, want); /* rotated columns a PE takes, about */
    int64_t np = 0, a = 0;
    uint64_t most = 0;
    while (!rc) {
        while (a < W && !G->rset[a])
            a++;
        if (a >= W)
            break;
        int64_t b = -1, last = -1, nrp = 0;
        uint64_t mem = 0;
        for (int64_t p = a + 1; p <= W; p++) { /* the part [a, p) */
            mem += rope_cost(G->rset[p - 1], R);
            nrp += G->rset[p - 1];
            if (mem > sram || (nrp > cap && b > a))
                break;
            last = G->rset[p - 1] ? p - 1 : last;
            if (!span[p])
                b = last + 1;
        }
        if (b <= a) {
            rc = ts_lower_fail(L->err, ln, "rotates columns of '%s' whose pair (from column %lld) and tables for %lld "
                               "rows do not fit one PE of %.1f KiB", fn, (long long)a, (long long)R,
                               L->t->sram_bytes / 1024.0);
            break;
        }
        uint64_t m = 0;
        for (int64_t c = a; c < b; c++)
            m += rope_cost(G->rset[c], R);
        most = m > most ? m : most;
        cuts[2 * np] = a, cuts[2 * np + 1] = b;
        np++;
        a = b;
    }
    ts_free(span);
    if (!rc && (!(s = ts_lww_add_stage(L, K_ROPE, node)) || !(s->vals = ts_malloc((size_t)(2 * nr + 2 * R * nr) * 4))))
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (rc) {
        ts_free(cuts);
        return rc;
    }
    s->cols = cuts;
    s->G = (uint32_t)np;
    s->w = s->G;
    s->M = R, s->L = W, s->N = nr;
    s->in_n = s->out_n = (uint64_t)(R * W);
    s->mem = most;
    for (int64_t c = 0, j = 0; c < W; c++) {
        if (!G->rset[c])
            continue;
        const int32_t own = (int32_t)c, par = (int32_t)(G->rp[c] % W);
        memcpy(&s->vals[2 * j], &own, 4);
        memcpy(&s->vals[2 * j + 1], &par, 4);
        for (int64_t r = 0; r < R; r++) {
            s->vals[2 * nr + 2 * (r * nr + j)] = G->rc1[r * W + c];
            s->vals[2 * nr + 2 * (r * nr + j) + 1] = G->rc2[r * W + c];
        }
        j++;
    }
    return TS_OK;
}

/* The region from the seeds: seed q's element i is the stream's row rows[i / its last dim] (i / its
 * last dim when rows is NULL), column off[q] + i % its last dim (the stream: rows of W); F names
 * it in messages. */
static ts_status attn_region(lw *L, int F, const int64_t *rows, const int *seed, const int64_t *off, int nseed,
                             int64_t W, int first, bool *done, int *out_t, const int64_t **out_rows)
{
    const ts_graph *g = L->g;
    const size_t nt = ts_graph_tensor_count(g), nn = ts_graph_node_count(g);
    region G = {.g = g, .F = F};
    const ts_graph_tensor *ft = ts_graph_get_tensor(g, F);
    G.W = W;
    G.R = ts_lww_rows(ts_graph_get_tensor(g, seed[0]), NULL);
    G.v = ts_calloc(nt, sizeof *G.v);
    bool *inreg = ts_calloc(nt, 1), *mine = ts_calloc(nn, 1);
    ts_status rc = TS_OK;
    int last = -1;
    if (!G.v || !inreg || !mine)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (!rc)
        rc = collect(L, F, seed, nseed, first, inreg, mine, &last);
    for (int q = 0; !rc && q < nseed; q++) {
        av *f = &G.v[seed[q]];
        const ts_graph_tensor *st = ts_graph_get_tensor(g, seed[q]);
        const int64_t n = ts_graph_tensor_elems(st), c = st->dims[st->rank - 1];
        f->kind = AV_MOVE;
        f->scale = 1.0;
        if (n / c != G.R)
            rc = ts_err_set(L->err, TS_EINPUT, "the attention's projections of '%s' have different rows", ft->name);
        else if (!(f->map = ts_malloc((size_t)n * sizeof *f->map)))
            rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (int64_t i = 0; !rc && i < n; i++)
            f->map[i] = (rows ? rows[i / c] : i / c) * W + off[q] + i % c;
    }
    for (size_t id = (size_t)first; !rc && id <= (size_t)last; id++)
        if (mine[id])
            rc = region_node(L, &G, ts_graph_get_node(g, (int)id));
    const ts_graph_node *ln = last >= 0 ? ts_graph_get_node(g, last) : NULL;
    const av *o = ln ? &G.v[ln->out[0]] : NULL;
    if (!rc && o->kind != AV_OUT)
        rc = ts_lower_fail(L->err, ln, "ends an attention region without its output (probabilities times values)");
    int64_t H = 0, *head = NULL, *orow = NULL;
    float *hmask = NULL;
    if (!rc)
        rc = out_heads(L, &G, ln, o, &H, &head, &orow);
    const int64_t S = G.S, nseq = H ? G.R / S : 0, NK = S + G.Nc; /* keys: the cache's, then the stream's */
    if (!rc && o->mask)
        rc = head_masks(L, ln, o, S, NK, H, nseq, head, &hmask);
    lw_stage *s = NULL;
    int named = last; /* the stage goes by the region's Softmax in reports */
    for (int id = first; !rc && id <= last; id++)
        if (mine[id] && ts_graph_get_node(g, id)->op == TS_OP_SOFTMAX)
            named = id;
    if (!rc && G.rset) { /* rotary positions: a stage before that rotates the queries' and keys' columns */
        int rn = named;
        for (int id = first; id <= last; id++)
            if (mine[id] && ts_graph_get_node(g, id)->op == TS_OP_MUL && rn == named)
                rn = id;
        rc = rope_stage(L, &G, ln, rn);
    }
    if (!rc && !(s = ts_lww_add_stage(L, K_ATTN, named)))
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (!rc && !(s->cols = ts_malloc((size_t)(3 * H) * sizeof *s->cols)))
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (!rc)
        rc = fill_stage(L, &G, o, ln, ft, H, head, hmask, s);
    if (!rc) { /* the output's rows in the stream's order: row orow[p] of the output is the p-th */
        bool same = true;
        for (int64_t p = 0; p < G.R; p++)
            same &= orow[p] == p;
        int64_t *m = same ? NULL : ts_lww_new_rows(L, G.R);
        if (!same && !m)
            rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (int64_t p = 0; m && p < G.R; p++)
            m[orow[p]] = p;
        *out_rows = m;
    }
    if (!rc) {
        for (size_t id = 0; id < nn; id++)
            done[id] |= mine[id];
        *out_t = ln->out[0];
    }
    ts_free(head);
    ts_free(orow);
    ts_free(hmask);
    ts_free(G.kcache);
    ts_free(G.vcache);
    ts_free(G.rc1);
    ts_free(G.rc2);
    ts_free(G.rp);
    ts_free(G.rset);
    for (size_t t = 0; G.v && t < nt; t++)
        av_free(&G.v[t]);
    ts_free(G.v);
    ts_free(inreg);
    ts_free(mine);
    return rc;
}

/* ---- emission ---- */

/* A sequence of a batch (s->nseq > 1) in a loop over its rows (r10 the count, the addresses in
 * r1 and r2, DSD 13 based on them): its code is then once per sequence, not once per row (a
 * sequence's rows unrolled, BERT-base's 4 sequences took about 250 KB of code per PE). The exp
 * constants (r9, r11-r14) are left alone: they hold across the sequences. */
static void attn_in_loop(lw_gen *G, const lw_stage *s, int n, const int *o, const int64_t *col, int64_t len,
                         const uint64_t *addr, const uint64_t *step, const int *stride, int junk)
{
    for (int q = 0; q < n; q++)
        ts_lww_op(G, WSE_OP_LI, 2, 1 + q, (int)addr[q]);
    int row = ts_lww_loop_head(G, 10, s->M);
    int64_t at = 0;
    for (int q = 0; q < n; q++) {
        const int k = o[q];
        if (col[k] > at)
            ts_lww_in_to_mem(G, s->cin, (uint64_t)junk, (uint64_t)(col[k] - at), 0);
        for (int64_t a = 0; a < len; a += PIECE) {
            const int c = len - a > PIECE ? PIECE : (int)(len - a);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 12, (int)s->cin, c);
            ts_lww_op(G, WSE_OP_DSDM, 4, 13, 0, c, stride[k]);
            ts_lww_op(G, WSE_OP_DSDBASE, 3, 13, 1 + k, (int)(a * stride[k] * 4));
            ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        }
        at = col[k] + len;
    }
    if (s->L > at)
        ts_lww_in_to_mem(G, s->cin, (uint64_t)junk, (uint64_t)(s->L - at), 0);
    for (int q = 0; q < n; q++)
        ts_lww_op(G, WSE_OP_ADDI, 3, 1 + q, 1 + q, (int)step[q]);
    ts_lww_loop_end(G, 10, row);
}

/* Every row of F: up to two column ranges [col[q], col[q] + len) to addr[q] + r * step[q] with
 * stride[q] (in column order, not overlapping), the rest into the junk word. */
static void attn_in(lw_gen *G, const lw_stage *s, int n, const int64_t *col, int64_t len, const uint64_t *addr,
                    const uint64_t *step, const int *stride, int junk)
{
    int o[2] = {0, 1};
    if (n == 2 && col[1] < col[0])
        o[0] = 1, o[1] = 0;
    if (s->nseq > 1) {
        attn_in_loop(G, s, n, o, col, len, addr, step, stride, junk);
        return;
    }
    for (int64_t r = 0; r < s->M; r++) {
        int64_t at = 0;
        for (int q = 0; q < n; q++) {
            const int k = o[q];
            if (col[k] > at)
                ts_lww_in_to_mem(G, s->cin, (uint64_t)junk, (uint64_t)(col[k] - at), 0);
            ts_lww_in_to_mem(G, s->cin, addr[k] + (uint64_t)r * step[k], (uint64_t)len, stride[k]);
            at = col[k] + len;
        }
        if (s->L > at)
            ts_lww_in_to_mem(G, s->cin, (uint64_t)junk, (uint64_t)(s->L - at), 0);
    }
}

/* DSD 2 += DSD 4 (based at w + k * wstep) times x[k] for k < n (x from r1): unrolled by 8
 * (r2 the rows, r3 the count, r4 the scalar). */
static void attn_macs(lw_gen *G, int wa, int64_t n, int wstep)
{
    enum { U = 8 };
    ts_lww_op(G, WSE_OP_LI, 2, 2, wa);
    if (n / U) {
        int l = ts_lww_loop_head(G, 3, n / U);
        for (int u = 0; u < U; u++) {
            ts_lww_op(G, WSE_OP_LD, 3, 4, 1, 4 * u);
            ts_lww_op(G, WSE_OP_DSDBASE, 3, 4, 2, u * wstep);
            ts_lww_op(G, WSE_OP_FMACS, 6, 2, 2, 4, 4, -1, -1);
        }
        ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, 4 * U);
        ts_lww_op(G, WSE_OP_ADDI, 3, 2, 2, U * wstep);
        ts_lww_loop_end(G, 3, l);
    }
    for (int u = 0; u < (int)(n % U); u++) {
        ts_lww_op(G, WSE_OP_LD, 3, 4, 1, 4 * u);
        ts_lww_op(G, WSE_OP_DSDBASE, 3, 4, 2, u * wstep);
        ts_lww_op(G, WSE_OP_FMACS, 6, 2, 2, 4, 4, -1, -1);
    }
}

/* The top K part's softmax of the scores row at 0 (N values), the scale in r14 (log2 e times
 * it): max, exp and sum, reciprocal at RCP, the row times it north on colour c. */
static void attn_softmax(lw_gen *G, int64_t N, int RCP, uint32_t c)
{
    ts_lww_row_max(G, N);
    ts_lww_softmax_scale(G, N, RCP, 5, (int)c);
}

/* K part i of head j (row 1 + i of the head's first column): columns [c0, c1) of the queries
 * and keys; per query row the partial scores, added on their way north (the bottom part sends,
 * the parts between add from the fabric to the fabric, the top adds into memory), then the top
 * part's softmax north to the V parts. */
static void attn_kpart(lw_gen *G, const lw_stage *s, uint32_t j, uint32_t i, int *ma, int *kt)
{
    const int64_t R = s->M, N = R + s->nc, kp = s->kr, c0 = i * s->K / kp, c1 = (i + 1) * s->K / kp, cs = c1 - c0;
    const int nkv = (int)attn_nkv(s); /* a batch decoding: each sequence's keys at KT + q (its block) */
    const int SC = 0, RCP = (int)N * 4, QA = RCP + 4, KT = QA + (int)(R * cs) * 4, ZA = KT + nkv * (int)(cs * N) * 4,
              JA = ZA + 4, QP = JA + 4, MP = QP + 4, MA = MP + 4;
    const bool mask = i == 0 && s->vals;
    *ma = MA;
    *kt = KT;
    const uint32_t r = 1 + i;
    const bool bottom = i + 1 == (uint32_t)kp;
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_N, P_R | (bottom ? 0 : P_S));
    if (!bottom)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, r + 1), P_S, P_R);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, r), P_R, P_N);
    ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
    ts_lww_op(G, WSE_OP_ST, 3, 15, 15, ZA);
    const int64_t col[2] = {s->cols[3 * j] + c0, s->cols[3 * j + 1] + c0};
    const int stride[2] = {1, (int)N}; /* the stream's keys after the cache's */
    for (int64_t q = 0; q < (s->nseq > 1 ? s->nseq : 1); q++) { /* the sequences one after another */
        const int KQ = KT + (int)(q % nkv * cs * N) * 4;
        const uint64_t addr[2] = {(uint64_t)QA, (uint64_t)(KQ + s->nc * 4)}, step[2] = {(uint64_t)cs * 4, 4};
        attn_in(G, s, 2, col, cs, addr, step, stride, JA);
        if (i == 0 && q == 0) {
            ts_lww_exp_consts(G);
            ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits((float)(1.4426950408889634 * s->lo)));
        }
        ts_lww_op(G, WSE_OP_DSDM, 4, 2, SC, (int)N, 1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 3, ZA, (int)N, 0);
        ts_lww_op(G, WSE_OP_DSDM, 4, 4, KQ, (int)N, 1);
        ts_lww_op(G, WSE_OP_LI, 2, 1, QA); /* the query row m's address, kept at QP */
        ts_lww_op(G, WSE_OP_ST, 3, 1, 15, QP);
        if (mask) {
            ts_lww_op(G, WSE_OP_LI, 2, 1, s->band ? MA + (int)(R - 1) * 4 : MA); /* row m's address, kept at MP */
            ts_lww_op(G, WSE_OP_ST, 3, 1, 15, MP);
            ts_lww_op(G, WSE_OP_DSDM, 4, 7, MA, (int)N, 1);
        }
        int row = ts_lww_loop_head(G, 10, R);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 2, 3, -1, -1);
        ts_lww_op(G, WSE_OP_LD, 3, 1, 15, QP);
        attn_macs(G, KQ, cs, (int)N * 4);
        ts_lww_op(G, WSE_OP_LD, 3, 1, 15, QP);
        ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, (int)cs * 4);
        ts_lww_op(G, WSE_OP_ST, 3, 1, 15, QP);
        if (kp > 1 && bottom) {
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 5, (int)lw_rcol(s, r), (int)N, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 5, 2, -1, -1);
        } else if (kp > 1 && i > 0) {
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 5, (int)lw_rcol(s, r), (int)N, 0);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 6, (int)lw_rcol(s, r + 1), (int)N);
            ts_lww_op(G, WSE_OP_FADDS, 5, 5, 2, 6, -1, -1);
        } else if (kp > 1) {
            ts_lww_op(G, WSE_OP_DSDIN, 3, 6, (int)lw_rcol(s, r + 1), (int)N);
            ts_lww_op(G, WSE_OP_FADDS, 5, 2, 2, 6, -1, -1);
        }
        if (mask) {
            ts_lww_op(G, WSE_OP_LD, 3, 1, 15, MP);
            ts_lww_op(G, WSE_OP_DSDBASE, 3, 7, 1, 0);
            ts_lww_op(G, WSE_OP_FADDS, 5, 2, 2, 7, -1, -1);
            ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, s->band ? -4 : (int)N * 4); /* a band's next row starts a value before */
            ts_lww_op(G, WSE_OP_ST, 3, 1, 15, MP);
        }
        if (i == 0)
            attn_softmax(G, N, RCP, lw_rcol(s, r));
        ts_lww_loop_end(G, 10, row);
    }
}

/* Where V part t of head j is (column x, row y of the stage) and its first K part's column:
 * along row 0 (column j vp + t), or folded (s->fold: the first at column 2 j, row 0, the others
 * down column 2 j + 1 from row 0). */
static void attn_vat(const lw_stage *s, uint32_t j, uint32_t t, uint32_t *x, uint32_t *y)
{
    *x = s->fold ? 2 * j + (t > 0) : j * s->kc + t;
    *y = s->fold && t > 0 ? t - 1 : 0;
}
static uint32_t attn_kx(const lw_stage *s, uint32_t j) { return s->fold ? 2 * j : j * s->kc; }

/* V part t of head j (attn_vat): columns [c0, c1) of the values; per probabilities row (from the
 * south on the first part, multicast east, and folded down, to the others) the outputs, then the
 * row chain (east; folded, down the head's second column and, on colour rcol 0, back up to row 0
 * and east). */
static void attn_vpart(lw_gen *G, const lw_stage *s, uint32_t j, uint32_t t, int *va)
{
    const int64_t R = s->M, N = R + s->nc, vp = s->kc, DV = s->C, c0 = t * DV / vp, c1 = (t + 1) * DV / vp, cv = c1 - c0;
    const uint32_t x = j * (uint32_t)vp + t, cp = lw_rcol(s, 1), back = lw_rcol(s, 0);
    const bool more = x + 1 < (uint32_t)(s->N * vp), lastp = t + 1 == (uint32_t)vp;
    const int nkv = (int)attn_nkv(s); /* a batch decoding: each sequence's values at VA + q (its block) */
    const int ACC = 0, PB = (int)cv * 4, VA = PB + (int)N * 4, ZA = VA + nkv * (int)(N * cv) * 4, JA = ZA + 4;
    *va = VA;
    const bool nexth = j + 1 < (uint32_t)s->N;
    uint32_t ci = lw_gcol(s, x - 1), co = lw_gcol(s, x);
    if (!s->fold) {
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R | (t == 0 ? P_S : 0) | (more ? P_E : 0));
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)cp, t == 0 ? P_S : P_W, P_R | (lastp ? 0 : P_E));
        if (x)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, lw_outp(s, !more));
    } else if (t == 0) { /* row 0 of the head's first column: the K parts below, part 1 east */
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R | P_S | P_E);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)cp, P_S, P_R | P_E);
        if (j) /* the previous head's chain, back up its second column */
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)(ci = back), P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, P_E);
    } else { /* down the head's second column: row t - 1 */
        const int from = t == 1 ? P_W : P_N;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, from, P_R | (lastp ? 0 : P_S) | (t == 1 && nexth ? P_E : 0));
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)cp, from, P_R | (lastp ? 0 : P_S));
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, from, P_R);
        if (lastp) /* the head's chain goes back up on colour back */
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)(co = back), P_R, P_N);
        else
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, P_S);
        if (t == 1) /* the head's chain east to the next head (the stage's output after the last) */
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)back, P_S, lw_outp(s, !nexth));
        else if (!lastp)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)back, P_S, P_N);
    }
    ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
    ts_lww_op(G, WSE_OP_ST, 3, 15, 15, ZA);
    const int64_t col[1] = {s->cols[3 * j + 2] + c0};
    const int stride[1] = {1};
    for (int64_t q = 0; q < (s->nseq > 1 ? s->nseq : 1); q++) { /* the sequences one after another */
        const int VQ = VA + (int)(q % nkv * N * cv) * 4;
        const uint64_t addr[1] = {(uint64_t)(VQ + s->nc * cv * 4)}, step[1] = {(uint64_t)cv * 4};
        attn_in(G, s, 1, col, cv, addr, step, stride, JA);
        ts_lww_op(G, WSE_OP_DSDM, 4, 2, ACC, (int)cv, 1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 3, ZA, (int)cv, 0);
        ts_lww_op(G, WSE_OP_DSDM, 4, 4, VQ, (int)cv, 1);
        int row = ts_lww_loop_head(G, 10, R);
        ts_lww_in_to_mem(G, cp, (uint64_t)PB, (uint64_t)N, 1);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 2, 3, -1, -1);
        ts_lww_op(G, WSE_OP_LI, 2, 1, PB);
        attn_macs(G, VQ, N, (int)cv * 4);
        ts_lww_in_to_out(G, ci, co, (uint64_t)(j * DV + c0));
        ts_lww_mem_to_out(G, (uint64_t)ACC, (uint64_t)cv, co);
        ts_lww_loop_end(G, 10, row);
    }
}

/* Patch the label of the branch at pc (operand a) to the next instruction. */
static void attn_patch(lw_gen *G, int pc, int a)
{
    if (!G->oom)
        G->s->insn[pc].a[a] = ts_lww_pc(G);
}

/* n sums at dst (zeroed from the word at za) of rows products: sum over r of the word at
 * vec + 4 r times the n words at mat + 4 n r (attn_macs). */
static void block_macs(lw_gen *G, int dst, int64_t n, int za, int mat, int64_t rows, int vec)
{
    ts_lww_op(G, WSE_OP_DSDM, 4, 2, dst, (int)n, 1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 3, za, (int)n, 0);
    ts_lww_op(G, WSE_OP_FMOVS, 4, 2, 3, -1, -1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 4, mat, (int)n, 1);
    ts_lww_op(G, WSE_OP_LI, 2, 1, vec);
    attn_macs(G, mat, rows, (int)n * 4);
}

/* The routes of block b of B of a split head's combining tree at each level l (tree_colour): a
 * block b = 0 mod 2^(l + 1) takes its child b + 2^l's from the south; a block b = 2^l mod
 * 2^(l + 1) sends its own north at level l (its lowest bit); the blocks between pass it on. */
static void tree_routes(lw_gen *G, const lw_stage *s, uint32_t b, uint32_t B)
{
    for (uint32_t l = 0; ((uint64_t)1 << l) < B; l++) {
        const uint64_t span = (uint64_t)1 << l, m = b % (2 * span);
        const int c = (int)tree_colour(s, l);
        if (m == 0 && b + span < B)
            ts_lww_op(G, WSE_OP_ROUTE, 3, c, P_S, P_R);
        else if (m == span)
            ts_lww_op(G, WSE_OP_ROUTE, 3, c, P_R, P_N);
        else if (m && m < span && b - m + span < B)
            ts_lww_op(G, WSE_OP_ROUTE, 3, c, P_S, P_N);
    }
}

/* Block b's (m, l) and outputs o combined with a child's (m', l') and o' coming on colour c,
 * with the online softmax's rescaling: M = max(m, m'), a = exp(scale (m' - M)), c = exp(scale
 * (m - M)) (one of them 1), l := a l' + c l, o := a o' + c o as o' comes in, one fmacs whichever
 * of a and c is 1: o + o' a, or o' + o c (the roundings of c o, then of the sum, as a product by
 * c before the sum would give them); the header at HD, the outputs at ACC (DSD 2). */
static void block_combine(lw_gen *G, uint32_t c, int HD, int IN, int64_t DV)
{
    /* (m', l') from below; M in r1, a in r6, c in r7 */
    ts_lww_in_to_mem(G, c, (uint64_t)IN, 2, 1);
    ts_lww_op(G, WSE_OP_LD, 3, 1, 15, HD);
    ts_lww_op(G, WSE_OP_LD, 3, 2, 15, IN);
    ts_lww_op(G, WSE_OP_FSUB, 3, 3, 2, 1);
    const int own = ts_lww_pc(G);
    ts_lww_op(G, WSE_OP_BLT, 3, 3, 15, 0); /* m' < m: M = m */
    ts_lww_op(G, WSE_OP_MOV, 2, 1, 2);     /* M = m', a = 1, c = exp(scale (m - m')) */
    ts_lww_op(G, WSE_OP_LD, 3, 2, 15, HD);
    ts_lww_exp(G);
    ts_lww_op(G, WSE_OP_MOV, 2, 7, 3);
    ts_lww_op(G, WSE_OP_FLI, 2, 6, ts_lww_bits(1.0f));
    ts_lww_op(G, WSE_OP_LI, 2, 5, 1); /* r5: whether c is the one not 1 */
    const int done = ts_lww_pc(G);
    ts_lww_op(G, WSE_OP_BR, 1, 0);
    attn_patch(G, own, 2);
    ts_lww_op(G, WSE_OP_LD, 3, 2, 15, IN); /* M = m, a = exp(scale (m' - m)), c = 1 */
    ts_lww_exp(G);
    ts_lww_op(G, WSE_OP_MOV, 2, 6, 3);
    ts_lww_op(G, WSE_OP_FLI, 2, 7, ts_lww_bits(1.0f));
    ts_lww_op(G, WSE_OP_LI, 2, 5, 0);
    attn_patch(G, done, 0);
    ts_lww_op(G, WSE_OP_LD, 3, 2, 15, IN + 4); /* l = a l' + c l */
    ts_lww_op(G, WSE_OP_FMUL, 3, 2, 2, 6);
    ts_lww_op(G, WSE_OP_LD, 3, 3, 15, HD + 4);
    ts_lww_op(G, WSE_OP_FMUL, 3, 3, 3, 7);
    ts_lww_op(G, WSE_OP_FADD, 3, 8, 2, 3);
    ts_lww_op(G, WSE_OP_ST, 3, 1, 15, HD);
    ts_lww_op(G, WSE_OP_ST, 3, 8, 15, HD + 4);
    ts_lww_op(G, WSE_OP_DSDIN, 3, 6, (int)c, (int)DV);
    const int byc = ts_lww_pc(G);
    ts_lww_op(G, WSE_OP_BNZ, 2, 5, 0);
    ts_lww_op(G, WSE_OP_FMACS, 6, 2, 2, 6, 6, -1, -1);
    const int end = ts_lww_pc(G);
    ts_lww_op(G, WSE_OP_BR, 1, 0);
    attn_patch(G, byc, 1);
    ts_lww_op(G, WSE_OP_FMACS, 6, 2, 6, 2, 7, -1, -1);
    attn_patch(G, end, 0);
}

/* The colour a split head's outputs go down its column on when the heads' outputs leave on rows
 * of their own (s->ko > 1): the row chain's colour that is not the stage's output colour (the
 * row chain's two are not used below row 0). */
static uint32_t heads_down(const lw_stage *s) { return s->set * 4 + 2 + (s->w & 1); }

/* The routes of block b of head j when the heads' outputs leave on rows of their own (s->ko > 1,
 * heads_rows in lower_wse_place.c): head q's outputs on row q kstep, east to the next stage's rows
 * that take them. Head j's top block sends them down its column (heads_down) to block j kstep,
 * whose core sends them east on the stage's output colour (head 0's top block east at once); the
 * blocks on row q kstep of the heads east of head q pass them on. */
static void heads_routes(lw_gen *G, const lw_stage *s, uint32_t j, uint32_t b)
{
    const uint32_t t = s->kstep ? s->kstep : 1, rj = j * t, down = heads_down(s);
    if (j && b < rj)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)down, b ? P_N : P_R, P_S);
    else if (j && b == rj)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)down, P_N, P_R);
    if (b == rj)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_R, P_E);
    else if (b % t == 0 && b / t < j)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_W, P_E);
}

/* Block b of head j's positions (s->nbk: [b nbk, +cnt) of the N = nc + 1), the PE at row b of
 * the head's column: it keeps the query, the block's keys (K^T rows of cnt) and values (cnt rows
 * of DV); the last block also the new token's key and value from the stream. From the row of F:
 * the block's scores, their max m and exp(scale (x - m)) in place, their sum l, the outputs
 * o = sum of p[n] v[n]; then the blocks combine by a tree up the column (tree_routes): block b
 * takes its children b + 1, b + 2, b + 4, ... (those below its lowest bit) one after another
 * (block_combine), then sends (m, l, o) north to b less its lowest bit. The top block divides o
 * by l and joins the heads' row chain east along row 0, or, when the heads' outputs leave on rows
 * of their own (s->ko > 1, heads_routes), sends them down the column to block j s->kstep, which
 * sends them east on its row. Nothing of a block waits on another
 * before its own outputs: the blocks compute side by side, the tree combines them in about log2
 * B levels. */
static void attn_block(lw_gen *G, const lw_stage *s, uint32_t j, uint32_t b, int *kt, int *va)
{
    const int64_t N = s->M + s->nc, nbk = s->nbk, B = (int64_t)ts_geom_cdiv((uint64_t)N, (uint64_t)nbk),
                  n0 = (int64_t)b * nbk, cnt = N - n0 < nbk ? N - n0 : nbk, K = s->K, DV = s->C;
    const bool top = b == 0, bottom = (int64_t)b + 1 == B, nexth = j + 1 < (uint32_t)s->N;
    const int SC = 0, HD = (int)nbk * 4, ACC = HD + 8, IN = ACC + (int)DV * 4, CW = IN + 8, ZA = CW + 4, JA = ZA + 4,
              QA = JA + 4, KT = QA + (int)K * 4, VA = KT + (int)(K * nbk) * 4;
    const uint32_t ci = lw_gcol(s, j - 1), co = lw_gcol(s, j);
    uint32_t low = 0; /* its lowest bit: the level it sends at */
    while (b && !(b >> low & 1))
        low++;
    *kt = KT;
    *va = VA;
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, top ? P_W : P_N, P_R | (bottom ? 0 : P_S) | (top && nexth ? P_E : 0));
    tree_routes(G, s, b, (uint32_t)B);
    if (s->ko > 1) /* each head's outputs on a row of its own (heads_routes) */
        heads_routes(G, s, j, b);
    else if (top && j)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
    if (top && s->ko <= 1)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, lw_outp(s, !nexth));
    ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
    ts_lww_op(G, WSE_OP_ST, 3, 15, 15, ZA);
    /* the row of F: the query; the last block the new key (at its column of K^T) and value */
    {
        const int64_t ls = s->nc - n0; /* the new token's place in the last block */
        int64_t col[3] = {s->cols[3 * j], s->cols[3 * j + 1], s->cols[3 * j + 2]}, len[3] = {K, K, DV};
        uint64_t addr[3] = {(uint64_t)QA, (uint64_t)(KT + ls * 4), (uint64_t)(VA + ls * DV * 4)};
        int stride[3] = {1, (int)cnt, 1}, o[3] = {0, 1, 2};
        const int n = bottom ? 3 : 1;
        for (int a = 0; a < n; a++) /* in column order */
            for (int c = a + 1; c < n; c++)
                if (col[o[c]] < col[o[a]]) {
                    const int t = o[a];
                    o[a] = o[c], o[c] = t;
                }
        int64_t at = 0;
        for (int a = 0; a < n; a++) {
            const int k = o[a];
            if (col[k] > at)
                ts_lww_in_to_mem(G, s->cin, (uint64_t)JA, (uint64_t)(col[k] - at), 0);
            ts_lww_in_to_mem(G, s->cin, addr[k], (uint64_t)len[k], stride[k]);
            at = col[k] + len[k];
        }
        if (s->L > at)
            ts_lww_in_to_mem(G, s->cin, (uint64_t)JA, (uint64_t)(s->L - at), 0);
    }
    ts_lww_exp_consts(G);
    ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits((float)(1.4426950408889634 * s->lo)));
    /* the block's scores, their max (r1), exp in place and sum (r8), kept at HD */
    block_macs(G, SC, cnt, ZA, KT, K, QA);
    ts_lww_row_max(G, cnt);
    ts_lww_exp_sum(G, cnt, SC);
    ts_lww_op(G, WSE_OP_ST, 3, 1, 15, HD);
    ts_lww_op(G, WSE_OP_ST, 3, 8, 15, HD + 4);
    /* its outputs: sum of p[n] v[n] (DSD 2 the accumulators at ACC) */
    block_macs(G, ACC, DV, ZA, VA, cnt, SC);
    for (uint32_t l = 0; (top || l < low) && (int64_t)b + ((int64_t)1 << l) < B; l++)
        block_combine(G, tree_colour(s, l), HD, IN, DV);
    if (!top) { /* (m, l) and o north */
        ts_lww_mem_to_out(G, (uint64_t)HD, (uint64_t)(2 + DV), tree_colour(s, low));
        if (s->ko > 1 && b == j * s->kstep) /* the head's outputs, from its top block, east on this row */
            ts_lww_in_to_out(G, heads_down(s), s->cout, (uint64_t)DV);
        return;
    }
    ts_lww_recip(G); /* o / l, then the row chain: the heads west of it, then its own */
    ts_lww_op(G, WSE_OP_ST, 3, 1, 15, CW);
    ts_lww_op(G, WSE_OP_DSDM, 4, 3, CW, (int)DV, 0);
    ts_lww_op(G, WSE_OP_FMULS, 5, 2, 2, 3, -1, -1);
    if (s->ko > 1) { /* head 0 east on row 0, the others down their column */
        ts_lww_mem_to_out(G, (uint64_t)ACC, (uint64_t)DV, j ? heads_down(s) : s->cout);
        return;
    }
    if (j)
        ts_lww_in_to_out(G, ci, co, (uint64_t)(j * DV));
    ts_lww_mem_to_out(G, (uint64_t)ACC, (uint64_t)DV, co);
}

/* The PEs of a stage whose heads' positions are split (s->nbk): head j's blocks down column j,
 * each with its cached keys and values. */
static ts_status emit_blocks(lw *L, ts_program *P, const lw_stage *s, lw_gen *G)
{
    const int64_t N = s->M + s->nc, nbk = s->nbk, K = s->K, DV = s->C;
    const uint32_t B = (uint32_t)ts_geom_cdiv((uint64_t)N, (uint64_t)nbk);
    for (uint32_t j = 0; j < (uint32_t)s->N; j++)
        for (uint32_t b = 0; b < B; b++) {
            const uint32_t pe = (s->y0 + b) * L->t->width + s->x + j;
            if (!ts_lww_pe_stream(P, L->t, s->x + j, s->y0 + b, G))
                return TS_ENOMEM;
            int kt = 0, va = 0;
            attn_block(G, s, j, b, &kt, &va);
            const int64_t n0 = (int64_t)b * nbk, cnt = N - n0 < nbk ? N - n0 : nbk,
                          nch = s->nc - n0 < cnt ? s->nc - n0 : cnt; /* its cached positions */
            const float *kc = s->cache + (size_t)j * (size_t)(K * s->nc + s->nc * DV), *vc = kc + K * s->nc;
            float *blk = ts_calloc((size_t)(K * cnt), 4);
            if (!blk)
                return TS_ENOMEM;
            for (int64_t k = 0; k < K; k++) /* K^T rows of cnt */
                memcpy(blk + k * cnt, kc + k * s->nc + n0, (size_t)nch * 4);
            ts_status rc =
                ts_program_add_segment(P, WSE_KIND_PE, pe, (uint64_t)kt, blk, (uint32_t)(K * cnt * 4), L->err);
            ts_free(blk);
            if (rc || (nch && ts_program_add_segment(P, WSE_KIND_PE, pe, (uint64_t)va, vc + n0 * DV,
                                                     (uint32_t)(nch * DV * 4), L->err)))
                return L->err->status;
        }
    return TS_OK;
}

bool ts_lww_attn_sizable(const lw_stage *s) { return !s->nc && !s->fold && !s->nbk && s->akc < 3; }

uint64_t ts_lww_attn_row_cost(const lw_stage *s, uint64_t kp, uint64_t vp)
{
    const uint64_t S = (uint64_t)s->M, W = (uint64_t)s->L;
    const uint64_t k = ts_geom_cdiv((uint64_t)s->K, kp) * (S + 3) + 30 * S;
    const uint64_t v = S * (ts_geom_cdiv((uint64_t)s->C, vp) + 3) + (uint64_t)(s->N * s->C);
    return W + (k > v ? k : v);
}

void ts_lww_attn_parts(lw_stage *s, uint32_t kp, uint32_t vp)
{
    const uint64_t R = (uint64_t)s->M, N = (uint64_t)s->M, nkv = (uint64_t)attn_nkv(s);
    const uint64_t mb = s->vals ? mask_keep(s->band, s->M, s->M) * 4 : 0;
    const uint64_t mk = attn_kmem(R, N, ts_geom_cdiv((uint64_t)s->K, kp), nkv) + mb;
    const uint64_t mv = attn_vmem(N, ts_geom_cdiv((uint64_t)s->C, vp), nkv);
    s->kr = kp;
    s->kc = vp;
    s->w = (uint32_t)(s->N * (int64_t)vp);
    s->h = 1 + kp;
    s->mem = mk > mv ? mk : mv;
}

ts_status ts_lww_emit_attn(lw *L, ts_program *P, size_t si, lw_gen *G)
{
    const lw_stage *s = &L->st[si];
    const int64_t nkv = attn_nkv(s);
    if (s->fold && s->fork) /* its output would go back down the column it comes up */
        return ts_lower_fail(L->err, ts_graph_get_node(L->g, s->node),
                             "is an attention whose heads take %u V parts each (folded into a column) and whose "
                             "output also goes to a skip path: not lowered", s->kc);
    if (s->nbk)
        return emit_blocks(L, P, s, G);
    for (uint32_t j = 0; j < (uint32_t)s->N; j++) {
        for (uint32_t t = 0; t < s->kc; t++) {
            uint32_t vx = 0, vy = 0;
            attn_vat(s, j, t, &vx, &vy);
            if (!ts_lww_pe_stream(P, L->t, s->x + vx, s->y0 + vy, G))
                return TS_ENOMEM;
            int va = 0;
            attn_vpart(G, s, j, t, &va);
            for (int64_t q = 0; s->nc && q < nkv; q++) { /* its columns' cached values, before the stream's */
                const int64_t DV = s->C, c0 = t * DV / s->kc, c1 = (t + 1) * DV / s->kc, cv = c1 - c0;
                const float *vc = s->cache + (size_t)(j * nkv + q) * (size_t)(s->K * s->nc + s->nc * DV) + s->K * s->nc;
                float *blk = ts_malloc((size_t)(s->nc * cv) * 4);
                if (!blk)
                    return TS_ENOMEM;
                for (int64_t r = 0; r < s->nc; r++)
                    memcpy(blk + r * cv, vc + r * DV + c0, (size_t)cv * 4);
                ts_status rc = ts_program_add_segment(P, WSE_KIND_PE, (s->y0 + vy) * L->t->width + s->x + vx,
                                                      (uint64_t)(va + q * (s->M + s->nc) * cv * 4), blk,
                                                      (uint32_t)(s->nc * cv * 4), L->err);
                ts_free(blk);
                if (rc)
                    return L->err->status;
            }
        }
        for (uint32_t i = 0; i < s->kr; i++) {
            if (!ts_lww_pe_stream(P, L->t, s->x + attn_kx(s, j), s->y0 + 1 + i, G))
                return TS_ENOMEM;
            int ma = 0, kt = 0;
            attn_kpart(G, s, j, i, &ma, &kt);
            const int64_t N = s->M + s->nc;
            const size_t per = mask_keep(s->band, s->M, N);
            for (int64_t q = 0; s->nc && q < nkv; q++) { /* its columns' cached keys (K^T rows of N) */
                const int64_t c0 = i * s->K / s->kr, c1 = (i + 1) * s->K / s->kr;
                const float *kc = s->cache + (size_t)(j * nkv + q) * (size_t)(s->K * s->nc + s->nc * s->C);
                float *blk = ts_calloc((size_t)((c1 - c0) * N), 4);
                if (!blk)
                    return TS_ENOMEM;
                for (int64_t c = c0; c < c1; c++)
                    memcpy(blk + (c - c0) * N, kc + c * s->nc, (size_t)s->nc * 4);
                ts_status rc = ts_program_add_segment(P, WSE_KIND_PE, (s->y0 + 1 + i) * L->t->width + s->x + attn_kx(s, j),
                                                      (uint64_t)(kt + q * (c1 - c0) * N * 4), blk,
                                                      (uint32_t)((c1 - c0) * N * 4), L->err);
                ts_free(blk);
                if (rc)
                    return L->err->status;
            }
            if (i == 0 && s->vals &&
                ts_program_add_segment(P, WSE_KIND_PE, (s->y0 + 1) * L->t->width + s->x + attn_kx(s, j), (uint64_t)ma,
                                       s->vals + j * per, (uint32_t)(per * 4), L->err))
                return L->err->status;
        }
    }
    return TS_OK;
}

ts_status ts_lww_attn_stage(lw *L, int F, const int64_t *rows, int first, bool *done, int *out_t,
                            const int64_t **out_rows)
{
    const ts_graph_tensor *ft = ts_graph_get_tensor(L->g, F);
    const int64_t off = 0;
    return attn_region(L, F, rows, &F, &off, 1, ft->dims[ft->rank - 1], first, done, out_t, out_rows);
}

bool ts_lww_is_proj(const ts_graph *g, int node, int F)
{
    const ts_graph_node *n = ts_graph_get_node(g, node);
    if (n->op != TS_OP_MATMUL || n->nin != 2 || n->in[0] != F)
        return false;
    const ts_graph_tensor *w = ts_graph_get_tensor(g, n->in[1]), *f = ts_graph_get_tensor(g, F);
    return lw_is_param(w) && w->rank == 2 && w->dims[0] == f->dims[f->rank - 1];
}

ts_status ts_lww_attn_proj(lw *L, int F, const int64_t *rows, int first, bool *done, int *out_t,
                           const int64_t **out_rows)
{
    const ts_graph *g = L->g;
    size_t nc = 0;
    const int *c = ts_graph_consumers(g, F, &nc);
    int seed[16];
    int64_t off[16], W = 0;
    int np = 0;
    bool bias = false;
    const ts_graph_tensor *ft = ts_graph_get_tensor(g, F);
    int64_t K;
    const int64_t M = ts_lww_rows(ft, &K);
    for (size_t q = 0; q < nc && np < 16; q++) { /* the projections in node order, each with its bias Add */
        int best = -1;
        for (size_t r = 0; r < nc; r++)
            if (ts_lww_is_proj(g, c[r], F) && !done[c[r]] && (best < 0 || c[r] < best))
                best = c[r];
        if (best < 0)
            break;
        done[best] = true;
        const ts_graph_node *n = ts_graph_get_node(g, best);
        seed[np] = n->out[0];
        off[np] = W;
        size_t nb = 0;
        const int *b = ts_graph_consumers(g, n->out[0], &nb);
        const ts_graph_node *a = nb == 1 ? ts_graph_get_node(g, b[0]) : NULL;
        const int64_t N = ts_graph_get_tensor(g, n->in[1])->dims[1];
        if (a && a->op == TS_OP_ADD && a->nin == 2) {
            int p = a->in[0] == n->out[0] ? a->in[1] : a->in[0];
            const ts_graph_tensor *pt = ts_graph_get_tensor(g, p);
            if (lw_is_param(pt) && ts_graph_tensor_elems(pt) == N) {
                done[b[0]] = true;
                seed[np] = a->out[0];
                bias = true;
            }
        }
        W += N;
        np++;
    }
    lw_stage *s = ts_lww_add_stage(L, K_MM, first);
    if (!s || !(s->wt = ts_malloc((size_t)(K * W) * 4)) || (bias && !(s->bias = ts_calloc((size_t)W, 4))))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int q = 0; q < np; q++) { /* the weights side by side, the biases too */
        const ts_graph_node *n = ts_graph_get_node(g, ts_graph_get_tensor(g, seed[q])->producer);
        if (n->op == TS_OP_ADD) {
            int p = ts_graph_get_tensor(g, n->in[0])->kind == TS_TENSOR_ACTIVATION ? n->in[1] : n->in[0];
            int mm = n->in[0] == p ? n->in[1] : n->in[0];
            for (int64_t j = 0; j < (q + 1 < np ? off[q + 1] : W) - off[q]; j++)
                s->bias[off[q] + j] = (float)ts_fill_value_f32(ts_graph_get_tensor(g, p), p, (uint64_t)j);
            n = ts_graph_get_node(g, ts_graph_get_tensor(g, mm)->producer);
        }
        const int wid = n->in[1];
        const ts_graph_tensor *w = ts_graph_get_tensor(g, wid);
        const int64_t N = w->dims[1];
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                s->wt[k * W + off[q] + j] = (float)ts_fill_value_f32(w, wid, (uint64_t)(k * N + j));
    }
    s->M = M, s->K = K, s->N = W;
    s->in_n = (uint64_t)(M * K);
    s->out_n = (uint64_t)(M * W);
    s->macs = (uint64_t)(M * K * W);
    return attn_region(L, F, rows, seed, off, np, W, first, done, out_t, out_rows);
}

/* A rotary PE's scalar loop over its n rotated columns of each row: the part at BUF, the rotated
 * values at T, the (own, partner) addresses at TAB then per row the two coefficients of each
 * column (r1 the pairs, r2 the coefficients, on from row to row; r9 the values). */
static void rope_scalar(lw_gen *G, int64_t n, int BUF, int T, int TAB)
{
    ts_lww_op(G, WSE_OP_LI, 2, 1, TAB);
    ts_lww_op(G, WSE_OP_LI, 2, 9, T);
    int l = ts_lww_loop_head(G, 11, n);
    ts_lww_op(G, WSE_OP_LD, 3, 3, 1, 0);
    ts_lww_op(G, WSE_OP_LD, 3, 4, 1, 4);
    ts_lww_op(G, WSE_OP_LD, 3, 5, 3, 0);
    ts_lww_op(G, WSE_OP_LD, 3, 6, 4, 0);
    ts_lww_op(G, WSE_OP_LD, 3, 7, 2, 0);
    ts_lww_op(G, WSE_OP_LD, 3, 8, 2, 4);
    ts_lww_op(G, WSE_OP_FMUL, 3, 5, 5, 7);
    ts_lww_op(G, WSE_OP_FMUL, 3, 6, 6, 8);
    ts_lww_op(G, WSE_OP_FADD, 3, 5, 5, 6);
    ts_lww_op(G, WSE_OP_ST, 3, 5, 9, 0);
    ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, 8);
    ts_lww_op(G, WSE_OP_ADDI, 3, 2, 2, 8);
    ts_lww_op(G, WSE_OP_ADDI, 3, 9, 9, 4);
    ts_lww_loop_end(G, 11, l);
    ts_lww_op(G, WSE_OP_LI, 2, 1, TAB); /* then over the part: every partner read before any is written */
    ts_lww_op(G, WSE_OP_LI, 2, 9, T);
    l = ts_lww_loop_head(G, 11, n);
    ts_lww_op(G, WSE_OP_LD, 3, 3, 1, 0);
    ts_lww_op(G, WSE_OP_LD, 3, 5, 9, 0);
    ts_lww_op(G, WSE_OP_ST, 3, 5, 3, 0);
    ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, 8);
    ts_lww_op(G, WSE_OP_ADDI, 3, 9, 9, 4);
    ts_lww_loop_end(G, 11, l);
}

/* A rotary PE's vector form, a run at a time (rope_runs): its n rotated columns (own, partner:
 * byte offsets in the part at BUF) from pairs, the rotated values at T, a run's partner products
 * at U, per row the coefficients c1 of the n columns then their c2 from r2 (on from row to row).
 * Per run: T := x c1, U := x' c2, T := T + U (the scalar loop's roundings, in its order), U taken
 * from U or U + 4, whichever is 4 mod 8 from the run's T (run + 1 words); then every run's T over
 * its columns (every partner read before any is written), unless direct: the part all rotated, its
 * columns in order, so T is already the rotated part. DSD registers 2 to 7. */
static void rope_vector(lw_gen *G, const int32_t *pairs, int64_t n, int BUF, int T, int U, bool direct)
{
    for (int pass = 0; pass < (direct ? 1 : 2); pass++)
        for (int64_t j = 0; j < n;) {
            int64_t k = 1;
            while (j + k < n && k < PIECE && pairs[2 * (j + k)] == pairs[2 * j] + 4 * k &&
                   pairs[2 * (j + k) + 1] == pairs[2 * j + 1] + 4 * k)
                k++;
            const int own = BUF + pairs[2 * j], par = BUF + pairs[2 * j + 1], t = T + (int)j * 4;
            ts_lww_op(G, WSE_OP_DSDM, 4, 4, own, (int)k, 1);
            ts_lww_op(G, WSE_OP_DSDM, 4, 6, t, (int)k, 1);
            if (pass) {
                ts_lww_op(G, WSE_OP_FMOVS, 4, 4, 6, -1, -1);
                j += k;
                continue;
            }
            ts_lww_op(G, WSE_OP_DSDM, 4, 2, 0, (int)k, 1);
            ts_lww_op(G, WSE_OP_DSDBASE, 3, 2, 2, (int)j * 4);
            ts_lww_op(G, WSE_OP_DSDM, 4, 3, 0, (int)k, 1);
            ts_lww_op(G, WSE_OP_DSDBASE, 3, 3, 2, (int)(n + j) * 4);
            ts_lww_op(G, WSE_OP_DSDM, 4, 5, par, (int)k, 1);
            /* U in the other half of the banks from T's run (4 mod 8 from it), so the add of the
             * two runs in memory goes at its full width */
            ts_lww_op(G, WSE_OP_DSDM, 4, 7, (t - U) % 8 ? U : U + 4, (int)k, 1);
            ts_lww_op(G, WSE_OP_FMULS, 5, 6, 4, 2, -1, -1);
            ts_lww_op(G, WSE_OP_FMULS, 5, 7, 5, 3, -1, -1);
            ts_lww_op(G, WSE_OP_FADDS, 5, 6, 6, 7, -1, -1);
            j += k;
        }
}

ts_status ts_lww_emit_rope(lw *L, ts_program *P, lw_gen *G, const lw_stage *s)
{
    /* PE g: part G - 1 - g, columns [a, b) of each row (the first PE the last part: it passes the
     * parts before on at once, and all compute side by side, as the elementwise stages' parts);
     * the part at BUF, the rotated values at T; the vector form (rope_vector, when its runs are
     * few) then a run's partner products at U and per row the n c1 then the n c2 at TAB; the scalar
     * loop (rope_scalar) the (own, partner) addresses at TAB, then per row each column's (c1, c2) */
    const int64_t W = s->L, nr = s->N, R = s->M;
    for (uint32_t g = 0; g < s->G; g++) {
        const uint32_t pt = s->G - 1 - g;
        const int64_t a = s->cols[2 * pt], b = s->cols[2 * pt + 1];
        int64_t j0 = 0, n = 0; /* its rotated columns: j0 .. j0 + n of the stage's, in column order */
        for (int64_t j = 0; j < nr; j++) {
            int32_t c;
            memcpy(&c, &s->vals[2 * j], 4);
            j0 += c < a;
            n += c >= a && c < b;
        }
        const bool vec = rope_runs(s->vals, j0, n) <= ROPE_RUNS_MAX;
        bool direct = vec && n == b - a; /* every column rotated, in order: T goes out as it is */
        int64_t run = 0; /* the longest run (the vector form's U) */
        for (int64_t j = 0, k = 0; vec && j < n; j++) {
            int32_t c, p, c0, p0;
            memcpy(&c, &s->vals[2 * (j0 + j)], 4);
            memcpy(&p, &s->vals[2 * (j0 + j) + 1], 4);
            if (j) {
                memcpy(&c0, &s->vals[2 * (j0 + j - 1)], 4);
                memcpy(&p0, &s->vals[2 * (j0 + j - 1) + 1], 4);
            }
            k = j && c == c0 + 1 && p == p0 + 1 && k < PIECE ? k + 1 : 1;
            run = k > run ? k : run;
        }
        const uint32_t ci = g ? lw_gcol(s, g - 1) : s->cin, co = lw_gcol(s, g);
        const int BUF = 0, T = (int)(b - a) * 4, U = T + (int)n * 4, TAB = vec ? U + (int)run * 4 + 4 : U;
        float *tab = ts_malloc((size_t)(2 * n + 2 * R * n) * 4);
        int32_t *pairs = ts_malloc((size_t)(2 * n + 1) * 4);
        if (!tab || !pairs) {
            ts_free(tab);
            ts_free(pairs);
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
        for (int64_t j = 0; j < n; j++) {
            int32_t c, p;
            memcpy(&c, &s->vals[2 * (j0 + j)], 4);
            memcpy(&p, &s->vals[2 * (j0 + j) + 1], 4);
            pairs[2 * j] = (int32_t)((c - a) * 4), pairs[2 * j + 1] = (int32_t)((p - a) * 4);
            direct &= pairs[2 * j] == (int32_t)j * 4;
            for (int64_t r = 0; r < R; r++) {
                const float c1 = s->vals[2 * nr + 2 * (r * nr + j0 + j)], c2 = s->vals[2 * nr + 2 * (r * nr + j0 + j) + 1];
                if (vec) {
                    tab[2 * r * n + j] = c1;
                    tab[2 * r * n + n + j] = c2;
                } else {
                    tab[2 * n + 2 * (r * n + j)] = c1;
                    tab[2 * n + 2 * (r * n + j) + 1] = c2;
                }
            }
        }
        if (!vec)
            memcpy(tab, pairs, (size_t)(2 * n) * 4);
        const uint32_t id = s->y0 * L->t->width + s->x + g;
        const uint64_t bytes = (uint64_t)((vec ? 0 : 2 * n) + 2 * R * n) * 4;
        ts_status rc = bytes ? ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)TAB, tab, (uint32_t)bytes, L->err)
                             : TS_OK;
        ts_free(tab);
        if (rc || !ts_lww_pe_stream(P, L->t, s->x + g, s->y0, G)) {
            ts_free(pairs);
            return rc ? rc : TS_ENOMEM;
        }
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, lw_outp(s, g + 1 == s->G));
        ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
        ts_lww_op(G, WSE_OP_LI, 2, 2, vec ? TAB : TAB + (int)n * 8);
        int row = ts_lww_loop_head(G, 10, R);
        if (a)
            ts_lww_in_to_out(G, ci, co, (uint64_t)a);
        ts_lww_in_to_mem(G, ci, (uint64_t)BUF, (uint64_t)(b - a), 1);
        if (vec) {
            rope_vector(G, pairs, n, BUF, T, U, direct);
            ts_lww_op(G, WSE_OP_ADDI, 3, 2, 2, (int)n * 8);
        } else {
            rope_scalar(G, n, BUF, T, TAB);
        }
        ts_lww_mem_to_out(G, (uint64_t)(direct ? T : BUF), (uint64_t)(b - a), co);
        if (W > b)
            ts_lww_in_to_out(G, ci, co, (uint64_t)(W - b));
        ts_lww_loop_end(G, 10, row);
        ts_free(pairs);
    }
    return TS_OK;
}
