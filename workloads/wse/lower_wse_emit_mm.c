/* workloads/wse/lower_wse_emit_mm.c — emission of a matrix product: kr x kc PEs, stationary
 * weights (docs/lowering-wse.md, "Matrix products").
 *
 * Per input row: the row is broadcast east along row 0 and south down every column; each PE
 * multiplies its slice of the row by its weight block into accumulators that start from the bias
 * (row 0) or zero; the partial sums go north along each column, added on the way; row 0 applies
 * the fused Relu and sends its outputs east after those of the columns west of it.
 *
 * Before SwiGLU's gate (s->ko > 1) the columns form ko groups, each with its own chain: group g's
 * columns sit g rows lower (a staircase: the input comes down to them through the PEs above),
 * their chain runs along row g and on east through the PEs above the later groups, so the stage's
 * outputs leave on ko rows, none passing more than its group's. In a decode whose down product
 * takes those rows' gate outputs on rows of its own (s->kin), the groups sit s->kstep rows apart,
 * and the down product's rows [q kstep, (q + 1) kstep) take gate row q's outputs from the west on
 * their top row, down the group's rows, each PE its share of them. A decode's product after a
 * RMSNormalization of parts down a column or after an attention of split heads takes them so too
 * (the norm's part q, the attention's head q on row q kstep of its own).
 *
 * A decode's product cut for its chain (s->crow, chain_cuts in lower_wse_place.c) keeps row 0 for
 * the chain alone: it takes no inputs (its router passes the input down), passes on the outputs of
 * the columns west of it, then its column's, which row 1 sums from the rows below, finishes and
 * sends north, so the partial sums no longer share row 0's ramp with the chain. A column of such a
 * product of 8 rows or more climbs in two runs where they pay (lw_mm_split in lower_wse_int.h): the
 * lower run's top row sends its run's sums on a chain colour, which the rows above it pass north to
 * row 1, which adds them after the upper run's.
 *
 * After a decode's RMSNormalization that passes its row on raw (s->rpass), the weights hold the
 * norm's scale and the input row is followed by the norm's 1 / s, which row 0 (row 1 under a
 * chain row) keeps and multiplies its sums by (after widening them, before the fused Relu or Clip
 * and the row chain).
 *
 * A binary16 product (s->h16, an f16 graph): its weights and bias are binary16 in SRAM (weight rows
 * padded to 4 halves), its accumulators binary16 at 4 MACs a cycle (fmach, the binary32 input
 * rounded to binary16 by the op; each product and each sum rounded to binary16), its partial sums
 * binary16 north (fmovh, faddh: one per wavelet); row 0 widens its accumulators to binary32 (fh2s)
 * before the fused Relu or Clip and the row chain, so the stream between stages stays binary32.
 */
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/wse/lower_wse_int.h"

/* PE (i, j) of a matrix product: inputs [k0, k1) and outputs [n0, n1) of the weights, and its
 * memory: the weight block from 0, its input slice XA, the accumulators AA, the bias BA, a zero
 * word ZA, a junk word JA; with room for two whole input rows (dbl), row buffers XB0 and XB1. */
typedef struct mm_pe {
    uint32_t i, j;
    uint32_t y;     /* its row on the mesh: the stage's, its group's step down, i */
    uint32_t first; /* the first column of its group: the chain starts there */
    uint64_t k0, k1, n0, n1, ki, nb;
    int XA, AA, BA, ZA, JA, XB0, XB1;
    int OA;    /* binary16: the accumulators widened to binary32 (row 0) */
    int RA;    /* after a RMSNormalization that passes its row on (s->rpass): 1 / s (row 0) */
    int row;   /* bytes from one weight row to the next */
    bool h16;  /* binary16 weights, accumulators and partial sums */
    bool dbl;  /* row m + 1 is received on microthread 0 while row m is computed */
    bool bias; /* row 0 of a product with a bias */
} mm_pe;

uint64_t ts_lww_mm_col(const lw_stage *s, uint32_t j)
{
    return s->cols ? (uint64_t)s->cols[j] : (uint64_t)j * (uint64_t)s->N / s->kc;
}

uint64_t ts_lww_mm_nb_most(const lw_stage *s)
{
    uint64_t most = 0;
    for (uint32_t j = 0; s->cols && j < s->kc; j++)
        most = (uint64_t)(s->cols[j + 1] - s->cols[j]) > most ? (uint64_t)(s->cols[j + 1] - s->cols[j]) : most;
    return s->cols ? most : ts_geom_cdiv((uint64_t)s->N, s->kc);
}

/* A spread product's column groups (s->sko): group g the columns [g kc / sko, (g + 1) kc / sko),
 * west to east, the outputs of part sko - 1 - g: the eastmost group the first part, so that each
 * group's outputs go down its last column to its part's row and east on it below the groups east
 * of it, no two crossing. A column's outputs are those of its place in the parts' order. */
static uint32_t spread_col(const lw_stage *s, uint32_t g) { return (uint32_t)((uint64_t)g * s->kc / s->sko); }

uint64_t ts_lww_mm_spread_cut(const lw_stage *s, uint32_t p)
{
    return (uint64_t)(s->kc - spread_col(s, s->sko - p)) * (uint64_t)s->N / s->kc;
}

void ts_lww_mm_spread_out(const lw_stage *s, uint32_t j, uint64_t *n0, uint64_t *n1, uint32_t *first,
                          uint64_t *from)
{
    uint32_t g = s->sko - 1;
    while (g && spread_col(s, g) > j)
        g--;
    const uint64_t v = (uint64_t)(s->kc - spread_col(s, g + 1)) + (j - spread_col(s, g)), N = (uint64_t)s->N;
    *n0 = v * N / s->kc;
    *n1 = (v + 1) * N / s->kc;
    *first = spread_col(s, g);
    *from = (uint64_t)(s->kc - spread_col(s, g + 1)) * N / s->kc;
}

/* The last column of spread product s's group of column j and that group's part. */
static uint32_t spread_last(const lw_stage *s, uint32_t j, uint32_t *part)
{
    uint32_t g = s->sko - 1;
    while (g && spread_col(s, g) > j)
        g--;
    *part = s->sko - 1 - g;
    return spread_col(s, g + 1) - 1;
}

uint32_t ts_lww_mm_group_col(const lw_stage *s, uint32_t g)
{
    if (!g)
        return 0;
    if (g >= s->ko)
        return s->kc;
    uint32_t j = (uint32_t)((uint64_t)g * s->kc / s->ko);
    while (j < s->kc && ts_lww_mm_col(s, j) % 2)
        j++;
    return j;
}

uint32_t ts_lww_mm_group_of(const lw_stage *s, uint32_t j)
{
    uint32_t g = s->ko > 1 ? s->ko - 1 : 0;
    while (g && ts_lww_mm_group_col(s, g) > j)
        g--;
    return g;
}

void ts_lww_mm_group_out(const lw_stage *s, uint32_t g, uint64_t *n0, uint64_t *n1)
{
    *n0 = ts_lww_mm_col(s, ts_lww_mm_group_col(s, g));
    *n1 = ts_lww_mm_col(s, ts_lww_mm_group_col(s, g + 1));
}

/* The chain's colour out of column j: alternating by column, its group's last column on the
 * stage's output colour (one chain: lw_gcol). */
static uint32_t mm_chain(const lw_stage *s, uint32_t j)
{
    if (s->sko > 1) { /* its group's last column on the output colour */
        uint32_t p;
        return s->set * 4 + 2 + ((j + s->kc - 1 - spread_last(s, j, &p)) & 1);
    }
    if (s->ko <= 1)
        return lw_gcol(s, j);
    const uint32_t last = ts_lww_mm_group_col(s, ts_lww_mm_group_of(s, j) + 1) - 1;
    return s->set * 4 + 2 + ((j + s->kc - 1 - last) & 1);
}

/* The rows from one column group's top to the next (s->kstep, 1 when not set). */
static uint32_t mm_step(const lw_stage *s) { return s->kstep ? s->kstep : 1; }

/* A product on input rows (s->kin): the inputs [*g0, *g1) that come on input row q (SwiGLU's
 * gate's row q: the pairs of its product's column group q; a RMSNormalization's part q; an
 * attention's head q). */
static void mm_in_group(const lw *L, const lw_stage *s, uint32_t q, uint64_t *g0, uint64_t *g1)
{
    if (L->st[s->prev].kind == K_NORM) { /* its part q, its parts cut as it cut them */
        *g0 = ts_lww_norm_cut(&L->st[s->prev], q);
        *g1 = ts_lww_norm_cut(&L->st[s->prev], q + 1);
        return;
    }
    if (L->st[s->prev].kind == K_ATTN) {
        *g0 = (uint64_t)q * (uint64_t)s->K / s->kin;
        *g1 = (uint64_t)(q + 1) * (uint64_t)s->K / s->kin;
        return;
    }
    const lw_stage *p = &L->st[L->st[s->prev].prev];
    ts_lww_mm_group_out(p, q, g0, g1);
    *g0 /= 2;
    *g1 /= 2;
}

void ts_lww_mm_row_k(const lw *L, const lw_stage *s, uint32_t i, uint64_t *k0, uint64_t *k1, uint64_t *g0,
                     uint64_t *g1)
{
    const uint64_t K = (uint64_t)s->K, c = s->crow ? 1 : 0; /* crow: row 0 takes none */
    *k0 = i < c ? 0 : (i - c) * K / (s->kr - c);
    *k1 = i < c ? 0 : (i + 1 - c) * K / (s->kr - c);
    *g0 = 0;
    *g1 = K;
    if (s->kin > 1) {
        const uint64_t t = s->kr / s->kin, r = i % t, q0 = i < t ? c : 0; /* group 0 from row c */
        mm_in_group(L, s, i / (uint32_t)t, g0, g1);
        *k0 = i < q0 ? *g0 : *g0 + (r - q0) * (*g1 - *g0) / (t - q0);
        *k1 = i < q0 ? *g0 : *g0 + (r + 1 - q0) * (*g1 - *g0) / (t - q0);
    }
}

/* The row that sums a column's partial sums and finishes its outputs: row 1 under a chain row
 * (s->crow), else row 0. */
static uint32_t mm_fin(const lw_stage *s) { return s->crow ? 1 : 0; }

static mm_pe mm_pe_at(const lw *L, const lw_stage *s, uint32_t i, uint32_t j)
{
    const uint64_t K = (uint64_t)s->K;
    mm_pe e = {.i = i, .j = j};
    const uint32_t g = s->ko > 1 ? ts_lww_mm_group_of(s, j) : 0;
    e.y = s->y0 + g * mm_step(s) + i;
    e.first = ts_lww_mm_group_col(s, g);
    uint64_t g0, g1;
    ts_lww_mm_row_k(L, s, i, &e.k0, &e.k1, &g0, &g1);
    e.n0 = ts_lww_mm_col(s, j);
    e.n1 = ts_lww_mm_col(s, j + 1);
    uint64_t from;
    if (s->sko > 1)
        ts_lww_mm_spread_out(s, j, &e.n0, &e.n1, &e.first, &from);
    e.ki = e.k1 - e.k0;
    e.nb = e.n1 - e.n0;
    e.h16 = s->h16;
    if (e.h16) {
        const lw_mm16 o = lw_mm16_at(e.ki, e.nb);
        e.row = (int)o.row;
        e.XA = (int)o.XA;
        e.AA = (int)o.AA;
        e.BA = (int)o.BA;
        e.OA = (int)o.OA;
        e.ZA = (int)o.ZA;
        e.JA = (int)o.JA;
    } else {
        e.row = (int)e.nb * 4;
        e.XA = (int)(e.ki * e.nb * 4);
        e.AA = e.XA + (int)e.ki * 4;
        e.BA = e.AA + (int)e.nb * 4;
        e.ZA = e.BA + (int)e.nb * 4;
        e.JA = e.ZA + 4;
    }
    e.dbl = s->kin <= 1 && !s->rpass && !s->crow && lw_mm_bytes(e.h16, e.ki, e.nb) + 8 * K <= L->t->sram_bytes;
    e.RA = e.JA + 4;
    e.XB0 = e.JA + 4;
    e.XB1 = e.XB0 + (int)K * 4;
    e.bias = i == mm_fin(s) && s->bias;
    return e;
}

/* Routes: the input row east along row 0 and south down every column, the partial sums north,
 * the row chain east along row 0. */
static void mm_routes(lw_gen *G, const lw_stage *s, const mm_pe *e)
{
    const uint32_t i = e->i, j = e->j;
    const int take = s->crow && i == 0 ? 0 : P_R; /* a chain row's row 0 only routes the input */
    if (s->kin > 1) { /* its input row's group: east along the group's top row, down its rows */
        const uint32_t t = s->kr / s->kin, r = i % t;
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, r ? P_N : P_W,
                  take | (!r && j + 1 < s->kc ? P_E : 0) | (r + 1 < t ? P_S : 0));
    } else if (i == 0 && e->y > s->y0) /* a lower group's: the row comes down the column */
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_N, P_R | (s->kr > 1 ? P_S : 0));
    else if (i == 0)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, take | (j + 1 < s->kc ? P_E : 0) | (s->kr > 1 ? P_S : 0));
    else
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_N, P_R | (i + 1 < s->kr ? P_S : 0));
    const uint32_t m = lw_mm_split(s, e->nb); /* two runs: row m sends its run's sums on xcol */
    if (i > 0)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)(m && i == m ? lw_mm_xcol(s) : lw_rcol(s, i)), P_R, P_N);
    if (i + 1 < s->kr && !(m && i + 1 == m))
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, i + 1), P_S, P_R);
    if (m && i >= 1 && i < m) /* the second run's sums north to row 1 */
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_mm_xcol(s), P_S, i == 1 ? P_R : P_N);
    if (i == 0 && j > e->first)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)mm_chain(s, j - 1), P_W, P_R);
    uint32_t p = 0;
    const uint32_t last = s->sko > 1 ? spread_last(s, j, &p) : 0;
    if (s->sko > 1 && j == last && p) { /* its group's outputs down to its part's row, then east */
        const uint32_t r = p * s->sstep;
        if (i <= r)
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, i ? P_N : P_R, i == r ? P_E : P_S);
    } else if (i == 0)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)mm_chain(s, j), P_R, lw_outp(s, j + 1 == s->kc));
    for (uint32_t q = 1; s->sko > 1 && q < s->sko; q++) /* the outputs of the groups west of it, east */
        if (i == q * s->sstep && j >= spread_col(s, s->sko - q)) /* east of part q's group */
            ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_W, P_E);
}

/* A PE above column j's group (row y0 + r, r below the group's step): the input row down (along
 * row 0 too), and group r's outputs east along its row. */
static ts_status mm_above(lw *L, ts_program *P, const lw_stage *s, uint32_t j, uint32_t r, lw_gen *G)
{
    if (!ts_lww_pe_stream(P, L->t, s->x + j, s->y0 + r, G))
        return TS_ENOMEM;
    if (r == 0)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_S | (j + 1 < s->kc ? P_E : 0));
    else
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_N, P_S);
    if (r % mm_step(s) == 0) /* group r / step's top row: its outputs */
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_W, P_E);
    return TS_OK;
}

/* Pass n wavelets from colour cin on to colour cout on microthread 1 (the main thread goes on). */
static void mm_pass_on(lw_gen *G, uint32_t cin, uint32_t cout, uint64_t n)
{
    while (n) {
        const int k = n > PIECE ? PIECE : (int)n;
        ts_lww_op(G, WSE_OP_DSDIN, 3, 12, (int)cin, k);
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 13, (int)cout, k, 0);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, 1, -1);
        n -= (uint64_t)k;
    }
}

/* Before the rows: r15 = 0; DSD 4 the weight row, 2 the accumulators, 3 the bias or the zero
 * word; double-buffered, DSDs 14 and 15 the one-element move that waits for microthread 0, and
 * row 0 received on it into XB0 (r11 the row being computed, r12 the one being received). */
static void mm_setup(lw_gen *G, const lw_stage *s, const mm_pe *e)
{
    ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
    ts_lww_op(G, WSE_OP_DSDM, 4, 4, 0, (int)e->nb, 1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 2, e->AA, (int)e->nb, 1);
    ts_lww_op(G, WSE_OP_DSDM, 4, 3, e->bias ? e->BA : e->ZA, (int)e->nb, e->bias ? 1 : 0);
    if (e->dbl) {
        ts_lww_op(G, WSE_OP_DSDM, 4, 14, e->JA, 1, 0); /* a one-element move: waits for a thread */
        ts_lww_op(G, WSE_OP_DSDM, 4, 15, e->ZA, 1, 0);
        ts_lww_op(G, WSE_OP_DSDIN, 3, 7, (int)s->cin, (int)s->K);
        ts_lww_op(G, WSE_OP_DSDM, 4, 8, e->XB0, (int)s->K, 1);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 8, 7, 0, -1);
        ts_lww_op(G, WSE_OP_LI, 2, 11, e->XB0);
        ts_lww_op(G, WSE_OP_LI, 2, 12, e->XB1);
    }
}

/* Row m in: double-buffered, wait for it and start receiving row m + 1 (none after the last);
 * else take the slice [k0, k1) into XA and drop the rest into the junk word. */
static void mm_row_in(const lw *L, lw_gen *G, const lw_stage *s, const mm_pe *e)
{
    const uint64_t K = (uint64_t)s->K;
    if (e->dbl) {
        ts_lww_op(G, WSE_OP_FMOVS, 4, 14, 15, 0, -1); /* row m is in */
        ts_lww_op(G, WSE_OP_ADDI, 3, 13, 10, -1);
        ts_lww_op(G, WSE_OP_BZ, 2, 13, ts_lww_pc(G) + 3); /* no row after the last */
        ts_lww_op(G, WSE_OP_DSDBASE, 3, 8, 12, 0);
        ts_lww_op(G, WSE_OP_FMOVS, 4, 8, 7, 0, -1);
    } else {
        uint64_t g0 = 0, g1 = K; /* the inputs its row takes in: all, or its input row's group */
        if (s->kin > 1)
            mm_in_group(L, s, e->i / (s->kr / s->kin), &g0, &g1);
        if (e->k0 > g0)
            ts_lww_in_to_mem(G, s->cin, (uint64_t)e->JA, e->k0 - g0, 0);
        ts_lww_in_to_mem(G, s->cin, (uint64_t)e->XA, e->ki, 1);
        if (g1 > e->k1)
            ts_lww_in_to_mem(G, s->cin, (uint64_t)e->JA, g1 - e->k1, 0);
    }
}

/* After a RMSNormalization that passes its row on (s->rpass): its 1 / s, which follows the row (on
 * input rows: part 0), taken after the MACs so that they need not wait for the norm's sum; row 0
 * keeps it, the others drop it. */
static void mm_rstd_in(lw_gen *G, const lw_stage *s, const mm_pe *e)
{
    const bool fin = e->i == mm_fin(s);
    if (s->rpass && (s->kin <= 1 || e->i < s->kr / s->kin) && !(s->crow && e->i == 0))
        ts_lww_in_to_mem(G, s->cin, (uint64_t)(fin ? e->RA : e->JA), 1, fin ? 1 : 0);
}

/* acc += W[k][n0..n1) * x[k] over the slice, unrolled by 8 (r1 the input, r2 the weight row). */
static void mm_macs(lw_gen *G, const mm_pe *e)
{
    enum { U = 8 };
    if (e->dbl)
        ts_lww_op(G, WSE_OP_ADDI, 3, 1, 11, (int)e->k0 * 4);
    else
        ts_lww_op(G, WSE_OP_LI, 2, 1, e->XA);
    ts_lww_op(G, WSE_OP_LI, 2, 2, 0);
    const int mac = e->h16 ? WSE_OP_FMACH : WSE_OP_FMACS, row = e->row;
    if (e->ki / U) {
        int head = ts_lww_loop_head(G, 3, (int64_t)(e->ki / U));
        for (int u = 0; u < U; u++) {
            ts_lww_op(G, WSE_OP_LD, 3, 4, 1, 4 * u);
            ts_lww_op(G, WSE_OP_DSDBASE, 3, 4, 2, u * row);
            ts_lww_op(G, mac, 6, 2, 2, 4, 4, -1, -1);
        }
        ts_lww_op(G, WSE_OP_ADDI, 3, 1, 1, 4 * U);
        ts_lww_op(G, WSE_OP_ADDI, 3, 2, 2, U * row);
        ts_lww_loop_end(G, 3, head);
    }
    for (int u = 0; u < (int)(e->ki % U); u++) {
        ts_lww_op(G, WSE_OP_LD, 3, 4, 1, 4 * u);
        ts_lww_op(G, WSE_OP_DSDBASE, 3, 4, 2, u * row);
        ts_lww_op(G, mac, 6, 2, 2, 4, 4, -1, -1);
    }
}

/* Partial sums north along the column, added on the way: the bottom PE sends, the PEs between add
 * from the fabric to the fabric, row 0 adds into its accumulators. */
static void mm_reduce(lw_gen *G, const lw_stage *s, const mm_pe *e)
{
    const uint32_t i = e->i;
    const int nb = (int)e->nb;
    const int mov = e->h16 ? WSE_OP_FMOVH : WSE_OP_FMOVS, add = e->h16 ? WSE_OP_FADDH : WSE_OP_FADDS;
    const uint32_t fin = mm_fin(s);
    if (s->kr <= fin + 1) /* no rows below the one that finishes */
        return;
    const uint32_t m = lw_mm_split(s, e->nb); /* two runs: rows [m, kr) to row m, on to row 1 */
    const uint32_t oc = m && i == m ? lw_mm_xcol(s) : lw_rcol(s, i);
    if (i + 1 == s->kr || (m && i + 1 == m)) { /* a run's bottom */
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 5, (int)oc, nb, 0);
        ts_lww_op(G, mov, 4, 5, 2, -1, -1);
    } else if (i > fin) {
        ts_lww_op(G, WSE_OP_DSDOUT, 4, 5, (int)oc, nb, 0);
        ts_lww_op(G, WSE_OP_DSDIN, 3, 6, (int)lw_rcol(s, i + 1), nb);
        ts_lww_op(G, add, 5, 5, 2, 6, -1, -1);
    } else {
        ts_lww_op(G, WSE_OP_DSDIN, 3, 6, (int)lw_rcol(s, i + 1), nb);
        ts_lww_op(G, add, 5, 2, 2, 6, -1, -1);
        if (m) { /* the second run's sums */
            ts_lww_op(G, WSE_OP_DSDIN, 3, 6, (int)lw_mm_xcol(s), nb);
            ts_lww_op(G, add, 5, 2, 2, 6, -1, -1);
        }
    }
}

/* Binary16: the nb accumulators at AA widened to binary32 at OA, a word (two halves) at a time,
 * unrolled by 4 words (r5 the accumulators, r6 the output, r8 and r9 scratch; r7 the count). */
static void mm_widen(lw_gen *G, const mm_pe *e)
{
    enum { U = 4 };
    const int64_t words = (int64_t)(e->nb / 2);
    ts_lww_op(G, WSE_OP_LI, 2, 5, e->AA);
    ts_lww_op(G, WSE_OP_LI, 2, 6, e->OA);
    if (words / U) {
        int head = ts_lww_loop_head(G, 7, words / U);
        for (int u = 0; u < U; u++) {
            ts_lww_op(G, WSE_OP_LD, 3, 8, 5, 4 * u);
            ts_lww_op(G, WSE_OP_FH2S, 3, 9, 8, 0);
            ts_lww_op(G, WSE_OP_ST, 3, 9, 6, 8 * u);
            ts_lww_op(G, WSE_OP_FH2S, 3, 9, 8, 1);
            ts_lww_op(G, WSE_OP_ST, 3, 9, 6, 8 * u + 4);
        }
        ts_lww_op(G, WSE_OP_ADDI, 3, 5, 5, 4 * U);
        ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 8 * U);
        ts_lww_loop_end(G, 7, head);
    }
    for (int u = 0; u < (int)(words % U); u++) {
        ts_lww_op(G, WSE_OP_LD, 3, 8, 5, 4 * u);
        ts_lww_op(G, WSE_OP_FH2S, 3, 9, 8, 0);
        ts_lww_op(G, WSE_OP_ST, 3, 9, 6, 8 * u);
        ts_lww_op(G, WSE_OP_FH2S, 3, 9, 8, 1);
        ts_lww_op(G, WSE_OP_ST, 3, 9, 6, 8 * u + 4);
    }
    if (e->nb % 2) { /* the last half, alone in its word's low half */
        const int u = (int)(words % U);
        ts_lww_op(G, WSE_OP_LD, 3, 8, 5, 4 * u);
        ts_lww_op(G, WSE_OP_FH2S, 3, 9, 8, 0);
        ts_lww_op(G, WSE_OP_ST, 3, 9, 6, 8 * u);
    }
}

/* PE (i, j)'s code: routes, set-up, then per input row: in, accumulators from the bias or zero,
 * the MACs, the partial sums; row 0 the fused Relu and the row chain (the outputs of the columns
 * to the west, then its own); double-buffered, the row buffers swap. */
static void mm_code(const lw *L, lw_gen *G, const lw_stage *s, const mm_pe *e)
{
    mm_routes(G, s, e);
    uint64_t from = ts_lww_mm_col(s, e->first); /* the group's first output */
    if (s->sko > 1) {
        uint64_t n0, n1;
        uint32_t first;
        ts_lww_mm_spread_out(s, e->j, &n0, &n1, &first, &from);
    }
    if (s->crow && e->i == 0) { /* the chain: the outputs west of it, then its column's from row 1 */
        int row = ts_lww_loop_head(G, 10, s->M);
        ts_lww_in_to_out(G, mm_chain(s, e->j - 1), mm_chain(s, e->j), e->n0 - from);
        ts_lww_in_to_out(G, lw_rcol(s, 1), mm_chain(s, e->j), e->nb);
        ts_lww_loop_end(G, 10, row);
        return;
    }
    mm_setup(G, s, e);
    int row = ts_lww_loop_head(G, 10, s->M);
    mm_row_in(L, G, s, e);
    const bool early = s->cols && s->ko <= 1 && !s->crow && e->i == 0 && e->n0 > from;
    if (early) /* columns cut for the chain: the outputs west of it on during its MACs */
        mm_pass_on(G, mm_chain(s, e->j - 1), mm_chain(s, e->j), e->n0 - from);
    ts_lww_op(G, e->h16 ? WSE_OP_FMOVH : WSE_OP_FMOVS, 4, 2, 3, -1, -1);
    mm_macs(G, e);
    mm_reduce(G, s, e);
    if (e->i == mm_fin(s)) {
        const int out = e->h16 ? e->OA : e->AA;
        if (e->h16) /* before 1 / s: the widening need not wait for the norm */
            mm_widen(G, e);
        mm_rstd_in(G, s, e);
        if (s->rpass) { /* the sums times the norm's 1 / s (its scale is in the weights) */
            ts_lww_op(G, WSE_OP_DSDM, 4, 9, out, (int)e->nb, 1);
            ts_lww_op(G, WSE_OP_DSDM, 4, 10, e->RA, (int)e->nb, 0);
            ts_lww_op(G, WSE_OP_FMULS, 5, 9, 9, 10, -1, -1);
        }
        if (s->relu)
            ts_lww_relu_mem(G, out, (int64_t)e->nb);
        if (s->clip)
            ts_lww_clip_mem(G, out, (int64_t)e->nb, s->lo, s->hi);
        if (s->crow) /* its outputs north to row 0, which passes them on */
            ts_lww_mem_to_out(G, (uint64_t)out, e->nb, lw_rcol(s, 1));
        else if (early) { /* a one-word move on microthread 1 waits for the pass (its outputs go after) */
            ts_lww_op(G, WSE_OP_DSDM, 4, 12, e->JA, 1, 0);
            ts_lww_op(G, WSE_OP_DSDM, 4, 13, e->JA, 1, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, 1, -1);
        } else
            ts_lww_in_to_out(G, mm_chain(s, e->j - 1), mm_chain(s, e->j), e->n0 - from);
        if (!s->crow)
            ts_lww_mem_to_out(G, (uint64_t)out, e->nb, mm_chain(s, e->j));
    } else
        mm_rstd_in(G, s, e);
    if (e->dbl) { /* swap the row buffers */
        ts_lww_op(G, WSE_OP_MOV, 2, 13, 11);
        ts_lww_op(G, WSE_OP_MOV, 2, 11, 12);
        ts_lww_op(G, WSE_OP_MOV, 2, 12, 13);
    }
    ts_lww_loop_end(G, 10, row);
}

/* Binary16: PE (i, j)'s weight rows at 0 (each padded to e->row bytes with zeros) and bias at BA. */
static ts_status mm_data16(lw *L, ts_program *P, const lw_stage *s, const mm_pe *e, void *buf)
{
    const uint64_t N = (uint64_t)s->N, stride = (uint64_t)e->row / 2;
    uint16_t *blk = buf;
    memset(blk, 0, (size_t)(e->ki * stride * 2));
    for (uint64_t k = 0; k < e->ki; k++)
        for (uint64_t n = 0; n < e->nb; n++)
            blk[k * stride + n] = ts_f32_to_f16(s->wt[(e->k0 + k) * N + e->n0 + n]);
    uint32_t id = e->y * L->t->width + s->x + e->j;
    if (ts_program_add_segment(P, WSE_KIND_PE, id, 0, blk, (uint32_t)(e->ki * stride * 2), L->err))
        return L->err->status;
    if (e->bias) {
        for (uint64_t n = 0; n < e->nb; n++)
            blk[n] = ts_f32_to_f16(s->bias[e->n0 + n]);
        if (ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)e->BA, blk, (uint32_t)(e->nb * 2), L->err))
            return L->err->status;
    }
    return TS_OK;
}

/* PE (i, j)'s data: its weight block at 0 (row-major, copied through blk), the bias at BA. */
static ts_status mm_data(lw *L, ts_program *P, const lw_stage *s, const mm_pe *e, float *blk)
{
    if (e->h16)
        return mm_data16(L, P, s, e, blk);
    const uint64_t N = (uint64_t)s->N;
    for (uint64_t k = 0; k < e->ki; k++)
        for (uint64_t n = 0; n < e->nb; n++)
            blk[k * e->nb + n] = s->wt[(e->k0 + k) * N + e->n0 + n];
    uint32_t id = e->y * L->t->width + s->x + e->j;
    if (ts_program_add_segment(P, WSE_KIND_PE, id, 0, blk, (uint32_t)(e->ki * e->nb * 4), L->err) ||
        (e->bias &&
         ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)e->BA, s->bias + e->n0, (uint32_t)(e->nb * 4), L->err)))
        return L->err->status;
    return TS_OK;
}

ts_status ts_lww_emit_mm(lw *L, ts_program *P, size_t si, lw_gen *G)
{
    const lw_stage *s = &L->st[si];
    uint64_t ki = ts_geom_cdiv((uint64_t)s->K, s->kr); /* the most inputs of a PE */
    for (uint32_t i = 0; s->kin > 1 && i < s->kr; i++) {
        const mm_pe e = mm_pe_at(L, s, i, 0);
        ki = e.ki > ki ? e.ki : ki;
    }
    float *blk = ts_malloc((size_t)lw_mm_bytes(s->h16, ki, ts_lww_mm_nb_most(s)));
    if (!blk)
        return TS_ENOMEM;
    ts_status rc = TS_OK;
    for (uint32_t i = 0; !rc && i < s->kr; i++)
        for (uint32_t j = 0; !rc && j < s->kc; j++) {
            const mm_pe e = mm_pe_at(L, s, i, j);
            if (!ts_lww_pe_stream(P, L->t, s->x + j, e.y, G)) {
                rc = TS_ENOMEM;
                break;
            }
            mm_code(L, G, s, &e);
            if (!s->crow || e.i) /* a chain row's row 0 holds nothing */
                rc = mm_data(L, P, s, &e, blk);
        }
    for (uint32_t j = 0; !rc && s->ko > 1 && j < s->kc; j++)
        for (uint32_t r = 0; !rc && r < ts_lww_mm_group_of(s, j) * mm_step(s); r++)
            rc = mm_above(L, P, s, j, r, G);
    ts_free(blk);
    return rc;
}
