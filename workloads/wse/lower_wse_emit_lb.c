/* workloads/wse/lower_wse_emit_lb.c — emission of the line-buffer stages: the im2col feeder of a
 * Conv and the maxpool.
 *
 * G PEs in a row, PE g keeping channels [c0, c1) of the last kh padded rows (ring slots of Wp
 * pixels x cg channels) and sending, per output pixel, after the values of the PEs west of it: its
 * im2col part in (i, j, c) order (kh moves of kw cg elements), or the max of each of its channels.
 * The code is unrolled over output rows, so ring slots are immediates; rows are received just
 * before the first output row that needs them.
 */
#include <float.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

/* PE g's channels [c0, c1) (cg of them) and its memory: RB bytes per ring slot, the pad word at
 * PADW, a junk word at JUNK. */
typedef struct lb_pe {
    uint32_t g;
    int64_t c0, c1, cg;
    int RB, PADW, JUNK;
} lb_pe;

/* One padded row pr of a line-buffer stage's input into ring slot pr mod kh: a pad row gets the
 * pad word (0, or -FLT_MAX for a maxpool), a real row its pixels' channels [c0, c1). */
static void lb_row(lw_gen *G, const lw_stage *s, int64_t pr, const lb_pe *e)
{
    const int64_t c0 = e->c0, c1 = e->c1, cg = e->cg;
    uint64_t base = (uint64_t)((pr % s->khe) * e->RB + s->pl * cg * 4);
    if (pr < s->pt || pr >= s->pt + s->H) {
        for (uint64_t left = (uint64_t)(s->W * cg), a = base; left;) {
            int k = left > PIECE ? PIECE : (int)left;
            ts_lww_op(G, WSE_OP_DSDM, 4, 13, (int)a, k, 1);
            ts_lww_op(G, WSE_OP_DSDM, 4, 12, e->PADW, k, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
            a += (uint64_t)k * 4;
            left -= (uint64_t)k;
        }
        return;
    }
    if (cg == s->C) {
        ts_lww_in_to_mem(G, s->cin, base, (uint64_t)(s->W * cg), 1);
        return;
    }
    ts_lww_op(G, WSE_OP_LI, 2, 1, (int)base);
    ts_lww_op(G, WSE_OP_DSDM, 4, 2, 0, (int)cg, 1);
    int l = ts_lww_loop_head(G, 3, s->W);
    if (c0) {
        ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)c0);
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, e->JUNK, (int)c0, 0);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 1, 0, -1, -1);
    }
    ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)cg);
    ts_lww_op(G, WSE_OP_DSDBASE, 3, 2, 1, 0);
    ts_lww_op(G, WSE_OP_FMOVS, 4, 2, 0, -1, -1);
    if (s->C > c1) {
        ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)(s->C - c1));
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, e->JUNK, (int)(s->C - c1), 0);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 1, 0, -1, -1);
    }
    ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, (int)cg * 4);
    ts_lww_loop_end(G, 3, l);
}

/* Output pixel (oy, r1)'s maxima: per channel of the slice (r5), the scalar max over the window
 * (fsub, a sign test, mov), sent on the row chain. */
static void lb_max(lw_gen *G, const lw_stage *s, int64_t oy, const lb_pe *e)
{
    ts_lww_op(G, WSE_OP_MOV, 2, 5, 1);
    int lc = ts_lww_loop_head(G, 4, e->cg);
    ts_lww_op(G, WSE_OP_LD, 3, 8, 5, (int)(((oy * s->sh) % s->khe) * e->RB));
    for (int64_t i = 0; i < s->kh; i++)
        for (int64_t j = 0; j < s->kw; j++) {
            if (!i && !j)
                continue;
            ts_lww_op(G, WSE_OP_LD, 3, 9, 5, (int)(((oy * s->sh + i) % s->khe) * e->RB + j * e->cg * 4));
            ts_lww_op(G, WSE_OP_FSUB, 3, 11, 9, 8);
            ts_lww_op(G, WSE_OP_BLT, 3, 11, 15, ts_lww_pc(G) + 2);
            ts_lww_op(G, WSE_OP_MOV, 2, 8, 9);
        }
    ts_lww_op(G, WSE_OP_SEND, 2, (int)lw_gcol(s, e->g), 8);
    ts_lww_op(G, WSE_OP_ADDI, 3, 5, 5, 4);
    ts_lww_loop_end(G, 4, lc);
}

/* Output row oy: per output pixel (r1 its first window column), the values of the PEs west of it,
 * then its im2col part (kh moves) or its maxima. */
static void lb_out_row(lw_gen *G, const lw_stage *s, int64_t oy, const lb_pe *e)
{
    const bool mp = s->kind == K_MAXPOOL;
    const int64_t cg = e->cg;
    ts_lww_op(G, WSE_OP_LI, 2, 1, 0);
    const bool dil = s->dw > 1; /* a dilated window row: kw moves of cg */
    if (!mp) {
        ts_lww_op(G, WSE_OP_DSDM, 4, 2, 0, (int)((dil ? 1 : s->kw) * cg), 1);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 3, (int)lw_gcol(s, e->g), (int)((dil ? 1 : s->kw) * cg), 0);
    }
    int lx = ts_lww_loop_head(G, 3, s->Wo);
    ts_lww_in_to_out(G, lw_gcol(s, e->g - 1), lw_gcol(s, e->g), (uint64_t)(mp ? e->c0 : e->c0 * s->kh * s->kw));
    if (!mp)
        for (int64_t i = 0; i < s->kh; i++)
            for (int64_t j = 0; j < (dil ? s->kw : 1); j++) {
                int slot = (int)(((oy * s->sh + i * s->dh) % s->khe) * e->RB + j * s->dw * cg * 4);
                ts_lww_op(G, WSE_OP_DSDBASE, 3, 2, 1, slot);
                ts_lww_op(G, WSE_OP_FMOVS, 4, 3, 2, -1, -1);
            }
    else
        lb_max(G, s, oy, e);
    ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, (int)(s->sw * cg * 4));
    ts_lww_loop_end(G, 3, lx);
}

/* A maxpool PE's pad columns and pad word: -FLT_MAX, as a data segment. */
static ts_status lb_pads(lw *L, ts_program *P, const lw_stage *s, const lb_pe *e)
{
    float *neg = ts_malloc((size_t)e->PADW + 4);
    if (!neg)
        return TS_ENOMEM;
    for (int i = 0; i <= e->PADW / 4; i++)
        neg[i] = -FLT_MAX;
    ts_status rc = ts_program_add_segment(P, WSE_KIND_PE, s->y0 * L->t->width + s->x + e->g, 0, neg,
                                          (uint32_t)e->PADW + 4, L->err);
    ts_free(neg);
    return rc;
}

ts_status ts_lww_emit_lb(lw *L, ts_program *P, size_t si, lw_gen *G)
{
    const lw_stage *s = &L->st[si];
    const int64_t Wp = s->W + s->pl + s->pr;
    for (uint32_t g = 0; g < s->G; g++) {
        lb_pe e = {.g = g, .c0 = g * s->C / s->G, .c1 = (g + 1) * s->C / s->G};
        e.cg = e.c1 - e.c0;
        e.RB = (int)(Wp * e.cg * 4);
        e.PADW = (int)(s->khe * e.RB);
        e.JUNK = e.PADW + 4;
        if (!ts_lww_pe_stream(P, L->t, s->x + g, s->y0, G))
            return TS_ENOMEM;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R | (g + 1 < s->G ? P_E : 0));
        if (g)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_gcol(s, g - 1), P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_gcol(s, g), P_R, lw_outp(s, g + 1 == s->G));
        ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
        int b = ts_lww_loop_head(G, 10, s->B);
        int64_t have = 0;
        for (int64_t oy = 0; oy < s->Ho; oy++) {
            for (; have < oy * s->sh + s->khe; have++)
                lb_row(G, s, have, &e);
            lb_out_row(G, s, oy, &e);
        }
        for (; have < s->pt + s->H; have++) /* rows no output needs are still taken off the fabric */
            lb_row(G, s, have, &e);
        ts_lww_loop_end(G, 10, b);
        ts_status rc;
        if (s->kind == K_MAXPOOL && (rc = lb_pads(L, P, s, &e)))
            return rc;
    }
    return TS_OK;
}
