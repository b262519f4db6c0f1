/* arch/wse/wse_report.c — deadlock detection, blocked-unit descriptions, results collection and
 * the accessors tests read. */
#include "arch/wse/wse_inline.h"
#include "arch/wse/wse_target.h" /* the statistics a compiler reads back */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static const char *const port_name[WSE_NPORTS] = {"N", "S", "E", "W", "R"};
static const char *const port_word[WSE_NPORTS] = {"north", "south", "east", "west", "ramp"};
static const uint8_t opposite[4] = {WSE_S, WSE_N, WSE_W, WSE_E};

static size_t alloc_index(const ts_model *m, uint32_t id)
{
    size_t lo = 0, hi = m->nalloc;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->alloc_ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The k-th blocking edge of router queue j of tile t, or -1: a full queue its head waits on. */
static int64_t edge(const ts_model *m, const wse_tile *t, uint32_t j, int k, const size_t *base)
{
    const wse_lq *q = &t->lq[j];
    if (q->pushed == q->popped)
        return -1;
    const wse_route *r = &t->route[q->colour];
    uint8_t tx;
    if (q->colour < m->vcs) {
        tx = dest_tx(m, t, q->dst[q->rd], q->colour);
    } else {
        if (!(r->rx[r->pos] >> q->port & 1))
            return -1;
        tx = r->tx[r->pos];
    }
    int seen = 0;
    for (int p = 0; p < 4; p++) {
        if (!(tx >> p & 1))
            continue;
        const wse_tile *n = t->nb[p];
        uint8_t jj = n->qmap[opposite[p] * m->C + q->colour];
        const wse_lq *nq = &n->lq[jj];
        if (nq->pushed - nq->popped < nq->cap)
            continue;
        if (seen++ == k)
            return (int64_t)(base[alloc_index(m, n->id)] + jj);
    }
    return -1;
}

ts_status ts_wse_deadlock(ts_model *m, ts_err *err)
{
    size_t *base = ts_malloc((m->nalloc + 1) * sizeof *base);
    if (!base)
        return TS_OK;
    size_t n = 0;
    for (size_t i = 0; i < m->nalloc; i++) {
        base[i] = n;
        n += m->t[m->alloc_ids[i]]->nrq;
    }
    base[m->nalloc] = n;
    uint8_t *col = ts_calloc(n ? n : 1, 1);
    size_t *stk = ts_malloc((n ? n : 1) * sizeof *stk);
    int *ek = ts_malloc((n ? n : 1) * sizeof *ek);
    ts_status rc = TS_OK;
    if (!col || !stk || !ek)
        goto out;
    /* node -> (tile, queue) */
    for (size_t s = 0; s < n && !rc; s++) {
        if (col[s])
            continue;
        size_t sp = 0;
        stk[sp] = s;
        ek[sp++] = 0;
        col[s] = 1;
        while (sp && !rc) {
            size_t v = stk[sp - 1];
            size_t ai = 0, lo = 0, hi = m->nalloc;
            while (lo < hi) { /* last ai with base[ai] <= v */
                size_t mid = (lo + hi) / 2;
                if (base[mid + 1] <= v)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            ai = lo;
            const wse_tile *t = m->t[m->alloc_ids[ai]];
            int64_t to = edge(m, t, (uint32_t)(v - base[ai]), ek[sp - 1]++, base);
            if (to < 0) {
                col[v] = 2;
                sp--;
                continue;
            }
            if (col[to] == 0) {
                col[to] = 1;
                stk[sp] = (size_t)to;
                ek[sp++] = 0;
            } else if (col[to] == 1) {
                /* a cycle: from `to` up the stack */
                size_t from = 0;
                while (stk[from] != (size_t)to)
                    from++;
                ts_buf b = TS_BUF_INIT;
                char first[160] = "";
                uint32_t first_id = 0;
                for (size_t i = from; i < sp; i++) {
                    size_t u = stk[i], a = 0;
                    lo = 0;
                    hi = m->nalloc;
                    while (lo < hi) {
                        size_t mid = (lo + hi) / 2;
                        if (base[mid + 1] <= u)
                            lo = mid + 1;
                        else
                            hi = mid;
                    }
                    a = lo;
                    const wse_tile *tt = m->t[m->alloc_ids[a]];
                    const wse_lq *q = &tt->lq[u - base[a]];
                    char line[160];
                    snprintf(line, sizeof line, "PE (%u, %u) colour %u input %s (%u of %u wavelets)", tt->x, tt->y,
                             q->colour, port_word[q->port], q->pushed - q->popped, q->cap);
                    if (i == from) {
                        snprintf(first, sizeof first, "%s", line);
                        first_id = tt->id;
                    }
                    ts_buf_printf(&b, "  %s waits on\n", line);
                }
                ts_buf_printf(&b, "  %s\n", first);
                rc = ts_err_sim(err, first_id, (int64_t)m->now,
                                "deadlock: a cycle of %zu full router queues, starting at %s", sp - from, first);
                ts_err_append_detail(err, ts_buf_str(&b));
                ts_buf_free(&b);
            }
        }
    }
out:
    ts_free(base);
    ts_free(col);
    ts_free(stk);
    ts_free(ek);
    return rc;
}

static void wse_blocked(ts_model *m, ts_buf *out)
{
    static const char *const st[] = {"idle", "running", "starting a task", "waiting", "waiting for a vector op"};
    size_t lines = 0;
    for (size_t i = 0; i < m->nalloc && lines < 64; i++) {
        const wse_tile *t = m->t[m->alloc_ids[i]];
        for (uint32_t j = 0; j < t->nlq; j++) {
            const wse_lq *q = &t->lq[j];
            if (q->pushed == q->popped)
                continue;
            if (q->port == 5)
                ts_buf_printf(out, "  PE (%u, %u) core: %u wavelets of colour %u queued with no consumer\n", t->x, t->y,
                              q->pushed - q->popped, q->colour);
            else
                ts_buf_printf(out, "  PE (%u, %u) router: %u wavelets of colour %u from the %s wait (switch position %u)\n",
                              t->x, t->y, q->pushed - q->popped, q->colour, port_word[q->port],
                              t->route[q->colour].pos);
            lines++;
        }
        if (t->ce && t->ce->state != CE_IDLE) {
            const wse_ce *ce = t->ce;
            char who[24];
            if (ce->task == -1)
                snprintf(who, sizeof who, "main task");
            else
                snprintf(who, sizeof who, "task %d", ce->task);
            const char *mn = ce->pc < ce->code->n ? ts_wse_isa.ops[ce->code->insn[ce->pc].op].mnemonic : "end";
            if (ce->state == CE_RUN)
                ts_buf_printf(out, "  PE (%u, %u) core: %s waits at pc %u ('%s')\n", t->x, t->y, who, ce->pc, mn);
            else
                ts_buf_printf(out, "  PE (%u, %u) core: %s at pc %u is %s\n", t->x, t->y, who, ce->pc, st[ce->state]);
            lines++;
        }
        if (t->ce)
            for (uint32_t k = 0; k <= m->c.microthreads; k++)
                if (t->ce->th[k].busy) {
                    const wse_vop *v = &t->ce->th[k];
                    ts_buf_printf(out, "  PE (%u, %u) %s: %s from pc %u has done %u of %u elements\n", t->x, t->y,
                                  k ? "microthread" : "main thread", ts_wse_isa.ops[v->op].mnemonic, v->pc, v->i, v->n);
                    lines++;
                }
    }
    (void)port_name;
}

/* ------------------------------------------------------------------------------------------ */

static ts_status add_array(ts_model *m, ts_results *r, const char *name, const char *unit, const char *desc,
                           size_t off, size_t port, ts_err *err)
{
    double *v = ts_calloc(m->npes, sizeof *v);
    if (!v)
        return ts_err_set(err, TS_ENOMEM, "out of memory collecting results");
    for (size_t i = 0; i < m->nalloc; i++) {
        const wse_tile *t = m->t[m->alloc_ids[i]];
        const uint64_t *base = (const uint64_t *)(const void *)((const char *)&t->s + off);
        v[t->id] = (double)base[port];
    }
    ts_status rc = ts_stats_array(r->stats, name, unit, desc, v, m->npes);
    ts_free(v);
    return rc ? ts_err_set(err, rc, "cannot add statistic %s", name) : TS_OK;
}

/* The energy events of a run: the executor's own (OWN_*) and the .def's, each .def event once
 * (ts_wse_events) in the order of the rows that first name them. An instruction's issue and
 * register accesses come first, then the .def's events, then SRAM and fabric. It is the order
 * they are priced and summed in (core/results.c: ts_results_price, ts_results_price_rows): another
 * can change the last digits of energy figures. */
enum { OWN_ISSUE, OWN_REGFILE, OWN_SRAM_RD, OWN_SRAM_WR, OWN_HOP, OWN_WIRE, EV_OWN };
static const char *const own_name[EV_OWN] = {
    [OWN_ISSUE] = "insn_issue",          [OWN_REGFILE] = "regfile_32b",   [OWN_SRAM_RD] = "sram_read_64b",
    [OWN_SRAM_WR] = "sram_write_64b",    [OWN_HOP] = "router_hop_32b",    [OWN_WIRE] = "wire_bit_mm"};
enum { EV_MAX = EV_OWN + WSE_EV_ROWS };

typedef struct wse_evlist {
    const char *names[EV_MAX];
    size_t n, nev;              /* events in all, of which the .def's (names[2 .. nev + 1]) */
    uint8_t ev_of[WSE_EV_ROWS]; /* counter slot -> its .def event, 0 .. nev - 1 */
} wse_evlist;

/* Where event e of the executor's own sits in the list of a .def of nev events: issue and register
 * file before them, the rest after. */
static size_t own_at(int e, size_t nev) { return e <= OWN_REGFILE ? (size_t)e : nev + (size_t)e; }

static void evlist(wse_evlist *l)
{
    l->nev = ts_wse_events(l->names + OWN_REGFILE + 1, l->ev_of);
    for (int e = 0; e < EV_OWN; e++)
        l->names[own_at(e, l->nev)] = own_name[e];
    l->n = EV_OWN + l->nev;
}

/* The energy events of counters s (one tile's, or summed over tiles: the events are linear in
 * them), in the order of l->names. */
static void events_of(const ts_model *m, const wse_evlist *l, const wse_tstats *s, double *ev)
{
    uint64_t ns = s->link[WSE_N] + s->link[WSE_S], ew = s->link[WSE_E] + s->link[WSE_W];
    double mm_ew = m->c.pitch_x * 1e3, mm_ns = m->c.pitch_y * 1e3;
    const double v[EV_OWN] = {
        [OWN_ISSUE] = (double)s->insns,
        [OWN_REGFILE] = (double)s->regs,
        [OWN_SRAM_RD] = (double)s->sram_rd / 8.0,
        [OWN_SRAM_WR] = (double)s->sram_wr / 8.0,
        /* a router traversal per wavelet per output port, ramp deliveries and injections included */
        [OWN_HOP] = (double)(ns + ew + s->delivered + s->injected),
        [OWN_WIRE] = (double)m->c.link_bits * ((double)ew * mm_ew + (double)ns * mm_ns)};
    for (int e = 0; e < EV_OWN; e++)
        ev[own_at(e, l->nev)] = v[e];
    uint64_t def[WSE_EV_ROWS] = {0}; /* the rows of one event summed as integers, then converted */
    for (size_t k = 0; k < WSE_EV_ROWS; k++)
        def[l->ev_of[k]] += s->ev[k];
    for (size_t e = 0; e < l->nev; e++)
        ev[OWN_REGFILE + 1 + e] = (double)def[e];
}

/* Floating-point operations, MACs and integer operations of counters s, from the .def rows' units
 * and element operations (wse_isa.c asserts every floating-point op but a move names an event, so
 * has a slot): a scalar FPU op or a vector add, subtract or multiply is one flop per issue or
 * element, a vector multiply-add two and one MAC; a scalar ALU op with an event (add, subtract,
 * multiply; not the moves, constants and coordinate reads) one integer op. */
static void flops_of(const wse_tstats *s, uint64_t *flops, uint64_t *macs, uint64_t *ints)
{
    *flops = *macs = *ints = 0;
    for (int op = 0; op < WSE_OP_COUNT; op++) {
        const wse_opfacts *f = &ts_wse_opfacts[op];
        if (f->ev == WSE_EV_ROWS)
            continue;
        if (f->unit == WSE_U_VEC && f->vop == WSE_V_MAC)
            *macs += s->ev[f->ev];
        else if (f->unit == WSE_U_FPU || (f->unit == WSE_U_VEC && f->vop != WSE_V_MOV))
            *flops += s->ev[f->ev];
        else if (f->unit == WSE_U_ALU)
            *ints += s->ev[f->ev];
    }
}

/* Table region_events: the energy events of the PEs in each region the run options asked for. */
static ts_status region_events(const ts_model *m, ts_stats *st, ts_err *err)
{
    if (!m->nregions)
        return TS_OK;
    wse_evlist l;
    evlist(&l);
    int tab = ts_results_events_table(st, WSE_STAT_REGION_EVENTS, "per region of PEs asked for (a lowered model's "
                                      "stages): the energy events of its PEs, to price it", "region", l.names,
                                      l.n);
    if (tab < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the region_events table");
    static const char *const rcols[] = {"region", "busy", "stall", "busiest", "link_wavelets"};
    static const char *const runits[] = {"", "cycles", "cycles", "cycles", ""};
    int rtab = ts_stats_table(st, WSE_STAT_REGION_STATS, "per region of PEs asked for: busy and stall cycles of its "
                              "PEs, its busiest PE's busy cycles, wavelets its routers sent over the links", 5, rcols,
                              runits);
    if (rtab < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the region_stats table");
    for (size_t i = 0; i < m->nregions; i++) {
        const ts_region *g = &m->regions[i];
        wse_tstats s = {0};
        uint64_t busiest = 0;
        for (uint64_t y = g->y; y < (uint64_t)g->y + g->h && y < m->h; y++)
            for (uint64_t x = g->x; x < (uint64_t)g->x + g->w && x < m->w; x++) {
                const wse_tile *t = m->t[y * m->w + x];
                if (!t)
                    continue;
                const uint64_t *a = (const uint64_t *)(const void *)&t->s;
                uint64_t *d = (uint64_t *)(void *)&s;
                for (size_t k = 0; k < sizeof s / sizeof(uint64_t); k++)
                    d[k] += a[k];
                busiest = t->s.busy > busiest ? t->s.busy : busiest;
            }
        double row[1 + EV_MAX];
        row[0] = (double)i;
        events_of(m, &l, &s, row + 1);
        if (ts_stats_row(st, tab, row) != TS_OK)
            return ts_err_set(err, TS_ENOMEM, "out of memory for the region_events table");
        double rrow[5] = {(double)i, (double)s.busy, (double)s.stall, (double)busiest,
                          (double)(s.link[WSE_N] + s.link[WSE_S] + s.link[WSE_E] + s.link[WSE_W])};
        if (ts_stats_row(st, rtab, rrow) != TS_OK)
            return ts_err_set(err, TS_ENOMEM, "out of memory for the region_stats table");
    }
    return TS_OK;
}

/* The value below which a share q of the packets' latencies lie (the histogram's bucket). */
static double percentile(const wse_trstats *s, double q)
{
    uint64_t want = (uint64_t)ceil(q * (double)s->packets), acc = 0;
    for (size_t i = 0; i < WSE_TR_HIST; i++)
        if ((acc += s->hist[i]) >= want && want)
            return i + 1 == WSE_TR_HIST ? (double)s->max : (double)i;
    return (double)s->max;
}

/* Synthetic traffic (docs/noc.md): the bands' sums of the stamped packets, and offered against
 * accepted rate, when the program stamps any colour. */
static ts_status traffic_stats(const ts_model *m, ts_stats *st, ts_err *err)
{
    wse_trstats *s = ts_calloc(1, sizeof *s);
    uint64_t window = 0, acc = 0, worst = UINT64_MAX;
    bool any = false;
    if (!s)
        return ts_err_set(err, TS_ENOMEM, "out of memory collecting results");
    for (size_t i = 0; i < m->nalloc; i++) {
        const wse_tile *t = m->t[m->alloc_ids[i]];
        if (t->stampm) {
            any = true;
            window = t->st_to - t->st_from;
        }
        acc += t->s.tr_accepted;
    }
    for (uint64_t id = 0; any && id < m->npes; id++) {
        const wse_tile *t = m->t[id];
        if (t && t->stampm && t->s.tr_accepted < worst) /* of the PEs the pattern sends to */
            worst = t->s.tr_accepted;
    }
    for (int k = 0; k < m->nthreads; k++) {
        const wse_trstats *b = m->band[k].tr;
        if (!b)
            continue;
        s->min = !s->packets || (b->packets && b->min < s->min) ? b->min : s->min;
        s->max = b->max > s->max ? b->max : s->max;
        s->packets += b->packets;
        s->flits += b->flits;
        s->sum += b->sum;
        for (size_t i = 0; i < WSE_TR_HIST; i++)
            s->hist[i] += b->hist[i];
        for (size_t d = 0; d <= WSE_TR_DIST_MASK; d++) {
            s->dn[d] += b->dn[d];
            s->dsum[d] += b->dsum[d];
            if (b->dmin1[d] && (!s->dmin1[d] || b->dmin1[d] < s->dmin1[d]))
                s->dmin1[d] = b->dmin1[d];
        }
    }
    ts_status rc = TS_OK;
    double nodes = (double)m->npes, win = window ? (double)window : 1;
    double avg = s->packets ? (double)s->sum / (double)s->packets : 0;
    static const char *const cols[4] = {"distance", "packets", "latency", "least"};
    static const char *const units[4] = {"hops", "", "cycles", "cycles"};
    int tab = -1;
#define F(name, unit, desc, v) if (!rc && ts_stats_f64(st, name, unit, desc, v)) rc = TS_ENOMEM
    if (any) {
        F("traffic.packets", "", "packets created in the measurement window and delivered", (double)s->packets);
        F("traffic.flits", "", "their flits", (double)s->flits);
        F("traffic.latency.avg", "cycles", "packet latency, creation to last flit at the core: mean", avg);
        F("traffic.latency.min", "cycles", "packet latency: least", (double)s->min);
        F("traffic.latency.max", "cycles", "packet latency: most", (double)s->max);
        F("traffic.latency.p50", "cycles", "packet latency: median", percentile(s, 0.5));
        F("traffic.latency.p90", "cycles", "packet latency: 90th percentile", percentile(s, 0.9));
        F("traffic.latency.p99", "cycles", "packet latency: 99th percentile", percentile(s, 0.99));
        F("traffic.offered", "flits/node/cycle", "flits created in the window per PE per window cycle",
          (double)s->flits / nodes / win);
        F("traffic.accepted", "flits/node/cycle", "flits taken by cores in the window per PE per window cycle",
          (double)acc / nodes / win);
        F("traffic.accepted_min", "flits/node/cycle", "the same at the PE that took least, of those sent to", (double)worst / win);
        if (!rc && ts_stats_hist(st, "traffic.latency_hist", "cycles", "packets per latency (the last bucket: "
                                 "1023 cycles or more)", s->hist, s->max + 1 < WSE_TR_HIST ? s->max + 1 : WSE_TR_HIST, 0, 1))
            rc = TS_ENOMEM;
        if (!rc && (tab = ts_stats_table(st, "traffic.latency_by_distance", "packet latency per distance: mean and least",
                                         4, cols, units)) < 0)
            rc = TS_ENOMEM;
        for (size_t d = 0; !rc && d <= WSE_TR_DIST_MASK; d++) {
            double row[4] = {(double)d, (double)s->dn[d], s->dn[d] ? (double)s->dsum[d] / (double)s->dn[d] : 0,
                             (double)s->dmin1[d] - 1};
            if (s->dn[d] && ts_stats_row(st, tab, row))
                rc = TS_ENOMEM;
        }
    }
#undef F
    ts_free(s);
    return rc ? ts_err_set(err, rc, "out of memory collecting the traffic statistics") : TS_OK;
}

static ts_status wse_collect(ts_model *m, ts_results *r, ts_err *err)
{
    wse_tstats s = {0};
    uint64_t colour[WSE_MAX_COLOURS] = {0};
    uint64_t hops_ew = 0, hops_ns = 0;
    uint64_t ces = 0;
    for (size_t i = 0; i < m->nalloc; i++) {
        const wse_tile *t = m->t[m->alloc_ids[i]];
        const uint64_t *a = (const uint64_t *)(const void *)&t->s;
        uint64_t *d = (uint64_t *)(void *)&s;
        for (size_t k = 0; k < sizeof s / sizeof(uint64_t); k++)
            d[k] += a[k];
        for (uint32_t c = 0; c < m->C; c++)
            colour[c] += t->pcolour[c];
        hops_ns += t->s.link[WSE_N] + t->s.link[WSE_S];
        hops_ew += t->s.link[WSE_E] + t->s.link[WSE_W];
        ces += t->ce != NULL;
    }
    uint64_t hops = hops_ns + hops_ew;
    uint64_t bytes_w = m->c.link_bits / 8;
    r->cycles = m->now;
    r->clock_hz = m->c.clock_hz;
    snprintf(r->net_name, sizeof r->net_name, "fabric");
    r->bytes[TS_LEVEL_SRAM] = s.sram_rd + s.sram_wr;
    r->bytes[TS_LEVEL_NET] = hops * bytes_w;
    r->bytes[TS_LEVEL_OFFCHIP] = m->offchip;
    uint64_t flops, macs, ints;
    flops_of(&s, &flops, &macs, &ints);
    r->macs = macs;
    r->flops = (double)flops + 2.0 * (double)macs;
    r->ops = r->flops + (double)ints;
    uint64_t links = 2 * ((m->c.width - 1) * m->c.height + m->c.width * (m->c.height - 1));
    ts_status rc = TS_OK;
#define CHK(x) do { if ((rc = (x)) != TS_OK) return rc; } while (0)
    CHK(ts_results_util(r, "pe", m->npes, s.busy, err));
    CHK(ts_results_util(r, "router", m->npes, s.router_busy, err));
    CHK(ts_results_util(r, "link", links, hops, err));
    /* energy events, every one even when none happened: pricing fails on a name the energy table
     * lacks, so a .def event no table prices fails every run rather than go uncharged */
    wse_evlist l;
    evlist(&l);
    double ev[EV_MAX];
    events_of(m, &l, &s, ev);
    for (size_t e = 0; e < l.n; e++)
        CHK(ts_results_event(r, l.names[e], ev[e], err));
    CHK(region_events(m, r->stats, err));
    /* family statistics */
    ts_stats *st = r->stats;
#define U(name, unit, desc, v) CHK(ts_stats_u64(st, name, unit, desc, v) ? ts_err_set(err, TS_ENOMEM, "cannot add %s", name) : TS_OK)
    U("mesh.pes", "", "PEs in the mesh", m->npes);
    r->occupancy = ces < m->npes ? (double)ces / (double)m->npes : 0;
    U("mesh.pes_touched", "", "PEs with code, data or routes", (uint64_t)m->nalloc);
    U("mesh.pes_with_code", "", "PEs running a program", ces);
    U("pe.busy", "cycles", "PE-cycles issuing an instruction or advancing a vector op", s.busy);
    U("pe.stall", "cycles", "PE-cycles that wanted to progress and could not", s.stall);
    U("pe.stall.fabric_in", "cycles", "stalled on an empty input queue", s.stall_in);
    U("pe.stall.fabric_out", "cycles", "stalled on a full ramp or output queue", s.stall_out);
    U("pe.stall.memory", "cycles", "stalled on SRAM ports", s.stall_mem);
    U("pe.stall.thread", "cycles", "stalled on a busy microthread", s.stall_thread);
    U("pe.idle", "cycles", "PE-cycles of PEs with code neither busy nor stalled", ces * m->now - s.busy - s.stall);
    U("pe.instructions", "", "instructions issued", s.insns);
    U("pe.tasks", "", "tasks started by the picker", s.tasks);
    U("sram.read", "B", "SRAM bytes read", s.sram_rd);
    U("sram.written", "B", "SRAM bytes written", s.sram_wr);
    U("fabric.wavelets_injected", "", "wavelets sent by cores", s.injected);
    U("fabric.wavelets_delivered", "", "wavelets handed to cores", s.delivered);
    U("fabric.hops", "", "router-to-router link traversals", hops);
    U("fabric.bytes", "B", "wavelet bytes times hops", hops * bytes_w);
    U("fabric.router_busy", "cycles", "router-cycles forwarding at least one wavelet", s.router_busy);
    {
        double ps[WSE_NPORTS];
        for (int p = 0; p < WSE_NPORTS; p++)
            ps[p] = (double)s.port_stall[p];
        CHK(ts_stats_array(st, "fabric.port_stall", "cycles", "router-cycles an input port (N, S, E, W, R: from the "
                           "core) held wavelets and forwarded none, summed over PEs", ps, WSE_NPORTS)
                ? ts_err_set(err, TS_ENOMEM, "out of memory") : TS_OK);
        /* a wavelet pushed in cycle c and popped in cycle d was queued at the start of cycles c + 1 .. d;
         * one still queued at the end, up to the last cycle simulated */
        uint64_t left = 0;
        for (size_t i = 0; i < m->nalloc; i++) {
            const wse_tile *t = m->t[m->alloc_ids[i]];
            for (uint32_t j = 0; j < t->nrq; j++)
                left += q_occ(&t->lq[j]);
        }
        double occ = (double)(s.rq_pop_at - s.rq_push_at) + (double)left * (double)(m->now ? m->now - 1 : 0);
        CHK(ts_stats_f64(st, "fabric.buffer_occupancy", "", "wavelets in a router's input queues, mean over "
                         "routers and cycles", m->now ? occ / (double)m->npes / (double)m->now : 0)
                ? ts_err_set(err, TS_ENOMEM, "out of memory") : TS_OK);
    }
    {
        double pc[WSE_MAX_COLOURS];
        for (uint32_t c = 0; c < m->C; c++)
            pc[c] = (double)colour[c];
        CHK(ts_stats_array(st, "fabric.wavelets_per_colour", "", "router forwards per colour", pc, m->C)
                ? ts_err_set(err, TS_ENOMEM, "out of memory") : TS_OK);
        for (uint32_t c = 0; c < m->C; c++)
            pc[c] = (double)colour[c] * (double)bytes_w;
        CHK(ts_stats_array(st, "fabric.bytes_per_colour", "B", "router forward bytes per colour", pc, m->C)
                ? ts_err_set(err, TS_ENOMEM, "out of memory") : TS_OK);
    }
    if (m->npes <= m->c.pe_array_limit) {
        CHK(add_array(m, r, WSE_STAT_BUSY_PER_PE, "cycles", "busy cycles of each PE (index y * width + x)",
                      offsetof(wse_tstats, busy), 0, err));
        CHK(add_array(m, r, WSE_STAT_STALL_PER_PE, "cycles", "stall cycles of each PE", offsetof(wse_tstats, stall), 0, err));
        {
            double *v = ts_calloc(m->npes, sizeof *v);
            if (!v)
                return ts_err_set(err, TS_ENOMEM, "out of memory collecting results");
            for (size_t i = 0; i < m->nalloc; i++) {
                const wse_tile *t = m->t[m->alloc_ids[i]];
                if (t->ce)
                    v[t->id] = (double)(m->now - t->s.busy - t->s.stall);
            }
            rc = ts_stats_array(r->stats, "pe.idle_per_pe", "cycles",
                                "cycles each PE with code was neither busy nor stalled", v, m->npes);
            ts_free(v);
            if (rc)
                return ts_err_set(err, rc, "cannot add statistic pe.idle_per_pe");
        }
        static const char *const ln[4] = {WSE_STAT_LINK_NORTH, WSE_STAT_LINK_SOUTH, WSE_STAT_LINK_EAST,
                                          WSE_STAT_LINK_WEST};
        for (int p = 0; p < 4; p++)
            CHK(add_array(m, r, ln[p], "", "wavelets each PE's router sent over this link (heat map)",
                          offsetof(wse_tstats, link), (size_t)p, err));
    }
    CHK(traffic_stats(m, st, err));
#undef U
#undef CHK
    return TS_OK;
}

/* ------------------------------------------------------------------------------------------ */

void ts_wse_counts_get(const ts_model *m, ts_wse_counts *out)
{
    memset(out, 0, sizeof *out);
    out->cycles = m->now;
    out->tile_cycles = m->tile_cycles;
    for (size_t i = 0; i < m->nalloc; i++) {
        const wse_tile *t = m->t[m->alloc_ids[i]];
        out->wavelets_injected += t->s.injected;
        out->wavelets_delivered += t->s.delivered;
        out->hops += t->s.link[0] + t->s.link[1] + t->s.link[2] + t->s.link[3];
        out->insns += t->s.insns;
        out->pe_working += t->s.busy + t->s.stall;
        out->sram_read += t->s.sram_rd;
        out->sram_written += t->s.sram_wr;
    }
}

int ts_wse_read_sram(const ts_model *m, uint32_t x, uint32_t y, uint64_t addr, void *dst, size_t n)
{
    if (x >= m->w || y >= m->h || addr + n > m->c.sram_bytes)
        return -1;
    const wse_tile *t = m->t[(uint64_t)y * m->w + x];
    if (!t || !t->mem)
        memset(dst, 0, n);
    else
        memcpy(dst, t->mem + addr, n);
    return 0;
}

uint64_t ts_wse_arrival(const ts_model *m, uint32_t x, uint32_t y, uint32_t c, uint32_t k)
{
    if (x >= m->w || y >= m->h || c >= m->C || k >= WSE_ARRIVAL_LOG)
        return UINT64_MAX;
    const wse_tile *t = m->t[(uint64_t)y * m->w + x];
    uint8_t j = t && t->narr ? t->qmap[5 * m->C + c] : WSE_NOQ; /* narr: the queues are built */
    if (j == WSE_NOQ || t->narr[j - t->nrq] <= k)
        return UINT64_MAX;
    return t->log[(j - t->nrq) * WSE_ARRIVAL_LOG + k];
}

uint64_t ts_wse_arrivals(const ts_model *m, uint32_t x, uint32_t y, uint32_t c)
{
    if (x >= m->w || y >= m->h || c >= m->C)
        return 0;
    const wse_tile *t = m->t[(uint64_t)y * m->w + x];
    uint8_t j = t && t->narr ? t->qmap[5 * m->C + c] : WSE_NOQ; /* narr: the queues are built */
    return j == WSE_NOQ ? 0 : t->narr[j - t->nrq];
}

/* for the family table */
void ts_wse_blocked(ts_model *m, ts_buf *out) { wse_blocked(m, out); }
ts_status ts_wse_collect(ts_model *m, ts_results *r, ts_err *err) { return wse_collect(m, r, err); }
