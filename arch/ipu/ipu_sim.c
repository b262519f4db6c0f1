/* arch/ipu/ipu_sim.c — the IPU cycle model: barrel-scheduled tiles, AMP, BSP sync, a compiled
 * (statically timed) exchange and host transfers at the sync.
 *
 * Time model (research/graphcore_ipu.md §8.1):
 *  - A tile has one supervisor and W worker contexts (W = tile.worker_contexts, 6). Slot s = cycle
 *    mod W belongs to worker s while it runs and to the supervisor otherwise, so a worker issues at
 *    most once every W cycles and the supervisor fills every free slot (§2.1, GC-asm, GC-blog).
 *  - A load's result is ready tile.load_latency cycles after its issue; the context cannot issue
 *    again before that (with 6 contexts and 6 cycles the barrel hides it exactly, §2.1).
 *  - The exchange is statically timed (§2.4): `send` puts exchange.bytes_per_cycle on the fabric
 *    each cycle; a word sent at t by tile s reaches tile d at t + L(s, d), L from the tiles'
 *    positions (§8.1 item 3). The receiver's mux and pointer are set by `recv` at the cycle the
 *    program issues it; words arriving while the mux selects their sender land at the pointer.
 *  - `sync 1` is the chip-wide barrier: released sync.internal_cycles after the last tile
 *    arrives (§2.5), plus the host transfers of the superstep (§2.6).
 *
 * Engine: conservative windows. Every round advances each running tile on its own to H =
 * now + window, window = min(exchange latency, sync latency), so nothing a tile does inside a
 * round can be seen by another tile in the same round: tiles can be split over threads and the
 * result does not depend on their order or number. Words sent in a round are appended to a
 * per-tile pending log and committed between rounds. The fast mode also lets a tile run past
 * the round while it reads no other tile's words (see reads_others), skips cycles in which no
 * context can issue and nothing arrives, and runs store-free repeat loops in closed form (see
 * closed_form_turns); --lockstep uses one-cycle rounds and visits every cycle of every tile. Both
 * follow the same per-cycle rule, so their reports are equal (every test program checks it).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "arch/ipu/ipu_int.h"
#include "core/activity.h"
#include "core/alloc.h"
#include "core/sim.h"
#include "core/trace.h"

#define PAGE_SHIFT 12
#define PAGE_SIZE (1u << PAGE_SHIFT)
#define MAX_CTX 9
#define ACC_MAX 64

/* One predecoded instruction. */
typedef struct ipu_insn {
    uint8_t op, r0, r1, r2;
    int32_t imm, imm2;
    uint32_t tgt;
    uint8_t r3, r4;         /* fourth and fifth register operands (the paced loads and stores) */
    uint8_t member;         /* inside a bundle: issued by its `{`, never on its own */
    uint8_t bundled;        /* rpt/rpti: the body holds bundles (issues != instructions) */
    uint8_t ctx_ok;         /* bit 0: the supervisor may issue it, bit 1: a worker may */
    uint8_t pure;           /* rpt/rpti: the body writes nothing another context reads (no store,
                             * no coefficient load), so turns of it can run in closed form */
    uint64_t hits;          /* times issued: counted here, on the line the fetch has just read,
                             * rather than in a per-op table elsewhere (about 5 % of the
                             * executor's time in bench_ipu_bsp) */
} ipu_insn;

typedef struct ipu_ctx {
    uint32_t r[IPU_NREGS];
    uint32_t pc;
    uint32_t rpt_start, rpt_end, rpt_left;
    uint64_t ready;         /* earliest cycle this context may issue again */
    float acc[ACC_MAX];     /* worker AMP accumulators */
} ipu_ctx;

/* A word on the fabric. */
typedef struct ipu_word {
    uint64_t t;             /* cycle it left the sender */
    uint32_t val;
    int32_t dst;            /* receiving tile, -1 = any tile listening */
    uint8_t claimed;        /* set by the receiver of a unicast word */
    uint32_t delay;         /* cycles it waited in the spine's buffered stage (see spine_column);
                             * set once every tile has passed t, 0 until then */
} ipu_word;

typedef struct ipu_wlog {
    ipu_word *v;
    size_t n, cap;
} ipu_wlog;

/* A span of exchange activity kept for the activity sampler: [a, b), with the bytes sent in it. */
typedef struct ipu_xspan {
    uint64_t a, b, bytes;
} ipu_xspan;

typedef struct ipu_hostop {
    uint32_t addr;
    uint64_t haddr;
    uint32_t bytes;
    uint8_t to_host;
} ipu_hostop;

enum { SUP_RUN, SUP_SYNC, SUP_DONE };

typedef struct ipu_tile {
    ipu_insn *code;         /* borrowed from the model's decoded program (hit counts written) */
    uint32_t n;
    uint32_t ncode;         /* instructions that take code memory (the bundle braces take none) */
    uint64_t work;          /* instructions issued + words received (the hang detector's counter);
                             * next to the code pointer so the issue path touches one line */
    uint64_t *opcnt;        /* executions per op (IPU_OP_COUNT; the `{` of a bundle counts as
                             * IPU_OP_BUNDLE, its members as their ops), in the model's op_block;
                             * NULL unless the run asked for superstep_events (opts.phase_events) */
    uint64_t *opseen;       /* opcnt at the last sync 1 (superstep_events) */
    const uint8_t *ops;     /* the ops its code holds (nops of them), in the model's op_block */
    uint32_t nops;
    uint8_t **page;         /* owned pages, allocated on first write */
    ipu_ctx cx[MAX_CTX];    /* 0 = supervisor, 1..W = workers */
    uint32_t running;       /* bit w: worker w runs */
    uint8_t sup;            /* SUP_* */
    /* AMP coefficient state, shared by the workers (research §2.2) */
    uint8_t coef[256];
    float w16[128], w32[64];
    /* receive side */
    int32_t rx_src;         /* -1 = input mux off */
    uint32_t rx_addr, rx_left, rx_n, rx_lat;
    uint64_t rx_armed;
    size_t rx_cursor;
    /* send side */
    uint64_t tx_t0, tx_end;
    uint32_t tx_addr, tx_n;
    ipu_wlog pend, log;     /* this round's words; committed words of this superstep */
    size_t fin;             /* log words before this have their spine delay set */
    uint64_t xch_until;     /* exchange activity is counted up to this cycle */
    uint64_t xch_cycles;    /* cycles with exchange activity this superstep */
    ipu_xspan *xs; size_t nxs, cap_xs; /* those cycles as spans, kept only with opts.activity */
    bool rec;               /* keep xs (opts.activity or opts.trace is set) */
    bool rec_nomem;         /* growing xs failed */
    uint64_t arrival;       /* cycle of the last sync 1 */
    uint64_t finish;        /* cycle after halt */
    ipu_hostop *host; size_t nhost, cap_host;
    /* counters (instructions are counted in ipu_insn.hits) */
    uint64_t xsent, xrecv, xport; /* bytes sent, bytes received, send-port cycles */
    double wire_bit_mm;
    uint64_t mem_hi;
    uint64_t ss_xbytes;     /* bytes sent this superstep */
    uint64_t ss_uni, ss_claims; /* unicast words sent this superstep; words addressed to this tile
                             * that it received (all received when the sums are equal) */
    bool failed;            /* stopped by an error that is not reported yet */
} ipu_tile;

/* Energy events, named as in the shipped tables (ipu_collect). */
enum { EV_FP32_MAC, EV_FP16_MAC, EV_FP32_ADD, EV_FP32_MUL, EV_FP16_ADD, EV_FP16_MUL, EV_INT32_ADD,
       EV_SRAM_RD, EV_SRAM_WR, EV_REGFILE, EV_WIRE, EV_PCIE, EV_ISSUE, EV_COUNT };
static const char *const ev_names[EV_COUNT] = {
    "fp32_mac", "fp16_mac", "fp32_add", "fp32_mul", "fp16_add", "fp16_mul", "int32_add",
    "sram_read_64b", "sram_write_64b", "regfile_32b", "wire_bit_mm", "pcie_bit", "insn_issue",
};

typedef struct ipu_ss {
    uint64_t start, compute, exchange, sync, critical, xbytes, hbytes;
    double ev[EV_COUNT];    /* the energy events of the superstep (ss_events) */
} ipu_ss;

/* What one thread saw of its tiles at the end of a round, after committing their words: the
 * main thread decides from these instead of scanning every tile. Padded so that threads do not
 * write one cache line. */
typedef struct ipu_tsum {
    uint64_t work;          /* sum of the tiles' work counters */
    uint64_t uni, claims;   /* sums of ss_uni and ss_claims */
    uint64_t last_arrival;  /* latest arrival at the pending sync (a halt this superstep counts) */
    uint32_t live;          /* tiles not done */
    uint32_t at_sync;       /* tiles at a chip-wide sync */
    uint32_t waiting;       /* tiles idle at rxwait (may be stuck: see tile_stuck) */
    bool pending;           /* a tile failed and its error is not reported yet */
    bool nomem;             /* committing words ran out of memory */
    char pad[128 - 4 * sizeof(uint64_t) - 3 * sizeof(uint32_t) - 2 * sizeof(bool)];
} ipu_tsum;

typedef struct ipu_terr {
    ts_err err;       /* the thread's earliest error (lowest cycle, then tile) */
    ts_err scratch;   /* where a tile writes its error */
    bool failed;
} ipu_terr;

struct ts_model {
    ts_ipu_cfg c;
    ts_trace *trace;         /* borrowed, may be NULL */
    ts_activity *act;        /* borrowed, may be NULL: tile states are recorded between rounds */
    bool trace_named;
    uint32_t trace_group;    /* tiles per track of the trace: 1, or whole columns (trace_plan) */
    uint64_t sync_texts;     /* the most `sync 1` in one tile's program text: supersteps, estimated */
    bool lockstep;
    int nthreads;
    uint32_t W;
    uint32_t all_workers;    /* (1 << W) - 1 */
    bool closed_form;        /* fast mode and tile.load_latency <= W: see closed_form_turns */
    uint64_t now, work, window;
    bool done, loaded;
    uint32_t ntiles;
    ipu_tile *t;
    uint64_t *tnow;          /* per-tile cycle (SoA hot state) */
    ipu_insn *code;          /* owned, all streams back to back */
    uint8_t *zero_page;
    uint8_t *hostmem;
    uint64_t end;
    uint64_t ss_start;
    ipu_ss *ss; size_t nss, cap_ss;
    uint64_t xrecv_seen;    /* the tiles' xrecv and wire_bit_mm summed at the last sync */
    double wire_seen;
    void *op_block;          /* owned, NULL unless phase_events: the tiles' opcnt, opseen and ops */
    bool phase_events;       /* opts.phase_events: count ops per tile for superstep_events */
    uint64_t host_bytes_total, host_cycles_total;
    /* threads */
    pthread_t *th;
    int nstarted;            /* helper threads running (1 .. nthreads - 1 once all started) */
    /* the main thread and the helpers meet at a sense-reversing barrier three times per round
     * (run, commit, decide); it spins on C11 atomics and sleeps on bar_cv when spinning long */
    _Atomic uint32_t bar_count, bar_sense, bar_sleepers;
    uint32_t main_sense;     /* the main thread's sense */
    pthread_mutex_t bar_mu;
    pthread_cond_t bar_cv;
    pthread_mutex_t gate_mu; /* helpers wait at the gate until every one of them has started */
    pthread_cond_t gate_cv;
    int gate;                /* 0 wait, 1 go, 2 quit */
    bool bar_init, gate_init, quit;
    uint64_t round_h;
    uint32_t *tgroup;        /* per tile: its column group (tile / tiles_per_column / columns_per_group) */
    uint64_t *spine_e;       /* per column: the first cycle its next words may enter the spine
                              * (one cycle after its last ones, see spine_column) */
    uint32_t ncols;
    ipu_terr *terr;
    ipu_tsum *tsum;          /* one per thread */
};

static inline float rf(uint32_t v) { float f; memcpy(&f, &v, 4); return f; }
static inline uint32_t fr(float f) { uint32_t v; memcpy(&v, &f, 4); return v; }

/* ---- positions and latency ---- */

static void tile_pos(const ts_ipu_cfg *c, uint32_t t, int64_t *col, int64_t *row)
{
    *col = (int64_t)(t / c->tiles_per_column);
    *row = (int64_t)(t % c->tiles_per_column);
}

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

static double wire_mm(const ts_ipu_cfg *c, uint32_t s, uint32_t d)
{
    int64_t cs, rs, cd, rd;
    tile_pos(c, s, &cs, &rs);
    tile_pos(c, d, &cd, &rd);
    return (double)(llabs(cs - cd) + llabs(rs - rd)) * c->tile_pitch_m * 1e3;
}

/* ---- tile memory, paged ---- */

static inline const uint8_t *rd_ptr(ts_model *m, ipu_tile *t, uint64_t a)
{
    uint8_t *p = t->page[a >> PAGE_SHIFT];
    return (p ? p : m->zero_page) + (a & (PAGE_SIZE - 1));
}

static inline uint8_t *wr_ptr(ipu_tile *t, uint64_t a, uint32_t len)
{
    uint8_t **pp = &t->page[a >> PAGE_SHIFT];
    if (!*pp) {
        *pp = ts_calloc(1, PAGE_SIZE);
        if (!*pp)
            return NULL;
    }
    if (a + len > t->mem_hi)
        t->mem_hi = a + len;
    return *pp + (a & (PAGE_SIZE - 1));
}

static ts_status mem_write_bytes(ts_model *m, ipu_tile *t, uint64_t a, const uint8_t *src, uint64_t len, ts_err *err)
{
    while (len) {
        uint64_t chunk = PAGE_SIZE - (a & (PAGE_SIZE - 1));
        if (chunk > len)
            chunk = len;
        uint8_t *p = wr_ptr(t, a, (uint32_t)chunk);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, src, chunk);
        a += chunk;
        src += chunk;
        len -= chunk;
    }
    (void)m;
    return TS_OK;
}

static void mem_read_bytes(ts_model *m, ipu_tile *t, uint64_t a, uint8_t *dst, uint64_t len)
{
    while (len) {
        uint64_t chunk = PAGE_SIZE - (a & (PAGE_SIZE - 1));
        if (chunk > len)
            chunk = len;
        memcpy(dst, rd_ptr(m, t, a), chunk);
        a += chunk;
        dst += chunk;
        len -= chunk;
    }
}

/* Count [a, b) as cycles of exchange activity (send port busy, a receive armed, a delay),
 * without counting a cycle twice when intervals overlap. */
static void xch_busy(struct ipu_tile *t, uint64_t a, uint64_t b, uint64_t bytes);
static void bar_wait(ts_model *m, uint32_t *sense);
static bool arrived_at(const ts_model *m, const struct ipu_tile *t, uint64_t *at);

/* ---- create / destroy ---- */

static void ipu_destroy(ts_model *m)
{
    if (!m)
        return;
    if (m->nstarted) {
        m->quit = true;
        bar_wait(m, &m->main_sense);
        for (int i = 1; i <= m->nstarted; i++)
            pthread_join(m->th[i], NULL);
    }
    ts_free(m->th);
    if (m->bar_init) {
        pthread_mutex_destroy(&m->bar_mu);
        pthread_cond_destroy(&m->bar_cv);
    }
    if (m->gate_init) {
        pthread_mutex_destroy(&m->gate_mu);
        pthread_cond_destroy(&m->gate_cv);
    }
    if (m->t) {
        uint64_t npages = (m->c.sram_bytes + PAGE_SIZE - 1) >> PAGE_SHIFT;
        for (uint32_t i = 0; i < m->ntiles; i++) {
            ipu_tile *t = &m->t[i];
            if (t->page)
                for (uint64_t p = 0; p < npages; p++)
                    ts_free(t->page[p]);
            ts_free(t->page);
            ts_free(t->pend.v);
            ts_free(t->log.v);
            ts_free(t->host);
            ts_free(t->xs);
        }
    }
    if (m->terr)
        for (int i = 0; i < m->nthreads; i++) {
            ts_err_free(&m->terr[i].err);
            ts_err_free(&m->terr[i].scratch);
        }
    ts_free(m->terr);
    ts_free(m->tsum);
    ts_free(m->spine_e);
    ts_free(m->tgroup);
    ts_free(m->t);
    ts_free(m->op_block);
    ts_free(m->tnow);
    ts_free(m->code);
    ts_free(m->zero_page);
    ts_free(m->hostmem);
    ts_free(m->ss);
    ts_free(m);
}

static void *worker_main(void *arg);

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
static ts_status act_layout(ts_model *m, ts_err *err)
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
    ts_free(x);
    ts_free(y);
    ts_activity_describer(m->act, act_describe, m);
    return rc;
}

/* Record tile i over [from, to): compute, with its exchange spans as network, up to busy_end;
 * then `after` (sync wait or idle) up to `to`. Clears the tile's exchange spans. */
static void act_tile(ts_model *m, uint32_t i, uint64_t from, uint64_t busy_end, ts_act_state after, uint64_t to)
{
    ipu_tile *t = &m->t[i];
    uint64_t c = from;
    for (size_t k = 0; k < t->nxs; k++) {
        const ipu_xspan *x = &t->xs[k];
        uint64_t a = x->a < from ? from : x->a, b = x->b > busy_end ? busy_end : x->b;
        ts_activity_bytes(m->act, a, x->bytes);
        if (b <= a)
            continue;
        ts_activity_span(m->act, i, TS_ACT_COMPUTE, c, a);
        ts_activity_span(m->act, i, TS_ACT_NETWORK, a, b);
        c = b;
    }
    ts_activity_span(m->act, i, TS_ACT_COMPUTE, c, busy_end);
    ts_activity_span(m->act, i, after, busy_end > from ? busy_end : from, to);
    t->nxs = 0;
}

static ts_status act_nomem(ts_model *m, ts_err *err)
{
    for (uint32_t i = 0; i < m->ntiles; i++)
        if (m->t[i].rec_nomem)
            return ts_err_set(err, TS_ENOMEM, "out of memory recording tile activity");
    return TS_OK;
}

typedef struct ipu_thread_arg {
    ts_model *m;
    int id;
} ipu_thread_arg;

ts_status ts_ipu_create_cfg(ts_model **out, const void *cfgp, const ts_run_opts *opts, ts_err *err)
{
    const ts_ipu_cfg *c = cfgp;
    ts_model *m = ts_calloc(1, sizeof *m);
    if (!m)
        return ts_err_set(err, TS_ENOMEM, "out of memory creating the ipu model");
    m->c = *c;
    m->c.variant = NULL; /* not owned */
    m->lockstep = opts && opts->lockstep;
    m->phase_events = opts && opts->phase_events;
    m->trace = opts ? opts->trace : NULL;
    m->act = opts ? opts->activity : NULL;
    m->W = (uint32_t)c->worker_contexts;
    m->all_workers = (1u << m->W) - 1;
    m->closed_form = !m->lockstep && c->load_latency <= c->worker_contexts;
    m->ntiles = (uint32_t)c->tiles;
    m->window = c->lat_base < c->sync_cycles ? c->lat_base : c->sync_cycles;
    if (m->window < 1)
        m->window = 1;
    m->nthreads = opts && opts->threads > 1 ? opts->threads : 1;
    if (m->nthreads > 64)
        m->nthreads = 64;
    if ((uint32_t)m->nthreads > m->ntiles)
        m->nthreads = (int)m->ntiles;
    uint64_t npages = (c->sram_bytes + PAGE_SIZE - 1) >> PAGE_SHIFT;
    m->t = ts_calloc(m->ntiles, sizeof *m->t);
    m->tnow = ts_calloc(m->ntiles, sizeof *m->tnow);
    m->zero_page = ts_calloc(1, PAGE_SIZE);
    m->terr = ts_calloc((size_t)m->nthreads, sizeof *m->terr);
    m->tsum = ts_calloc((size_t)m->nthreads, sizeof *m->tsum);
    m->ncols = (uint32_t)((m->ntiles + c->tiles_per_column - 1) / c->tiles_per_column);
    m->spine_e = ts_calloc(m->ncols, sizeof *m->spine_e);
    m->tgroup = ts_malloc((m->ntiles ? m->ntiles : 1) * sizeof *m->tgroup);
    if (!m->t || !m->tnow || !m->zero_page || !m->terr || !m->tsum || !m->spine_e || !m->tgroup) {
        ipu_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory creating the ipu model");
    }
    for (uint32_t i = 0; i < m->ntiles; i++)
        m->tgroup[i] = (uint32_t)(i / c->tiles_per_column / (c->columns_per_group ? c->columns_per_group : 1));
    for (int i = 0; i < m->nthreads; i++) {
        ts_err_init(&m->terr[i].err);
        ts_err_init(&m->terr[i].scratch);
    }
    for (uint32_t i = 0; i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        t->page = ts_calloc(npages, sizeof *t->page);
        if (!t->page) {
            ipu_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "out of memory creating the ipu model");
        }
        t->sup = SUP_DONE; /* tiles without a stream do nothing */
        t->rx_src = -1;
        t->rec = m->act != NULL || m->trace != NULL; /* the exchange spans feed both */
    }
    if (m->act) {
        ts_status rc = act_layout(m, err);
        if (rc != TS_OK) {
            ipu_destroy(m);
            return rc;
        }
    }
    if (m->nthreads > 1) {
        if (pthread_mutex_init(&m->bar_mu, NULL)) {
            ipu_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "cannot create a mutex");
        }
        if (pthread_cond_init(&m->bar_cv, NULL)) {
            pthread_mutex_destroy(&m->bar_mu);
            ipu_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "cannot create a condition variable");
        }
        m->bar_init = true;
        if (pthread_mutex_init(&m->gate_mu, NULL)) {
            ipu_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "cannot create a mutex");
        }
        if (pthread_cond_init(&m->gate_cv, NULL)) {
            pthread_mutex_destroy(&m->gate_mu);
            ipu_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "cannot create a condition variable");
        }
        m->gate_init = true;
        m->th = ts_calloc((size_t)m->nthreads, sizeof *m->th);
        int failed_at = m->th ? 0 : 1;
        for (int i = 1; i < m->nthreads && !failed_at; i++) {
            ipu_thread_arg *a = ts_malloc(sizeof *a);
            if (a) {
                a->m = m;
                a->id = i;
            }
            if (!a || pthread_create(&m->th[i], NULL, worker_main, a)) {
                ts_free(a);
                failed_at = i;
                break;
            }
            m->nstarted = i;
        }
        /* open the gate: to work, or, when a thread could not start, to leave before the
         * barrier (which counts every thread) is ever used */
        pthread_mutex_lock(&m->gate_mu);
        m->gate = failed_at ? 2 : 1;
        pthread_cond_broadcast(&m->gate_cv);
        pthread_mutex_unlock(&m->gate_mu);
        if (failed_at) {
            for (int i = 1; i <= m->nstarted; i++)
                pthread_join(m->th[i], NULL);
            m->nstarted = 0;
            ipu_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "cannot start host thread %d", failed_at);
        }
    }
    *out = m;
    return TS_OK;
}

static ts_status ipu_create(ts_model **out, const ts_config *cfg, const ts_run_opts *opts, ts_err *err)
{
    return ts_ipu_create_cfg(out, ts_config_data(cfg), opts, err);
}

/* ---- load: validate and predecode ---- */

static bool is_body_op(uint8_t unit, uint8_t op)
{
    return (unit == IPU_U_ALU || unit == IPU_U_MEM || unit == IPU_U_FPU || unit == IPU_U_AMP ||
            op == IPU_OP_NOP || op == IPU_OP_BUNDLE || op == IPU_OP_BUNDLE_END);
}

static ts_status decode_one(const ts_insn *in, uint32_t pc, uint32_t n, uint32_t tile, ipu_insn *out, ts_err *err)
{
    if (in->op >= IPU_OP_COUNT)
        return ts_err_sim(err, tile, -1, "pc %u: opcode %u is not an ipu instruction", pc, in->op);
    const ts_opinfo *oi = &ts_ipu_isa.ops[in->op];
    const char *cls = ts_ipu_opfacts[in->op].classes;
    memset(out, 0, sizeof *out);
    out->op = (uint8_t)in->op;
    char cx = ts_ipu_opfacts[in->op].ctx;
    out->ctx_ok = (uint8_t)((cx != 'W' ? 1 : 0) | (cx != 'S' ? 2 : 0));
    int nreg = 0, nimm = 0;
    for (int k = 0; cls[k]; k++) {
        int32_t v = in->a[k];
        char ch = cls[k];
        if (ch == 'i' || ch == 'f') {
            if (nimm++ == 0)
                out->imm = v;
            else
                out->imm2 = v;
            continue;
        }
        if (ch == 'l') {
            if (v < 0 || (uint32_t)v > n)
                return ts_err_sim(err, tile, -1, "pc %u: %s target %d is outside the stream", pc, oi->mnemonic, v);
            out->tgt = (uint32_t)v;
            continue;
        }
        bool ok = v >= 0 && v < IPU_NREGS;
        if (ok && ch == 'm')
            ok = v < IPU_AREG0;
        if (ok && (ch == 'a' || ch == 'p' || ch == 'q'))
            ok = v >= IPU_AREG0;
        if (ok && ch == 'p')
            ok = (v - IPU_AREG0) % 2 == 0;
        if (ok && ch == 'q')
            ok = (v - IPU_AREG0) % 4 == 0;
        if (!ok) {
            const char *want = ch == 'm' ? "an $m register" : ch == 'a' ? "an $a register" :
                               ch == 'p' ? "an even $a register (a pair)" :
                               ch == 'q' ? "an $a register that is a multiple of 4 (a quad)" : "a register";
            return ts_err_sim(err, tile, -1, "pc %u: %s operand %d must be %s", pc, oi->mnemonic, k + 1, want);
        }
        uint8_t r = (uint8_t)v;
        if (nreg == 0)
            out->r0 = r;
        else if (nreg == 1)
            out->r1 = r;
        else if (nreg == 2)
            out->r2 = r;
        else if (nreg == 3)
            out->r3 = r;
        else
            out->r4 = r;
        nreg++;
    }
    return TS_OK;
}

/* Registers an instruction reads and writes, as bit masks over the 32 registers (pairs and quads
 * cover 2 and 4). */
static void reg_masks(const ts_insn *in, uint32_t *rd, uint32_t *wr)
{
    const ts_opinfo *oi = &ts_ipu_isa.ops[in->op];
    const char *cls = ts_ipu_opfacts[in->op].classes;
    *rd = *wr = 0;
    for (int k = 0; cls[k]; k++) {
        char ch = cls[k];
        if (ch == 'i' || ch == 'f' || ch == 'l')
            continue;
        uint32_t w = ch == 'p' ? 2 : ch == 'q' ? 4 : 1;
        uint32_t bits = (uint32_t)((1ull << w) - 1) << (in->a[k] & 31);
        if (oi->opnd[k] & TS_OR_READ)
            *rd |= bits;
        if (oi->opnd[k] & TS_OR_WRITE)
            *wr |= bits;
    }
}

/* Bundles (`{` main aux `}`): the shape, the pipelines, and that the two instructions cannot see
 * each other within the issue: the auxiliary one runs first on the registers as they were, so
 * the main one may not read or write a register the auxiliary one writes. No branch enters a
 * bundle. Marks the members. */
static ts_status check_bundles(const ts_stream *s, ipu_insn *code, ts_err *err)
{
    for (uint32_t pc = 0; pc < s->n; pc++) {
        if (code[pc].op == IPU_OP_BUNDLE_END && !code[pc].member)
            return ts_err_sim(err, s->index, -1, "pc %u: } without {", pc);
        if (code[pc].op != IPU_OP_BUNDLE)
            continue;
        if (pc + 3 >= s->n || code[pc + 3].op != IPU_OP_BUNDLE_END)
            return ts_err_sim(err, s->index, -1, "pc %u: a bundle is {, one main-pipeline instruction, one auxiliary "
                              "one and }", pc);
        uint8_t mo = code[pc + 1].op, ao = code[pc + 2].op;
        uint8_t mu = ts_ipu_opfacts[mo].unit, au = ts_ipu_opfacts[ao].unit;
        if (!(mu == IPU_U_ALU || mu == IPU_U_MEM || mo == IPU_OP_NOP))
            return ts_err_sim(err, s->index, -1, "pc %u: %s cannot lead a bundle: the first instruction must be an integer, "
                              "load, store or nop (main pipeline)", pc + 1, ts_ipu_isa.ops[mo].mnemonic);
        if (!((au == IPU_U_FPU || au == IPU_U_AMP) && ao != IPU_OP_LD128PUTCS) && ao != IPU_OP_NOP)
            return ts_err_sim(err, s->index, -1, "pc %u: %s cannot be the second instruction of a bundle: it must be a "
                              "float, AMP or nop instruction (auxiliary pipeline)", pc + 2, ts_ipu_isa.ops[ao].mnemonic);
        uint32_t mr, mw, ar, aw;
        reg_masks(&s->insn[pc + 1], &mr, &mw);
        reg_masks(&s->insn[pc + 2], &ar, &aw);
        if ((mr | mw) & aw)
            return ts_err_sim(err, s->index, -1, "pc %u: %s uses a register that %s in the same bundle writes",
                              pc + 1, ts_ipu_isa.ops[mo].mnemonic, ts_ipu_isa.ops[ao].mnemonic);
        code[pc + 1].member = code[pc + 2].member = code[pc + 3].member = 1;
        pc += 3;
    }
    for (uint32_t pc = 0; pc < s->n; pc++)
        if (strchr(ts_ipu_opfacts[code[pc].op].classes, 'l') && code[pc].tgt < s->n && code[code[pc].tgt].member)
            return ts_err_sim(err, s->index, -1, "pc %u: %s target %u is inside a bundle", pc,
                              ts_ipu_isa.ops[code[pc].op].mnemonic, code[pc].tgt);
    return TS_OK;
}

static ts_status ipu_load(ts_model *m, const ts_program *p, ts_err *err)
{
    size_t total = 0;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->kind != 0)
            return ts_err_set(err, TS_EINPUT, "program stream kind %u is not 'tile'", s->kind);
        if (s->index >= m->ntiles)
            return ts_err_set(err, TS_EINPUT, "program has a stream for tile %u, but the config has %u tiles",
                              s->index, m->ntiles);
        total += s->n;
    }
    m->code = ts_calloc(total ? total : 1, sizeof *m->code);
    if (!m->code)
        return ts_err_set(err, TS_ENOMEM, "out of memory decoding the program");
    size_t off = 0;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        ipu_tile *t = &m->t[s->index];
        if (t->code)
            return ts_err_set(err, TS_EINPUT, "program has two streams for tile %u", s->index);
        ipu_insn *code = m->code + off;
        for (uint32_t pc = 0; pc < s->n; pc++) {
            ts_status rc = decode_one(&s->insn[pc], pc, s->n, s->index, &code[pc], err);
            if (rc != TS_OK)
                return rc;
        }
        ts_status brc = check_bundles(s, code, err);
        if (brc != TS_OK)
            return brc;
        for (uint32_t pc = 0; pc < s->n; pc++) { /* repeat bodies: straight-line work only */
            if (code[pc].op != IPU_OP_RPT && code[pc].op != IPU_OP_RPTI)
                continue;
            int32_t len = code[pc].op == IPU_OP_RPT ? code[pc].imm : code[pc].imm2;
            if (len < 1 || pc + 1 + (uint32_t)len > s->n)
                return ts_err_sim(err, s->index, -1, "pc %u: repeat body of %d instructions does not fit the stream",
                                  pc, len);
            if (pc + 1 + (uint32_t)len < s->n && code[pc + 1 + len].member)
                return ts_err_sim(err, s->index, -1, "pc %u: repeat body of %d instructions ends inside a bundle", pc, len);
            code[pc].pure = 1;
            for (uint32_t k = pc + 1; k <= pc + (uint32_t)len; k++) {
                uint8_t op = code[k].op;
                code[pc].bundled |= op == IPU_OP_BUNDLE;
                if (!is_body_op(ts_ipu_opfacts[op].unit, op))
                    return ts_err_sim(err, s->index, -1, "pc %u: %s inside the repeat body at pc %u is not allowed",
                                      k, ts_ipu_isa.ops[op].mnemonic, pc);
                if (op == IPU_OP_ST32 || op == IPU_OP_ST32STEP || op == IPU_OP_ST64 || op == IPU_OP_ST64STEP ||
                    op == IPU_OP_LDST64PACE || op == IPU_OP_LD2XST64PACE || op == IPU_OP_LD128PUTCS)
                    code[pc].pure = 0;
            }
        }
        uint32_t ncode = 0;
        uint64_t nsync = 0;
        for (uint32_t pc = 0; pc < s->n; pc++) {
            ncode += code[pc].op != IPU_OP_BUNDLE && code[pc].op != IPU_OP_BUNDLE_END;
            nsync += code[pc].op == IPU_OP_SYNC && code[pc].imm == 1;
        }
        if (nsync > m->sync_texts)
            m->sync_texts = nsync;
        if ((uint64_t)ncode * m->c.insn_bytes > m->c.sram_bytes)
            return ts_err_set(err, TS_EINPUT, "tile %u: code of %u instructions does not fit its memory", s->index, ncode);
        t->code = code;
        t->n = s->n;
        t->ncode = ncode;
        t->sup = s->n ? SUP_RUN : SUP_DONE;
        off += s->n;
    }
    /* per tile: counters per op, and the list of ops its code holds (the syncs diff only those) */
    size_t cnt_bytes = (size_t)m->ntiles * 2 * IPU_OP_COUNT * sizeof(uint64_t);
    if (m->phase_events && !(m->op_block = ts_calloc(1, cnt_bytes + (size_t)m->ntiles * IPU_OP_COUNT)))
        return ts_err_set(err, TS_ENOMEM, "out of memory for the op counters");
    for (uint32_t i = 0; m->op_block && i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        t->opcnt = (uint64_t *)m->op_block + (size_t)i * 2 * IPU_OP_COUNT;
        t->opseen = t->opcnt + IPU_OP_COUNT;
        uint8_t *ops = (uint8_t *)m->op_block + cnt_bytes + (size_t)i * IPU_OP_COUNT;
        bool has[IPU_OP_COUNT] = {false};
        for (uint32_t pc = 0; pc < t->n; pc++)
            has[t->code[pc].op] = true;
        for (int op = 0; op < IPU_OP_COUNT; op++)
            if (has[op])
                ops[t->nops++] = (uint8_t)op;
        t->ops = ops;
    }
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        if (g->kind != 0 || g->index >= m->ntiles || g->addr + g->len > m->c.sram_bytes)
            return ts_err_set(err, TS_EINPUT, "data segment for tile %u at 0x%" PRIx64 " (%u bytes) does not fit its memory",
                              g->index, g->addr, g->len);
        ts_status rc = mem_write_bytes(m, &m->t[g->index], g->addr, g->bytes, g->len, err);
        if (rc != TS_OK)
            return rc;
    }
    m->loaded = true;
    return TS_OK;
}

/* ---- the executor ---- */

/* Append [a, b) to the tile's exchange spans, merging with the last one when they touch. A span
 * already counted (b <= a) only adds its bytes. Cold: taken only with the activity sampler. */
static void xspan_add(ipu_tile *t, uint64_t a, uint64_t b, uint64_t bytes) __attribute__((noinline, cold));

static void xspan_add(ipu_tile *t, uint64_t a, uint64_t b, uint64_t bytes)
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

static void xch_busy(ipu_tile *t, uint64_t a, uint64_t b, uint64_t bytes)
{
    if (a < t->xch_until)
        a = t->xch_until;
    if (b > a) {
        t->xch_cycles += b - a;
        t->xch_until = b;
    }
    if (t->rec) /* the activity sampler is on: keep the span (one test when off) */
        xspan_add(t, a, b, bytes);
}

/* Cold path, kept out of line so the executor's hot loop stays small (inlined, it tripled the
 * executor's stack frame and cost about a fifth of bench_ipu_bsp's time). */
static ts_status fail(ipu_tile *t, uint32_t ti, int ctx, uint32_t pc, uint64_t c, ts_err *err, const char *fmt, ...)
    __attribute__((format(printf, 7, 8), noinline, cold));

static ts_status fail(ipu_tile *t, uint32_t ti, int ctx, uint32_t pc, uint64_t c, ts_err *err, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char who[32];
    if (ctx == 0)
        snprintf(who, sizeof who, "supervisor");
    else
        snprintf(who, sizeof who, "worker %d", ctx - 1);
    (void)t;
    return ts_err_sim(err, ti, (int64_t)c, "%s: %s at pc %u", what, who, pc);
}

/* Check a data access: in range and aligned to its width. */
#define CHECK_ADDR(addr, width, name)                                                               \
    do {                                                                                            \
        if ((addr) < 0 || (uint64_t)(addr) + (width) > m->c.sram_bytes)                             \
            return fail(t, ti, ctx, pc, c, err, "%s address %" PRId64 " is out of range (tile memory is %" PRIu64 " bytes)", \
                        name, (int64_t)(addr), m->c.sram_bytes);                                    \
        if ((addr) % (width))                                                                       \
            return fail(t, ti, ctx, pc, c, err, "%s address %" PRId64 " is not %u-byte aligned", name, \
                        (int64_t)(addr), (unsigned)(width));                                        \
    } while (0)

static void coef_update(ipu_tile *t, uint32_t slot)
{
    for (uint32_t k = slot * 8; k < slot * 8 + 8; k++) {
        uint16_t h;
        memcpy(&h, t->coef + 2 * k, 2);
        t->w16[k] = ts_f16_to_f32(h);
    }
    for (uint32_t k = slot * 4; k < slot * 4 + 4; k++) {
        float f;
        memcpy(&f, t->coef + 4 * k, 4);
        t->w32[k] = f;
    }
}

static inline uint32_t h2op(uint32_t a, uint32_t b, int op)
{
    uint32_t out = 0;
    for (int l = 0; l < 2; l++) {
        float x = ts_f16_to_f32((uint16_t)(a >> (16 * l))), y = ts_f16_to_f32((uint16_t)(b >> (16 * l)));
        float z = op == 0 ? x + y : op == 1 ? x - y : x * y;
        out |= (uint32_t)ts_f32_to_f16(z) << (16 * l);
    }
    return out;
}

static bool sup_can_issue(const ts_model *m, const ipu_tile *t)
{
    const ipu_ctx *s = &t->cx[0];
    if (s->pc >= t->n)
        return t->running == 0;
    switch (t->code[s->pc].op) {
    case IPU_OP_RUN: return t->running != (1u << m->W) - 1;
    case IPU_OP_RUNALL:
    case IPU_OP_SYNC:
    case IPU_OP_HALT: return t->running == 0;
    case IPU_OP_RXWAIT: return t->rx_left == 0;
    default: return true;
    }
}

/* Execute one instruction, `in` at pc, for ctx at cycle c; *nextp is the pc that follows it
 * (pc + 1 unless it branches or stays). */
static inline __attribute__((always_inline)) ts_status exec_op(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c,
                                                             ipu_ctx *x, ipu_insn *in, uint32_t pc, uint32_t *nextp,
                                                             ts_err *err)
{
    uint32_t *r = x->r;
    uint32_t next = *nextp;
    if (!(in->ctx_ok & (ctx ? 2 : 1)))
        return fail(t, ti, ctx, pc, c, err, "%s may only run in %s", ts_ipu_isa.ops[in->op].mnemonic,
                    ctx == 0 ? "a worker" : "the supervisor");
    x->ready = c + 1;
    in->hits++;
    if (t->opcnt)
        t->opcnt[in->op]++;
    t->work++;
/* operand registers, read where a case needs them */
#define a0 (r[in->r0])
#define a1 (r[in->r1])
#define a2 (r[in->r2])
    int64_t addr;
    switch ((enum ipu_op)in->op) {
    case IPU_OP_SETZI: r[in->r0] = (uint32_t)in->imm; break;
    case IPU_OP_LDCONST: r[in->r0] = (uint32_t)in->imm; break;
    case IPU_OP_MOV: r[in->r0] = a1; break;
    case IPU_OP_ADD: r[in->r0] = a1 + a2; break;
    case IPU_OP_ADDI: r[in->r0] = a1 + (uint32_t)in->imm; break;
    case IPU_OP_SUB: r[in->r0] = a1 - a2; break;
    case IPU_OP_MUL: r[in->r0] = a1 * a2; break;
    case IPU_OP_MULI: r[in->r0] = a1 * (uint32_t)in->imm; break;
    case IPU_OP_AND: r[in->r0] = a1 & a2; break;
    case IPU_OP_ANDI: r[in->r0] = a1 & (uint32_t)in->imm; break;
    case IPU_OP_OR: r[in->r0] = a1 | a2; break;
    case IPU_OP_XOR: r[in->r0] = a1 ^ a2; break;
    case IPU_OP_SHL: r[in->r0] = a1 << (a2 & 31); break;
    case IPU_OP_SHLI: r[in->r0] = a1 << (in->imm & 31); break;
    case IPU_OP_SHR: r[in->r0] = a1 >> (a2 & 31); break;
    case IPU_OP_SHRI: r[in->r0] = a1 >> (in->imm & 31); break;
    case IPU_OP_CMPEQ: r[in->r0] = a1 == a2; break;
    case IPU_OP_CMPULT: r[in->r0] = a1 < a2; break;
    case IPU_OP_CMPSLT: r[in->r0] = (int32_t)a1 < (int32_t)a2; break;
    case IPU_OP_GET:
        switch (in->imm) {
        case IPU_CSR_TILE: r[in->r0] = ti; break;
        case IPU_CSR_NTILES: r[in->r0] = m->ntiles; break;
        case IPU_CSR_WORKER: r[in->r0] = ctx ? (uint32_t)(ctx - 1) : UINT32_MAX; break;
        case IPU_CSR_NWORKERS: r[in->r0] = m->W; break;
        default: return fail(t, ti, ctx, pc, c, err, "get: no control register %d", in->imm);
        }
        break;
    case IPU_OP_NOP: break;
    case IPU_OP_BR: next = in->tgt; break;
    case IPU_OP_BRZ: if (a0 == 0) next = in->tgt; break;
    case IPU_OP_BRNZ: if (a0 != 0) next = in->tgt; break;
    case IPU_OP_BRNEG: if ((int32_t)a0 < 0) next = in->tgt; break;
    case IPU_OP_BRNZDEC:
        if (a0 != 0) {
            r[in->r0] = a0 - 1;
            next = in->tgt;
        }
        break;
    case IPU_OP_RPT:
    case IPU_OP_RPTI: {
        uint32_t count = in->op == IPU_OP_RPT ? a0 : (uint32_t)in->imm;
        uint32_t len = (uint32_t)(in->op == IPU_OP_RPT ? in->imm : in->imm2);
        if (x->rpt_left)
            return fail(t, ti, ctx, pc, c, err, "rpt inside a repeat body");
        if (count == 0) {
            next = pc + 1 + len;
        } else {
            x->rpt_start = pc + 1;
            x->rpt_end = pc + 1 + len;
            x->rpt_left = count;
        }
        break;
    }
    case IPU_OP_LD32:
    case IPU_OP_LD32STEP:
        addr = in->op == IPU_OP_LD32 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 4, "ld32");
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)addr), 4);
        if (in->op == IPU_OP_LD32STEP) /* the base as read: the load may have written the same register */
            r[in->r1] = (uint32_t)addr + (uint32_t)in->imm;
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_LD64:
    case IPU_OP_LD64STEP:
        if (m->c.load_bpc < 8)
            return fail(t, ti, ctx, pc, c, err, "ld64 needs tile.load_bytes_per_cycle >= 8");
        addr = in->op == IPU_OP_LD64 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 8, "ld64");
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)addr), 8);
        if (in->op == IPU_OP_LD64STEP) /* the base as read: the load may have written the same register */
            r[in->r1] = (uint32_t)addr + (uint32_t)in->imm;
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_LD128:
    case IPU_OP_LD128STEP:
        if (m->c.load_bpc < 16)
            return fail(t, ti, ctx, pc, c, err, "ld128 needs tile.load_bytes_per_cycle >= 16");
        addr = in->op == IPU_OP_LD128 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 16, "ld128");
        if ((uint64_t)addr < m->c.interleaved_base)
            return fail(t, ti, ctx, pc, c, err, "ld128 address %" PRId64 " is below the interleaved memory at %" PRIu64,
                        addr, m->c.interleaved_base);
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)addr), 16);
        if (in->op == IPU_OP_LD128STEP) /* the base as read: the load may have written the same register */
            r[in->r1] = (uint32_t)addr + (uint32_t)in->imm;
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_LDZ16:
    case IPU_OP_LDB16: {
        addr = (int64_t)(int32_t)a1 + in->imm;
        CHECK_ADDR(addr, 2, in->op == IPU_OP_LDZ16 ? "ldz16" : "ldb16");
        uint16_t h;
        memcpy(&h, rd_ptr(m, t, (uint64_t)addr), 2);
        r[in->r0] = in->op == IPU_OP_LDZ16 ? h : ((uint32_t)h << 16 | h);
        x->ready = c + m->c.load_latency;
        break;
    }
    case IPU_OP_LDZ8:
        addr = (int64_t)(int32_t)a1 + in->imm;
        CHECK_ADDR(addr, 1, "ldz8");
        r[in->r0] = *rd_ptr(m, t, (uint64_t)addr);
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_ST32:
    case IPU_OP_ST32STEP: {
        addr = in->op == IPU_OP_ST32 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 4, "st32");
        uint8_t *p = wr_ptr(t, (uint64_t)addr, 4);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, &a0, 4);
        if (in->op == IPU_OP_ST32STEP)
            r[in->r1] = a1 + (uint32_t)in->imm;
        break;
    }
    case IPU_OP_ST64:
    case IPU_OP_ST64STEP: {
        if (m->c.store_bpc < 8)
            return fail(t, ti, ctx, pc, c, err, "st64 needs tile.store_bytes_per_cycle >= 8");
        addr = in->op == IPU_OP_ST64 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 8, "st64");
        uint8_t *p = wr_ptr(t, (uint64_t)addr, 8);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, &r[in->r0], 8);
        if (in->op == IPU_OP_ST64STEP)
            r[in->r1] = a1 + (uint32_t)in->imm;
        break;
    }
    case IPU_OP_F32ADD: r[in->r0] = fr(rf(a1) + rf(a2)); break;
    case IPU_OP_F32SUB: r[in->r0] = fr(rf(a1) - rf(a2)); break;
    case IPU_OP_F32MUL: r[in->r0] = fr(rf(a1) * rf(a2)); break;
    case IPU_OP_F32MAX: r[in->r0] = fr(fmaxf(rf(a1), rf(a2))); break;
    case IPU_OP_F32MIN: r[in->r0] = fr(fminf(rf(a1), rf(a2))); break;
    case IPU_OP_F32MAC: { float p = rf(a1) * rf(a2); r[in->r0] = fr(rf(a0) + p); break; }
    case IPU_OP_F32V2ADD:
    case IPU_OP_F32V2SUB:
    case IPU_OP_F32V2MUL:
    case IPU_OP_F32V2MAC:
        for (int l = 0; l < 2; l++) {
            float y = rf(r[in->r1 + l]), z = rf(r[in->r2 + l]), o;
            switch (in->op) {
            case IPU_OP_F32V2ADD: o = y + z; break;
            case IPU_OP_F32V2SUB: o = y - z; break;
            case IPU_OP_F32V2MUL: o = y * z; break;
            default: { float p = y * z; o = rf(r[in->r0 + l]) + p; break; }
            }
            r[in->r0 + l] = fr(o);
        }
        break;
    case IPU_OP_F16V2ADD: r[in->r0] = h2op(a1, a2, 0); break;
    case IPU_OP_F16V2MUL: r[in->r0] = h2op(a1, a2, 2); break;
    case IPU_OP_F16V4ADD:
    case IPU_OP_F16V4SUB:
    case IPU_OP_F16V4MUL: {
        int o = in->op == IPU_OP_F16V4ADD ? 0 : in->op == IPU_OP_F16V4SUB ? 1 : 2;
        uint32_t lo = h2op(r[in->r1], r[in->r2], o), hi = h2op(r[in->r1 + 1], r[in->r2 + 1], o);
        r[in->r0] = lo;
        r[in->r0 + 1] = hi;
        break;
    }
    case IPU_OP_F16V2TOF32: {
        uint32_t v = a1;
        r[in->r0] = fr(ts_f16_to_f32((uint16_t)v));
        r[in->r0 + 1] = fr(ts_f16_to_f32((uint16_t)(v >> 16)));
        break;
    }
    case IPU_OP_F32V2TOF16:
        r[in->r0] = (uint32_t)ts_f32_to_f16(rf(r[in->r1])) | (uint32_t)ts_f32_to_f16(rf(r[in->r1 + 1])) << 16;
        break;
    case IPU_OP_F32TOI32: {
        float v = rf(a1);
        int32_t o = v != v ? 0 : v >= 2147483647.0f ? INT32_MAX : v <= -2147483648.0f ? INT32_MIN : (int32_t)v;
        r[in->r0] = (uint32_t)o;
        break;
    }
    case IPU_OP_F32FROMI32: r[in->r0] = fr((float)(int32_t)a1); break;
    case IPU_OP_LD128PUTCS:
        addr = (int64_t)(int32_t)a0;
        if (in->imm < 0 || in->imm >= 16)
            return fail(t, ti, ctx, pc, c, err, "ld128putcs: coefficient slot %d is not in 0..15", in->imm);
        CHECK_ADDR(addr, 16, "ld128putcs");
        {
            /* the workers of a routine load the same block one after another: convert it once */
            const uint8_t *src = rd_ptr(m, t, (uint64_t)addr);
            if (memcmp(t->coef + 16 * in->imm, src, 16)) {
                memcpy(t->coef + 16 * in->imm, src, 16);
                coef_update(t, (uint32_t)in->imm);
            }
        }
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_F32V2AMP: {
        float i0 = rf(r[in->r0]), i1 = rf(r[in->r0 + 1]);
        const float *w = t->w32;
        for (uint32_t u = 0; u < m->c.amp_units_f32; u++) {
            float s = w[2 * u] * i0 + w[2 * u + 1] * i1;
            x->acc[u] += s;
        }
        break;
    }
    case IPU_OP_F16V4AMP: {
        float in4[4];
        in4[0] = ts_f16_to_f32((uint16_t)r[in->r0]);
        in4[1] = ts_f16_to_f32((uint16_t)(r[in->r0] >> 16));
        in4[2] = ts_f16_to_f32((uint16_t)r[in->r0 + 1]);
        in4[3] = ts_f16_to_f32((uint16_t)(r[in->r0 + 1] >> 16));
        const float *w = t->w16;
        for (uint32_t u = 0; u < m->c.amp_units_f16; u++) {
            float s = w[4 * u] * in4[0] + w[4 * u + 1] * in4[1];
            s += w[4 * u + 2] * in4[2];
            s += w[4 * u + 3] * in4[3];
            x->acc[u] += s;
        }
        break;
    }
    case IPU_OP_AMPZERO: memset(x->acc, 0, sizeof x->acc); break;
    case IPU_OP_AMPGET:
        if (in->imm < 0 || in->imm >= ACC_MAX / 2)
            return fail(t, ti, ctx, pc, c, err, "ampget: accumulator pair %d is not in 0..%d", in->imm, ACC_MAX / 2 - 1);
        r[in->r0] = fr(x->acc[2 * in->imm]);
        r[in->r0 + 1] = fr(x->acc[2 * in->imm + 1]);
        break;
    case IPU_OP_RUN:
    case IPU_OP_RUNALL: {
        uint32_t all = (1u << m->W) - 1;
        uint32_t start = in->op == IPU_OP_RUNALL ? all : 0;
        if (!start)
            for (uint32_t w = 0; w < m->W; w++)
                if (!(t->running >> w & 1)) {
                    start = 1u << w;
                    break;
                }
        for (uint32_t w = 0; w < m->W; w++)
            if (start >> w & 1) {
                ipu_ctx *wx = &t->cx[1 + w];
                memset(wx->r, 0, sizeof wx->r);
                wx->r[0] = a0; /* the "lm" classes put the register in r0 */
                wx->pc = in->tgt;
                wx->rpt_left = 0;
                wx->ready = c + 1;
            }
        t->running |= start;
        break;
    }
    case IPU_OP_EXIT:
        t->running &= ~(1u << (ctx - 1));
        next = pc; /* stays put; the context is idle */
        break;
    case IPU_OP_SYNC:
        if (in->imm == 1) {
            if (t->rx_left)
                return fail(t, ti, ctx, pc, c, err,
                            "receive with nothing sent: %u of %u words from tile %d (armed at cycle %" PRIu64 ") never came before sync",
                            t->rx_left, t->rx_n, t->rx_src, t->rx_armed);
            t->sup = SUP_SYNC;
            t->arrival = c;
        } else if (in->imm != 0) {
            return fail(t, ti, ctx, pc, c, err, "sync: zone %d is neither 0 (tile) nor 1 (chip)", in->imm);
        }
        break;
    case IPU_OP_HALT:
        if (t->rx_left)
            return fail(t, ti, ctx, pc, c, err, "receive with nothing sent: %u of %u words from tile %d never came before halt",
                        t->rx_left, t->rx_n, t->rx_src);
        if (t->nhost)
            return fail(t, ti, ctx, pc, c, err, "halt with host transfers pending: they complete at a chip-wide sync");
        t->sup = SUP_DONE;
        t->finish = c + 1;
        next = pc;
        break;
    case IPU_OP_SEND: {
        int32_t dst = (int32_t)a1;
        uint32_t nw = (uint32_t)in->imm;
        addr = (int64_t)(int32_t)a0;
        if (in->imm < 1)
            return fail(t, ti, ctx, pc, c, err, "send of %d words", in->imm);
        if (dst < -1 || dst >= (int32_t)m->ntiles)
            return fail(t, ti, ctx, pc, c, err, "send to tile %d, which does not exist", dst);
        CHECK_ADDR(addr, 4, "send");
        if ((uint64_t)addr + 4ull * nw > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "send of %u words from %" PRId64 " runs past the tile memory", nw, addr);
        if (t->pend.n + nw > t->pend.cap) {
            void *v = t->pend.v;
            if (ts_grow(&v, &t->pend.cap, t->pend.n + nw, sizeof(ipu_word)))
                return ts_err_set(err, TS_ENOMEM, "out of memory for exchange words");
            t->pend.v = v;
        }
        uint32_t wpc = m->c.words_per_cycle;
        for (uint32_t i = 0; i < nw; i++) {
            ipu_word *w = &t->pend.v[t->pend.n++];
            w->t = c + i / wpc;
            memcpy(&w->val, rd_ptr(m, t, (uint64_t)addr + 4ull * i), 4);
            w->dst = dst;
            w->claimed = 0;
            w->delay = 0;
        }
        uint64_t cyc = (nw + wpc - 1) / wpc;
        t->tx_t0 = c;
        t->tx_end = c + cyc;
        t->tx_addr = (uint32_t)addr;
        t->tx_n = nw;
        x->ready = c + cyc; /* the supervisor holds the send port */
        t->xsent += 4ull * nw;
        t->ss_xbytes += 4ull * nw;
        t->xport += cyc;
        xch_busy(t, c, t->tx_end, 4ull * nw);
        if (dst >= 0) {
            t->ss_uni += nw;
            t->wire_bit_mm += 32.0 * nw * wire_mm(&m->c, ti, (uint32_t)dst);
        } else { /* a broadcast is charged to the far corner of the chip */
            t->wire_bit_mm += 32.0 * nw * wire_mm(&m->c, 0, m->ntiles - 1);
        }
        break;
    }
    case IPU_OP_RXPTR:
        addr = (int64_t)(int32_t)a0;
        CHECK_ADDR(addr, 4, "rxptr");
        if ((uint64_t)addr + 4ull * t->rx_left > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "rxptr %" PRId64 ": the %u words still due run past the tile memory",
                        addr, t->rx_left);
        t->rx_addr = (uint32_t)addr;
        break;
    case IPU_OP_RECV:
    case IPU_OP_RXSEL: {
        int32_t src = (int32_t)(in->op == IPU_OP_RECV ? a1 : a0);
        addr = in->op == IPU_OP_RECV ? (int64_t)(int32_t)a0 : (int64_t)t->rx_addr;
        if (t->rx_left)
            return fail(t, ti, ctx, pc, c, err, "%s switches the input from tile %d while %u of its %u words are still due",
                        ts_ipu_isa.ops[in->op].mnemonic, t->rx_src, t->rx_left, t->rx_n);
        if (src < 0 || src >= (int32_t)m->ntiles)
            return fail(t, ti, ctx, pc, c, err, "recv from tile %d, which does not exist", src);
        if (in->imm < 1)
            return fail(t, ti, ctx, pc, c, err, "%s of %d words", ts_ipu_isa.ops[in->op].mnemonic, in->imm);
        CHECK_ADDR(addr, 4, ts_ipu_isa.ops[in->op].mnemonic);
        if ((uint64_t)addr + 4ull * (uint32_t)in->imm > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "%s of %d words at %" PRId64 " runs past the tile memory",
                        ts_ipu_isa.ops[in->op].mnemonic, in->imm, addr);
        t->rx_src = src;
        t->rx_addr = (uint32_t)addr;
        t->rx_left = t->rx_n = (uint32_t)in->imm;
        t->rx_armed = c;
        t->rx_lat = (uint32_t)ts_ipu_latency(&m->c, (uint32_t)src, ti);
        /* words that left before now - latency - the largest spine delay arrived before the mux
         * was set: not ours. (The log is in send order; arrivals are not, since a word to another
         * column group may wait in the spine stage while a later one to this group does not, so
         * the search is on send cycles, and rx_arrivals passes over the rest that came before.
         * A spine delay is at most spine_buffer_cycles: see spine_column.) */
        const ipu_wlog *lg = &m->t[src].log;
        size_t lo = 0, hi = lg->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (lg->v[mid].t + m->c.spine_buffer_cycles + t->rx_lat < c)
                lo = mid + 1;
            else
                hi = mid;
        }
        t->rx_cursor = lo;
        break;
    }
    case IPU_OP_RXWAIT:
    case IPU_OP_DELAY:
        if (in->op == IPU_OP_DELAY) {
            if (in->imm < 0)
                return fail(t, ti, ctx, pc, c, err, "delay of %d cycles", in->imm);
            x->ready = c + (uint64_t)in->imm + 1;
            xch_busy(t, c, x->ready, 0);
        }
        break;
    case IPU_OP_HOSTRD:
    case IPU_OP_HOSTWR: {
        addr = (int64_t)(int32_t)a0;
        uint64_t h = a1, nb = (uint64_t)(uint32_t)in->imm;
        if (in->imm < 1 || addr < 0 || (uint64_t)addr + nb > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "host transfer of %d bytes at tile address %" PRId64 " is out of range",
                        in->imm, addr);
        if (h + nb > m->c.host_bytes)
            return fail(t, ti, ctx, pc, c, err, "host transfer of %" PRIu64 " bytes at host address %" PRIu64
                        " is beyond host.buffer (%" PRIu64 " bytes)", nb, h, m->c.host_bytes);
        if (t->nhost == t->cap_host) {
            void *v = t->host;
            if (ts_grow(&v, &t->cap_host, t->nhost + 1, sizeof *t->host))
                return ts_err_set(err, TS_ENOMEM, "out of memory for host transfers");
            t->host = v;
        }
        t->host[t->nhost++] = (ipu_hostop){(uint32_t)addr, h, (uint32_t)nb, in->op == IPU_OP_HOSTWR};
        break;
    }
    case IPU_OP_LDST64PACE:
    case IPU_OP_LD2XST64PACE: {
        bool two = in->op == IPU_OP_LD2XST64PACE;
        const char *name = ts_ipu_isa.ops[in->op].mnemonic;
        if (m->c.load_bpc < (two ? 16 : 8) || m->c.store_bpc < 8)
            return fail(t, ti, ctx, pc, c, err, "%s needs tile.load_bytes_per_cycle >= %d and tile.store_bytes_per_cycle >= 8",
                        name, two ? 16 : 8);
        uint8_t rs = two ? in->r4 : in->r3; /* the store pointer */
        int64_t la = (int64_t)(int32_t)a2, lb = two ? (int64_t)(int32_t)r[in->r3] : 0;
        addr = (int64_t)(int32_t)r[rs];
        CHECK_ADDR(la, 8, name);
        if (two) {
            CHECK_ADDR(lb, 8, name);
            if ((uint64_t)la < m->c.interleaved_base || (uint64_t)lb < m->c.interleaved_base)
                return fail(t, ti, ctx, pc, c, err, "%s: two loads in one cycle need interleaved memory, at or above %" PRIu64,
                            name, m->c.interleaved_base);
        }
        CHECK_ADDR(addr, 8, name);
        uint32_t v[2] = {r[in->r1], r[in->r1 + 1]}; /* the pair to store, as it was at issue */
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)la), 8);
        if (two)
            memcpy(&r[in->r0 + 2], rd_ptr(m, t, (uint64_t)lb), 8);
        uint8_t *p = wr_ptr(t, (uint64_t)addr, 8);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, v, 8);
        r[in->r2] = (uint32_t)la + 8;
        if (two)
            r[in->r3] = (uint32_t)lb + 8;
        r[rs] = (uint32_t)addr + 8;
        x->ready = c + m->c.load_latency;
        break;
    }
    case IPU_OP_BUNDLE:
    case IPU_OP_BUNDLE_END: /* never issued on their own: check_bundles keeps branches out */
        return fail(t, ti, ctx, pc, c, err, "%s issued outside a bundle", ts_ipu_isa.ops[in->op].mnemonic);
    case IPU_OP_COUNT: /* no default: -Wswitch names an opcode of the table without a case */
        return ts_err_set(err, TS_EINTERNAL, "ipu: opcode %u has no executor", in->op);
    }
    *nextp = next;
    return TS_OK;
#undef a0
#undef a1
#undef a2
}

/* A bundle at pc (`{` main aux `}`): one issue. The auxiliary instruction runs first, then the
 * main one; neither sees the other's results (check_bundles), so this is "both read their
 * registers at issue". Out of line: the common path (no bundle) keeps exec as small as before
 * (callgrind: the bundle inside exec cost about a tenth more host instructions per issue). */
static ts_status exec_bundle(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c, uint32_t pc, ts_err *err)
    __attribute__((noinline));

static ts_status exec_bundle(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c, uint32_t pc, ts_err *err)
{
    ipu_ctx *x = &t->cx[ctx];
    uint32_t next = 0; /* members never branch (check_bundles): exec moves on to pc + 4 */
    t->code[pc].hits++;
    if (t->opcnt)
        t->opcnt[IPU_OP_BUNDLE]++;
    ts_status rc = exec_op(m, ti, t, ctx, c, x, &t->code[pc + 2], pc + 2, &next, err);
    if (rc == TS_OK)
        rc = exec_op(m, ti, t, ctx, c, x, &t->code[pc + 1], pc + 1, &next, err);
    return rc;
}

/* Execute the instruction (or bundle) at ctx's pc at cycle c. */
/* Inlined into its callers, tile_run and closed_form_run, so the tile's hot state stays in
 * registers across issues (callgrind: about a fifth fewer host instructions per simulated
 * issue). */
static inline __attribute__((always_inline)) ts_status exec(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c,
                                                          ts_err *err)
{
    ipu_ctx *x = &t->cx[ctx];
    uint32_t pc = x->pc;
    if (pc >= t->n) {
        if (ctx)
            return fail(t, ti, ctx, pc, c, err, "worker ran past the end of the code");
        t->sup = SUP_DONE; /* falling off the end is a halt */
        t->finish = c;
        return TS_OK;
    }
    ipu_insn *in = &t->code[pc];
    uint32_t next = pc + 1;
    ts_status rc;
    if (__builtin_expect(in->op == IPU_OP_BUNDLE, 0)) {
        rc = exec_bundle(m, ti, t, ctx, c, pc, err);
        next = pc + 4;
    } else {
        rc = exec_op(m, ti, t, ctx, c, x, in, pc, &next, err);
    }
    if (rc != TS_OK)
        return rc;
    if (x->rpt_left && next == x->rpt_end) {
        if (--x->rpt_left > 0)
            next = x->rpt_start;
    }
    x->pc = next;
    return TS_OK;
}

/* Words that reach tile ti at cycle c while its input selects their sender. */
static ts_status rx_arrivals(ts_model *m, uint32_t ti, ipu_tile *t, uint64_t c, ts_err *err)
{
    ipu_tile *s = &m->t[t->rx_src];
    ipu_wlog *lg = &s->log;
    while (t->rx_left && t->rx_cursor < lg->n) {
        ipu_word *w = &lg->v[t->rx_cursor];
        if (w->dst != -1 && w->dst != (int32_t)ti) { /* to another tile: its arrival is no order for ours */
            t->rx_cursor++;
            continue;
        }
        uint64_t a = w->t + w->delay + t->rx_lat;
        if (a > c)
            break;
        t->rx_cursor++;
        if (a < c)
            continue;
        /* a send of this tile reading the element this word writes, in the same cycle */
        if (c >= t->tx_t0 && c < t->tx_end) {
            uint64_t i = (c - t->tx_t0) * m->c.words_per_cycle;
            uint64_t raddr = t->tx_addr + 4 * i;
            if (raddr / m->c.element_bytes == t->rx_addr / m->c.element_bytes)
                return ts_err_sim(err, ti, (int64_t)c,
                                  "memory element conflict: the word from tile %d is written at %u while this tile's send reads %" PRIu64
                                  " in the same element", t->rx_src, t->rx_addr, raddr);
        }
        uint8_t *p = wr_ptr(t, t->rx_addr, 4);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, &w->val, 4);
        if (w->dst == (int32_t)ti) {
            w->claimed = 1;
            t->ss_claims++;
        }
        t->rx_addr += 4;
        t->rx_left--;
        t->xrecv += 4;
        t->work++;
        if (!t->rx_left)
            xch_busy(t, t->rx_armed, c + 1, 0);
    }
    return TS_OK;
}

/* The next cycle >= c at which something can happen on tile t (fast mode), at most h. */
/* r mod W for r >= c, from cs = c mod W: no division when r is within W cycles of c (a
 * division costs tens of cycles, and this runs on every cycle a tile does not issue). */
static inline uint32_t slot_of(uint64_t r, uint64_t c, uint32_t cs, uint32_t W)
{
    if (r - c >= W)
        return (uint32_t)(r % W);
    uint32_t s = cs + (uint32_t)(r - c);
    return s >= W ? s - W : s;
}

static uint64_t next_event(const ts_model *m, const ipu_tile *t, uint64_t c, uint32_t cs, uint64_t h)
{
    uint64_t best = h;
    uint32_t W = m->W;
    for (uint32_t w = 0; w < W; w++) {
        if (!(t->running >> w & 1))
            continue;
        uint64_t r = t->cx[1 + w].ready > c ? t->cx[1 + w].ready : c;
        uint32_t d = w + W - slot_of(r, c, cs, W); /* cycles to w's next turn, in [1, 2W) */
        uint64_t k = r + (d >= W ? d - W : d);
        if (k < best)
            best = k;
    }
    if (t->sup == SUP_RUN && sup_can_issue(m, t)) {
        uint64_t r = t->cx[0].ready > c ? t->cx[0].ready : c;
        uint32_t ks = slot_of(r, c, cs, W);
        for (uint64_t k = r; k < r + W && k < best; k++, ks = ks + 1 == W ? 0 : ks + 1)
            if (!(t->running >> ks & 1)) {
                best = k;
                break;
            }
    }
    if (t->rx_left) {
        const ipu_wlog *lg = &m->t[t->rx_src].log;
        size_t k = t->rx_cursor; /* the next word to this tile (rx_arrivals passes over the others) */
        while (k < lg->n && lg->v[k].dst != -1 && lg->v[k].dst != (int32_t)(t - m->t))
            k++;
        if (k < lg->n) {
            uint64_t a = lg->v[k].t + lg->v[k].delay + t->rx_lat;
            if (a < best)
                best = a < c ? c : a;
        }
    }
    return best;
}

/* How far a tile may run past the round's horizon when it does not read another tile's words:
 * bounded so that the kernel still sees progress (or a hang) this often. */
#define IPU_RUN_AHEAD 65536u

/* A tile must stay within the round's horizon while it reads other tiles' words: with a receive
 * armed, or when its supervisor is about to arm one. Everything else it does (compute, sends,
 * reaching a sync) depends on nothing another tile does in the same round, so it may run ahead:
 * its sends are committed at the round's end, and no receiver reads a word before the cycle it
 * arrives, at least a window after it left. */
static bool reads_others(const ipu_tile *t)
{
    if (t->rx_left)
        return true;
    uint32_t pc = t->cx[0].pc;
    return pc < t->n && (t->code[pc].op == IPU_OP_RECV || t->code[pc].op == IPU_OP_RXSEL);
}

/* Closed form for repeat loops. When every slot belongs to a running worker (so the supervisor
 * cannot issue), no receive is armed (so tile memory changes only by the workers' own stores) and
 * every worker is inside a repeat body that stores nothing and loads no coefficients, the workers
 * cannot see each other for as long as they all stay in their bodies: worker w issues at cycle
 * c + ((w - c) mod W) + j W for j = 0, 1, ... (loads are ready by its next turn because
 * tile.load_latency <= W). So the next k turns can be run worker by worker, each with its exact
 * issue cycles, and give what cycle-by-cycle issue gives. Returns k (0 when the form does not
 * apply), at most what keeps the tile below `limit`. */
static uint64_t body_issues(const ipu_tile *t, uint32_t from, uint32_t to)
{
    uint64_t n = 0;
    for (uint32_t p = from; p < to; p++)
        n += !t->code[p].member;
    return n;
}

static uint64_t closed_form_turns(const ts_model *m, const ipu_tile *t, uint64_t c, uint64_t limit)
{
    const uint32_t W = m->W;
    uint64_t k = limit > c ? (limit - c) / W : 0;
    uint32_t slot = (uint32_t)(c % W);
    for (uint32_t w = 0; w < W && k >= 2; w++) {
        const ipu_ctx *x = &t->cx[1 + w];
        if (!x->rpt_left || !t->code[x->rpt_start - 1].pure || x->pc < x->rpt_start || x->pc >= x->rpt_end)
            return 0;
        if (x->ready > c + (w + W - slot) % W)
            return 0;
        uint64_t rem = (uint64_t)(x->rpt_end - x->pc) + (uint64_t)(x->rpt_left - 1) * (x->rpt_end - x->rpt_start);
        if (t->code[x->rpt_start - 1].bundled) /* issues, not instructions: a bundle is one */
            rem = body_issues(t, x->pc, x->rpt_end) +
                  (uint64_t)(x->rpt_left - 1) * body_issues(t, x->rpt_start, x->rpt_end);
        if (rem < k)
            k = rem;
    }
    return k >= 2 ? k : 0;
}

/* Run k turns in closed form (see closed_form_turns). An error stops its worker; the earliest
 * one over all workers is reported, as cycle-by-cycle issue would. */
static ts_status closed_form_run(ts_model *m, uint32_t ti, ipu_tile *t, uint64_t c, uint64_t k, ts_err *err)
{
    const uint32_t W = m->W;
    uint32_t slot = (uint32_t)(c % W);
    ts_status first = TS_OK;
    for (uint32_t w = 0; w < W; w++) {
        uint64_t at = c + (w + W - slot) % W;
        for (uint64_t j = 0; j < k; j++, at += W) {
            ts_err later;
            ts_err *dst = err;
            if (first != TS_OK) {
                ts_err_init(&later);
                dst = &later;
            }
            ts_status rc = exec(m, ti, t, 1 + (int)w, at, dst);
            if (rc == TS_OK)
                continue;
            if (first == TS_OK) {
                first = rc;
            } else if (later.cycle < err->cycle) {
                ts_err_free(err);
                *err = later;
            } else {
                ts_err_free(&later);
            }
            break;
        }
    }
    return first;
}

/* Advance tile ti to cycle h, or beyond while it reads nothing from other tiles, until it
 * blocks at a sync or halts. */
static ts_status tile_run(ts_model *m, uint32_t ti, uint64_t h, ts_err *err)
{
    ipu_tile *t = &m->t[ti];
    uint64_t c = m->tnow[ti];
    const uint32_t W = m->W;
    const bool lock = m->lockstep;
    const uint64_t cap = lock ? h : h + IPU_RUN_AHEAD;
    uint32_t slot = (uint32_t)(c % W);
    bool ro = reads_others(t); /* changes only when the supervisor issues or a receive completes */
    while (t->sup == SUP_RUN) {
        if (c >= h && (c >= cap || ro))
            break;
        if (t->rx_left) {
            ts_status rc = rx_arrivals(m, ti, t, c, err);
            if (rc != TS_OK)
                return rc;
            ro = reads_others(t);
        }
        if (m->closed_form && t->running == m->all_workers && !t->rx_left) {
            uint64_t k = closed_form_turns(m, t, c, ro ? h : cap);
            if (k) {
                ts_status rc = closed_form_run(m, ti, t, c, k, err);
                if (rc != TS_OK)
                    return rc;
                c += k * W;
                continue;
            }
        }
        int ctx = -1;
        if (t->running >> slot & 1) {
            if (t->cx[1 + slot].ready <= c)
                ctx = 1 + (int)slot;
        } else if (t->cx[0].ready <= c && sup_can_issue(m, t)) {
            ctx = 0;
        }
        bool issued = ctx >= 0;
        if (issued) {
            ts_status rc = exec(m, ti, t, ctx, c, err);
            if (rc != TS_OK)
                return rc;
            if (ctx == 0)
                ro = reads_others(t);
        }
        c++;
        if (++slot == W)
            slot = 0;
        if (!issued && !lock && t->sup == SUP_RUN) {
            uint64_t bound = ro ? (c > h ? c : h) : cap;
            uint64_t n = next_event(m, t, c, slot, bound);
            if (n != c) {
                slot = slot_of(n, c, slot, W);
                c = n;
            }
        }
    }
    m->tnow[ti] = t->sup == SUP_RUN && c < h ? h : c;
    return TS_OK;
}

/* The tiles of thread id: whole columns (so that a column's spine stage is one thread's), split
 * as evenly as columns allow. */
static void thread_range(const ts_model *m, int id, uint32_t *lo, uint32_t *hi)
{
    uint64_t k = (uint64_t)m->nthreads, tpc = m->c.tiles_per_column;
    uint64_t a = m->ncols * (uint64_t)id / k * tpc, b = m->ncols * ((uint64_t)id + 1) / k * tpc;
    *lo = (uint32_t)(a < m->ntiles ? a : m->ntiles);
    *hi = (uint32_t)(b < m->ntiles ? b : m->ntiles);
}

/* Run tiles [lo, hi) to round_h; record the first error of each thread (lowest cycle, then tile). */
static void run_range(ts_model *m, int id)
{
    uint32_t lo, hi;
    thread_range(m, id, &lo, &hi);
    ipu_terr *te = &m->terr[id];
    for (uint32_t i = lo; i < hi; i++) {
        if (m->t[i].failed || m->t[i].sup != SUP_RUN)
            continue;
        ts_err *e = &te->scratch;
        if (tile_run(m, i, m->round_h, e) != TS_OK) {
            m->t[i].failed = true;
            if (!te->failed || e->cycle < te->err.cycle) {
                ts_err_free(&te->err);
                te->err = *e;
                te->failed = true;
            } else {
                ts_err_free(e);
            }
            ts_err_init(e);
        }
    }
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

static void spine_column(ts_model *m, uint32_t col, uint64_t h)
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
        uint64_t tmin = UINT64_MAX;
        for (uint32_t i = lo; i < hi; i++) {
            const ipu_tile *t = &m->t[i];
            if (t->fin < t->log.n && t->log.v[t->fin].t < h && t->log.v[t->fin].t < tmin)
                tmin = t->log.v[t->fin].t;
        }
        if (tmin == UINT64_MAX)
            return;
        uint64_t crossing = 0; /* this column's words that enter the spine at tmin */
        for (uint32_t i = lo; i < hi; i++) {
            const ipu_tile *t = &m->t[i];
            for (size_t k = t->fin; k < t->log.n && t->log.v[k].t == tmin; k++) {
                crossing += crosses(m, t->log.v[k].dst, group);
            }
        }
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
 * the words are checked (at a barrier, at the end, when every tile waits). */
static void spine_all(ts_model *m)
{
    for (uint32_t col = 0; col < m->ncols; col++)
        spine_column(m, col, UINT64_MAX);
}

/* Tiles [lo, hi) of thread id: commit the words they sent this round to their logs (no thread
 * reads a log while this runs: it comes between two barriers) and summarise their state for the
 * main thread's decision. */
static void finish_range(ts_model *m, int id)
{
    uint32_t lo, hi;
    thread_range(m, id, &lo, &hi);
    ipu_tsum s = {0};
    s.nomem = m->tsum[id].nomem;
    for (uint32_t i = lo; i < hi; i++) {
        ipu_tile *t = &m->t[i];
        if (t->pend.n) {
            if (t->log.n + t->pend.n > t->log.cap) {
                void *v = t->log.v;
                if (ts_grow(&v, &t->log.cap, t->log.n + t->pend.n, sizeof(ipu_word))) {
                    s.nomem = true;
                    continue;
                }
                t->log.v = v;
            }
            memcpy(t->log.v + t->log.n, t->pend.v, t->pend.n * sizeof(ipu_word));
            t->log.n += t->pend.n;
            t->pend.n = 0;
        }
        if (i + 1 == hi || (i + 1) % m->c.tiles_per_column == 0)
            spine_column(m, (uint32_t)(i / m->c.tiles_per_column), m->round_h);
        s.work += t->work;
        s.uni += t->ss_uni;
        s.claims += t->ss_claims;
        uint64_t at;
        if (t->sup == SUP_DONE) { /* halted during this superstep: arrived from its halt */
            if (arrived_at(m, t, &at) && at > s.last_arrival)
                s.last_arrival = at;
            continue;
        }
        s.pending |= t->failed;
        s.live++;
        if (t->sup == SUP_SYNC) {
            s.at_sync++;
            if (t->arrival > s.last_arrival)
                s.last_arrival = t->arrival;
        }
        s.waiting += t->sup == SUP_RUN && !t->running && t->rx_left && t->cx[0].pc < t->n &&
                     t->code[t->cx[0].pc].op == IPU_OP_RXWAIT;
    }
    m->tsum[id] = s;
}

/* The threads' barrier: sense-reversing on C11 atomics. A thread spins for a while (a round
 * takes microseconds, a futex wake-up about as long), then spins yielding the core (on a busy
 * host the thread it waits for may need that core), and then sleeps on bar_cv; the last to
 * arrive wakes the sleepers. Sequentially consistent atomics on bar_sense and bar_sleepers make
 * sure that either the last thread sees a sleeper or the sleeper sees the new sense. */
#define IPU_SPINS 4000  /* plain spins (a few microseconds) */
#define IPU_YIELDS 2000 /* then spins that yield the core (about a millisecond when it is free) */

static void bar_wait(ts_model *m, uint32_t *sense)
{
    uint32_t s = *sense ^ 1u;
    *sense = s;
    if (atomic_fetch_add(&m->bar_count, 1) + 1 == (uint32_t)m->nthreads) {
        atomic_store(&m->bar_count, 0);
        atomic_store(&m->bar_sense, s);
        if (atomic_load(&m->bar_sleepers)) {
            pthread_mutex_lock(&m->bar_mu);
            pthread_cond_broadcast(&m->bar_cv);
            pthread_mutex_unlock(&m->bar_mu);
        }
        return;
    }
    for (unsigned i = 0; i < IPU_SPINS + IPU_YIELDS; i++) {
        if (atomic_load_explicit(&m->bar_sense, memory_order_acquire) == s)
            return;
        if (i >= IPU_SPINS) /* let a thread we wait for run if it shares our core */
            sched_yield();
    }
    pthread_mutex_lock(&m->bar_mu);
    atomic_fetch_add(&m->bar_sleepers, 1);
    while (atomic_load(&m->bar_sense) != s)
        pthread_cond_wait(&m->bar_cv, &m->bar_mu);
    atomic_fetch_sub(&m->bar_sleepers, 1);
    pthread_mutex_unlock(&m->bar_mu);
}

static void *worker_main(void *arg)
{
    ipu_thread_arg *a = arg;
    ts_model *m = a->m;
    int id = a->id;
    ts_free(a);
    pthread_mutex_lock(&m->gate_mu);
    while (m->gate == 0)
        pthread_cond_wait(&m->gate_cv, &m->gate_mu);
    int gate = m->gate;
    pthread_mutex_unlock(&m->gate_mu);
    if (gate == 2)
        return NULL;
    uint32_t sense = 0;
    for (;;) {
        bar_wait(m, &sense);
        if (m->quit)
            break;
        run_range(m, id);
        bar_wait(m, &sense);
        finish_range(m, id);
        bar_wait(m, &sense);
    }
    return NULL;
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
static ts_status check_exchange(ts_model *m, ts_err *err)
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

static void trace_superstep(ts_model *m, const ipu_ss *r, uint64_t last, uint64_t release)
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

/* All live tiles are at the barrier: move the host data, release them, record the superstep. */
/* When tile t took part in the sync that is pending: the cycle of its `sync 1`, or, for a tile
 * that halted during this superstep, its halt (a halted tile counts as arrived from then on).
 * False for tiles that finished in an earlier superstep. */
static bool arrived_at(const ts_model *m, const ipu_tile *t, uint64_t *at)
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

/* Record every tile's states over the superstep that ends at `release`, then flush the windows
 * it completes. */
static ts_status act_superstep(ts_model *m, const ipu_ss *r, uint64_t release, ts_err *err)
{
    ts_status rc = act_nomem(m, err);
    if (rc != TS_OK)
        return rc;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        const ipu_tile *t = &m->t[i];
        uint64_t at;
        if (!arrived_at(m, t, &at))
            act_tile(m, i, m->ss_start, m->ss_start, TS_ACT_IDLE, release);
        else
            act_tile(m, i, m->ss_start, at + 1, t->sup == SUP_SYNC ? TS_ACT_SYNC : TS_ACT_IDLE, release);
    }
    ts_act_superstep s = {r->start, r->compute, r->exchange, r->sync};
    rc = ts_activity_superstep(m->act, &s, err);
    if (rc == TS_OK)
        rc = ts_activity_advance(m->act, release, err);
    return rc;
}

/* The run is done at m->end: record the last stretch after the final sync and flush it all. */
static ts_status act_end(ts_model *m, ts_err *err)
{
    ts_status rc = act_nomem(m, err);
    if (rc != TS_OK)
        return rc;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        const ipu_tile *t = &m->t[i];
        uint64_t busy_end = t->finish > m->ss_start ? t->finish : m->ss_start;
        act_tile(m, i, m->ss_start, busy_end, TS_ACT_IDLE, m->end);
    }
    return ts_activity_finish(m->act, m->end, err);
}

/* Bytes an op reads from / writes to tile memory. */
static void op_mem_bytes(int op, uint32_t *rd, uint32_t *wr)
{
    *rd = *wr = 0;
    switch (op) {
    case IPU_OP_LD32: case IPU_OP_LD32STEP: *rd = 4; break;
    case IPU_OP_LD64: case IPU_OP_LD64STEP: *rd = 8; break;
    case IPU_OP_LD128: case IPU_OP_LD128STEP: case IPU_OP_LD128PUTCS: *rd = 16; break;
    case IPU_OP_LDZ16: case IPU_OP_LDB16: *rd = 2; break;
    case IPU_OP_LDZ8: *rd = 1; break;
    case IPU_OP_ST32: case IPU_OP_ST32STEP: *wr = 4; break;
    case IPU_OP_ST64: case IPU_OP_ST64STEP: *wr = 8; break;
    case IPU_OP_LDST64PACE: *rd = 8; *wr = 8; break;
    case IPU_OP_LD2XST64PACE: *rd = 16; *wr = 8; break;
    default: break;
    }
}

/* 32-bit register words an op reads and writes. */
static uint32_t op_reg_words(int op)
{
    const char *cls = ts_ipu_opfacts[op].classes;
    uint32_t n = 0;
    for (int k = 0; cls[k]; k++)
        n += cls[k] == 'p' ? 2 : cls[k] == 'q' ? 4 : (cls[k] == 'm' || cls[k] == 'a' || cls[k] == 'x') ? 1 : 0;
    return n;
}

static int ev_index(const char *name)
{
    for (int i = 0; i < EV_COUNT; i++)
        if (name && !strcmp(name, ev_names[i]))
            return i;
    return -1;
}

/* The events of op issued k times (what its facts, memory bytes, register words and AMP MACs
 * charge); issue events are counted by the caller. */
static void op_events(const ts_model *m, int op, double k, double *ev)
{
    uint32_t br, bw;
    op_mem_bytes(op, &br, &bw);
    ev[EV_SRAM_RD] += k * br / 8.0;
    ev[EV_SRAM_WR] += k * bw / 8.0;
    ev[EV_REGFILE] += k * op_reg_words(op);
    int e = ev_index(ts_ipu_opfacts[op].energy);
    if (e >= 0)
        ev[e] += k * ts_ipu_opfacts[op].ecount;
    if (op == IPU_OP_F16V4AMP)
        ev[EV_FP16_MAC] += k * m->c.amp_macs_f16;
    if (op == IPU_OP_F32V2AMP)
        ev[EV_FP32_MAC] += k * m->c.amp_macs_f32;
}

/* Add to acc (per op) what tile t executed since its last sync 1 (opcnt - opseen); with mark,
 * opseen catches up. */
static void tile_op_delta(ipu_tile *t, uint64_t *acc, bool mark)
{
    for (uint32_t j = 0; j < t->nops; j++) {
        int op = t->ops[j];
        acc[op] += t->opcnt[op] - t->opseen[op];
        if (mark)
            t->opseen[op] = t->opcnt[op];
    }
}

/* The events of the executions per op in acc, added to ev. */
static void ops_events(const ts_model *m, const uint64_t *acc, double *ev)
{
    uint64_t execs = 0;
    for (int op = 0; op < IPU_OP_COUNT; op++) {
        if (!acc[op] || op == IPU_OP_BUNDLE)
            continue;
        execs += acc[op];
        op_events(m, op, (double)acc[op], ev);
    }
    ev[EV_ISSUE] += (double)(execs - acc[IPU_OP_BUNDLE]); /* a bundle's two members are one issue */
}

/* The energy events since the last sync 1, into ev: the ops the tiles executed, the exchange's
 * reads (xsent bytes) and writes (bytes received), its wire events and hbytes to or from the
 * host; with mark, the next sync counts from here. Only when the run asked for superstep_events
 * (m->op_block). */
static void events_since_sync(ts_model *m, uint64_t xsent, uint64_t hbytes, bool mark, double *ev)
{
    uint64_t acc[IPU_OP_COUNT] = {0}, xrecv = 0;
    double wire = 0;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        tile_op_delta(&m->t[i], acc, mark);
        xrecv += m->t[i].xrecv;
        wire += m->t[i].wire_bit_mm;
    }
    memset(ev, 0, EV_COUNT * sizeof *ev);
    ops_events(m, acc, ev);
    ev[EV_SRAM_RD] += (double)xsent / 8.0;
    ev[EV_SRAM_WR] += (double)(xrecv - m->xrecv_seen) / 8.0;
    ev[EV_WIRE] += wire - m->wire_seen;
    ev[EV_PCIE] += 8.0 * (double)hbytes;
    if (mark) {
        m->xrecv_seen = xrecv;
        m->wire_seen = wire;
    }
}

static ts_status barrier(ts_model *m, ts_err *err)
{
    ts_status rc = check_exchange(m, err);
    if (rc != TS_OK)
        return rc;
    uint64_t last = 0, crit = 0, hbytes = 0, xbytes = 0;
    bool any = false;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        uint64_t at;
        if (!arrived_at(m, t, &at))
            continue;
        if (!any || at > last) { /* critical tile: the first (lowest id) of those that came last */
            last = at;
            crit = i;
            any = true;
        }
        for (size_t k = 0; k < t->nhost; k++)
            hbytes += t->host[k].bytes;
        xbytes += t->ss_xbytes;
    }
    uint64_t host_cycles = 0;
    if (hbytes) {
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
                        mem_read_bytes(m, t, h->addr, m->hostmem + h->haddr, h->bytes);
                    else if ((rc = mem_write_bytes(m, t, h->addr, m->hostmem + h->haddr, h->bytes, err)) != TS_OK)
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
    if (m->op_block)
        events_since_sync(m, xbytes, hbytes, true, r->ev);
    else
        memset(r->ev, 0, sizeof r->ev);
    m->host_bytes_total += hbytes;
    m->host_cycles_total += host_cycles;
    if (m->trace)
        trace_superstep(m, r, last, release);
    if (m->act && (rc = act_superstep(m, r, release, err)) != TS_OK)
        return rc;
    m->ss_start = release;
    uint64_t span = m->ntiles > 1 ? m->ntiles - 1 : 1;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        t->log.n = 0;
        t->fin = 0;
        t->nhost = 0;
        t->ss_xbytes = 0;
        t->ss_uni = t->ss_claims = 0;
        t->xch_cycles = 0;
        t->xch_until = 0;
        t->rx_src = -1;
        if (t->sup != SUP_SYNC)
            continue;
        t->sup = SUP_RUN;
        t->cx[0].ready = release + m->c.sync_skew * i / span;
        m->tnow[i] = release;
    }
    return TS_OK;
}

static bool tile_stuck(const ts_model *m, const ipu_tile *t)
{
    if (t->sup != SUP_RUN || t->running || !t->rx_left || t->cx[0].pc >= t->n ||
        t->code[t->cx[0].pc].op != IPU_OP_RXWAIT)
        return false;
    const ipu_tile *s = &m->t[t->rx_src];
    return (s->sup == SUP_SYNC || s->sup == SUP_DONE) && t->rx_cursor >= s->log.n;
}

static ts_status ipu_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err)
{
    if (!m->loaded)
        return ts_err_set(err, TS_EINTERNAL, "ipu: step before load");
    while (m->now < limit && !m->done) {
        uint64_t h = m->now + (m->lockstep ? 1 : m->window);
        if (h > limit)
            h = limit;
        m->round_h = h;
        if (m->nthreads > 1) {
            bar_wait(m, &m->main_sense);
            run_range(m, 0);
            bar_wait(m, &m->main_sense);
            finish_range(m, 0);
            bar_wait(m, &m->main_sense);
        } else {
            run_range(m, 0);
            finish_range(m, 0);
        }
        int bad = -1;
        for (int i = 0; i < m->nthreads; i++)
            if (m->terr[i].failed && (bad < 0 || m->terr[i].err.cycle < m->terr[bad].err.cycle))
                bad = i;
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
        uint64_t work = 0, last_arrival = 0;
        uint32_t live = 0, at_sync = 0, waiting = 0, stuck = 0, first_stuck = 0;
        bool pending = false, nomem = false;
        for (int i = 0; i < m->nthreads; i++) {
            const ipu_tsum *q = &m->tsum[i];
            work += q->work;
            if (q->last_arrival > last_arrival)
                last_arrival = q->last_arrival;
            live += q->live;
            at_sync += q->at_sync;
            waiting += q->waiting;
            pending |= q->pending;
            nomem |= q->nomem;
        }
        if (nomem)
            return ts_err_set(err, TS_ENOMEM, "out of memory for exchange words");
        m->work = work + m->nss;
        if (waiting && waiting + at_sync == live) /* only then can every live tile be stuck or at a sync */
            for (uint32_t i = 0; i < m->ntiles; i++)
                if (tile_stuck(m, &m->t[i]) && !stuck++)
                    first_stuck = i;
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
            ts_status rc = check_exchange(m, err);
            if (rc == TS_OK && m->act)
                rc = act_end(m, err);
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
            ts_status rc = check_exchange(m, err);
            if (rc != TS_OK)
                return rc;
            const ipu_tile *t = &m->t[first_stuck];
            return ts_err_sim(err, first_stuck, (int64_t)t->rx_armed,
                              "receive with nothing sent: tile %u waits for %u of %u words from tile %d, which sends "
                              "nothing more", first_stuck, t->rx_left, t->rx_n, t->rx_src);
        }
        if (at_sync == live) {
            ts_status rc = barrier(m, err);
            if (rc != TS_OK)
                return rc;
            if (!m->lockstep) { /* nothing happens before the release */
                uint64_t next = UINT64_MAX;
                for (uint32_t i = 0; i < m->ntiles; i++)
                    if (m->t[i].sup == SUP_RUN && m->t[i].cx[0].ready < next)
                        next = m->t[i].cx[0].ready;
                if (next != UINT64_MAX && next > m->now)
                    m->now = next < limit ? next : limit;
            }
            for (uint32_t i = 0; i < m->ntiles; i++)
                if (m->tnow[i] < m->now)
                    m->tnow[i] = m->now;
        }
    }
    st->now = m->now;
    st->work = m->work;
    st->done = m->done;
    return TS_OK;
}

/* ---- results ---- */


/* The table superstep_events, when the run asked for it (opts.phase_events): each superstep's
 * energy events (counted per op as the tiles issue, taken at each sync 1, with the superstep's
 * exchange and host traffic), and a last row, id nss, for what ran after the last sync, if
 * anything did. The rows sum to the run's events. */
static ts_status superstep_events(ts_model *m, ts_stats *s, ts_err *err)
{
    if (!m->op_block)
        return TS_OK; /* not asked for */
    double tail[EV_COUNT];
    uint64_t xsent_tail = 0; /* sent after the last sync */
    for (uint32_t i = 0; i < m->ntiles; i++)
        xsent_tail += m->t[i].ss_xbytes;
    events_since_sync(m, xsent_tail, 0, false, tail);
    int tab = ts_results_events_table(s, "superstep_events", "one row per BSP superstep (and one for what ran "
                                      "after the last sync, if anything did): the energy events it caused, to price "
                                      "a part of the run", "id", ev_names, EV_COUNT);
    if (tab < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the superstep_events table");
    bool any = false;
    for (int e = 0; e < EV_COUNT; e++)
        any = any || tail[e] != 0;
    for (size_t k = 0; k <= m->nss; k++) {
        if (k == m->nss && !any)
            break;
        double row[1 + EV_COUNT];
        row[0] = (double)k;
        memcpy(row + 1, k < m->nss ? m->ss[k].ev : tail, sizeof(double) * EV_COUNT);
        if (ts_stats_row(s, tab, row) != TS_OK)
            return ts_err_set(err, TS_ENOMEM, "out of memory for the superstep_events table");
    }
    return TS_OK;
}

static ts_status ipu_collect(ts_model *m, ts_results *r, ts_err *err)
{
    const ts_ipu_cfg *c = &m->c;
    uint32_t n = m->ntiles;
    double ev[EV_COUNT] = {0};
    uint64_t issue = 0, amp = 0, macs16 = 0, macs32 = 0, rd = 0, wr = 0, xs = 0, xr = 0, xport = 0, fl = 0;
    double *busy = ts_calloc(n, sizeof *busy), *memu = ts_calloc(n, sizeof *memu), *xb = ts_calloc(n, sizeof *xb);
    if (!busy || !memu || !xb) {
        ts_free(busy);
        ts_free(memu);
        ts_free(xb);
        return ts_err_set(err, TS_ENOMEM, "out of memory collecting ipu results");
    }
    uint64_t fmac32 = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ipu_tile *t = &m->t[i];
        uint64_t opcount[IPU_OP_COUNT] = {0};
        uint64_t tb = 0; /* issue cycles: a bundle is one issue (its `{`), its members none */
        for (uint32_t pc = 0; pc < t->n; pc++) {
            opcount[t->code[pc].op] += t->code[pc].hits;
            if (!t->code[pc].member)
                tb += t->code[pc].hits;
        }
        for (int op = 0; op < IPU_OP_COUNT; op++) {
            uint64_t k = opcount[op];
            if (!k)
                continue;
            uint32_t br, bw;
            op_mem_bytes(op, &br, &bw);
            rd += k * br;
            wr += k * bw;
            op_events(m, op, (double)k, ev);
            if (ts_ipu_opfacts[op].unit == IPU_U_FPU && op != IPU_OP_F16V2TOF32 && op != IPU_OP_F32V2TOF16 &&
                op != IPU_OP_F32TOI32 && op != IPU_OP_F32FROMI32)
                fl += k * (uint64_t)ts_ipu_opfacts[op].ecount * (op == IPU_OP_F32MAC || op == IPU_OP_F32V2MAC ? 2 : 1);
        }
        amp += opcount[IPU_OP_F16V4AMP] + opcount[IPU_OP_F32V2AMP];
        macs16 += opcount[IPU_OP_F16V4AMP] * c->amp_macs_f16;
        macs32 += opcount[IPU_OP_F32V2AMP] * c->amp_macs_f32;
        fmac32 += opcount[IPU_OP_F32MAC] + 2 * opcount[IPU_OP_F32V2MAC];
        rd += t->xsent;
        wr += t->xrecv;
        xs += t->xsent;
        xr += t->xrecv;
        xport += t->xport;
        ev[EV_WIRE] += t->wire_bit_mm;
        issue += tb;
        busy[i] = (double)tb;
        memu[i] = (double)(t->mem_hi + (uint64_t)t->ncode * c->insn_bytes);
        xb[i] = (double)t->xsent;
    }
    ev[EV_SRAM_RD] += (double)(xs) / 8.0; /* the exchange's reads and writes; the ops' are in op_events */
    ev[EV_SRAM_WR] += (double)(xr) / 8.0;
    ev[EV_PCIE] += 8.0 * (double)m->host_bytes_total;
    ev[EV_ISSUE] += (double)issue;

    r->cycles = m->end;
    r->clock_hz = c->clock_hz;
    snprintf(r->net_name, sizeof r->net_name, "exchange");
    r->bytes[TS_LEVEL_SRAM] = rd + wr;
    r->bytes[TS_LEVEL_NET] = xs;
    r->bytes[TS_LEVEL_OFFCHIP] = m->host_bytes_total;
    r->macs = macs16 + macs32 + fmac32;
    r->flops = 2.0 * (double)(macs16 + macs32) + (double)fl;
    ts_status rc = ts_results_util(r, "tile", n, issue, err);
    if (rc == TS_OK)
        rc = ts_results_util(r, "amp", n, amp, err);
    for (int e = 0; e < EV_COUNT && rc == TS_OK; e++)
        rc = ts_results_event(r, ev_names[e], ev[e], err);

    ts_stats *s = r->stats;
    static const char *const cols[] = {"id", "start", "compute", "exchange", "sync", "critical_tile",
                                       "exchange_bytes", "host_bytes"};
    static const char *const units[] = {"", "cycles", "cycles", "cycles", "cycles", "", "B", "B"};
    uint64_t xcyc = 0, ccyc = 0, scyc = 0;
    if (rc == TS_OK) {
        int tab = ts_stats_table(s, "supersteps", "one row per BSP superstep: compute, exchange and sync cycles, "
                                 "the last tile to reach the sync", 8, cols, units);
        if (tab < 0)
            rc = ts_err_set(err, TS_ENOMEM, "out of memory for the supersteps table");
        for (size_t k = 0; k < m->nss && rc == TS_OK; k++) {
            const ipu_ss *q = &m->ss[k];
            double row[8] = {(double)k, (double)q->start, (double)q->compute, (double)q->exchange, (double)q->sync,
                             (double)q->critical, (double)q->xbytes, (double)q->hbytes};
            xcyc += q->exchange;
            ccyc += q->compute;
            scyc += q->sync;
            rc = ts_stats_row(s, tab, row);
        }
    }
    if (rc == TS_OK)
        rc = superstep_events(m, s, err);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "supersteps.count", "", "chip-wide syncs passed", m->nss);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "supersteps.compute_cycles", "cycles", "sum of compute phases", ccyc);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "supersteps.exchange_cycles", "cycles", "sum of exchange phases", xcyc);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "supersteps.sync_cycles", "cycles", "sum of sync waits (incl. host transfers)", scyc);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "exchange.bytes", "B", "bytes sent over the exchange", xs);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "exchange.bytes_received", "B", "bytes written by receivers", xr);
    if (rc == TS_OK)
        rc = ts_stats_f64(s, "exchange.bytes_per_port_cycle", "B/cycle",
                          "achieved per-tile send bandwidth while sending", xport ? (double)xs / (double)xport : 0);
    if (rc == TS_OK)
        rc = ts_stats_f64(s, "exchange.bandwidth", "B/cycle", "achieved chip exchange bandwidth over exchange phases",
                          xcyc ? (double)xs / (double)xcyc : 0);
    if (rc == TS_OK)
        rc = ts_stats_f64(s, "amp.utilization", "", "AMP busy cycles / (tiles x cycles)",
                          m->end ? (double)amp / ((double)n * (double)m->end) : 0);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "host.bytes", "B", "bytes moved over the host link", m->host_bytes_total);
    if (rc == TS_OK)
        rc = ts_stats_u64(s, "host.cycles", "cycles", "cycles the syncs waited for the host link", m->host_cycles_total);
    if (rc == TS_OK)
        rc = ts_stats_array(s, "tile.busy_cycles", "cycles", "issue cycles per tile", busy, n);
    if (rc == TS_OK)
        rc = ts_stats_array(s, "tile.memory_used", "B", "code plus highest data byte written, per tile", memu, n);
    if (rc == TS_OK)
        rc = ts_stats_array(s, "tile.exchange_bytes", "B", "bytes sent per tile", xb, n);
    ts_free(busy);
    ts_free(memu);
    ts_free(xb);
    return rc;
}

ts_status ts_ipu_read(ts_model *m, uint32_t tile, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    if (tile >= m->ntiles || addr + len > m->c.sram_bytes)
        return ts_err_set(err, TS_EINPUT, "no %zu bytes at %" PRIu64 " on tile %u", len, addr, tile);
    mem_read_bytes(m, &m->t[tile], addr, dst, len);
    return TS_OK;
}

uint64_t ts_ipu_memhash(ts_model *m)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        for (uint64_t a = 0; a < t->mem_hi; a++) {
            h ^= *rd_ptr(m, t, a);
            h *= 1099511628211ull;
        }
        h ^= t->mem_hi;
        h *= 1099511628211ull;
    }
    return h;
}

static void ipu_blocked(ts_model *m, ts_buf *out)
{
    for (uint32_t i = 0; i < m->ntiles; i++) {
        const ipu_tile *t = &m->t[i];
        if (t->sup == SUP_DONE)
            continue;
        if (t->sup == SUP_SYNC) {
            ts_buf_printf(out, "  tile %u: waiting at sync since cycle %" PRIu64 "\n", i, t->arrival);
            continue;
        }
        uint32_t pc = t->cx[0].pc;
        const char *op = pc < t->n ? ts_ipu_isa.ops[t->code[pc].op].mnemonic : "end";
        ts_buf_printf(out, "  tile %u: supervisor at pc %u (%s), workers 0x%x", i, pc, op, t->running);
        if (t->rx_left)
            ts_buf_printf(out, ", waiting for %u word%s from tile %d", t->rx_left, t->rx_left == 1 ? "" : "s",
                          t->rx_src);
        ts_buf_putc(out, '\n');
    }
}

static ts_status ipu_info(const void *cfgp, ts_info *o, ts_err *err)
{
    const ts_ipu_cfg *c = cfgp;
    (void)err;
    memset(o, 0, sizeof *o);
    o->clock_hz = c->clock_hz;
    o->sram_bytes = c->tiles * c->sram_bytes;
    o->units[0].name = "tiles";
    o->units[0].n = c->tiles;
    o->units[1].name = "worker contexts";
    o->units[1].n = c->tiles * c->worker_contexts;
    o->nunits = 2;
    o->peak[0].dtype = "fp16->fp32";
    o->peak[0].macs = (double)c->tiles * (double)c->amp_macs_f16;
    o->peak[1].dtype = "fp32";
    o->peak[1].macs = (double)c->tiles * (double)c->amp_macs_f32;
    o->npeak = 2;
    o->bw[0].name = "tile memory read";
    o->bw[0].bytes_per_cycle = (double)c->tiles * c->load_bpc;
    o->bw[1].name = "tile memory write";
    o->bw[1].bytes_per_cycle = (double)c->tiles * c->store_bpc;
    o->bw[2].name = "exchange";
    o->bw[2].bytes_per_cycle = (double)c->tiles * c->xch_bpc;
    o->bw[3].name = "host";
    o->bw[3].bytes_per_cycle = c->host_bw / c->clock_hz;
    o->nbw = 4;
    return TS_OK;
}

const ts_family ts_ipu_family = {
    .name = "ipu",
    .schema = &ts_ipu_schema,
    .isa = &ts_ipu_isa,
    .info = ipu_info,
    .create = ipu_create,
    .load = ipu_load,
    .step = ipu_step,
    .collect = ipu_collect,
    .blocked = ipu_blocked,
    .destroy = ipu_destroy,
    .default_config = "ipu_mk1",
    .default_workload = "ipu_default",
};
