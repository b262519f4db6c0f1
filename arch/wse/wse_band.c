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
/* sleepers: a min-heap of timers per band */

static bool tm_less(const wse_timer *a, const wse_timer *b) { return a->at < b->at || (a->at == b->at && a->id < b->id); }

void ts_wse_tm_push(wse_band *b, uint64_t at, uint32_t id)
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

/* Add band b's timers due by cycle `upto` to its active list (stamped for that cycle). */
static void timers_due(ts_model *m, wse_band *b, uint64_t upto, bool now)
{
    while (b->ntm && b->tm[0].at <= upto) {
        wse_timer x = tm_pop(b);
        wse_tile *t = m->t[x.id];
        b->progress++; /* a sleeper wakes: the cycle is not frozen */
        if (t->sleep_at == x.at)
            t->sleep_at = 0;
        if (t->stamp == upto)
            continue;
        t->stamp = upto;
        if (now)
            act_add(b, x.id);
        else
            next_add(b, x.id);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the next cycle's lists */

/* Band k's next active lists: its own survivors and wakes (listed in phase B), the neighbouring
 * bands' wakes of its tiles, and its timers due. */
static void merge(ts_model *m, int k)
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
    timers_due(m, b, stamp, false);
    for (int z = 0; z < WSE_NZ; z++) {
        wse_list tmp = b->act[z];
        b->act[z] = b->next[z];
        b->next[z] = tmp;
        b->next[z].n = 0;
    }
}

/* Lists shorter than this are left in the order they were made: their tiles fit the host's caches. */
#ifndef WSE_SORT_MIN
#define WSE_SORT_MIN 4096
#endif

/* Sort active list l of band b by PE id (LSD radix sort, 11 bits a pass), so that phases A and B
 * visit the tiles in the order they lie in memory (wse_load.c: pack_tiles) and the host's prefetchers
 * see one stream forward instead of jumps: survivors, wakes and timers come in the order of
 * phase B, the wakes of a row's neighbours a row apart. The order of the tiles changes no result
 * (wse_pe.c); out of memory for the scratch list, the list stays as it is. */
static void sort_list(wse_band *b, wse_list *l)
{
    if (l->n < WSE_SORT_MIN ||
        (b->cap_sort < l->n && ts_grow((void **)&b->sort, &b->cap_sort, l->n, sizeof *b->sort)))
        return;
    uint32_t *src = l->v, *dst = b->sort;
    uint32_t bits = 32 - (uint32_t)__builtin_clz(b->id1 | 1);
    uint32_t cnt[2048];
    for (uint32_t sh = 0; sh < bits; sh += 11) {
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < l->n; i++)
            cnt[src[i] >> sh & 2047]++;
        for (uint32_t d = 0, sum = 0; d < 2048; d++) {
            uint32_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < l->n; i++)
            dst[cnt[src[i] >> sh & 2047]++] = src[i];
        uint32_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != l->v) { /* the sorted ids are in the scratch list: trade the two */
        size_t cap = l->cap;
        b->sort = l->v;
        l->v = src;
        l->cap = b->cap_sort;
        b->cap_sort = cap;
    }
}

/* After the decision: the band's next list and cycle (every thread for its band). */
void ts_wse_band_advance(ts_model *m, int k, const wse_decision *d)
{
    wse_band *b = &m->band[k];
    if (!d->oom && d->eband < 0 && !d->done) {
        merge(m, k);
        if (d->jump)
            timers_due(m, b, d->next, true);
        for (int z = 0; z < WSE_NZ && !m->lockstep; z++)
            sort_list(b, &b->act[z]);
    }
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
        if (t->vfrom) { /* on a timer no later than its last step, so never skips cycles */
            count_router_sleep(t, upto - t->vfrom);
            ts_wse_vec_catch_up(m, t, &m->band[0], upto);
        }
    }
}
