/* workloads/ipu/plan_t10.c — compute-shift plans for MatMul: enumeration, memory, cost, Pareto set.
 * See plan_t10.h for the plan space and docs/lowering-ipu.md ("Planner (b)") for the figures. */
#include "workloads/ipu/plan_t10.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/lower/geometry.h"

static uint64_t even(uint64_t v) { return v + (v & 1); }

static uint32_t ilog2c(uint32_t v) /* ceil(log2 v) */
{
    uint32_t l = 0;
    while ((1u << l) < v)
        l++;
    return l;
}

/* The lowering's AMP kernel (emit_mm): each worker runs ceil(rows / workers) rows; per row 4
 * issues, per group of U outputs U/2 + 1 setup and loop issues, (U + 2) per input pair
 * (U/2 ld128putcs, U/2 pointer steps, ld64step, f32v2amp), U/2 ampget, U stores and a step; a
 * worker issues every `workers` cycles. Plus about 20 issues to start the run. */
uint64_t ts_t10_amp_cycles(const ts_t10_hw *hw, uint64_t rows, uint64_t k, uint64_t cols)
{
    uint64_t U = hw->units, W = hw->workers ? hw->workers : 6;
    uint64_t groups = ts_geom_cdiv(cols, U), pairs = k / 2;
    uint64_t per_group = pairs * (U + 2) + U / 2 + U + 4;
    return W * (ts_geom_cdiv(rows, W) * (4 + groups * per_group) + 20);
}

bool ts_t10_amp_body(uint32_t W, uint32_t U, uint32_t *sets, uint32_t *issues, uint32_t *ptrs)
{
    if (U < 2 || U > 16 || U % 2 || W < 2 || W > 16)
        return false;
    uint32_t len = U / 2 + W, g = len, b = W; /* a set: its U/2 loads and the W workers' AMP ops */
    while (b) {
        uint32_t r = g % b;
        g = b;
        b = r;
    }
    uint32_t S = W / g, I = len / g;            /* a super-period of lcm(len, W) cycles */
    uint32_t B = S % 2 ? 2 : 1, nA = B * S, nP = B * (I - S), fit = nA - nA / 2;
    *sets = nA;
    if (U > 8) { /* one post-incremented pointer, stepped between groups */
        *issues = B * I;
        *ptrs = 1;
        return B * I <= 64 && 2 * nA <= 16;
    }
    *issues = B * I + (nP > fit ? nP - fit : 0); /* pointer steps beyond the even sets' bundles */
    *ptrs = nP;
    return nP <= 4 && B * I <= 64 && 2 * nA <= 16;
}

/* Per tile: the workers aligned and dispatched (about 25 + 2W issues with the row pointers); per
 * row the coefficient pointers and 7 issues; per group of U outputs zeroing, the first input loads
 * (sets/2), the repeat, the bodies, U/2 ampget, U stores and 2 issues; a worker issues every W
 * cycles. */
uint64_t ts_t10_amp_shared_cycles(const ts_t10_hw *hw, uint64_t rows, uint64_t k, uint64_t cols)
{
    uint32_t U = hw->units, W = hw->workers ? hw->workers : 6, sets, issues, ptrs;
    uint64_t pairs = k / 2;
    if (!hw->shared_amp || !ts_t10_amp_body(W, U, &sets, &issues, &ptrs) || !pairs || k % 2 || pairs % sets)
        return 0;
    uint64_t nb = pairs / sets, groups = ts_geom_cdiv(cols, U);
    /* U > 8: the pointer stepped to the next group's blocks (1), and 5 issues to set its steps up */
    uint64_t per_group = 2 + sets / 2 + (nb > 1) + nb * issues + U / 2 + U + 2 + (U > 8);
    return W * (ts_geom_cdiv(rows, W) * (ptrs + 7 + groups * per_group) + 25 + 2 * (uint64_t)W + (U > 8 ? 5 : 0));
}

uint64_t ts_t10_steps_cycles_padded(const ts_t10_hw *hw, uint64_t rows, uint64_t kt, uint64_t kp, uint32_t steps,
                                    uint64_t cols)
{
    uint32_t W = hw->workers ? hw->workers : 6, sets, issues, ptrs;
    uint64_t full = ts_t10_amp_shared_cycles(hw, rows, kp, cols);
    if (!full || !ts_t10_amp_body(W, hw->units, &sets, &issues, &ptrs))
        return ts_t10_steps_cycles(hw, rows, kt, kp, steps, cols);
    uint64_t kl = kt - (steps - 1) * kp, u = 2 * (uint64_t)sets, kb = ts_geom_cdiv(kl, u) * u;
    return (steps - 1) * full + ts_t10_amp_shared_cycles(hw, rows, kb < kp ? kb : kp, cols);
}

uint64_t ts_t10_steps_cycles(const ts_t10_hw *hw, uint64_t rows, uint64_t kt, uint64_t kp, uint32_t steps, uint64_t cols)
{
    uint64_t full = ts_t10_amp_shared_cycles(hw, rows, kp, cols);
    if (!full)
        return steps * ts_t10_amp_cycles(hw, rows, kp, cols);
    uint64_t kl = kt - (steps - 1) * kp, last = kl == kp ? full : ts_t10_amp_shared_cycles(hw, rows, kl, cols);
    return (steps - 1) * full + (last ? last : ts_t10_amp_cycles(hw, rows, kl, cols));
}

/* Gathering A (a graph input, or an output in another layout: chunks of whole rows, at least 1024
 * elements or all rows, over the tiles) into tiles of `rows` rows each, every row wanted by
 * `copies` tiles. As the lowering's gather schedules it (workloads/ipu/lower_ipu_exchange.c), a receiver takes
 * one source per round, and in a round every copy of a chunk is sent by its holder one after the
 * other: rounds x (chunk bytes x copies) at the exchange rate, plus a round's fixed cost. */
static void gather_cost(const ts_t10_hw *hw, const ts_t10_mm *mm, uint64_t rows, uint64_t copies, uint64_t *cycles,
                        uint32_t *rounds)
{
    uint64_t crow = ts_geom_cdiv(mm->m, hw->tiles);
    if (crow * mm->k < 1024)
        crow = ts_geom_cdiv(1024, mm->k);
    if (crow > mm->m)
        crow = mm->m;
    uint64_t r = ts_geom_cdiv(rows, crow) + (rows % crow && crow % rows ? 1 : 0);
    uint64_t xb = hw->xbytes ? hw->xbytes : 4;
    *rounds = (uint32_t)r;
    *cycles = r * (ts_geom_cdiv(crow * mm->k * mm->es * copies, xb) + hw->round_cycles);
}

/* Rows of A a holder holds (a graph input's chunks: at least 1024 elements of whole rows). */
static uint64_t chunk_rows(const ts_t10_hw *hw, const ts_t10_mm *mm)
{
    uint64_t crow = ts_geom_cdiv(mm->m, hw->tiles);
    if (crow * mm->k < 1024)
        crow = ts_geom_cdiv(1024, mm->k);
    return crow > mm->m ? mm->m : crow;
}

bool ts_t10_pads_a(const ts_t10_hw *hw, const ts_t10_mm *mm, const ts_t10_plan *p)
{
    return (p->rot & TS_T10_ROT_A) || (uint64_t)p->steps * p->kp <= p->kt || chunk_rows(hw, mm) == 1;
}

void ts_t10_gather_packed(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan *p)
{
    uint64_t old, crow = ts_geom_cdiv(mm->m, hw->tiles);
    uint32_t rounds;
    bool rota = p->rot & TS_T10_ROT_A;
    gather_cost(hw, mm, p->rows, rota ? p->fn / p->ft : p->fn, &old, &rounds);
    if (crow * mm->k < 1024)
        crow = ts_geom_cdiv(1024, mm->k);
    if (crow > mm->m)
        crow = mm->m;
    /* a holder's chunk goes to the fn tiles of every row block it meets */
    uint64_t xb = hw->xbytes ? hw->xbytes : 4, recv = p->fn * ts_geom_cdiv(crow + p->rows - 1, p->rows);
    uint64_t n = rounds > recv ? rounds : recv;
    uint64_t packed = n * (rota ? p->rp : 1), piece = crow * (rota ? p->kp : p->kt) * mm->es;
    uint64_t in = packed * (ts_geom_cdiv(piece, xb) + hw->round_cycles);
    if (in + packed * hw->sync_cycles >= old + (uint64_t)rounds * hw->sync_cycles)
        return; /* the lowering keeps the rounds unpacked (gather_pack) */
    p->exchange_cycles = p->exchange_cycles - p->in_cycles + in;
    p->in_cycles = in;
    p->syncs = (uint32_t)(p->syncs - rounds + packed);
    p->sync_cycles = (uint64_t)p->syncs * hw->sync_cycles;
    p->cycles = p->compute_cycles + p->exchange_cycles + p->sync_cycles;
}

ts_status ts_t10_mm_cost(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan *p, ts_err *err)
{
    if (!p->fm || !p->fn || !p->fk || !p->ft || !p->rp || p->rot > TS_T10_ROT_AB)
        return ts_err_set(err, TS_EINPUT, "plan: factors must be at least 1 and rot one of none, A, B, AB");
    uint64_t tiles = (uint64_t)p->fm * p->fn * p->fk;
    if (tiles > hw->tiles)
        return ts_err_set(err, TS_EINPUT, "plan: %llu tiles, the chip has %u", (unsigned long long)tiles, hw->tiles);
    if (p->fm > mm->m || p->fn > ts_geom_cdiv(mm->n, hw->units) || p->fk > mm->k / 2)
        return ts_err_set(err, TS_EINPUT, "plan: a spatial factor larger than its dimension");
    if (p->rot == TS_T10_ROT_NONE && (p->ft != 1 || p->rp != 1))
        return ts_err_set(err, TS_EINPUT, "plan: ft and rp must be 1 when nothing rotates");
    /* a rotating A is shared by the fn tiles of its rows, a rotating B by the fm tiles of its columns */
    if (((p->rot & TS_T10_ROT_A) && p->fn % p->ft) || ((p->rot & TS_T10_ROT_B) && p->fm % p->ft))
        return ts_err_set(err, TS_EINPUT, "plan: ft %u does not divide the ring of the rotating operand", p->ft);
    p->tiles = (uint32_t)tiles;
    p->steps = p->ft * p->rp;
    p->rows = ts_geom_cdiv(mm->m, p->fm);
    p->cols = ts_geom_cdiv(ts_geom_cdiv(mm->n, p->fn), hw->units) * hw->units; /* whole AMP groups */
    p->kt = even(ts_geom_cdiv(mm->k, p->fk));
    p->kp = even(ts_geom_cdiv(p->kt, p->steps));
    uint32_t sets, issues, ptrs; /* steps of whole shared-kernel bodies where that keeps the steps */
    if (p->bodies && hw->shared_amp && (p->steps > 1 || (mm->es == 2 && (chunk_rows(hw, mm) == 1 || mm->built))) &&
        ts_t10_amp_body(hw->workers ? hw->workers : 6, hw->units, &sets, &issues, &ptrs)) {
        uint64_t u = (uint64_t)sets * (mm->es == 2 ? 4 : 2), kb = ts_geom_cdiv(p->kp, u) * u;
        if (ts_geom_cdiv(p->kt, kb) == p->steps)
            p->kp = kb;
    }
    if (ts_geom_cdiv(p->kt, p->kp) != p->steps)
        return ts_err_set(err, TS_EINPUT, "plan: %u steps but only %llu pairs of k per tile", p->steps,
                          (unsigned long long)(p->kt / 2));
    uint64_t es = mm->es, held = p->kp * p->rp; /* k of a held sub-tensor: kt / ft */
    /* f16 whose k per step is whole bodies: the last slice is padded to whole bodies (so is A's row) */
    uint64_t ka = mm->es == 2 && p->steps * p->kp > p->kt && (chunk_rows(hw, mm) == 1 || (mm->built && p->steps == 1))
                      ? p->steps * p->kp
                      : p->kt;
    uint64_t a = p->rows * ((p->rot & TS_T10_ROT_A) ? held + p->kp : ka);
    uint64_t b = p->cols * ((p->rot & TS_T10_ROT_B) ? held + p->kp : p->kt);
    uint32_t levels = ilog2c(p->fk);
    uint64_t out = p->rows * p->cols * (levels ? 8 : es); /* f32 partials and their receive buffer */
    p->mem_bytes = (a + b) * es + out;
    p->shift_bytes = (((p->rot & TS_T10_ROT_A) ? p->rows : 0) + ((p->rot & TS_T10_ROT_B) ? p->cols : 0)) * p->kp * es;
    uint64_t xb = hw->xbytes ? hw->xbytes : 4, words = p->rows * p->cols;
    p->compute_cycles = ts_t10_steps_cycles(hw, p->rows, p->kt, p->kp, p->steps, p->cols) + levels * 4 * words;
    p->w_bytes = b * es;
    /* A gathered into the plan's layout: each row on fn tiles, fn / ft when A rotates */
    uint32_t rounds;
    gather_cost(hw, mm, p->rows, (p->rot & TS_T10_ROT_A) ? p->fn / p->ft : p->fn, &p->in_cycles, &rounds);
    p->exchange_cycles = p->in_cycles + (p->steps - 1) * (ts_geom_cdiv(p->shift_bytes, xb) + hw->round_cycles) +
                         levels * (ts_geom_cdiv(words * 4, xb) + hw->round_cycles);
    /* a superstep per gather round, compute step, shift and partial-sum level */
    p->syncs = rounds + 2 * p->steps - 1 + levels;
    p->sync_cycles = (uint64_t)p->syncs * hw->sync_cycles;
    p->cycles = p->compute_cycles + p->exchange_cycles + p->sync_cycles;
    return TS_OK;
}

/* Tile counts giving distinct blocks of `units` units: ceil(units / b) for every block size b. */
static size_t spans(uint64_t units, uint32_t cap, uint32_t *v)
{
    size_t n = 0;
    for (uint64_t b = units; b >= 1; b--) {
        uint64_t f = ts_geom_cdiv(units, b);
        if (f > cap)
            break;
        if (!n || v[n - 1] != f)
            v[n++] = (uint32_t)f;
    }
    return n;
}

ts_status ts_t10_mm_plans(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan **out, size_t *n, ts_err *err)
{
    *out = NULL;
    *n = 0;
    if (!mm->m || mm->k < 2 || !mm->n || !mm->es || !hw->tiles || !hw->units)
        return ts_err_set(err, TS_EINPUT, "plan: an empty MatMul or chip");
    uint32_t cap = hw->tiles;
    uint32_t *vm = ts_calloc(cap + 1, sizeof *vm), *vn = ts_calloc(cap + 1, sizeof *vn);
    ts_t10_plan *v = NULL;
    size_t nv = 0, capv = 0;
    ts_status rc = TS_OK;
    if (!vm || !vn) {
        rc = ts_err_set(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    size_t nm = spans(mm->m, cap, vm), nn = spans(ts_geom_cdiv(mm->n, hw->units), cap, vn);
    for (size_t i = 0; i < nm; i++)
        for (size_t j = 0; j < nn; j++)
            for (uint32_t fk = 1; (uint64_t)vm[i] * vn[j] * fk <= cap && fk <= mm->k / 2; fk *= 2)
                for (uint32_t rot = 0; rot <= TS_T10_ROT_AB; rot++) {
                    uint32_t ring = rot == TS_T10_ROT_A ? vn[j] : rot == TS_T10_ROT_B ? vm[i] : vm[i] < vn[j] ? vm[i] : vn[j];
                    for (uint32_t ft = rot ? 2 : 1; ft <= ring; ft++) {
                        if (rot && ((rot & TS_T10_ROT_A) ? vn[j] % ft : 0))
                            continue;
                        if (rot && ((rot & TS_T10_ROT_B) ? vm[i] % ft : 0))
                            continue;
                        for (uint32_t rp = 1; rp <= (rot ? 16u : 1u); rp *= 2) {
                            ts_t10_plan p = {.fm = vm[i], .fn = vn[j], .fk = fk, .ft = rot ? ft : 1, .rp = rp, .rot = rot};
                            if (ts_t10_mm_cost(hw, mm, &p, NULL) != TS_OK || p.mem_bytes > hw->sram_bytes)
                                continue;
                            if (ts_grow((void **)&v, &capv, nv + 1, sizeof *v)) {
                                rc = ts_err_set(err, TS_ENOMEM, "out of memory");
                                goto done;
                            }
                            v[nv++] = p;
                            ts_t10_plan q = {.fm = p.fm, .fn = p.fn, .fk = fk, .ft = p.ft, .rp = rp, .rot = rot, .bodies = true};
                            if (!hw->shared_amp || ts_t10_mm_cost(hw, mm, &q, NULL) != TS_OK || q.kp == p.kp ||
                                q.mem_bytes > hw->sram_bytes)
                                continue;
                            if (ts_grow((void **)&v, &capv, nv + 1, sizeof *v)) {
                                rc = ts_err_set(err, TS_ENOMEM, "out of memory");
                                goto done;
                            }
                            v[nv++] = q; /* the same with k per step in whole shared-kernel bodies */
                        }
                        if (!rot)
                            break;
                    }
                }
    if (!nv)
        rc = ts_err_set(err, TS_EINPUT, "plan: no plan of MatMul %llux%llux%llu fits %llu bytes per tile",
                        (unsigned long long)mm->m, (unsigned long long)mm->k, (unsigned long long)mm->n,
                        (unsigned long long)hw->sram_bytes);
done:
    ts_free(vm);
    ts_free(vn);
    if (rc != TS_OK) {
        ts_free(v);
        return rc;
    }
    *out = v;
    *n = nv;
    return TS_OK;
}

static int cmp_key(const ts_t10_plan *a, const ts_t10_plan *b)
{
    const uint32_t ka[8] = {a->fm, a->fn, a->fk, a->ft, a->rp, a->rot, a->lcs, a->share};
    const uint32_t kb[8] = {b->fm, b->fn, b->fk, b->ft, b->rp, b->rot, b->lcs, b->share};
    for (int i = 0; i < 8; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

static int cmp_mem(const void *x, const void *y)
{
    const ts_t10_plan *a = x, *b = y;
    if (a->mem_bytes != b->mem_bytes)
        return a->mem_bytes < b->mem_bytes ? -1 : 1;
    if (a->cycles != b->cycles)
        return a->cycles < b->cycles ? -1 : 1;
    return cmp_key(a, b);
}

size_t ts_t10_pareto(ts_t10_plan *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_mem);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || v[i].cycles < v[k - 1].cycles)
            v[k++] = v[i];
    return k;
}

static int cmp_w(const void *x, const void *y)
{
    const ts_t10_plan *a = x, *b = y;
    if (a->w_bytes != b->w_bytes)
        return a->w_bytes < b->w_bytes ? -1 : 1;
    return cmp_mem(x, y);
}

size_t ts_t10_pareto_weights(ts_t10_plan *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_w);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || v[i].cycles < v[k - 1].cycles)
            v[k++] = v[i];
    return k;
}

const ts_t10_plan *ts_t10_pick(const ts_t10_plan *pareto, size_t n, uint64_t mem_limit)
{
    const ts_t10_plan *best = NULL;
    for (size_t i = 0; i < n && pareto[i].mem_bytes <= mem_limit; i++)
        best = &pareto[i]; /* memory ascending, cycles descending */
    return best;
}

void ts_t10_mm_lcs(const ts_t10_hw *hw, const ts_t10_mm *mm, ts_t10_plan *p)
{
    uint64_t U = hw->units, T = hw->tiles, K = mm->k, M = mm->m, es = mm->es;
    uint64_t nq = ts_geom_cdiv(mm->n, U), kp = K / 2;
    uint64_t qpb = nq;
    while (qpb > 1 && qpb * kp * U * 8 > hw->sram_bytes / 4)
        qpb = ts_geom_cdiv(qpb, 2);
    uint64_t ncb = ts_geom_cdiv(nq, qpb);
    if (ncb > T)
        ncb = T, qpb = ts_geom_cdiv(nq, ncb), ncb = ts_geom_cdiv(nq, qpb);
    uint64_t rp = ts_geom_cdiv(M, T / ncb), nrg = ts_geom_cdiv(M, rp);
    memset(p, 0, sizeof *p);
    p->lcs = true;
    p->share = 4;
    p->fm = (uint32_t)nrg;
    p->fn = (uint32_t)ncb;
    p->fk = p->ft = p->rp = p->steps = 1;
    p->tiles = (uint32_t)(nrg * ncb);
    p->rows = rp;
    p->cols = qpb * U;
    p->kt = p->kp = K;
    uint32_t rounds;
    gather_cost(hw, mm, rp, ncb, &p->in_cycles, &rounds);
    p->w_bytes = qpb * U * K * es;
    p->mem_bytes = (rp * K + rp * p->cols) * es + p->w_bytes;
    uint64_t shared = es == 4 ? ts_t10_amp_shared_cycles(hw, rp, K, p->cols) : 0;
    p->compute_cycles = shared ? shared : ts_t10_amp_cycles(hw, rp, K, p->cols);
    p->exchange_cycles = p->in_cycles;
    p->syncs = rounds + 1;
    p->sync_cycles = (uint64_t)p->syncs * hw->sync_cycles;
    p->cycles = p->compute_cycles + p->exchange_cycles + p->sync_cycles;
}

static uint64_t total_mem(const ts_t10_plan *const *sets, size_t nops, const size_t *pick)
{
    uint64_t w = 0, dyn = 0;
    for (size_t i = 0; i < nops; i++) {
        const ts_t10_plan *p = &sets[i][pick[i]];
        w += p->w_bytes;
        if (p->mem_bytes - p->w_bytes > dyn)
            dyn = p->mem_bytes - p->w_bytes;
    }
    return w + dyn;
}

ts_status ts_t10_reconcile(const ts_t10_plan *const *sets, const size_t *nsets, size_t nops, uint64_t budget,
                           size_t *pick, uint64_t *total_bytes, ts_err *err)
{
    for (size_t i = 0; i < nops; i++) {
        if (!nsets[i])
            return ts_err_set(err, TS_EINPUT, "plan: operator %zu has no plan", i);
        pick[i] = nsets[i] - 1;
    }
    uint64_t total = total_mem(sets, nops, pick);
    while (total > budget) {
        size_t best = nops, best_j = 0;
        double best_rate = 0;
        uint64_t best_total = 0;
        for (size_t i = 0; i < nops; i++) {
            size_t at = pick[i];
            for (size_t j = 0; j < at; j++) { /* any smaller plan: the dynamic part need not shrink with it */
                pick[i] = j;
                uint64_t t = total_mem(sets, nops, pick);
                pick[i] = at;
                if (t >= total)
                    continue;
                double rate = (double)(sets[i][j].cycles - sets[i][at].cycles) / (double)(total - t);
                if (best == nops || rate < best_rate)
                    best = i, best_j = j, best_rate = rate, best_total = t;
            }
        }
        if (best == nops)
            return ts_err_set(err, TS_EINPUT, "plan: the operators need %llu bytes per tile at least, the budget is %llu",
                              (unsigned long long)total, (unsigned long long)budget);
        pick[best] = best_j;
        total = best_total;
    }
    if (total_bytes)
        *total_bytes = total;
    return TS_OK;
}

/* The part of plan q that is not weights (held only while its operator runs). */
static uint64_t dyn_bytes(const ts_t10_plan *q) { return q->mem_bytes > q->w_bytes ? q->mem_bytes - q->w_bytes : 0; }

/* ts_t10_reconcile_capped: plan_t10.h. */
bool ts_t10_reconcile_capped(ts_t10_plan *const *all, const size_t *nall, size_t nops, uint64_t budget, ts_t10_plan *chosen,
                             uint64_t *total)
{
    size_t n = 0;
    for (size_t k = 0; k < nops; k++)
        n += nall[k];
    ts_t10_plan **sub = ts_calloc(nops ? nops : 1, sizeof *sub);
    ts_t10_plan *pool = ts_calloc(n ? n : 1, sizeof *pool);
    uint64_t *mem = ts_calloc(n ? n : 1, sizeof *mem), best = UINT64_MAX;
    size_t *nsub = ts_calloc(nops ? nops : 1, sizeof *nsub), *pick = ts_calloc(nops ? nops : 1, sizeof *pick);
    for (uint64_t c = 15; sub && pool && mem && nsub && pick && c > 0; c--) {
        uint64_t cap = budget / 16 * c, cycles = 0, t = 0;
        size_t at = 0;
        bool every = true;
        for (size_t k = 0; k < nops && every; k++) {
            sub[k] = &pool[at];
            size_t m = 0;
            for (size_t j = 0; j < nall[k]; j++)
                if (dyn_bytes(&all[k][j]) <= cap)
                    sub[k][m++] = all[k][j];
            nsub[k] = m ? ts_t10_pareto_weights(sub[k], m) : 0;
            for (size_t j = 0; j < nsub[k]; j++) { /* each as if it took the cap besides its weights */
                mem[at + j] = sub[k][j].mem_bytes;
                sub[k][j].mem_bytes = sub[k][j].w_bytes + cap;
            }
            at += m;
            every = nsub[k] > 0;
        }
        if (!every || ts_t10_reconcile((const ts_t10_plan *const *)sub, nsub, nops, budget, pick, &t, NULL) != TS_OK)
            continue;
        for (size_t k = 0; k < nops; k++)
            cycles += sub[k][pick[k]].cycles;
        if (cycles >= best)
            continue;
        best = cycles;
        for (size_t k = 0; k < nops; k++) {
            chosen[k] = sub[k][pick[k]];
            chosen[k].mem_bytes = mem[(size_t)(&sub[k][pick[k]] - pool)];
        }
        if (total)
            *total = t;
    }
    ts_free(sub);
    ts_free(pool);
    ts_free(mem);
    ts_free(nsub);
    ts_free(pick);
    return best != UINT64_MAX;
}

ts_t10_mm ts_t10_conv_as_mm(uint64_t c, uint64_t ho, uint64_t wo, uint64_t m_out, uint64_t kh, uint64_t kw, uint32_t es)
{
    return (ts_t10_mm){.m = ho * wo, .k = c * kh * kw, .n = m_out, .es = es};
}
