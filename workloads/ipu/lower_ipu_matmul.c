/* workloads/ipu/lower_ipu_matmul.c — MatMul and Gemm on the IPU's AMP, planner (a).
 *
 * The AMP matrix-product kernel (lwi_emit_mm; Conv and planner (b) use it too), MatMul/Gemm by a
 * weight (rows of A over tile groups; the columns in blocks over the tiles of a group once the
 * weights pass their share of the tile; k in slices when A's rows do not fit either; a Gemm of one
 * row is a 1x1 Conv, lower_ipu_conv.c), and the MatMul of two activations on the workers' f32
 * units (lwi_lower_bmm).
 */
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/ipu/lower_ipu_int.h"

/* ---- the AMP matrix-product kernel ---- */

/* One group of AMP outputs of a row: the accumulators zeroed, the row's inputs ($m4 from $m2; in
 * `taps` runs with a channel-last image) against the group's coefficient blocks ($m5), the sums
 * plus the bias or partial sums ($m8), nstore of them stored at $m6 (f32, or f16 pairs). */
static void emit_group(lw *L, uint32_t t, const mm_args *m, uint32_t nstore)
{
    uint32_t U = m->units;
    W(t, AMPZERO, 0, 0, 0);
    W(t, MOV, RM(4), RM(2), 0);
    if (m->taps)
        W(t, SETZI, RM(12), (int32_t)m->taps - 1, 0);
    size_t kr = W(t, RPT, RM(11), (int32_t)U + 2, 0);
    for (uint32_t s = 0; s < U / 2; s++) {
        W(t, LD128PUTCS, RM(5), (int32_t)s, 0);
        W(t, ADDI, RM(5), RM(5), 16);
    }
    W(t, LD64STEP, RA(0), RM(4), 8);
    if (m->half)
        W(t, F16V4AMP, RA(0), 0, 0);
    else
        W(t, F32V2AMP, RA(0), 0, 0);
    if (m->taps) {
        W(t, ADDI, RM(4), RM(4), m->tap_skip);
        W(t, BRNZDEC, RM(12), (int32_t)kr, 0);
    }
    lwi_emit_group_out(L, t, m, nstore, RM(8), RM(6));
}

void lwi_emit_group_out(lw *L, uint32_t t, const mm_args *m, uint32_t nstore, int32_t rb, int32_t ro)
{
    uint32_t U = m->units;
    for (uint32_t s = 0; s < U / 2; s++)
        W(t, AMPGET, RA(2 * s), (int32_t)s, 0);
    if (m->bias || m->acc) {
        for (uint32_t s = 0; s < U / 2; s++) {
            W(t, LD64, RA(8 + 2 * s), rb, (int32_t)(8 * s));
            W(t, F32V2ADD, RA(2 * s), RA(2 * s), RA(8 + 2 * s));
        }
        W(t, ADDI, rb, rb, (int32_t)(4 * U));
    }
    if (m->out16) /* pairs rounded to f16 (nearest even), one 32-bit store per pair */
        for (uint32_t s = 0; 2 * s < nstore; s++) {
            W(t, F32V2TOF16, RA(s), RA(2 * s), 0);
            W(t, ST32, RA(s), ro, (int32_t)(m->out_u * 2 * s));
        }
    else
        for (uint32_t u = 0; u < nstore; u++)
            W(t, ST32, RA(u), ro, (int32_t)(m->out_u * u));
    W(t, ADDI, ro, ro, (int32_t)m->out_q);
}

void lwi_emit_amp_groups(lw *L, uint32_t t, const mm_args *m)
{
    uint32_t U = m->units;
    uint32_t full = (uint32_t)(m->nq_real / U), tail = (uint32_t)(m->nq_real % U);
    if (full) {
        W(t, SETZI, RM(7), (int32_t)full - 1, 0);
        size_t q = LWT(t).wrk.n;
        emit_group(L, t, m, U);
        W(t, BRNZDEC, RM(7), (int32_t)q, 0);
    }
    if (tail)
        emit_group(L, t, m, tail);
}

/* Every worker of the tile runs this routine (runall) on its block of rows. The AMP coefficients
 * are tile state shared by the workers: all of them load the same block before using it, and they
 * run the same instructions in the same order one barrel slot apart, so each f32v2amp of every
 * worker sees the block of its own iteration (the coefficient loads of the next iteration issue
 * after the last worker's f32v2amp of this one). */
void lwi_emit_mm(lw *L, uint32_t t, const mm_args *m)
{
    if (lwi_emit_mm_shared(L, t, m))
        return;
    uint32_t rw = (uint32_t)ts_geom_cdiv(m->rows, L->workers);
    lwi_emit_start_row(L, t, m->rows, rw);
    W(t, MULI, RM(2), RM(1), (int32_t)m->a_stride);
    if (m->tab)
        W(t, LD32, RM(3), RM(0), 0);
    else
        W(t, SETZI, RM(3), (int32_t)m->a, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)m->out_row);
    if (m->tab)
        W(t, LD32, RM(4), RM(0), 8);
    else
        W(t, SETZI, RM(4), (int32_t)m->out, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    if (m->acc) { /* $m13: this row's partial sums */
        W(t, MULI, RM(13), RM(1), (int32_t)m->acc_row);
        if (m->tab)
            W(t, LD32, RM(4), RM(0), 12);
        else
            W(t, SETZI, RM(4), (int32_t)m->acc, 0);
        W(t, ADD, RM(13), RM(13), RM(4));
    }
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    if (m->tab) { /* $m9 := w, $m10 := bias */
        W(t, LD32, RM(11), RM(0), 20);
        W(t, LD32, RM(9), RM(0), 4);
        W(t, LD32, RM(10), RM(0), 16);
    } else
        W(t, SETZI, RM(11), (int32_t)m->kp, 0);
    size_t row = m->tab ? W(t, MOV, RM(5), RM(9), 0) : W(t, SETZI, RM(5), (int32_t)m->w, 0);
    if (m->acc)
        W(t, MOV, RM(8), RM(13), 0);
    else if (m->tab)
        W(t, MOV, RM(8), RM(10), 0);
    else
        W(t, SETZI, RM(8), (int32_t)m->bias, 0);
    W(t, MOV, RM(6), RM(3), 0);
    lwi_emit_amp_groups(L, t, m);
    W(t, ADDI, RM(2), RM(2), (int32_t)m->a_stride);
    W(t, ADDI, RM(3), RM(3), (int32_t)m->out_row);
    if (m->acc)
        W(t, ADDI, RM(13), RM(13), (int32_t)m->acc_row);
    W(t, BRNZDEC, RM(1), (int32_t)row, 0);
}

/* ---- MatMul and Gemm by a weight ---- */

/* A MatMul/Gemm as planner (a) lowers it. */
typedef struct mm_plan {
    const ts_graph_tensor *B, *C; /* the weights ([K][N], or [N][K] with tb) and the bias (or NULL) */
    int bid, cid;
    bool tb, half;
    uint64_t M, K, N;
    uint64_t Kp;          /* K padded to whole AMP inputs (zeros in A, zero weights) */
    uint32_t per, U;      /* inputs per AMP unit and instruction; AMP units */
    uint64_t es, nq, kp;  /* bytes per element; output groups; input steps */
    uint64_t qpb, ncb;    /* the columns in ncb blocks of qpb groups */
    uint64_t pbc, rp;     /* output columns per tile (storage); rows per tile */
    uint32_t tn;          /* tiles */
    uint64_t nks, kps;    /* slices of k, input steps per slice */
    uint64_t waddr, baddr, out;
} mm_plan;

/* MatMul A[..., K] x B[K, N] and Gemm (transB, bias [N]): the shape and its checks. */
static ts_status mm_shape(lw *L, const ts_graph_node *n, mm_plan *mp)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *A = ts_graph_get_tensor(g, n->in[0]);
    const ts_graph_tensor *B = ts_graph_get_tensor(g, n->in[1]);
    const ts_graph_tensor *C = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    bool gemm = n->op == TS_OP_GEMM;
    bool tb = gemm && n->attrs.trans_b;
    if (gemm && (n->attrs.trans_a || n->attrs.alpha != 1.0 || (C && n->attrs.beta != 1.0)))
        return lwi_unsupported(L, n, "transA, alpha or beta other than 1");
    if (B->kind == TS_TENSOR_ACTIVATION || B->kind == TS_TENSOR_INPUT || B->rank != 2 || A->rank < 1)
        return lwi_unsupported(L, n, "the second operand must be a 2-d weight");
    ts_status rc = lwi_need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    *mp = (mm_plan){.B = B, .C = C, .bid = n->in[1], .cid = C ? n->in[2] : -1, .tb = tb};
    mp->K = (uint64_t)A->dims[A->rank - 1];
    mp->N = (uint64_t)(tb ? B->dims[0] : B->dims[1]);
    mp->M = (uint64_t)ts_graph_tensor_elems(A) / mp->K;
    if (C && ts_graph_tensor_elems(C) != (int64_t)mp->N)
        return lwi_unsupported(L, n, "a bias that is not one value per output column");
    mp->half = A->dtype == TS_DT_F16;
    return TS_OK;
}

ts_status lwi_reheld(lw *L, int x, uint32_t es)
{
    const lw_place P = L->pl[x];
    uint64_t total = (uint64_t)ts_graph_tensor_elems(ts_graph_get_tensor(L->g, x));
    if (!P.ntiles || P.es == es || P.chunk % 2 || (!P.inner && total % 2))
        return TS_OK; /* left to the operator's own checks */
    uint32_t toff = L->toff;
    L->toff = 0; /* x's tiles, as they are */
    bool up = es == 4; /* halves to words (f16v2tof32), else words to halves (f32v2tof16, nearest even) */
    uint64_t out = lwi_talloc(L, P.chunk * es);
    for (uint32_t i = 0; i < P.ntiles; i++) {
        /* flat: the tile's elements; blocked: its whole chunk (the slots past the last channel are
         * converted too, and never read) */
        uint64_t e0 = (uint64_t)i * P.chunk, cnt = P.inner ? P.chunk : e0 < total ? umin(P.chunk, total - e0) : 0;
        if (!cnt)
            continue;
        uint32_t t = P.t0 + i, pairs = (uint32_t)(cnt / 2), rw = (uint32_t)ts_geom_cdiv(pairs, L->workers);
        size_t entry = LWT(t).wrk.n;
        lwi_emit_start_row(L, t, pairs, rw); /* $m1: this worker's first pair */
        W(t, MULI, RM(2), RM(1), up ? 4 : 8);
        W(t, SETZI, RM(4), (int32_t)P.addr, 0);
        W(t, ADD, RM(2), RM(2), RM(4));      /* its pairs as held */
        W(t, MULI, RM(3), RM(1), up ? 8 : 4);
        W(t, SETZI, RM(4), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(4));      /* and as they are to be held */
        W(t, SETZI, RM(5), (int32_t)rw, 0);
        W(t, RPT, RM(5), 4, 0);
        if (up) {
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, F16V2TOF32, RA(2), RA(0), 0);
            W(t, ST32STEP, RA(2), RM(3), 4);
            W(t, ST32STEP, RA(3), RM(3), 4);
        } else {
            W(t, LD32, RA(1), RM(2), 4);
            W(t, LD32STEP, RA(0), RM(2), 8);
            W(t, F32V2TOF16, RA(0), RA(0), 0);
            W(t, ST32STEP, RA(0), RM(3), 4);
        }
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
    }
    uint32_t b = L->base;
    L->base = P.t0;
    lwi_use_tiles(L, P.ntiles);
    L->base = b;
    lwi_sync_all(L);
    L->toff = toff;
    L->pl[x].addr = out;
    L->pl[x].es = es;
    return TS_OK;
}

/* One row: a 1x1 Conv of K channels, the weights split over the columns. */
static ts_status mm_one_row(lw *L, const ts_graph_node *n, lw_scr *sc, const mm_plan *mp)
{
    cv_shape s = {.C = mp->K, .H = 1, .Wd = 1, .M = mp->N, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .Ho = 1, .Wo = 1,
                  .Wt = mp->B, .wid = mp->bid, .Bt = mp->C, .bid = mp->cid, .wmode = mp->tb ? 1 : 2,
                  .half = mp->half};
    return lwi_lower_conv_shape(L, n, sc, &s);
}

/* What the AMP takes: inputs per unit and instruction, its units, the f16 routine's limits. */
static ts_status mm_amp(lw *L, const ts_graph_node *n, mm_plan *mp)
{
    bool half = mp->half;
    if (half && !lwi_held_half(L, n->in[0]))
        return lwi_unsupported(L, n, "an f16 input of more than one row held in f32 words (the f16 routine reads halves)");
    mp->per = half ? 4 : 2; /* inputs per AMP unit and instruction */
    if (half && mp->K % 2)
        return lwi_unsupported(L, n, "an odd f16 inner dimension (rows of halves are moved in 32-bit words)");
    mp->Kp = ts_geom_cdiv(mp->K, mp->per) * mp->per; /* one 32-bit word of zeros a row at most */
    if (half && mp->N % 2)
        return lwi_unsupported(L, n, "an odd number of f16 output columns (outputs are stored in pairs)");
    mp->U = half ? L->units16 : L->units;
    if (half && (mp->U < 2 || mp->U > 8 || mp->U % 2))
        return lwi_unsupported(L, n, "f16 on an AMP of other than 2, 4 or 8 f16 units");
    mp->es = half ? 2 : 4;
    mp->nq = ts_geom_cdiv(mp->N, mp->U);
    mp->kp = mp->Kp / mp->per;
    return TS_OK;
}

/* The partition. Columns: all on every tile while their weights take at most a quarter of the tile
 * memory (1/mmshare: less when the model's weights do not fit at a quarter); beyond that split into
 * ncb blocks of qpb groups (the output is then blocked: rows over tile groups, columns over the
 * tiles of a group). When the model's weights do not fit at a quarter (mmshare > 4), the inner
 * dimension is cut into nks slices whose rows of A take at most 1/mmshare of the tile memory: each
 * slice is gathered into one buffer and multiplied in turn, adding the sums of the slices before
 * (f32). */
static void mm_partition(const lw *L, mm_plan *mp)
{
    /* under auto, the share its plan was priced with */
    uint32_t div = L->plans && L->plans[L->cur].lcs ? L->plans[L->cur].share : L->mmshare;
    uint64_t nq = mp->nq, kp = mp->kp, U = mp->U, share = L->p->target.sram_bytes / div;
    uint64_t qpb = nq;
    while (qpb > 1 && qpb * kp * U * 8 > share)
        qpb = ts_geom_cdiv(qpb, 2);
    uint64_t ncb = ts_geom_cdiv(nq, qpb);
    if (ncb > L->T)
        ncb = L->T, qpb = ts_geom_cdiv(nq, ncb), ncb = ts_geom_cdiv(nq, qpb);
    mp->qpb = qpb;
    mp->ncb = ncb;
    mp->pbc = ncb > 1 ? qpb * U : mp->N;
    mp->rp = ts_geom_cdiv(mp->M, L->T / ncb);
    uint32_t nrg = (uint32_t)ts_geom_cdiv(mp->M, mp->rp);
    mp->tn = (uint32_t)(nrg * ncb);
    uint64_t nks = 1;
    while (!mp->half && mp->Kp == mp->K && div > 4 && mp->rp * (kp / nks) * 8 > share && kp % (2 * nks) == 0)
        nks *= 2;
    mp->nks = nks;
    mp->kps = kp / nks;
}

/* The weights as initial data, per column block on its tiles: coefficient blocks [group][input
 * step][unit][per] (f16 blocks hold halves; slice by slice when k is sliced), and the bias (f32,
 * added to the f32 accumulators). */
static ts_status mm_weights(lw *L, const ts_graph_node *n, const mm_plan *mp)
{
    const uint64_t qpb = mp->qpb, kp = mp->kp, kps = mp->kps, nq = mp->nq, N = mp->N, K = mp->K;
    const uint32_t U = mp->U, per = mp->per;
    uint64_t wbytes = qpb * kp * U * 8;
    float *w = ts_calloc(wbytes / 4 + qpb * U, 4);
    if (!w)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the weights of '%s'", n->name);
    uint16_t *w16 = (uint16_t *)w;
    float *bias = w + wbytes / 4;
    ts_status rc = TS_OK;
    for (uint64_t cbk = 0; cbk < mp->ncb && rc == TS_OK; cbk++) {
        uint64_t q0 = cbk * qpb, q1 = q0 + qpb < nq ? q0 + qpb : nq;
        memset(w, 0, wbytes + qpb * U * 4);
        for (uint64_t q = q0; q < q1; q++)
            for (uint64_t k2 = 0; k2 < kp; k2++)
                for (uint32_t u = 0; u < U; u++)
                    for (uint32_t j = 0; j < per; j++) {
                        uint64_t o = q * U + u, k = per * k2 + j;
                        uint64_t at = (((k2 / kps * qpb + q - q0) * kps + k2 % kps) * U + u) * per + j;
                        float v = o < N && k < K ? ts_fill_value_f32(mp->B, mp->bid, mp->tb ? o * K + k : k * N + o) : 0.0f;
                        if (mp->half)
                            w16[at] = ts_f32_to_f16(v);
                        else
                            w[at] = v;
                    }
        for (uint64_t o = q0 * U; mp->C && o < N && o < q1 * U; o++)
            bias[o - q0 * U] = ts_fill_value_f32(mp->C, mp->cid, o);
        for (uint32_t t = (uint32_t)cbk; t < mp->tn && rc == TS_OK; t += (uint32_t)mp->ncb) {
            rc = lwi_seg(L, t, mp->waddr, w, mp->nks > 1 ? wbytes : (q1 - q0) * kp * U * 8);
            if (rc == TS_OK && mp->C)
                rc = lwi_seg(L, t, mp->baddr, bias, qpb * U * 4);
        }
    }
    ts_free(w);
    return rc;
}

/* Slice sl of k (all of it when it is not sliced) on every tile: the AMP kernel over the tile's
 * rows of A at sc->where. Slice s writes its sums to out when nks - 1 - s is even, else to tmp,
 * reading the other's (workers whose blocks overlap must not read sums another has already added
 * to). */
static void mm_slice(lw *L, const mm_plan *mp, const lw_scr *sc, const uint32_t *rows, uint64_t sl, uint64_t tmp)
{
    const uint64_t nks = mp->nks, kps = mp->kps, qpb = mp->qpb, nq = mp->nq, N = mp->N, es = mp->es;
    const uint32_t U = mp->U;
    uint64_t dst = (nks - 1 - sl) % 2 ? tmp : mp->out, prev = (nks - sl) % 2 ? tmp : mp->out;
    for (uint32_t t = 0; t < mp->tn; t++) {
        uint64_t cbk = t % mp->ncb, q0 = cbk * qpb, q1 = q0 + qpb < nq ? q0 + qpb : nq;
        mm_args m = {.rows = rows[t], .nq = (uint32_t)(q1 - q0), .kp = (uint32_t)kps,
                     .nq_real = (q1 * U < N ? q1 * U : N) - q0 * U, .units = U, .half = mp->half, .out16 = mp->half,
                     .a = sc->where[t], .a_stride = (nks > 1 ? kps * 2 : mp->Kp) * es,
                     .w = mp->waddr + sl * qpb * kps * U * 8, .bias = sl ? 0 : mp->baddr, .out = dst,
                     .out_row = (int64_t)(mp->pbc * es), .out_q = (int64_t)(U * es), .out_u = (int64_t)es,
                     .acc = sl ? prev : 0, .acc_row = (int64_t)(mp->pbc * 4)};
        size_t entry = LWT(t).wrk.n;
        lwi_emit_mm(L, t, &m);
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
    }
}

/* A's rows with K padded to Kp: each tile's rows gathered Kp apart into abuf, the padding word of
 * every row zeroed first by the tile's supervisor (its weights are zero too, but stale memory could
 * hold a NaN). */
static ts_status mm_gather_padded(lw *L, const ts_graph_node *n, lw_scr *sc, const mm_plan *mp, const uint32_t *rows,
                                  uint64_t abuf)
{
    const uint64_t K = mp->K, es = mp->es;
    for (uint32_t t = 0; t < mp->tn; t++) {
        sc->lo[t] = t / mp->ncb * mp->rp * K;
        sc->hi[t] = sc->lo[t] + K;
        sc->nr[t] = rows[t];
        if (!rows[t])
            continue;
        S(t, SETZI, RM(1), (int32_t)(abuf + K * es), 0);
        S(t, SETZI, RM(2), 0, 0);
        S(t, SETZI, RM(3), (int32_t)rows[t], 0);
        S(t, RPT, RM(3), 1, 0);
        S(t, ST32STEP, RM(2), RM(1), (int32_t)(mp->Kp * es));
    }
    L->into = abuf;
    ts_status rc = lwi_gather(L, n->in[0], mp->tn, sc->lo, sc->hi, sc->nr, K, mp->Kp, true, sc->where);
    L->into = 0;
    return rc;
}

/* The slices of k in turn; each gathers its columns of A's rows into abuf first (when k is
 * sliced), then multiplies. */
static ts_status mm_slices(lw *L, const ts_graph_node *n, lw_scr *sc, const mm_plan *mp, uint64_t tmp, uint64_t abuf)
{
    const uint64_t K = mp->K, kps = mp->kps, nks = mp->nks;
    const uint32_t tn = mp->tn;
    uint32_t *rows = ts_calloc(tn, sizeof *rows);
    if (!rows)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    for (uint32_t t = 0; t < tn; t++)
        rows[t] = (uint32_t)((sc->hi[t] - sc->lo[t]) / K);
    ts_status rc = mp->Kp != K ? mm_gather_padded(L, n, sc, mp, rows, abuf) : TS_OK;
    for (uint64_t sl = 0; sl < nks && rc == TS_OK; sl++) {
        if (nks > 1) {
            for (uint32_t t = 0; t < tn; t++) {
                sc->lo[t] = t / mp->ncb * mp->rp * K + sl * kps * 2;
                sc->hi[t] = sc->lo[t] + kps * 2;
                sc->nr[t] = rows[t];
            }
            L->into = abuf;
            rc = lwi_gather(L, n->in[0], tn, sc->lo, sc->hi, sc->nr, K, kps * 2, false, sc->where);
            L->into = 0;
        }
        if (rc == TS_OK)
            mm_slice(L, mp, sc, rows, sl, tmp);
        if (sl + 1 < nks)
            lwi_sync_all(L);
    }
    ts_free(rows);
    return rc;
}

/* MatMul A[..., K] x B[K, N] and Gemm (transB, bias [N]): rows of A partitioned over tiles. */
ts_status lwi_lower_matmul(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    mm_plan mp = {0};
    ts_status rc = mm_shape(L, n, &mp);
    if (rc != TS_OK)
        return rc;
    if (mp.M == 1 && !lwi_held_half(L, n->in[0]))
        return mm_one_row(L, n, sc, &mp);
    if ((rc = mm_amp(L, n, &mp)) != TS_OK)
        return rc;
    mm_partition(L, &mp);
    lwi_place_op(L, mp.tn, true);
    const uint64_t M = mp.M, K = mp.K, rp = mp.rp, pbc = mp.pbc;
    for (uint32_t t = 0; t < mp.tn; t++) {
        uint64_t rg = t / mp.ncb;
        sc->lo[t] = rg * rp * K;
        sc->hi[t] = (rg + 1) * rp < M ? (rg + 1) * rp * K : M * K;
    }
    if (mp.nks == 1 && mp.Kp == K &&
        (rc = lwi_gather(L, n->in[0], mp.tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    mp.waddr = lwi_salloc(L, mp.qpb * mp.kp * mp.U * 8);
    mp.baddr = mp.C ? lwi_salloc(L, mp.qpb * mp.U * 4) : 0;
    mp.out = lwi_alloc(L, rp * pbc * mp.es);
    if ((rc = mm_weights(L, n, &mp)) != TS_OK)
        return rc;
    uint64_t tmp = mp.nks > 1 ? lwi_talloc(L, rp * pbc * 4) : 0, abuf = 0;
    if (mp.nks > 1 || mp.Kp != K) {
        const lw_place *PA = &L->pl[n->in[0]];
        uint64_t av[2];
        lwi_elem_span(L, PA->addr, PA->chunk * PA->es, av);
        abuf = lwi_talloc_avoid(L, mp.nks > 1 ? rp * mp.kps * 8 : rp * mp.Kp * mp.es, av[0], av[1]);
    }
    if ((rc = mm_slices(L, n, sc, &mp, tmp, abuf)) != TS_OK)
        return rc;
    lwi_use_tiles(L, mp.tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = mp.tn, .t0 = L->base, .chunk = rp * pbc, .addr = mp.out,
                                  .es = (uint32_t)mp.es};
    if (mp.ncb > 1) {
        lw_place *o = &L->pl[n->out[0]];
        o->inner = mp.N;
        o->cb = rp;
        o->pb = pbc;
        o->nrb = (uint32_t)mp.ncb;
    }
    lwi_sync_all(L);
    return TS_OK;
}

/* ---- MatMul of two activations ---- */

/* Tile t's workers: rp rows of A at a by B (K x N at b) into out, the N columns over the workers
 * four outputs at a time (cq quads a worker): per k an element of A loaded and doubled into a
 * pair, two pairs of B's row and two f32v2mac (6 issues per 4 MACs). */
static void bmm_quads(lw *L, uint32_t t, uint64_t a, uint64_t b, uint64_t out, uint64_t rp, uint64_t K, uint64_t N,
                      uint32_t cq)
{
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)(N / 4), cq);
    W(t, SHLI, RM(1), RM(1), 4);
    W(t, SETZI, RM(2), (int32_t)b, 0);
    W(t, ADD, RM(2), RM(2), RM(1));      /* B's columns 4 q0.. */
    W(t, SETZI, RM(3), (int32_t)out, 0);
    W(t, ADD, RM(3), RM(3), RM(1));
    W(t, SETZI, RM(6), (int32_t)a, 0);
    W(t, SETZI, RM(7), (int32_t)rp - 1, 0);
    W(t, SETZI, RM(11), (int32_t)K, 0);
    size_t row4 = W(t, MOV, RM(8), RM(2), 0);
    W(t, MOV, RM(9), RM(3), 0);
    W(t, SETZI, RM(10), (int32_t)cq - 1, 0);
    size_t quad = W(t, MOV, RM(4), RM(6), 0);
    W(t, MOV, RM(5), RM(8), 0);
    for (int r = 8; r < 12; r++)
        W(t, SETZI, RA(r), 0, 0);
    W(t, RPT, RM(11), 6, 0);
    W(t, LD32STEP, RA(0), RM(4), 4);
    W(t, MOV, RA(1), RA(0), 0);
    W(t, LD64, RA(4), RM(5), 8);
    W(t, LD64STEP, RA(2), RM(5), (int32_t)(N * 4));
    W(t, F32V2MAC, RA(8), RA(0), RA(2));
    W(t, F32V2MAC, RA(10), RA(0), RA(4));
    W(t, ST64STEP, RA(8), RM(9), 8);
    W(t, ST64STEP, RA(10), RM(9), 8);
    W(t, ADDI, RM(8), RM(8), 16);
    W(t, BRNZDEC, RM(10), (int32_t)quad, 0);
    W(t, ADDI, RM(6), RM(6), (int32_t)(K * 4));
    W(t, ADDI, RM(3), RM(3), (int32_t)(N * 4));
    W(t, BRNZDEC, RM(7), (int32_t)row4, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* The same with cw columns a worker, per output a dot product of K f32mac (ld32step of A,
 * ld32step down B's column). */
static void bmm_dots(lw *L, uint32_t t, uint64_t a, uint64_t b, uint64_t out, uint64_t rp, uint64_t K, uint64_t N,
                     uint32_t cw)
{
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)N, cw);
    W(t, SHLI, RM(1), RM(1), 2);
    W(t, SETZI, RM(2), (int32_t)b, 0);
    W(t, ADD, RM(2), RM(2), RM(1));          /* B's column o0 */
    W(t, SETZI, RM(3), (int32_t)out, 0);
    W(t, ADD, RM(3), RM(3), RM(1));          /* output row 0, column o0 */
    W(t, SETZI, RM(6), (int32_t)a, 0);       /* A's row */
    W(t, SETZI, RM(7), (int32_t)rp - 1, 0);
    W(t, SETZI, RM(11), (int32_t)K, 0);
    size_t row = W(t, MOV, RM(8), RM(2), 0);
    W(t, MOV, RM(9), RM(3), 0);
    W(t, SETZI, RM(10), (int32_t)cw - 1, 0);
    size_t col = W(t, MOV, RM(4), RM(6), 0);
    W(t, MOV, RM(5), RM(8), 0);
    W(t, SETZI, RA(0), 0, 0);
    W(t, RPT, RM(11), 3, 0);
    W(t, LD32STEP, RA(1), RM(4), 4);
    W(t, LD32STEP, RA(2), RM(5), (int32_t)(N * 4));
    W(t, F32MAC, RA(0), RA(1), RA(2));
    W(t, ST32STEP, RA(0), RM(9), 4);
    W(t, ADDI, RM(8), RM(8), 4);
    W(t, BRNZDEC, RM(10), (int32_t)col, 0);
    W(t, ADDI, RM(6), RM(6), (int32_t)(K * 4));
    W(t, ADDI, RM(3), RM(3), (int32_t)(N * 4));
    W(t, BRNZDEC, RM(7), (int32_t)row, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* MatMul of two activations A[..., M, K] x B[..., K, N] over the same batch dimensions: the rows of
 * each batch over its own tiles (rp rows a tile, rp dividing M so that the output stays flat, or
 * when that would take fewer than half the tiles, blocks of rp rows, the output blocked by batch); a
 * tile gathers its rows of A and the whole of its batch's B (staggered, so that the tiles of a
 * batch read its holders in turn), and its workers split the N columns: four outputs at a time
 * (N a multiple of 4), per k an element of A loaded and doubled into a pair, two pairs of B's row
 * and two f32v2mac; else per output a dot product of K f32mac (ld32step of A, ld32step down B's
 * column). */
ts_status lwi_lower_bmm(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *A = ts_graph_get_tensor(L->g, n->in[0]);
    const ts_graph_tensor *B = ts_graph_get_tensor(L->g, n->in[1]);
    ts_status rc = lwi_need_placed(L, n, n->in[0]);
    if (rc == TS_OK)
        rc = lwi_need_placed(L, n, n->in[1]);
    if (rc != TS_OK)
        return rc;
    if (A->rank < 2 || A->rank != B->rank)
        return lwi_unsupported(L, n, "operands of different ranks, or of rank 1");
    for (int a = 0; a < A->rank - 2; a++)
        if (A->dims[a] != B->dims[a])
            return lwi_unsupported(L, n, "broadcasting batch dimensions");
    if (L->pl[n->in[0]].es != 4 || L->pl[n->in[1]].es != 4)
        return lwi_unsupported(L, n, "an operand held as f16 halves");
    uint64_t M = (uint64_t)A->dims[A->rank - 2], K = (uint64_t)A->dims[A->rank - 1];
    uint64_t N = (uint64_t)B->dims[B->rank - 1], nb = (uint64_t)ts_graph_tensor_elems(A) / (M * K);
    if (nb > L->T)
        return lwi_unsupported(L, n, "more batches than tiles");
    /* rp rows a tile: the fewest that the batch's tiles take, rounded up to divide M (the output
     * flat); when that would leave fewer than half the tiles (M prime or nearly: ViT's 197 tokens
     * took one tile per head, each holding its head's whole score matrix), the batch's rows in
     * blocks of rp0 over nrb tiles, the last block shorter, the output blocked by batch */
    uint64_t rp0 = ts_geom_cdiv(M, L->T / nb), rp = rp0;
    while (M % rp)
        rp++;
    uint64_t nrb = M / rp;
    bool blocked = rp > 2 * rp0;
    if (blocked)
        rp = rp0, nrb = ts_geom_cdiv(M, rp0);
    uint32_t tn = (uint32_t)(nb * nrb);
    /* from tile 0, but under the code spread (a plan's code past a tile's memory) where the code of
     * the same operator of the layers before leaves the fullest tile least full (lwi_place_op), so
     * that the code of a model's attention products does not stack on the same tiles */
    if (L->cspread)
        lwi_place_op(L, tn, true);
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t r0 = t / nrb * M + t % nrb * rp; /* the tile's first row of A's nb * M */
        sc->lo[t] = r0 * K;
        sc->hi[t] = (r0 + umin(rp, M - t % nrb * rp)) * K;
    }
    if ((rc = lwi_gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    uint64_t *wa = ts_calloc(tn, sizeof *wa);
    if (!wa)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    memcpy(wa, sc->where, tn * sizeof *wa);
    lwi_sync_all(L); /* A's pieces a tile holds itself are copied before B's receivers arm */
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t b = t / nrb;
        sc->lo[t] = b * K * N;
        sc->hi[t] = (b + 1) * K * N;
    }
    bool co = L->coalesce;
    L->stagger = L->coalesce = true;
    rc = lwi_gather(L, n->in[1], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where);
    L->stagger = false;
    L->coalesce = co;
    uint64_t out = lwi_alloc(L, rp * N * 4);
    uint32_t cw = (uint32_t)ts_geom_cdiv(N, L->workers), cq = (uint32_t)ts_geom_cdiv(N / 4, L->workers);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        uint64_t rows = umin(rp, M - t % nrb * rp);
        if (N % 4 == 0 && sc->where[t] % 16 == 0)
            bmm_quads(L, t, wa[t], sc->where[t], out, rows, K, N, cq);
        else
            bmm_dots(L, t, wa[t], sc->where[t], out, rows, K, N, cw);
    }
    ts_free(wa);
    if (rc != TS_OK)
        return rc;
    lwi_use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .t0 = L->base, .chunk = rp * N, .addr = out, .es = 4};
    if (blocked) /* batch b's rows r on tile b * nrb + r / rp */
        L->pl[n->out[0]].inner = M * N, L->pl[n->out[0]].cb = 1, L->pl[n->out[0]].pb = rp * N,
        L->pl[n->out[0]].nrb = (uint32_t)nrb;
    lwi_sync_all(L);
    return TS_OK;
}
