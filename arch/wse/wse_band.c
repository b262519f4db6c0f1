/* arch/wse/wse_band.c — the bands and their active sets: the split of the mesh into one band of
 * rows per thread, and in each band the tiles evaluated next cycle (its own survivors and wakes,
 * the neighbouring bands' wakes of its tiles, its sleepers whose timer is due; in lockstep every
 * tile), the heap of timers of its sleepers, and the counters of the sleepers that lag.
 */
#include "arch/wse/wse_inline.h"

#include "core/alloc.h"

/* ------------------------------------------------------------------------------------------ */
/* the split */

/* Give each thread a band of consecutive PE ids (row-major), at least a row long, so a tile's
 * neighbours are in its band or the next one either side: ids of about equal weight (weight[i] for
 * the allocated tile alloc_ids[i]; NULL for equal ids). Any split gives the same results; the
 * weights only balance the work. */
void ts_wse_split_bands(ts_model *m, const uint64_t *weight)
{
    const uint64_t n = m->npes, w = m->w, nt = (uint64_t)m->nthreads;
    uint64_t total = 0, acc = 0, id = 0;
    size_t j = 0;
    for (size_t i = 0; weight && i < m->nalloc; i++)
        total += weight[i];
    for (uint64_t k = 0; k < nt; k++) {
        wse_band *b = &m->band[k];
        uint64_t id1 = n;
        if (k + 1 < nt && !weight) {
            id1 = n * (k + 1) / nt;
        } else if (k + 1 < nt) {
            uint64_t lo = id + w, hi = n - (nt - 1 - k) * w, goal = total * (k + 1) / nt;
            for (; j < m->nalloc && m->alloc_ids[j] < lo; j++)
                acc += weight[j];
            for (; j < m->nalloc && m->alloc_ids[j] < hi && acc + weight[j] / 2 <= goal; j++)
                acc += weight[j];
            id1 = j < m->nalloc && m->alloc_ids[j] < hi ? m->alloc_ids[j] : hi;
            if (id1 < lo)
                id1 = lo;
        }
        b->id0 = (uint32_t)id;
        b->id1 = (uint32_t)id1;
        b->edge_lo = k > 0 ? b->id0 + m->w : 0;
        b->edge_hi = k + 1 < nt ? b->id1 - m->w : UINT32_MAX;
        b->near_lo = k > 0 ? b->id0 + 2 * m->w : 0;
        b->near_hi = k + 1 == nt ? UINT32_MAX : b->id1 >= 2 * m->w ? b->id1 - 2 * m->w : 0;
        id = id1;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* sleepers: per band a wheel of one list per cycle for the next WSE_WHEEL cycles, a min-heap of
 * timers for the later ones. Most timers are a few cycles ahead (a vector op on memory, a task's
 * start), and the wheel takes them with no compare (before, the heap alone: 5.5 % of
 * bench_wse_stencil's host instructions). Which timers are due in a cycle is the same either way;
 * only the order in which the tiles join the active list differs, and that order changes no
 * result (wse_pe.c). */

static bool tm_less(const wse_timer *a, const wse_timer *b) { return a->at < b->at || (a->at == b->at && a->id < b->id); }

static void heap_push(wse_band *b, uint64_t at, uint32_t id)
{
    if (ts_grow((void **)&b->tm, &b->cap_tm, b->ntm + 1, sizeof *b->tm)) {
        b->oom = true;
        return;
    }
    size_t i = b->ntm++;
    b->tm[i] = (wse_timer){at, id};
    while (i && tm_less(&b->tm[i], &b->tm[(i - 1) / 2])) {
        wse_timer x = b->tm[i];
        b->tm[i] = b->tm[(i - 1) / 2];
        b->tm[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

void ts_wse_tm_push(wse_band *b, uint64_t at, uint32_t id)
{
    if (at < b->wh_base || at - b->wh_base >= WSE_WHEEL) {
        heap_push(b, at, id);
        return;
    }
    uint32_t k = (uint32_t)(at % WSE_WHEEL);
    if (b->whn[k] == b->cap_wh[k] && ts_grow((void **)&b->wh[k], &b->cap_wh[k], b->whn[k] + 1, sizeof *b->wh[k])) {
        b->oom = true;
        return;
    }
    b->wh[k][b->whn[k]++] = id;
    b->whm |= 1ull << k;
    b->nwh++;
}

size_t ts_wse_tm_count(const wse_band *b) { return b->ntm + b->nwh; }

uint64_t ts_wse_tm_first(const wse_band *b)
{
    uint64_t first = b->ntm ? b->tm[0].at : UINT64_MAX;
    if (b->nwh) {
        uint32_t r = (uint32_t)(b->wh_base % WSE_WHEEL);
        uint64_t rot = r ? b->whm >> r | b->whm << (WSE_WHEEL - r) : b->whm;
        uint64_t at = b->wh_base + (uint64_t)__builtin_ctzll(rot);
        first = at < first ? at : first;
    }
    return first;
}

void ts_wse_tm_take(wse_band *b, wse_timer *out)
{
    size_t n = 0;
    for (uint64_t c = b->wh_base; b->nwh && c < b->wh_base + WSE_WHEEL; c++) {
        uint32_t k = (uint32_t)(c % WSE_WHEEL);
        for (size_t i = 0; i < b->whn[k]; i++)
            out[n++] = (wse_timer){c, b->wh[k][i]};
        b->nwh -= b->whn[k];
        b->whn[k] = 0;
    }
    b->whm = 0;
    if (b->ntm)
        memcpy(out + n, b->tm, b->ntm * sizeof *out);
    b->ntm = 0;
}

static wse_timer tm_pop(wse_band *b)
{
    wse_timer top = b->tm[0];
    b->tm[0] = b->tm[--b->ntm];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, k = i;
        if (l < b->ntm && tm_less(&b->tm[l], &b->tm[k]))
            k = l;
        if (r < b->ntm && tm_less(&b->tm[r], &b->tm[k]))
            k = r;
        if (k == i)
            break;
        wse_timer x = b->tm[i];
        b->tm[i] = b->tm[k];
        b->tm[k] = x;
        i = k;
    }
    return top;
}

/* Sleeper id of band b, its timer at `at` due: it joins the active list of cycle `upto`. */
static inline void timer_due(ts_model *m, wse_band *b, uint64_t at, uint32_t id, uint64_t upto)
{
    wse_tile *t = m->t[id];
    b->progress++; /* a sleeper wakes: the cycle is not frozen */
    if (t->sleep_at == at)
        t->sleep_at = 0;
    if (t->stamp == upto)
        return;
    t->stamp = upto;
    next_add(b, id);
}

/* Add band b's timers due by cycle `upto` to its next active set (stamped for that cycle). */
static void timers_due(ts_model *m, wse_band *b, uint64_t upto)
{
    for (; b->nwh && b->wh_base <= upto; b->wh_base++) {
        uint32_t k = (uint32_t)(b->wh_base % WSE_WHEEL);
        for (size_t i = 0; i < b->whn[k]; i++)
            timer_due(m, b, b->wh_base, b->wh[k][i], upto);
        b->nwh -= b->whn[k];
        b->whn[k] = 0;
        b->whm &= ~(1ull << k);
    }
    if (b->wh_base <= upto)
        b->wh_base = upto + 1;
    while (b->ntm && b->tm[0].at <= upto) {
        wse_timer x = tm_pop(b);
        timer_due(m, b, x.at, x.id, upto);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the next cycle's lists */

/* Lists shorter than this are left in the order they were made: their tiles fit the host's caches. */
#ifndef WSE_SORT_MIN
#define WSE_SORT_MIN 4096
#endif

/* Move band b's next active list to the active lists of their zones in id order, through its
 * bitmap: set, then read a word at a time, a word of one zone appended whole. */
static void sort_next(wse_band *b)
{
    for (size_t i = 0; i < b->nxt.n; i++)
        b->nbm[b->nxt.v[i] >> 6] |= 1ull << (b->nxt.v[i] & 63);
    for (uint32_t w = b->id0 >> 6; w <= (b->id1 - 1) >> 6; w++) {
        uint64_t bits = b->nbm[w];
        if (!bits)
            continue;
        b->nbm[w] = 0;
        uint32_t id0 = w << 6;
        int z = zone(b, id0);
        if (z != zone(b, id0 + 63)) { /* a word across zones: tile by tile */
            for (; bits; bits &= bits - 1)
                act_add(b, id0 | (uint32_t)__builtin_ctzll(bits));
            continue;
        }
        wse_list *l = &b->act[z];
        if (l->n + 64 > l->cap && ts_grow((void **)&l->v, &l->cap, l->n + 64, sizeof *l->v)) {
            b->oom = true;
            return;
        }
        for (; bits; bits &= bits - 1)
            l->v[l->n++] = id0 | (uint32_t)__builtin_ctzll(bits);
    }
}

/* Band k's next active lists: its own survivors and wakes (listed in phase B), the neighbouring
 * bands' wakes of its tiles, and its timers due (by cycle `upto`: the next cycle, or the cycle a
 * jump goes to). Lists of WSE_SORT_MIN tiles or more are put in id order through a bitmap
 * (sort_next), so that the phases visit the tiles in the order they lie in memory (wse_load.c:
 * pack_tiles), the host's prefetchers see one stream forward, and zone I takes its phases A and B
 * in one wavefront (wse_pe.c: ts_wse_eval_commit_list); before, a radix sort (3.5 % of
 * bench_wse_stencil 100 100's host instructions). The order of the tiles changes no result. */
static void merge(ts_model *m, int k, uint64_t upto)
{
    wse_band *b = &m->band[k];
    if (m->lockstep)
        return; /* lockstep: every allocated tile of the band, every cycle */
    uint64_t stamp = b->now + 1;
    for (int o = k - 1; o <= k + 1; o += 2) {
        if (o < 0 || o >= m->nthreads)
            continue;
        const wse_band *ob = &m->band[o];
        for (size_t i = 0; i < ob->nxwake[b->par]; i++) {
            uint32_t id = ob->xwake[b->par][i];
            if (id < b->id0 || id >= b->id1)
                continue;
            wse_tile *t = m->t[id];
            if (t->stamp == stamp)
                continue;
            t->stamp = stamp;
            next_add(b, id);
        }
    }
    timers_due(m, b, stamp);
    if (upto > stamp)
        timers_due(m, b, upto);
    for (int z = 0; z < WSE_NZ; z++)
        b->act[z].n = 0;
    if (b->nxt.n >= WSE_SORT_MIN) {
        sort_next(b);
    } else if (zone(b, b->id0) == WSE_ZI && zone(b, b->id1 - 1) == WSE_ZI) {
        /* the band is all zone I (one thread): the list is the next active list as it is */
        wse_list tmp = b->act[WSE_ZI];
        b->act[WSE_ZI] = b->nxt;
        b->nxt = tmp;
    } else {
        for (size_t i = 0; i < b->nxt.n; i++)
            act_add(b, b->nxt.v[i]);
    }
    b->nxt.n = 0;
}

/* After the decision: the band's next list and cycle (every thread for its band). */
void ts_wse_band_advance(ts_model *m, int k, const wse_decision *d)
{
    wse_band *b = &m->band[k];
    if (!d->oom && d->eband < 0 && !d->done)
        merge(m, k, d->jump ? d->next : 0);
    b->now = d->next;
}

ts_status ts_wse_lockstep_lists(ts_model *m, ts_err *err)
{
    for (int k = 0; k < m->nthreads; k++) {
        wse_band *b = &m->band[k];
        for (int z = 0; z < WSE_NZ; z++)
            b->act[z].n = 0;
        for (size_t i = 0; i < m->nalloc; i++) {
            uint32_t id = m->alloc_ids[i];
            if (id >= b->id0 && id < b->id1)
                act_add(b, id);
        }
        if (b->oom)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    return TS_OK;
}

/* Band k's exact quiet test over its own tiles (lockstep: the lists do not say who is idle). Read
 * after phase B of every band, when no queue changes. */
bool ts_wse_band_quiet_exact(const ts_model *m, int k)
{
    const wse_band *b = &m->band[k];
    for (size_t i = 0; i < m->nalloc; i++) {
        uint32_t id = m->alloc_ids[i];
        if (id >= b->id0 && id < b->id1 && !tile_quiet(m, m->t[id], true))
            return false;
    }
    return true;
}

/* Bring the counters of the sleepers that lag up to cycle `upto`: a blocked tile counts its stalls
 * of the cycles before it and counts again from cycle `from` on (from > upto: the cycles between
 * are not simulated); a vector op running alone is stepped through the cycles before it. Run with
 * no thread in phase A or B, so the counters are exact for the cycles simulated (reports, activity
 * windows). */
void ts_wse_settle_blocked(ts_model *m, uint64_t upto, uint64_t from)
{
    for (size_t i = 0; i < m->nalloc; i++) {
        wse_tile *t = m->t[m->alloc_ids[i]];
        if (t->blk) {
            count_router_sleep(t, upto - t->blk);
            count_stall(t, t->blk_why, upto - t->blk);
            t->blk = from;
        }
        if (t->vfrom) { /* on a timer no later than its last step (the cycle after it when the core
                         * waits on it: then the catch-up ends it), so never skips cycles */
            count_router_sleep(t, upto - t->vfrom);
            ts_wse_vec_catch_up(m, t, &m->band[0], upto);
        }
    }
}
