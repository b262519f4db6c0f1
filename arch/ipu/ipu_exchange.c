/* arch/ipu/ipu_exchange.c — the interconnect: send-to-arrival latency between tiles, the exchange
 * spine's buffered stage (the delay a crowded column adds to its words) and the check at each
 * sync that the superstep's words all found their receiver. Sends and receives themselves are
 * instructions (ipu_exec.c); the words are committed between rounds (ipu_threads.c).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "arch/ipu/ipu.h"
#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"
#include "core/sim.h"

uint64_t ts_ipu_latency(const void *cfgp, uint32_t s, uint32_t d)
{
    const ts_ipu_cfg *c = cfgp;
    int64_t cs, rs, cd, rd;
    tile_pos(c, s, &cs, &rs);
    tile_pos(c, d, &cd, &rd);
    int64_t dg = cs / (int64_t)c->columns_per_group - cd / (int64_t)c->columns_per_group;
    int64_t dr = rs - rd;
    return c->lat_base + c->lat_per_group * (uint64_t)llabs(dg) + c->lat_per_row * (uint64_t)llabs(dr);
}

/* The exchange spine (research §1.2 HC33: an exchange spine in a fishbone layout; §2.4, §3.3 CIT:
 * columns give the fastest paths, crossing between groups costs more; §3.1 #14: latency +24 %
 * under full load). A word that leaves its column group (or is broadcast) enters the spine
 * through its column's port. Up to exchange.spine_port_words such words of one column in one
 * cycle go straight through; when more leave in the same cycle, all of them take the column's
 * buffered stage, exchange.spine_buffer_cycles longer. The stage keeps the column's words in
 * order and passes one send cycle's words per cycle: words sent in a later cycle enter the
 * spine at least a cycle after the column's previous ones, so a word right after a crowded
 * cycle waits for the buffer to drain, and no receiver gets two words of one sender in a cycle.
 * Bandwidth is unchanged (the stage is pipelined: any pattern still moves a word per tile per
 * cycle), only latency grows with load.
 *
 * The delay depends only on the words the column sent, in cycle order, so it is computed for
 * the words sent before h, once every tile has passed h (every word sent before h is in the
 * logs then): the result does not depend on rounds or threads. Each column belongs to one
 * thread (thread_range). The receiver sees a word at t + delay + L(s, d); until its delay is
 * set a word cannot arrive inside the round (t >= the round's start, L >= the window). */
/* A word leaves its column group: broadcast, or to a tile of another group (tgroup). */
static inline bool crosses(const ts_model *m, int32_t dst, uint32_t group)
{
    return dst < 0 || m->tgroup[dst] != group;
}

void ts_ipu_spine_column(ts_model *m, uint32_t col, uint64_t h)
{
    const uint64_t tpc = m->c.tiles_per_column;
    uint32_t lo = (uint32_t)(col * tpc), hi = (uint32_t)((col + 1) * tpc < m->ntiles ? (col + 1) * tpc : m->ntiles);
    uint32_t group = m->tgroup[lo];
    bool any = false; /* a word to set that enters the spine: else every delay stays 0 */
    for (uint32_t i = lo; i < hi && !any; i++) {
        const ipu_tile *t = &m->t[i];
        for (size_t k = t->fin; k < t->log.n && t->log.v[k].t < h && !any; k++)
            any = crosses(m, t->log.v[k].dst, group);
    }
    if (!any) {
        for (uint32_t i = lo; i < hi; i++) {
            ipu_tile *t = &m->t[i];
            while (t->fin < t->log.n && t->log.v[t->fin].t < h)
                t->fin++;
        }
        return;
    }
    for (;;) {
        /* the earliest send cycle still without delays, and the column's words that enter the
         * spine then (counted for the earliest cycle seen so far, restarted when one is earlier) */
        uint64_t tmin = UINT64_MAX, crossing = 0;
        for (uint32_t i = lo; i < hi; i++) {
            const ipu_tile *t = &m->t[i];
            if (t->fin >= t->log.n)
                continue;
            uint64_t t0 = t->log.v[t->fin].t;
            if (t0 >= h || t0 > tmin)
                continue;
            if (t0 < tmin) {
                tmin = t0;
                crossing = 0;
            }
            for (size_t k = t->fin; k < t->log.n && t->log.v[k].t == t0; k++)
                crossing += crosses(m, t->log.v[k].dst, group);
        }
        if (tmin == UINT64_MAX)
            return;
        uint64_t e = tmin + (crossing > m->c.spine_port_words ? m->c.spine_buffer_cycles : 0);
        if (crossing && e < m->spine_e[col])
            e = m->spine_e[col];
        if (crossing)
            m->spine_e[col] = e + 1;
        for (uint32_t i = lo; i < hi; i++) {
            ipu_tile *t = &m->t[i];
            for (; t->fin < t->log.n && t->log.v[t->fin].t == tmin; t->fin++) {
                ipu_word *w = &t->log.v[t->fin];
                bool x = crosses(m, w->dst, group);
                w->delay = x ? (uint32_t)(e - tmin) : 0;
            }
        }
    }
}

/* Set the spine delay of every word still without one: when no tile will send again before
 * the words are checked (at a barrier, at the end, when every tile waits). A column whose tiles
 * were all at the sync or done after the last round had them set then (spine_final). */
static void spine_all(ts_model *m)
{
    for (uint32_t col = 0; col < m->ncols; col++)
        if (!m->spine_final[col]) { /* else the commit phase set them (finish_range) */
            ts_ipu_visits(m, m->c.tiles_per_column);
            ts_ipu_spine_column(m, col, UINT64_MAX);
        }
}

static int cmp_u64x3(const void *pa, const void *pb)
{
    const uint64_t *a = pa, *b = pb;
    for (int i = 0; i < 3; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Check the superstep's unicast words: no two senders into one receiver in one cycle, and every
 * word received. */
ts_status ts_ipu_check_exchange(ts_model *m, ts_err *err)
{
    spine_all(m); /* no tile sends again before this check: every word's arrival is known */
    /* Two senders into one receiver in one cycle leave at least one word unclaimed (the input
     * selects one sender), so when every word was received there is nothing to sort. The
     * threads' summaries of the round just run count the words sent and received. */
    uint64_t uni = 0, claims = 0;
    for (int i = 0; i < m->nthreads; i++) {
        uni += m->tsum[i].uni;
        claims += m->tsum[i].claims;
    }
    if (uni == claims)
        return TS_OK;
    size_t n = 0;
    for (uint32_t s = 0; s < m->ntiles; s++)
        for (size_t i = 0; i < m->t[s].log.n; i++)
            n += m->t[s].log.v[i].dst >= 0;
    uint64_t (*v)[4] = ts_malloc(n * sizeof *v);
    if (!v)
        return ts_err_set(err, TS_ENOMEM, "out of memory checking the exchange");
    size_t k = 0;
    for (uint32_t s = 0; s < m->ntiles; s++)
        for (size_t i = 0; i < m->t[s].log.n; i++) {
            const ipu_word *w = &m->t[s].log.v[i];
            if (w->dst < 0)
                continue;
            v[k][0] = (uint64_t)w->dst;
            v[k][1] = w->t + w->delay + ts_ipu_latency(&m->c, s, (uint32_t)w->dst);
            v[k][2] = s;
            v[k][3] = w->claimed;
            k++;
        }
    qsort(v, n, sizeof *v, cmp_u64x3);
    ts_status rc = TS_OK;
    for (size_t i = 0; i + 1 < n && rc == TS_OK; i++)
        if (v[i][0] == v[i + 1][0] && v[i][1] == v[i + 1][1] && v[i][2] != v[i + 1][2])
            rc = ts_err_sim(err, (int64_t)v[i][0], (int64_t)v[i][1],
                            "two senders into one receiver: words from tiles %" PRIu64 " and %" PRIu64
                            " reach tile %" PRIu64 " in the same cycle", v[i][2], v[i + 1][2], v[i][0]);
    for (size_t i = 0; i < n && rc == TS_OK; i++)
        if (!v[i][3])
            rc = ts_err_sim(err, (int64_t)v[i][0], (int64_t)v[i][1],
                            "word from tile %" PRIu64 " to tile %" PRIu64 " was not received: the tile's input did not select "
                            "tile %" PRIu64 " when it arrived", v[i][2], v[i][0], v[i][2]);
    ts_free(v);
    return rc;
}

