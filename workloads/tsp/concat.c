/* workloads/tsp/concat.c — Concat, Slice, Transpose and Expand as streamed products (see
 * products.c, docs/lowering-tsp.md, *Moving values*).
 *
 * A vector holds 320 channels of one pixel; moving channels to other lanes (NeRF's Concat puts 63
 * input channels in lanes 256..318, a Slice of the last axis takes channels 768..1535) is not
 * something the VXM can do, and the planes can: every channel tile of every input is one
 * reduction block of 0/1 weights (weight 1 from the input lane that output channel n comes from),
 * the int32 sum is the value itself, and requantisation with scale 1 gives it back as int8,
 * exactly. Moving whole pixels (a Concat or Slice along another axis, a Transpose that keeps the
 * channel axis, an Expand) is the same with each output pixel reading the input pixel it comes
 * from. Lanes past an input's channels meet zero weights, so whatever they hold does not matter.
 *
 * A tensor's pixels are its indexes over every axis but the channel axis (axis 1 of an NCHW
 * image, else the last), row-major; the maps below go from an output index to an input index.
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <string.h>

int lt_cat_input(const lt_cat *c, uint32_t kt)
{
    int i = 0;
    while (i + 1 < c->n && kt >= c->kt0[i + 1])
        i++;
    return i;
}

/* The channel of input i that output channel n comes from, -1 for none. */
static int64_t src_chan(const lt_cat *c, int i, uint64_t n)
{
    int64_t ax = c->cax, ch = (int64_t)n;
    switch (c->op) {
    case TS_OP_CONCAT:
        if (c->ax != ax)
            return ch;
        return ch >= c->off[i] && ch < c->off[i] + c->id[i][ax] ? ch - c->off[i] : -1;
    case TS_OP_SLICE: return c->start[ax] + ch * c->step[ax];
    case TS_OP_EXPAND: return c->id[0][ax] == 1 ? 0 : ch;
    default: return ch; /* Transpose keeps the channel axis */
    }
}

/* The pixel of input i that output pixel m comes from, -1 for none. */
static int64_t src_pix(const lt_cat *c, int i, uint64_t m)
{
    int64_t oi[TS_GRAPH_MAX_RANK], ii[TS_GRAPH_MAX_RANK];
    for (int k = c->r - 1; k >= 0; k--) {
        if (k == c->cax) {
            oi[k] = 0;
            continue;
        }
        oi[k] = (int64_t)(m % (uint64_t)c->od[k]);
        m /= (uint64_t)c->od[k];
    }
    for (int k = 0; k < c->r; k++) {
        switch (c->op) {
        case TS_OP_CONCAT:
            ii[k] = oi[k];
            if (k == c->ax && k != c->cax) {
                if (oi[k] < c->off[i] || oi[k] >= c->off[i] + c->id[i][k])
                    return -1;
                ii[k] = oi[k] - c->off[i];
            }
            break;
        case TS_OP_SLICE: ii[k] = k == c->cax ? 0 : c->start[k] + oi[k] * c->step[k]; break;
        case TS_OP_EXPAND: ii[k] = c->id[0][k] == 1 ? 0 : oi[k]; break;
        default: ii[c->perm[k]] = oi[k]; break; /* Transpose: output axis k is input axis perm[k] */
        }
    }
    int64_t p = 0;
    for (int k = 0; k < c->r; k++)
        if (k != c->cax)
            p = p * c->id[i][k] + ii[k];
    return p;
}

/* ---- Reshape that moves channels to pixels or back (attention's head split and join) ---- */

/* A Reshape of a row-major tensor [P, G C] to [P G, C] (split) or back (join), rank 4 images
 * aside, with C dividing VL: each group of C channels lies in one vector. */
static int reshape_kind(const ts_graph *g, const ts_graph_node *nd, int64_t *Gp, int64_t *Cin, int64_t *Cout)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, nd->in[0]), *y = ts_graph_get_tensor(g, nd->out[0]);
    if (x->rank < 1 || y->rank < 1 || x->rank == 4 || y->rank == 4)
        return 0;
    int64_t ci = x->dims[x->rank - 1], co = y->dims[y->rank - 1];
    *Cin = ci;
    *Cout = co;
    if (ci > co && co > 0 && ci % co == 0 && 320 % co == 0) {
        *Gp = ci / co;
        return 1;
    }
    if (co > ci && ci > 0 && co % ci == 0 && 320 % ci == 0) {
        *Gp = co / ci;
        return 2;
    }
    return 0;
}

bool lt_reshape_moves(const ts_graph *g, const ts_graph_node *nd)
{
    int64_t G, a, b;
    return nd->op == TS_OP_RESHAPE && reshape_kind(g, nd, &G, &a, &b) != 0;
}

/* A Transpose keeping the channel axis whose output has rank 2 or 3 and which moves pixels (one that
 * does not is a rename): whether it can be folded into a head split or join. */
static bool tf_moves(const ts_graph *g, const ts_graph_node *tr)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(g, tr->in[0]), *y = ts_graph_get_tensor(g, tr->out[0]);
    int r = x->rank;
    if (tr->op != TS_OP_TRANSPOSE || r < 2 || r > 3 || y->rank != r || tr->attrs.nperm != r ||
        tr->attrs.perm[r - 1] != r - 1 || y->is_output)
        return false;
    int64_t last = -1;
    for (int k = 0; k < r - 1; k++) {
        int64_t a = tr->attrs.perm[k];
        if (a < 0 || a >= r - 1)
            return false;
        if (x->dims[a] == 1)
            continue;
        if (a < last)
            return true;
        last = a;
    }
    return false;
}

const ts_graph_node *lt_split_fold(const ts_graph *g, const ts_graph_node *split)
{
    int64_t G, ci, co;
    if (split->op != TS_OP_RESHAPE || reshape_kind(g, split, &G, &ci, &co) != 1)
        return NULL;
    int id = split->out[0];
    for (;;) {
        size_t n;
        const int *c = ts_graph_consumers(g, id, &n);
        const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
        if (n != 1 || t->is_output || t->rank < 1 || t->dims[t->rank - 1] != co)
            return NULL;
        const ts_graph_node *nx = ts_graph_get_node(g, c[0]);
        if (nx->op == TS_OP_TRANSPOSE)
            return tf_moves(g, nx) ? nx : NULL;
        const ts_graph_tensor *o = ts_graph_get_tensor(g, nx->out[0]);
        /* a Reshape that renames: the same channels, rank 4 aside (gpt's q_same) */
        if (nx->op != TS_OP_RESHAPE || lt_reshape_moves(g, nx) || t->rank == 4 || o->rank == 4 || o->rank < 1 ||
            o->dims[o->rank - 1] != co)
            return NULL;
        id = nx->out[0];
    }
}

const ts_graph_node *lt_v_split(const ts_graph *g, const ts_graph_node *mm)
{
    if (mm->op != TS_OP_MATMUL || mm->nin != 2 || mm->in[0] == mm->in[1])
        return NULL;
    size_t n;
    ts_graph_consumers(g, mm->in[1], &n);
    const ts_graph_tensor *b = ts_graph_get_tensor(g, mm->in[1]);
    const ts_graph_node *tr = b->producer >= 0 ? ts_graph_get_node(g, b->producer) : NULL;
    if (n != 1 || !tr || !tf_moves(g, tr) || tr->attrs.nperm != 3 || tr->attrs.perm[0] != 1 || tr->attrs.perm[1] != 0)
        return NULL;
    for (int id = tr->in[0];;) { /* back through the Reshapes that rename to the split */
        const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
        const ts_graph_node *sp = t->producer >= 0 ? ts_graph_get_node(g, t->producer) : NULL;
        if (!sp || sp->op != TS_OP_RESHAPE)
            return NULL;
        if (lt_reshape_moves(g, sp))
            return lt_split_fold(g, sp) == tr ? sp : NULL;
        id = sp->in[0];
    }
}

/* The head split that tensor id comes from through Reshapes that rename, each tensor read once, or
 * NULL. */
static const ts_graph_node *split_back(const ts_graph *g, int id)
{
    for (;;) {
        size_t n;
        ts_graph_consumers(g, id, &n);
        const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
        const ts_graph_node *sp = t->producer >= 0 ? ts_graph_get_node(g, t->producer) : NULL;
        if (n != 1 || t->is_output || !sp || sp->op != TS_OP_RESHAPE)
            return NULL;
        int64_t G, ci, co;
        if (lt_reshape_moves(g, sp))
            return reshape_kind(g, sp, &G, &ci, &co) == 1 ? sp : NULL;
        id = sp->in[0];
    }
}

/* The Div or Mul of tensor id (its first input) by one constant that produces tensor a, else NULL. */
static const ts_graph_node *scalar_of(const ts_graph *g, int a)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, a);
    const ts_graph_node *sc = t->producer >= 0 ? ts_graph_get_node(g, t->producer) : NULL;
    if (!sc || (sc->op != TS_OP_DIV && sc->op != TS_OP_MUL) || sc->nin != 2 || sc->in[0] == sc->in[1])
        return NULL;
    const ts_graph_tensor *c = ts_graph_get_tensor(g, sc->in[1]);
    size_t n;
    ts_graph_consumers(g, sc->in[0], &n);
    return (c->kind == TS_TENSOR_WEIGHT || c->kind == TS_TENSOR_CONST) && ts_graph_tensor_elems(c) == 1 && n == 1 &&
                   !ts_graph_get_tensor(g, sc->in[0])->is_output
               ? sc
               : NULL;
}

const ts_graph_node *lt_q_scale(const ts_graph *g, const ts_graph_node *mm)
{
    return lt_q_split(g, mm) ? scalar_of(g, mm->in[0]) : NULL;
}

const ts_graph_node *lt_q_split(const ts_graph *g, const ts_graph_node *mm)
{
    if (mm->op != TS_OP_MATMUL || mm->nin != 2 || mm->in[0] == mm->in[1])
        return NULL;
    const ts_graph_node *kt = lt_kt_source(g, mm), *sc = scalar_of(g, mm->in[0]);
    const ts_graph_tensor *a = ts_graph_get_tensor(g, sc ? sc->in[0] : mm->in[0]);
    const ts_graph_node *tr = a->producer >= 0 ? ts_graph_get_node(g, a->producer) : NULL;
    size_t n, nk;
    ts_graph_consumers(g, mm->in[0], &n);
    if (!kt || ts_graph_consumers(g, kt->out[0], &nk) == NULL || nk != 1 || n != 1 ||
        ts_graph_get_tensor(g, mm->in[0])->is_output || !tr || !tf_moves(g, tr) ||
        tr->attrs.nperm != 3 || tr->attrs.perm[0] != 1 || tr->attrs.perm[1] != 0)
        return NULL;
    const ts_graph_node *qs = split_back(g, tr->in[0]), *ks = split_back(g, kt->in[0]);
    if (!qs || !ks || qs == ks || lt_split_fold(g, qs) != tr)
        return NULL;
    int64_t G, ci, qc, kc;
    reshape_kind(g, qs, &G, &ci, &qc);
    reshape_kind(g, ks, &G, &ci, &kc);
    return qc == kc ? qs : NULL;
}

/* The Q Kᵀ that reads head split sp as Kᵀ (through Reshapes that rename and the Transpose it folds,
 * each read once) with Q a head split (lt_q_split), else NULL. */
static const ts_graph_node *k_reader(const ts_graph *g, const ts_graph_node *sp)
{
    int id = sp->out[0];
    for (;;) { /* forward through the Reshapes that rename to the Transpose of Kᵀ */
        size_t n;
        const int *c = ts_graph_consumers(g, id, &n);
        if (n != 1)
            return NULL;
        const ts_graph_node *nx = ts_graph_get_node(g, c[0]);
        if (nx->op == TS_OP_TRANSPOSE) {
            c = ts_graph_consumers(g, nx->out[0], &n);
            if (n != 1)
                return NULL;
            const ts_graph_node *mm = ts_graph_get_node(g, c[0]);
            return mm->op == TS_OP_MATMUL && mm->nin == 2 && lt_kt_source(g, mm) == nx && lt_q_split(g, mm) &&
                           split_back(g, nx->in[0]) == sp
                       ? mm
                       : NULL;
        }
        if (nx->op != TS_OP_RESHAPE || lt_reshape_moves(g, nx))
            return NULL;
        id = nx->out[0];
    }
}

const ts_graph_node *lt_k_view(const ts_graph *g, const ts_graph_node *mm)
{
    const ts_graph_node *kt = lt_q_scale(g, mm) ? lt_kt_source(g, mm) : NULL;
    return kt ? split_back(g, kt->in[0]) : NULL;
}

bool lt_k_viewed(const ts_graph *g, const ts_graph_node *sp)
{
    const ts_graph_node *mm = k_reader(g, sp);
    return mm && lt_k_view(g, mm) == sp;
}

bool lt_k_inplace(const ts_graph *g, const ts_graph_node *sp)
{
    const ts_graph_node *mm = k_reader(g, sp);
    return mm && !lt_k_view(g, mm);
}

const ts_graph_node *lt_join_fold(const ts_graph *g, const ts_graph_node *join)
{
    int64_t G, ci, co;
    if (join->op != TS_OP_RESHAPE || reshape_kind(g, join, &G, &ci, &co) != 2)
        return NULL;
    int p = ts_graph_get_tensor(g, join->in[0])->producer;
    const ts_graph_node *tr = p >= 0 ? ts_graph_get_node(g, p) : NULL;
    size_t n;
    ts_graph_consumers(g, join->in[0], &n);
    return tr && n == 1 && tf_moves(g, tr) ? tr : NULL;
}

/* The pixel of a folded Transpose's input that its output pixel m comes from. */
static int64_t tf_pix(const lt_cat *c, uint64_t m)
{
    int64_t oi[TS_GRAPH_MAX_RANK], ii[TS_GRAPH_MAX_RANK];
    int r = c->tf.r;
    for (int k = r - 1; k >= 0; k--) {
        if (k == c->tf.cax) {
            oi[k] = 0;
            continue;
        }
        oi[k] = (int64_t)(m % (uint64_t)c->tf.od[k]);
        m /= (uint64_t)c->tf.od[k];
    }
    for (int k = 0; k < r; k++)
        ii[c->tf.perm[k]] = oi[k];
    int64_t p = 0;
    for (int k = 0; k < r; k++)
        if (k != c->tf.cax)
            p = p * c->tf.id[k] + ii[k];
    return p;
}

/* Split: block kt = tile kt / Z, group slot kt % Z; output pixel m (input pixel m / G, group m % G)
 * reads the block of its group. Join: block kt = group g, output pixel m reads pixel m G + g. A
 * folded Transpose maps the split's output pixels, the join's input pixels. */
static int64_t reshape_vec(const lt_cat *c, uint32_t m, uint32_t kt)
{
    if (c->rs == 2) {
        int64_t q = (int64_t)m * c->G + kt;
        return (c->tf.r ? tf_pix(c, (uint64_t)q) : q) * c->x[0]->T;
    }
    int64_t mm = c->tf.r ? tf_pix(c, m) : (int64_t)m;
    int64_t g = mm % c->G, off = g * c->Cout;
    if ((off / 320) * c->Z + (off % 320) / c->Cout != kt)
        return -1;
    return (mm / c->G) * c->x[0]->T + kt / c->Z;
}

static bool reshape_one(const lt_cat *c, uint32_t n, uint32_t kt, uint32_t l, uint32_t VL)
{
    if (c->inplace) /* group kt % Z stays in its lanes */
        return n == l && (int64_t)n / c->Cout == kt % c->Z && (kt / c->Z) * VL + l < c->Cin;
    if (c->rs == 2)
        return (int64_t)n / c->Cin == kt && (int64_t)l == n % c->Cin && (int64_t)n < c->Cout;
    return (int64_t)n < c->Cout && (int64_t)l == (kt % c->Z) * c->Cout + n && (kt / c->Z) * VL + l < c->Cin;
}

int64_t lt_cat_vec(const lt_cat *c, uint32_t m, uint32_t kt)
{
    if (c->rs)
        return reshape_vec(c, m, kt);
    int i = lt_cat_input(c, kt);
    int64_t p = src_pix(c, i, m);
    return p < 0 ? -1 : p * c->x[i]->T + (kt - c->kt0[i]);
}

bool lt_cat_one(const lt_cat *c, uint32_t n, uint32_t kt, uint32_t l, uint32_t VL, uint32_t N)
{
    if (c->rs)
        return reshape_one(c, n, kt, l, VL);
    int i = lt_cat_input(c, kt);
    uint64_t ch = (uint64_t)(kt - c->kt0[i]) * VL + l;
    return n < N && ch < c->x[i]->C && src_chan(c, i, n) == (int64_t)ch;
}

/* Whether some output channel of tile nt comes from block kt. */
bool lt_cat_used(const lt_cat *c, uint32_t nt, uint32_t kt, uint32_t VL, uint32_t N)
{
    if (c->rs == 2)
        return (int64_t)kt * c->Cin >= (int64_t)nt * VL && (int64_t)kt * c->Cin < (int64_t)nt * VL + VL;
    if (c->rs == 1)
        return nt == 0;
    int i = lt_cat_input(c, kt);
    int64_t lo = (int64_t)(kt - c->kt0[i]) * VL, hi = lo + VL;
    for (uint64_t n = (uint64_t)nt * VL; n < N && n < (uint64_t)nt * VL + VL; n++) {
        int64_t s = src_chan(c, i, n);
        if (s >= lo && s < hi)
            return true;
    }
    return false;
}

/* Input i's dimensions, right-aligned to the output's rank (leading 1s). */
static bool in_dims(lt *L, lt_cat *c, int i, int id)
{
    int ri;
    const int64_t *d = lt_dims(L, id, &ri);
    if (ri > c->r || (c->r == 4 && ri != 4))
        return false;
    for (int k = 0; k < c->r; k++)
        c->id[i][k] = k < c->r - ri ? 1 : d[k - (c->r - ri)];
    return true;
}

/* The operator's own attributes: the axis and offsets of a Concat, the starts and steps of a
 * Slice, the permutation of a Transpose. */
static ts_status attrs_of(lt *L, const ts_graph_node *nd, lt_cat *c)
{
    const ts_graph_attrs *a = &nd->attrs;
    c->ax = ts_graph_norm_axis(a->axis, c->r);
    if (nd->op == TS_OP_CONCAT && (c->ax < 0 || c->ax >= c->r))
        return ts_lower_fail(L->err, nd, "the Concat's axis is out of range");
    for (int k = 0; k < c->r; k++) {
        c->start[k] = nd->op == TS_OP_SLICE && k < a->nslice ? a->starts[k] : 0;
        c->step[k] = nd->op == TS_OP_SLICE && k < a->nslice ? a->steps[k] : 1;
        c->perm[k] = a->nperm ? a->perm[k] : c->r - 1 - k;
        if (c->step[k] < 1)
            return ts_lower_fail(L->err, nd, "the TSP lowering takes a Slice with positive steps");
    }
    if (nd->op == TS_OP_TRANSPOSE && c->perm[c->cax] != c->cax)
        return ts_lower_fail(L->err, nd, "the TSP lowering takes a Transpose that keeps the channel axis");
    int64_t off = 0;
    for (int i = 0; i < c->n; i++) {
        c->off[i] = off;
        off += c->id[i][c->ax < c->r ? c->ax : 0];
    }
    return TS_OK;
}

/* The operator's geometry: its inputs and maps, output pixels *M and channels *N. */
ts_status lt_cat_shape(lt *L, const ts_graph_node *nd, lt_cat *c, uint32_t *M, uint32_t *N)
{
    int r;
    const int64_t *d = lt_dims(L, nd->out[0], &r);
    size_t nin = nd->op == TS_OP_CONCAT ? nd->nin : 1;
    if (nin > LT_CAT_MAX || nin < 1 || r < 1)
        return ts_lower_fail(L->err, nd, "the TSP lowering takes 1 to %d inputs", LT_CAT_MAX);
    memset(c, 0, sizeof *c);
    c->op = nd->op;
    if (nd->op == TS_OP_RESHAPE) {
        c->n = 1;
        c->ids[0] = nd->in[0];
        c->x[0] = &L->t[nd->in[0]];
        c->rs = reshape_kind(L->g, nd, &c->G, &c->Cin, &c->Cout);
        c->out = nd->out[0];
        const ts_graph_node *tr = c->rs == 1 ? lt_split_fold(L->g, nd) : c->rs == 2 ? lt_join_fold(L->g, nd) : NULL;
        if (tr) { /* the split writes the Transpose's output; the join reads its input */
            int ri;
            const int64_t *od = lt_dims(L, tr->out[0], &c->tf.r), *id = lt_dims(L, tr->in[0], &ri);
            c->tf.cax = c->tf.r - 1;
            memcpy(c->tf.od, od, (size_t)c->tf.r * sizeof *od);
            memcpy(c->tf.id, id, (size_t)ri * sizeof *id);
            for (int k = 0; k < c->tf.r; k++)
                c->tf.perm[k] = tr->attrs.perm[k];
            if (c->rs == 1) {
                c->out = tr->out[0];
            } else {
                c->ids[0] = tr->in[0];
                c->x[0] = &L->t[tr->in[0]];
            }
        }
        c->Z = c->rs == 1 ? L->VL / c->Cout : 1;
        c->kt0[1] = c->rs == 1 ? (uint32_t)(c->x[0]->T * c->Z) : (uint32_t)c->G;
        if (!c->rs || !c->x[0]->placed || (c->rs == 2 && c->x[0]->T != 1))
            return ts_lower_fail(L->err, nd, "the TSP lowering takes a Reshape that keeps the layout, or splits a "
                                             "pixel's channels into pixels of a divisor of 320 channels, or joins them");
        uint32_t P, C;
        ts_status rc = lt_shape_pc(L, nd, c->out, &P, &C);
        c->inplace = c->rs == 1 && !tr && lt_k_inplace(L->g, nd);
        *M = P;
        *N = c->inplace ? L->VL : C; /* in place: every lane of the output vector */
        return rc;
    }
    c->n = (int)nin;
    c->out = nd->out[0];
    c->r = r;
    c->cax = r == 4 ? 1 : r - 1;
    memcpy(c->od, d, (size_t)r * sizeof *d);
    for (int i = 0; i < c->n; i++) {
        c->ids[i] = nd->in[i];
        c->x[i] = &L->t[nd->in[i]];
        if (!in_dims(L, c, i, nd->in[i]))
            return ts_lower_fail(L->err, nd, "the TSP lowering takes inputs of the output's layout");
        c->kt0[i + 1] = c->kt0[i] + (c->x[i]->placed ? c->x[i]->T : 0);
    }
    ts_status rc = attrs_of(L, nd, c);
    uint32_t P, C;
    if (rc != TS_OK || (rc = lt_shape_pc(L, nd, nd->out[0], &P, &C)) != TS_OK)
        return rc;
    *M = P;
    *N = C;
    return TS_OK;
}
