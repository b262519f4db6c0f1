/* workloads/tsp/softmax.c — Softmax on the VXM, with the row sum on MXM plane W1 (see lower_tsp.h,
 * docs/lowering-tsp.md).
 *
 * Softmax of one row (one vector, N <= VL lanes) of int8 values read as q / 16:
 *   e = exp(f32(q) x 1/16) on the VXM, to f16, through plane W1 holding an all-ones f16 block
 *   (columns < N), whose f32 accumulators give the row sum in every lane; then 1/sum = rsqrt(sum)^2,
 *   e recomputed, p = e x 1/sum, to f16, to MEM (two byte planes). No max is subtracted: |q/16| <= 8
 *   keeps exp below 3e3 (f16 holds it, the f32 sum cannot overflow).
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <inttypes.h>
#include <string.h>

/* The all-ones block on plane W1: row r is streams 2r (low bytes: zeros) and 2r + 1 (the high
 * byte of f16 1.0 in the first N lanes, word obase of every west slice). */
typedef struct ones_arg { uint32_t N, obase, tag; } ones_arg;

static bool try_ones(lt *L, const void *arg, uint64_t I, uint64_t *w)
{
    const ones_arg *a = arg;
    uint32_t pp = L->tg->pos_mxm_w[1], q = L->tg->q_mxm + L->tg->mxm_queues, rows_per = IW_STREAMS / 2;
    bool ok = true;
    (void)w;
    for (uint32_t c = 0; ok && c < L->VL / rows_per; c++) {
        uint64_t t = I + c;
        ok = lt_take(L, &L->q[q].issue, t);
        for (uint32_t i = 0; ok && i < IW_STREAMS; i++) {
            uint32_t r = c * rows_per + i / 2;
            ok = lt_take_stream(L, WEST, (int)i, t, pp, SEG_W) &&
                 lt_rd_any(L, 0, (i & 1) && r < a->N ? a->obase : 0, t, pp, WEST, (int)i, a->tag);
        }
        if (ok)
            E1(L, q, t, LT_IW, L->tg->reg.f16, lt_sreg(L, WEST, 0), IW_STREAMS, (int32_t)a->tag);
    }
    return ok;
}

/* Row m, its abc on plane W1 at cycle T (the plane busy for fp16_interval cycles). */
typedef struct smax_arg {
    tens *x, *y;
    uint32_t m, sword, kword; /* the scale 1/16, and 127 */
    bool i8;                 /* int8 out: 127 p (a MatMul reads it), else f16 */
    /* LEAN (lower_tsp.c): the two constants stay in latches (sched.c, lt_kept_in), kept[0] 1/16 and
     * kept[1] 127, instead of being read from the east MEM three times a row; every row then carries
     * the operator's one tag (ktag), the kept latches' */
    bool keep;
    uint32_t ktag;
    lt_kept *kept;
} smax_arg;

/* Constant k (0: 1/16 in word sword, 1: 127 in kword) at the VXM at cycle t. */
static bool smax_const(lt *L, const smax_arg *a, int k, uint64_t t, uint32_t tag, val *v)
{
    uint32_t word = k ? a->kword : a->sword, kt;
    if (a->keep && lt_kept_in(L, &a->kept[k], word, L->tg->reg.f32, t, tag, v, &kt))
        return kt == tag; /* the latch was loaded with the operator's tag */
    return lt_scale_in(L, word, t, tag, v);
}

static bool try_smax_at(lt *L, const smax_arg *a, uint64_t T, uint64_t *wdone)
{
    const ts_tsp_target *P = L->tg;
    const ts_tsp_regs *R = &P->reg;
    tens *x = a->x, *y = a->y;
    uint32_t pp = P->pos_mxm_w[1], q = P->q_mxm + P->mxm_queues, pv = P->pos_vxm;
    uint32_t mem, word, tag = a->keep ? a->ktag : L->tag % 65535 + 1;
    lt_slot(L, x, a->m, &mem, &word);
    for (uint32_t i = 0; i < P->fp16_interval; i++)
        if (!lt_take(L, &L->q[q + 1].issue, T + i))
            return false;
    if (!lt_take(L, &L->q[q + 2].issue, T + P->d_func.abc))
        return false;
    /* phase 1: e in f16 reaches the plane at T */
    uint64_t tb = T - (pv - pp), lead = P->d_func.cvt + P->d_func.mul + P->d_func.exp + P->d_func.cvt;
    if (T < (pv - pp) || tb < lead + 8)
        return false;
    uint64_t a0 = tb - lead;
    val xv, v0, v1, v2, v3, scl;
    int sx;
    if (!lt_vin_w(L, mem, word, a0, tag, x->ready[a->m], &xv) ||
        !lt_vop(L, LT_CVT, R->f32, R->i8, a0, &xv, NULL, -1, 0, tag, &v0, NULL) ||
        !smax_const(L, a, 0, v0.t, tag, &scl))
        return false;
    if (!lt_vop(L, LT_MUL, R->f32, 0, v0.t, &v0, &scl, -1, 0, tag, &v1, NULL) ||
        !lt_vop(L, LT_EXP, R->f32, 0, v1.t, &v1, NULL, -1, 0, tag, &v2, NULL) ||
        !lt_vop(L, LT_CVT, R->f16, R->f32, v2.t, &v2, NULL, P_ACT, 2, tag, &v3, &sx))
        return false;
    E1(L, q + 1, T, LT_ABC, R->f16, lt_sreg(L, WEST, sx), 0, (int32_t)tag, (int32_t)tag);
    /* the sums, eastward to the VXM */
    uint64_t ta = T + P->d_func.abc + P->d_func.acc, B = ta + (pv - pp);
    int sa;
    if (!lt_take_group(L, P_W2V_E, 4, ta, pp, &sa))
        return false;
    E1(L, q + 2, T + P->d_func.abc, LT_ACC, lt_sreg(L, EAST, sa), (int32_t)tag, (int32_t)tag);
    val sum = {.alu = -1, .dir = EAST, .s = sa, .t = B}, r, inv;
    if (!lt_vop(L, LT_RSQRT, R->f32, 0, B, &sum, NULL, -1, 0, tag, &r, NULL) ||
        !lt_vop(L, LT_MUL, R->f32, 0, r.t, &r, &r, -1, 0, tag, &inv, NULL))
        return false;
    /* phase 2: e again, times 1/sum */
    uint64_t C = inv.t, c0 = C - P->d_func.exp - P->d_func.mul - P->d_func.cvt;
    val w0, w1, e, pr, o;
    if (!lt_vin_w(L, mem, word, c0, tag, x->ready[a->m], &xv) ||
        !lt_vop(L, LT_CVT, R->f32, R->i8, c0, &xv, NULL, -1, 0, tag, &w0, NULL) ||
        !smax_const(L, a, 0, w0.t, tag, &scl))
        return false;
    int so;
    if (!lt_vop(L, LT_MUL, R->f32, 0, w0.t, &w0, &scl, -1, 0, tag, &w1, NULL) ||
        !lt_vop(L, LT_EXP, R->f32, 0, w1.t, &w1, NULL, -1, 0, tag, &e, NULL) || e.t != C ||
        !lt_vop(L, LT_MUL, R->f32, 0, C, &e, &inv, -1, 0, tag, &pr, NULL))
        return false;
    if (a->i8) { /* 127 p to int8: one byte plane */
        val k, p8;
        if (!smax_const(L, a, 1, pr.t, tag, &k) ||
            !lt_vop(L, LT_MUL, R->f32, 0, pr.t, &pr, &k, -1, 0, tag, &p8, NULL) ||
            !lt_vop(L, LT_CVT, R->i8, R->f32, p8.t, &p8, NULL, P_FROMV_W, 1, tag, &o, &so))
            return false;
    } else if (!lt_vop(L, LT_CVT, R->f16, R->f32, pr.t, &pr, NULL, P_FROMV_W, 2, tag, &o, &so)) {
        return false;
    }
    uint64_t last = 0;
    for (int b = 0; b < (a->i8 ? 1 : 2); b++) {
        uint32_t om, ow;
        uint64_t w;
        lt_slot(L, y, (uint64_t)a->m * y->T + (uint64_t)b, &om, &ow);
        if (!lt_wr(L, om, ow, o.t, pv, WEST, so + b, tag, y->avail, &w))
            return false;
        if (w > last)
            last = w;
    }
    *wdone = last;
    if (!a->keep)
        L->tag = tag;
    return true;
}

/* try_smax_at, whose failed try leaves the kept latches as they were (lt_search undoes their cycles). */
static bool try_smax(lt *L, const void *arg, uint64_t T, uint64_t *wdone)
{
    const smax_arg *a = arg;
    lt_kept was[2];
    if (a->keep)
        memcpy(was, a->kept, sizeof was);
    if (try_smax_at(L, a, T, wdone))
        return true;
    if (a->keep)
        memcpy(a->kept, was, sizeof was);
    return false;
}

/* The all-ones f16 block (rows and lanes below N) installed on plane W1 from its last use: the
 * ones' high bytes in a fresh word of every west slice; *T the first cycle a pass may use it. */
ts_status lt_ones_block(lt *L, const ts_graph_node *nd, uint32_t N, ts_lower_tsp_layer *ly, uint64_t *T)
{
    uint32_t obase = 0, rows_per = IW_STREAMS / 2, k = 0;
    uint64_t oav;
    ts_status rc = TS_OK;
    /* 2 VL rows' reads spread over the west slices, a slice's in consecutive cycles of its queue,
     * which must keep a free cycle in every fetch window (a 2-superlane chip with 16 slices: 4 in a
     * window of 4) */
    if (L->fwin && ts_geom_cdiv(2 * (uint64_t)L->VL, L->nW) + 1 > L->fwin)
        return ts_err_set(L->err, TS_EINPUT,
                          "%s '%s': its all-ones f16 block needs %" PRIu64 " reads in a row from each of the %u west "
                          "MEM slices, leaving no cycle for instruction fetch in a window of %u",
                          ts_graph_op_name(nd->op), nd->name, ts_geom_cdiv(2 * (uint64_t)L->VL, L->nW), L->nW,
                          L->fwin);
    while (k < L->nones && L->ones[k][0] != N) /* one word per width: ViT has 37 of these operators */
        k++;
    if (k < L->nones) {
        obase = L->ones[k][1];
    } else {
        if ((rc = lt_region(L, 0, 1, "the ones", nd, true, 1, &obase, &oav)) != TS_OK)
            return rc;
        image im;
        if ((rc = lt_img_init(L, &im, L->nW, obase, 1)) != TS_OK)
            return rc;
        /* the high byte of f16 1.0 (0x3c00) in the first N lanes, in every west slice */
        for (uint32_t i = 0; i < L->nW; i++)
            for (uint32_t l = 0; l < N; l++)
                im.s[i][l] = 0x3c;
        if ((rc = lt_img_flush(L, &im, 0)) != TS_OK)
            return rc;
        if (L->nones < LT_ONES_MAX) {
            L->ones[L->nones][0] = N;
            L->ones[L->nones++][1] = obase;
        }
    }
    ones_arg oa = {.N = N, .obase = obase, .tag = lt_new_tag(L)};
    /* after the plane's last abc has stepped through every superlane: the plane's weights have one
     * type at a time, and the abc checks it at every step */
    uint64_t I = L->plane_busy[1] ? L->plane_busy[1] + L->tg->d_func.abc : 0, w;
    if ((rc = lt_search(L, try_ones, &oa, NULL, &I, &w, nd, false)) != TS_OK)
        return rc;
    ly->blocks++;
    lt_span(ly, I, I + L->VL / rows_per);
    *T = I + L->VL / rows_per - 1 + L->tg->d_func.iw;
    return TS_OK;
}

static ts_status sched_softmax(lt *L, const ts_graph_node *nd, tens *x, tens *y, uint32_t N, ts_lower_tsp_layer *ly)
{
    uint32_t cbase, kbase = 0;
    uint64_t T, w;
    bool i8 = y->T == 1;
    ts_status rc = lt_scale_const(L, nd, 1.0f / 16.0f, &cbase);
    if (rc == TS_OK && i8)
        rc = lt_scale_const(L, nd, 127.0f, &kbase);
    if (rc != TS_OK || (rc = lt_ones_block(L, nd, N, ly, &T)) != TS_OK)
        return rc;
    lt_kept kept[2] = {{0}};
    uint32_t ktag = L->lean ? lt_new_tag(L) : 0;
    for (uint32_t m = 0; m < x->P && rc == TS_OK; m++) {
        smax_arg a = {.x = x, .y = y, .m = m, .sword = cbase, .kword = kbase, .i8 = i8,
                      .keep = L->lean, .ktag = ktag, .kept = kept};
        if ((rc = lt_search(L, try_smax, &a, NULL, &T, &w, nd, false)) != TS_OK)
            break;
        if (L->rdmax > x->last_read)
            x->last_read = L->rdmax;
        for (uint32_t b = 0; b < y->T; b++)
            y->ready[(uint64_t)y->T * m + b] = w + L->tg->d_func.write + 1;
        lt_span(ly, T, w);
        ly->passes++;
        T += L->tg->fp16_interval;
    }
    for (int k = 0; L->lean && k < 2; k++)
        lt_kept_end(L, &kept[k]);
    if (rc != TS_OK)
        return rc;
    L->plane_busy[1] = T + L->tg->d_func.abc; /* an int8 install waits for the f16 abc to drain */
    return TS_OK;
}

/* Softmax over the last axis of a 2-D int8 tensor of at most VL columns: f16 rows (2 VL bytes). */
ts_status lt_lower_softmax(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    tens *x = &L->t[nd->in[0]];
    int xr;
    const int64_t *xd = lt_dims(L, nd->in[0], &xr);
    if (!x->placed || xr < 1 || xr == 4 || (nd->attrs.axis != -1 && nd->attrs.axis != xr - 1) || x->C > L->VL)
        return ts_lower_fail(L->err, nd,
                             "the TSP lowering takes the last axis of an int8 tensor of at most %u columns", L->VL);
    /* probabilities a MatMul reads are int8 (127 p), the others f16 */
    size_t nc;
    const int *c = ts_graph_consumers(L->g, nd->out[0], &nc);
    bool i8 = nc > 0;
    for (size_t i = 0; i < nc; i++)
        i8 &= ts_graph_get_node(L->g, c[i])->op == TS_OP_MATMUL;
    ts_status rc = lt_place(L, nd->out[0], x->P, i8 ? x->C : 2 * L->VL, nd, false, lt_bank_pref(L, x));
    if (rc != TS_OK || (rc = sched_softmax(L, nd, x, &L->t[nd->out[0]], (uint32_t)xd[xr - 1], ly)) != TS_OK)
        return rc;
    lt_release(L, nd->in[0]);
    return TS_OK;
}
