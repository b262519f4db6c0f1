/* arch/tsp/tsp_model.h — the TSP cycle model's private state and the functions its files share
 * (not for other modules; tsp_int.h holds the ISA, config and floorplan they build on).
 *
 * The stream-register file is the interconnect (research §2.3). Logically it is an array
 * [direction][stream][position][superlane] of (value, tag) in which every value moves one
 * position per cycle. Physically nothing moves: a value written at position p in cycle c is kept
 * in ring slot (p - c) mod P (eastward; (p + c) mod P westward) with its birth cycle and
 * position, so at cycle c' it is found at (q - c') mod P for q = p + (c' - c). A slot is live at
 * (q, c') only if its birth says the value is exactly there now, so values that ran off the edge
 * or were overwritten are never seen again, and skipping idle cycles costs nothing.
 *
 * Each cycle is read -> evaluate -> write: (1) pending results due this cycle are committed
 * (stream registers, VXM latches, MXM weights and accumulators, bank writes) and fetched text
 * joins its queue; (2) queues issue; (3) every in-flight instruction processes the superlane it
 * has reached, reading only committed state and scheduling its results for later cycles (every
 * d_func >= 1), then the cycle's abc multiply-adds run (on host threads if asked). So results
 * do not depend on the order in which slices are evaluated, nor on the thread count. Two results
 * committed to one stream register in one cycle are a collision.
 *
 * An instruction issued at cycle t (dispatch) reads its operands in superlane k at
 * t + d_skew + k and its result appears in superlane k at t + d_func + k (research §2.2, §2.4).
 * Instructions whose output needs every superlane's input (MXM abc, SXM shift/permute/rotate)
 * gather all superlanes, then emit superlane k at t + d_func + k (the config check enforces
 * d_func >= d_skew + superlanes for them).
 *
 * The fast mode jumps from one event to the next (an issue, an in-flight step, a pending
 * result, a fetch landing, a barrier release); lockstep visits every cycle, counts live stream
 * registers by scanning the whole file (which must equal the fast mode's count derived from
 * value lifetimes), and checks every register an executor touches against the .def's operand
 * roles. Programs are validated and predecoded once at load (ts_tsp_load).
 *
 * Cost: a cycle costs O(queues + instructions in flight); an abc superlane step costs
 * mxm.dim x lanes multiply-adds of real data, which dominates MXM-bound programs
 * (bench/bench_tsp_mxm).
 *
 * The files: tsp_load.c (create, validate and predecode a program, destroy), tsp_issue.c (the
 * ICU: fetch, issue, barriers, and the cycle loop), tsp_streams.c (operand reads, result
 * scheduling and the commit at the start of each cycle), one file per unit's superlane step
 * (tsp_mem.c, tsp_vxm.c, tsp_mxm.c with the host threads, tsp_sxm.c with C2C), tsp_hazards.c
 * (schedule violations and executor failures), tsp_observe.c (trace and activity sampler),
 * tsp_results.c (statistics, energy events, results) and tsp_family.c (the vtable).
 */
#ifndef TS_ARCH_TSP_MODEL_H
#define TS_ARCH_TSP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/tsp/tsp.h"
#include "arch/tsp/tsp_int.h"
#include "core/sim.h"

/* ---- state ------------------------------------------------------------------------------- */

enum { Q_RUN, Q_PARKED, Q_DONE };
enum { HZ_COLLISION, HZ_NOVALUE, HZ_BANK, HZ_UNDERRUN, HZ_RESOURCE, HZ_COUNT };
enum { PW_SR, PW_LATCH, PW_ACC, PW_BANK, PW_WEIGHTS };
enum { PWW_BUFFER, PWW_ARRAY, PWW_COPY }; /* PW_WEIGHTS modes: lw rows, iw rows, iw from the buffer */
enum { EV_ADD, EV_MUL };
enum { UK_MEM, UK_VXM, UK_MXM, UK_SXM, UK_ICU, UK_STREAMS, UK_C2C, UK_COUNT };

#define NOPROD UINT64_MAX
#define TSP_MAX_FETCHES 4 /* ifetches in flight per queue (assumed: not public) */
#define PROD(q, pc) (((uint64_t)(q) << 32) | (uint32_t)(pc))

/* One predecoded instruction: what the cycle loop needs, looked up once at load (the operands
 * stay in the program's ts_insn, already resolved to register numbers and immediates). */
typedef struct tsp_dec {
    uint8_t unit;        /* tsp_unit */
    uint8_t ev;          /* VXM event class: 0 none, 1 add, 2 mul */
    uint8_t binary;      /* VXM: two sources */
    uint32_t flags;      /* TSP_F_* */
    uint32_t dfunc, skew;
} tsp_dec;

typedef struct tsp_queue {
    const ts_insn *code; /* borrowed from the program */
    tsp_dec *dec;        /* owned, one per instruction */
    uint32_t n, pc, fetched;
    int state;
    uint64_t next;       /* earliest cycle of the next issue */
    uint64_t last_issue;
    uint64_t park;       /* cycle it parked at sync */
    uint32_t park_pc;    /* pc of that sync */
    uint32_t rep_left, rep_d, rep_pc;
    uint32_t last_ifetch; /* pc of its last ifetch + 1, 0 = none */
    uint64_t fetch_free;  /* the queue's fetch port is busy until then (icu.fetch_bytes_per_cycle) */
    uint64_t land[TSP_MAX_FETCHES]; /* fetches in flight: cycle their text is in the queue, oldest first */
    uint64_t land_prod[TSP_MAX_FETCHES];
    uint32_t nland;
    uint32_t slice;
    uint64_t issued, busy, last_busy;
    /* trace slices being merged (m->trace_merge > 1): their span, count, and name while they share one */
    uint64_t tr_start, tr_end;
    uint32_t tr_n;
    const char *tr_name, *tr_cat;
} tsp_queue;

/* A pending result, committed at the start of its cycle. */
typedef struct tsp_pw {
    uint8_t kind, dir, mode, type;
    uint16_t k;
    uint32_t a, b;  /* SR: stream, position; LATCH: alu; ACC: plane; BANK: mem slice, word;
                     * WEIGHTS: plane, first row */
    uint32_t tag;   /* WEIGHTS: number of rows */
    uint64_t prod;
    uint32_t off, len; /* data in the bucket's byte arena */
} tsp_pw;

typedef struct tsp_bucket {
    uint64_t cycle;
    tsp_pw *w;
    size_t n, cap;
    uint8_t *bytes;
    size_t nb, capb;
} tsp_bucket;

/* An instruction sweeping the superlanes. */
typedef struct tsp_fl {
    uint64_t t0;        /* first the fields that the cycle loop scans every cycle */
    uint32_t k, skew, dfunc;
    bool done;          /* past its last superlane: a hole that the next compaction removes */
    uint32_t q, pc;
    uint16_t pos, num;  /* its slice's stream-register position and MEM, plane or SXM number */
    uint32_t row0;      /* MXM row pointer at issue */
    uint8_t *buf;       /* owned scratch (cross-superlane inputs, partial sums) */
    tsp_dec d;          /* copies of the predecoded facts and the instruction, read at every */
    ts_insn in;         /* superlane step: kept here, not in the program's far-apart arrays */
} tsp_fl;

/* A latch: VXM ALU output or MXM accumulators, per superlane, 4 bytes per lane. */
typedef struct tsp_latch {
    uint8_t *data;      /* [superlane][lane][4] */
    uint32_t *tag;
    int64_t *birth;     /* -1: never written */
    uint64_t *prod;
    uint8_t *type;
} tsp_latch;

typedef struct tsp_plane {
    int type;           /* type of the installed weights: TSP_I8 or TSP_F16, -1 none */
    int buf_type;
    int8_t *w8, *b8;    /* array and LW buffer, [row][col] */
    uint64_t *nz8, *bnz8; /* for w8 and b8: bit j of words [k * ceil(D / 64) ..] set when row j
                           * has a weight other than 0 in superlane k's lanes (abc skips the others) */
    float *wf, *bf;
    uint32_t iw_row, lw_row;
    uint64_t busy_until;
    int64_t inst_start; /* first step of the install in progress, -1 none */
    tsp_latch acc;
} tsp_plane;

typedef struct tsp_bank_rec {
    int64_t rd_cycle, wr_cycle;
    uint32_t rd_bank, wr_bank;
    uint64_t rd_prod, wr_prod;
} tsp_bank_rec;

typedef struct tsp_link {
    uint8_t *data;      /* entries of VL bytes */
    uint64_t *ready;
    uint64_t *prod;
    size_t head, n, cap;
} tsp_link;

typedef struct tsp_hz_row {
    double v[9];
} tsp_hz_row;

/* A stream-register slot's bookkeeping; its L value bytes follow it (sr_bytes). 16 bytes, so
 * that with 16 lanes a slot is 32 bytes and never straddles a cache line; the instruction that
 * wrote it, needed only to name it in a hazard, is kept apart (m->sr_prod). */
typedef struct tsp_slot {
    int64_t birth; /* cycle the value was written; -1: never */
    uint32_t tag;
    uint16_t bpos; /* position it was written at */
} tsp_slot;

/* A host transfer of a batch run once per sample: MEM slice, byte address, length; bytes (owned):
 * what the host writes (xin), or the bytes read back after each run, len per run (xout). */
typedef struct tsp_xfer {
    uint32_t slice, sample;
    uint64_t addr;
    uint32_t len;
    uint8_t *bytes;
} tsp_xfer;

struct ts_model {
    ts_tsp_cfg cfg;
    tsp_layout *lay;
    bool lockstep, warn;
    uint32_t S, L, VL, P, NS, D, words;
    uint32_t bank_words;     /* MEM words per bank */
    int bank_shift;          /* log2 of bank_words when a power of two, else -1 (tsp_bank_of) */
    uint64_t now, work;
    uint32_t now_p; /* now % P, kept with now (tsp_set_now) */
    /* stream registers, index ((dir * NS + s) * P + row) * S + k (sr_index): sr_stride bytes each, a
     * tsp_slot then its L bytes (sr_slot, sr_bytes), from a cache-line boundary, so a read touches
     * one cache line (L = 16) or the fewest; sr_prod[i]: the instruction that wrote slot i */
    size_t nslots, sr_stride;
    uint8_t *sr, *sr_mem; /* sr_mem: the allocation, sr aligned within it */
    uint64_t *sr_prod;
    /* pending results */
    tsp_bucket *wheel;
    uint32_t wmask;
    size_t npending;
    /* in flight */
    tsp_fl *fl;         /* in issue order; done ones (nfl_done of them) are removed once they
                         * are half, so a finishing instruction does not move all behind it */
    size_t nfl, capfl, nfl_done;
    size_t *due, capdue; /* indices into fl of the instructions stepping this cycle */
    /* queues, slices, units */
    tsp_queue *q;
    uint32_t nq;
    uint64_t *slice_busy, *slice_last;
    uint8_t **mem;           /* per MEM slice, allocated on first touch */
    tsp_bank_rec *bank;      /* [mem slice][superlane] */
    tsp_latch alu;           /* [alu * S + k] */
    tsp_plane *plane;
    tsp_link *link;
    uint32_t *transposes;    /* in flight per SXM */
    uint64_t *releases;      /* pending barrier releases */
    size_t nrel, caprel;
    /* statistics */
    uint64_t *mem_rd, *mem_wr;
    uint64_t occ, occ_scan, sr_writes, sr_over;
    uint64_t macs8, macs16, mxm_busy, peak_macs, cyc_macs;
    uint64_t peak_bytes, cyc_bytes;
    uint64_t install_max, sweep_max, barriers, last_release, ifetches, configs, offchip;
    /* A batch run once per sample (docs/tsp.md, *A batch run once per sample*): the program runs
     * `runs` times back to back, MEM keeping what it holds; before each run after the first the host
     * writes that sample's inputs and the words the run before overwrote (xin, sample = address /
     * mem.slice_bytes),
     * after each run it reads the outputs back (xout, into their per-run copies), over PCIe. */
    uint32_t runs, run;
    bool outs_saved;          /* the last run's outputs are in their copies */
    struct tsp_xfer *xin, *xout; /* owned */
    size_t nxin, nxout;
    uint64_t host_bytes, host_cycles, first_run; /* between the runs; the first run's cycles */
    uint64_t run_start;       /* the cycle the current run started */
    /* owned, runs > 1 only, per slice and word (tsp_mem_touch): the cycle after its last access (0:
     * none), and the cycles from the run's start to its first access in the run, plus 1 (0: none) */
    uint64_t *mem_last, *mem_first;
    uint64_t reg_reads;      /* bytes read from stream registers and latches */
    uint32_t nlanding;       /* ifetches in flight, all queues */
    uint8_t *scratch;        /* owned: one superlane's weight rows (streams x lanes x 4 B) */
    size_t *jobs;            /* this cycle's abc steps (indices into fl) */
    size_t njobs, capjobs;
    struct tsp_pool *pool;   /* owned, NULL with one host thread */
    struct tsp_worker *workers;
    double ev[UK_COUNT][TSP_NTYPES][2];
    uint64_t hz[HZ_COUNT];
    tsp_hz_row *hzrow;
    size_t nhz, caphz;
    int powered;
    ts_trace *trace;         /* borrowed, may be NULL: one thread per queue with a program */
    uint32_t trace_merge;    /* queue slices per trace slice: 1, more when they would not fit (ts_tsp_trace_plan) */
    /* activity sampler (borrowed, may be NULL): unit slice * S + k is superlane k of a slice;
     * act_upto[u] is the cycle up to which unit u is recorded, act_next the next window end,
     * act_park[slice] the cycle since which a queue of the slice waits at a sync (NOPARK: none) */
    ts_activity *act;
    uint64_t *act_upto, *act_park;
    uint64_t act_next, act_ss_start; /* and the start of the timeline's current step */
    uint64_t act_flow[2];            /* bytes put on eastward / westward streams this cycle */
    bool act_nomem;
};

/* ---- the stream-register ring (hot: inlined into every reader and the commit) ------------ */

/* Copy n bytes of one superlane's lanes: n is L or 4 L, and with the research's 16 lanes a
 * constant size the compiler copies inline instead of calling memcpy (the copies of stream
 * values, latches and MEM words are the simulator's most frequent operation). */
static inline void tsp_lanes_copy(const ts_model *m, void *dst, const void *src, size_t n)
{
    if (m->L == 16 && n == 16)
        memcpy(dst, src, 16);
    else if (m->L == 16 && n == 64)
        memcpy(dst, src, 64);
    else
        memcpy(dst, src, n);
}

/* The bank of MEM word addr: addr / (words / banks), a shift when that is a power of two. */
static inline uint32_t tsp_bank_of(const ts_model *m, uint32_t addr)
{
    return m->bank_shift >= 0 ? addr >> m->bank_shift : addr / m->bank_words;
}

/* Stream-register position of queue q's slice. */
static inline uint32_t q_pos(const ts_model *m, uint32_t q) { return m->lay->pos[m->q[q].slice]; }

/* Index of the slot holding stream s of direction dir at position pos in cycle c, superlane k.
 * The ring slot is (pos - c) mod P eastward, (pos + c) mod P westward; superlane k's slots are
 * stored rotated by k (row = slot + k eastward, slot - k westward), so an instruction sweeping
 * superlanes 0..S-1 in consecutive cycles touches consecutive slots in memory. */
static inline size_t sr_index(const ts_model *m, int dir, uint32_t s, uint32_t pos, uint64_t c, uint32_t k)
{
    uint32_t P = m->P;
    uint32_t cp = c == m->now ? m->now_p : (uint32_t)(c % P); /* now_p: no division per access */
    uint32_t kp = k < P ? k : k % P;
    uint32_t a = dir == 0 ? pos + kp : pos + cp, b = dir == 0 ? cp : kp; /* row = a - b mod P, a < 2P */
    uint32_t row = a >= b ? a - b : a + P - b;
    if (row >= P)
        row -= P;
    return (((size_t)dir * m->NS + s) * P + row) * m->S + k;
}

/* Advance the clock to c. */
static inline void tsp_set_now(ts_model *m, uint64_t c)
{
    m->now_p = c == m->now + 1 ? (m->now_p + 1 == m->P ? 0 : m->now_p + 1) : (uint32_t)(c % m->P);
    m->now = c;
}

/* A batch run once per sample: MEM slice ms's word w is accessed now (the host's transfers wait for
 * its last access in a run and must land before its first in the next: tsp_issue.c). */
static inline void tsp_mem_touch(ts_model *m, uint32_t ms, uint32_t w)
{
    size_t i = (size_t)ms * m->words + w;
    if (m->mem_last[i] <= m->run_start) /* its first access in this run */
        m->mem_first[i] = m->now - m->run_start + 1;
    m->mem_last[i] = m->now + 1;
}

/* Slot i's bookkeeping and its L value bytes. */
static inline tsp_slot *sr_slot(const ts_model *m, size_t i) { return (tsp_slot *)(void *)(m->sr + i * m->sr_stride); }
static inline uint8_t *sr_bytes(const ts_model *m, size_t i) { return m->sr + i * m->sr_stride + sizeof(tsp_slot); }

/* Is the value in slot i live at position pos in cycle c? */
static inline bool sr_live(const ts_model *m, size_t i, int dir, uint32_t pos, uint64_t c)
{
    const tsp_slot *sl = sr_slot(m, i);
    int64_t b = sl->birth;
    if (b < 0 || (uint64_t)b > c)
        return false;
    uint64_t age = c - (uint64_t)b;
    return dir == 0 ? sl->bpos + age == pos : sl->bpos >= age && sl->bpos - age == pos;
}

/* Cycles a value written at pos stays on chip. */
static inline uint64_t sr_life(const ts_model *m, int dir, uint32_t pos) { return dir == 0 ? m->P - pos : pos + 1u; }

/* A floating-point element type. */
static inline bool is_float(int type) { return type == TSP_F16 || type == TSP_F32; }

/* A vector of one superlane (L bytes) was put on a stream flowing east (dir 0) or west: counted
 * for the cycle, reported once at its end (ts_tsp_act_cycle_flows). */
static inline void act_stream(ts_model *m, int dir)
{
    m->act_flow[dir != 0] += m->L;
}

/* ---- shared between the files ------------------------------------------------------------ */

/* tsp_hazards.c */
/* Report a hazard of kind HZ_*: an error naming cycle, superlane, slice, stream and both
 * instructions (pa, pb: PROD or NOPROD), or under --warn a recorded row and TS_OK. */
ts_status ts_tsp_hazard(ts_model *m, ts_err *err, int kind, uint32_t k, uint32_t slice, int reg, uint64_t pa,
                        uint64_t pb, const char *fmt, ...) __attribute__((format(printf, 9, 10)));
/* f reached a unit whose executor has no case for its op: TS_ESIM naming the op, queue, slice
 * and cycle (the loader admits no such program; a .def row without an executor case would). */
ts_status ts_tsp_no_case(ts_model *m, const tsp_fl *f, ts_err *err);

/* tsp_streams.c */
/* Schedule a pending result for the start of `cycle`, with w->len bytes of data. */
ts_status ts_tsp_pw_add(ts_model *m, uint64_t cycle, const tsp_pw *w, const void *data, ts_err *err);
/* Schedule L bytes onto stream register reg at position pos, superlane k, for `cycle`. */
ts_status ts_tsp_sr_schedule(ts_model *m, uint64_t cycle, int reg, uint32_t pos, uint32_t k, uint32_t tag,
                             uint64_t prod, const uint8_t *data, ts_err *err);
/* Commit the pending results due this cycle (the write phase of the previous cycles' steps). */
ts_status ts_tsp_commit(ts_model *m, ts_err *err);
/* Read L bytes of stream register reg at f's slice in superlane k this cycle (tag itag if not 0). */
ts_status ts_tsp_sr_read(ts_model *m, const tsp_fl *f, int reg, uint32_t k, uint32_t itag, uint8_t *out,
                         ts_err *err);
/* Read n stream registers from reg on (one group of rows, n L bytes into out), as n calls of
 * ts_tsp_sr_read in turn. */
ts_status ts_tsp_sr_read_rows(ts_model *m, const tsp_fl *f, int reg, uint32_t n, uint32_t k, uint32_t itag,
                              uint8_t *out, ts_err *err);
/* Read latch entry j (4 L bytes) for f; reg is the latch's register for checks, -1 for none. */
ts_status ts_tsp_latch_read(ts_model *m, const tsp_fl *f, tsp_latch *l, size_t j, int reg, uint32_t k,
                            uint32_t itag, uint8_t *out, ts_err *err);
/* Read a typed vector part (L elements, as 32-bit containers) from a stream group or ALU latch. */
ts_status ts_tsp_read_elems(ts_model *m, const tsp_fl *f, int reg, int type, uint32_t k, uint32_t itag,
                            uint32_t *el, ts_err *err);
/* Schedule a typed vector part onto a stream group at f's result cycle for superlane k. */
ts_status ts_tsp_write_elems(ts_model *m, const tsp_fl *f, int reg, int type, uint32_t k, uint32_t tag,
                             const uint32_t *el, ts_err *err);

/* tsp_mem.c */
/* MEM slice ms's bytes, allocated on first touch; NULL (and err set) when memory runs out. */
uint8_t *ts_tsp_mem_of(ts_model *m, uint32_t ms, ts_err *err);
/* Record a bank access of MEM slice ms in superlane k this cycle; a conflict is a hazard. */
ts_status ts_tsp_bank_access(ts_model *m, uint32_t ms, uint32_t k, uint32_t bank, bool write, uint64_t prod,
                             ts_err *err);
/* One superlane step of a MEM instruction (read, write, gather, scatter). */
ts_status ts_tsp_step_mem(ts_model *m, tsp_fl *f, ts_err *err);

/* tsp_vxm.c */
/* One superlane step of a VXM instruction (the ALU's arithmetic and conversions). */
ts_status ts_tsp_step_vxm(ts_model *m, tsp_fl *f, ts_err *err);

/* tsp_mxm.c */
/* One superlane step of an MXM instruction (lw, iw, abc, acc); abc queues its multiply-adds. */
ts_status ts_tsp_step_mxm(ts_model *m, tsp_fl *f, ts_err *err);
/* Run the cycle's queued abc multiply-adds (m->jobs), on the host threads when there are any. */
void ts_tsp_run_jobs(ts_model *m);
/* After an abc's last superlane: schedule its results into the plane's accumulators. */
ts_status ts_tsp_abc_finalize(ts_model *m, tsp_fl *f, ts_err *err);
/* Start threads - 1 host threads sharing the abc work (m->pool; the caller is the first). */
ts_status ts_tsp_pool_start(ts_model *m, int threads, ts_err *err);
/* Stop and free the host threads; a no-op without a pool. */
void ts_tsp_pool_stop(ts_model *m);

/* tsp_sxm.c */
/* One superlane step of an SXM instruction (shift, rotate, permute, distribute, transpose). */
ts_status ts_tsp_step_sxm(ts_model *m, tsp_fl *f, ts_err *err);
/* One superlane step of a C2C instruction (send, receive), issued from the SXM queues. */
ts_status ts_tsp_step_c2c(ts_model *m, tsp_fl *f, ts_err *err);

/* tsp_observe.c: the trace */
/* Write queue q's merged trace slices. */
void ts_tsp_trace_flush(ts_model *m, uint32_t q);
/* A trace slice on queue q's row (merged m->trace_merge at a time); nothing without a trace. */
void ts_tsp_trace_insn(ts_model *m, uint32_t q, const char *name, const char *cat, uint64_t start,
                       uint64_t dur);
/* Queue slices per trace slice, so that the program's slices fit the trace's limit. */
uint32_t ts_tsp_trace_plan(const ts_model *m);
/* tsp_observe.c: the activity sampler (only called with m->act set) */
/* The in-flight instruction f steps its superlane at cycle m->now. */
void ts_tsp_act_step(ts_model *m, const tsp_fl *f);
/* Queue qi parks at a sync at cycle m->now. */
void ts_tsp_act_on_park(ts_model *m, uint32_t qi);
/* A barrier releases at cycle m->now: slices leave sync, the timeline gets a step. */
void ts_tsp_act_on_release(ts_model *m);
/* Report the cycle's stream flows (act_stream) at its end. */
void ts_tsp_act_cycle_flows(ts_model *m);
/* Every unit is recorded up to `upto`: flush the windows that end by then (all when last). */
ts_status ts_tsp_act_flush(ts_model *m, uint64_t upto, bool last, ts_err *err);
/* Declare the slice-superlane layout to the sampler (at create). */
ts_status ts_tsp_act_layout(ts_model *m, ts_err *err);

/* tsp_load.c; the family's entry points here and below are its vtable (tsp_family.c, core/sim.h) */
/* Names of the units, for messages and trace categories: "icu", "mem", ... */
extern const char *const ts_tsp_unit_names[TSP_U_COUNT];
/* Create a model from the typed config: floorplan, stream registers, slices, host threads. */
ts_status ts_tsp_create(ts_model **out, const ts_config *config, const ts_run_opts *opts, ts_err *err);
/* Validate and predecode a program, place its data segments (TS_EINPUT naming what is wrong). */
ts_status ts_tsp_load(ts_model *m, const ts_program *p, ts_err *err);
/* Free a model; NULL is a no-op. */
void ts_tsp_destroy(ts_model *m);
/* tsp_issue.c */
/* Run until `limit` or the end of the program, jumping between events (every cycle in lockstep). */
ts_status ts_tsp_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err);
/* tsp_results.c */
/* Fill the run's results: cycles, bytes, utilization, energy events and the family statistics. */
ts_status ts_tsp_collect(ts_model *m, ts_results *r, ts_err *err);
/* Describe the queues parked at a sync, for a hang's message. */
void ts_tsp_blocked(ts_model *m, ts_buf *out);
/* Machine facts of a typed config (units, peaks, bandwidths) for `tessera info`. */
ts_status ts_tsp_info(const void *cfgp, ts_info *out, ts_err *err);

#endif
