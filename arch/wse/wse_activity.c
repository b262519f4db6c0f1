/* arch/wse/wse_activity.c — the wafer mesh's activity for core/activity: one unit per PE, laid
 * out as the mesh (x east, y south).
 *
 * The tiles' own counters (wse_tstats, exact at the end of every simulated cycle in both modes and
 * with any number of threads) are read when a window ends: every thread stops at one extra
 * barrier then, so thread 0 reads them while nobody writes. What a PE did since the last
 * window's end happened before the window now ending, so it is all added to that window. Within a
 * window the counts are:
 *   compute  cycles the core issued an instruction or advanced a vector op (pe.busy);
 *   memory   cycles it stalled on SRAM ports (pe.stall.memory);
 *   network  cycles it stalled on the fabric (an empty input queue, a full ramp or output queue),
 *            then the cycles its router forwarded a wavelet while the core did nothing else
 *            (as many of fabric.router_busy's cycles as the window has left: the counters do not
 *            say which cycles those were);
 *   sync     cycles it waited on one of its own busy microthreads (pe.stall.thread);
 *   idle     the rest (left to the sampler).
 * Bytes are wavelets sent to neighbours, 4 bytes each.
 */
#include "arch/wse/wse_int.h"

#include <inttypes.h>
#include <stdio.h>

#include "core/activity.h"
#include "core/alloc.h"

enum { SN_BUSY, SN_NET, SN_MEM, SN_THR, SN_ROUTER, SN_HOPS, SN_COUNT };

static void snap(const wse_tile *t, uint64_t v[SN_COUNT])
{
    v[SN_BUSY] = t->s.busy;
    v[SN_NET] = t->s.stall_in + t->s.stall_out;
    v[SN_MEM] = t->s.stall_mem;
    v[SN_THR] = t->s.stall_thread;
    v[SN_ROUTER] = t->s.router_busy;
    v[SN_HOPS] = t->s.link[WSE_N] + t->s.link[WSE_S] + t->s.link[WSE_E] + t->s.link[WSE_W];
}

/* One PE's state in words, for the live view. */
static void describe(void *ud, uint32_t u, char *buf, size_t n)
{
    static const char *const st[] = {"idle", "run", "start", "wait", "waitvec"};
    const ts_model *m = ud;
    const wse_tile *t = u < m->npes ? m->t[u] : NULL;
    if (!t) {
        snprintf(buf, n, "no program");
        return;
    }
    uint32_t rq = 0, cq = 0;
    for (uint32_t j = 0; j < t->nlq; j++) {
        uint32_t occ = t->lq[j].pushed - t->lq[j].popped;
        if (t->lq[j].port == 5)
            cq += occ;
        else
            rq += occ;
    }
    int k = snprintf(buf, n, "ROUTER Q %u CORE Q %u SRAM %s", rq, cq, t->mem ? "USED" : "UNTOUCHED");
    if (t->ce && k > 0 && (size_t)k < n) {
        const wse_ce *ce = t->ce;
        uint32_t th = 0;
        for (uint32_t v = ce->vbusy; v; v &= v - 1)
            th++;
        snprintf(buf + k, n - (size_t)k, " PC %u TASK %d %s THREADS BUSY %u", ce->pc, ce->task, st[ce->state], th);
    }
}

ts_status ts_wse_act_layout(ts_model *m, ts_err *err)
{
    uint64_t n = m->npes;
    uint32_t *x = ts_malloc((n ? n : 1) * sizeof *x), *y = ts_malloc((n ? n : 1) * sizeof *y);
    if (!x || !y) {
        ts_free(x);
        ts_free(y);
        return ts_err_set(err, TS_ENOMEM, "out of memory declaring the mesh layout");
    }
    for (uint64_t i = 0; i < n; i++) {
        x[i] = (uint32_t)(i % m->w);
        y[i] = (uint32_t)(i / m->w);
    }
    ts_status rc = ts_activity_layout(m->act, "wse mesh", (uint32_t)n, m->w, m->h, x, y, err);
    ts_free(x);
    ts_free(y);
    ts_activity_describer(m->act, describe, m);
    m->act_window = ts_activity_window(m->act);
    return rc;
}

bool ts_wse_act_due(const ts_model *m, uint64_t was, uint64_t next)
{
    return next / m->act_window > was / m->act_window;
}

/* Add every PE's counts since the last window's end to the window holding cycle `was`. */
static void sample(ts_model *m, uint64_t was)
{
    if (!m->act_prev) {
        m->act_prev = ts_calloc((m->nalloc ? m->nalloc : 1) * SN_COUNT, sizeof *m->act_prev);
        if (!m->act_prev) {
            m->act_nomem = true;
            return;
        }
    }
    uint64_t W = m->act_window, ws = was / W * W, len = W, hops = 0;
    for (size_t i = 0; i < m->nalloc; i++) {
        const wse_tile *t = m->t[m->alloc_ids[i]];
        uint64_t v[SN_COUNT], *p = m->act_prev + i * SN_COUNT, d[SN_COUNT];
        snap(t, v);
        for (int s = 0; s < SN_COUNT; s++) {
            d[s] = v[s] - p[s];
            p[s] = v[s];
        }
        hops += d[SN_HOPS];
        uint64_t core = d[SN_BUSY] + d[SN_NET] + d[SN_MEM] + d[SN_THR];
        uint64_t router = core < len ? (d[SN_ROUTER] < len - core ? d[SN_ROUTER] : len - core) : 0;
        uint64_t at = ws;
        const struct { ts_act_state s; uint64_t n; } part[] = {
            {TS_ACT_COMPUTE, d[SN_BUSY]}, {TS_ACT_NETWORK, d[SN_NET] + router}, {TS_ACT_MEMORY, d[SN_MEM]},
            {TS_ACT_SYNC, d[SN_THR]}};
        for (size_t j = 0; j < sizeof part / sizeof part[0]; j++) {
            if (part[j].n)
                ts_activity_span(m->act, t->id, part[j].s, at, at + part[j].n);
            at += part[j].n;
        }
    }
    if (hops)
        ts_activity_bytes(m->act, ws, 4 * hops);
}

void ts_wse_act_window(ts_model *m, uint64_t was, uint64_t next)
{
    if (m->run_st || m->act_stop)
        return;
    sample(m, was);
    ts_status rc = m->act_nomem ? ts_err_set(m->run_err, TS_ENOMEM, "out of memory sampling activity")
                                : ts_activity_advance(m->act, next, m->run_err);
    if (rc) {
        m->run_st = rc;
        m->act_stop = true;
    }
}

ts_status ts_wse_act_finish(ts_model *m, ts_err *err)
{
    if (m->act_stop)
        return TS_OK;
    m->act_stop = true;
    if (m->now)
        sample(m, m->now - 1);
    if (m->act_nomem)
        return ts_err_set(err, TS_ENOMEM, "out of memory sampling activity");
    return ts_activity_finish(m->act, m->now, err);
}
