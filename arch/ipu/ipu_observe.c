/* arch/ipu/ipu_observe.c — what the model shows of a run as it goes, for core/activity (the live
 * view and summary: tile states and exchange bytes per window) and core/trace (Perfetto slices per
 * superstep and per tile or group of tiles). Both are written between rounds, in tile order, from
 * the exchange spans the executor keeps only when one of them is on.
 */
#include <inttypes.h>
#include <stdio.h>

#include "arch/ipu/ipu_int.h"
#include "core/activity.h"
#include "core/alloc.h"
#include "core/sim.h"
#include "core/trace.h"

/* ---- exchange spans ---- */

/* Append [a, b) to the tile's exchange spans, merging with the last one when they touch. A span
 * already counted (b <= a) only adds its bytes. Cold: taken only with the activity sampler. */
void ts_ipu_xspan_add(ipu_tile *t, uint64_t a, uint64_t b, uint64_t bytes)
{
    if (t->nxs && (b <= a || t->xs[t->nxs - 1].b == a)) {
        ipu_xspan *l = &t->xs[t->nxs - 1];
        if (b > l->b)
            l->b = b;
        l->bytes += bytes;
        return;
    }
    if (t->nxs == t->cap_xs) {
        void *v = t->xs;
        if (ts_grow(&v, &t->cap_xs, t->nxs + 1, sizeof *t->xs)) {
            t->rec_nomem = true;
            return;
        }
        t->xs = v;
    }
    t->xs[t->nxs++] = (ipu_xspan){a, b > a ? b : a, bytes};
}

/* ---- activity ---- */

/* Tile u's state in words, for the live view (core/activity.h describer): the supervisor's state
 * and pc, the workers running, what the exchange has left to receive and send, memory used. */
static void act_describe(void *ud, uint32_t u, char *buf, size_t n)
{
    static const char *const sup[] = {"RUN", "SYNC", "DONE"};
    const ts_model *m = ud;
    const ipu_tile *t = &m->t[u];
    if (!t->n) {
        snprintf(buf, n, "NO PROGRAM");
        return;
    }
    unsigned workers = 0;
    for (uint32_t r = t->running; r; r &= r - 1)
        workers++;
    snprintf(buf, n, "SUP %s PC %u WORKERS %u RX LEFT %u TX %u MEM %" PRIu64 " B", sup[t->sup], t->cx[0].pc, workers,
             t->rx_left, t->tx_n, t->mem_hi);
}

/* The tile layout for the activity view: tile t in column t / tiles_per_column, row
 * t mod tiles_per_column (as the exchange latency counts them); the columns are drawn in their
 * groups ("islands" of layout.columns_per_group columns) with one empty column between groups. */
ts_status ts_ipu_act_layout(ts_model *m, ts_err *err)
{
    const ts_ipu_cfg *c = &m->c;
    uint32_t *x = ts_malloc(m->ntiles * sizeof *x), *y = ts_malloc(m->ntiles * sizeof *y);
    if (!x || !y) {
        ts_free(x);
        ts_free(y);
        return ts_err_set(err, TS_ENOMEM, "out of memory for the tile layout");
    }
    uint32_t cpg = c->columns_per_group > 1 ? (uint32_t)c->columns_per_group : 0;
    uint32_t w = 1, h = 1;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        int64_t col, row;
        tile_pos(c, i, &col, &row);
        x[i] = (uint32_t)col + (cpg ? (uint32_t)col / cpg : 0);
        y[i] = (uint32_t)row;
        if (x[i] + 1 > w)
            w = x[i] + 1;
        if (y[i] + 1 > h)
            h = y[i] + 1;
    }
    ts_status rc = ts_activity_layout(m->act, "ipu columns", m->ntiles, w, h, x, y, err);
    /* column labels: the number of the column's top tile */
    char (*lab)[12] = rc == TS_OK ? ts_calloc(w, sizeof *lab) : NULL;
    const char **labp = lab ? ts_calloc(w, sizeof *labp) : NULL;
    if (rc == TS_OK && !labp)
        rc = ts_err_set(err, TS_ENOMEM, "out of memory labelling the tile columns");
    for (uint32_t i = 0; rc == TS_OK && i < m->ntiles; i++)
        if (y[i] == 0) {
            snprintf(lab[x[i]], sizeof lab[x[i]], "%u", i);
            labp[x[i]] = lab[x[i]];
        }
    if (rc == TS_OK)
        rc = ts_activity_column_labels(m->act, labp, err);
    ts_free(labp);
    ts_free(lab);
    ts_free(x);
    ts_free(y);
    ts_activity_describer(m->act, act_describe, m);
    ts_activity_group(m->act, 1, 1, "tile");
    ts_activity_name_by_index(m->act, "tile", "tiles"); /* as the chip's own trace tracks */
    return rc;
}

/* Record tile i from m->act_at to `to`: compute, with its exchange spans as network, up to
 * busy_end (a tile with a receive armed is on the network from the cycle it armed it); then
 * `after` (sync wait or idle) up to `to`. Each span's bytes are counted once, at its first cycle
 * not yet recorded; the spans stay for the superstep's trace slices. */
static void act_tile(ts_model *m, uint32_t i, uint64_t busy_end, ts_act_state after, uint64_t to, bool armed)
{
    ipu_tile *t = &m->t[i];
    uint64_t from = m->act_at, c = from;
    if (busy_end > to)
        busy_end = to;
    for (size_t k = 0; k < t->nxs; k++) {
        ipu_xspan *x = &t->xs[k];
        uint64_t a = x->a < from ? from : x->a, b = x->b > busy_end ? busy_end : x->b;
        if (x->bytes) {
            ts_activity_bytes(m->act, a, x->bytes);
            x->bytes = 0;
        }
        if (b <= a)
            continue;
        ts_activity_span(m->act, i, TS_ACT_COMPUTE, c, a);
        ts_activity_span(m->act, i, TS_ACT_NETWORK, a, b);
        c = b;
    }
    if (armed && c < busy_end) {
        uint64_t a = t->rx_armed > c ? t->rx_armed : c;
        ts_activity_span(m->act, i, TS_ACT_COMPUTE, c, a);
        ts_activity_span(m->act, i, TS_ACT_NETWORK, a, busy_end);
        c = busy_end;
    }
    ts_activity_span(m->act, i, TS_ACT_COMPUTE, c, busy_end);
    ts_activity_span(m->act, i, after, busy_end > from ? busy_end : from, to);
}

static ts_status act_nomem(ts_model *m, ts_err *err)
{
    for (uint32_t i = 0; i < m->ntiles; i++)
        if (m->t[i].rec_nomem)
            return ts_err_set(err, TS_ENOMEM, "out of memory recording tile activity");
    return TS_OK;
}

/* Every tile from m->act_at to `to`, which no tile has passed: a tile at the sync (or halted in
 * this superstep) is busy up to its arrival and then waits (or idles); a running tile is busy
 * throughout; a tile that finished in an earlier superstep idles. */
static void act_tiles(ts_model *m, uint64_t to)
{
    for (uint32_t i = 0; i < m->ntiles; i++) {
        const ipu_tile *t = &m->t[i];
        uint64_t at;
        if (ts_ipu_arrived_at(m, t, &at))
            act_tile(m, i, at + 1, t->sup == SUP_SYNC ? TS_ACT_SYNC : TS_ACT_IDLE, to, false);
        else if (t->sup == SUP_RUN)
            act_tile(m, i, to, TS_ACT_IDLE, to, t->rx_left != 0);
        else
            act_tile(m, i, m->act_at, TS_ACT_IDLE, to, false);
    }
}

ts_status ts_ipu_act_partial(ts_model *m, uint64_t upto, ts_err *err)
{
    if (upto <= m->act_at) /* a barrier has recorded past it */
        return TS_OK;
    ts_status rc = act_nomem(m, err);
    if (rc != TS_OK)
        return rc;
    act_tiles(m, upto);
    m->act_at = upto;
    return ts_activity_advance(m->act, upto, err);
}

/* Record every tile's states up to the release of the superstep that ends there, then flush the
 * windows it completes. */
ts_status ts_ipu_act_superstep(ts_model *m, const ipu_ss *r, uint64_t release, ts_err *err)
{
    ts_status rc = act_nomem(m, err);
    if (rc != TS_OK)
        return rc;
    act_tiles(m, release);
    for (uint32_t i = 0; i < m->ntiles; i++)
        m->t[i].nxs = 0;
    m->act_at = release;
    ts_act_superstep s = {r->start, r->compute, r->exchange, r->sync};
    rc = ts_activity_superstep(m->act, &s, err);
    if (rc == TS_OK)
        rc = ts_activity_advance(m->act, release, err);
    return rc;
}

/* The run is done at m->end: record the last stretch after the final sync and flush it all. */
ts_status ts_ipu_act_end(ts_model *m, ts_err *err)
{
    ts_status rc = act_nomem(m, err);
    if (rc != TS_OK)
        return rc;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        const ipu_tile *t = &m->t[i];
        uint64_t busy_end = t->finish > m->ss_start ? t->finish : m->ss_start;
        act_tile(m, i, busy_end, TS_ACT_IDLE, m->end, false);
        m->t[i].nxs = 0;
    }
    return ts_activity_finish(m->act, m->end, err);
}

/* ---- trace ---- */

/* Trace slices of one superstep: the chip's row (the superstep, and its sync) and a row per tile
 * (busy until its sync, then waiting), or per group of tiles on big runs. Written between rounds,
 * in tile order. */
/* Tile i's row over superstep `id` [start, release): compute and exchange slices up to its
 * `sync 1` (its exchange spans, as the activity sampler counts them), then its sync wait. Tiles
 * not at the sync have nothing on the row. */
static void trace_tile(ts_model *m, uint32_t i, size_t id, uint64_t start, uint64_t release)
{
    ipu_tile *t = &m->t[i];
    if (t->sup == SUP_SYNC) {
        char args[48];
        snprintf(args, sizeof args, "{\"superstep\":%zu}", id);
        uint64_t c = start, end = t->arrival + 1;
        for (size_t k = 0; k < t->nxs; k++) {
            uint64_t a = t->xs[k].a < c ? c : t->xs[k].a, b = t->xs[k].b > end ? end : t->xs[k].b;
            if (b <= a)
                continue;
            if (a > c)
                ts_trace_slice(m->trace, 0, (int)i + 1, "compute", "tile", c, a - c, args);
            ts_trace_slice(m->trace, 0, (int)i + 1, "exchange", "tile", a, b - a, args);
            c = b;
        }
        if (end > c)
            ts_trace_slice(m->trace, 0, (int)i + 1, "compute", "tile", c, end - c, args);
        ts_trace_slice(m->trace, 0, (int)i + 1, "sync wait", "tile", end, release - end, args);
    }
}

/* The row of tiles [lo, hi) (track g + 1) over superstep `id`: the members at the sync make
 * compute up to the first member's first exchange, exchange from there to the last member's last
 * exchange end, compute again up to the last member's sync, then the sync wait to the release.
 * The slices abut and fill the superstep like a tile's; args give the members at the sync. */
static void trace_group(ts_model *m, uint32_t g, uint32_t lo, uint32_t hi, size_t id, uint64_t start,
                        uint64_t release)
{
    uint64_t n = 0, x0 = UINT64_MAX, x1 = 0, end = 0;
    for (uint32_t i = lo; i < hi; i++) {
        const ipu_tile *t = &m->t[i];
        if (t->sup != SUP_SYNC)
            continue;
        n++;
        uint64_t e = t->arrival + 1;
        if (e > end)
            end = e;
        for (size_t k = 0; k < t->nxs; k++) {
            uint64_t a = t->xs[k].a < start ? start : t->xs[k].a, b = t->xs[k].b > e ? e : t->xs[k].b;
            if (b <= a)
                continue;
            if (a < x0)
                x0 = a;
            if (b > x1)
                x1 = b;
        }
    }
    if (!n)
        return;
    char args[64];
    snprintf(args, sizeof args, "{\"superstep\":%zu,\"tiles\":%" PRIu64 "}", id, n);
    uint64_t c = start;
    if (x0 < x1) {
        if (x0 > c)
            ts_trace_slice(m->trace, 0, (int)g + 1, "compute", "tiles", c, x0 - c, args);
        ts_trace_slice(m->trace, 0, (int)g + 1, "exchange", "tiles", x0, x1 - x0, args);
        c = x1;
    }
    if (end > c)
        ts_trace_slice(m->trace, 0, (int)g + 1, "compute", "tiles", c, end - c, args);
    ts_trace_slice(m->trace, 0, (int)g + 1, "sync wait", "tiles", end, release - end, args);
}

/* Tiles per track: 1 while a row per tile for every superstep fits half the trace's limit (the
 * rest is for the chip's row, the counters and the activity tracks), else the fewest whole
 * columns (1, 2, 4 ...) that fit. Supersteps are estimated from the program text (the most
 * `sync 1` in one tile's stream, plus the last superstep); a program that loops over its syncs
 * can run more, and past the limit the trace drops them (and the run says so). */
#define TRACE_TILE_SS_BYTES 448 /* a row's superstep: about 4 slices of 112 bytes (compute, exchange, compute, wait) */
static uint32_t trace_plan(const ts_model *m)
{
    uint64_t budget = ts_trace_limit(m->trace) / 2, per = (m->sync_texts + 1) * TRACE_TILE_SS_BYTES;
    if ((uint64_t)m->ntiles * per <= budget)
        return 1;
    uint64_t tpc = m->c.tiles_per_column ? m->c.tiles_per_column : 1, g = tpc;
    while (g < m->ntiles && (m->ntiles + g - 1) / g * per > budget)
        g *= 2;
    return g < m->ntiles ? (uint32_t)g : m->ntiles;
}

void ts_ipu_trace_superstep(ts_model *m, const ipu_ss *r, uint64_t last, uint64_t release)
{
    char args[160];
    if (!m->trace_named) {
        m->trace_group = trace_plan(m);
        ts_trace_process(m->trace, 0, "ipu");
        ts_trace_thread(m->trace, 0, 0, "supersteps");
        for (uint32_t i = 0, g = 0; i < m->ntiles; i += m->trace_group, g++) {
            char name[48];
            uint32_t hi = m->ntiles - i > m->trace_group ? i + m->trace_group : m->ntiles;
            if (m->trace_group == 1)
                snprintf(name, sizeof name, "tile %u", i);
            else
                snprintf(name, sizeof name, "tiles %u-%u", i, hi - 1);
            ts_trace_thread(m->trace, 0, (int)g + 1, name);
        }
        m->trace_named = true;
    }
    size_t id = m->nss - 1;
    snprintf(args, sizeof args, "{\"superstep\":%zu,\"compute\":%" PRIu64 ",\"exchange\":%" PRIu64
             ",\"sync\":%" PRIu64 ",\"critical_tile\":%" PRIu64 ",\"exchange_bytes\":%" PRIu64 "}",
             id, r->compute, r->exchange, r->sync, r->critical, r->xbytes);
    ts_trace_slice(m->trace, 0, 0, "superstep", "bsp", r->start, release - r->start, args);
    ts_trace_slice(m->trace, 0, 0, "sync", "bsp", last + 1, release - (last + 1), NULL);
    ts_trace_counter(m->trace, 0, "exchange bytes per cycle", r->start,
                     (double)r->xbytes / (double)(release - r->start));
    if (m->trace_group == 1) {
        for (uint32_t i = 0; i < m->ntiles; i++)
            trace_tile(m, i, id, r->start, release);
    } else {
        for (uint32_t i = 0, g = 0; i < m->ntiles; i += m->trace_group, g++)
            trace_group(m, g, i, m->ntiles - i > m->trace_group ? i + m->trace_group : m->ntiles, id, r->start,
                        release);
    }
    if (!m->act) /* the spans served the trace alone */
        for (uint32_t i = 0; i < m->ntiles; i++)
            m->t[i].nxs = 0;
}

