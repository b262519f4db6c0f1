/* arch/ipu/ipu_step.c — the kernel's step: rounds of the conservative window over every tile (run
 * on the host threads), the verdicts between rounds (an error to report, every tile done, a hang),
 * and the chip-wide sync that ends a superstep: the barrier moves the host data, releases the
 * tiles and records the superstep (the engine is described at the top of ipu_model.c).
 */
#include <math.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "core/activity.h"
#include "core/alloc.h"
#include "core/sim.h"

/* When tile t took part in the sync that is pending: the cycle of its `sync 1`, or, for a tile
 * that halted during this superstep, its halt (a halted tile counts as arrived from then on).
 * False for tiles that finished in an earlier superstep. */
bool ts_ipu_arrived_at(const ts_model *m, const ipu_tile *t, uint64_t *at)
{
    if (t->sup == SUP_SYNC) {
        *at = t->arrival;
        return true;
    }
    if (t->sup == SUP_DONE && t->finish > m->ss_start) {
        *at = t->finish - 1;
        return true;
    }
    return false;
}

/* What the threads' summaries of the last round say of the sync (merged in ts_ipu_step). */
typedef struct ipu_arrivals {
    uint64_t last;        /* the latest arrival */
    uint32_t crit;        /* the lowest tile that arrived then: the critical tile */
    uint32_t first_sync;  /* the lowest tile at the sync (released first: the skew grows with the id) */
    uint64_t hbytes, xbytes;
} ipu_arrivals;

/* All live tiles are at the barrier: move the host data and record the superstep; the tiles are
 * released afterwards, on every thread (ts_ipu_release). The arrivals come from the threads'
 * summaries, so that the main thread visits no tile here unless host data moves. */
static ts_status barrier(ts_model *m, const ipu_arrivals *a, ts_err *err)
{
    ts_status rc = ts_ipu_check_exchange(m, err);
    if (rc != TS_OK)
        return rc;
    uint64_t last = a->last, crit = a->crit, hbytes = a->hbytes, xbytes = a->xbytes;
    uint64_t host_cycles = 0;
    if (hbytes) {
        ts_ipu_visits(m, 2 * (uint64_t)m->ntiles);
        if (!m->hostmem) {
            m->hostmem = ts_calloc(1, m->c.host_bytes ? m->c.host_bytes : 1);
            if (!m->hostmem)
                return ts_err_set(err, TS_ENOMEM, "out of memory for the host buffer");
        }
        host_cycles = m->c.host_latency_cycles + (uint64_t)ceil((double)hbytes / m->c.host_bpc);
        for (int pass = 1; pass >= 0; pass--) /* tile -> host first, then host -> tile */
            for (uint32_t i = 0; i < m->ntiles; i++) {
                ipu_tile *t = &m->t[i];
                for (size_t k = 0; k < t->nhost; k++) {
                    ipu_hostop *h = &t->host[k];
                    if (h->to_host != pass)
                        continue;
                    if (pass)
                        ts_ipu_mem_read_bytes(m, t, h->addr, m->hostmem + h->haddr, h->bytes);
                    else if ((rc = ts_ipu_mem_write_bytes(m, t, h->addr, m->hostmem + h->haddr, h->bytes, err)) != TS_OK)
                        return rc;
                }
            }
    }
    uint64_t release = last + 1 + m->c.sync_cycles + host_cycles;
    if (m->nss == m->cap_ss) {
        void *v = m->ss;
        if (ts_grow(&v, &m->cap_ss, m->nss + 1, sizeof *m->ss))
            return ts_err_set(err, TS_ENOMEM, "out of memory for superstep records");
        m->ss = v;
    }
    ipu_ss *r = &m->ss[m->nss++];
    r->start = m->ss_start;
    r->exchange = m->t[crit].xch_cycles;
    uint64_t busy = last + 1 - m->ss_start;
    if (r->exchange > busy)
        r->exchange = busy;
    r->compute = busy - r->exchange;
    r->sync = release - (last + 1);
    r->critical = crit;
    r->xbytes = xbytes;
    r->hbytes = hbytes;
    if (m->phase_events)
        ts_ipu_events_since_sync(m, xbytes, hbytes, true, r->ev);
    else
        memset(r->ev, 0, sizeof r->ev);
    m->host_bytes_total += hbytes;
    m->host_cycles_total += host_cycles;
    if (m->trace)
        ts_ipu_trace_superstep(m, r, last, release);
    if (m->act && (rc = ts_ipu_act_superstep(m, r, release, err)) != TS_OK)
        return rc;
    m->ss_start = release;
    m->release = release;
    return TS_OK;
}

void ts_ipu_release_tiles(ts_model *m, uint32_t lo, uint32_t hi)
{
    uint64_t span = m->ntiles > 1 ? m->ntiles - 1 : 1;
    for (uint32_t i = lo; i < hi; i++) {
        ipu_tile *t = &m->t[i];
        t->log.n = 0;
        if (t->log.cap > IPU_WLOG_KEEP) {
            ts_free(t->log.v);
            t->log = (ipu_wlog){0};
        }
        if (t->pend.cap > IPU_WLOG_KEEP && !t->pend.n) { /* (its words are committed by now) */
            ts_free(t->pend.v);
            t->pend = (ipu_wlog){0};
        }
        t->fin = 0;
        t->nhost = 0;
        t->ss_xbytes = 0;
        t->ss_uni = t->ss_claims = 0;
        t->xch_cycles = 0;
        t->xch_until = 0;
        t->rx_src = -1;
        t->rx_park_n = SIZE_MAX;
        if (t->sup == SUP_SYNC) {
            t->sup = SUP_RUN;
            t->cx[0].ready = m->release + m->c.sync_skew * i / span;
            m->tnow[i] = m->release;
        }
        if (m->tnow[i] < m->now)
            m->tnow[i] = m->now;
    }
}

static bool tile_stuck(const ts_model *m, const ipu_tile *t)
{
    const ipu_tile *s = &m->t[t->rx_src];
    return (s->sup == SUP_SYNC || s->sup == SUP_DONE) && t->rx_cursor >= s->log.n;
}

/* The waiting tiles, when every one of them is stuck (first_stuck the lowest), else 0: the
 * verdict on receives needs all of them stuck, so the scan (the main thread's alone, in every
 * round of an exchange where no tile runs) stops at the first waiting tile that is not, and
 * looks first at the one that stopped the last scan (in an exchange it usually still waits for
 * words on their way): the same answer, mostly from one tile instead of a pass over the chip. */
static uint32_t count_stuck(ts_model *m, uint32_t *first_stuck)
{
    uint32_t h = m->scan_hint;
    if (h < m->ntiles && ts_ipu_tile_waiting(&m->t[h]) && !tile_stuck(m, &m->t[h])) {
        ts_ipu_visits(m, 1);
        return 0;
    }
    uint32_t stuck = 0, i;
    for (i = 0; i < m->ntiles; i++) {
        if (!ts_ipu_tile_waiting(&m->t[i]))
            continue;
        if (!tile_stuck(m, &m->t[i])) {
            m->scan_hint = i;
            stuck = 0;
            i++;
            break;
        }
        if (!stuck++)
            *first_stuck = i;
    }
    ts_ipu_visits(m, i);
    return stuck;
}

ts_status ts_ipu_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err)
{
    if (!m->loaded)
        return ts_err_set(err, TS_EINTERNAL, "ipu: step before load");
    while (m->now < limit && !m->done) {
        if (m->now >= m->act_cap) { /* every tile is at the window boundary: frames inside supersteps */
            ts_status rc = ts_ipu_act_partial(m, m->now, err);
            if (rc != TS_OK)
                return rc;
            uint64_t n = ts_activity_window(m->act);
            m->act_cap = (m->now / n + 1) * n;
        }
        uint64_t h = m->now + (m->lockstep ? 1 : m->window);
        /* fast mode: no running tile is before run_from (each ran ahead there on its own, the
         * others are at a sync or done), so nothing can happen before it and the round may end
         * there: a tile in a long delay takes a round per IPU_RUN_AHEAD cycles, not per window */
        if (!m->lockstep && m->run_from > h && m->run_from != UINT64_MAX)
            h = m->run_from;
        if (h > limit)
            h = limit;
        if (h > m->act_cap)
            h = m->act_cap;
        m->round_h = h;
        ts_ipu_round(m);
        int bad = -1;
        for (int i = 0; i < m->nthreads; i++)
            if (m->terr[i].failed && (bad < 0 || m->terr[i].err.cycle < m->terr[bad].err.cycle ||
                                      (m->terr[i].err.cycle == m->terr[bad].err.cycle &&
                                       m->terr[i].err.tile < m->terr[bad].err.tile)))
                bad = i; /* the earliest error, then the lowest tile: whichever thread ran it */
        if (bad >= 0) {
            /* An error stops the run once no other tile can still fail earlier: every other
             * running tile has passed its cycle (tiles run ahead of each other inside a round). */
            ts_err *e = &m->terr[bad].err;
            /* ... and only once the run has been asked to go that far: tiles may have run ahead
             * of `limit`, but what they did there is not reported before the kernel gets there */
            bool final = e->status != TS_ESIM || e->cycle < 0;
            if (!final && (uint64_t)e->cycle < limit) {
                final = true;
                for (uint32_t i = 0; i < m->ntiles && final; i++)
                    if (!m->t[i].failed && m->t[i].sup == SUP_RUN && m->tnow[i] < (uint64_t)e->cycle)
                        final = false;
            }
            if (final) {
                ts_err_free(err);
                *err = *e; /* hand the detail over */
                e->detail = NULL;
                return err->status;
            }
        }
        /* this round's words were committed by finish_range; the threads' summaries */
        m->now = h;
        uint64_t work = 0, last_arrival = 0, run_from = UINT64_MAX;
        uint32_t live = 0, at_sync = 0, waiting = 0, stuck = 0, first_stuck = 0;
        bool pending = false, nomem = false, arrived = false;
        ipu_arrivals arr = {0};
        for (int i = 0; i < m->nthreads; i++) {
            const ipu_tsum *q = &m->tsum[i];
            work += q->work;
            if (q->run_from < run_from)
                run_from = q->run_from;
            if (q->last_arrival > last_arrival)
                last_arrival = q->last_arrival;
            if (q->arrived && (!arrived || q->last_arrival > arr.last ||
                               (q->last_arrival == arr.last && q->crit < arr.crit))) {
                arr.last = q->last_arrival;
                arr.crit = q->crit;
                arrived = true;
            }
            if (q->at_sync && (!at_sync || q->first_sync < arr.first_sync))
                arr.first_sync = q->first_sync;
            arr.hbytes += q->hbytes;
            arr.xbytes += q->xbytes;
            live += q->live;
            at_sync += q->at_sync;
            waiting += q->waiting;
            pending |= q->pending;
            nomem |= q->nomem;
        }
        if (nomem)
            return ts_err_set(err, TS_ENOMEM, "out of memory for exchange words");
        m->run_from = run_from;
        m->work = work + m->nss;
        if (waiting && waiting + at_sync == live) /* only then can every live tile be stuck or at a sync */
            stuck = count_stuck(m, &first_stuck);
        if (pending)
            continue; /* no barrier and no verdict on receives while an error waits */
        if (!live) {
            uint64_t end = 0;
            for (uint32_t i = 0; i < m->ntiles; i++)
                if (m->t[i].finish > end)
                    end = m->t[i].finish;
            if (end > limit) { /* finished ahead of the kernel: done when it gets there */
                m->now = limit;
                break;
            }
            m->end = end;
            m->now = end; /* the cycle after the last halt, in every mode (never below a cycle
                           * reported before: an earlier round would have seen every tile done) */
            m->done = true;
            ts_status rc = ts_ipu_check_exchange(m, err);
            if (rc == TS_OK && m->act)
                rc = ts_ipu_act_end(m, err);
            if (rc != TS_OK)
                return rc;
            break;
        }
        if (at_sync && last_arrival >= limit) {
            /* tiles ran ahead to a sync past `limit`: the barrier, and any verdict on receives,
             * waits until the kernel gets there */
            if (at_sync == live)
                m->now = limit;
            continue;
        }
        if (stuck && stuck + at_sync == live) {
            /* nothing can move any more: a word that reached a tile before its input selected
             * the sender is lost, and is the better explanation of the wait */
            ts_status rc = ts_ipu_check_exchange(m, err);
            if (rc != TS_OK)
                return rc;
            const ipu_tile *t = &m->t[first_stuck];
            return ts_err_sim(err, first_stuck, (int64_t)t->rx_armed,
                              "receive with nothing sent: tile %u waits for %u of %u words from tile %d, which sends "
                              "nothing more", first_stuck, t->rx_left, t->rx_n, t->rx_src);
        }
        if (at_sync == live) {
            ts_status rc = barrier(m, &arr, err);
            if (rc != TS_OK)
                return rc;
            if (!m->lockstep) { /* nothing happens before the release of the first tile */
                uint64_t span = m->ntiles > 1 ? m->ntiles - 1 : 1;
                uint64_t next = m->release + m->c.sync_skew * arr.first_sync / span;
                if (next > m->act_cap) /* stop at the window boundary on the way */
                    next = m->act_cap;
                if (next > m->now)
                    m->now = next < limit ? next : limit;
            }
            ts_ipu_release(m); /* every tile's cycle brought up to m->now too */
            m->run_from = 0;   /* the released tiles run from m->now */
        }
    }
    st->now = m->now;
    st->work = m->work;
    st->done = m->done;
    return TS_OK;
}

