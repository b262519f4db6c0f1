/* workloads/wse/lower_wse_norm.c — LayerNormalization and RMSNormalization over the last axis: one
 * PE per stage, row by row (a row of L values, its scale and bias must fit the PE).
 *
 * Per row: receive it; the mean by a scalar sum; x - mean in place (one fsubs, the mean a DSD of
 * stride 0); the variance by a scalar sum of squares (RMSNormalization: no mean, the mean of the
 * squares, no bias); s = sqrt(var + epsilon) by 20 Newton steps
 * s = (s + v / s) / 2 from (1 + v) / 2 (each divide the softmax's reciprocal; from 1e-12 to 1e12
 * this reaches s to a few ulp); 1 / s; then (x - mean) (1 / s) scale + bias to the fabric in
 * vector ops. Memory: the row at 0, the scale at 4L, the bias at 8L, the mean and 1 / s after
 * (RMSNormalization: no bias and no mean, 1 / s at 8L: 8L + 8 bytes; a row of 256 or more, then
 * 64 partial sums of squares and 64 squares: 8L + 516 bytes, Llama 3 8B's row of 4,096 in 32.5 KiB:
 * its sum of squares by vector ops, the row's blocks of 64 squared and added into the partial
 * sums, which a scalar loop then adds: about 2.3 cycles a value against the scalar loop's 9).
 *
 * RMSNormalization of a long row (1,024 values or more: Llama 3 8B's 4,096) or of a row that does
 * not fit one PE runs over G PEs in a row (ts_lww_emit_norm_split), PE g the row's part
 * G - 1 - g (as the elementwise stages' split, lower_wse_elem.c): it passes the parts of the PEs
 * east of it on, takes its own into memory and sums its squares; the partial sums go west PE by
 * PE (colours R(g), each PE adding its own), the first PE computes 1 / s from the whole sum and
 * sends it east down the chain after the raw parts, each PE passing it on and scaling its part,
 * which it sends before passing on the scaled parts from the west.
 *
 * LayerNormalization in a pipeline of many rows runs over as many PEs in a row as the pipeline
 * time T asks for (place, lower_wse_place.c): the same, with a first round for the mean (each
 * part's sum by a scalar loop, west, the mean back east, taken from the part in place) before
 * the sums of squares, and its bias added to the scaled part.
 */
#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

/* RMSNormalization's split (ts_lww_emit_norm_split): a row of NORM_LONG values or more would take
 * parts of about NORM_PART values, one PE each, at most NORM_MAX PEs (gwant; place gives it what
 * the mesh's width leaves); a row that does not fit one PE takes at least the fewest PEs whose
 * parts fit (kcmin). */
enum { NORM_LONG = 1024, NORM_PART = 256, NORM_MAX = 16 };

ts_status ts_lww_norm_stage(lw *L, const ts_graph_node *n, int node, const ts_graph_tensor *x, bool nhwc)
{
    const uint64_t sram = L->t->sram_bytes;
    int64_t axis = ts_graph_norm_axis(n->attrs.axis, x->rank);
    if (nhwc || axis != x->rank - 1)
        return ts_lower_fail(L->err, n, "normalises from axis %lld of rank %d%s; the last axis is lowered",
                             (long long)n->attrs.axis, x->rank, nhwc ? " streamed pixel by pixel" : "");
    lw_stage *s = ts_lww_add_stage(L, K_NORM, node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    s->vop = n->op == TS_OP_RMSNORM;
    s->L = x->dims[x->rank - 1];
    s->in_n = s->out_n = (uint64_t)ts_graph_tensor_elems(x);
    s->lo = (float)n->attrs.epsilon;
    s->mem = (uint64_t)s->L * (s->vop ? 8 : 12) + (s->vop && s->L >= 256 ? 8 * 64 + 4 : 8);
    if (s->vop && (s->L >= NORM_LONG || s->mem > sram)) { /* RMSNormalization over G PEs in a row */
        const uint64_t most = (uint64_t)s->L < NORM_MAX ? (uint64_t)s->L : NORM_MAX;
        uint64_t g = 1, want = s->L >= NORM_LONG ? ts_geom_cdiv((uint64_t)s->L, NORM_PART) : 1;
        while (g < most && lw_rms_mem((uint64_t)s->L, g) > sram)
            g++;
        want = want < most ? want : most;
        s->G = s->kcmin = (uint32_t)g;
        s->gwant = (uint32_t)(want > g ? want : g);
        s->w = s->G;
        s->mem = lw_rms_mem((uint64_t)s->L, g);
    }
    if (s->mem > sram)
        return ts_lower_fail(L->err, n,
                             "a row of %lld values of '%s' with its scale%s needs %.1f KiB in one PE of "
                             "%.1f KiB: %.1f KiB too much (%llu bytes)", (long long)s->L, x->name, s->vop ? "" : " and bias", s->mem / 1024.0,
                             sram / 1024.0, (s->mem - sram) / 1024.0, (unsigned long long)(s->mem - sram));
    if (!(s->vals = ts_malloc((size_t)s->L * 8)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t k = 0; k < s->L; k++) { /* scale and bias (1 and 0 when absent) */
        s->vals[k] = n->nin > 1 ? ts_fill_value_f32(ts_graph_get_tensor(L->g, n->in[1]), n->in[1], (uint64_t)k) : 1.0f;
        s->vals[s->L + k] =
            !s->vop && n->nin > 2 ? ts_fill_value_f32(ts_graph_get_tensor(L->g, n->in[2]), n->in[2], (uint64_t)k) : 0.0f;
    }
    return TS_OK;
}

/* r8 := the sum of the L words from 0, squared when sq (uses r2, r3, r6, r7). */
static void row_sum(lw_gen *G, int64_t L, bool sq)
{
    ts_lww_op(G, WSE_OP_LI, 2, 8, 0);
    ts_lww_op(G, WSE_OP_LI, 2, 6, 0);
    int l = ts_lww_loop_head(G, 7, L);
    ts_lww_op(G, WSE_OP_LD, 3, 2, 6, 0);
    if (sq)
        ts_lww_op(G, WSE_OP_FMUL, 3, 2, 2, 2);
    ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 2);
    ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 4);
    ts_lww_loop_end(G, 7, l);
}

/* RMSNormalization: r8 := the sum of the squares of the L words from 0, by blocks of B (ACC the B
 * partial sums, SQ a block's squares; DSD 1, 3 and 4; uses r2, r3, r6, r7). */
static void row_sum_squares(lw_gen *G, int64_t L, int ACC, int SQ)
{
    const int64_t B = L < 64 ? L : 64, nb = L / B, rem = L % B;
    ts_lww_op(G, WSE_OP_DSDM, 4, 1, 0, (int)B, 1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 3, ACC, (int)B, 1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 4, SQ, (int)B, 1);
    ts_lww_op(G, WSE_OP_FMULS, 5, 3, 1, 1, -1, -1); /* the first block's squares */
    ts_lww_op(G, WSE_OP_LI, 2, 6, (int)B * 4);
    if (nb > 1) {
        int l = ts_lww_loop_head(G, 7, nb - 1);
        ts_lww_op(G, WSE_OP_DSDBASE, 3, 1, 6, 0);
        ts_lww_op(G, WSE_OP_FMULS, 5, 4, 1, 1, -1, -1);
        ts_lww_op(G, WSE_OP_FADDS, 5, 3, 3, 4, -1, -1);
        ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, (int)B * 4);
        ts_lww_loop_end(G, 7, l);
    }
    if (rem) { /* the last values: into the first rem partial sums */
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, 0, (int)rem, 1);
        ts_lww_op(G, WSE_OP_DSDBASE, 3, 1, 6, 0);
        ts_lww_op(G, WSE_OP_DSDM, 4, 3, ACC, (int)rem, 1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 4, SQ, (int)rem, 1);
        ts_lww_op(G, WSE_OP_FMULS, 5, 4, 1, 1, -1, -1);
        ts_lww_op(G, WSE_OP_FADDS, 5, 3, 3, 4, -1, -1);
    }
    ts_lww_op(G, WSE_OP_LI, 2, 8, 0);
    ts_lww_op(G, WSE_OP_LI, 2, 6, ACC);
    int l = ts_lww_loop_head(G, 7, B);
    ts_lww_op(G, WSE_OP_LD, 3, 2, 6, 0);
    ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 2);
    ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 4);
    ts_lww_loop_end(G, 7, l);
}

/* The sum of the squares of the n words from 0 into r8 (part of a split RMSNormalization). */
static void part_sum_squares(lw_gen *G, int64_t n, int at)
{
    if (n >= 64)
        row_sum_squares(G, n, at, at + 64 * 4);
    else
        row_sum(G, n, true);
}

/* A decode's RMSNormalization that passes its row on (s->rpass): its 1 / s is on the token's path,
 * so it takes y = 1 / sqrt(v) by Newton's steps on the reciprocal square root itself, y := y (3 -
 * v y^2) / 2 (4 dependent operations, no divide), from y = 2 / (1 + v), the reciprocal of the
 * square root's start (one divide). With z = y sqrt(v), z := z (3 - z^2) / 2 starts in (0, 1],
 * grows by about 1.5 a step while small and then converges quadratically to 1: from 1e-12 to 1e12
 * (z from 2e-6) RSQRT_STEPS reach y to a few ulp, in about a third of the square root's steps'
 * cycles (each of those a divide). */
enum { RSQRT_STEPS = 40 };

/* r8 := the sum of the squares of the n words from 0 by a scalar loop unrolled by 8 (uses r2, r6,
 * r7): about 3.3 cycles a value, no stores. */
static void part_squares_scalar(lw_gen *G, int64_t n)
{
    enum { U = 8 };
    ts_lww_op(G, WSE_OP_LI, 2, 8, 0);
    ts_lww_op(G, WSE_OP_LI, 2, 6, 0);
    if (n / U) {
        int l = ts_lww_loop_head(G, 7, n / U);
        for (int u = 0; u < U; u++) {
            ts_lww_op(G, WSE_OP_LD, 3, 2, 6, 4 * u);
            ts_lww_op(G, WSE_OP_FMUL, 3, 2, 2, 2);
            ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 2);
        }
        ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 4 * U);
        ts_lww_loop_end(G, 7, l);
    }
    for (int u = 0; u < (int)(n % U); u++) {
        ts_lww_op(G, WSE_OP_LD, 3, 2, 6, 4 * u);
        ts_lww_op(G, WSE_OP_FMUL, 3, 2, 2, 2);
        ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 2);
    }
}

/* r1 := 1 / sqrt(r8 / L + epsilon) (r14 holds 1 / L, r13 0.5; uses r2, r3, r5, r8, r9, r11, r12). */
static void norm_rstd(lw_gen *G, const lw_stage *s)
{
    ts_lww_op(G, WSE_OP_FMUL, 3, 8, 8, 14);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(s->lo));
    ts_lww_op(G, WSE_OP_FADD, 3, 11, 8, 5); /* r11 = v = var + epsilon */
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(1.0f));
    ts_lww_op(G, WSE_OP_FADD, 3, 12, 11, 5);
    ts_lww_op(G, WSE_OP_FMUL, 3, 12, 12, 13); /* r12 = s = (1 + v) / 2 */
    if (s->rpass) {
        ts_lww_op(G, WSE_OP_MOV, 2, 8, 12);
        ts_lww_recip(G);                            /* r1 = y = 2 / (1 + v) */
        ts_lww_op(G, WSE_OP_FMUL, 3, 12, 11, 13);   /* r12 = v / 2 */
        ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(1.5f));
        int it = ts_lww_loop_head(G, 9, RSQRT_STEPS / 2);
        for (int u = 0; u < 2; u++) {
            ts_lww_op(G, WSE_OP_FMUL, 3, 2, 1, 1);
            ts_lww_op(G, WSE_OP_FMUL, 3, 2, 2, 12);
            ts_lww_op(G, WSE_OP_FSUB, 3, 2, 5, 2); /* 3/2 - v y^2 / 2 */
            ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 2);
        }
        ts_lww_loop_end(G, 9, it);
        return;
    }
    int it = ts_lww_loop_head(G, 9, 20);
    ts_lww_op(G, WSE_OP_MOV, 2, 8, 12);
    ts_lww_recip(G);
    ts_lww_op(G, WSE_OP_FMUL, 3, 3, 11, 1);
    ts_lww_op(G, WSE_OP_FADD, 3, 12, 12, 3);
    ts_lww_op(G, WSE_OP_FMUL, 3, 12, 12, 13);
    ts_lww_loop_end(G, 9, it);
    ts_lww_op(G, WSE_OP_MOV, 2, 8, 12);
    ts_lww_recip(G);
}

ts_status ts_lww_emit_norm(lw *Lw, ts_program *P, lw_gen *G, const lw_stage *s)
{
    const int64_t L = s->L;
    const int GAM = (int)(4 * L), BET = (int)(8 * L), MEAN = (int)(12 * L), RSTD = s->vop ? BET : MEAN + 4;
    ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits((float)(1.0 / (double)L)));
    ts_lww_op(G, WSE_OP_FLI, 2, 13, ts_lww_bits(0.5f));
    int row = ts_lww_loop_head(G, 10, (int64_t)(s->in_n / (uint64_t)L));
    ts_lww_in_to_mem(G, s->cin, 0, (uint64_t)L, 1);
    if (!s->vop) {
        row_sum(G, L, false);
        ts_lww_op(G, WSE_OP_FMUL, 3, 8, 8, 14);
        ts_lww_op(G, WSE_OP_ST, 3, 8, 15, MEAN);
    }
    ts_lww_op(G, WSE_OP_DSDM, 4, 0, 0, (int)L, 1);
    if (!s->vop) {
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, MEAN, (int)L, 0);
        ts_lww_op(G, WSE_OP_FSUBS, 5, 0, 0, 1, -1, -1);
    }
    if (s->vop && L >= 256)
        row_sum_squares(G, L, RSTD + 4, RSTD + 4 + 64 * 4);
    else
        row_sum(G, L, true);
    norm_rstd(G, s);
    ts_lww_op(G, WSE_OP_ST, 3, 1, 15, RSTD);
    ts_lww_op(G, WSE_OP_DSDM, 4, 1, RSTD, (int)L, 0);
    ts_lww_op(G, WSE_OP_FMULS, 5, 0, 0, 1, -1, -1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 1, GAM, (int)L, 1);
    if (s->vop) { /* RMSNormalization: times the scale, out */
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, (int)L, 0);
        ts_lww_op(G, WSE_OP_FMULS, 5, 2, 0, 1, -1, -1);
    } else {
        ts_lww_op(G, WSE_OP_FMULS, 5, 0, 0, 1, -1, -1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, BET, (int)L, 1);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, (int)L, 0);
        ts_lww_op(G, WSE_OP_FADDS, 5, 2, 0, 1, -1, -1);
    }
    ts_lww_loop_end(G, 10, row);
    uint32_t id = s->y0 * Lw->t->width + s->x;
    if (ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)GAM, s->vals, (uint32_t)(L * (s->vop ? 4 : 8)), Lw->err))
        return Lw->err->status;
    return TS_OK;
}

/* PE g of a split norm's sum: its part's in r8, plus the sum of the PEs east of it (R(g + 1)), sent
 * west (R(g)); PE 0 computes from the whole sum the mean (mean) or 1 / s into r1, the others take
 * it from the west; every PE but the last sends it east after the raw parts it passed. */
static void split_reduce(lw_gen *G, const lw_stage *s, uint32_t g, uint32_t ci, uint32_t co, bool mean)
{
    const bool last = g + 1 == s->G;
    if (!last) {
        ts_lww_op(G, WSE_OP_RECV, 2, 2, (int)lw_rcol(s, g + 1));
        ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 2);
    }
    if (g) {
        ts_lww_op(G, WSE_OP_SEND, 2, (int)lw_rcol(s, g), 8);
        ts_lww_op(G, WSE_OP_RECV, 2, 1, (int)ci); /* from the west */
    } else if (mean)
        ts_lww_op(G, WSE_OP_FMUL, 3, 1, 8, 14);
    else
        norm_rstd(G, s);
    if (!last)
        ts_lww_op(G, WSE_OP_SEND, 2, (int)co, 1);
}

/* LayerNormalization's part: the mean of the whole row (its part's sum by a scalar loop, the sums
 * west, the mean east), stored at MEAN and taken from the part in place. */
static void split_center(lw_gen *G, const lw_stage *s, uint32_t g, uint32_t ci, uint32_t co, int64_t n, int MEAN)
{
    row_sum(G, n, false);
    split_reduce(G, s, g, ci, co, true);
    ts_lww_op(G, WSE_OP_ST, 3, 1, 15, MEAN);
    ts_lww_op(G, WSE_OP_DSDM, 4, 0, 0, (int)n, 1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 1, MEAN, (int)n, 0);
    ts_lww_op(G, WSE_OP_FSUBS, 5, 0, 0, 1, -1, -1);
}

/* The routes of a decode's RMSNormalization down a column (norm_column): PE q of its parts at row
 * q step (intermediate PEs between, mid), the row multicast down the column (cin), the partial
 * sums up it (R(q + 1) into PE q, R(q) out of it), 1 / s down it (G(1)), each part east (G(0)). */
static void column_routes(lw_gen *G, const lw_stage *s, uint32_t q, bool mid, bool spread)
{
    const bool last = q + 1 == s->G;
    const uint32_t down = lw_gcol(s, 1);
    if (mid) { /* between part q and part q + 1 */
        if (!spread)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_N, P_S);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, q + 1), P_S, P_N);
        if (!s->rpass)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)down, P_N, P_S);
        return;
    }
    if (spread) /* its part alone, from the west on its row */
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R);
    else
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, q ? P_N : P_W, P_R | (last ? 0 : P_S));
    if (!last)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, q + 1), P_S, P_R);
    if (q)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, q), P_R, P_N);
    if (!s->rpass)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)down, q ? P_N : P_R, (q ? P_R : 0) | (last ? 0 : P_S));
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_R, P_E);
}

/* A decode's RMSNormalization of one row over s->G parts down a column (s->ko, norm_rows in
 * lower_wse_place.c): PE q, at row q s->kstep, takes part q of the row multicast down the column
 * (the rest into a junk word) and sums its squares; the partial sums go north part by part, each
 * PE adding its own; the top PE computes 1 / s and sends it down the column; each PE scales its
 * part and sends it east on its own row (the next product's rows take it, lower_wse_emit_mm.c).
 * Passing its row on (s->rpass, norm_pass in lower_wse_place.c): each PE sends its part east raw
 * as soon as it has it, before its sum; the top PE sends 1 / s after its part, which the product's
 * row 0 takes to scale its sums (the norm's scale in the product's weights). */
uint64_t ts_lww_norm_cut(const lw_stage *s, uint32_t q)
{
    return s->cols ? (uint64_t)s->cols[q] : (uint64_t)q * (uint64_t)s->L / s->G;
}

static ts_status norm_column(lw *Lw, ts_program *P, lw_gen *G, const lw_stage *s)
{
    const int64_t L = s->L;
    const uint32_t step = s->kstep ? s->kstep : 1;
    const bool spread = lw_join_spread(&Lw->st[s->prev]); /* each part on its own row */
    for (uint32_t q = 0; q < s->G; q++) {
        const bool last = q + 1 == s->G;
        const int64_t a = (int64_t)ts_lww_norm_cut(s, q), b = (int64_t)ts_lww_norm_cut(s, q + 1), n = b - a;
        /* the part at 0, its scale at 4n, 1 / s at 8n, the sums of squares' blocks, a junk word */
        const int GAM = (int)(4 * n), RSTD = (int)(8 * n), JA = RSTD + 4 + (n >= 64 ? 8 * 64 : 0);
        for (uint32_t r = 1; !last && r < step; r++) {
            if (!ts_lww_pe_stream(P, Lw->t, s->x, s->y0 + q * step + r, G))
                return TS_ENOMEM;
            column_routes(G, s, q, true, spread);
        }
        if (!ts_lww_pe_stream(P, Lw->t, s->x, s->y0 + q * step, G))
            return TS_ENOMEM;
        column_routes(G, s, q, false, spread);
        ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
        ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits((float)(1.0 / (double)L)));
        ts_lww_op(G, WSE_OP_FLI, 2, 13, ts_lww_bits(0.5f));
        if (s->rpass) { /* its part east raw as soon as it is in (the product holds the scale, takes
                         * 1 / s after part 0): sent on microthread 0 while the rest of the row
                         * goes into the junk word */
            if (!spread)
                ts_lww_in_to_mem(G, s->cin, (uint64_t)JA, (uint64_t)a, 0);
            ts_lww_in_to_mem(G, s->cin, 0, (uint64_t)n, 1);
            for (int64_t k = 0; k < n; k += PIECE) {
                const int m = n - k > PIECE ? PIECE : (int)(n - k);
                ts_lww_op(G, WSE_OP_DSDM, 4, 12, (int)(4 * k), m, 1);
                ts_lww_op(G, WSE_OP_DSDOUT, 4, 13, (int)s->cout, m, 0);
                ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, 0, -1);
            }
            /* the rest of the row into the junk word on microthread 1, its squares meanwhile by a
             * scalar loop (loads only: the SRAM's write port stays the drain's) */
            for (int64_t k = b; !spread && k < L; k += PIECE) {
                const int m = L - k > PIECE ? PIECE : (int)(L - k);
                ts_lww_op(G, WSE_OP_DSDIN, 3, 10, (int)s->cin, m);
                ts_lww_op(G, WSE_OP_DSDM, 4, 11, JA, m, 0);
                ts_lww_op(G, WSE_OP_FMOVS, 4, 11, 10, 1, -1);
            }
            if (spread) /* no drain: its squares by vector ops */
                part_sum_squares(G, n, RSTD + 4);
            else
                part_squares_scalar(G, n);
        } else {
            if (spread)
                ts_lww_in_to_mem(G, s->cin, 0, (uint64_t)n, 1);
            else
                ts_lww_in_part(G, s->cin, (uint64_t)JA, 0, (uint64_t)a, (uint64_t)b, (uint64_t)L);
            part_sum_squares(G, n, RSTD + 4);
        }
        if (s->rpass) { /* a one-word move on microthread 0 waits for its part's send (the top PE's
                         * 1 / s goes after it, on the same colour) */
            ts_lww_op(G, WSE_OP_DSDM, 4, 12, JA, 1, 0);
            ts_lww_op(G, WSE_OP_DSDM, 4, 13, JA, 1, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, 0, -1);
        }
        if (!last) { /* the parts below */
            ts_lww_op(G, WSE_OP_RECV, 2, 2, (int)lw_rcol(s, q + 1));
            ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 2);
        }
        if (q && s->rpass) {
            ts_lww_op(G, WSE_OP_SEND, 2, (int)lw_rcol(s, q), 8);
            continue;
        }
        if (q) {
            ts_lww_op(G, WSE_OP_SEND, 2, (int)lw_rcol(s, q), 8);
            ts_lww_op(G, WSE_OP_RECV, 2, 1, (int)lw_gcol(s, 1));
        } else {
            norm_rstd(G, s);
            if (s->rpass) {
                ts_lww_op(G, WSE_OP_SEND, 2, (int)s->cout, 1);
                continue;
            }
            if (!last)
                ts_lww_op(G, WSE_OP_SEND, 2, (int)lw_gcol(s, 1), 1);
        }
        ts_lww_op(G, WSE_OP_ST, 3, 1, 15, RSTD);
        ts_lww_op(G, WSE_OP_DSDM, 4, 0, 0, (int)n, 1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, RSTD, (int)n, 0);
        ts_lww_op(G, WSE_OP_FMULS, 5, 0, 0, 1, -1, -1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, GAM, (int)n, 1);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, (int)n, 0);
        ts_lww_op(G, WSE_OP_FMULS, 5, 2, 0, 1, -1, -1);
        const uint32_t id = (s->y0 + q * step) * Lw->t->width + s->x;
        if (ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)GAM, s->vals + a, (uint32_t)(n * 4), Lw->err))
            return Lw->err->status;
    }
    return TS_OK;
}

/* A decode's RMSNormalization that passes its row on (s->rpass, norm_pass in lower_wse_place.c):
 * the row multicast along its s->G + 1 PEs in a row; PE g < G takes part g of it (the rest into a
 * junk word) and sums its squares, adds the sum of the PEs west of it and sends it east (R(g));
 * the last PE passes the row on as it comes, then takes the whole sum, computes 1 / s and sends it
 * after the row. The next product holds the norm's scale in its weights and scales its sums by
 * 1 / s. */
static ts_status norm_pass(lw *Lw, ts_program *P, lw_gen *G, const lw_stage *s)
{
    const int64_t L = s->L, np = s->G;
    for (uint32_t g = 0; g <= s->G; g++) {
        const bool last = g == s->G;
        if (!ts_lww_pe_stream(P, Lw->t, s->x + g, s->y0, G))
            return TS_ENOMEM;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R | (last ? 0 : P_E));
        if (g)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, g - 1), P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)(last ? s->cout : lw_rcol(s, g)), P_R, P_E);
        ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
        if (last) {
            ts_lww_in_to_out(G, s->cin, s->cout, (uint64_t)L);
            ts_lww_op(G, WSE_OP_RECV, 2, 8, (int)lw_rcol(s, g - 1));
            ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits((float)(1.0 / (double)L)));
            ts_lww_op(G, WSE_OP_FLI, 2, 13, ts_lww_bits(0.5f));
            norm_rstd(G, s);
            ts_lww_op(G, WSE_OP_SEND, 2, (int)s->cout, 1);
            break;
        }
        const int64_t a = g * L / np, b = (g + 1) * L / np, n = b - a;
        const int JA = (int)(4 * n);
        ts_lww_in_part(G, s->cin, (uint64_t)JA, 0, (uint64_t)a, (uint64_t)b, (uint64_t)L);
        part_sum_squares(G, n, JA + 4);
        if (g) {
            ts_lww_op(G, WSE_OP_RECV, 2, 2, (int)lw_rcol(s, g - 1));
            ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 2);
        }
        ts_lww_op(G, WSE_OP_SEND, 2, (int)lw_rcol(s, g), 8);
    }
    return TS_OK;
}

ts_status ts_lww_emit_norm_split(lw *Lw, ts_program *P, lw_gen *G, const lw_stage *s)
{
    const int64_t L = s->L;
    if (s->ko > 1)
        return norm_column(Lw, P, G, s);
    if (s->rpass)
        return norm_pass(Lw, P, G, s);
    const bool ln = !s->vop; /* LayerNormalization: the mean first, then the bias */
    for (uint32_t g = 0; g < s->G; g++) {
        const uint32_t ci = g ? lw_gcol(s, g - 1) : s->cin, co = lw_gcol(s, g);
        const bool last = g + 1 == s->G;
        const int64_t p = s->G - 1 - g, a = p * L / s->G, b = (p + 1) * L / s->G, n = b - a;
        /* the part at 0, its scale at 4n; RMSNormalization: 1 / s at 8n; LayerNormalization: its bias
         * at 8n, the mean at 12n, 1 / s after; then the sums of squares' blocks */
        const int GAM = (int)(4 * n), BET = (int)(8 * n), RSTD = (int)((ln ? 12 : 8) * n + (ln ? 4 : 0));
        if (!ts_lww_pe_stream(P, Lw->t, s->x + g, s->y0, G))
            return TS_ENOMEM;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, lw_outp(s, last));
        if (!last) /* the partial sum of the PEs east of it */
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, g + 1), P_E, P_R);
        if (g) /* its own and theirs, west */
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, g), P_R, P_W);
        ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
        ts_lww_op(G, WSE_OP_FLI, 2, 14, ts_lww_bits((float)(1.0 / (double)L)));
        ts_lww_op(G, WSE_OP_FLI, 2, 13, ts_lww_bits(0.5f));
        int row = ts_lww_loop_head(G, 10, (int64_t)(s->in_n / (uint64_t)L));
        ts_lww_in_to_out(G, ci, co, (uint64_t)a);
        ts_lww_in_to_mem(G, ci, 0, (uint64_t)n, 1);
        if (ln)
            split_center(G, s, g, ci, co, n, RSTD - 4);
        part_sum_squares(G, n, RSTD + 4);
        split_reduce(G, s, g, ci, co, false);
        ts_lww_op(G, WSE_OP_ST, 3, 1, 15, RSTD);
        ts_lww_op(G, WSE_OP_DSDM, 4, 0, 0, (int)n, 1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, RSTD, (int)n, 0);
        ts_lww_op(G, WSE_OP_FMULS, 5, 0, 0, 1, -1, -1);
        ts_lww_op(G, WSE_OP_DSDM, 4, 1, GAM, (int)n, 1);
        if (ln) { /* times the scale, plus the bias, out */
            ts_lww_op(G, WSE_OP_FMULS, 5, 0, 0, 1, -1, -1);
            ts_lww_op(G, WSE_OP_DSDM, 4, 1, BET, (int)n, 1);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)co, (int)n, 0);
            ts_lww_op(G, WSE_OP_FADDS, 5, 2, 0, 1, -1, -1);
        } else {
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 2, (int)co, (int)n, 0);
            ts_lww_op(G, WSE_OP_FMULS, 5, 2, 0, 1, -1, -1);
        }
        ts_lww_in_to_out(G, ci, co, (uint64_t)(L - b));
        ts_lww_loop_end(G, 10, row);
        const uint32_t id = s->y0 * Lw->t->width + s->x + g;
        if (ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)GAM, s->vals + a, (uint32_t)(n * 4), Lw->err) ||
            (ln && ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)BET, s->vals + L + a, (uint32_t)(n * 4),
                                          Lw->err)))
            return Lw->err->status;
    }
    return TS_OK;
}
