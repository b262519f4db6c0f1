/* workloads/ipu/lower_ipu_move.c — Concat, Slice, Expand and Gather with constant indices on the IPU,
 * planner (a): data movements.
 *
 * Each output element is a copy of one element of one input, so the operator is a list of runs:
 * output elements [d, d + n) are input k's elements [s, s + n) (move_runs). The output is placed
 * flat, `chunk` elements a tile, the chunk a multiple of the operator's period (the elements from
 * its outermost touched axis in: a row of a last-axis Concat or Slice) or a divisor of it, so that
 * every tile's runs lie at the same offsets in its chunk; runs are cut at chunk boundaries. A
 * tile's runs of one input with equal lengths, equally far apart in the output and in the input,
 * are one strided set (lwi_gather's nr ranges); the sets of all tiles with the same input, offset
 * in the chunk and strides are one gather into the output buffer, one exchange (pieces a tile holds
 * itself copied by its supervisor), then a chip-wide sync. Runs of a weight or constant input (the
 * ViT class token, Expand of a weight) are initial data at the same offsets of a buffer beside the
 * operator's weights, copied into the output by the tile's supervisor. When the input is laid out as the output would
 * be, nothing moves: a Slice of whole leading rows or an Expand that broadcasts nothing reads its
 * input in place, as Reshape does.
 */
#include <string.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"

/* A run: output elements [d, d + n) are input k's elements [s, s + n). */
typedef struct mv_run { uint64_t d, s, n; uint32_t k; } mv_run;
/* A tile's strided set: nr runs of input k of n elements, the j-th from s + j*sst into chunk
 * offset off + j*dstr. */
typedef struct mv_set { uint32_t tile, k, nr; uint64_t off, s, n, sst, dstr; } mv_set;

typedef struct mv {
    lw *L;
    const ts_graph_node *nd;
    const ts_graph_tensor *Y;
    uint64_t N;                    /* output elements */
    uint64_t period;               /* elements from the outermost touched axis in */
    mv_run *run; size_t nrun, caprun; /* owned */
    mv_set *set; size_t nset, capset; /* owned */
} mv;

static ts_status mv_oom(const mv *M) { return ts_err_set(M->L->err, TS_ENOMEM, "out of memory lowering '%s'", M->nd->name); }

/* Output element at multi-index idx: its input (*k) and element there. */
static uint64_t mv_source(const mv *M, const int64_t *idx, uint32_t *k)
{
    const ts_graph *g = M->L->g;
    const ts_graph_node *n = M->nd;
    int r = M->Y->rank;
    int64_t ii[TS_GRAPH_MAX_RANK];
    const ts_graph_tensor *X = ts_graph_get_tensor(g, n->in[0]);
    *k = 0;
    if (n->op == TS_OP_SLICE) {
        for (int a = 0; a < r; a++)
            ii[a] = a < n->attrs.nslice ? n->attrs.starts[a] + idx[a] * n->attrs.steps[a] : idx[a];
    } else if (n->op == TS_OP_CONCAT) {
        int64_t ax = ts_graph_norm_axis(n->attrs.axis, r), at = idx[ax];
        memcpy(ii, idx, sizeof(int64_t) * (size_t)r);
        for (uint32_t i = 0; i < n->nin; i++) {
            X = ts_graph_get_tensor(g, n->in[i]);
            if (at < X->dims[ax]) {
                *k = i;
                break;
            }
            at -= X->dims[ax];
        }
        ii[ax] = at;
    } else if (n->op == TS_OP_GATHER) { /* constant indices: the axis's index from the table */
        const ts_graph_tensor *I = ts_graph_get_tensor(g, n->in[1]);
        int xr = X->rank, ri = I->rank;
        int64_t ax = ts_graph_norm_axis(n->attrs.axis, xr);
        uint64_t f = 0;
        for (int a = 0; a < ri; a++)
            f = f * (uint64_t)I->dims[a] + (uint64_t)idx[ax + a];
        int64_t v = I->dtype == TS_DT_I32 ? ((const int32_t *)I->data)[f] : ((const int64_t *)I->data)[f];
        for (int a = 0; a < ax; a++)
            ii[a] = idx[a];
        ii[ax] = v < 0 ? v + X->dims[ax] : v;
        for (int a = (int)ax + 1; a < xr; a++)
            ii[a] = idx[a - 1 + ri];
        r = xr;
    } else { /* Expand: the input's axes aligned right, broadcast where it has 1 */
        int off = r - X->rank;
        for (int a = 0; a < X->rank; a++)
            ii[a] = X->dims[a] == 1 ? 0 : idx[a + off];
        r = X->rank;
    }
    uint64_t s = 0;
    for (int a = 0; a < r; a++)
        s = s * (uint64_t)X->dims[a] + (uint64_t)ii[a];
    return s;
}

/* The runs, in output order, and the period. */
static ts_status mv_runs(mv *M)
{
    const ts_graph_tensor *Y = M->Y;
    const ts_graph_node *n = M->nd;
    const ts_graph_tensor *X = ts_graph_get_tensor(M->L->g, n->in[0]);
    int r = Y->rank, outer = r; /* the outermost axis the operator touches */
    for (int a = 0; a < r; a++) {
        bool touched;
        if (n->op == TS_OP_SLICE)
            touched = a < n->attrs.nslice && (n->attrs.starts[a] != 0 || n->attrs.steps[a] != 1 ||
                                              Y->dims[a] != X->dims[a]);
        else if (n->op == TS_OP_CONCAT)
            touched = a == ts_graph_norm_axis(n->attrs.axis, r);
        else if (n->op == TS_OP_GATHER)
            touched = a == ts_graph_norm_axis(n->attrs.axis, X->rank);
        else
            touched = a >= r - X->rank ? X->dims[a - (r - X->rank)] != Y->dims[a] : true;
        if (touched) {
            outer = a;
            break;
        }
    }
    M->period = 1;
    for (int a = outer; a < r; a++)
        M->period *= (uint64_t)Y->dims[a];
    if (outer == r)
        M->period = M->N;
    int64_t idx[TS_GRAPH_MAX_RANK] = {0};
    for (uint64_t e = 0; e < M->N; e++) {
        uint32_t k;
        uint64_t s = mv_source(M, idx, &k);
        mv_run *q = M->nrun ? &M->run[M->nrun - 1] : NULL;
        if (q && q->k == k && q->s + q->n == s)
            q->n++;
        else {
            if (ts_grow((void **)&M->run, &M->caprun, M->nrun + 1, sizeof *M->run))
                return mv_oom(M);
            M->run[M->nrun++] = (mv_run){e, s, 1, k};
        }
        for (int a = r - 1; a >= 0 && ++idx[a] == Y->dims[a]; a--)
            idx[a] = 0;
    }
    return TS_OK;
}

/* Elements a tile: about an even share of the tiles, a multiple of the period or a divisor of it
 * (halves: even). */
static uint64_t mv_chunk(const mv *M, uint32_t es)
{
    uint64_t c0 = ts_geom_cdiv(M->N, M->L->T), P = M->period, chunk;
    if (P >= c0) {
        uint64_t k = P / c0;
        while (k > 1 && P % k)
            k--;
        chunk = P / k;
    } else
        chunk = ts_geom_cdiv(c0, P) * P;
    if (es == 2 && chunk % 2)
        chunk *= 2;
    return chunk;
}

/* The runs cut at chunk boundaries, grouped per tile into strided sets. */
static ts_status mv_sets(mv *M, uint64_t chunk)
{
    for (size_t i = 0; i < M->nrun; i++) {
        const mv_run *q = &M->run[i];
        for (uint64_t d = q->d; d < q->d + q->n;) {
            uint32_t t = (uint32_t)(d / chunk);
            uint64_t end = (uint64_t)(t + 1) * chunk < q->d + q->n ? (uint64_t)(t + 1) * chunk : q->d + q->n;
            uint64_t s = q->s + (d - q->d), n = end - d, off = d % chunk;
            mv_set *p = M->nset ? &M->set[M->nset - 1] : NULL;
            bool join = p && p->tile == t && p->k == q->k && p->n == n;
            if (join && p->nr == 1 && off > p->off && s >= p->s) {
                p->dstr = off - p->off;
                p->sst = s - p->s;
            } else if (join)
                join = p->nr > 1 && off == p->off + p->nr * p->dstr && s == p->s + p->nr * p->sst;
            if (join)
                p->nr++;
            else {
                if (ts_grow((void **)&M->set, &M->capset, M->nset + 1, sizeof *M->set))
                    return mv_oom(M);
                M->set[M->nset++] = (mv_set){t, q->k, 1, off, s, n, 0, 0};
            }
            d = end;
        }
    }
    return TS_OK;
}

static bool mv_placed(const lw *L, int x) { return L->pl[x].ntiles != 0; }

/* Runs of weight or constant inputs: initial data at their chunk offsets of a buffer, copied into
 * the output by the supervisor of their tile. */
static ts_status mv_static(mv *M, uint64_t chunk, uint32_t es, uint64_t out)
{
    lw *L = M->L;
    bool any = false;
    for (size_t i = 0; i < M->nset && !any; i++)
        any = !mv_placed(L, M->nd->in[M->set[i].k]);
    if (!any)
        return TS_OK;
    if (es != 4)
        return lwi_unsupported(L, M->nd, "a weight input of an operator on f16 halves");
    uint64_t wa = lwi_salloc(L, chunk * 4);
    float *v = ts_calloc(chunk, 4);
    if (!v)
        return mv_oom(M);
    ts_status rc = TS_OK;
    for (size_t i = 0; i < M->nset && rc == TS_OK;) {
        uint32_t t = M->set[i].tile;
        uint64_t lo = chunk, hi = 0;
        for (; i < M->nset && M->set[i].tile == t; i++) {
            const mv_set *p = &M->set[i];
            int x = M->nd->in[p->k];
            if (mv_placed(L, x))
                continue;
            const ts_graph_tensor *X = ts_graph_get_tensor(L->g, x);
            for (uint32_t j = 0; j < p->nr; j++) {
                uint64_t o = p->off + j * p->dstr;
                for (uint64_t e = 0; e < p->n; e++)
                    v[o + e] = ts_fill_value_f32(X, x, p->s + j * p->sst + e);
                S(t, SETZI, RM(1), (int32_t)(wa + o * 4), 0);
                S(t, SETZI, RM(2), (int32_t)(out + o * 4), 0);
                S(t, SETZI, RM(3), (int32_t)p->n, 0);
                S(t, RPT, RM(3), 2, 0);
                S(t, LD32STEP, RM(4), RM(1), 4);
                S(t, ST32STEP, RM(4), RM(2), 4);
                lo = o < lo ? o : lo;
                hi = o + p->n > hi ? o + p->n : hi;
            }
        }
        if (hi > lo)
            rc = lwi_seg(L, t, wa + lo * 4, v + lo, (hi - lo) * 4);
    }
    ts_free(v);
    return rc;
}

/* The sets of one input at one chunk offset with the same strides: one gather, then a sync. */
static ts_status mv_gathers(mv *M, lw_scr *sc, uint32_t tn, uint64_t out, uint32_t es)
{
    lw *L = M->L;
    bool *done = ts_calloc(M->nset ? M->nset : 1, sizeof *done);
    if (!done)
        return mv_oom(M);
    ts_status rc = TS_OK;
    for (size_t i = 0; i < M->nset && rc == TS_OK; i++) {
        const mv_set *p = &M->set[i];
        int x = M->nd->in[p->k];
        if (done[i] || !mv_placed(L, x))
            continue;
        memset(sc->hi, 0, tn * sizeof *sc->hi);
        memset(sc->lo, 0, tn * sizeof *sc->lo);
        memset(sc->nr, 0, tn * sizeof *sc->nr);
        for (size_t j = i; j < M->nset; j++) {
            const mv_set *o = &M->set[j];
            bool same = o->k == p->k && o->off == p->off && o->sst == p->sst && o->dstr == p->dstr;
            if (done[j] || !same || sc->nr[o->tile])
                continue;
            done[j] = true;
            sc->lo[o->tile] = o->s;
            sc->hi[o->tile] = o->s + o->n;
            sc->nr[o->tile] = o->nr;
        }
        if (es == 2 && ((p->off | p->n | p->s) % 2)) {
            rc = lwi_unsupported(L, M->nd, "f16 halves in runs that are not whole 32-bit words");
            break;
        }
        bool co = L->coalesce;
        L->into = out + p->off * es;
        L->coalesce = true;
        rc = lwi_gather(L, x, tn, sc->lo, sc->hi, sc->nr, p->sst, p->dstr, true, sc->where);
        L->into = 0;
        L->coalesce = co;
        lwi_sync_all(L);
    }
    ts_free(done);
    return rc;
}

/* In place: the output is its first input's elements in the same order (a Slice of whole leading
 * rows from row 0, an Expand that broadcasts nothing, a Concat of one input), an activation or graph
 * input: its memory, as for Reshape. */
static bool mv_in_place(const mv *M)
{
    ts_tensor_kind kd = ts_graph_get_tensor(M->L->g, M->nd->in[0])->kind;
    return M->nrun == 1 && M->run[0].s == 0 && M->run[0].k == 0 &&
           (kd == TS_TENSOR_ACTIVATION || kd == TS_TENSOR_INPUT);
}

bool lwi_move_alias(lw *L, const ts_graph_node *n)
{
    if (n->op != TS_OP_CONCAT && n->op != TS_OP_SLICE && n->op != TS_OP_EXPAND && n->op != TS_OP_GATHER)
        return false;
    mv M = {.L = L, .nd = n, .Y = ts_graph_get_tensor(L->g, n->out[0])};
    M.N = (uint64_t)ts_graph_tensor_elems(M.Y);
    bool in = M.N && M.Y->rank >= 0 && mv_runs(&M) == TS_OK && mv_in_place(&M);
    ts_free(M.run);
    if (L->err && !in) { /* mv_runs failing here fails again when the operator is lowered */
        ts_err_free(L->err);
        ts_err_init(L->err);
    }
    return in;
}

ts_status lwi_lower_move(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    mv M = {.L = L, .nd = n, .Y = ts_graph_get_tensor(L->g, n->out[0])};
    M.N = (uint64_t)ts_graph_tensor_elems(M.Y);
    uint32_t es = 0;
    bool placed = false;
    for (size_t i = 0; i < n->nin && !(n->op != TS_OP_CONCAT && i > 0); i++) {
        const lw_place *P = &L->pl[n->in[i]];
        if (!P->ntiles)
            continue;
        placed = true;
        if (es && P->es != es)
            return lwi_unsupported(L, n, "inputs held as f16 halves and as f32 words");
        es = P->es;
    }
    if (!placed) /* weights only (ViT's class token expanded): initial data, in f32 words */
        es = 4;
    if (!M.N)
        return lwi_unsupported(L, n, "an empty output");
    ts_status rc = mv_runs(&M);
    if (rc == TS_OK && mv_in_place(&M)) {
        if ((rc = lwi_need_placed(L, n, n->in[0])) == TS_OK)
            L->pl[n->out[0]] = L->pl[n->in[0]];
        ts_free(M.run);
        return rc;
    }
    uint64_t chunk = mv_chunk(&M, es);
    uint32_t tn = (uint32_t)ts_geom_cdiv(M.N, chunk);
    if (rc == TS_OK)
        rc = mv_sets(&M, chunk);
    uint64_t(*av)[2] = ts_calloc(n->nin, sizeof *av);
    if (!av && rc == TS_OK)
        rc = mv_oom(&M);
    size_t nav = 0;
    for (size_t i = 0; av && i < n->nin; i++)
        if (mv_placed(L, n->in[i]))
            lwi_elem_span(L, L->pl[n->in[i]].addr, L->pl[n->in[i]].chunk * es, av[nav++]);
    uint64_t out = lwi_alloc_apart(L, chunk * es, (const uint64_t(*)[2])av, nav);
    ts_free(av);
    if (rc == TS_OK)
        rc = mv_static(&M, chunk, es, out);
    if (rc == TS_OK)
        rc = mv_gathers(&M, sc, tn, out, es);
    ts_free(M.run);
    ts_free(M.set);
    if (rc != TS_OK)
        return rc;
    lwi_use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = chunk, .addr = out, .es = es};
    return TS_OK;
}
