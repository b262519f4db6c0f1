/* workloads/tsp/layernorm.c — LayerNormalization over the last axis on the VXM, with the row sums
 * on plane W1 (see lower_tsp.h, docs/lowering-tsp.md, *LayerNorm*).
 *
 * A row of D int8 values q (standing for q / 16) is T = ceil(D / VL) vectors. Three groups per row:
 *   sum       each vector to f32, times a 0/1 mask on a short last tile, to f16 (exact for an
 *             integer), through plane W1 holding an all-ones f16 block, the T abc accumulating
 *             (mode 1) in the plane's f32 accumulators: the row sum in every lane; times 1 / D is
 *             the mean, written as an f32 vector to the east MEM;
 *   variance  each vector again minus the mean, masked, squared, to f16, through the same block:
 *             sum of squares; times 1 / D, plus 256 eps, rsqrt: r = 1 / sigma (in q units), written
 *             to the east MEM;
 *   output    per vector: (f32(q) - mean) r (16 gamma) + 16 beta, to int8 (nearest even, saturating).
 * The VXM has no cross-lane reduction but the planes (or SXM shifts); the planes' f32 accumulators
 * sum f16 inputs exactly before rounding once (arch/tsp/tsp_mxm.c), so the only roundings are
 * f32 steps and the f16 of each square.
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <string.h>

#include "core/alloc.h"

#define LN_Q 16.0 /* an int8 activation q stands for q / LN_Q */

/* The constants (4 byte planes of f32 each, in every east slice), in vectors: 1 / D, the epsilon
 * in q units, the mask of the last tile, then 16 gamma and 16 beta per tile. */
enum { LC_INVD, LC_EPS, LC_MASK, LC_GAMMA };

typedef struct ln {
    const ts_graph_node *nd;
    tens *x, *y;
    uint32_t D, T, P;
    uint32_t cbase;          /* the constants */
    uint32_t sbase, swords;  /* the mean and r of every row: 8 words, striped over the east slices */
    uint64_t sav;            /* the scratch may be written after this cycle */
    uint64_t *ready[2];      /* per row: the first cycle its mean (0) and r (1) may be read */
    /* LEAN (lower_tsp.c): the constants stay in latches (sched.c, lt_kept_in), one per constant
     * vector (nk of them), instead of being read from the east MEM for each row or vector; every
     * group then carries the operator's one tag (ktag), the kept latches' */
    bool keep;
    uint32_t ktag, nk;
    lt_kept *kept;
} ln;

typedef struct ln_arg { const ln *n; uint32_t m, t; int phase; } ln_arg;

/* Word j (0..3 the mean's byte planes, 4..7 r's) of row m's scratch. */
static void ln_slot(const lt *L, const ln *n, uint32_t m, uint32_t j, uint32_t *mem, uint32_t *word)
{
    uint64_t k = (uint64_t)m * 8 + j;
    *mem = L->nW + (uint32_t)(k % L->nE);
    *word = n->sbase + (uint32_t)(k / L->nE);
}

/* Row m's mean (which 0) or r (1), read to arrive at the VXM at t. */
static bool ln_in(lt *L, const ln *n, uint32_t m, int which, uint64_t t, uint32_t tag, val *v)
{
    uint32_t pv = L->tg->pos_vxm;
    int s;
    if (!lt_take_group(L, P_E2V_W, 4, t, pv, &s))
        return false;
    for (uint32_t b = 0; b < 4; b++) {
        uint32_t mem, word;
        ln_slot(L, n, m, 4 * (uint32_t)which + b, &mem, &word);
        if (!lt_rd(L, mem, word, t, pv, WEST, s + (int)b, tag, n->ready[which][m]))
            return false;
    }
    *v = (val){.alu = -1, .dir = WEST, .s = s, .t = t};
    return true;
}

/* Constant vector k (tile t of a per-tile one) arriving at the VXM at t. */
static bool ln_const(lt *L, const ln *n, uint32_t k, uint64_t t, uint32_t tag, val *v)
{
    uint32_t kt;
    if (n->keep && lt_kept_in(L, &n->kept[k], n->cbase + 4 * k, L->tg->reg.f32, t, tag, v, &kt))
        return kt == tag; /* the latch was loaded with the operator's tag */
    return lt_scale_in(L, n->cbase + 4 * k, t, tag, v);
}

/* A group's tag: the operator's one where it keeps its constants (LEAN), else the next. */
static uint32_t ln_tag(const lt *L, const ln *n)
{
    return n->keep ? n->ktag : L->tag % 65535 + 1;
}

/* Whether tile t of a row has lanes past D (the mask applies). */
static bool ln_short(const lt *L, const ln *n, uint32_t t)
{
    return t + 1 == n->T && n->D % L->VL;
}

/* The VXM's cycles from a vector's arrival to its f16 on the stream to the plane. */
static uint32_t ln_lead(const lt *L, const ln *n, uint32_t t, int phase)
{
    const ts_tsp_dfunc *f = &L->tg->d_func;
    return f->cvt + (ln_short(L, n, t) ? f->mul : 0) + (phase ? f->add + f->mul : 0) + f->cvt;
}

/* Tile t of the row on its way to the plane at Tt: to f32, minus the mean and squared (variance),
 * masked (a short tile), to f16 on a stream, and the abc (accumulating after the first). */
static bool ln_tile(lt *L, const ln_arg *a, uint32_t t, uint64_t Tt, uint32_t tag)
{
    const ln *n = a->n;
    const ts_tsp_target *P = L->tg;
    const ts_tsp_regs *R = &P->reg;
    uint32_t pp = P->pos_mxm_w[1], q = P->q_mxm + P->mxm_queues, pv = P->pos_vxm;
    uint64_t a0 = Tt - (pv - pp) - ln_lead(L, n, t, a->phase), v_ = (uint64_t)a->m * n->T + t;
    uint32_t mem, word;
    lt_slot(L, n->x, v_, &mem, &word);
    val xv, v, w, c;
    int sx;
    if (!lt_vin_w(L, mem, word, a0, tag, n->x->ready[v_], &xv) ||
        !lt_vop(L, LT_CVT, R->f32, R->i8, a0, &xv, NULL, -1, 0, tag, &v, NULL))
        return false;
    if (a->phase) {
        if (!ln_in(L, n, a->m, 0, v.t, tag, &c) || !lt_vop(L, LT_SUB, R->f32, 0, v.t, &v, &c, -1, 0, tag, &w, NULL))
            return false;
        v = w;
    }
    if (ln_short(L, n, t)) {
        if (!ln_const(L, n, LC_MASK, v.t, tag, &c) || !lt_vop(L, LT_MUL, R->f32, 0, v.t, &v, &c, -1, 0, tag, &w, NULL))
            return false;
        v = w;
    }
    if (a->phase) {
        if (!lt_vop(L, LT_MUL, R->f32, 0, v.t, &v, &v, -1, 0, tag, &w, NULL))
            return false;
        v = w;
    }
    if (!lt_vop(L, LT_CVT, R->f16, R->f32, v.t, &v, NULL, P_ACT, 2, tag, &w, &sx) || w.t + (pv - pp) != Tt)
        return false;
    E1(L, q + 1, Tt, LT_ABC, R->f16, lt_sreg(L, WEST, sx), t ? 1 : 0, (int32_t)tag, (int32_t)tag);
    return true;
}

/* The sum (phase 0) or variance (phase 1) group of row m, its first abc at T0 on plane W1: the
 * tiles, the accumulators to the VXM, the mean or r written to the scratch. */
static bool try_ln_sum_at(lt *L, const void *arg, uint64_t T0, uint64_t *wdone)
{
    const ln_arg *a = arg;
    const ln *n = a->n;
    const ts_tsp_target *P = L->tg;
    const ts_tsp_regs *R = &P->reg;
    uint32_t pp = P->pos_mxm_w[1], q = P->q_mxm + P->mxm_queues, pv = P->pos_vxm, tag = ln_tag(L, n);
    uint64_t fi = P->fp16_interval, Tl = T0 + (n->T - 1) * fi;
    if (T0 < (pv - pp) + ln_lead(L, n, 0, a->phase) + ln_lead(L, n, n->T - 1, a->phase) + 8)
        return false;
    for (uint64_t c = T0; c < Tl + fi; c++)
        if (!lt_take(L, &L->q[q + 1].issue, c))
            return false;
    if (!lt_take(L, &L->q[q + 2].issue, Tl + P->d_func.abc))
        return false;
    for (uint32_t t = 0; t < n->T; t++)
        if (!ln_tile(L, a, t, T0 + t * fi, tag))
            return false;
    uint64_t ta = Tl + P->d_func.abc + P->d_func.acc, B = ta + (pv - pp);
    int sa, so;
    if (!lt_take_group(L, P_W2V_E, 4, ta, pp, &sa))
        return false;
    E1(L, q + 2, Tl + P->d_func.abc, LT_ACC, lt_sreg(L, EAST, sa), (int32_t)tag, (int32_t)tag);
    val sum = {.alu = -1, .dir = EAST, .s = sa, .t = B}, k, v, e, o;
    if (!ln_const(L, n, LC_INVD, B, tag, &k))
        return false;
    if (!a->phase) {
        if (!lt_vop(L, LT_MUL, R->f32, 0, B, &sum, &k, P_FROMV_E, 4, tag, &o, &so))
            return false;
    } else if (!lt_vop(L, LT_MUL, R->f32, 0, B, &sum, &k, -1, 0, tag, &v, NULL) ||
               !ln_const(L, n, LC_EPS, v.t, tag, &k) ||
               !lt_vop(L, LT_ADD, R->f32, 0, v.t, &v, &k, -1, 0, tag, &e, NULL) ||
               !lt_vop(L, LT_RSQRT, R->f32, 0, e.t, &e, NULL, P_FROMV_E, 4, tag, &o, &so)) {
        return false;
    }
    uint64_t last = 0;
    for (uint32_t b = 0; b < 4; b++) {
        uint32_t mem, word;
        uint64_t w;
        ln_slot(L, n, a->m, 4 * (uint32_t)a->phase + b, &mem, &word);
        if (!lt_wr(L, mem, word, o.t, pv, EAST, so + (int)b, tag, n->sav, &w))
            return false;
        if (w > last)
            last = w;
    }
    *wdone = last;
    if (!n->keep)
        L->tag = tag;
    return true;
}

/* The output of vector t of row m, its input arriving at the VXM at A. */
static bool try_ln_out_at(lt *L, const void *arg, uint64_t A, uint64_t *wdone)
{
    const ln_arg *a = arg;
    const ln *n = a->n;
    const ts_tsp_regs *R = &L->tg->reg;
    uint32_t tag = ln_tag(L, n), mem, word;
    uint64_t v_ = (uint64_t)a->m * n->T + a->t;
    lt_slot(L, n->x, v_, &mem, &word);
    val xv, u, c, d, e, g, h, o;
    int so;
    if (!lt_vin_w(L, mem, word, A, tag, n->x->ready[v_], &xv) ||
        !lt_vop(L, LT_CVT, R->f32, R->i8, A, &xv, NULL, -1, 0, tag, &u, NULL) ||
        !ln_in(L, n, a->m, 0, u.t, tag, &c) || !lt_vop(L, LT_SUB, R->f32, 0, u.t, &u, &c, -1, 0, tag, &d, NULL) ||
        !ln_in(L, n, a->m, 1, d.t, tag, &c) || !lt_vop(L, LT_MUL, R->f32, 0, d.t, &d, &c, -1, 0, tag, &e, NULL) ||
        !ln_const(L, n, LC_GAMMA + a->t, e.t, tag, &c) ||
        !lt_vop(L, LT_MUL, R->f32, 0, e.t, &e, &c, -1, 0, tag, &g, NULL) ||
        !ln_const(L, n, LC_GAMMA + n->T + a->t, g.t, tag, &c) ||
        !lt_vop(L, LT_ADD, R->f32, 0, g.t, &g, &c, -1, 0, tag, &h, NULL) ||
        !lt_vop(L, LT_CVT, R->i8, R->f32, h.t, &h, NULL, P_FROMV_W, 1, tag, &o, &so))
        return false;
    lt_slot(L, n->y, v_, &mem, &word);
    if (!lt_wr(L, mem, word, o.t, L->tg->pos_vxm, WEST, so, tag, n->y->avail, wdone))
        return false;
    if (!n->keep)
        L->tag = tag;
    return true;
}

/* ---- memory ---- */

/* A group tried at one cycle; a failed try leaves the kept latches as they were (lt_search undoes
 * their cycles). */
static bool ln_try(lt *L, lt_fit fit, const ln_arg *a, uint64_t t, uint64_t *wdone)
{
    const ln *n = a->n;
    lt_kept *was = NULL;
    if (n->keep) {
        if (!(was = ts_malloc(n->nk * sizeof *was))) {
            L->oom = true;
            return false;
        }
        memcpy(was, n->kept, n->nk * sizeof *was);
    }
    bool ok = fit(L, a, t, wdone);
    if (!ok && was)
        memcpy(n->kept, was, n->nk * sizeof *was);
    ts_free(was);
    return ok;
}

static bool try_ln_sum(lt *L, const void *arg, uint64_t T0, uint64_t *wdone)
{
    return ln_try(L, try_ln_sum_at, arg, T0, wdone);
}

static bool try_ln_out(lt *L, const void *arg, uint64_t A, uint64_t *wdone)
{
    return ln_try(L, try_ln_out_at, arg, A, wdone);
}

/* The constants in every east slice (*cbase) and the scratch (*sbase). */
static ts_status ln_memory(lt *L, ln *n)
{
    const ts_graph_node *nd = n->nd;
    uint32_t words = 4 * (LC_GAMMA + 2 * n->T);
    ts_status rc = lt_const_region(L, words, "the LayerNorm constants", nd, &n->cbase);
    image im;
    if (rc != TS_OK || (rc = lt_img_init(L, &im, L->nE, n->cbase, words)) != TS_OK)
        return rc;
    const ts_graph_tensor *gt = nd->nin > 1 ? ts_graph_get_tensor(L->g, nd->in[1]) : NULL;
    const ts_graph_tensor *bt = nd->nin > 2 ? ts_graph_get_tensor(L->g, nd->in[2]) : NULL;
    for (uint32_t k = 0; k < LC_GAMMA + 2 * n->T; k++)
        for (uint32_t l = 0; l < L->VL; l++) {
            uint64_t ch = (uint64_t)((k - LC_GAMMA) % n->T) * L->VL + l;
            float f = k == LC_INVD ? (float)(1.0 / n->D)
                    : k == LC_EPS  ? (float)(nd->attrs.epsilon * LN_Q * LN_Q)
                    : k == LC_MASK ? (l < n->D % L->VL ? 1.0f : 0.0f)
                    : ch >= n->D   ? 0.0f
                    : k < LC_GAMMA + n->T
                        ? (float)(LN_Q * (gt ? ts_fill_value_f32(gt, nd->in[1], ch) : 1.0))
                        : (float)(LN_Q * (bt ? ts_fill_value_f32(bt, nd->in[2], ch) : 0.0));
            uint32_t b;
            memcpy(&b, &f, 4);
            for (uint32_t e = 0; e < L->nE; e++)
                for (uint32_t by = 0; by < 4; by++)
                    im.s[e][(size_t)(4 * k + by) * L->VL + l] = (uint8_t)(b >> (8 * by));
        }
    if ((rc = lt_const_flush(L, &im)) != TS_OK)
        return rc;
    n->swords = (uint32_t)ts_geom_cdiv((uint64_t)n->P * 8, L->nE);
    return lt_region(L, 1, n->swords, "the LayerNorm means and deviations", nd, false, 1, &n->sbase, &n->sav);
}

/* ---- the schedule ---- */

/* The earliest first abc of row m's sum or variance group as its input allows. */
static uint64_t ln_first(const lt *L, const ln *n, uint32_t m, int phase)
{
    const ts_tsp_target *P = L->tg;
    uint64_t lb = 0, fi = P->fp16_interval;
    for (uint32_t t = 0; t < n->T; t++) {
        uint32_t mem, word;
        uint64_t v = (uint64_t)m * n->T + t;
        lt_slot(L, n->x, v, &mem, &word);
        uint64_t e = n->x->ready[v] + P->d_func.read + (P->pos_vxm - lt_mem_pos(L, mem)) + ln_lead(L, n, t, phase) +
                     (P->pos_vxm - P->pos_mxm_w[1]);
        e = e > t * fi ? e - t * fi : 0;
        if (e > lb)
            lb = e;
    }
    if (phase && n->ready[0][m] > lb)
        lb = n->ready[0][m];
    return lb;
}

/* Row by row: the sum group, the variance group, the outputs. Each kind of group is searched from
 * the cycle the one of the row before took, so the sums run ahead of the variances and the mean's
 * round trip through the east MEM overlaps other rows (one search order for all: 128 rows of
 * BERT-base's LayerNorm went from 24.8 k to 3.8 k cycles). The groups' abc runs never interleave
 * (each holds the plane's issue slots for its tiles), and the acc of one comes before the first
 * result of any abc after it, so groups may be placed out of order in time. */
static ts_status ln_rows(lt *L, ln *n, uint64_t T, ts_lower_tsp_layer *ly)
{
    uint64_t fi = L->tg->fp16_interval, prevs[2] = {T, T}, end = T, w, sread = 0;
    ts_status rc;
    for (uint32_t m = 0; m < n->P; m++) {
        for (int phase = 0; phase < 2; phase++) {
            ln_arg a = {.n = n, .m = m, .phase = phase};
            uint64_t t0 = ln_first(L, n, m, phase);
            if (t0 < prevs[phase])
                t0 = prevs[phase];
            if ((rc = lt_search(L, try_ln_sum, &a, NULL, &t0, &w, n->nd, true)) != TS_OK)
                return rc;
            if (L->rdmax > n->x->last_read)
                n->x->last_read = L->rdmax;
            n->ready[phase][m] = w + L->tg->d_func.write + 1;
            lt_span(ly, t0, w);
            ly->passes += n->T;
            prevs[phase] = t0 + n->T * fi;
            if (prevs[phase] > end)
                end = prevs[phase];
        }
        for (uint32_t t = 0; t < n->T; t++) {
            ln_arg a = {.n = n, .m = m, .t = t};
            uint64_t A = n->ready[1][m];
            if ((rc = lt_search(L, try_ln_out, &a, NULL, &A, &w, n->nd, true)) != TS_OK)
                return rc;
            if (L->rdmax > n->x->last_read)
                n->x->last_read = L->rdmax;
            if (L->rdmax > sread)
                sread = L->rdmax;
            n->y->ready[(uint64_t)m * n->T + t] = w + L->tg->d_func.write + 1;
            lt_span(ly, A, w);
        }
    }
    L->plane_busy[1] = end + L->tg->d_func.abc; /* an int8 install waits for the f16 abc to drain */
    if (lt_al_put(lt_alloc_of(L, 1, n->sbase), n->sbase, n->swords, sread))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

/* LayerNormalization over the last axis of an int8 activation: int8 out, q / 16 as its input. */
ts_status lt_lower_layernorm(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    ln n = {.nd = nd, .x = &L->t[nd->in[0]]};
    int xr;
    lt_dims(L, nd->in[0], &xr);
    int64_t ax = ts_graph_norm_axis(nd->attrs.axis, xr);
    if (!n.x->placed || xr < 1 || xr == 4 || ax != xr - 1)
        return ts_lower_fail(L->err, nd, "the TSP lowering takes LayerNormalization over the last axis of an int8 "
                                         "activation (not an NCHW image)");
    for (size_t i = 1; i < nd->nout; i++) { /* the Mean and InvStdDev outputs: not given */
        size_t nc;
        ts_graph_consumers(L->g, nd->out[i], &nc);
        if (nc || ts_graph_get_tensor(L->g, nd->out[i])->is_output)
            return ts_lower_fail(L->err, nd, "the TSP lowering gives LayerNormalization's first output alone");
    }
    n.D = n.x->C;
    n.T = n.x->T;
    n.P = n.x->P;
    ts_status rc = ln_memory(L, &n);
    if (rc != TS_OK || (rc = lt_place(L, nd->out[0], n.P, n.D, nd, false, lt_bank_pref(L, n.x))) != TS_OK)
        return rc;
    n.y = &L->t[nd->out[0]];
    n.ready[0] = ts_calloc(n.P, sizeof *n.ready[0]);
    n.ready[1] = ts_calloc(n.P, sizeof *n.ready[1]);
    n.keep = L->lean;
    n.nk = LC_GAMMA + 2 * n.T;
    n.kept = n.keep ? ts_calloc(n.nk, sizeof *n.kept) : NULL;
    uint64_t T;
    if (!n.ready[0] || !n.ready[1] || (n.keep && !n.kept))
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    else if ((rc = lt_ones_block(L, nd, L->VL, ly, &T)) == TS_OK) {
        if (n.keep)
            n.ktag = lt_new_tag(L);
        rc = ln_rows(L, &n, T, ly);
    }
    for (uint32_t k = 0; n.kept && k < n.nk; k++)
        lt_kept_end(L, &n.kept[k]);
    ts_free(n.kept);
    ts_free(n.ready[0]);
    ts_free(n.ready[1]);
    if (rc != TS_OK)
        return rc;
    lt_release(L, nd->in[0]);
    return TS_OK;
}
