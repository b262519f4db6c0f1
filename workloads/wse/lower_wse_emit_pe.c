/* workloads/wse/lower_wse_emit_pe.c — emission of the stages of one PE: relu, a skip path's
 * fifo, add (Add, Sub, Mul with a parameter), softmax, avgpool (GlobalAveragePool).
 *
 * Each takes its input from the west and sends its output east (and down too when it forks);
 * r15 holds 0.
 */
#include <string.h>

#include "workloads/wse/lower_wse_int.h"

int ts_lww_bits(float f)
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* Per element: recv, sign test (a negative sign bit sends 0), send. */
static void emit_relu(lw_gen *G, const lw_stage *s)
{
    int l = ts_lww_loop_head(G, 10, (int64_t)s->in_n);
    ts_lww_op(G, WSE_OP_RECV, 2, 1, (int)s->cin);
    ts_lww_op(G, WSE_OP_BLT, 3, 1, 15, l + 4);
    ts_lww_op(G, WSE_OP_SEND, 2, (int)s->cout, 1);
    ts_lww_op(G, WSE_OP_BR, 1, l + 5);
    ts_lww_op(G, WSE_OP_SEND, 2, (int)s->cout, 15);
    ts_lww_loop_end(G, 10, l);
}

/* The length of chunk k of a FIFO: chunks restart at every image, so none spans two images. */
static int fifo_len(const lw_stage *s, uint64_t k)
{
    const uint64_t B = s->B > 1 ? (uint64_t)s->B : 1, per = s->in_n / B, kper = ts_geom_cdiv(per, s->chunk);
    const uint64_t j = k % kper;
    return (int)(j + 1 < kper ? s->chunk : per - j * s->chunk);
}

/* Two halves of `chunk` values: chunk k is received on microthread 0 into half k mod 2 while
 * chunk k - 1 leaves from the other half on microthread 1. Before a receive overwrites a half, a
 * one-element move on thread 1 waits for the send from it. A batch of images is cut into chunks
 * image by image: a chunk that spanned two images would be released only when the next image
 * had begun, and the main path cannot take the next image in while a line buffer gives out the
 * last rows of this one (the join then waits on the skip path, the skip path on the fork, the
 * fork on the main path: ResNet-50 at batch 8 hung so). */
static void emit_fifo(lw_gen *G, const lw_stage *s)
{
    const int n = (int)s->chunk, ZERO = 8 * n, JUNK = ZERO + 4;
    ts_lww_op(G, WSE_OP_DSDM, 4, 14, JUNK, 1, 0);
    ts_lww_op(G, WSE_OP_DSDM, 4, 15, ZERO, 1, 0);
    const uint64_t B = s->B > 1 ? (uint64_t)s->B : 1, K = B * ts_geom_cdiv(s->in_n / B, s->chunk);
    for (uint64_t k = 0; k <= K; k++) {
        if (k >= 2)
            ts_lww_op(G, WSE_OP_FMOVS, 4, 14, 15, 1, -1);
        if (k < K) {
            int len = fifo_len(s, k);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, len);
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, (int)(k & 1) * n * 4, len, 1);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 1, 0, 0, -1);
        } else
            ts_lww_op(G, WSE_OP_FMOVS, 4, 14, 15, 0, -1); /* the last receive is done */
        if (k >= 1) {
            int len = fifo_len(s, k - 1);
            ts_lww_op(G, WSE_OP_DSDM, 4, 2, (int)((k - 1) & 1) * n * 4, len, 1);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 3, (int)s->cout, len, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 3, 2, k < K ? 1 : -1, -1);
        }
    }
}

/* The parameter kept from address 0 (a data segment); one vector op per longest DSD, the fabric
 * as the other operand and as the destination. */
static ts_status emit_add(lw *L, ts_program *P, lw_gen *G, const lw_stage *s)
{
    if (s->period && s->period < s->in_n) { /* broadcast: the period again for every block */
        const bool scalar = s->period == 1;
        const uint64_t per = scalar ? (s->in_n < PIECE ? s->in_n : PIECE) : s->period;
        int l = ts_lww_loop_head(G, 10, (int64_t)(s->in_n / per));
        for (uint64_t a = 0; a < per; a += PIECE) {
            int k = per - a > PIECE ? PIECE : (int)(per - a);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, k);
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, scalar ? 0 : (int)(a * 4), k, scalar ? 0 : 1);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, k, 0);
            ts_lww_op(G, s->vop, 5, 2, s->swap ? 1 : 0, s->swap ? 0 : 1, -1, -1);
        }
        ts_lww_loop_end(G, 10, l);
        if (scalar && s->in_n % per) { /* the rest of a scalar's stream */
            int k = (int)(s->in_n % per);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, k);
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, 0, k, 0);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, k, 0);
            ts_lww_op(G, s->vop, 5, 2, s->swap ? 1 : 0, s->swap ? 0 : 1, -1, -1);
        }
    } else
        for (uint64_t a = 0; a < s->in_n; a += PIECE) {
            int k = s->in_n - a > PIECE ? PIECE : (int)(s->in_n - a);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, k);
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, (int)(a * 4), k, 1);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, k, 0);
            ts_lww_op(G, s->vop, 5, 2, s->swap ? 1 : 0, s->swap ? 0 : 1, -1, -1);
        }
    uint32_t id = s->y0 * L->t->width + s->x;
    uint64_t nv = s->period && s->period < s->in_n ? s->period : s->in_n;
    if (ts_program_add_segment(P, WSE_KIND_PE, id, 0, s->vals, (uint32_t)(nv * 4), L->err))
        return L->err->status;
    return TS_OK;
}

/* r1 := the max of the n words at address 0 (fsub, sign test, mov). */
void ts_lww_row_max(lw_gen *G, int64_t n)
{
    ts_lww_op(G, WSE_OP_LD, 3, 1, 15, 0);
    if (n > 1) {
        ts_lww_op(G, WSE_OP_LI, 2, 6, 4);
        int m = ts_lww_loop_head(G, 7, n - 1);
        ts_lww_op(G, WSE_OP_LD, 3, 2, 6, 0);
        ts_lww_op(G, WSE_OP_FSUB, 3, 3, 2, 1);
        ts_lww_op(G, WSE_OP_BLT, 3, 3, 15, m + 4);
        ts_lww_op(G, WSE_OP_MOV, 2, 1, 2);
        ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 4);
        ts_lww_loop_end(G, 7, m);
    }
}

/* r3 := exp(r2 - r1) (r2 an element of the row): y = x log2 e = n + f with n = round(y) by the
 * 1.5 * 2^23 trick, f in [-1/2, 1/2]; 2^f by a degree-7 polynomial; 2^n in the exponent bits
 * ((n + 127) * 2^23); y < -126 gives 0. Constants: r14 log2 e, r13 and r12 1.5 * 2^23 as a float
 * and as its bits, r11 126, r9 2^23. */
void ts_lww_exp(lw_gen *G)
{
    ts_lww_op(G, WSE_OP_FSUB, 3, 2, 2, 1);
    ts_lww_op(G, WSE_OP_FMUL, 3, 2, 2, 14);
    ts_lww_op(G, WSE_OP_LI, 2, 3, 0);
    ts_lww_op(G, WSE_OP_FADD, 3, 4, 2, 11);
    int skip = ts_lww_pc(G);
    ts_lww_op(G, WSE_OP_BLT, 3, 4, 15, 0); /* y < -126: 0; target patched below */
    ts_lww_op(G, WSE_OP_FADD, 3, 3, 2, 13);
    ts_lww_op(G, WSE_OP_SUB, 3, 4, 3, 12);
    ts_lww_op(G, WSE_OP_FSUB, 3, 3, 3, 13);
    ts_lww_op(G, WSE_OP_FSUB, 3, 2, 2, 3);
    static const double c[8] = {1.0, 0.6931471805599453, 0.2402265069591007, 0.05550410866482158,
                                0.009618129107628477, 0.0013333558146428443, 1.5403530393381606e-4,
                                1.525273380405984e-5};
    ts_lww_op(G, WSE_OP_FLI, 2, 3, ts_lww_bits((float)c[7]));
    for (int k = 6; k >= 0; k--) {
        ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits((float)c[k]));
        ts_lww_op(G, WSE_OP_FMUL, 3, 3, 3, 2);
        ts_lww_op(G, WSE_OP_FADD, 3, 3, 3, 5);
    }
    ts_lww_op(G, WSE_OP_ADDI, 3, 4, 4, 127);
    ts_lww_op(G, WSE_OP_MUL, 3, 4, 4, 9);
    ts_lww_op(G, WSE_OP_FMUL, 3, 3, 3, 4);
    if (!G->oom)
        G->s->insn[skip].a[2] = ts_lww_pc(G);
}

void ts_lww_exp_consts(lw_gen *G)
{
    const float magic = 12582912.0f;
    ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits(1.44269504f));
    ts_lww_op(G, WSE_OP_FLI, 2, 13, ts_lww_bits(magic));
    ts_lww_op(G, WSE_OP_LI, 2, 12, ts_lww_bits(magic));
    ts_lww_op(G, WSE_OP_FLI, 2, 11, ts_lww_bits(126.0f));
    ts_lww_op(G, WSE_OP_LI, 2, 9, 1 << 23);
}

/* r1 := 1 / r8: the bit-trick seed, then 4 Newton steps r = r (2 - s r). */
void ts_lww_recip(lw_gen *G)
{
    ts_lww_op(G, WSE_OP_LI, 2, 1, 0x7EF311C7);
    ts_lww_op(G, WSE_OP_SUB, 3, 1, 1, 8);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(2.0f));
    for (int k = 0; k < 4; k++) {
        ts_lww_op(G, WSE_OP_FMUL, 3, 2, 8, 1);
        ts_lww_op(G, WSE_OP_FSUB, 3, 2, 5, 2);
        ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 2);
    }
}

/* exp(x - max) in place of the n words at address base, whose max is in r1, their sum in r8 (r6
 * and r7 used). */
void ts_lww_exp_sum(lw_gen *G, int64_t n, int base)
{
    ts_lww_op(G, WSE_OP_FLI, 2, 8, ts_lww_bits(0.0f));
    ts_lww_op(G, WSE_OP_LI, 2, 6, base);
    int e = ts_lww_loop_head(G, 7, n);
    ts_lww_op(G, WSE_OP_LD, 3, 2, 6, 0);
    ts_lww_exp(G);
    ts_lww_op(G, WSE_OP_ST, 3, 3, 6, 0);
    ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 3);
    ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 4);
    ts_lww_loop_end(G, 7, e);
}

/* The end of a softmax of the n words at address 0, whose max is in r1: exp(x - max) in place,
 * their sum in r8, 1/sum stored at rcp, then the n words times 1/sum sent on colour c through
 * output descriptor dsd in one fmuls. */
void ts_lww_softmax_scale(lw_gen *G, int64_t n, int rcp, int dsd, int c)
{
    ts_lww_exp_sum(G, n, 0);
    ts_lww_recip(G);
    ts_lww_op(G, WSE_OP_ST, 3, 1, 15, rcp);
    ts_lww_op(G, WSE_OP_DSDM, 4, 0, 0, (int)n, 1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 1, rcp, (int)n, 0);
    ts_lww_op(G, WSE_OP_DSDOUT, 4, dsd, c, (int)n, 0);
    ts_lww_op(G, WSE_OP_FMULS, 5, dsd, 0, 1, -1, -1);
}

/* Per row: keep it, its max, exp(x - max) in place and their sum (r8), 1/sum, then the row times
 * 1/sum to the fabric in one fmuls. */
static void emit_softmax(lw_gen *G, const lw_stage *s)
{
    const int RL = (int)s->L * 4;
    ts_lww_exp_consts(G);
    int row = ts_lww_loop_head(G, 10, (int64_t)(s->in_n / (uint64_t)s->L));
    ts_lww_in_to_mem(G, s->cin, 0, (uint64_t)s->L, 1);
    ts_lww_row_max(G, s->L);
    ts_lww_softmax_scale(G, s->L, RL, 2, (int)s->cout);
    ts_lww_loop_end(G, 10, row);
}

/* Per image: pixel-ordered input, an fadds of each pixel's C values into C sums; channel-ordered,
 * scalar sums; times 1/(H W). */
static void emit_gap(lw_gen *G, const lw_stage *s)
{
    const int AC = 0, INV = (int)s->C * 4, ZA = INV + 4;
    ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits((float)(1.0 / (double)(s->H * s->W))));
    ts_lww_op(G, WSE_OP_ST, 3, 14, 15, INV);
    int b = ts_lww_loop_head(G, 10, s->B);
    if (s->in_nhwc) {
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, AC, (int)s->C, 1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 2, ZA, (int)s->C, 0);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 1, 2, -1, -1);
        ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)s->C);
        int l = ts_lww_loop_head(G, 2, s->H * s->W);
        ts_lww_op(G, WSE_OP_FADDS, 5, 1, 1, 0, -1, -1);
        ts_lww_loop_end(G, 2, l);
        ts_lww_op(G, WSE_OP_DSDM, 4, 2, INV, (int)s->C, 0);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 3, (int)s->cout, (int)s->C, 0);
        ts_lww_op(G, WSE_OP_FMULS, 5, 3, 1, 2, -1, -1);
    } else {
        int lc = ts_lww_loop_head(G, 2, s->C);
        ts_lww_op(G, WSE_OP_FLI, 2, 8, ts_lww_bits(0.0f));
        int l = ts_lww_loop_head(G, 3, s->H * s->W);
        ts_lww_op(G, WSE_OP_RECV, 2, 9, (int)s->cin);
        ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 9);
        ts_lww_loop_end(G, 3, l);
        ts_lww_op(G, WSE_OP_FMUL, 3, 8, 8, 14);
        ts_lww_op(G, WSE_OP_SEND, 2, (int)s->cout, 8);
        ts_lww_loop_end(G, 2, lc);
    }
    ts_lww_loop_end(G, 10, b);
}

/* An add whose period is split over s->G PEs in a row (a parameter larger than a PE): PE j keeps
 * part j of the period; per period it passes on the values before its part, applies its part
 * (the fabric as operand and destination), passes on the rest; the stream runs east through the
 * row (PE j sends on the colour of column j). */
static ts_status emit_add_split(lw *L, ts_program *P, lw_gen *G, const lw_stage *s)
{
    const uint64_t per = s->period, part = ts_geom_cdiv(per, s->G);
    for (uint32_t j = 0; j < s->G; j++) {
        const uint64_t a = j * part < per ? j * part : per, b = a + part < per ? a + part : per;
        const uint32_t ci = j ? lw_gcol(s, j - 1) : s->cin, co = lw_gcol(s, j);
        if (!ts_lww_pe_stream(P, L->t, s->x + j, s->y0, G))
            return TS_ENOMEM;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, lw_outp(s, j + 1 == s->G));
        int l = ts_lww_loop_head(G, 10, (int64_t)(s->in_n / per));
        ts_lww_in_to_out(G, ci, co, a);
        for (uint64_t c = a; c < b; c += PIECE) {
            int k = b - c > PIECE ? PIECE : (int)(b - c);
            ts_lww_op(G, WSE_OP_DSDIN, 3, 0, (int)ci, k);
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, (int)((c - a) * 4), k, 1);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)co, k, 0);
            ts_lww_op(G, s->vop, 5, 2, s->swap ? 1 : 0, s->swap ? 0 : 1, -1, -1);
        }
        ts_lww_in_to_out(G, ci, co, per - b);
        ts_lww_loop_end(G, 10, l);
        if (b > a && ts_program_add_segment(P, WSE_KIND_PE, s->y0 * L->t->width + s->x + j, 0, s->vals + a,
                                            (uint32_t)((b - a) * 4), L->err))
            return L->err->status;
    }
    return TS_OK;
}

ts_status ts_lww_emit_single(lw *L, ts_program *P, size_t si, lw_gen *G)
{
    const lw_stage *s = &L->st[si];
    if (s->kind == K_ADD && s->G > 1)
        return emit_add_split(L, P, G, s);
    if (s->kind == K_ELEM && (s->G > 1 || s->ko > 1))
        return ts_lww_emit_elem_split(L, P, G, s);
    if (s->kind == K_NORM && (s->G > 1 || s->rpass))
        return ts_lww_emit_norm_split(L, P, G, s);
    if (s->kind == K_ROPE)
        return ts_lww_emit_rope(L, P, G, s);
    if (!ts_lww_pe_stream(P, L->t, s->x, s->y0, G))
        return TS_ENOMEM;
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_R, lw_outp(s, true));
    ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
    switch (s->kind) {
    case K_RELU:
        emit_relu(G, s);
        break;
    case K_FIFO:
        emit_fifo(G, s);
        break;
    case K_ADD:
        return emit_add(L, P, G, s);
    case K_SOFTMAX:
        emit_softmax(G, s);
        break;
    case K_GAP:
        emit_gap(G, s);
        break;
    case K_ELEM:
        ts_lww_emit_elem(G, s);
        break;
    case K_SLICE:
    case K_TRANSPOSE:
        ts_lww_emit_move(G, s);
        break;
    case K_NORM:
        return ts_lww_emit_norm(L, P, G, s);
    case K_PCAT: { /* per block: the parameter's part and the stream's, in the operands' order */
        for (int64_t b = 0; b < s->M; b++) {
            if (s->swap)
                ts_lww_in_to_out(G, s->cin, s->cout, (uint64_t)s->N);
            ts_lww_mem_to_out(G, (uint64_t)(b * s->K * 4), (uint64_t)s->K, s->cout);
            if (!s->swap)
                ts_lww_in_to_out(G, s->cin, s->cout, (uint64_t)s->N);
        }
        uint32_t id = s->y0 * L->t->width + s->x;
        if (ts_program_add_segment(P, WSE_KIND_PE, id, 0, s->vals, (uint32_t)(s->M * s->K * 4), L->err))
            return L->err->status;
        break;
    }
    default:
        break;
    }
    return TS_OK;
}
