/* workloads/wse/lower_wse_place.c — placement: every stage's rectangle.
 *
 * The passes, in order: the fewest columns each stage needs (sources and sinks by their chunks of
 * the stream, matrix products by their weights); the columns left for the matrix products; the
 * balanced pipeline time T, the smallest for which every matrix product, given the fewest PEs that
 * take its rows in at most T cycles, fits, with the elementwise stages, LayerNormalizations,
 * attentions and joins of rows sized against T too (a pipeline of many rows); each product's kr x
 * kc split at T (a decode's one-row
 * products then given rows until their MAC loop no longer dominates); the rows the
 * outputs of a product before SwiGLU's gate leave on (and the gate takes them on); the main
 * band's height; the stages west to east, skip paths in the rows below the main band.
 */
#include <stdio.h>

#include "core/alloc.h"

#include "workloads/wse/lower_wse_int.h"

/* Cycles of one input of a PE's MAC loop over nb outputs: its load, its descriptor and the MAC
 * (binary32: fmacs, 1 a cycle; binary16: fmach, 4 a cycle). */
static uint64_t mm_kcost(const lw_stage *s, uint64_t nb) { return (s->h16 ? ts_geom_cdiv(nb, 4) : nb) + 3; }

/* Cycles per input row of a kr x kc split: the MAC loop (binary16: and the accumulators widened,
 * about 3 cycles an output), or the stream if it is slower. */
static uint64_t mm_cost(const lw_stage *s, uint64_t kr, uint64_t kc)
{
    uint64_t ki = ts_geom_cdiv((uint64_t)s->K, kr), nb = ts_geom_cdiv((uint64_t)s->N, kc);
    uint64_t t = ki * mm_kcost(s, nb) + (kr > 1 ? nb : 0) + (s->h16 ? 3 * nb : 0);
    uint64_t st = (uint64_t)(s->K > s->N ? s->K : s->N);
    return t > st ? t : st;
}

/* The fewest PEs (kr x kc, kr <= hmax, kc <= wmax) whose rows take at most T cycles by mm_cost
 * and whose blocks fit the SRAM (narrow: the fewest columns, then the fewest PEs); false when
 * none does. */
static bool mm_pick(const lw_stage *s, uint64_t T, uint64_t hmax, uint64_t wmax, uint64_t sram, bool narrow,
                    uint64_t *kr, uint64_t *kc)
{
    const uint64_t K = (uint64_t)s->K, N = (uint64_t)s->N, rows = (uint64_t)s->M;
    uint64_t best = UINT64_MAX, bcost = UINT64_MAX;
    for (uint64_t r = 1; r <= hmax; r++) {
        uint64_t ki = ts_geom_cdiv(K, r);
        if (lw_mm_bytes(s->h16, ki, ts_geom_cdiv(N, wmax)) > sram || rows * mm_cost(s, r, wmax) > T)
            continue;
        uint64_t lo = 1, hi = wmax; /* smallest kc that fits and is fast enough: both monotone in kc */
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if (lw_mm_bytes(s->h16, ki, ts_geom_cdiv(N, mid)) <= sram && rows * mm_cost(s, r, mid) <= T)
                hi = mid;
            else
                lo = mid + 1;
        }
        uint64_t cost = mm_cost(s, r, lo), key = narrow ? lo * (hmax + 1) + r : r * lo;
        if (key < best || (key == best && cost < bcost)) {
            best = key;
            bcost = cost;
            *kr = r;
            *kc = lo;
        }
    }
    return best != UINT64_MAX;
}

/* The most rows and columns a matrix product may take: its lane's rows (the main band's Hm, the
 * skip paths' the rest), at most K; the columns left, at most N. */
static void mm_bounds(const lw *L, const lw_stage *s, uint32_t Hm, uint64_t avail, uint64_t *hmax, uint64_t *wmax)
{
    uint64_t rows = s->lane ? L->t->height - Hm : Hm;
    *hmax = (uint64_t)s->K < rows ? (uint64_t)s->K : rows;
    *wmax = (uint64_t)s->N < avail ? (uint64_t)s->N : avail;
}

/* Cycles an elementwise PE spends on one element (its scalar code, about). */
static uint64_t elem_cost(const lw_stage *s)
{
    switch (s->eop) {
    case TS_OP_CLIP: return 12;
    case TS_OP_SIGMOID: return 50;
    case TS_OP_TANH: return 55;
    case TS_OP_GELU: return s->vop ? 65 : 90;
    case TS_OP_MUL: return 30; /* SwiGLU: a SiLU and a product for every two values */
    default: return 25;
    }
}

/* Whether the program decodes one token against a cache: it has attention, and every attention
 * takes one row of one sequence against cached keys and values. Its stream is then one row that
 * passes each stage once, so the layer's time is the sum of its stages' latencies, not the
 * slowest stage's time per row as in a pipeline of many rows (images, a prefill). */
static bool decoding(const lw *L)
{
    bool attn = false;
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        if (s->kind != K_ATTN)
            continue;
        if (!s->nc || s->M != 1 || s->nseq > 1)
            return false;
        attn = true;
    }
    return attn;
}

/* The most PEs in a row an elementwise stage (not SwiGLU's gate) and a LayerNormalization take when
 * sized against T (assumed: BERT-base's Gelu, 128 rows of 3,072 values, wants about 60 at the T of
 * its products; a LayerNormalization's row of 768 a few). */
enum { ELEM_MAX = 64, LN_MAX = 16 };

/* Whether stage s is sized against the pipeline time T by its rows' cycles: an elementwise stage
 * other than SwiGLU's gate, or a LayerNormalization, of rows longer than one value, at most 4,096
 * rows (their split PEs' code is unrolled over the rows), in a pipeline of many rows (a decode
 * keeps the rule of elem_widths: its time is the sum of its stages' latencies, not T). */
static bool sized_at_T(const lw *L, const lw_stage *s)
{
    const bool elem = s->kind == K_ELEM && s->eop != TS_OP_MUL, ln = s->kind == K_NORM && !s->vop;
    return (elem || ln) && s->L > 1 && s->out_n / (uint64_t)s->L <= 4096 && !L->decode;
}

/* Cycles a row of s's stream takes over g PEs in a row. An elementwise stage on one PE: its scalar
 * code per value (elem_cost); split (lower_wse_elem.c): every value of the row passes each PE (a
 * cycle a value), and its part of ceil(L / g) values in, computed and out. A LayerNormalization on
 * one PE: 16 cycles a value and 500 a row (assumed: fitted to BERT-base's LayerNorm, 768 values a
 * row, measured at 12,750 cycles a row on wse2: the scalar sums of the values and of their
 * squares, the vector ops, the square root's Newton steps); split (lower_wse_norm.c): the row
 * passing, 13 cycles a value of its part (the scalar sum, the vector sum of squares, the vector
 * ops, the part in and out), 500 a row and 8 a PE for the two sums west and the mean and 1 / s
 * east (assumed, the same fit). */
static uint64_t row_cost(const lw_stage *s, uint64_t g)
{
    const uint64_t L = (uint64_t)s->L, part = ts_geom_cdiv(L, g);
    if (s->kind == K_NORM)
        return g > 1 ? L + 13 * part + 500 + 8 * g : 16 * L + 500;
    return g > 1 ? L + part * (elem_cost(s) + 1) : L * elem_cost(s);
}

/* SRAM of a PE of a split stage s over g PEs: an elementwise PE its part (4 bytes a value); a
 * LayerNormalization's its part, scale and bias, the mean and 1 / s, from 64 values a block's 64
 * partial sums of squares and 64 squares (lower_wse_norm.c). */
static uint64_t split_mem(const lw_stage *s, uint64_t g)
{
    const uint64_t n = ts_geom_cdiv((uint64_t)s->L, g);
    return s->kind == K_NORM ? lw_ln_mem(n) : n * 4;
}

/* The fewest PEs in a row (at most most, and one per value of a row) whose parts fit and whose rows
 * take at most T cycles by row_cost; the most that fit when none is fast enough. */
static uint64_t split_pick(const lw *L, const lw_stage *s, uint64_t T, uint64_t most)
{
    const uint64_t rows = s->out_n / (uint64_t)s->L;
    if (rows * row_cost(s, 1) <= T)
        return 1;
    most = most < (uint64_t)s->L ? most : (uint64_t)s->L;
    uint64_t fit = 1;
    for (uint64_t g = 2; g <= most; g++) {
        if (split_mem(s, g) > L->t->sram_bytes)
            continue;
        fit = g;
        if (rows * row_cost(s, g) <= T)
            return g;
    }
    return fit;
}

/* The most K parts an attention takes when sized against T (assumed: the softmax on its top K
 * part, about 30 cycles a score, is then most of its row), and the most V parts (more fold them
 * down a second column, lower_wse_attn.c). */
enum { ATTN_KP_MAX = 8, ATTN_VP_MAX = 2 };

/* Whether attention stage s is sized against T: a pipeline of many rows, no cache, its heads'
 * parts along row 0 (ts_lww_attn_sizable). */
static bool attn_sized(const lw *L, const lw_stage *s)
{
    return s->kind == K_ATTN && ts_lww_attn_sizable(s) && !L->decode;
}

/* Attention s's K and V parts at T: the fewest its memory needs when its rows take at most T
 * cycles by ts_lww_attn_row_cost; else, of at most ATTN_KP_MAX K parts (and its lane's rows) and
 * ATTN_VP_MAX V parts, the fewest PEs whose rows do, or the fastest when none does. */
static void attn_pick(const lw *L, const lw_stage *s, uint64_t T, uint32_t Hm, uint32_t *kp, uint32_t *vp)
{
    const uint64_t rows = s->in_n / (uint64_t)s->L, lane = s->lane ? L->t->height - Hm : Hm;
    *kp = s->akr;
    *vp = s->akc;
    if (rows * ts_lww_attn_row_cost(s, s->akr, s->akc) <= T)
        return;
    uint64_t kmax = ATTN_KP_MAX < (uint64_t)s->K ? ATTN_KP_MAX : (uint64_t)s->K;
    kmax = kmax + 1 < lane ? kmax : lane - 1;
    uint64_t best = UINT64_MAX, bpes = UINT64_MAX;
    for (uint64_t v = s->akc; v <= ATTN_VP_MAX && v <= (uint64_t)s->C; v++)
        for (uint64_t k = s->akr; k <= kmax; k++) {
            const uint64_t c = rows * ts_lww_attn_row_cost(s, k, v), pes = v * (1 + k);
            const uint64_t key = c <= T ? 0 : c; /* within T: the fewest PEs; else the fastest */
            if (key < best || (key == best && pes < bpes)) {
                best = key;
                bpes = pes;
                *kp = (uint32_t)k;
                *vp = (uint32_t)v;
            }
        }
}

/* Whether join s takes one PE at T rather than its G channel groups: a join of rows (not an
 * image's pixels) with no fused Relu or Clip, in a pipeline of many rows, whose rows take at most T
 * on one PE. Each of its PEs takes both streams' whole row (a cycle a value) and the last sends the
 * whole row on (lower_wse_emit.c), so a row takes about 2 C cycles on one PE as on G. */
static bool join_narrows(const lw *L, const lw_stage *s, uint64_t T)
{
    return s->kind == K_JOIN && !s->relu && !s->clip && !s->in_nhwc && s->G > 1 && !L->decode &&
           (uint64_t)s->M * 2 * (uint64_t)s->C <= T;
}

/* Whether every matrix product, with the fewest PEs that take its rows in at most T cycles, fits
 * its rows and, on the main band, the columns left, with the elementwise stages and
 * LayerNormalizations sized against T too (sized_at_T: their PEs past their first), and the
 * attentions (attn_sized: their V parts past those their memory needs); the joins that narrow to
 * one PE at T (join_narrows) leave their other columns. */
static bool fits_at(const lw *L, uint64_t T, uint32_t Hm, uint64_t avail)
{
    uint64_t cols = 0;
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        if (!s->lane && join_narrows(L, s, T))
            avail += s->w - 1;
        if (!s->lane && sized_at_T(L, s))
            cols += split_pick(L, s, T, s->kind == K_NORM ? LN_MAX : ELEM_MAX) - 1;
        if (!s->lane && attn_sized(L, s)) {
            uint32_t kp, vp;
            attn_pick(L, s, T, Hm, &kp, &vp);
            cols += (uint64_t)s->N * (vp - s->akc);
        }
        if (s->kind != K_MM)
            continue;
        uint64_t hmax, wmax, kr = 0, kc = 0;
        mm_bounds(L, s, Hm, avail, &hmax, &wmax);
        if (wmax < s->kcmin || !mm_pick(s, T, hmax, wmax, L->t->sram_bytes, L->narrow, &kr, &kc))
            return false;
        cols += s->lane ? 0 : kc;
    }
    return cols <= avail;
}

/* Sources and sinks: a chunk of the stream per PE. Matrix products: the fewest columns their
 * weights need over as many rows as they may take (kcmin). *fixed: the main band's columns of the
 * stages without weights; *need: those of its matrix products at kcmin. */
static ts_status min_widths(lw *L, uint32_t Hm, uint64_t *fixed, uint64_t *need)
{
    const ts_wse_target *t = L->t;
    *fixed = *need = 0;
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (s->kind == K_SOURCE || s->kind == K_SINK) {
            s->chunk = t->sram_bytes / 4;
            s->w = (uint32_t)ts_geom_cdiv(s->in_n, s->chunk);
            s->mem = (s->in_n < s->chunk ? s->in_n : s->chunk) * 4;
        }
        if (s->kind != K_MM) {
            if (!s->lane)
                *fixed += s->w;
            continue;
        }
        uint64_t rows = s->lane ? t->height - Hm : Hm;
        uint64_t kr = (uint64_t)s->K < rows ? (uint64_t)s->K : rows;
        uint64_t kc = 1;
        while (kc <= (uint64_t)s->N &&
               lw_mm_bytes(s->h16, ts_geom_cdiv((uint64_t)s->K, kr), ts_geom_cdiv((uint64_t)s->N, kc)) > t->sram_bytes)
            kc++;
        const ts_graph_node *n = ts_graph_get_node(L->g, s->node);
        if (kc > (uint64_t)s->N)
            return ts_lower_fail(L->err, n,
                                 "one output column of its weights '%s' over %llu rows of PEs needs %.1f KiB per PE, "
                                 "the PE has %.1f KiB: %.1f KiB too much (%llu bytes)",
                                 ts_graph_get_tensor(L->g, n->in[1])->name, (unsigned long long)kr,
                                 lw_mm_bytes(s->h16, ts_geom_cdiv((uint64_t)s->K, kr), 1) / 1024.0, t->sram_bytes / 1024.0,
                                 (lw_mm_bytes(s->h16, ts_geom_cdiv((uint64_t)s->K, kr), 1) - t->sram_bytes) / 1024.0,
                                 (unsigned long long)(lw_mm_bytes(s->h16, ts_geom_cdiv((uint64_t)s->K, kr), 1) - t->sram_bytes));
        s->kcmin = (uint32_t)kc;
        if (!s->lane)
            *need += kc;
    }
    return TS_OK;
}

/* The columns the main band leaves for its matrix products, or an error naming the first one
 * that finds too few. */
static ts_status columns_left(lw *L, uint32_t Hm, uint64_t fixed, uint64_t need, uint64_t *avail)
{
    const ts_wse_target *t = L->t;
    if (fixed > t->width) { /* the widest of them named, with what its PEs keep */
        const lw_stage *wide = NULL;
        for (size_t i = 0; i < L->n; i++)
            if (L->st[i].kind != K_MM && !L->st[i].lane && (!wide || L->st[i].w > wide->w))
                wide = &L->st[i];
        const ts_graph_node *n = wide && wide->node >= 0 ? ts_graph_get_node(L->g, wide->node) : NULL;
        return ts_err_set(L->err, TS_EINPUT, "the stages without weights need %llu columns of PEs, the mesh has %u: "
                          "%llu columns short; the widest, %s%s%s%s (%s), takes %u columns of %u PEs, up to %.1f "
                          "KiB each", (unsigned long long)fixed, t->width, (unsigned long long)(fixed - t->width),
                          n ? ts_graph_op_name(n->op) : "the", n ? " '" : " ", n ? n->name : "", n ? "'" : "",
                          ts_lww_kind_name[wide->kind], wide->w, wide->h, wide->mem / 1024.0);
    }
    *avail = t->width - fixed;
    if (need <= *avail)
        return TS_OK;
    uint64_t used = 0;
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        if (s->kind != K_MM || s->lane)
            continue;
        if (used + s->kcmin > *avail) {
            uint64_t wbytes = (uint64_t)(s->K * s->N) * 4;
            return ts_lower_fail(L->err, ts_graph_get_node(L->g, s->node),
                                 "needs %u columns of PEs for its weights '%s' (%.1f KiB over columns of %llu PEs of "
                                 "%.1f KiB); %llu are left of the %u-wide mesh: %llu columns short",
                                 s->kcmin, ts_graph_get_tensor(L->g, ts_graph_get_node(L->g, s->node)->in[1])->name,
                                 wbytes / 1024.0,
                                 (unsigned long long)((uint64_t)s->K < Hm ? (uint64_t)s->K : Hm),
                                 t->sram_bytes / 1024.0, (unsigned long long)(*avail - used), t->width,
                                 (unsigned long long)(used + s->kcmin - *avail));
        }
        used += s->kcmin;
    }
    return TS_OK;
}

/* Balance the pipeline: L->T, the smallest T such that every matrix product, given the fewest
 * PEs that take its rows in at most T cycles, still fits the columns left (skip paths below are
 * not counted: they only push a join east). Stages with few rows then get few PEs. From the
 * longest stream of a product up, doubling, then bisecting. When the fewest PEs of every product
 * take more columns than are left at any T (products split wide and short to save PEs), the
 * products take the fewest columns instead (L->narrow: tall splits, as many rows as they need). */
static ts_status balance(lw *L, uint32_t Hm, uint64_t avail)
{
    uint64_t Tmax = UINT64_MAX >> 2;
    if (!fits_at(L, Tmax, Hm, avail))
        L->narrow = true;
    uint64_t T = 1;
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        if (s->kind == K_MM && (uint64_t)s->M * (uint64_t)(s->K > s->N ? s->K : s->N) > T)
            T = (uint64_t)s->M * (uint64_t)(s->K > s->N ? s->K : s->N);
    }
    if (!fits_at(L, T, Hm, avail)) {
        uint64_t lo = T;
        do {
            if (T > Tmax)
                return ts_err_set(L->err, TS_EINTERNAL, "no placement of the matrix products fits");
            lo = T + 1;
            T *= 2;
        } while (!fits_at(L, T, Hm, avail));
        while (lo < T) { /* the smallest T that fits, by bisection */
            uint64_t mid = lo + (T - lo) / 2;
            if (fits_at(L, mid, Hm, avail))
                T = mid;
            else
                lo = mid + 1;
        }
    }
    L->T = T;
    return TS_OK;
}

/* Each matrix product's kr x kc split at L->T: its rectangle and its PEs' memory. */
static ts_status split(lw *L, uint32_t Hm, uint64_t avail)
{
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (s->kind != K_MM)
            continue;
        uint64_t hmax, wmax, kr = 0, kc = 0;
        mm_bounds(L, s, Hm, avail, &hmax, &wmax);
        if (!mm_pick(s, L->T, hmax, wmax, L->t->sram_bytes, L->narrow, &kr, &kc))
            return ts_err_set(L->err, TS_EINTERNAL, "no split of matmul stage %zu fits", i);
        s->kr = (uint32_t)kr;
        s->kc = (uint32_t)kc;
        s->w = s->kc;
        s->h = s->kr;
        s->mem = lw_mm_bytes(s->h16, ts_geom_cdiv((uint64_t)s->K, kr), ts_geom_cdiv((uint64_t)s->N, kc));
    }
    return TS_OK;
}

/* Cycles a row of PEs adds to a product's latency in a decode (the input row down one more PE,
 * the partial sums up one more, each add's start): the fewest cycles of the reduced decoders in
 * test_llm's form, of 1 to 16 tried. */
enum { ROW_CYCLES = 8 };

/* A decode's products sized for latency: each one-row product of the main band, its columns kept,
 * takes more rows than balance gave it, at most its lane's and K: up to the fewest whose binary32
 * MAC loop (ki (nb + 3) cycles, ki inputs by nb outputs a PE) is at most a quarter of K + N, the cycles its
 * input and output take to stream past one PE, the number kr of them that makes the MAC loop
 * (ki mm_kcost: binary32 or binary16) plus ROW_CYCLES kr the least (the first of equals). Its blocks only shrink, its columns stay, so the
 * band's width and every other stage are as they were; the band grows down into rows a decode
 * leaves idle. */
static void latency_rows(lw *L, uint32_t Hm, uint64_t avail)
{
    if (!L->decode)
        return;
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (s->kind != K_MM || s->lane || s->M != 1)
            continue;
        uint64_t hmax, wmax;
        mm_bounds(L, s, Hm, avail, &hmax, &wmax);
        const uint64_t K = (uint64_t)s->K, nb = ts_geom_cdiv((uint64_t)s->N, s->kc);
        /* the most inputs a PE: by the binary32 loop's cost, also for a binary16 product (whose
         * loop, 4 times cheaper, would reach the quarter on fewer rows; it takes the rows a
         * binary32 product would at most, the fewest cycles by its own loop within them) */
        const uint64_t ki = ((uint64_t)s->K + (uint64_t)s->N) / 4 / (nb + 3);
        uint64_t most = ki ? ts_geom_cdiv(K, ki) : hmax, kr = s->kr, best = UINT64_MAX;
        most = most < hmax ? most : hmax;
        for (uint64_t r = s->kr; r <= most; r++) {
            const uint64_t c = ts_geom_cdiv(K, r) * mm_kcost(s, nb) + ROW_CYCLES * r;
            if (c < best) {
                best = c;
                kr = r;
            }
        }
        if (kr <= s->kr)
            continue;
        s->kr = (uint32_t)kr;
        s->h = s->kr;
        s->mem = lw_mm_bytes(s->h16, ts_geom_cdiv(K, kr), nb);
    }
}

/* The rows the main band ends up using: its tallest stage's. */
static uint32_t band_height(const lw *L)
{
    uint32_t top = 1;
    for (size_t i = 0; i < L->n; i++)
        if (!L->st[i].lane && L->st[i].h > top)
            top = L->st[i].h;
    return top;
}

/* Every stage's column and row: main stages west to east along row 0 (a join east of the skip
 * path's last stage too), a skip path from the column east of its fork along row Hm. */
static ts_status positions(lw *L, uint32_t Hm)
{
    const ts_wse_target *t = L->t;
    uint32_t xm = 0, xs = 0;
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        const lw_stage *pv = s->prev >= 0 ? &L->st[s->prev] : NULL;
        if (s->lane) { /* a skip path starts in the column east of its fork */
            if (pv && !pv->lane)
                xs = pv->x + pv->w;
            s->x = xs;
            s->y0 = Hm;
            xs = s->x + s->w;
        } else {
            s->x = xm;
            if (s->kind == K_JOIN || s->kind == K_CONCAT) { /* east of the skip path's last stage too */
                const lw_stage *sk = &L->st[s->prev2];
                if (sk->x + sk->w > s->x)
                    s->x = sk->x + sk->w;
            }
            xm = s->x + s->w;
        }
        if ((uint64_t)s->x + s->w > t->width) {
            char what[160];
            if (s->node >= 0)
                snprintf(what, sizeof what, "%s '%s'", ts_graph_op_name(ts_graph_get_node(L->g, s->node)->op),
                         ts_graph_get_node(L->g, s->node)->name);
            else
                snprintf(what, sizeof what, "the %s", ts_lww_kind_name[s->kind]);
            return ts_err_set(L->err, TS_EINPUT, "%s would end at column %u of the %u-wide mesh: %u columns short",
                              what, s->x + s->w, t->width, s->x + s->w - t->width);
        }
    }
    return TS_OK;
}

/* The most rows a product's outputs leave on before SwiGLU's gate (lower_wse_emit_mm.c). */
enum { KO_MAX = 32 };

/* The pairs of SwiGLU's gate e's row g when its product gives its outputs on e->ko rows: the
 * fewest of any row (most 0) and the most (most 1). */
static uint64_t glu_slice(const lw *L, const lw_stage *e, int most)
{
    const lw_stage *m = &L->st[e->prev];
    uint64_t best = most ? 0 : UINT64_MAX;
    for (uint32_t g = 0; g < e->ko; g++) {
        uint64_t n0, n1;
        ts_lww_mm_group_out(m, g, &n0, &n1);
        const uint64_t p = (n1 - n0) / 2;
        best = most ? (p > best ? p : best) : (p < best ? p : best);
    }
    return best;
}

/* Whether product s's column groups (s->ko of them) each start at a column of their own. */
static bool groups_rise(const lw_stage *s)
{
    for (uint32_t g = 0; g < s->ko; g++)
        if (ts_lww_mm_group_col(s, g) >= ts_lww_mm_group_col(s, g + 1))
            return false;
    return true;
}

/* The rows a stage of the main band may take: the main band's tallest stage, or with skip paths
 * the rows their tallest stage leaves. */
static uint32_t glu_height(const lw *L, bool forks)
{
    uint32_t hb = band_height(L), hs = 0;
    for (size_t i = 0; i < L->n; i++)
        if (L->st[i].lane && L->st[i].h > hs)
            hs = L->st[i].h;
    const uint32_t rows = forks ? L->t->height - (hs ? hs : 1) : L->t->height;
    return rows > hb ? rows : hb;
}

/* A decode's product before SwiGLU's gate: its columns cut by pairs (s->cols: column j's first
 * output 2 floor(j (N / 2) / kc)), so that every column starts a pair and its ko groups take
 * kc / ko columns each. Cut evenly, a group starts only at a column whose first output is even:
 * Llama's gate and up product of 7,168 outputs on 78 columns (91.9 each) has none among columns 1
 * to 9, 20 to 29, 40 to 48 and 59 to 68, so its 12 groups took 2 to 11 columns and the longest
 * chain 11 columns' outputs. Not where a column would get no pair (N / 2 < kc). */
static ts_status pair_cuts(lw *L, lw_stage *s)
{
    const uint64_t half = (uint64_t)s->N / 2;
    if (!L->decode || s->M != 1 || s->cols || half < s->kc)
        return TS_OK;
    if (!(s->cols = ts_malloc((size_t)(s->kc + 1) * sizeof *s->cols)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (uint32_t j = 0; j <= s->kc; j++)
        s->cols[j] = (int64_t)(2 * ((uint64_t)j * half / s->kc));
    return TS_OK;
}

/* A product whose outputs go to SwiGLU's gate only (not a fork, on the main band, of 2 columns or
 * more): its outputs leave on ko rows, one column group each, group g a row lower than group
 * g - 1 (lower_wse_emit_mm.c), so no PE passes on more than its group's outputs; ko up to KO_MAX
 * and kc, as many as the rows leave (the main band's tallest stage, or with skip paths the rows
 * their tallest stage leaves). The gate takes them on ko rows, merged up its last column. In a
 * decode the product's columns are cut by pairs (pair_cuts). */
static ts_status glu_rows(lw *L, bool forks)
{
    const uint32_t hb = glu_height(L, forks);
    for (size_t i = 0; i + 1 < L->n; i++) {
        lw_stage *s = &L->st[i], *e = &L->st[i + 1];
        if (s->kind != K_MM || e->kind != K_ELEM || e->eop != TS_OP_MUL || e->prev != (int)i || s->lane ||
            e->lane || s->fork || e->fork || s->kc < 2 || s->kr >= hb || s->N % 2)
            continue;
        if (pair_cuts(L, s))
            return L->err->status;
        uint32_t ko = hb - s->kr + 1;
        ko = ko < KO_MAX ? ko : KO_MAX;
        s->ko = ko < s->kc ? ko : s->kc;
        while (s->ko > 1 && !groups_rise(s))
            s->ko--;
        e->ko = s->ko;
        /* a row of the gate keeps its part of its row's pairs (all of them on one PE) */
        if (s->ko <= 1 || glu_slice(L, e, 1) * 8 > L->t->sram_bytes) {
            s->ko = e->ko = 0;
            ts_free(s->cols);
            s->cols = NULL;
            continue;
        }
        s->h = s->kr + s->ko - 1;
        e->h = s->ko;
        e->mem = glu_slice(L, e, 1) * 8;
    }
    return TS_OK;
}

/* A product d of one row that takes its input on kin of its rows' groups, step rows each (rows_in,
 * norm_rows, heads_rows): its rows become kin step, each PE holding mem bytes. */
static void mm_rows_in(lw_stage *d, uint32_t kin, uint32_t step, uint64_t mem)
{
    d->kin = kin;
    d->kr = kin * step;
    d->h = d->kr;
    d->mem = mem;
}

/* A decode's SwiGLU gate e on e->ko rows feeding a product d of one row (the down product): d
 * takes its input on the gate's rows instead of through the gate's last column and one PE (every PE
 * of d took in every value of the gate's output): row q of the gate sends its outputs east into d's
 * rows [q step, (q + 1) step), which take them in alone, each its slice of them. The gate's rows and
 * its product's column groups move step rows apart so that gate row q sits on d's row q step; d's
 * rows become ko step (at least its kr), each its share of its group's inputs. Only when the rows
 * fit (rows: what the skip paths leave) and every row of d keeps at least one input that fits its
 * PE. */
static void rows_in(lw *L, uint32_t rows)
{
    if (!L->decode)
        return;
    for (size_t i = 1; i + 1 < L->n; i++) {
        lw_stage *e = &L->st[i], *d = &L->st[i + 1], *p = &L->st[i - 1];
        if (e->ko <= 1 || e->kind != K_ELEM || d->kind != K_MM || d->prev != (int)i || d->lane || d->M != 1 ||
            d->ko > 1 || e->fork || (uint64_t)d->K * d->M != e->out_n || p->ko != e->ko || e->prev != (int)i - 1)
            continue;
        const uint32_t ko = e->ko, step = (d->kr + ko - 1) / ko;
        const uint64_t nb = ts_geom_cdiv((uint64_t)d->N, d->kc);
        const uint64_t least = glu_slice(L, e, 0);
        const uint64_t mem = lw_mm_bytes(d->h16, ts_geom_cdiv(glu_slice(L, e, 1), step), nb);
        if (least < step || p->kr + (uint64_t)(ko - 1) * step > rows || (uint64_t)ko * step > rows ||
            mem > L->t->sram_bytes)
            continue;
        mm_rows_in(d, ko, step, mem);
        p->kstep = e->kstep = step;
        p->h = p->kr + (ko - 1) * step;
        e->h = (ko - 1) * step + 1;
    }
}

/* The most rows a decode's RMSNormalization gives its row's parts on (norm_rows). */
enum { NORM_ROWS = 16 };

/* A decode's RMSNormalization n of one row feeding a product d of one row (the q, k and v product,
 * the head; not one whose outputs leave on column groups): n keeps the row's parts down a column,
 * part q on its row q step (lower_wse_norm.c), and each sends its scaled part east on its own row
 * into d's rows [q step, (q + 1) step), which take it in alone (d->kin), where the norm passed the
 * whole row out of one PE and every PE of d took in all of it. The parts are up to NORM_ROWS and
 * d's rows; d keeps step = kr / parts rows a part (its kr rounded down to a multiple). Only when
 * every row of d keeps an input and a PE's share fits its memory. */
static void norm_rows(lw *L)
{
    if (!L->decode)
        return;
    for (size_t i = 0; i + 1 < L->n; i++) {
        lw_stage *n = &L->st[i], *d = &L->st[i + 1];
        if (n->kind != K_NORM || !n->vop || n->lane || n->fork || n->in_n != (uint64_t)n->L || d->kind != K_MM ||
            d->prev != (int)i || d->lane || d->M != 1 || d->ko > 1 || d->kin > 1 || d->K != n->L || d->kr < 2)
            continue;
        const uint64_t Lr = (uint64_t)n->L;
        uint32_t kin = d->kr < NORM_ROWS ? d->kr : NORM_ROWS;
        kin = (uint64_t)kin < Lr ? kin : (uint32_t)Lr;
        const uint32_t step = d->kr / kin;
        const uint64_t nb = ts_geom_cdiv((uint64_t)d->N, d->kc), part = Lr / kin; /* the fewest of a part */
        const uint64_t mem = lw_mm_bytes(d->h16, ts_geom_cdiv(ts_geom_cdiv(Lr, kin), step), nb);
        if (kin < 2 || part < step || mem > L->t->sram_bytes || lw_rms_mem(Lr, kin) + 4 > L->t->sram_bytes)
            continue;
        mm_rows_in(d, kin, step, mem);
        n->ko = n->G = n->gwant = kin;
        n->kstep = step;
        n->w = 1;
        n->h = (kin - 1) * step + 1;
        n->mem = lw_rms_mem(Lr, kin) + 4;
    }
}

/* A decode's attention a whose heads' positions are split (a->nbk) feeding a product d of one row
 * (the output product): each head's top block sends its outputs down the head's column to its row
 * q step, which turns them east on that row into d's rows [q step, (q + 1) step) (d->kin, a->ko
 * heads, a->kstep = step; lower_wse_attn.c), where the heads' outputs left along row 0 one head
 * after another through the last head's PE and every PE of d took in all of them. step: d's kr
 * over the heads, rounded up. Only when every head's row is one of its blocks', every row of d
 * keeps an input, the rows fit (rows: what the skip paths leave) and a PE's share fits its
 * memory. */
static void heads_rows(lw *L, uint32_t rows)
{
    if (!L->decode)
        return;
    for (size_t i = 0; i + 1 < L->n; i++) {
        lw_stage *a = &L->st[i], *d = &L->st[i + 1];
        if (a->kind != K_ATTN || !a->nbk || a->lane || a->fork || a->M != 1 || a->nseq != 1 || a->N < 2 ||
            d->kind != K_MM || d->prev != (int)i || d->lane || d->M != 1 || d->ko > 1 || d->kin > 1 ||
            (uint64_t)d->K != a->out_n || a->out_n != (uint64_t)(a->N * a->C))
            continue;
        const uint32_t kin = (uint32_t)a->N, step = (d->kr + kin - 1) / kin;
        const uint64_t nb = ts_geom_cdiv((uint64_t)d->N, d->kc);
        const uint64_t mem = lw_mm_bytes(d->h16, ts_geom_cdiv((uint64_t)a->C, step), nb);
        if ((uint64_t)a->C < step || (uint64_t)(kin - 1) * step >= a->h || (uint64_t)kin * step > rows ||
            mem > L->t->sram_bytes)
            continue;
        mm_rows_in(d, kin, step, mem);
        a->ko = kin;
        a->kstep = step;
    }
}

/* A decode's RMSNormalization n of one row over G >= 2 PEs in a row (not down a column: norm_rows)
 * feeding a product d of one row without a bias that takes its input as one stream (the gate and
 * up product, whose column groups sit rows apart): the norm passes its row on raw as it comes, its
 * parts' PEs each taking a part of it from the multicast and summing its squares, and gives 1 / s
 * after the row (lower_wse_norm.c); d holds its weights times the norm's scale (a weight of the
 * model, the same for every token) and its row 0 scales its sums by that 1 / s
 * (lower_wse_emit_mm.c): W^T (x / s . g) = (W . g)^T x / s. The norm's first PE took in the whole
 * row and its last gave out the scaled row only after the whole sum, about a cycle a value each;
 * now the row goes on into d as it comes, and only 1 / s waits for the sum. Its G parts take a
 * column more for the PE that passes the row on, where the mesh's width leaves one; else G - 1
 * parts. Only when a part's PE and d's PE with 1 / s fit their memory. A RMSNormalization down a
 * column whose parts d takes on its rows (norm_rows) sends each part east raw as it comes in, and
 * its top PE 1 / s after its part, into d's row 0 (norm_fold: d's weights times the scale). */
static void norm_fold(const lw_stage *n, lw_stage *d)
{
    for (int64_t k = 0; k < d->K; k++) /* the norm's scale into the rows of d's weights */
        for (int64_t c = 0; c < d->N; c++)
            d->wt[k * d->N + c] *= n->vals[k];
}

/* A decode's RMSNormalization n down a column that sends its parts raw into product d's rows
 * (norm_pass): its parts cut so that d's rows of each end their MACs together. Part q's PE sends
 * it east as soon as it is in, a cycle a value, and each of d's step rows of it takes a step-th of
 * it at mm_kcost cycles an input: a part ending at value b, n long, ends its MACs at about b + n (1
 * + kcost / step). Cut evenly, the last part's MACs came after the whole row; cut so, the parts
 * shrink down the column about geometrically (each from the row's end back, n = (T - b) step / (step
 * + kcost), T the least for which the first fits), the last the shortest. Kept even when a part would
 * leave a row of d without an input or the first, the longest, does not fit the norm's PE or d's. */
static ts_status norm_cuts(lw *L, lw_stage *n, lw_stage *d)
{
    const uint64_t Lr = (uint64_t)n->L, G = n->G, step = d->kr / d->kin;
    const uint64_t nb = ts_geom_cdiv((uint64_t)d->N, d->kc), c = mm_kcost(d, nb);
    int64_t *cut = ts_malloc((size_t)(G + 1) * sizeof *cut);
    if (!cut)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    bool found = false;
    for (uint64_t T = Lr; !found && T <= 2 * Lr + G * c; T++) {
        uint64_t b = Lr;
        bool ok = true;
        cut[G] = (int64_t)Lr;
        for (uint64_t q = G - 1; ok && q >= 1; q--) {
            const uint64_t part = (T - b) * step / (step + c);
            ok = part >= step && part + step <= b;
            b -= ok ? part : 0;
            cut[q] = (int64_t)b;
        }
        found = ok && b * (2 * step + c) <= T * step;
    }
    cut[0] = 0;
    const uint64_t most = found ? (uint64_t)cut[1] : 0; /* the first part, the longest */
    const uint64_t nmem = 8 * most + 4 + (most >= 64 ? 8 * 64 : 0) + 4;
    const uint64_t dmem = lw_mm_bytes(d->h16, ts_geom_cdiv(most, step), nb) + 4;
    if (!found || nmem > L->t->sram_bytes || dmem > L->t->sram_bytes) {
        ts_free(cut);
        return TS_OK;
    }
    ts_free(n->cols);
    n->cols = cut;
    n->mem = nmem > n->mem ? nmem : n->mem;
    d->mem = dmem > d->mem ? dmem : d->mem;
    return TS_OK;
}

static ts_status norm_pass(lw *L, uint32_t Hm)
{
    if (!L->decode)
        return TS_OK;
    for (size_t i = 0; i + 1 < L->n; i++) {
        lw_stage *n = &L->st[i], *d = &L->st[i + 1];
        if (n->kind != K_NORM || !n->vop || n->lane || n->fork || n->G < 2 || n->in_n != (uint64_t)n->L ||
            d->kind != K_MM || d->prev != (int)i || d->lane || d->M != 1 || d->K != n->L || d->bias || !d->wt ||
            d->mem + 4 > L->t->sram_bytes || (n->ko > 1) != (d->kin > 1))
            continue;
        if (n->ko > 1) { /* down a column, each part on its rows of d (norm_rows): its parts raw */
            n->rpass = d->rpass = true;
            d->mem += 4;
            norm_fold(n, d);
            ts_status rc = norm_cuts(L, n, d);
            if (rc)
                return rc;
            continue;
        }
        const uint32_t G = n->G;
        n->w = G + 1; /* a column more, if the mesh has it */
        if (positions(L, Hm)) {
            ts_err_free(L->err);
            ts_err_init(L->err);
            n->w = G;
            ts_status rc = positions(L, Hm);
            if (rc)
                return rc;
        }
        const uint64_t part = ts_geom_cdiv((uint64_t)n->L, n->w - 1);
        const uint64_t mem = 4 * part + 8 + (part >= 64 ? 8 * 64 : 0);
        if (mem > L->t->sram_bytes) {
            if (n->w != G) {
                n->w = G;
                ts_status rc = positions(L, Hm);
                if (rc)
                    return rc;
            }
            continue;
        }
        n->G = n->w - 1;
        n->rpass = d->rpass = true;
        n->mem = mem;
        d->mem += 4;
        norm_fold(n, d);
    }
    return TS_OK;
}

/* Whether stage s is slower than the pipeline time T and split: an elementwise stage or a
 * LayerNormalization sized against T (sized_at_T) whose row on one PE takes longer than T allows;
 * in a decode, an elementwise stage with at most 4,096 rows of L values out (its split PEs' code is
 * unrolled over the rows). */
static bool elem_splits(const lw *L, const lw_stage *s)
{
    if (sized_at_T(L, s))
        return s->out_n / (uint64_t)s->L * row_cost(s, 1) > L->T;
    return s->kind == K_ELEM && s->L > 1 && s->in_n * elem_cost(s) > L->T && s->out_n / (uint64_t)s->L <= 4096;
}

/* A stage sized against T (sized_at_T) over the fewest PEs in a row, at most gmax, whose rows take
 * at most T cycles (split_pick). */
static void split_at_T(lw *L, lw_stage *s, uint64_t gmax)
{
    const uint64_t cap = s->kind == K_NORM ? LN_MAX : ELEM_MAX;
    const uint64_t g = split_pick(L, s, L->T, gmax < cap ? gmax : cap);
    s->G = (uint32_t)g;
    s->w = s->G;
    s->mem = g > 1 ? split_mem(s, g) : s->kind == K_NORM ? (uint64_t)s->L * 12 + 8 : 0; /* lower_wse_norm.c */
}

/* Positions, with the stages slower than the pipeline time T split over PEs in a row (each its
 * part of every row of the stream): the elementwise stages and LayerNormalizations of a pipeline
 * of many rows over as many as T asks for (split_at_T: up to 64 and 16); a decode's elementwise
 * stages over up to 8, SwiGLU's gate, the widest rows of a decoder, up to 64; as many as the mesh's
 * width leaves: at most 64, 32, 16, then 8, 4, 2, 1 for all of them. */
static ts_status elem_widths(lw *L, uint32_t Hm)
{
    bool slow = false, wide = false;
    for (size_t i = 0; i < L->n; i++) {
        slow |= elem_splits(L, &L->st[i]);
        wide |= elem_splits(L, &L->st[i]) && (L->st[i].eop == TS_OP_MUL || sized_at_T(L, &L->st[i]));
    }
    if (!slow)
        return positions(L, Hm);
    for (uint64_t gmax = wide ? 64 : 8;; gmax /= 2) {
        for (size_t i = 0; i < L->n; i++) {
            lw_stage *s = &L->st[i];
            if (!elem_splits(L, s))
                continue;
            if (sized_at_T(L, s)) {
                split_at_T(L, s, gmax);
                continue;
            }
            /* SwiGLU's gate whose stream is half the pipeline time or more (a decode's long row):
             * its first PE also passes on the stream's other parts (about a cycle a value) before
             * its own part comes, so its part must fit in what T leaves (all it may take when
             * nothing is left) */
            const bool pass = s->eop == TS_OP_MUL && 2 * s->in_n >= L->T;
            const uint64_t T = pass && L->T > s->in_n ? L->T - s->in_n : L->T;
            uint64_t g = pass && L->T <= s->in_n ? gmax : ts_geom_cdiv(s->in_n * elem_cost(s), T ? T : 1);
            const uint64_t most = s->eop == TS_OP_MUL || gmax < 8 ? gmax : 8; /* SwiGLU's gate: up to 64 */
            g = g < most ? g : most;
            /* at most one PE per element of a row (of its row's slice, over ko rows) */
            const uint64_t least = s->ko > 1 ? glu_slice(L, s, 0) : (uint64_t)s->L;
            const uint64_t part = s->ko > 1 ? glu_slice(L, s, 1) : (uint64_t)s->L;
            g = g < least ? g : least;
            const uint64_t per = s->in_n / s->out_n * 4; /* bytes a PE keeps per value of its part */
            if (g > 1 && ts_geom_cdiv(part, g) * per > L->t->sram_bytes)
                g = 1; /* a PE keeps its part of a row */
            s->G = (uint32_t)(g ? g : 1);
            s->w = s->G;
            s->mem = s->G > 1 || s->ko > 1 ? ts_geom_cdiv(part, s->G) * per : 0;
        }
        ts_status rc = positions(L, Hm);
        if (!rc || gmax == 1)
            return rc;
        ts_err_free(L->err); /* too wide: fewer PEs each */
        ts_err_init(L->err);
    }
}

/* The RMSNormalizations of long rows (gwant above their G): the columns the mesh's width leaves
 * east of the band's last stage, shared among them, each up to gwant PEs (positions again); as
 * they were when the band does not fit then. */
static ts_status norm_widths(lw *L, uint32_t Hm)
{
    uint64_t end = 0, k = 0;
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        end = s->x + s->w > end ? s->x + s->w : end;
        k += s->kind == K_NORM && s->gwant > s->G;
    }
    if (!k || end >= L->t->width)
        return TS_OK;
    const uint64_t per = (L->t->width - end) / k;
    if (!per)
        return TS_OK;
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (s->kind != K_NORM || s->gwant <= s->G)
            continue;
        s->G = (uint32_t)(s->G + per < s->gwant ? s->G + per : s->gwant);
        s->w = s->G;
        s->mem = lw_rms_mem((uint64_t)s->L, s->G);
    }
    ts_status rc = positions(L, Hm);
    if (!rc)
        return TS_OK;
    ts_err_free(L->err); /* too wide after all: as they were */
    ts_err_init(L->err);
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (s->kind == K_NORM && s->ko <= 1 && s->gwant > s->kcmin) {
            s->G = s->w = s->kcmin;
            s->mem = lw_rms_mem((uint64_t)s->L, s->G);
        }
    }
    return positions(L, Hm);
}

/* Every attention sized against T (attn_sized) its K and V parts at L->T (at_T), or the fewest its
 * memory needs; whether any takes more than those. */
static bool attn_widths(lw *L, uint32_t Hm, bool at_T)
{
    bool more = false;
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (!attn_sized(L, s))
            continue;
        uint32_t kp = s->akr, vp = s->akc;
        if (at_T)
            attn_pick(L, s, L->T, Hm, &kp, &vp);
        more |= kp != s->akr || vp != s->akc;
        if (kp != s->kr || vp != s->kc)
            ts_lww_attn_parts(s, kp, vp);
    }
    return more;
}

/* Cycles from a decode's product taking its input to column nb wide having its outputs ready in
 * row 0 (chain_cuts): the row whose input, MAC loop and partial sums' climb to row 0 end last
 * (arr[i] the input of its row i in, ki[i] its inputs, ROW_CYCLES a row up), then the partial
 * sums up (about a cycle an output), the widening to binary32 (about 3) and the scaling by the
 * norm's 1 / s (about 1). */
static uint64_t chain_finish(const lw_stage *s, const uint64_t *arr, const uint64_t *ki, uint64_t nb)
{
    uint64_t f = 0;
    for (uint32_t i = 0; i < s->kr; i++) {
        const uint64_t fi = arr[i] + ki[i] * mm_kcost(s, nb) + ROW_CYCLES * i; /* its sums i rows up */
        f = fi > f ? fi : f;
    }
    return f + (s->kr > 1 ? nb : 0) + (s->h16 ? 3 * nb : 0) + (s->rpass ? nb : 0);
}

/* The cuts of N over kc columns (cut[0..kc]) whose column j, as wide as its outputs are ready
 * (chain_finish) by the time the chain has sent those of the columns west of it, a cycle an output,
 * from the first column's nb0; at most most outputs a column, at least one. The outputs they take
 * (N when they all fit, less when nb0 is too few). */
static uint64_t chain_fill(const lw_stage *s, const uint64_t *arr, const uint64_t *ki, uint64_t nb0, uint64_t most,
                           int64_t *cut)
{
    const uint64_t N = (uint64_t)s->N, f0 = chain_finish(s, arr, ki, nb0);
    uint64_t at = 0;
    cut[0] = 0;
    for (uint32_t j = 0; j < s->kc; j++) {
        const uint64_t left = N - at - (s->kc - 1 - j); /* an output at least for each column after */
        uint64_t lo = nb0 < left ? nb0 : left, hi = most < left ? most : left; /* the widest in time */
        while (j && lo < hi) {
            const uint64_t mid = (lo + hi + 1) / 2;
            if (chain_finish(s, arr, ki, mid) <= f0 + at)
                lo = mid;
            else
                hi = mid - 1;
        }
        at += lo;
        cut[j + 1] = (int64_t)at;
    }
    return at;
}

/* A decode's product of one chain (one row, its outputs through row 0's chain east, not on column
 * groups): its columns cut unevenly, each later one wider (s->cols), so that the chain sends
 * without waiting. Its columns take the input together and end their MACs about together when cut
 * evenly, so the chain's north-east PE sent the N outputs, about a cycle each, only after the MAC
 * loop; cut so, column 0 is the narrowest and ends first, and column j ends when the chain has
 * sent the outputs west of it: the outputs leave from about chain_finish of the first column, not of
 * an even one (row 0 passes the outputs of the columns west of it on a microthread during its MACs,
 * lower_wse_emit_mm.c). Kept even when no cut is earlier or none takes all N with every column
 * within a PE's memory. */
static ts_status chain_cuts(lw *L)
{
    if (!L->decode)
        return TS_OK;
    for (size_t si = 0; si < L->n; si++) {
        lw_stage *s = &L->st[si];
        if (s->kind != K_MM || s->lane || s->M != 1 || s->ko > 1 || s->kc < 2 || s->fork)
            continue;
        const uint64_t N = (uint64_t)s->N, even = ts_geom_cdiv(N, s->kc);
        uint64_t *arr = ts_malloc((size_t)s->kr * 2 * sizeof *arr);
        int64_t *cut = ts_malloc((size_t)(s->kc + 1) * sizeof *cut);
        if (!arr || !cut) {
            ts_free(arr);
            ts_free(cut);
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
        uint64_t *ki = arr + s->kr, kmost = 0;
        const bool parts = s->kin > 1 && L->st[s->prev].kind == K_NORM;
        const uint64_t extra = s->rpass ? 4 : 0;
        /* row 0 only passes the chain on when a row is left to finish the sums (and one in the
         * first input row's group), and when the other rows, taking row 0's inputs too, still hold
         * an even cut's weights (GPT-2 small's products of 2 rows did not) */
        s->crow = s->kr >= 2 && (s->kin <= 1 || s->kr / s->kin >= 2);
        for (;;) {
            kmost = 0;
            for (uint32_t i = 0; i < s->kr; i++) {
                uint64_t k0, k1, g0, g1;
                ts_lww_mm_row_k(L, s, i, &k0, &k1, &g0, &g1);
                ki[i] = k1 - k0;
                kmost = ki[i] > kmost ? ki[i] : kmost;
                /* its input in: the stream's k1-th value; a norm's part q sent after it is in; a
                 * gate row's or a head's outputs from the start */
                arr[i] = s->kin <= 1 ? k1 : parts ? g1 + (k1 - g0) : k1 - g0;
            }
            if (!s->crow || lw_mm_bytes(s->h16, kmost, even) + extra <= L->t->sram_bytes)
                break;
            s->crow = false;
        }
        uint64_t most = N;
        while (most > even && lw_mm_bytes(s->h16, kmost, most) + extra > L->t->sram_bytes)
            most = most * 3 / 4 > even ? most * 3 / 4 : even;
        uint64_t lo = 1, hi = even; /* the narrowest first column whose cuts take all N */
        while (lo < hi) {
            const uint64_t mid = (lo + hi) / 2;
            if (chain_fill(s, arr, ki, mid, most, cut) == N)
                hi = mid;
            else
                lo = mid + 1;
        }
        const bool keep = lo < even && chain_fill(s, arr, ki, lo, most, cut) == N &&
                          chain_finish(s, arr, ki, lo) < chain_finish(s, arr, ki, even);
        ts_free(arr);
        if (!keep) {
            s->crow = false;
            ts_free(cut);
            continue;
        }
        ts_free(s->cols);
        s->cols = cut;
        const uint64_t mem = lw_mm_bytes(s->h16, kmost, ts_lww_mm_nb_most(s)) + extra;
        s->mem = mem > s->mem ? mem : s->mem;
    }
    return TS_OK;
}

/* The most inputs of a row of product d (its rows' shares of K). */
static uint64_t mm_kmost(const lw *L, const lw_stage *d)
{
    uint64_t most = 0;
    for (uint32_t i = 0; i < d->kr; i++) {
        uint64_t k0, k1, g0, g1;
        ts_lww_mm_row_k(L, d, i, &k0, &k1, &g0, &g1);
        most = k1 - k0 > most ? k1 - k0 : most;
    }
    return most;
}

/* A product cut by pairs (pair_cuts): its widest column's weights (one more pair than an even
 * cut's at most) and 1 / s after a norm that passes its row on. */
static void pair_mem(lw *L)
{
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (s->kind != K_MM || s->ko <= 1 || !s->cols)
            continue;
        const uint64_t mem = lw_mm_bytes(s->h16, mm_kmost(L, s), ts_lww_mm_nb_most(s)) + (s->rpass ? 4 : 0);
        s->mem = mem > s->mem ? mem : s->mem;
    }
}

/* A decode's product d of one row whose outputs go through a streaming join j (its skip row kept)
 * into a RMSNormalization n down a column (norm_rows) and on into product p's rows: d's
 * outputs leave spread, as n's parts, where they left through one chain and the join and the
 * norm's column each took the whole row a wavelet a cycle. d's columns form n's parts' groups
 * (d->sko, at most its columns; n and p take as many parts, p's rows step = its kr / parts each),
 * each group's chain ending in its last column, which sends its outputs down to its part's row
 * (d->sstep = step rows apart) and east; the join takes one PE on each of those rows, its slice of
 * the skip row kept (the skip row multicast up its column), and sends its part's sums east into
 * n's PE of that part, which takes it alone; a join that forks (the layer's last, whose row also
 * goes down to the next layer's) passes the parts down its column in order into its skip path
 * (lower_wse_emit.c). The parts are d's groups' outputs (n->cols); d's
 * columns stay even (a chain row and the two runs' climb as chain_cuts left them). Only when the three stages sit side by side
 * on the band's top row, every row of p keeps an input and the PEs fit their memory. */
static lw_stage *next_main(lw *L, size_t k)
{
    for (size_t i = k + 1; i < L->n; i++)
        if (L->st[i].prev == (int)k && !L->st[i].lane)
            return &L->st[i];
    return NULL;
}

static ts_status spread_rows(lw *L)
{
    if (!L->decode)
        return TS_OK;
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *d = &L->st[i], *j = next_main(L, i);
        lw_stage *n = j ? next_main(L, (size_t)(j - L->st)) : NULL, *p = n ? next_main(L, (size_t)(n - L->st)) : NULL;
        if (d->kind != K_MM || d->lane || d->M != 1 || d->ko > 1 || d->fork || d->kc < 2 || !p ||
            !lw_join_keeps_skip(L, j) || j->M != 1 || (uint64_t)j->C != (uint64_t)d->N ||
            j->x != d->x + d->w || n->kind != K_NORM || n->ko <= 1 || n->fork || n->x != j->x + j->w ||
            p->kind != K_MM || p->kin != n->ko || d->y0 || j->y0 || n->y0 || p->y0 || n->L != d->N)
            continue;
        const uint32_t parts = n->ko < d->kc ? n->ko : d->kc, step = p->kr / parts;
        if (parts < 2 || (uint64_t)(parts - 1) * step >= d->kr)
            continue;
        int64_t *cut = ts_malloc((size_t)(parts + 1) * sizeof *cut), *jcut = ts_malloc((size_t)(parts + 1) * sizeof *jcut);
        if (!cut || !jcut) {
            ts_free(cut);
            ts_free(jcut);
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
        /* d's groups, p's rows by the new parts, and the memory they need */
        const lw_stage d0 = *d, n0 = *n, p0 = *p;
        d->sko = parts;
        d->sstep = step;
        d->cols = NULL;
        uint64_t most = 0, least = UINT64_MAX;
        for (uint32_t q = 0; q <= parts; q++)
            cut[q] = jcut[q] = (int64_t)ts_lww_mm_spread_cut(d, q);
        for (uint32_t q = 0; q < parts; q++) {
            const uint64_t len = (uint64_t)(cut[q + 1] - cut[q]);
            most = len > most ? len : most;
            least = len < least ? len : least;
        }
        n->cols = cut;
        n->ko = n->G = n->gwant = parts;
        n->kstep = step;
        n->h = (parts - 1) * step + 1;
        n->mem = 8 * most + 4 + (most >= 64 ? 8 * 64 : 0) + 4;
        p->kin = parts;
        p->kr = p->h = parts * step;
        const uint64_t pnb = ts_lww_mm_nb_most(p), dnb = ts_geom_cdiv((uint64_t)d->N, d->kc);
        const uint64_t pmem = lw_mm_bytes(p->h16, mm_kmost(L, p), pnb) + (p->rpass ? 4 : 0);
        const uint64_t dmem = lw_mm_bytes(d->h16, mm_kmost(L, d), dnb) + (d->rpass ? 4 : 0);
        if (least < step || n->mem > L->t->sram_bytes || pmem > L->t->sram_bytes || dmem > L->t->sram_bytes ||
            most * 4 + 4 > L->t->sram_bytes) {
            *d = d0;
            *n = n0;
            *p = p0;
            ts_free(cut);
            ts_free(jcut);
            continue;
        }
        ts_free(d0.cols);
        ts_free(n0.cols);
        d->mem = dmem;
        p->mem = pmem > p->mem ? pmem : p->mem;
        ts_free(j->cols);
        j->cols = jcut;
        j->ko = parts;
        j->kstep = step;
        j->h = (parts - 1) * step + 1;
        j->mem = most * 4 + 4;
    }
    return TS_OK;
}

ts_status ts_lww_place(lw *L, uint32_t *hm)
{
    const ts_wse_target *t = L->t;
    bool forks = false;
    L->decode = decoding(L);
    for (size_t i = 0; i < L->n; i++) {
        forks |= L->st[i].fork;
        L->st[i].h16 = L->h16 && L->st[i].kind == K_MM;
    }
    /* with skip paths the main band takes the top half of the rows, skip paths the bottom half */
    const uint32_t Hm = forks ? t->height / 2 : t->height;
    *hm = Hm;
    if (forks && (Hm < 1 || t->colours < 16))
        return ts_err_set(L->err, TS_EINPUT, "skip paths need 16 colours and 2 rows of PEs, the config has %u and %u",
                          t->colours, t->height);
    uint64_t fixed = 0, need = 0, avail = 0;
    ts_status rc = min_widths(L, Hm, &fixed, &need);
    if (!rc)
        rc = columns_left(L, Hm, fixed, need, &avail);
    if (!rc)
        rc = balance(L, Hm, avail);
    if (!rc)
        rc = split(L, Hm, avail);
    if (rc)
        return rc;
    latency_rows(L, Hm, avail);
    for (size_t i = 0; i < L->n; i++) {
        lw_stage *s = &L->st[i];
        if (join_narrows(L, s, L->T)) { /* one PE: the whole row in memory (lower_wse_emit.c) */
            s->G = s->w = 1;
            s->mem = (uint64_t)s->C * 4 + 8;
        }
        if (lw_join_streams(L, s)) { /* one PE, the skip path's row kept or nothing */
            s->G = s->w = 1;
            s->mem = lw_join_keeps_skip(L, s) ? (uint64_t)s->C * 4 : 0;
        }
    }
    const bool wide = attn_widths(L, Hm, true);
    /* the main band is as tall as its tallest stage: skip paths run just below it */
    rc = glu_rows(L, forks);
    if (rc)
        return rc;
    rows_in(L, glu_height(L, forks));
    norm_rows(L);
    heads_rows(L, glu_height(L, forks));
    if (forks)
        *hm = band_height(L);
    rc = elem_widths(L, *hm);
    if (rc && wide) { /* too wide: the attentions on the parts their memory needs */
        ts_err_free(L->err);
        ts_err_init(L->err);
        attn_widths(L, Hm, false);
        if (forks)
            *hm = band_height(L);
        rc = elem_widths(L, *hm);
    }
    if (!rc)
        rc = norm_widths(L, *hm);
    if (!rc)
        rc = norm_pass(L, *hm);
    if (!rc)
        pair_mem(L);
    if (!rc)
        rc = chain_cuts(L);
    return rc ? rc : spread_rows(L);
}
