/* arch/wse/wse_int.h — the wafer-mesh model's private state (see docs/wse.md for the model).
 *
 * Dense integer ids: PE id = y * width + x. Only PEs that a program touches (code, data, routes,
 * or a neighbour's route into them) get a tile; the rest of the mesh costs one NULL pointer each.
 * SRAM of a tile is allocated on its first write. Everything a tile owns is written only by the
 * thread that owns its mesh band, except the `pushed` counters, slots and control bits of its
 * input queues, which only the single upstream producer writes, in phase B.
 */
#ifndef TS_ARCH_WSE_INT_H
#define TS_ARCH_WSE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_isa.h"
#include "core/loopmark.h"
#include "core/barrier.h"

#define WSE_MAX_COLOURS 32
#define WSE_MAX_POS 4
#define WSE_NTASKS 64
#define WSE_NLINES 6   /* 0..3 router to neighbour N S E W, 4 router to core, 5 core to router */
#define WSE_LINE_DOWN 4
#define WSE_LINE_UP 5
#define WSE_NOQ 0xff

/* A wavelet on a link: payload, colour, control bit, destination, and the cycle it lands in the
 * next queue; 16 bytes, as before destinations were added (every hop reads and writes them). */
typedef struct wse_ent {
    uint64_t land;
    uint32_t data;
    uint32_t meta; /* colour in bits 0..4, control bit 5, from bit 8 its destination (destination
                    * routing): x | y << 12 of the PE it goes to (mesh.width and mesh.height are at
                    * most 4096); one word written and read whole (WSE_ENT_*) */
} wse_ent;
#define WSE_ENT_COLOUR(m) ((m) & 31u)
#define WSE_ENT_CTRL(m) ((m) >> 5 & 1u)
#define WSE_ENT_DST(m) ((m) >> 8)

/* A delay line (one per output): at most one wavelet enters per cycle, so at most lat (the line's
 * latency) in flight. A wavelet that lands in cycle L sits in entry L % cap, cap the least power of
 * two from lat up (wse_line_cap): the one that lands in a cycle is found by a mask, without a ring's
 * head, and an entry is free while its land is 0. */
typedef struct wse_line {
    uint8_t n, lat, cap;
    wse_ent *e; /* owned by the tile's block */
} wse_line;

/* The entries of a delay line of latency lat: the least power of two from lat up. */
static inline uint32_t wse_line_cap(uint32_t lat)
{
    uint32_t c = 1;
    while (c < lat)
        c <<= 1;
    return c;
}

/* A live queue: router input (port, colour) or core input (colour). SPSC ring. */
typedef struct wse_lq {
    uint32_t pushed;  /* producer, phase B */
    uint32_t popped;  /* consumer, committed in phase B */
    uint64_t ctrl;    /* producer: bit i = slot i holds a control wavelet */
    uint32_t *slot;   /* cap payloads */
    uint32_t *dst;    /* cap destinations (x | y << 12), destination routing only, else NULL */
    uint8_t cap;      /* at most 64 (the schema's range), so ctrl has a bit per slot */
    uint8_t rd, wr;   /* slot of the head (popped % cap, consumer) and of the next push (pushed % cap,
                       * producer), kept as wrapping indices so no cycle divides */
    uint8_t port;     /* 0..4 router input port, 5 = core input queue */
    uint8_t colour;
    uint8_t taken;    /* consumer: popped this cycle (not yet committed) */
} wse_lq;

typedef struct wse_route {
    uint8_t npos, pos, ring;
    uint8_t rx[WSE_MAX_POS], tx[WSE_MAX_POS];
    uint8_t any_rx, any_tx; /* union over positions */
} wse_route;

enum { DSD_NONE = 0, DSD_MEM, DSD_IN, DSD_OUT };
typedef struct wse_dsd {
    uint8_t kind, colour, ctrl;
    int32_t base;    /* bytes (memory) */
    uint32_t len;
    int32_t stride;  /* elements (memory) */
} wse_dsd;

typedef struct wse_vop {
    bool busy;
    uint16_t op;
    int8_t done_task;
    uint8_t width;   /* elements per cycle after SIMD, bank and stride rules */
    /* resolved at issue so that a cycle's step does not look them up: the element operation
     * (WSE_V_*), element bytes, SRAM bytes read and written per element, the energy counter slot,
     * and whether an operand is on the fabric (then at most one element a cycle): 0 none, else the
     * kind of its step (WSE_FAB_*) */
    uint8_t vop, esize, br, bw, ev;
    uint8_t fab;
    uint8_t q0, q1;  /* the core input queues of fabric sources s0 and s1 (qmap, at issue) */
    uint32_t i, n;
    uint32_t scalar;
    wse_dsd d, s0, s1;
    uint32_t pc;     /* for messages */
} wse_vop;

/* The step of a vector op with a fabric operand (wse_vop.fab, set at issue): a move from a core
 * input queue into memory (a receive), a move from memory onto the ramp (a send), or any other. The
 * memory operands' base bytes of such an op advance by their strides as its elements go (its
 * elements are the one place that reads them), so a step adds where it multiplied. */
enum { WSE_FAB_NONE = 0, WSE_FAB_ANY, WSE_FAB_RECV, WSE_FAB_SEND };

enum { CE_IDLE = 0, CE_RUN, CE_START, CE_WAIT, CE_WAITVEC };

typedef struct wse_code {
    const ts_insn *insn; /* owned by the model (shared between identical streams) */
    uint32_t n, entry;
} wse_code;

typedef struct wse_ce {
    /* what most cycles read or write first: the issue state, the registers, the busy threads */
    const wse_code *code;
    uint32_t pc;
    int32_t task;           /* -1 main, 0..63 a task, -2 none */
    uint8_t state;
    bool main_done;
    bool image;             /* the code is another PE's (`image`): checked against this PE's routes */
    uint32_t vbusy;         /* bit i set while th[i].busy: the cycle loop visits only busy threads */
    uint64_t until;
    wse_vop *th;            /* 1 + microthreads; th[0] is the main thread's */
    uint64_t active, blocked, bound, data_task;
    uint64_t effects;       /* instructions with an effect (wse_opfacts.effect) */
    int32_t r[WSE_NREGS];
    wse_dsd dsd[WSE_NDSD];
    uint32_t task_pc[WSE_NTASKS];
    ts_loopmark loop;       /* the endless-loop check at backward branches (core/loopmark.h) */
} wse_ce;

/* Vector op th[i] of core ce has moved its last element: its thread is free and its completion task
 * (if any) active. */
static inline void ts_wse_vop_end(wse_ce *ce, uint32_t i)
{
    wse_vop *v = &ce->th[i];
    v->busy = false;
    ce->vbusy &= ~(1u << i);
    if (v->done_task >= 0)
        ce->active |= 1ull << v->done_task;
}

/* Per-tile counters (summed in PE order at collect, so any thread count gives the same sums). The
 * ones most cycles write come first, so that an evaluation touches one or two of their lines. */
typedef struct wse_tstats {
    uint64_t evals;                       /* cycles the tile was evaluated (for balancing bands only) */
    uint64_t busy, stall, stall_in, stall_out, stall_mem, stall_thread;
    uint64_t insns, regs;                 /* regs: 32-bit register file accesses */
    uint64_t router_busy;                 /* cycles the router forwarded anything */
    uint64_t link[WSE_NPORTS];            /* wavelets sent per output port (R = to core) */
    uint64_t injected, delivered;         /* wavelets core to fabric, fabric to core */
    uint64_t rq_push_at, rq_pop_at;       /* cycles of the pushes into and pops from router input queues,
                                           * summed: their difference is the queues' occupancy summed
                                           * over cycles (wse_report.c) */
    uint64_t port_stall[WSE_NPORTS];      /* cycles router input port p held wavelets and forwarded none */
    uint64_t sram_rd, sram_wr;            /* bytes */
    uint64_t ev[WSE_EV_ROWS + 1];         /* per .def row naming an energy event (wse_isa.h: its
                                           * issues, or a vector op's elements); the last slot counts
                                           * the rows naming none and is never charged */
    uint64_t tasks;
    uint64_t tr_accepted;                 /* stamped wavelets that landed in the stamp's window (`stamp`) */
} wse_tstats;

/* Synthetic traffic (docs/noc.md): what a wavelet of a stamped colour carries, and what the cores
 * that take them sum per band (summed over bands at collect, so any thread count gives the same).
 *   bit 0       the last flit of its packet
 *   bit 1       its packet was created in the measurement window
 *   bits 2..12  the packet's distance in hops (0 .. 2047)
 *   bits 13..31 the packet's creation cycle modulo 2^19 (latencies below 2^19 cycles are exact) */
#define WSE_TR_LAST 1u
#define WSE_TR_MEASURED 2u
#define WSE_TR_DIST_SHIFT 2
#define WSE_TR_DIST_MASK 2047u
#define WSE_TR_T_SHIFT 13
#define WSE_TR_T_MASK ((1u << 19) - 1)
#define WSE_TR_HIST 1024 /* latency histogram: one bucket per cycle, latencies from 1023 in the last */
typedef struct wse_trstats {
    uint64_t flits, packets, sum, min, max;
    uint64_t hist[WSE_TR_HIST];
    uint64_t dn[WSE_TR_DIST_MASK + 1], dsum[WSE_TR_DIST_MASK + 1]; /* packets and latency sum per distance */
    uint64_t dmin1[WSE_TR_DIST_MASK + 1];  /* least latency per distance, plus one (0: none yet) */
} wse_trstats;

/* A tile. After loading, each tile is one piece of memory (wse_load.c: pack_tiles), tiles in id
 * order: this struct, its qmap and routes, its core, its vector threads, its live queues, delay-line
 * entries, queue slots and index arrays. The fields an evaluation reads or writes come first (the
 * first five cache lines, counters included), what only loading, reports or rare events use last. */
typedef struct wse_tile {
    uint32_t id, x, y;
    uint32_t qleft;           /* consumer: wavelets left in its queues after this cycle's pops (phase A) */
    uint8_t nlq, nrq;         /* live queues, of which router inputs */
    uint8_t rr;               /* round robin: the input port to look at first */
    uint8_t lmask;            /* bit l set while line[l] holds a wavelet */
    uint8_t rrc[WSE_NPORTS];  /* round robin: per input port, the colour to look at first */
    uint8_t blk_why;          /* what each skipped cycle counts: 0 nothing, else stall and stall_in, _out,
                               * _mem, _thread for 1 .. 4 */
    uint8_t wup;              /* phase A: input ports 0..3 popped while their producer may wait (wse_pe.c) */
    bool still;               /* phase A: this cycle's evaluation made no progress */
    uint8_t vth;              /* phase A: the one vector thread that moved this cycle, if it alone did and
                               * its operands are all in memory (else WSE_NOQ); asleep: the thread stepped
                               * later */
    uint8_t pstall;           /* router input ports that held wavelets and forwarded none at the last
                               * evaluation: the same in every cycle it sleeps through (a push or a
                               * pop wakes it) */
    uint8_t vx;               /* phase A, with vth: 1 when the instruction issued this cycle was that op's
                               * (the main thread's, which the core waits on), else 0 */
    uint16_t npop;
    uint16_t cctl;            /* control wavelets in its core queues not yet taken: pushed in its phase B
                               * (only its own router feeds them), taken in its phase A */
    uint32_t vk;              /* phase A: elements it moved */
    wse_lq *lq;               /* owned: nlq live queues, router queues first sorted by (colour, port) */
    uint8_t *qmap;            /* owned: 6 * colours entries: (port, colour) -> live queue or WSE_NOQ */
    wse_route *route;         /* owned: colours entries */
    wse_ce *ce;               /* owned, NULL if no code */
    uint8_t *tq;              /* owned by block: 4 * colours entries: (line to neighbour p, colour) -> the
                               * neighbour's live queue, WSE_NOQ if not routed (saves reading its qmap) */
    uint8_t *pops;            /* owned: live queue indices popped this cycle */
    struct wse_tile *nb[4];   /* neighbours N S E W, NULL if none allocated / off mesh */
    uint32_t ppush[6];        /* wavelets pushed into port p's queues: written by p's one producer, phase B */
    uint32_t ppop[6];         /* wavelets popped from port p's queues: consumer, phase B */
    uint32_t pbits[6];        /* producer of port p toggles bit c on each push of colour c (phase B) */
    uint32_t pseen[6];        /* consumer: pbits as last seen; at most one push per port lands between two
                               * evaluations, so pbits ^ pseen names the colour that arrived */
    uint32_t cbits[6];        /* consumer: colours whose queue at port p may hold wavelets */
    wse_line line[WSE_NLINES];
    uint64_t stamp;           /* cycle for which it is on an active list (band owner only) */
    uint64_t sleep_at;        /* cycle of its pending timer, 0 if none (band owner only) */
    uint64_t blk;             /* blocked asleep: the first cycle whose evaluation it skips, 0 if awake (band
                               * owner only; wse_pe.c, commit_tile) */
    uint64_t vfrom;           /* asleep while vector thread vth runs alone: the first cycle it has not
                               * stepped, 0 if none (band owner only) */
    wse_tstats s;
    uint64_t pcolour[WSE_MAX_COLOURS]; /* wavelets forwarded per colour */
    /* cold */
    uint8_t *pidx;            /* owned by block: live queue indices ordered by (port, colour) */
    uint8_t poff[7];          /* pidx[poff[p] .. poff[p + 1]) are port p's queues; port 5 = core inputs */
    bool packed;              /* one piece with its core, queues and routes (pack_tiles): freed as one */
    uint8_t *mem;             /* owned, NULL until first write */
    uint64_t *log;            /* owned by block: WSE_ARRIVAL_LOG cycles per core input queue (lq[nrq ..]) */
    uint64_t *narr;           /* owned by block: data wavelets delivered per core input queue */
    void *block;              /* owned: one allocation for the variable-size arrays */
    size_t block_sz;          /* its bytes */
    uint32_t stampm;          /* colours whose data wavelets to the core carry a traffic stamp (`stamp`) */
    uint64_t st_from, st_to;  /* the window in which they count as accepted */
} wse_tile;

/* A tile asleep until a known cycle (a core in `wait` or starting a task, nothing else to do). */
typedef struct wse_timer {
    uint64_t at;
    uint32_t id;
} wse_timer;

typedef struct wse_list {
    uint32_t *v;
    size_t n, cap;
} wse_list;

/* Cycles ahead that a band's timers are kept on its wheel rather than in its heap. */
#define WSE_WHEEL 64

/* Zones of a band (wse_inline.h: zone()): within a row of another band, within two, the rest. */
enum { WSE_ZE = 0, WSE_ZS = 1, WSE_ZI = 2, WSE_NZ = 3 };

/* A band's summary of a cycle, for the end-of-cycle decision. */
typedef struct wse_sum {
    uint64_t next, wake, ntm, tm_first, progress, nact;
    int64_t nblk;
    int64_t err_tile;
    bool oom, quiet;
} wse_sum;

/* Summaries kept per band: bands may drift apart by a cycle per band between them, so with
 * more than WSE_NSUM - 2 threads bands decide every cycle together (wse_threads.c). 32: up to 30
 * threads meet only where they touch (2.3 KiB of summaries a band). */
#define WSE_NSUM 32

/* The end-of-cycle decision. */
typedef struct wse_decision {
    uint64_t next;        /* the cycle the bands simulate next */
    bool stop, done, oom, jump, deadlock_check;
    int eband;            /* band holding the error of the lowest PE, -1 if none */
} wse_decision;

/* Cache lines written while threads run are kept apart from what other threads read: WSE_PAD bytes
 * between groups (measured: without them, 2 threads on bench_wse_sinks ran 1.4x instead of
 * 1.8x one thread, the lines of the band counters and barrier moving between cores every cycle). */
#define WSE_PAD 128

/* A thread's band of PE ids and its lists. The only tiles another band reads or writes are those
 * within a row of it (zone E), so bands meet only there (wse_threads.c: phases()): a band may be a
 * cycle ahead of its neighbour. What neighbours read of a band's cycle (cross-band wakes, per
 * parity of the cycle count; summaries, in a ring) is kept until they are through it. */
typedef struct wse_band {
    char pad0[WSE_PAD];       /* bands sit side by side in one array, each written by its thread */
    uint32_t id0, id1;        /* PE ids [id0, id1), at least a mesh row's worth */
    uint32_t edge_lo, edge_hi; /* ids below edge_lo or from edge_hi up are within a row of another band */
    uint32_t near_lo, near_hi; /* the same for two rows */
    uint64_t now;             /* the cycle being simulated, the band's own copy (read in every phase) */
    uint32_t par;             /* parity of the cycles simulated since the step began */
    wse_list act[WSE_NZ];     /* active tiles this cycle, per zone (wse_inline.h: zone()) */
    wse_list nxt;             /* tiles active next cycle: survivors and own-band wakes */
    uint64_t *nbm;            /* owned: bit id % 64 of word id / 64 over the whole mesh, the scratch of
                               * the next lists in id order (wse_band.c: merge); all 0 between merges */
    uint32_t *xwake[2]; size_t nxwake[2], cap_xwake[2]; /* tiles of other bands pushed to, per parity */
    /* sleeping tiles: those due in cycles [wh_base, wh_base + WSE_WHEEL) on a wheel of one list per
     * cycle (whm: bit at % WSE_WHEEL set while that list holds any), the later ones in a min-heap
     * by (at, id) (wse_band.c) */
    wse_timer *tm; size_t ntm, cap_tm;
    uint64_t wh_base, whm;
    size_t nwh;               /* timers on the wheel */
    uint32_t *wh[WSE_WHEEL]; size_t whn[WSE_WHEEL], cap_wh[WSE_WHEEL];
    uint64_t progress;        /* events this cycle */
    uint64_t tile_cycles, work; /* summed over the run's cycles: tiles evaluated, events */
    /* host time since the last re-split (for balancing only, never for results): spent in the
     * cycle loop before the current run, the current run's start (or the split), and waiting */
    uint64_t busy_ns, mark_ns, waited_ns;
    double split_sum;         /* rebalance(): the band's work count, then host time per count */
    int64_t nblk;             /* tiles asleep with counters that lag (blocked, or a vector op stepped
                               * later) put to sleep by this band minus those it woke (a re-split moves
                               * sleepers, so only the sum over bands is a count) */
    size_t nact_done;         /* tiles evaluated this cycle */
    bool oom;
    ts_status err_st;         /* first error this cycle (lowest PE id) */
    int64_t err_tile;
    ts_err err;
    wse_sum sum[WSE_NSUM];    /* left after phase B for the decision, by cycle (wse_threads.c) */
    wse_decision last;        /* the band's last decision */
    wse_trstats *tr;          /* owned, NULL until a stamped packet of the measurement window lands */
    char pad1[WSE_PAD];
    /* cycles (since the step began) whose zone E is through phase A, through phase B, and whose
     * summary is written */
    _Atomic uint32_t a_seq, b_seq, s_seq;
    char pad2[WSE_PAD];
} wse_band;

struct ts_model {
    /* read by every thread, written only before or after a run */
    ts_wse_cfg c;
    bool lockstep;
    int nthreads;
    uint32_t w, h, C;
    uint32_t vcs;             /* colours 0 .. vcs - 1 are routed by destination (0: none, colour routing) */
    uint32_t stages;          /* router pipeline cycles (route, VC and switch allocation), in every router */
    uint32_t hop, up;         /* cycles on a link to the next router (hop_latency + stages) and from the
                               * core into its router (ramp + pipeline_latency + stages) */
    uint64_t npes;
    wse_tile **t;             /* owned: npes pointers, NULL for untouched PEs */
    uint32_t *alloc_ids;      /* owned: ids of allocated tiles, ascending */
    size_t nalloc;
    wse_code *codes; size_t ncodes, cap_codes; /* owned */
    void **slabs; size_t nslabs, cap_slabs; /* owned: the packed tiles (wse_load.c: pack_tiles) */
    bool loaded;
    uint64_t offchip;         /* bytes loaded from the host */
    wse_band *band;           /* owned: nthreads */
    uint64_t limit;
    /* per op, resolved once at create (wse_vec.c: ts_wse_op_tables) so that the cycle loop looks
     * nothing up by name or by walking operand lists: operands, register operands, SIMD width */
    uint8_t op_nopnds[WSE_OP_COUNT], op_nregs[WSE_OP_COUNT];
    uint64_t op_simd[WSE_OP_COUNT];
    uint64_t rebalance_at;    /* threads: the cycle at which bands are next re-split by measured work */
    uint64_t *split_w;        /* owned, NULL until the first re-split: each allocated tile's work count then */
    ts_err *run_err;
    /* activity (wse_activity.c): the sampler (borrowed, may be NULL), its window, and each
     * allocated tile's counters at the last window's end (owned); thread 0 only */
    ts_activity *act;
    const ts_region *regions; /* borrowed from the run options: event sums asked for (wse_report.c) */
    size_t nregions;
    uint64_t act_window, *act_prev;
    bool act_nomem, act_stop;
    char pad0[WSE_PAD];
    /* written by thread 0 at the end of each cycle */
    uint64_t now, work;
    uint64_t tile_cycles;     /* tile-cycles evaluated (the active set's size summed over cycles) */
    bool done, stop, deadlock;
    ts_status run_st;
    char pad1[WSE_PAD];
    ts_barrier bar;             /* the threads' barrier (wse_threads.c): spins, yields, sleeps, honours
                                 * abort; the bands' counters are awaited with its budgets */
    char pad2[WSE_PAD];
    _Atomic uint32_t stop_claim; /* set by the first band to decide a stop, which leaves it in final */
    _Atomic uint32_t abort;      /* set when that stop is an error: bands ahead of it stop waiting */
    _Atomic uint32_t gate;       /* a run's threads wait here until all started: 1 go, 2 leave */
    wse_decision final;
    char pad4[WSE_PAD];
};

/* wse_load.c */
/* Free a model and everything it owns; NULL is a no-op. */
void ts_wse_destroy(ts_model *m);
/* Apply, predecode and check program p, build the live queues and the first active set (once). */
ts_status ts_wse_load(ts_model *m, const ts_program *p, ts_err *err);
/* wse_pe.c */
/* Phase A of every tile of list l: its router forwards, its core issues, its vector ops advance. */
void ts_wse_eval_list(ts_model *m, wse_band *b, const wse_list *l);
/* Phase B of every tile of list l: its commit, then whether it stays active, sleeps or goes quiet. */
void ts_wse_commit_list(ts_model *m, wse_band *b, const wse_list *l);
/* Phases A and B of list l (zone I) in one pass (wse_pe.c); the same as A of every tile, then B. */
void ts_wse_eval_commit_list(ts_model *m, wse_band *b, const wse_list *l);
/* Record a simulation error of PE t in cycle `now` in band b, unless one of a lower PE is there. */
void ts_wse_set_err(wse_band *b, wse_tile *t, uint64_t now, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* wse_vec.c */
/* Issue vector op `in` (at pc) onto its thread; false, with the band's error set, if its operands are bad. */
bool ts_wse_vec_issue(ts_model *m, wse_tile *t, wse_band *b, const ts_insn *in, uint32_t pc);
/* Elements [v->i, v->i + k) of vector op v whose operands are all in memory, the ports already
 * counted (the cycle loop's step, wse_inline.h: vec_step, does the ops with a fabric operand). */
void ts_wse_vec_mem_elems(ts_model *m, wse_tile *t, wse_band *b, wse_vop *v, uint32_t k);
/* One element's result of vector op v from its sources' bits (binary32, or binary16 in the low 16 bits). */
uint32_t ts_wse_vec_elem(const wse_vop *v, uint32_t x0, uint32_t x1);
/* Fill the model's per-op tables (op_nopnds, op_nregs, op_simd) from the ISA and the config. */
void ts_wse_op_tables(ts_model *m);
/* Step the vector op of a tile asleep while it runs alone through the cycles before `upto`. */
void ts_wse_vec_catch_up(ts_model *m, wse_tile *t, wse_band *b, uint64_t upto);
/* wse_band.c */
/* Give each thread a band of consecutive PE ids of about equal weight (weight[i] for alloc_ids[i]; NULL: equal). */
void ts_wse_split_bands(ts_model *m, const uint64_t *weight);
/* Put tile id of band b to sleep on the band's timers until cycle `at`. */
void ts_wse_tm_push(wse_band *b, uint64_t at, uint32_t id);
/* Band b's sleepers on timers, and the first cycle one is due (UINT64_MAX if none). */
size_t ts_wse_tm_count(const wse_band *b);
uint64_t ts_wse_tm_first(const wse_band *b);
/* Move band b's timers to out (ts_wse_tm_count(b) entries) and leave it none. */
void ts_wse_tm_take(wse_band *b, wse_timer *out);
/* After the end-of-cycle decision d: band k's next active lists and its next cycle. */
void ts_wse_band_advance(ts_model *m, int k, const wse_decision *d);
/* Lockstep: every allocated tile on its band's active list. */
ts_status ts_wse_lockstep_lists(ts_model *m, ts_err *err);
/* Lockstep: band k's exact quiet test over its own tiles, read when no queue changes. */
bool ts_wse_band_quiet_exact(const ts_model *m, int k);
/* Bring the counters of the sleepers that lag up to cycle `upto`; blocked ones count again from `from`. */
void ts_wse_settle_blocked(ts_model *m, uint64_t upto, uint64_t from);
/* wse_threads.c */
/* Run the cycle loop up to cycle `limit` (or an earlier stop) and say where it stopped. */
ts_status ts_wse_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err);
/* wse_report.c */
ts_status ts_wse_deadlock(ts_model *m, ts_err *err);
void ts_wse_blocked(ts_model *m, ts_buf *out);
ts_status ts_wse_collect(ts_model *m, ts_results *r, ts_err *err);
/* wse_activity.c: declare the mesh (at create); whether a window ends in (was, next]; sample
 * and flush at a window's end (thread 0, every thread at a barrier); the last window */
ts_status ts_wse_act_layout(ts_model *m, ts_err *err);
bool ts_wse_act_due(const ts_model *m, uint64_t was, uint64_t next);
void ts_wse_act_window(ts_model *m, uint64_t was, uint64_t next);
ts_status ts_wse_act_finish(ts_model *m, ts_err *err);
/* wse_cfg.c */
ts_status ts_wse_info(const void *cfg, ts_info *out, ts_err *err);

#endif
