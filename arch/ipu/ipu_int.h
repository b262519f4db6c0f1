/* arch/ipu/ipu_int.h — private declarations of the IPU family (not for other modules).
 *
 * The family itself is ts_ipu_family (declared in arch/registry.c); ipu.h exposes the few helpers
 * tests and benchmarks use. Here, shared by the files of arch/ipu/ only: the opcodes and their
 * facts, the typed config, the model's state, the positions and the paged tile memory the
 * executor reads inline, and the functions one file of the model calls in another (the list of
 * files and what each holds is at the top of ipu_model.c).
 */
#ifndef TS_ARCH_IPU_INT_H
#define TS_ARCH_IPU_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/barrier.h"
#include "core/half.h"
#include "core/config.h"
#include "core/isa.h"
#include "core/loopmark.h"
#include "core/sim.h"

/* Opcodes, from the one table. */
enum ipu_op {
#define IPU_OP(id, mn, ops, cls, unit, ctx, lat, ev, ec, rd, wr, doc) IPU_OP_##id,
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
    IPU_OP_COUNT
};

/* Which contexts may issue an op (the .def's ctx column). */
#define IPU_CTX_S 'S'
#define IPU_CTX_W 'W'
#define IPU_CTX_B 'B'

enum ipu_unit { IPU_U_ALU, IPU_U_MEM, IPU_U_FPU, IPU_U_AMP, IPU_U_CTL, IPU_U_XCH, IPU_U_COUNT };

/* Register numbering: $m0..$m15 are 0..15, $a0..$a15 are 16..31. */
#define IPU_NREGS 32
#define IPU_AREG0 16

/* Control and status registers read by `get`. */
enum { IPU_CSR_TILE = 0, IPU_CSR_NTILES = 1, IPU_CSR_WORKER = 2, IPU_CSR_NWORKERS = 3 };

/* Per-op static facts used by the loader and executor (expanded from the .def). */
typedef struct ipu_opfacts {
    const char *classes;  /* operand classes, see ipu_isa.def */
    uint8_t unit;
    char ctx;             /* 'S', 'W' or 'B' */
    const char *energy;
    double ecount;
    uint32_t memrd;       /* bytes read from tile memory per issue (the .def's memrd) */
    uint32_t memwr;       /* bytes written to tile memory per issue (memwr) */
    bool effect;          /* it changes more than its own context's registers (ipu_isa.c) */
} ipu_opfacts;

extern const ipu_opfacts ts_ipu_opfacts[IPU_OP_COUNT];
extern const ts_isa ts_ipu_isa;
extern const ts_schema ts_ipu_schema;

/* The typed config (filled from the schema in ipu_config.c; derived fields set by its check). */
typedef struct ts_ipu_cfg {
    char *variant;                  /* owned by the ts_config */
    uint64_t tiles;
    double clock_hz;
    /* tile */
    uint64_t sram_bytes;
    uint64_t worker_contexts;
    uint64_t load_latency;          /* cycles from a load's issue to its result */
    double load_bpc;                /* widest load per cycle, bytes */
    double store_bpc;               /* widest store per cycle, bytes */
    uint64_t interleaved_base;      /* 128-bit loads only at or above this address */
    uint64_t element_bytes;         /* size of one SRAM element (conflict checks) */
    uint64_t insn_bytes;            /* code size of one instruction */
    /* AMP */
    uint64_t amp_macs_f16;          /* fp16 x fp16 -> fp32 MACs per cycle per tile */
    uint64_t amp_macs_f32;          /* fp32 MACs per cycle per tile */
    /* exchange */
    double xch_bpc;                 /* bytes a tile sends (and receives) per cycle */
    uint64_t lat_base;              /* cycles, nearest pair */
    uint64_t lat_per_group;         /* cycles per column group of distance */
    uint64_t lat_per_row;           /* cycles per row of distance */
    uint64_t tiles_per_column;
    uint64_t columns_per_group;
    uint64_t spine_port_words;      /* words per cycle a column puts straight onto the spine */
    uint64_t spine_buffer_cycles;   /* extra cycles through the column's buffered spine stage */
    double tile_pitch_m;            /* metres between neighbouring tiles (wire energy) */
    /* sync */
    uint64_t sync_cycles;
    uint64_t sync_skew;             /* max release skew across the chip */
    /* host */
    double host_bw;                 /* bytes/s */
    double host_latency_s;
    uint64_t host_bytes;            /* size of the modelled host buffer */
    /* derived in check() */
    uint32_t amp_units_f16, amp_units_f32, words_per_cycle;
    uint64_t host_latency_cycles;
    double host_bpc;
} ts_ipu_cfg;

/* ---- the model's state ---- */

#define IPU_PAGE_SHIFT 12
#define IPU_PAGE_SIZE (1u << IPU_PAGE_SHIFT)
#define IPU_MAX_CTX 9
#define IPU_ACC_MAX 64

/* One predecoded instruction: 16 bytes (a lowered model's program is tens of millions of them,
 * so the host's bytes per instruction decide what can be run). An op has at most one branch
 * target and at most two immediates, never both (ipu_isa.def), so the second immediate and the
 * target share a word. The times an instruction is issued are counted per op, in the tile's
 * opcnt, not here. */
typedef struct ipu_insn {
    uint8_t op, r0, r1, r2;
    int32_t imm;
    union {
        int32_t imm2;       /* rpti: the body's length */
        uint32_t tgt;       /* a branch's, run's or runall's target pc */
    };
    uint8_t r3, r4;         /* fourth and fifth register operands (the paced loads and stores) */
    uint8_t fast;           /* how body_issue does it for one worker and in_step_run for all the
                             * workers at once (ts_ipu_fast_code): 0, through the full executor; a
                             * bundle's `{` F_BUNDLE when body_issue does both members, which keep
                             * their own codes */
    unsigned member : 1;    /* inside a bundle: issued by its `{`, never on its own */
    unsigned bundled : 1;   /* rpt/rpti: the body holds bundles (issues != instructions) */
    unsigned pure : 1;      /* rpt/rpti: the body writes nothing another context reads (no store,
                             * no coefficient load), so turns of it can run in closed form */
    unsigned ctx_ok : 2;    /* bit 0: the supervisor may issue it, bit 1: a worker may */
} ipu_insn;
_Static_assert(sizeof(ipu_insn) == 16, "a predecoded instruction takes 16 bytes");

typedef struct ipu_ctx {
    uint32_t r[IPU_NREGS];
    uint32_t pc;
    uint32_t rpt_start, rpt_end, rpt_left;
    uint64_t ready;         /* earliest cycle this context may issue again */
    float acc[IPU_ACC_MAX]; /* worker AMP accumulators */
    ts_loopmark loop;       /* the endless-loop check at backward branches (core/loopmark.h) */
} ipu_ctx;

/* A word on the fabric. */
typedef struct ipu_word {
    uint64_t t;             /* cycle it left the sender */
    uint32_t val;
    int32_t dst;            /* receiving tile, -1 = any tile listening */
    uint8_t claimed;        /* set by the receiver of a unicast word */
    uint16_t rest;          /* words of the same send after this one (at most 65535): a receiver
                             * the send is not for passes over them all at once (rx_arrivals) */
    uint32_t delay;         /* cycles it waited in the spine's buffered stage (see ts_ipu_spine_column);
                             * set once every tile has passed t, 0 until then */
} ipu_word;

typedef struct ipu_wlog {
    ipu_word *v;
    size_t n, cap;
} ipu_wlog;

/* A tile's word logs (pend and log) keep their memory from one superstep to the next up to this
 * many words (96 KiB); a larger one is freed at the release. Kept, each tile's logs would hold
 * the most words it ever sent in one superstep, and the chip's the sum of those maxima, where
 * only one superstep's words are live at a time. */
#define IPU_WLOG_KEEP 4096

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
    /* What every round reads of every tile (the run phase's test, a waiting receiver's park, the
     * commit phase's summary and spine stage), first, in two cache lines: in an exchange most
     * tiles only wait, and a round of 30 cycles visits all 1216 of them. */
    ipu_insn *code;         /* borrowed from the model's decoded program */
    uint64_t work;          /* instructions issued + words received (the hang detector's counter);
                             * next to the code pointer so the issue path touches one line */
    uint32_t n;
    uint32_t running;       /* bit w: worker w runs */
    uint8_t sup;            /* SUP_* */
    uint8_t sup_op;         /* the op at the supervisor's pc (IPU_OP_COUNT past the end): kept as
                             * the pc changes (ipu_sup_op), so that the per-cycle and per-round
                             * tests do not read the code */
    bool failed;            /* stopped by an error that is not reported yet */
    uint32_t rx_left;
    int32_t rx_src;         /* -1 = input mux off */
    uint32_t rx_lat;
    size_t rx_cursor;
    size_t rx_park_n;       /* the sender's log.n when rx_park was set; SIZE_MAX when not set */
    uint64_t rx_park;       /* no word of the sender's log (its first rx_park_n words) reaches
                             * this tile before this cycle (ts_ipu_tile_run's parked receiver) */
    ipu_wlog pend, log;     /* this round's words; committed words of this superstep */
    size_t fin;             /* log words before this have their spine delay set */
    uint64_t ss_uni, ss_claims; /* unicast words sent this superstep; words addressed to this tile
                             * that it received (all received when the sums are equal) */
    uint64_t arrival;       /* cycle of the last sync 1 */
    uint64_t finish;        /* cycle after halt */
    /* the rest */
    uint32_t ncode;         /* instructions that take code memory (the bundle braces take none) */
    uint64_t *opcnt;        /* executions per op (IPU_OP_COUNT; the `{` of a bundle counts as
                             * IPU_OP_BUNDLE, its members as their ops), in the model's op_block:
                             * the run's instruction counts (ts_ipu_collect) */
    uint64_t *opseen;       /* opcnt at the last sync 1 (superstep_events); NULL unless the run
                             * asked for superstep_events (opts.phase_events) */
    const uint8_t *ops;     /* the ops its code holds (nops of them), in the model's op_block; those
                             * with an effect (ipu_opfacts.effect) first, neffops of them */
    uint32_t nops, neffops;
    uint8_t **page;         /* owned pages, allocated on first write */
    ipu_ctx cx[IPU_MAX_CTX]; /* 0 = supervisor, 1..W = workers */
    /* AMP coefficient state, shared by the workers (research §2.2) */
    uint8_t coef[256];
    float w16[128], w32[64]; /* the coefficients as f32: w32 as stored, w16 converted from f16 with
                             * half j of unit u at w16[32 j + u] (amp_f16) */
    uint16_t w16_stale;     /* coefficient slots whose w16 view is not converted yet (coef_update) */
    /* receive side (and above) */
    uint32_t rx_addr, rx_n;
    uint64_t rx_armed;
    /* send side */
    uint64_t tx_t0, tx_end;
    uint32_t tx_addr, tx_n;
    uint64_t xch_until;     /* exchange activity is counted up to this cycle */
    uint64_t xch_cycles;    /* cycles with exchange activity this superstep */
    ipu_xspan *xs; size_t nxs, cap_xs; /* those cycles as spans, kept only with opts.activity */
    bool rec;               /* keep xs (opts.activity or opts.trace is set) */
    bool rec_nomem;         /* growing xs failed */
    uint64_t effects;       /* words received and bulk copies into its memory; with the counts of its
                             * ops that have an effect, all that changes the tile beyond its
                             * contexts' registers (core/loopmark.h) */
    uint32_t in_rpt;        /* bit w: worker w is inside a repeat body (rpt_left > 0), the closed
                             * form's first test, kept as it changes */
    uint64_t cf_turns;      /* turns run in workers_run or the closed form (tests read it) */
    uint64_t step_turns;    /* turns of them run with the workers in step (in_step_run; tests read it) */
    uint64_t span_passes;   /* repeat passes of them run as one span (span_run; tests read it) */
    uint32_t step_at;       /* 1 + the slot the workers' turns in step last started at, 0 if none */
    ipu_hostop *host; size_t nhost, cap_host;
    /* counters (instructions are counted per op, in opcnt) */
    uint64_t xsent, xrecv, xport; /* bytes sent, bytes received, send-port cycles */
    double wire_bit_mm;
    uint64_t mem_hi;
    uint64_t ss_xbytes;     /* bytes sent this superstep */
} ipu_tile;

/* Energy events, named as in the shipped tables (ts_ipu_collect). */
enum { EV_FP32_MAC, EV_FP16_MAC, EV_FP32_ADD, EV_FP32_MUL, EV_FP16_ADD, EV_FP16_MUL, EV_INT32_ADD,
       EV_INT32_MUL, EV_SRAM_RD, EV_SRAM_WR, EV_REGFILE, EV_WIRE, EV_PCIE, EV_ISSUE, EV_COUNT };

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
    uint64_t hbytes;        /* host bytes of the tiles that arrived (their host ops) */
    uint64_t xbytes;        /* exchange bytes sent this superstep by the tiles that arrived */
    uint64_t run_from;      /* the lowest cycle (tnow) of a running tile; UINT64_MAX if none */
    uint32_t live;          /* tiles not done */
    uint32_t at_sync;       /* tiles at a chip-wide sync */
    uint32_t waiting;       /* tiles idle at rxwait (may be stuck: see tile_stuck) */
    uint32_t crit;          /* the lowest tile that arrived at last_arrival (if arrived) */
    uint32_t first_sync;    /* the lowest tile at a sync (if at_sync) */
    bool arrived;           /* some tile arrived at the pending sync */
    bool pending;           /* a tile failed and its error is not reported yet */
    bool nomem;             /* committing words ran out of memory */
    char pad[128 - 7 * sizeof(uint64_t) - 5 * sizeof(uint32_t) - 3 * sizeof(bool)];
} ipu_tsum;
_Static_assert(sizeof(ipu_tsum) == 128, "one summary per pair of cache lines");

/* The run phase's grain: parts per column (the commit phase takes whole columns). Where a few
 * columns hold a round's work, quarters lift ResNet-50's 16-thread bound from 9.43 (whole
 * columns) to 12.23 (halves 11.02; bench_ipu_balance). */
#define IPU_RUN_PARTS 4

/* The helpers' jobs: a round (run, then commit), or the release of the tiles from a sync. */
enum { IPU_JOB_ROUND, IPU_JOB_RELEASE };

/* A thread's cursors over its columns, one per phase of a round (run, then commit), each on its
 * own cache line: the owner takes its columns through them, and the others once they have
 * taken theirs (take_column in ipu_threads.c). */
typedef struct ipu_cursor {
    _Atomic uint32_t run;
    char pad0[64 - sizeof(uint32_t)];
    _Atomic uint32_t fin;
    char pad1[64 - sizeof(uint32_t)];
} ipu_cursor;

/* The host threads' profile (ts_ipu_profile_on, ipu.h): rounds, barrier meetings, and each round's
 * work per column, for the benchmark that bounds the speed-up of any thread count. */
typedef struct ipu_prof {
    uint64_t rounds;        /* rounds run */
    uint64_t meetings;      /* barrier meetings the threads would have (nthreads > 1) */
    uint64_t visits;        /* tiles the main thread visits alone between rounds (its passes over
                             * the tiles: each touches a few of a tile's cache lines, which on
                             * many cores are in another core's cache) */
    uint64_t *colw;         /* rounds x ncols: colw of every round, in order */
    size_t n, cap;          /* uint64_t values in colw, allocated */
    bool nomem;             /* growing colw failed: the profile is incomplete */
} ipu_prof;

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
    uint64_t act_at;         /* with m->act: every tile's states are recorded up to here (>= ss_start) */
    uint64_t act_cap;        /* with m->act: the next window boundary, where every tile stops (see
                              * ts_ipu_act_partial); UINT64_MAX without */
    ipu_ss *ss; size_t nss, cap_ss;
    uint64_t xrecv_seen;    /* the tiles' xrecv and wire_bit_mm summed at the last sync */
    double wire_seen;
    void *op_block;          /* owned: the tiles' opcnt and ops, and their opseen with phase_events */
    bool phase_events;       /* opts.phase_events: keep each tile's counts at the last sync for
                              * superstep_events */
    uint64_t host_bytes_total, host_cycles_total;
    /* threads */
    pthread_t *th;
    int nstarted;            /* helper threads running (1 .. nthreads - 1 once all started) */
    /* the main thread and the helpers meet at this barrier twice per round (before the run, before
     * the commit; the main thread gathers the helpers after the commit and decides alone before
     * letting them go) and once per sync (the release); it spins, then yields, then sleeps
     * (ipu_threads.c) */
    ts_barrier bar;
    uint32_t main_sense;     /* the main thread's sense */
    pthread_mutex_t gate_mu; /* helpers wait at the gate until every one of them has started */
    pthread_cond_t gate_cv;
    int gate;                /* 0 wait, 1 go, 2 quit */
    bool gate_init, quit;
    uint64_t round_h;
    uint32_t scan_hint;      /* the waiting tile that was not stuck at the last scan (count_stuck) */
    uint64_t release;        /* the cycle the chip-wide sync just passed releases the tiles */
    int job;                 /* what the helpers do when the main thread lets them go: IPU_JOB_* */
    uint8_t *spine_final;    /* per column: every word it sent this superstep has its spine delay
                              * (its tiles all at the sync or done: they send nothing more) */
    ipu_tsum *colsum;        /* per column: its tiles' summary, kept in the round that set its
                              * spine_final and read in the rounds after until the release
                              * (finish_range: a column at the sync is not visited again) */
    uint32_t *tgroup;        /* per tile: its column group (tile / tiles_per_column / columns_per_group) */
    uint64_t *spine_e;       /* per column: the first cycle its next words may enter the spine
                              * (one cycle after its last ones, see ts_ipu_spine_column) */
    uint32_t ncols;
    uint32_t *split;         /* nthreads + 1 column bounds: thread i owns columns [split[i], split[i + 1]) */
    ipu_cursor *cur;         /* one per thread: the next of its columns to take (ipu_threads.c) */
    uint64_t *colw;          /* per part of a column (IPU_RUN_PARTS each): the host work of its tiles in
                              * the last round (finish_range) */
    uint64_t *colseen;       /* per part: its tiles' work counters at the end of the last round */
    ipu_prof *prof;          /* owned, NULL unless ts_ipu_profile_on: the rounds' work per column */
    ipu_terr *terr;
    ipu_tsum *tsum;          /* one per thread */
    uint64_t run_from;       /* after a round, the lowest cycle of a running tile (0 when unknown:
                              * after a release); the next round's horizon starts there (ipu_step.c) */
};

/* ---- positions (inline for the executor's send; the latency, ts_ipu_latency, is in ipu_exchange.c) ---- */

static inline void tile_pos(const ts_ipu_cfg *c, uint32_t t, int64_t *col, int64_t *row)
{
    *col = (int64_t)(t / c->tiles_per_column);
    *row = (int64_t)(t % c->tiles_per_column);
}

/* Millimetres of wire from tile s to tile d (Manhattan distance in tile pitches). */
static inline double wire_mm(const ts_ipu_cfg *c, uint32_t s, uint32_t d)
{
    int64_t cs, rs, cd, rd;
    tile_pos(c, s, &cs, &rs);
    tile_pos(c, d, &cd, &rd);
    return (double)(llabs(cs - cd) + llabs(rs - rd)) * c->tile_pitch_m * 1e3;
}

/* Tile t is idle at rxwait: the threads' summaries count these, the main thread asks whether
 * they are stuck (ipu_step.c). */
static inline bool ts_ipu_tile_waiting(const ipu_tile *t)
{
    return t->sup == SUP_RUN && !t->running && t->rx_left && t->sup_op == IPU_OP_RXWAIT;
}

_Static_assert(IPU_OP_COUNT <= UINT8_MAX, "ipu_tile.sup_op holds every op and IPU_OP_COUNT");

/* Keep t->sup_op, the op at the supervisor's pc, after the pc changed. */
static inline void ipu_sup_op(ipu_tile *t)
{
    uint32_t pc = t->cx[0].pc;
    t->sup_op = (uint8_t)(pc < t->n ? t->code[pc].op : IPU_OP_COUNT);
}

/* Count n tiles visited by the main thread alone (the profile's visits). */
static inline void ts_ipu_visits(ts_model *m, uint64_t n)
{
    if (m->prof)
        m->prof->visits += n;
}

/* ---- tile memory, paged (inline: the executor's loads and stores; the rest is in ipu_mem.c) ---- */

/* Byte a of a tile whose pages are `pages`, read from zero_page where its page was never written. */
static inline const uint8_t *page_rd(uint8_t *const *pages, const uint8_t *zero_page, uint64_t a)
{
    const uint8_t *p = pages[a >> IPU_PAGE_SHIFT];
    return (p ? p : zero_page) + (a & (IPU_PAGE_SIZE - 1));
}

static inline const uint8_t *rd_ptr(ts_model *m, ipu_tile *t, uint64_t a) { return page_rd(t->page, m->zero_page, a); }

static inline uint8_t *wr_ptr(ipu_tile *t, uint64_t a, uint32_t len)
{
    uint8_t **pp = &t->page[a >> IPU_PAGE_SHIFT];
    if (!*pp) {
        *pp = ts_calloc(1, IPU_PAGE_SIZE);
        if (!*pp)
            return NULL;
    }
    if (a + len > t->mem_hi)
        t->mem_hi = a + len;
    return *pp + (a & (IPU_PAGE_SIZE - 1));
}

/* ---- what one file of the model calls in another, by the file that defines it ---- */

/* ipu_mem.c: copy len bytes into tile t's memory at a (pages allocated on first write) */
ts_status ts_ipu_mem_write_bytes(ts_model *m, ipu_tile *t, uint64_t a, const uint8_t *src, uint64_t len, ts_err *err);
/* ipu_mem.c: copy len bytes of tile t's memory at a into dst (unwritten pages read as zeros) */
void ts_ipu_mem_read_bytes(ts_model *m, ipu_tile *t, uint64_t a, uint8_t *dst, uint64_t len);

/* ipu_load.c: validate a program and predecode its streams into the tiles (the family's load) */
ts_status ts_ipu_load(ts_model *m, const ts_program *p, ts_err *err);
ts_status ts_ipu_load_owned(ts_model *m, ts_program *p, ts_err *err);

/* ipu_exec.c: how the executor does an instruction for every worker in step at once (ipu_insn.fast,
 * set by the loader) */
uint8_t ts_ipu_fast_code(const ipu_insn *in);
/* ipu_exec.c: run tile ti to cycle h (past it while it reads no other tile) until a sync or halt */
ts_status ts_ipu_tile_run(ts_model *m, uint32_t ti, uint64_t h, ts_err *err);

/* ipu_exchange.c: set the spine delay of column col's words sent before h */
void ts_ipu_spine_column(ts_model *m, uint32_t col, uint64_t h);
/* ipu_exchange.c: no two senders into one receiver in one cycle, and every unicast word received */
ts_status ts_ipu_check_exchange(ts_model *m, ts_err *err);

/* ipu_threads.c: start the helper threads (none for one thread); on failure the caller destroys m */
ts_status ts_ipu_threads_start(ts_model *m, ts_err *err);
/* ipu_threads.c: stop and join the helper threads, free what they used */
void ts_ipu_threads_stop(ts_model *m);
/* ipu_threads.c: one round to m->round_h on every thread: run the tiles, commit and summarise */
void ts_ipu_round(ts_model *m);

/* ipu_threads.c: release the tiles from the sync just passed, on every thread (release_tiles) */
void ts_ipu_release(ts_model *m);
/* ipu_step.c: release tiles [lo, hi) at m->release and bring their cycles up to m->now */
void ts_ipu_release_tiles(ts_model *m, uint32_t lo, uint32_t hi);

/* ipu_step.c: when tile t arrived at the pending sync (a halt this superstep counts), if it did */
bool ts_ipu_arrived_at(const ts_model *m, const ipu_tile *t, uint64_t *at);
/* ipu_step.c: run rounds up to cycle limit (the family's step) */
ts_status ts_ipu_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err);

/* ipu_observe.c: keep [a, b) as one of tile t's exchange spans (activity and trace only) */
void ts_ipu_xspan_add(ipu_tile *t, uint64_t a, uint64_t b, uint64_t bytes) __attribute__((noinline, cold));
/* ipu_observe.c: give the activity sampler the tile layout and the describer (at create) */
ts_status ts_ipu_act_layout(ts_model *m, ts_err *err);
/* ipu_observe.c: record every tile's states over the superstep that ends at release */
ts_status ts_ipu_act_superstep(ts_model *m, const ipu_ss *r, uint64_t release, ts_err *err);
/* ipu_observe.c: record the stretch after the last sync and flush the activity (at the end) */
ts_status ts_ipu_act_end(ts_model *m, ts_err *err);
/* Every tile has run exactly up to the window boundary `upto` inside a superstep: record their
 * states up to there and flush the windows it completes, so that frames come inside long
 * supersteps too. */
ts_status ts_ipu_act_partial(ts_model *m, uint64_t upto, ts_err *err);
/* ipu_observe.c: write superstep r's trace slices (chip row and tile rows) */
void ts_ipu_trace_superstep(ts_model *m, const ipu_ss *r, uint64_t last, uint64_t release);

/* ipu_energy.c: the energy events' names, as in the shipped tables (index EV_*) */
extern const char *const ts_ipu_ev_names[EV_COUNT];
/* ipu_energy.c: the index (EV_*) of an event named by the .def's energy column, -1 if none */
int ts_ipu_ev_index(const char *name);
/* ipu_energy.c: TS_EINTERNAL naming the op if a .def row names an energy event the model does
 * not count (it would be dropped from every report) */
ts_status ts_ipu_check_events(ts_err *err);
/* ipu_energy.c: bytes an op reads from and writes to tile memory (the .def's memrd, memwr) */
void ts_ipu_op_mem_bytes(int op, uint32_t *rd, uint32_t *wr);
/* ipu_energy.c: add to ev the events of op issued k times (issue events not included) */
void ts_ipu_op_events(const ts_model *m, int op, double k, double *ev);
/* ipu_energy.c: the energy events since the last sync 1 into ev (superstep_events runs only) */
void ts_ipu_events_since_sync(ts_model *m, uint64_t xsent, uint64_t hbytes, bool mark, double *ev);

/* ipu_results.c: the run's results, stats and tables (the family's collect) */
ts_status ts_ipu_collect(ts_model *m, ts_results *r, ts_err *err);
/* ipu_results.c: one line per tile not done, saying what it waits for (the family's blocked) */
void ts_ipu_blocked(ts_model *m, ts_buf *out);

#endif
