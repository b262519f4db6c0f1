/* arch/tsp/tsp_sim.c — the TSP cycle model: instruction queues, staggered issue, the
 * stream-register file, MEM/VXM/MXM/SXM slices and the C2C hook.
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
 * roles. Programs are validated and predecoded once at load (tsp_load).
 *
 * Cost: a cycle costs O(queues + instructions in flight); an abc superlane step costs
 * mxm.dim x lanes multiply-adds of real data, which dominates MXM-bound programs
 * (bench/bench_tsp_mxm).
 */
#include "arch/tsp/tsp.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arch/tsp/tsp_int.h"
#include "core/alloc.h"
#include "core/trace.h"
#include "core/activity.h"

/* ---- state ------------------------------------------------------------------------------- */

enum { Q_RUN, Q_PARKED, Q_DONE };
enum { HZ_COLLISION, HZ_NOVALUE, HZ_BANK, HZ_UNDERRUN, HZ_RESOURCE, HZ_COUNT };
static const char *const hz_names[HZ_COUNT] = {"stream_collision", "no_value", "bank_conflict",
                                               "queue_underrun", "resource"};
enum { PW_SR, PW_LATCH, PW_ACC, PW_BANK, PW_WEIGHTS };
enum { PWW_BUFFER, PWW_ARRAY, PWW_COPY }; /* PW_WEIGHTS modes: lw rows, iw rows, iw from the buffer */
enum { EV_ADD, EV_MUL };
enum { UK_MEM, UK_VXM, UK_MXM, UK_SXM, UK_ICU, UK_STREAMS, UK_C2C, UK_COUNT };

#define NOPROD UINT64_MAX
#define TSP_MAX_FETCHES 4 /* ifetches in flight per queue (assumed: not public) */
#define PROD(q, pc) (((uint64_t)(q) << 32) | (uint32_t)(pc))
#define MAX_HZ_ROWS 256 /* violations listed in the report's table under --warn; all are counted */

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
    uint32_t q, pc;
    const ts_insn *in;
    const tsp_dec *d;
    uint64_t t0;
    uint32_t k, skew, dfunc;
    uint32_t row0;      /* MXM row pointer at issue */
    uint8_t *buf;       /* owned scratch (cross-superlane inputs, partial sums) */
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

struct ts_model {
    ts_tsp_cfg cfg;
    tsp_layout *lay;
    bool lockstep, warn;
    uint32_t S, L, VL, P, NS, D, words;
    uint64_t now, work;
    /* stream registers, index ((dir * NS + s) * P + slot) * S + k */
    size_t nslots;
    uint8_t *sr_data;
    uint32_t *sr_tag;
    int64_t *sr_birth;
    uint16_t *sr_bpos;
    uint64_t *sr_prod;
    /* pending results */
    tsp_bucket *wheel;
    uint32_t wmask;
    size_t npending;
    /* in flight */
    tsp_fl *fl;
    size_t nfl, capfl;
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
    uint32_t trace_merge;    /* queue slices per trace slice: 1, more when they would not fit (trace_plan) */
    /* activity sampler (borrowed, may be NULL): unit slice * S + k is superlane k of a slice;
     * act_upto[u] is the cycle up to which unit u is recorded, act_next the next window end,
     * act_park[slice] the cycle since which a queue of the slice waits at a sync (NOPARK: none) */
    ts_activity *act;
    uint64_t *act_upto, *act_park;
    uint64_t act_next, act_ss_start; /* and the start of the timeline's current step */
    uint64_t act_flow[2];            /* bytes put on eastward / westward streams this cycle */
    bool act_nomem;
};

/* ---- small helpers ------------------------------------------------------------------------ */

static void act_stream(ts_model *m, int dir);

static void insn_name(const ts_model *m, uint64_t prod, char *buf, size_t n)
{
    if (prod == NOPROD) {
        snprintf(buf, n, "none");
        return;
    }
    uint32_t q = (uint32_t)(prod >> 32), pc = (uint32_t)prod;
    const ts_insn *in = q < m->nq && pc < m->q[q].n ? &m->q[q].code[pc] : NULL;
    if (!in) {
        snprintf(buf, n, "queue %u pc %u", q, pc);
        return;
    }
    if (in->line)
        snprintf(buf, n, "queue %u pc %u '%s' (line %u)", q, pc, ts_tsp_isa.ops[in->op].mnemonic, in->line);
    else
        snprintf(buf, n, "queue %u pc %u '%s'", q, pc, ts_tsp_isa.ops[in->op].mnemonic);
}

/* Write queue q's merged slices: from the first one's start to the latest end, named by the
 * instruction when they all are one, else "instructions", with their count in args. */
static void trace_flush(ts_model *m, uint32_t q)
{
    tsp_queue *Q = &m->q[q];
    if (!Q->tr_n)
        return;
    char args[40];
    snprintf(args, sizeof args, "{\"count\":%u}", Q->tr_n);
    ts_trace_slice(m->trace, 0, (int)q + 1, Q->tr_name ? Q->tr_name : "instructions", Q->tr_cat, Q->tr_start,
                   Q->tr_end - Q->tr_start, args);
    Q->tr_n = 0;
}

/* A trace slice on queue q's row (thread q + 1; process 0 is the chip); merged trace_merge at a
 * time, in the order they are recorded, on runs too big for the limit. */
static void trace_insn(ts_model *m, uint32_t q, const char *name, const char *cat, uint64_t start, uint64_t dur)
{
    if (!m->trace || !dur)
        return;
    if (m->trace_merge <= 1) {
        ts_trace_slice(m->trace, 0, (int)q + 1, name, cat, start, dur, NULL);
        return;
    }
    tsp_queue *Q = &m->q[q];
    if (!Q->tr_n) {
        Q->tr_start = start;
        Q->tr_end = start + dur;
        Q->tr_name = name;
        Q->tr_cat = cat;
    } else {
        if (start < Q->tr_start)
            Q->tr_start = start;
        if (start + dur > Q->tr_end)
            Q->tr_end = start + dur;
        if (Q->tr_name && strcmp(Q->tr_name, name))
            Q->tr_name = NULL;
        if (Q->tr_cat && strcmp(Q->tr_cat, cat))
            Q->tr_cat = NULL;
    }
    if (++Q->tr_n == m->trace_merge)
        trace_flush(m, q);
}

/* Queue slices per trace slice: 1 while a slice per instruction (repeats counted) fits half the
 * trace's limit (the rest is for the activity tracks and counters), else as many as it takes. A
 * repeat counts as the copies it issues.
 * Sync waits and nops are counted as the instructions they are. */
#define TRACE_SLICE_BYTES 100 /* {"name":"read","cat":"mem","ph":"X","ts":...,"dur":...,"pid":0,"tid":..} and args */
static uint32_t trace_plan(const ts_model *m)
{
    uint64_t n = 0;
    for (uint32_t qi = 0; qi < m->nq; qi++)
        for (uint32_t pc = 0; pc < m->q[qi].n; pc++)
            n += m->q[qi].code[pc].op != TSP_OP_REPEAT ? 1 : m->q[qi].code[pc].a[0] > 0 ? (uint64_t)m->q[qi].code[pc].a[0] : 0;
    uint64_t budget = ts_trace_limit(m->trace) / 2, need = n * TRACE_SLICE_BYTES;
    if (need <= budget)
        return 1;
    uint64_t k = (need + budget - 1) / budget;
    return k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
}

/* Report a hazard: an error naming cycle, superlane, slice, stream and both instructions, or in
 * warn mode a recorded row and TS_OK. `what` is the hazard's own sentence. */
static ts_status hazard(ts_model *m, ts_err *err, int kind, uint32_t k, uint32_t slice, int reg, uint64_t pa,
                        uint64_t pb, const char *fmt, ...) __attribute__((format(printf, 9, 10)));
static ts_status hazard(ts_model *m, ts_err *err, int kind, uint32_t k, uint32_t slice, int reg, uint64_t pa,
                        uint64_t pb, const char *fmt, ...)
{
    m->hz[kind]++;
    if (m->warn) {
        if (m->nhz < MAX_HZ_ROWS && !ts_grow((void **)&m->hzrow, &m->caphz, m->nhz + 1, sizeof *m->hzrow)) {
            tsp_hz_row *r = &m->hzrow[m->nhz++];
            double v[9] = {(double)m->now, kind, k, slice, reg,
                           pa == NOPROD ? -1 : (double)(pa >> 32), pa == NOPROD ? -1 : (double)(uint32_t)pa,
                           pb == NOPROD ? -1 : (double)(pb >> 32), pb == NOPROD ? -1 : (double)(uint32_t)pb};
            memcpy(r->v, v, sizeof v);
        }
        return TS_OK;
    }
    char what[512], a[128], b[128], sl[32], rn[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    insn_name(m, pa, a, sizeof a);
    insn_name(m, pb, b, sizeof b);
    ts_tsp_slice_name(m->lay, slice, sl, sizeof sl);
    if (reg >= 0)
        ts_tsp_reg_name(reg, rn, sizeof rn);
    else
        snprintf(rn, sizeof rn, "-");
    return ts_err_sim(err, slice, (int64_t)m->now, "%s: cycle %" PRIu64 ", superlane %u, %s, stream %s: %s and %s",
                      what, m->now, k, sl, rn, a, b);
}

static uint32_t q_pos(const ts_model *m, uint32_t q) { return m->lay->pos[m->q[q].slice]; }

static size_t sr_index(const ts_model *m, int dir, uint32_t s, uint32_t pos, uint64_t c, uint32_t k)
{
    uint64_t slot = dir == 0 ? (pos + m->P - (c % m->P)) % m->P : (pos + c) % m->P;
    return (((size_t)dir * m->NS + s) * m->P + slot) * m->S + k;
}

/* Is the value in slot i live at position pos in cycle c? */
static bool sr_live(const ts_model *m, size_t i, int dir, uint32_t pos, uint64_t c)
{
    int64_t b = m->sr_birth[i];
    if (b < 0 || (uint64_t)b > c)
        return false;
    uint64_t age = c - (uint64_t)b;
    return dir == 0 ? m->sr_bpos[i] + age == pos : m->sr_bpos[i] >= age && m->sr_bpos[i] - age == pos;
}

/* Cycles a value written at pos stays on chip. */
static uint64_t sr_life(const ts_model *m, int dir, uint32_t pos) { return dir == 0 ? m->P - pos : pos + 1u; }

/* Lockstep only (house style: invariants checked every cycle in the reference mode): a register
 * the executor reads or writes for queue q's instruction pc must lie in the stream group of an
 * operand the .def gives that role. */
static ts_status role_check(const ts_model *m, uint64_t prod, int reg, int role, ts_err *err)
{
    uint32_t q = (uint32_t)(prod >> 32), pc = (uint32_t)prod;
    const ts_insn *in = &m->q[q].code[pc];
    const ts_opinfo *oi = &ts_tsp_isa.ops[in->op];
    int32_t span = in->op == TSP_OP_LW || in->op == TSP_OP_IW ? in->a[2] : in->op == TSP_OP_TRANSPOSE ? 16 : 4;
    for (int j = 0; j < TS_MAX_OPNDS && oi->opnd[j]; j++) {
        int32_t a = in->a[j];
        if (!(oi->opnd[j] & role) || (oi->opnd[j] & TS_OK_KIND_MASK) != TS_OK_REG)
            continue;
        if (reg == a || (a < TSP_REG_ALU && reg >= a && reg < a + span && reg / TSP_MAX_STREAMS == a / TSP_MAX_STREAMS))
            return TS_OK;
    }
    char rn[16];
    ts_tsp_reg_name(reg, rn, sizeof rn);
    return ts_err_set(err, TS_EINTERNAL, "lockstep check: queue %u pc %u '%s' %s %s, which no operand of its .def row "
                      "marks so", q, pc, oi->mnemonic, role == TS_OR_READ ? "reads" : "writes", rn);
}

/* ---- pending results ---------------------------------------------------------------------- */

static ts_status pw_add(ts_model *m, uint64_t cycle, const tsp_pw *w, const void *data, ts_err *err)
{
    tsp_bucket *b = &m->wheel[cycle & m->wmask];
    if (b->n && b->cycle != cycle)
        return ts_err_set(err, TS_EINTERNAL, "tsp: result wheel too small for cycle %" PRIu64, cycle);
    b->cycle = cycle;
    if (ts_grow((void **)&b->w, &b->cap, b->n + 1, sizeof *b->w) ||
        ts_grow((void **)&b->bytes, &b->capb, b->nb + w->len, 1))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    tsp_pw *p = &b->w[b->n++];
    *p = *w;
    p->off = (uint32_t)b->nb;
    if (w->len)
        memcpy(b->bytes + b->nb, data, w->len);
    b->nb += w->len;
    m->npending++;
    return TS_OK;
}

static ts_status sr_schedule(ts_model *m, uint64_t cycle, int reg, uint32_t pos, uint32_t k, uint32_t tag,
                             uint64_t prod, const uint8_t *data, ts_err *err)
{
    if (m->lockstep && role_check(m, prod, reg, TS_OR_WRITE, err) != TS_OK)
        return TS_EINTERNAL;
    tsp_pw w = {.kind = PW_SR, .dir = (uint8_t)(reg >= TSP_REG_WEST), .k = (uint16_t)k,
                .a = (uint32_t)reg % TSP_MAX_STREAMS, .b = pos, .tag = tag, .prod = prod, .len = m->L};
    return pw_add(m, cycle, &w, data, err);
}

static uint8_t *mem_of(ts_model *m, uint32_t ms, ts_err *err)
{
    if (!m->mem[ms] && !(m->mem[ms] = ts_calloc(1, m->cfg.mem_slice_bytes)))
        ts_err_set(err, TS_ENOMEM, "out of memory allocating MEM slice %u", ms);
    return m->mem[ms];
}

/* Record a bank access of MEM slice ms in superlane k this cycle; a second read or write, or a
 * read and a write on one bank, is a conflict (ISCA20 §III-B; research §1.4, §2.5). */
static ts_status bank_access(ts_model *m, uint32_t ms, uint32_t k, uint32_t bank, bool write, uint64_t prod,
                             ts_err *err)
{
    tsp_bank_rec *r = &m->bank[(size_t)ms * m->S + k];
    int64_t now = (int64_t)m->now;
    uint32_t slice = m->lay->mem_slice[ms];
    if (write) {
        if (r->wr_cycle == now)
            return hazard(m, err, HZ_BANK, k, slice, -1, r->wr_prod, prod, "bank conflict: two writes to one slice");
        if (r->rd_cycle == now && r->rd_bank == bank)
            return hazard(m, err, HZ_BANK, k, slice, -1, r->rd_prod, prod,
                          "bank conflict: a read and a write on bank %u", bank);
        r->wr_cycle = now;
        r->wr_bank = bank;
        r->wr_prod = prod;
    } else {
        if (r->rd_cycle == now)
            return hazard(m, err, HZ_BANK, k, slice, -1, r->rd_prod, prod, "bank conflict: two reads from one slice");
        if (r->wr_cycle == now && r->wr_bank == bank)
            return hazard(m, err, HZ_BANK, k, slice, -1, r->wr_prod, prod,
                          "bank conflict: a read and a write on bank %u", bank);
        r->rd_cycle = now;
        r->rd_bank = bank;
        r->rd_prod = prod;
    }
    return TS_OK;
}

static ts_status commit(ts_model *m, ts_err *err)
{
    tsp_bucket *b = &m->wheel[m->now & m->wmask];
    if (!b->n || b->cycle != m->now)
        return TS_OK;
    ts_status rc = TS_OK;
    for (size_t i = 0; i < b->n && rc == TS_OK; i++) {
        const tsp_pw *w = &b->w[i];
        const uint8_t *d = b->bytes + w->off;
        switch (w->kind) {
        case PW_SR: {
            size_t j = sr_index(m, w->dir, w->a, w->b, m->now, w->k);
            if (m->sr_birth[j] == (int64_t)m->now && m->sr_bpos[j] == w->b) {
                uint32_t at = 0;
                while (at + 1 < m->lay->nslices && m->lay->pos[at] < w->b)
                    at++;
                rc = hazard(m, err, HZ_COLLISION, w->k, at, (int)(w->dir * TSP_MAX_STREAMS + w->a), m->sr_prod[j],
                            w->prod, "stream collision: two results reach one stream register in one cycle");
                if (rc != TS_OK)
                    break;
            }
            if (sr_live(m, j, w->dir, w->b, m->now)) {
                uint64_t exit = (uint64_t)m->sr_birth[j] + sr_life(m, w->dir, m->sr_bpos[j]);
                m->occ -= exit - m->now;
                m->sr_over++;
            }
            memcpy(m->sr_data + j * m->L, d, m->L);
            m->sr_birth[j] = (int64_t)m->now;
            m->sr_bpos[j] = (uint16_t)w->b;
            m->sr_tag[j] = w->tag;
            m->sr_prod[j] = w->prod;
            m->occ += sr_life(m, w->dir, w->b);
            m->sr_writes++;
            if (m->act)
                act_stream(m, w->dir);
            break;
        }
        case PW_LATCH:
        case PW_ACC: {
            tsp_latch *l = w->kind == PW_LATCH ? &m->alu : &m->plane[w->a].acc;
            size_t j = w->kind == PW_LATCH ? (size_t)w->a * m->S + w->k : w->k;
            uint8_t *dst = l->data + j * 4 * m->L;
            if (w->kind == PW_ACC && w->mode == 1 && l->birth[j] >= 0) {
                for (uint32_t x = 0; x < m->L; x++) {
                    if (w->type == TSP_F32) {
                        float a, c;
                        memcpy(&a, dst + 4 * x, 4);
                        memcpy(&c, d + 4 * x, 4);
                        a += c;
                        memcpy(dst + 4 * x, &a, 4);
                    } else {
                        uint32_t a, c;
                        memcpy(&a, dst + 4 * x, 4);
                        memcpy(&c, d + 4 * x, 4);
                        a += c;
                        memcpy(dst + 4 * x, &a, 4);
                    }
                }
                m->ev[UK_MXM][w->type][EV_ADD] += m->L;
            } else {
                memcpy(dst, d, 4 * m->L);
            }
            l->birth[j] = (int64_t)m->now;
            l->tag[j] = w->tag;
            l->prod[j] = w->prod;
            l->type[j] = w->type;
            break;
        }
        case PW_BANK: {
            uint32_t bank = (uint32_t)(w->b / (m->words / m->cfg.mem_banks));
            rc = bank_access(m, w->a, w->k, bank, true, w->prod, err);
            uint8_t *mem = rc == TS_OK ? mem_of(m, w->a, err) : NULL;
            if (!mem) {
                if (rc == TS_OK)
                    rc = TS_ENOMEM;
                break;
            }
            memcpy(mem + (size_t)w->b * m->VL + (size_t)w->k * m->L, d, m->L);
            m->mem_wr[w->a] += m->L;
            m->cyc_bytes += m->L;
            break;
        }
        case PW_WEIGHTS: {
            tsp_plane *p = &m->plane[w->a];
            uint32_t D = m->D, L = m->L, k = w->k;
            if (w->mode == PWW_COPY) {
                for (uint32_t j = 0; j < D; j++) {
                    if (w->type == TSP_I8)
                        memcpy(p->w8 + (size_t)j * D + k * L, p->b8 + (size_t)j * D + k * L, L);
                    else
                        memcpy(p->wf + (size_t)j * D + k * L, p->bf + (size_t)j * D + k * L, L * sizeof(float));
                }
                p->type = w->type;
                break;
            }
            bool buf = w->mode == PWW_BUFFER;
            for (uint32_t r = 0; r < w->tag; r++) {
                size_t at = (size_t)((w->b + r) % D) * D + k * L;
                if (w->type == TSP_I8)
                    memcpy((buf ? p->b8 : p->w8) + at, d + (size_t)r * L, L);
                else
                    memcpy((buf ? p->bf : p->wf) + at, d + (size_t)r * L * 4, L * sizeof(float));
            }
            if (buf)
                p->buf_type = w->type;
            else
                p->type = w->type;
            break;
        }
        default: break;
        }
    }
    m->npending -= b->n;
    b->n = 0;
    b->nb = 0;
    return rc;
}

/* ---- reading operands --------------------------------------------------------------------- */

/* Read L bytes of stream register `reg` at the slice of queue q in superlane k this cycle,
 * checking that a value is there and, when itag != 0, that it carries tag itag. */
static ts_status sr_read(ts_model *m, const tsp_fl *f, int reg, uint32_t k, uint32_t itag, uint8_t *out, ts_err *err)
{
    if (m->lockstep && role_check(m, PROD(f->q, f->pc), reg, TS_OR_READ, err) != TS_OK)
        return TS_EINTERNAL;
    int dir = reg >= TSP_REG_WEST;
    uint32_t s = (uint32_t)reg % TSP_MAX_STREAMS, pos = q_pos(m, f->q);
    size_t j = sr_index(m, dir, s, pos, m->now, k);
    m->reg_reads += m->L;
    if (!sr_live(m, j, dir, pos, m->now)) {
        memset(out, 0, m->L);
        int64_t b = m->sr_birth[j];
        return hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, b >= 0 ? m->sr_prod[j] : NOPROD, PROD(f->q, f->pc),
                      "no value: the reader finds no live value in the stream register (%s)",
                      b >= 0 ? "the first instruction named wrote the last one there" : "nothing was ever written there");
    }
    if (itag && m->sr_tag[j] != itag) {
        memcpy(out, m->sr_data + j * m->L, m->L);
        return hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, m->sr_prod[j], PROD(f->q, f->pc),
                      "no value: the stream register holds a value tagged %u, the reader expects tag %u",
                      m->sr_tag[j], itag);
    }
    memcpy(out, m->sr_data + j * m->L, m->L);
    return TS_OK;
}

static ts_status latch_read(ts_model *m, const tsp_fl *f, tsp_latch *l, size_t j, int reg, uint32_t k,
                            uint32_t itag, uint8_t *out, ts_err *err)
{
    if (m->lockstep && reg >= 0 && role_check(m, PROD(f->q, f->pc), reg, TS_OR_READ, err) != TS_OK)
        return TS_EINTERNAL;
    m->reg_reads += 4 * m->L;
    if (l->birth[j] < 0 || (itag && l->tag[j] != itag)) {
        memset(out, 0, 4 * m->L);
        if (l->birth[j] < 0)
            return hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, NOPROD, PROD(f->q, f->pc),
                          "no value: the latch holds no value yet");
        return hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, reg, l->prod[j], PROD(f->q, f->pc),
                      "no value: the latch holds a value tagged %u, the reader expects tag %u", l->tag[j], itag);
    }
    memcpy(out, l->data + j * 4 * m->L, 4 * m->L);
    return TS_OK;
}

/* Read a typed vector part (L elements, as 32-bit containers) from a stream group or latch. */
static ts_status read_elems(ts_model *m, const tsp_fl *f, int reg, int type, uint32_t k, uint32_t itag,
                            uint32_t *el, ts_err *err)
{
    uint32_t w = tsp_type_width(type);
    uint8_t tmp[4 * 64];
    ts_status rc;
    if (reg >= TSP_REG_ALU && reg < TSP_REG_NUL) {
        rc = latch_read(m, f, &m->alu, (size_t)(reg - TSP_REG_ALU) * m->S + k, reg, k, itag, tmp, err);
        for (uint32_t x = 0; x < m->L; x++)
            memcpy(&el[x], tmp + 4 * x, 4);
        return rc;
    }
    memset(el, 0, m->L * sizeof *el);
    for (uint32_t b = 0; b < w; b++) {
        rc = sr_read(m, f, reg + (int)b, k, itag, tmp, err);
        if (rc != TS_OK)
            return rc;
        for (uint32_t x = 0; x < m->L; x++)
            el[x] |= (uint32_t)tmp[x] << (8 * b);
    }
    return TS_OK;
}

/* Schedule a typed vector part onto a stream group. */
static ts_status write_elems(ts_model *m, const tsp_fl *f, int reg, int type, uint32_t k, uint32_t tag,
                             const uint32_t *el, ts_err *err)
{
    uint32_t w = tsp_type_width(type);
    uint8_t tmp[64];
    for (uint32_t b = 0; b < w; b++) {
        for (uint32_t x = 0; x < m->L; x++)
            tmp[x] = (uint8_t)(el[x] >> (8 * b));
        ts_status rc = sr_schedule(m, f->t0 + f->dfunc + k, reg + (int)b, q_pos(m, f->q), k, tag, PROD(f->q, f->pc),
                                   tmp, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* ---- VXM arithmetic ----------------------------------------------------------------------- */

static int64_t sext(uint32_t v, int type)
{
    switch (type) {
    case TSP_I8: return (int8_t)(uint8_t)v;
    case TSP_I16: return (int16_t)(uint16_t)v;
    default: return (int32_t)v;
    }
}

static uint32_t int_out(int64_t v, int type, bool sat)
{
    int64_t lo = type == TSP_I8 ? INT8_MIN : type == TSP_I16 ? INT16_MIN : INT32_MIN;
    int64_t hi = type == TSP_I8 ? INT8_MAX : type == TSP_I16 ? INT16_MAX : INT32_MAX;
    if (sat)
        v = v < lo ? lo : v > hi ? hi : v;
    uint32_t mask = type == TSP_I8 ? 0xffu : type == TSP_I16 ? 0xffffu : 0xffffffffu;
    return (uint32_t)v & mask;
}

static float fl_in(uint32_t v, int type)
{
    if (type == TSP_F16)
        return ts_f16_to_f32((uint16_t)v);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static uint32_t fl_out(float f, int type)
{
    if (type == TSP_F16)
        return ts_f32_to_f16(f);
    uint32_t v;
    memcpy(&v, &f, 4);
    return v;
}

static bool is_float(int type) { return type == TSP_F16 || type == TSP_F32; }

/* Convert one element between types: floats round to nearest even; integers saturate; a NaN
 * becomes 0. */
static uint32_t convert(uint32_t v, int to, int from)
{
    if (is_float(from)) {
        float f = fl_in(v, from);
        if (is_float(to))
            return fl_out(f, to);
        if (isnan(f))
            return 0;
        double r = nearbyint((double)f);
        r = r < -2147483648.0 ? -2147483648.0 : r > 2147483647.0 ? 2147483647.0 : r;
        return int_out((int64_t)r, to, true);
    }
    int64_t x = sext(v, from);
    if (is_float(to))
        return fl_out((float)x, to);
    return int_out(x, to, true);
}

static uint32_t vxm_elem(int op, int type, uint32_t a, uint32_t b, int32_t imm)
{
    if (is_float(type)) {
        float x = fl_in(a, type), y = fl_in(b, type), r;
        switch (op) {
        case TSP_OP_ADD: r = x + y; break;
        case TSP_OP_SUB: r = x - y; break;
        case TSP_OP_MUL: r = x * y; break;
        case TSP_OP_NEG: r = -x; break;
        case TSP_OP_RELU: r = x > 0 ? x : 0.0f; break;
        case TSP_OP_TANH: r = tanhf(x); break;
        case TSP_OP_EXP: r = expf(x); break;
        case TSP_OP_RSQRT: r = 1.0f / sqrtf(x); break;
        case TSP_OP_MASK: return a & (uint32_t)imm & (type == TSP_F16 ? 0xffffu : 0xffffffffu);
        default: r = 0; break;
        }
        return fl_out(r, type);
    }
    int64_t x = sext(a, type), y = sext(b, type);
    switch (op) {
    case TSP_OP_ADD: return int_out(x + y, type, false);
    case TSP_OP_ADDS: return int_out(x + y, type, true);
    case TSP_OP_SUB: return int_out(x - y, type, false);
    case TSP_OP_SUBS: return int_out(x - y, type, true);
    case TSP_OP_MUL: return int_out((int64_t)((uint64_t)x * (uint64_t)y), type, false);
    case TSP_OP_MULS: return int_out(x * y, type, true);
    case TSP_OP_NEG: return int_out(-x, type, false);
    case TSP_OP_MASK: return int_out(x, type, false) & (uint32_t)imm;
    case TSP_OP_RELU: return int_out(x > 0 ? x : 0, type, false);
    default: return 0;
    }
}

static void count_ev(ts_model *m, int unit, int type, int cls, double n) { m->ev[unit][type][cls] += n; }

/* ---- the slices: one superlane step of an in-flight instruction --------------------------- */

static ts_status step_vxm(ts_model *m, tsp_fl *f, ts_err *err)
{
    const ts_insn *in = f->in;
    int op = in->op, k = (int)f->k;
    uint32_t a[64], b[64], r[64];
    const int32_t *o = in->a;
    int type, dst, src_t;
    uint32_t itag, otag;
    ts_status rc;
    if (op == TSP_OP_CVT) {
        type = o[0] - TSP_REG_TYPE;
        src_t = o[1] - TSP_REG_TYPE;
        dst = o[2];
        itag = (uint32_t)o[4];
        otag = (uint32_t)o[5];
        if ((rc = read_elems(m, f, o[3], src_t, (uint32_t)k, itag, a, err)) != TS_OK)
            return rc;
        for (uint32_t x = 0; x < m->L; x++)
            r[x] = convert(a[x], type, src_t);
    } else {
        type = o[0] - TSP_REG_TYPE;
        dst = o[1];
        bool binary = f->d->binary;
        int32_t imm = op == TSP_OP_MASK ? o[3] : 0;
        itag = (uint32_t)(binary || op == TSP_OP_MASK ? o[4] : o[3]);
        otag = (uint32_t)(binary || op == TSP_OP_MASK ? o[5] : o[4]);
        if ((rc = read_elems(m, f, o[2], type, (uint32_t)k, itag, a, err)) != TS_OK)
            return rc;
        if (binary && (rc = read_elems(m, f, o[3], type, (uint32_t)k, itag, b, err)) != TS_OK)
            return rc;
        for (uint32_t x = 0; x < m->L; x++)
            r[x] = vxm_elem(op, type, a[x], binary ? b[x] : 0, imm);
    }
    if (f->d->ev)
        count_ev(m, UK_VXM, type, f->d->ev == 2 ? EV_MUL : EV_ADD, m->L);
    /* the ALU latch (chaining within a lane, research §1.6) */
    uint8_t lb[4 * 64];
    for (uint32_t x = 0; x < m->L; x++)
        memcpy(lb + 4 * x, &r[x], 4);
    tsp_pw w = {.kind = PW_LATCH, .k = (uint16_t)k, .a = m->lay->qsub[f->q], .tag = otag,
                .prod = PROD(f->q, f->pc), .len = 4 * m->L, .type = (uint8_t)type};
    if ((rc = pw_add(m, f->t0 + f->dfunc + (uint64_t)k, &w, lb, err)) != TS_OK)
        return rc;
    if (dst != TSP_REG_NUL)
        return write_elems(m, f, dst, type, (uint32_t)k, otag, r, err);
    return TS_OK;
}

static ts_status step_mem(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in->a;
    uint32_t ms = m->lay->num[m->q[f->q].slice], k = f->k;
    uint64_t prod = PROD(f->q, f->pc);
    uint8_t buf[64], map[64];
    ts_status rc;
    uint32_t addr;
    switch (f->in->op) {
    case TSP_OP_READ:
    case TSP_OP_GATHER: {
        if (f->in->op == TSP_OP_READ) {
            addr = (uint32_t)o[0];
        } else {
            if ((rc = sr_read(m, f, o[0], k, (uint32_t)o[2], map, err)) != TS_OK)
                return rc;
            addr = (uint32_t)map[0] | (uint32_t)map[1] << 8;
            if (addr >= m->words)
                return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                  "gather address %u in superlane %u is past the slice's %u words", addr, k, m->words);
        }
        uint32_t bank = addr / (m->words / (uint32_t)m->cfg.mem_banks);
        if ((rc = bank_access(m, ms, k, bank, false, prod, err)) != TS_OK)
            return rc;
        const uint8_t *mem = mem_of(m, ms, err);
        if (!mem)
            return TS_ENOMEM;
        memcpy(buf, mem + (size_t)addr * m->VL + (size_t)k * m->L, m->L);
        m->mem_rd[ms] += m->L;
        m->cyc_bytes += m->L;
        uint32_t tag = (uint32_t)(f->in->op == TSP_OP_READ ? o[2] : o[3]);
        return sr_schedule(m, f->t0 + f->dfunc + k, o[1], q_pos(m, f->q), k, tag, prod, buf, err);
    }
    case TSP_OP_WRITE:
    case TSP_OP_SCATTER: {
        if (f->in->op == TSP_OP_WRITE) {
            addr = (uint32_t)o[0];
            if ((rc = sr_read(m, f, o[1], k, (uint32_t)o[2], buf, err)) != TS_OK)
                return rc;
        } else {
            if ((rc = sr_read(m, f, o[0], k, (uint32_t)o[2], map, err)) != TS_OK ||
                (rc = sr_read(m, f, o[1], k, (uint32_t)o[2], buf, err)) != TS_OK)
                return rc;
            addr = (uint32_t)map[0] | (uint32_t)map[1] << 8;
            if (addr >= m->words)
                return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                  "scatter address %u in superlane %u is past the slice's %u words", addr, k, m->words);
        }
        tsp_pw w = {.kind = PW_BANK, .k = (uint16_t)k, .a = ms, .b = addr, .prod = prod, .len = m->L};
        return pw_add(m, f->t0 + f->dfunc + k, &w, buf, err);
    }
    default: return TS_OK;
    }
}

/* The MXM plane of an in-flight instruction (research §1.5). Weights are W[row][col]: row j is
 * the j-th weight vector streamed in, col the lane; abc computes y[j] = sum_l W[j][l] x[l],
 * adding superlane k's 16 lanes in the cycle the activation reaches superlane k (partial sums
 * pass from tile to tile, ISCA20 Fig. 7), so y is complete after the last superlane. */
static ts_status ensure_plane(ts_model *m, tsp_plane *p, int type, ts_err *err)
{
    size_t n = (size_t)m->D * m->D;
    if (type == TSP_I8 && !p->w8) {
        p->w8 = ts_calloc(n, 1);
        p->b8 = ts_calloc(n, 1);
    }
    if (type == TSP_F16 && !p->wf) {
        p->wf = ts_calloc(n, sizeof(float));
        p->bf = ts_calloc(n, sizeof(float));
    }
    if ((type == TSP_I8 && (!p->w8 || !p->b8)) || (type == TSP_F16 && (!p->wf || !p->bf)))
        return ts_err_set(err, TS_ENOMEM, "out of memory allocating MXM weights");
    return TS_OK;
}

static inline int32_t dot16(const int8_t *w, const int16_t *x)
{
    int32_t s = 0;
    for (int l = 0; l < 16; l++)
        s += (int16_t)w[l] * x[l];
    return s;
}

static ts_status step_mxm(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in->a;
    uint32_t pl = m->lay->num[m->q[f->q].slice], k = f->k, L = m->L, D = m->D;
    tsp_plane *p = &m->plane[pl];
    ts_status rc;
    uint32_t el[64];
    switch (f->in->op) {
    case TSP_OP_LW:
    case TSP_OP_IW: {
        int type = o[0] - TSP_REG_TYPE;
        bool lw = f->in->op == TSP_OP_LW;
        if ((rc = ensure_plane(m, p, type, err)) != TS_OK)
            return rc;
        /* the weights latch d_func after the stream is read, like any result (a pending write) */
        tsp_pw w = {.kind = PW_WEIGHTS, .k = (uint16_t)k, .a = pl, .b = f->row0, .type = (uint8_t)type,
                    .prod = PROD(f->q, f->pc)};
        if (!lw && o[1] == TSP_REG_NUL) { /* install the LW buffer */
            if (p->buf_type != type)
                return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                  "iw from the LW buffer as %s, but the buffer holds %s weights",
                                  type == TSP_I8 ? "i8" : "f16", p->buf_type == TSP_F16 ? "f16" : "i8 or nothing");
            w.mode = PWW_COPY;
            if ((rc = pw_add(m, f->t0 + f->dfunc + k, &w, NULL, err)) != TS_OK)
                return rc;
        } else {
            uint32_t wd = tsp_type_width(type), rows = (uint32_t)o[2] / wd, esz = type == TSP_I8 ? 1 : 4;
            uint8_t *buf = m->scratch;
            for (uint32_t r = 0; r < rows; r++) {
                if ((rc = read_elems(m, f, o[1] + (int)(r * wd), type, k, (uint32_t)o[3], el, err)) != TS_OK)
                    return rc;
                for (uint32_t x = 0; x < L; x++) {
                    uint8_t *at = buf + ((size_t)r * L + x) * esz;
                    if (type == TSP_I8) {
                        *at = (uint8_t)el[x];
                    } else {
                        float v = ts_f16_to_f32((uint16_t)el[x]);
                        memcpy(at, &v, 4);
                    }
                }
            }
            w.mode = lw ? PWW_BUFFER : PWW_ARRAY;
            w.tag = rows;
            w.len = rows * L * esz;
            if ((rc = pw_add(m, f->t0 + f->dfunc + k, &w, buf, err)) != TS_OK)
                return rc;
        }
        /* the length of a full install (research §1.5: < 40 cycles) */
        if (!lw) {
            if (k == 0 && (f->row0 == 0 || o[1] == TSP_REG_NUL))
                p->inst_start = (int64_t)m->now;
            uint32_t nrows = o[1] == TSP_REG_NUL ? D : (uint32_t)o[2] / tsp_type_width(type);
            if (k == m->S - 1 && p->inst_start >= 0 && f->row0 + nrows >= D) {
                uint64_t len = m->now - (uint64_t)p->inst_start + 1;
                if (len > m->install_max)
                    m->install_max = len;
                p->inst_start = -1;
            }
        }
        return TS_OK;
    }
    case TSP_OP_ABC: {
        int type = o[0] - TSP_REG_TYPE;
        if (p->type != type)
            return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now, "abc %s on a plane holding %s weights",
                              type == TSP_I8 ? "i8" : "f16", p->type < 0 ? "no" : p->type == TSP_I8 ? "i8" : "f16");
        if ((rc = read_elems(m, f, o[1], type, k, (uint32_t)o[3], el, err)) != TS_OK)
            return rc;
        /* the activations, for the multiply-adds that run after every slice has stepped (they
         * touch only this instruction's partial sums, so host threads may share them out) */
        uint8_t *xs = f->buf + (size_t)D * sizeof(double);
        for (uint32_t l = 0; l < L; l++) {
            if (type == TSP_I8) {
                int16_t v = (int8_t)(uint8_t)el[l];
                memcpy(xs + 2 * l, &v, 2);
            } else {
                float v = ts_f16_to_f32((uint16_t)el[l]);
                memcpy(xs + 4 * l, &v, 4);
            }
        }
        if (type == TSP_I8)
            m->macs8 += (uint64_t)D * L;
        else
            m->macs16 += (uint64_t)D * L;
        m->cyc_macs += (uint64_t)D * L;
        if (ts_grow((void **)&m->jobs, &m->capjobs, m->njobs + 1, sizeof *m->jobs))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        m->jobs[m->njobs++] = (size_t)(f - m->fl);
        return TS_OK;
    }
    case TSP_OP_ACC: {
        uint8_t lb[4 * 64];
        if ((rc = latch_read(m, f, &p->acc, k, -1, k, (uint32_t)o[1], lb, err)) != TS_OK)
            return rc;
        for (uint32_t x = 0; x < L; x++)
            memcpy(&el[x], lb + 4 * x, 4);
        return write_elems(m, f, o[0], TSP_I32, k, (uint32_t)o[2], el, err);
    }
    default: return TS_OK;
    }
}

/* The multiply-adds of one abc superlane step: y[j] += sum over the superlane's lanes of
 * W[j][l] x[l], into the instruction's own partial sums. Reads only committed weights. */
static void abc_compute(const ts_model *m, tsp_fl *f)
{
    const tsp_plane *p = &m->plane[m->lay->num[m->q[f->q].slice]];
    uint32_t k = f->k, L = m->L, D = m->D;
    const uint8_t *xs = f->buf + (size_t)D * sizeof(double);
    if (f->in->a[0] - TSP_REG_TYPE == TSP_I8) {
        int32_t *ps = (int32_t *)(void *)f->buf;
        int16_t x[64];
        memcpy(x, xs, 2 * (size_t)L);
        if (L == 16) { /* the research's 16 lanes: a fixed-length loop the compiler vectorises
                        * (this loop is over 80% of bench_tsp_mxm's time) */
            for (uint32_t j = 0; j < D; j++)
                ps[j] = (int32_t)((uint32_t)ps[j] + (uint32_t)dot16(p->w8 + (size_t)j * D + k * 16, x));
        } else {
            for (uint32_t j = 0; j < D; j++) {
                const int8_t *wr = p->w8 + (size_t)j * D + k * L;
                int32_t s = 0;
                for (uint32_t l = 0; l < L; l++)
                    s += wr[l] * x[l];
                ps[j] = (int32_t)((uint32_t)ps[j] + (uint32_t)s);
            }
        }
    } else {
        double *ps = (double *)(void *)f->buf;
        float x[64];
        memcpy(x, xs, 4 * (size_t)L);
        for (uint32_t j = 0; j < D; j++) {
            const float *wr = p->wf + (size_t)j * D + k * L;
            double s = ps[j];
            for (uint32_t l = 0; l < L; l++)
                s += (double)wr[l] * (double)x[l];
            ps[j] = s;
        }
    }
}

/* After the last superlane: the results leave superlane kk at t + d_func + kk. */
static ts_status abc_finalize(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in->a;
    uint32_t pl = m->lay->num[m->q[f->q].slice], L = m->L;
    int type = o[0] - TSP_REG_TYPE;
    uint8_t lb[4 * 64];
    for (uint32_t kk = 0; kk < m->S; kk++) {
        for (uint32_t l = 0; l < L; l++) {
            uint32_t j = kk * L + l, v;
            if (type == TSP_I8) {
                int32_t s = ((int32_t *)(void *)f->buf)[j];
                memcpy(&v, &s, 4);
            } else {
                float s = (float)((double *)(void *)f->buf)[j]; /* rounded once (research §1.5) */
                memcpy(&v, &s, 4);
            }
            memcpy(lb + 4 * l, &v, 4);
        }
        tsp_pw w = {.kind = PW_ACC, .k = (uint16_t)kk, .a = pl, .mode = (uint8_t)o[2], .tag = (uint32_t)o[4],
                    .prod = PROD(f->q, f->pc), .len = 4 * L, .type = type == TSP_I8 ? TSP_I32 : TSP_F32};
        ts_status rc = pw_add(m, f->t0 + f->dfunc + kk, &w, lb, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* Host threads: a pool that shares out the cycle's abc multiply-adds by job index (job j on
 * thread j mod n), so each partial sum is computed by exactly one thread in the same order
 * whatever the thread count. */
struct tsp_pool {
    ts_model *m;
    int n;                   /* worker threads (the caller is thread 0) */
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;
    int pending;
    bool quit;
};

typedef struct tsp_worker {
    struct tsp_pool *pool;
    int id;
} tsp_worker;

static void run_share(ts_model *m, int id, int nt)
{
    for (size_t j = (size_t)id; j < m->njobs; j += (size_t)nt)
        abc_compute(m, &m->fl[m->jobs[j]]);
}

static void *worker_main(void *arg)
{
    tsp_worker *w = arg;
    struct tsp_pool *pl = w->pool;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        while (pl->gen == seen && !pl->quit)
            pthread_cond_wait(&pl->go, &pl->mu);
        bool quit = pl->quit;
        seen = pl->gen;
        pthread_mutex_unlock(&pl->mu);
        if (quit)
            return NULL;
        run_share(pl->m, w->id, pl->n + 1);
        pthread_mutex_lock(&pl->mu);
        if (--pl->pending == 0)
            pthread_cond_signal(&pl->done);
        pthread_mutex_unlock(&pl->mu);
    }
}

static void run_jobs(ts_model *m)
{
    struct tsp_pool *pl = m->pool;
    if (!pl || m->njobs < 2) { /* one job is not worth waking the pool */
        run_share(m, 0, 1);
        return;
    }
    pthread_mutex_lock(&pl->mu);
    pl->pending = pl->n;
    pl->gen++;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    run_share(m, 0, pl->n + 1);
    pthread_mutex_lock(&pl->mu);
    while (pl->pending)
        pthread_cond_wait(&pl->done, &pl->mu);
    pthread_mutex_unlock(&pl->mu);
}

static void pool_stop(ts_model *m)
{
    struct tsp_pool *pl = m->pool;
    if (!pl)
        return;
    pthread_mutex_lock(&pl->mu);
    pl->quit = true;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    for (int i = 0; i < pl->n; i++)
        pthread_join(pl->th[i], NULL);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->go);
    pthread_cond_destroy(&pl->done);
    ts_free(pl->th);
    ts_free(m->workers);
    ts_free(pl);
    m->pool = NULL;
}

static ts_status pool_start(ts_model *m, int threads, ts_err *err)
{
    struct tsp_pool *pl = ts_calloc(1, sizeof *pl);
    if (!pl)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    pl->m = m;
    pl->th = ts_calloc((size_t)threads - 1, sizeof *pl->th);
    m->workers = ts_calloc((size_t)threads - 1, sizeof *m->workers);
    if (!pl->th || !m->workers) {
        ts_free(pl->th);
        ts_free(m->workers);
        m->workers = NULL;
        ts_free(pl);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->go, NULL);
    pthread_cond_init(&pl->done, NULL);
    m->pool = pl;
    for (int i = 0; i < threads - 1; i++) {
        m->workers[i] = (tsp_worker){pl, i + 1};
        if (pthread_create(&pl->th[i], NULL, worker_main, &m->workers[i])) {
            pool_stop(m);
            return ts_err_set(err, TS_ENOMEM, "cannot start host thread %d of %d", i + 2, threads);
        }
        pl->n++;
    }
    return TS_OK;
}

static ts_status step_sxm(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in->a;
    uint32_t k = f->k, L = m->L, VL = m->VL;
    uint8_t in[64], mp[64], lo[64], out[64];
    ts_status rc;
    int op = f->in->op;
    switch (op) {
    case TSP_OP_SHIFT:
    case TSP_OP_ROTATE:
    case TSP_OP_PERMUTE: {
        uint32_t itag = (uint32_t)(op == TSP_OP_PERMUTE ? o[3] : o[3]);
        if ((rc = sr_read(m, f, o[0], k, itag, in, err)) != TS_OK)
            return rc;
        memcpy(f->buf + (size_t)k * L, in, L);
        if (op == TSP_OP_PERMUTE) {
            if ((rc = sr_read(m, f, o[2], k, itag, lo, err)) != TS_OK ||
                (rc = sr_read(m, f, o[2] + 1, k, itag, mp, err)) != TS_OK)
                return rc;
            for (uint32_t x = 0; x < L; x++) {
                uint16_t v = (uint16_t)(lo[x] | mp[x] << 8);
                memcpy(f->buf + VL + 2 * ((size_t)k * L + x), &v, 2);
            }
        }
        if (k < m->S - 1)
            return TS_OK;
        uint8_t *res = f->buf + 3 * (size_t)VL;
        if (op == TSP_OP_PERMUTE) {
            uint8_t *seen = res + VL;
            memset(seen, 0, VL);
            for (uint32_t l = 0; l < VL; l++) {
                uint16_t src;
                memcpy(&src, f->buf + VL + 2 * (size_t)l, 2);
                if (src >= VL || seen[src])
                    return ts_err_sim(err, m->q[f->q].slice, (int64_t)m->now,
                                      "permute map is not a bijection: lane %u takes lane %u%s", l, src,
                                      src >= VL ? ", past the vector" : ", already taken");
                seen[src] = 1;
                res[l] = f->buf[src];
            }
        } else {
            int64_t n = o[2];
            for (uint32_t l = 0; l < VL; l++) {
                int64_t s = (int64_t)l - n;
                if (op == TSP_OP_ROTATE)
                    s = ((s % (int64_t)VL) + (int64_t)VL) % (int64_t)VL;
                res[l] = s >= 0 && s < (int64_t)VL ? f->buf[s] : 0;
            }
        }
        for (uint32_t kk = 0; kk < m->S; kk++)
            if ((rc = sr_schedule(m, f->t0 + f->dfunc + kk, o[1], q_pos(m, f->q), kk, (uint32_t)o[4],
                                  PROD(f->q, f->pc), res + (size_t)kk * L, err)) != TS_OK)
                return rc;
        return TS_OK;
    }
    case TSP_OP_DISTRIBUTE:
        if ((rc = sr_read(m, f, o[0], k, (uint32_t)o[3], in, err)) != TS_OK ||
            (rc = sr_read(m, f, o[2], k, (uint32_t)o[3], mp, err)) != TS_OK)
            return rc;
        for (uint32_t x = 0; x < L; x++)
            out[x] = mp[x] == 0xff ? 0 : in[mp[x] % L];
        return sr_schedule(m, f->t0 + f->dfunc + k, o[1], q_pos(m, f->q), k, (uint32_t)o[4], PROD(f->q, f->pc), out,
                           err);
    case TSP_OP_TRANSPOSE: {
        uint8_t blk[16][16];
        for (int i = 0; i < 16; i++) {
            if ((rc = sr_read(m, f, o[0] + i, k, (uint32_t)o[2], in, err)) != TS_OK)
                return rc;
            memcpy(blk[i], in, 16);
        }
        for (int j = 0; j < 16; j++) {
            for (int i = 0; i < 16; i++)
                out[i] = blk[i][j];
            if ((rc = sr_schedule(m, f->t0 + f->dfunc + k, o[1] + j, q_pos(m, f->q), k, (uint32_t)o[3],
                                  PROD(f->q, f->pc), out, err)) != TS_OK)
                return rc;
        }
        if (k == m->S - 1)
            m->transposes[m->lay->num[m->q[f->q].slice]]--;
        return TS_OK;
    }
    default: return TS_OK;
    }
}

static ts_status step_c2c(ts_model *m, tsp_fl *f, ts_err *err)
{
    const int32_t *o = f->in->a;
    uint32_t k = f->k, L = m->L;
    tsp_link *lk = &m->link[o[0]];
    ts_status rc;
    if (f->in->op == TSP_OP_SEND) {
        if (k == 0) {
            if (ts_grow((void **)&lk->ready, &lk->cap, lk->head + lk->n + 1, sizeof *lk->ready))
                return ts_err_set(err, TS_ENOMEM, "out of memory");
            size_t cap = lk->cap;
            uint8_t *d = ts_realloc(lk->data, cap * m->VL);
            uint64_t *pr = ts_realloc(lk->prod, cap * sizeof *pr);
            if (d)
                lk->data = d;
            if (pr)
                lk->prod = pr;
            if (!d || !pr)
                return ts_err_set(err, TS_ENOMEM, "out of memory");
            size_t e = lk->head + lk->n++;
            /* it has arrived c2c.latency after its last superlane was sent */
            lk->ready[e] = f->t0 + f->skew + m->S - 1 + m->cfg.c2c_latency;
            lk->prod[e] = PROD(f->q, f->pc);
            m->offchip += m->VL;
        }
        size_t e = lk->head + lk->n - 1;
        return sr_read(m, f, o[1], k, (uint32_t)o[2], lk->data + e * m->VL + (size_t)k * L, err);
    }
    if (f->in->op == TSP_OP_RECEIVE) {
        if (k == 0) {
            if (!lk->n || lk->ready[lk->head] > m->now) {
                uint64_t pa = lk->n ? lk->prod[lk->head] : NOPROD;
                rc = hazard(m, err, HZ_NOVALUE, k, m->q[f->q].slice, o[1], pa, PROD(f->q, f->pc),
                            "no value: nothing has arrived on link %d", o[0]);
                if (rc != TS_OK)
                    return rc;
                memset(f->buf, 0, m->VL);
            } else {
                memcpy(f->buf, lk->data + lk->head * m->VL, m->VL);
                lk->head++;
                lk->n--;
                if (!lk->n)
                    lk->head = 0;
            }
        }
        return sr_schedule(m, f->t0 + f->dfunc + k, o[1], q_pos(m, f->q), k, (uint32_t)o[2], PROD(f->q, f->pc),
                           f->buf + (size_t)k * L, err);
    }
    return TS_OK;
}

/* ifetch reads the text from a stream pair like any instruction; the queue's fetch port takes
 * icu.ifetch_bytes at icu.fetch_bytes_per_cycle (one fetch at a time), and the instructions can
 * issue from the cycle after the last byte is in (research §1.1, §1.8). */
static ts_status step_ifetch(ts_model *m, tsp_fl *f, ts_err *err)
{
    uint8_t tmp[64];
    ts_status rc;
    for (int b = 0; b < 2; b++)
        if ((rc = sr_read(m, f, f->in->a[0] + b, f->k, (uint32_t)f->in->a[1], tmp, err)) != TS_OK)
            return rc;
    if (f->k < m->S - 1)
        return TS_OK;
    tsp_queue *q = &m->q[f->q];
    uint64_t start = f->t0 + f->skew > q->fetch_free ? f->t0 + f->skew : q->fetch_free;
    uint64_t len = (m->cfg.icu_ifetch_bytes + m->cfg.icu_fetch_bpc - 1) / m->cfg.icu_fetch_bpc;
    uint64_t land = start + len - 1 > m->now ? start + len - 1 : m->now;
    q->fetch_free = start + len;
    if (q->nland == TSP_MAX_FETCHES) {
        rc = hazard(m, err, HZ_RESOURCE, f->k, q->slice, f->in->a[0], q->land_prod[0], PROD(f->q, f->pc),
                    "queue overflow: more than %d ifetches in flight", TSP_MAX_FETCHES);
        if (rc != TS_OK)
            return rc;
        land = q->land[q->nland - 1]; /* --warn: merged with the latest */
        q->nland--;
    }
    q->land[q->nland] = land;
    q->land_prod[q->nland++] = PROD(f->q, f->pc);
    m->nlanding++;
    return TS_OK;
}

/* Fetched text that is in by the end of the previous cycle joins its queue. */
static ts_status land_fetches(ts_model *m, ts_err *err)
{
    uint32_t add = (uint32_t)(m->cfg.icu_ifetch_bytes / m->cfg.icu_insn_bytes);
    for (uint32_t qi = 0; qi < m->nq && m->nlanding; qi++) {
        tsp_queue *q = &m->q[qi];
        while (q->nland && q->land[0] < m->now) {
            uint32_t nf = q->fetched + add > q->n ? q->n : q->fetched + add;
            if (nf - q->pc > m->cfg.icu_capacity) {
                ts_status rc = hazard(m, err, HZ_RESOURCE, 0, q->slice, -1, q->land_prod[0], PROD(qi, q->pc),
                                      "queue overflow: an ifetch brings the queue to %u instructions, more than its %" PRIu64,
                                      nf - q->pc, m->cfg.icu_capacity);
                if (rc != TS_OK)
                    return rc;
            }
            q->fetched = nf;
            memmove(q->land, q->land + 1, (q->nland - 1) * sizeof *q->land);
            memmove(q->land_prod, q->land_prod + 1, (q->nland - 1) * sizeof *q->land_prod);
            q->nland--;
            m->nlanding--;
            m->work++;
        }
    }
    return TS_OK;
}

static ts_status step_one(ts_model *m, tsp_fl *f, ts_err *err)
{
    uint32_t s = m->q[f->q].slice;
    if (f->k == 0 && m->slice_last[s] != m->now + 1) { /* a dispatch into the slice this cycle */
        m->slice_last[s] = m->now + 1;
        m->slice_busy[s]++;
    }
    switch (f->d->unit) {
    case TSP_U_MEM: return step_mem(m, f, err);
    case TSP_U_VXM: return step_vxm(m, f, err);
    case TSP_U_MXM: return step_mxm(m, f, err);
    case TSP_U_SXM: return step_sxm(m, f, err);
    case TSP_U_C2C: return step_c2c(m, f, err);
    case TSP_U_ICU: return step_ifetch(m, f, err);
    default: return TS_OK;
    }
}

/* ---- issue -------------------------------------------------------------------------------- */

static size_t fl_scratch(const ts_model *m, int op)
{
    switch (op) {
    case TSP_OP_ABC: return (size_t)m->D * sizeof(double) + 4 * (size_t)m->L; /* partial sums, activations */
    case TSP_OP_SHIFT:
    case TSP_OP_ROTATE:
    case TSP_OP_PERMUTE: return 5 * (size_t)m->VL;
    case TSP_OP_RECEIVE: return m->VL;
    default: return 0;
    }
}

static ts_status launch(ts_model *m, uint32_t qi, uint32_t pc, ts_err *err)
{
    tsp_queue *q = &m->q[qi];
    const ts_insn *in = &q->code[pc];
    int op = in->op;
    const tsp_dec *d = &q->dec[pc];
    if (ts_grow((void **)&m->fl, &m->capfl, m->nfl + 1, sizeof *m->fl))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    tsp_fl *f = &m->fl[m->nfl];
    memset(f, 0, sizeof *f);
    f->q = qi;
    f->pc = pc;
    f->in = in;
    f->t0 = m->now;
    f->d = d;
    f->skew = d->skew;
    f->dfunc = d->dfunc;
    size_t sc = fl_scratch(m, op);
    if (sc && !(f->buf = ts_calloc(1, sc)))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    if (d->unit == TSP_U_MXM && (op == TSP_OP_LW || op == TSP_OP_IW)) {
        tsp_plane *p = &m->plane[m->lay->num[q->slice]];
        int type = in->a[0] - TSP_REG_TYPE;
        uint32_t rows = (uint32_t)in->a[2] / tsp_type_width(type);
        if (op == TSP_OP_LW) {
            f->row0 = p->lw_row;
            p->lw_row = (p->lw_row + rows) % m->D;
        } else if (in->a[1] != TSP_REG_NUL) {
            f->row0 = p->iw_row;
            p->iw_row = (p->iw_row + rows) % m->D;
        }
    }
    if (op == TSP_OP_ABC) {
        tsp_plane *p = &m->plane[m->lay->num[q->slice]];
        int type = in->a[0] - TSP_REG_TYPE;
        if (m->now < p->busy_until) {
            ts_status rc = hazard(m, err, HZ_RESOURCE, 0, q->slice, in->a[1], NOPROD, PROD(qi, pc),
                                  "mxm plane busy: an f16 abc occupies the plane for %" PRIu64 " cycles",
                                  m->cfg.mxm_fp16_interval);
            if (rc != TS_OK) {
                ts_free(f->buf);
                return rc;
            }
        }
        uint64_t occ = type == TSP_F16 ? m->cfg.mxm_fp16_interval : 1;
        p->busy_until = m->now + occ;
        m->mxm_busy += occ;
    }
    if (op == TSP_OP_TRANSPOSE) {
        uint32_t sx = m->lay->num[q->slice];
        if (m->transposes[sx] >= m->cfg.sxm_max_transposes) {
            ts_status rc = hazard(m, err, HZ_RESOURCE, 0, q->slice, in->a[0], NOPROD, PROD(qi, pc),
                                  "sxm busy: more than %" PRIu64 " transposes in flight", m->cfg.sxm_max_transposes);
            if (rc != TS_OK) {
                ts_free(f->buf);
                return rc;
            }
        }
        m->transposes[sx]++;
    }
    m->nfl++;
    return TS_OK;
}

/* ---- activity sampler ---------------------------------------------------------------------- */

/* Every slice-superlane is a unit of the activity sampler. A superlane step of an in-flight
 * instruction is one cycle of work for the slice at that superlane: compute on VXM, MXM and SXM
 * slices, network (stream traffic) on MEM slices; the superlanes of a slice with a queue waiting
 * at a sync are in sync; every other cycle is idle (left out: the sampler counts it). */
#define NOPARK UINT64_MAX

/* Record unit u's cycles since it was last recorded, up to `upto`: sync while its slice waits. */
static void act_gap(ts_model *m, uint32_t u, uint64_t upto)
{
    uint64_t from = m->act_upto[u], park = m->act_park[u / m->S];
    if (from >= upto)
        return;
    if (park != NOPARK)
        ts_activity_span(m->act, u, TS_ACT_SYNC, from > park ? from : park, upto);
    m->act_upto[u] = upto;
}

/* The in-flight instruction f steps its superlane at cycle m->now. */
static void act_step(ts_model *m, const tsp_fl *f)
{
    uint32_t u = m->q[f->q].slice * m->S + f->k;
    if (m->act_upto[u] > m->now)
        return; /* another queue of the slice already stepped this superlane this cycle */
    act_gap(m, u, m->now);
    ts_activity_span(m->act, u, f->d->unit == TSP_U_MEM || f->d->unit == TSP_U_C2C ? TS_ACT_NETWORK : TS_ACT_COMPUTE,
                     m->now, m->now + 1);
    m->act_upto[u] = m->now + 1;
}

/* Queue qi parks at a sync at cycle m->now. */
static void act_on_park(ts_model *m, uint32_t qi)
{
    uint32_t sl = m->q[qi].slice;
    if (m->act_park[sl] != NOPARK)
        return;
    for (uint32_t k = 0; k < m->S; k++)
        act_gap(m, sl * m->S + k, m->now);
    m->act_park[sl] = m->now;
}

/* A barrier releases at cycle m->now (before its queues run again): the slices of the queues it
 * releases leave sync, and the timeline gets a step from the previous release: compute until the
 * first of them parked, then sync. */
static void act_on_release(ts_model *m)
{
    uint64_t first = UINT64_MAX;
    for (uint32_t qi = 0; qi < m->nq; qi++) {
        const tsp_queue *q = &m->q[qi];
        if (q->state != Q_PARKED || q->park >= m->now)
            continue;
        if (q->park < first)
            first = q->park;
        uint32_t sl = q->slice;
        if (m->act_park[sl] == NOPARK)
            continue;
        for (uint32_t k = 0; k < m->S; k++)
            act_gap(m, sl * m->S + k, m->now);
        m->act_park[sl] = NOPARK;
    }
    if (first == UINT64_MAX)
        return; /* nobody waited */
    if (first < m->act_ss_start)
        first = m->act_ss_start;
    ts_act_superstep ss = {m->act_ss_start, first - m->act_ss_start, 0, m->now - first};
    m->act_ss_start = m->now;
    ts_err e;
    ts_err_init(&e);
    if (ts_activity_superstep(m->act, &ss, &e) != TS_OK)
        m->act_nomem = true; /* reported by the next flush */
    ts_err_free(&e);
}

/* A vector of one superlane (L bytes) was put on a stream flowing east (dir 0) or west: counted
 * for the cycle, reported once at its end (act_cycle_flows). */
static void act_stream(ts_model *m, int dir)
{
    m->act_flow[dir != 0] += m->L;
}

static void act_cycle_flows(ts_model *m)
{
    for (int d = 0; d < 2; d++)
        if (m->act_flow[d]) {
            ts_activity_flow(m->act, m->now, d == 0 ? TS_ACT_EAST : TS_ACT_WEST, m->act_flow[d]);
            m->act_flow[d] = 0;
        }
}

/* Every unit is recorded up to `upto`: flush the windows that end by then (the last one too when
 * the run is over). */
static ts_status act_flush(ts_model *m, uint64_t upto, bool last, ts_err *err)
{
    if (m->act_nomem)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the activity timeline");
    for (uint32_t sl = 0; sl < m->lay->nslices; sl++)
        if (m->act_park[sl] != NOPARK)
            for (uint32_t k = 0; k < m->S; k++)
                act_gap(m, sl * m->S + k, upto);
    if (last)
        return ts_activity_finish(m->act, upto, err);
    uint64_t w = ts_activity_window(m->act);
    m->act_next = (upto / w + 1) * w;
    return ts_activity_advance(m->act, upto, err);
}

/* Unit u (a slice at one superlane) in words, for the live view: the slice, its queues' pc and
 * state, and the instructions of the slice still sweeping the superlanes. */
static void act_describe(void *ud, uint32_t u, char *buf, size_t n)
{
    static const char *const st[] = {"RUN", "SYNC", "DONE"};
    const ts_model *m = ud;
    uint32_t sl = u / m->S;
    char name[32];
    ts_tsp_slice_name(m->lay, sl, name, sizeof name);
    size_t k = (size_t)snprintf(buf, n, "%s SUPERLANE %u", name, u % m->S);
    uint32_t shown = 0, fl = 0;
    for (uint32_t qi = 0; qi < m->nq && k < n; qi++)
        if (m->q[qi].slice == sl && shown++ < 4)
            k += (size_t)snprintf(buf + k, n - k, " Q%u PC %u/%u %s", qi, m->q[qi].pc, m->q[qi].n,
                                  st[m->q[qi].state]);
    for (size_t i = 0; i < m->nfl; i++)
        fl += m->q[m->fl[i].q].slice == sl;
    if (k < n)
        snprintf(buf + k, n - k, " IN FLIGHT %u", fl);
}

/* The slice tiles for the view: x = the slice's rank west to east (by stream position), y = the
 * superlane (0 at the top). */
static ts_status act_layout(ts_model *m, ts_err *err)
{
    const tsp_layout *l = m->lay;
    uint32_t n = l->nslices * m->S;
    uint32_t *x = ts_malloc((size_t)n * sizeof *x), *y = ts_malloc((size_t)n * sizeof *y);
    m->act_upto = ts_calloc(n, sizeof *m->act_upto);
    m->act_park = ts_malloc(l->nslices * sizeof *m->act_park);
    if (!x || !y || !m->act_upto || !m->act_park) {
        ts_free(x);
        ts_free(y);
        return ts_err_set(err, TS_ENOMEM, "out of memory declaring the slice layout");
    }
    for (uint32_t s = 0; s < l->nslices; s++) {
        m->act_park[s] = NOPARK;
        uint32_t rank = 0; /* slices west of s, ties broken by slice number */
        for (uint32_t t = 0; t < l->nslices; t++)
            rank += l->pos[t] < l->pos[s] || (l->pos[t] == l->pos[s] && t < s);
        for (uint32_t k = 0; k < m->S; k++) {
            x[s * m->S + k] = rank;
            y[s * m->S + k] = k;
        }
    }
    ts_status rc = ts_activity_layout(m->act, "tsp superlanes", n, l->nslices, m->S, x, y, err);
    ts_free(x);
    ts_free(y);
    ts_activity_describer(m->act, act_describe, m);
    /* full scale of the flow strips: every stream of one direction taking a new vector at every
     * superlane in one cycle */
    ts_activity_flows(m->act, (double)m->NS * m->S * m->L);
    ts_activity_group(m->act, 1, m->S, "slice"); /* trace tracks: one per slice */
    m->act_next = ts_activity_window(m->act);
    return rc;
}

/* Issue one instruction of queue qi at this cycle; *again is set when the next instruction
 * may issue in the same cycle (a MEM read paired with a write, research §1.4). */
static ts_status issue_one(ts_model *m, uint32_t qi, uint32_t pc, bool *again, ts_err *err)
{
    tsp_queue *q = &m->q[qi];
    const ts_insn *in = &q->code[pc];
    ts_status rc = TS_OK;
    *again = false;
    q->issued++;
    q->last_issue = m->now;
    m->work++;
    if (q->last_busy != m->now + 1) {
        q->last_busy = m->now + 1;
        q->busy++;
    }
    q->next = m->now + 1;
    switch (in->op) {
    case TSP_OP_NOP:
        q->next = m->now + (uint64_t)in->a[0];
        trace_insn(m, qi, "nop", "icu", m->now, (uint64_t)in->a[0]);
        break;
    case TSP_OP_SYNC:
        q->state = Q_PARKED;
        q->park = m->now;
        if (m->act)
            act_on_park(m, qi);
        break;
    case TSP_OP_NOTIFY:
        if (ts_grow((void **)&m->releases, &m->caprel, m->nrel + 1, sizeof *m->releases))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        m->releases[m->nrel++] = m->now + m->cfg.icu_sync_cycles;
        break;
    case TSP_OP_CONFIG:
        m->powered = in->a[0];
        m->configs++;
        break;
    case TSP_OP_DESKEW: {
        uint64_t p = m->cfg.c2c_hac_period;
        q->next = (m->now / p + 1) * p;
        break;
    }
    case TSP_OP_IFETCH:
        q->last_ifetch = pc + 1;
        m->ifetches++;
        rc = launch(m, qi, pc, err);
        break;
    default: {
        rc = launch(m, qi, pc, err);
        uint32_t fl = q->dec[pc].flags;
        if (rc == TS_OK && (fl & (TSP_F_MEMR | TSP_F_MEMW)) && pc + 1 < q->n && pc + 1 < q->fetched &&
            q->rep_left == 0) {
            uint32_t nf = q->dec[pc + 1].flags;
            bool pair = ((fl & TSP_F_MEMR) && (nf & TSP_F_MEMW)) || ((fl & TSP_F_MEMW) && (nf & TSP_F_MEMR));
            *again = pair;
        }
        break;
    }
    }
    return rc;
}

static ts_status issue_queue(ts_model *m, uint32_t qi, ts_err *err)
{
    tsp_queue *q = &m->q[qi];
    if (q->state != Q_RUN || q->next > m->now)
        return TS_OK;
    ts_status rc;
    if (q->rep_left) { /* Repeat n,d: another copy of the previous instruction */
        bool again;
        q->rep_left--;
        if ((rc = issue_one(m, qi, q->rep_pc, &again, err)) != TS_OK)
            return rc;
        if (q->rep_left)
            q->next = m->now + q->rep_d;
        return TS_OK;
    }
    bool paired = false;
    for (;;) {
        if (q->pc >= q->n) {
            q->state = Q_DONE;
            return TS_OK;
        }
        if (q->pc >= q->fetched) {
            uint64_t pf = q->last_ifetch ? PROD(qi, q->last_ifetch - 1) : NOPROD;
            rc = hazard(m, err, HZ_UNDERRUN, 0, q->slice, -1, pf, PROD(qi, q->pc),
                        "queue underrun: queue %u has run dry (its last ifetch is the first instruction named)", qi);
            if (rc != TS_OK)
                return rc;
            uint32_t add = (uint32_t)(m->cfg.icu_ifetch_bytes / m->cfg.icu_insn_bytes);
            q->fetched = q->pc + add > q->n ? q->n : q->pc + add;
        }
        if (q->code[q->pc].op == TSP_OP_REPEAT) { /* reached on its own (fetched late): the copies
                                                   * follow the previous issue d cycles apart */
            const ts_insn *r = &q->code[q->pc];
            q->rep_pc = q->pc - 1;
            q->pc++;
            if (r->a[0] > 0) {
                uint64_t t = q->last_issue + (uint64_t)r->a[1];
                q->rep_left = (uint32_t)r->a[0];
                q->rep_d = (uint32_t)r->a[1];
                q->next = t > m->now ? t : m->now;
                return q->next == m->now ? issue_queue(m, qi, err) : TS_OK;
            }
            continue;
        }
        uint32_t pc = q->pc++;
        bool again;
        if ((rc = issue_one(m, qi, pc, &again, err)) != TS_OK)
            return rc;
        /* a Repeat right behind: its copies follow the instruction d cycles apart */
        if (q->pc < q->n && q->pc < q->fetched && q->code[q->pc].op == TSP_OP_REPEAT) {
            const ts_insn *r = &q->code[q->pc++];
            if (r->a[0] > 0) {
                q->rep_left = (uint32_t)r->a[0];
                q->rep_d = (uint32_t)r->a[1];
                q->rep_pc = pc;
                q->next = m->now + q->rep_d;
            }
            return TS_OK;
        }
        if (!again || paired || q->state != Q_RUN)
            return TS_OK;
        paired = true;
    }
}

/* ---- the cycle loop ----------------------------------------------------------------------- */

static void release_syncs(ts_model *m)
{
    for (size_t i = 0; i < m->nrel;) {
        if (m->releases[i] != m->now) {
            i++;
            continue;
        }
        if (m->act)
            act_on_release(m);
        for (uint32_t qi = 0; qi < m->nq; qi++) {
            tsp_queue *q = &m->q[qi];
            if (q->state == Q_PARKED && q->park < m->now) {
                q->state = Q_RUN;
                q->next = m->now;
                trace_insn(m, qi, "sync wait", "icu", q->park, m->now - q->park);
            }
        }
        m->barriers++;
        m->last_release = m->now;
        m->work++;
        m->releases[i] = m->releases[--m->nrel];
    }
}

static void scan_occupancy(ts_model *m)
{
    uint64_t live = 0;
    for (int dir = 0; dir < 2; dir++)
        for (uint32_t s = 0; s < m->NS; s++)
            for (uint32_t pos = 0; pos < m->P; pos++) {
                size_t j = sr_index(m, dir, s, pos, m->now, 0);
                for (uint32_t k = 0; k < m->S; k++)
                    live += sr_live(m, j + k, dir, pos, m->now);
            }
    m->occ_scan += live;
}

static ts_status cycle(ts_model *m, ts_err *err)
{
    ts_status rc;
    m->cyc_bytes = 0;
    m->cyc_macs = 0;
    release_syncs(m);
    if ((rc = commit(m, err)) != TS_OK)
        return rc;
    if (m->nlanding && (rc = land_fetches(m, err)) != TS_OK)
        return rc;
    if (m->lockstep)
        scan_occupancy(m);
    for (uint32_t qi = 0; qi < m->nq; qi++)
        if ((rc = issue_queue(m, qi, err)) != TS_OK)
            return rc;
    /* evaluate: every instruction due steps its superlane; then the abc multiply-adds (possibly
     * on host threads); then the abc results that are complete */
    m->njobs = 0;
    for (size_t i = 0; i < m->nfl; i++) {
        tsp_fl *f = &m->fl[i];
        if (f->t0 + f->skew + f->k == m->now && (rc = step_one(m, f, err)) != TS_OK)
            return rc;
    }
    run_jobs(m);
    for (size_t j = 0; j < m->njobs; j++) {
        tsp_fl *f = &m->fl[m->jobs[j]];
        if (f->k == m->S - 1 && (rc = abc_finalize(m, f, err)) != TS_OK)
            return rc;
    }
    size_t keep = 0;
    for (size_t i = 0; i < m->nfl; i++) {
        tsp_fl *f = &m->fl[i];
        if (f->t0 + f->skew + f->k == m->now) {
            m->work++;
            if (m->act)
                act_step(m, f);
            if (++f->k == m->S) {
                uint64_t sweep = m->now - (f->t0 + f->skew) + 1; /* first to last superlane step */
                if (m->trace) { /* from dispatch to the last superlane's result */
                    static const char *const cats[TSP_U_COUNT] = {"icu", "mem", "vxm", "mxm", "sxm", "c2c"};
                    uint64_t end = f->dfunc ? f->t0 + f->dfunc + m->S : m->now + 1;
                    trace_insn(m, f->q, ts_tsp_isa.ops[f->in->op].mnemonic, cats[f->d->unit],
                               f->t0, end - f->t0);
                }
                if (sweep > m->sweep_max)
                    m->sweep_max = sweep;
                ts_free(f->buf);
                f->buf = NULL;
                continue;
            }
        }
        m->fl[keep++] = *f;
    }
    m->nfl = keep;
    if (m->act && m->cyc_bytes)
        ts_activity_bytes(m->act, m->now, m->cyc_bytes);
    if (m->act)
        act_cycle_flows(m);
    if (m->cyc_bytes > m->peak_bytes)
        m->peak_bytes = m->cyc_bytes;
    if (m->cyc_macs > m->peak_macs)
        m->peak_macs = m->cyc_macs;
    m->now++;
    return TS_OK;
}

static bool finished(const ts_model *m)
{
    if (m->nfl || m->npending)
        return false;
    for (uint32_t i = 0; i < m->nq; i++) {
        const tsp_queue *q = &m->q[i];
        if (q->state == Q_PARKED || q->rep_left || q->pc < q->n || q->next > m->now)
            return false;
    }
    return true;
}

/* The next cycle at which anything happens; UINT64_MAX if nothing ever will. */
static uint64_t next_event(const ts_model *m)
{
    uint64_t t = UINT64_MAX;
    for (uint32_t i = 0; i < m->nq; i++) {
        const tsp_queue *q = &m->q[i];
        if (q->state == Q_RUN && (q->pc < q->n || q->rep_left) && q->next < t)
            t = q->next;
    }
    for (size_t i = 0; i < m->nfl; i++) {
        uint64_t c = m->fl[i].t0 + m->fl[i].skew + m->fl[i].k;
        if (c < t)
            t = c;
    }
    if (m->npending)
        for (uint32_t i = 0; i <= m->wmask; i++)
            if (m->wheel[i].n && m->wheel[i].cycle < t)
                t = m->wheel[i].cycle;
    for (size_t i = 0; i < m->nrel; i++)
        if (m->releases[i] < t)
            t = m->releases[i];
    for (uint32_t i = 0; i < m->nq && m->nlanding; i++)
        if (m->q[i].nland && m->q[i].land[0] + 1 < t)
            t = m->q[i].land[0] + 1;
    return t < m->now ? m->now : t;
}

static ts_status tsp_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err)
{
    while (m->now < limit && !finished(m)) {
        if (!m->lockstep) {
            uint64_t n = next_event(m);
            if (n > m->now) {
                /* nothing happens before n: a queue whose last NOP ends there finishes then */
                uint64_t stop = n;
                for (uint32_t i = 0; i < m->nq; i++)
                    if (m->q[i].state == Q_RUN && m->q[i].pc >= m->q[i].n && !m->q[i].rep_left &&
                        m->q[i].next > m->now && m->q[i].next < stop)
                        stop = m->q[i].next;
                if (m->act && stop > m->act_next)
                    stop = m->act_next; /* a window ends there: priced at its end, as in lockstep */
                m->now = stop < limit ? stop : limit;
                if (m->act && m->now >= m->act_next) {
                    ts_status rc = act_flush(m, m->now, false, err);
                    if (rc != TS_OK)
                        return rc;
                }
                continue;
            }
        }
        ts_status rc = cycle(m, err);
        if (rc == TS_OK && m->act && m->now >= m->act_next)
            rc = act_flush(m, m->now, false, err);
        if (rc != TS_OK)
            return rc;
    }
    st->now = m->now;
    st->work = m->work;
    st->done = finished(m);
    if (st->done && m->trace)
        for (uint32_t qi = 0; qi < m->nq; qi++)
            trace_flush(m, qi);
    if (st->done && m->act) {
        ts_status rc = act_flush(m, m->now, true, err);
        m->act = NULL; /* recorded to the end */
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* ---- create, load, destroy ---------------------------------------------------------------- */

static void latch_free(tsp_latch *l)
{
    ts_free(l->data);
    ts_free(l->tag);
    ts_free(l->birth);
    ts_free(l->prod);
    ts_free(l->type);
}

static int latch_init(tsp_latch *l, size_t n, uint32_t L)
{
    l->data = ts_calloc(n, 4 * (size_t)L);
    l->tag = ts_calloc(n, sizeof *l->tag);
    l->birth = ts_malloc(n * sizeof *l->birth);
    l->prod = ts_calloc(n, sizeof *l->prod);
    l->type = ts_calloc(n, 1);
    if (!l->data || !l->tag || !l->birth || !l->prod || !l->type)
        return -1;
    for (size_t i = 0; i < n; i++)
        l->birth[i] = -1;
    return 0;
}

static void tsp_destroy(ts_model *m)
{
    if (!m)
        return;
    pool_stop(m);
    ts_free(m->act_upto);
    ts_free(m->act_park);
    ts_free(m->jobs);
    ts_free(m->sr_data);
    ts_free(m->sr_tag);
    ts_free(m->sr_birth);
    ts_free(m->sr_bpos);
    ts_free(m->sr_prod);
    if (m->wheel)
        for (uint32_t i = 0; i <= m->wmask; i++) {
            ts_free(m->wheel[i].w);
            ts_free(m->wheel[i].bytes);
        }
    ts_free(m->wheel);
    for (size_t i = 0; i < m->nfl; i++)
        ts_free(m->fl[i].buf);
    ts_free(m->fl);
    if (m->q)
        for (uint32_t i = 0; i < m->nq; i++)
            ts_free(m->q[i].dec);
    ts_free(m->q);
    ts_free(m->slice_busy);
    ts_free(m->slice_last);
    if (m->mem && m->lay)
        for (uint32_t i = 0; i < m->lay->nmem; i++)
            ts_free(m->mem[i]);
    ts_free(m->mem);
    ts_free(m->bank);
    latch_free(&m->alu);
    if (m->plane && m->lay)
        for (uint32_t i = 0; i < m->lay->nmxm; i++) {
            ts_free(m->plane[i].w8);
            ts_free(m->plane[i].b8);
            ts_free(m->plane[i].wf);
            ts_free(m->plane[i].bf);
            latch_free(&m->plane[i].acc);
        }
    ts_free(m->plane);
    if (m->link)
        for (uint64_t i = 0; i < m->cfg.c2c_links; i++) {
            ts_free(m->link[i].data);
            ts_free(m->link[i].ready);
            ts_free(m->link[i].prod);
        }
    ts_free(m->link);
    ts_free(m->transposes);
    ts_free(m->releases);
    ts_free(m->mem_rd);
    ts_free(m->mem_wr);
    ts_free(m->hzrow);
    ts_free(m->scratch);
    ts_free(m->lay);
    ts_free(m);
}

static ts_status tsp_create(ts_model **out, const ts_config *config, const ts_run_opts *opts, ts_err *err)
{
    *out = NULL;
    ts_model *m = ts_calloc(1, sizeof *m);
    if (!m)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    m->cfg = *(const ts_tsp_cfg *)ts_config_data(config);
    m->cfg.floorplan = (ts_strlist){NULL, 0}; /* borrowed lists are not kept past create */
    m->cfg.sr_map = (ts_intlist){NULL, 0};
    m->lockstep = opts && opts->lockstep;
    m->warn = opts && opts->warn;
    m->trace = opts ? opts->trace : NULL;
    m->lay = ts_malloc(sizeof *m->lay);
    ts_status rc;
    if (!m->lay) {
        tsp_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    if ((rc = ts_tsp_layout(ts_config_data(config), m->lay, err)) != TS_OK) {
        tsp_destroy(m);
        return rc;
    }
    const tsp_layout *l = m->lay;
    m->S = (uint32_t)m->cfg.superlanes;
    m->L = (uint32_t)m->cfg.lanes;
    m->VL = m->S * m->L;
    m->P = l->npos;
    m->NS = (uint32_t)m->cfg.streams;
    m->D = (uint32_t)m->cfg.mxm_dim;
    m->words = (uint32_t)(m->cfg.mem_slice_bytes / m->VL);
    m->nq = l->nqueues;
    m->powered = (int)m->S;
    m->nslots = 2 * (size_t)m->NS * m->P * m->S;
    uint64_t maxd = 0;
    for (int i = 0; i < TSP_OP_COUNT; i++)
        if (m->cfg.d_func[i] > maxd)
            maxd = m->cfg.d_func[i];
    uint64_t span = maxd + m->S + 2, w = 1;
    while (w < span)
        w <<= 1;
    m->wmask = (uint32_t)(w - 1);
    m->sr_data = ts_calloc(m->nslots, m->L);
    m->sr_tag = ts_calloc(m->nslots, sizeof *m->sr_tag);
    m->sr_birth = ts_malloc(m->nslots * sizeof *m->sr_birth);
    m->sr_bpos = ts_calloc(m->nslots, sizeof *m->sr_bpos);
    m->sr_prod = ts_calloc(m->nslots, sizeof *m->sr_prod);
    m->wheel = ts_calloc(w, sizeof *m->wheel);
    m->q = ts_calloc(m->nq ? m->nq : 1, sizeof *m->q);
    m->slice_busy = ts_calloc(l->nslices, sizeof *m->slice_busy);
    m->slice_last = ts_calloc(l->nslices, sizeof *m->slice_last);
    m->mem = ts_calloc(l->nmem ? l->nmem : 1, sizeof *m->mem);
    m->bank = ts_calloc((size_t)(l->nmem ? l->nmem : 1) * m->S, sizeof *m->bank);
    m->plane = ts_calloc(l->nmxm ? l->nmxm : 1, sizeof *m->plane);
    m->link = ts_calloc(m->cfg.c2c_links ? m->cfg.c2c_links : 1, sizeof *m->link);
    m->transposes = ts_calloc(l->nsxm ? l->nsxm : 1, sizeof *m->transposes);
    m->mem_rd = ts_calloc(l->nmem ? l->nmem : 1, sizeof *m->mem_rd);
    m->mem_wr = ts_calloc(l->nmem ? l->nmem : 1, sizeof *m->mem_wr);
    m->scratch = ts_malloc((size_t)m->NS * m->L * 4);
    bool ok = m->sr_data && m->sr_tag && m->sr_birth && m->sr_bpos && m->sr_prod && m->wheel && m->q &&
              m->slice_busy && m->slice_last && m->mem && m->bank && m->plane && m->link && m->transposes &&
              m->mem_rd && m->mem_wr && m->scratch && !latch_init(&m->alu, (size_t)m->cfg.vxm_alus * m->S, m->L);
    for (uint32_t i = 0; ok && i < l->nmxm; i++) {
        m->plane[i].type = m->plane[i].buf_type = -1;
        m->plane[i].inst_start = -1;
        ok = !latch_init(&m->plane[i].acc, m->S, m->L);
    }
    if (!ok) {
        tsp_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory creating a tsp model");
    }
    for (size_t i = 0; i < m->nslots; i++)
        m->sr_birth[i] = -1;
    for (size_t i = 0; i < (size_t)l->nmem * m->S; i++)
        m->bank[i].rd_cycle = m->bank[i].wr_cycle = -1;
    for (uint32_t i = 0; i < m->nq; i++) {
        m->q[i].slice = l->qslice[i];
        m->q[i].state = Q_DONE;
    }
    if (opts && opts->threads > 1 && (rc = pool_start(m, opts->threads, err)) != TS_OK) {
        tsp_destroy(m);
        return rc;
    }
    m->act = opts ? opts->activity : NULL;
    if (m->act && (rc = act_layout(m, err)) != TS_OK) {
        tsp_destroy(m);
        return rc;
    }
    *out = m;
    return TS_OK;
}

static const char *const unit_names[TSP_U_COUNT] = {"icu", "mem", "vxm", "mxm", "sxm", "c2c"};
static const char *const slice_kinds[TSP_S_COUNT] = {"mem", "vxm", "mxm", "sxm"};

/* Check one operand of in against its class (tsp_isa.def CLASSES). */
static const char *check_opnd(const ts_model *m, const ts_insn *in, int j, char cls, char *why, size_t n)
{
    int32_t v = in->a[j];
    bool stream = v >= 0 && v < TSP_REG_ALU && (uint32_t)(v % TSP_MAX_STREAMS) < m->NS;
    switch (cls) {
    case 's':
    case 'o':
        if (!stream)
            snprintf(why, n, "operand %d must be a stream register s0e..s%ue or s0w..s%uw", j + 1, m->NS - 1,
                     m->NS - 1);
        else
            return NULL;
        return why;
    case 'a':
        if (stream || (v >= TSP_REG_ALU && (uint64_t)(v - TSP_REG_ALU) < m->cfg.vxm_alus))
            return NULL;
        snprintf(why, n, "operand %d must be a stream register or alu0..alu%" PRIu64, j + 1, m->cfg.vxm_alus - 1);
        return why;
    case 'd':
    case 'w':
        if (stream || v == TSP_REG_NUL)
            return NULL;
        snprintf(why, n, "operand %d must be a stream register or nul", j + 1);
        return why;
    case 't':
        if (v >= TSP_REG_TYPE && v < TSP_REG_TYPE + TSP_NTYPES)
            return NULL;
        snprintf(why, n, "operand %d must be a type: i8, i16, i32, f16 or f32", j + 1);
        return why;
    default: return NULL;
    }
}

/* The stream group starting at register reg, w streams wide, is aligned and on chip. */
static bool group_ok(const ts_model *m, int32_t reg, uint32_t w)
{
    if (reg < 0 || reg >= TSP_REG_ALU)
        return true;
    uint32_t s = (uint32_t)reg % TSP_MAX_STREAMS;
    return s % w == 0 && s + w <= m->NS;
}

static ts_status check_insn(const ts_model *m, uint32_t qi, uint32_t pc, const ts_insn *in, ts_err *err)
{
    char why[160];
    const char *bad = NULL;
    const tsp_opfacts *f = &ts_tsp_opfacts[in->op];
    const tsp_layout *l = m->lay;
    int skind = l->kind[l->qslice[qi]];
    int need = f->unit == TSP_U_MEM ? TSP_S_MEM : f->unit == TSP_U_VXM ? TSP_S_VXM : f->unit == TSP_U_MXM ? TSP_S_MXM
             : f->unit == TSP_U_ICU ? -1 : TSP_S_SXM;
    const int32_t *a = in->a;
    int nops = ts_isa_nopnds(&ts_tsp_isa.ops[in->op]);
    if (need >= 0 && need != skind) {
        snprintf(why, sizeof why, "a %s instruction cannot issue from a %s queue", unit_names[f->unit],
                 slice_kinds[skind]);
        bad = why;
    }
    for (int j = 0; !bad && j < nops; j++)
        bad = check_opnd(m, in, j, f->classes[j], why, sizeof why);
    int type = !bad && f->classes[0] == 't' ? a[0] - TSP_REG_TYPE : -1;
    if (!bad && type >= 0 && (f->flags & TSP_F_INT) && is_float(type))
        bad = "it takes integer types only";
    if (!bad && type >= 0 && (f->flags & TSP_F_FLOAT) && !is_float(type))
        bad = "it takes floating-point types only";
    /* tags are small: 0 (untagged / accept any) .. 65535 */
    for (int j = 0; !bad && j < nops; j++)
        if (f->classes[j] == 'i' && j >= nops - 2 && f->unit != TSP_U_ICU && in->op != TSP_OP_LW &&
            in->op != TSP_OP_IW && in->op != TSP_OP_SHIFT && in->op != TSP_OP_ROTATE && in->op != TSP_OP_MASK &&
            in->op != TSP_OP_ABC && (a[j] < 0 || a[j] > 65535))
            bad = "a tag must be 0..65535";
    if (!bad) {
        switch (in->op) {
        case TSP_OP_NOP:
            if (a[0] < 1 || a[0] > 65535)
                bad = "nop takes 1..65535 cycles";
            break;
        case TSP_OP_REPEAT:
            if (pc == 0 || in[-1].op == TSP_OP_REPEAT)
                bad = "repeat must follow an instruction that is not a repeat";
            else if (a[0] < 0 || a[1] < 1)
                bad = "repeat takes n >= 0 copies, d >= 1 cycles apart";
            else if (in[-1].op == TSP_OP_SYNC || in[-1].op == TSP_OP_NOTIFY)
                bad = "sync and notify cannot be repeated";
            break;
        case TSP_OP_IFETCH:
            if (!group_ok(m, a[0], 2))
                bad = "ifetch reads an aligned stream pair";
            break;
        case TSP_OP_CONFIG:
            if (a[0] < 1 || (uint64_t)a[0] > m->cfg.superlanes)
                bad = "config takes 1..superlanes powered superlanes";
            break;
        case TSP_OP_READ:
        case TSP_OP_WRITE:
            if (a[0] < 0 || (uint32_t)a[0] >= m->words) {
                snprintf(why, sizeof why, "address %d is past the slice's %u words", a[0], m->words);
                bad = why;
            }
            break;
        case TSP_OP_CVT:
            if (!group_ok(m, a[2], tsp_type_width(a[0] - TSP_REG_TYPE)) ||
                !group_ok(m, a[3], tsp_type_width(a[1] - TSP_REG_TYPE)))
                bad = "a type wider than a byte needs an aligned group of streams";
            break;
        case TSP_OP_LW:
        case TSP_OP_IW:
        case TSP_OP_ABC:
            if (type != TSP_I8 && type != TSP_F16)
                bad = "the MXM takes i8 or f16";
            else if (in->op != TSP_OP_ABC && a[1] != TSP_REG_NUL &&
                     (a[2] < 1 || a[2] % (int32_t)tsp_type_width(type) ||
                      (uint32_t)(a[1] % TSP_MAX_STREAMS) + (uint32_t)a[2] > m->NS || !group_ok(m, a[1], tsp_type_width(type))))
                bad = "n must be a whole number of rows of aligned streams on chip";
            else if (in->op == TSP_OP_ABC && (a[2] < 0 || a[2] > 1))
                bad = "abc mode is 0 (replace) or 1 (accumulate)";
            else if (in->op == TSP_OP_ABC && !group_ok(m, a[1], tsp_type_width(type)))
                bad = "a type wider than a byte needs an aligned group of streams";
            else if (in->op == TSP_OP_ABC && (a[3] < 0 || a[3] > 65535 || a[4] < 0 || a[4] > 65535))
                bad = "a tag must be 0..65535";
            break;
        case TSP_OP_ACC:
            if (!group_ok(m, a[0], 4))
                bad = "acc writes an aligned group of 4 streams";
            break;
        case TSP_OP_PERMUTE:
            if (!group_ok(m, a[2], 2))
                bad = "the permute map is an aligned stream pair";
            break;
        case TSP_OP_TRANSPOSE:
            if (m->L != 16)
                bad = "transpose needs 16 lanes per superlane";
            else if (!group_ok(m, a[0], 16) || !group_ok(m, a[1], 16))
                bad = "transpose reads and writes aligned groups of 16 streams";
            break;
        case TSP_OP_SEND:
        case TSP_OP_RECEIVE:
            if (a[0] < 0 || (uint64_t)a[0] >= m->cfg.c2c_links)
                bad = "no such c2c link";
            break;
        default:
            if (f->unit == TSP_U_VXM && type >= 0) {
                uint32_t w = tsp_type_width(type);
                for (int j = 1; j < nops && !bad; j++)
                    if (strchr("da", f->classes[j]) && !group_ok(m, a[j], w))
                        bad = "a type wider than a byte needs an aligned group of streams";
            }
            break;
        }
    }
    if (!bad)
        return TS_OK;
    if (in->line)
        return ts_err_set(err, TS_EINPUT, "queue %u pc %u (line %u): '%s': %s", qi, pc, in->line,
                          ts_tsp_isa.ops[in->op].mnemonic, bad);
    return ts_err_set(err, TS_EINPUT, "queue %u pc %u: '%s': %s", qi, pc, ts_tsp_isa.ops[in->op].mnemonic, bad);
}

static ts_status tsp_load(ts_model *m, const ts_program *p, ts_err *err)
{
    ts_status rc;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->kind != TSP_KIND_QUEUE)
            return ts_err_set(err, TS_EINPUT, "program has a stream of kind %u; tsp programs have 'queue' streams only",
                              s->kind);
        if (s->index >= m->nq)
            return ts_err_set(err, TS_EINPUT, "program has a stream for queue %u, but the config has %u queues",
                              s->index, m->nq);
        for (uint32_t pc = 0; pc < s->n; pc++) {
            if (s->insn[pc].op >= TSP_OP_COUNT)
                return ts_err_set(err, TS_EINPUT, "queue %u pc %u: opcode %u is not a tsp instruction", s->index, pc,
                                  s->insn[pc].op);
            if ((rc = check_insn(m, s->index, pc, &s->insn[pc], err)) != TS_OK)
                return rc;
        }
        tsp_queue *q = &m->q[s->index];
        ts_free(q->dec);
        if (!(q->dec = ts_calloc(s->n ? s->n : 1, sizeof *q->dec)))
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        for (uint32_t pc = 0; pc < s->n; pc++) {
            const tsp_opfacts *fa = &ts_tsp_opfacts[s->insn[pc].op];
            tsp_dec *d = &q->dec[pc];
            d->unit = fa->unit;
            d->flags = fa->flags;
            d->ev = !fa->energy ? 0 : strcmp(fa->energy, "mul") ? 1 : 2;
            d->binary = fa->unit == TSP_U_VXM && fa->classes[3] == 'a';
            d->dfunc = (uint32_t)m->cfg.d_func[s->insn[pc].op];
            d->skew = (uint32_t)m->cfg.d_skew[fa->unit];
        }
        q->code = s->insn;
        q->n = s->n;
        q->pc = 0;
        q->fetched = s->n < m->cfg.icu_capacity ? s->n : (uint32_t)m->cfg.icu_capacity;
        q->state = s->n ? Q_RUN : Q_DONE;
    }
    if (m->trace) {
        m->trace_merge = trace_plan(m);
        ts_trace_process(m->trace, 0, "tsp");
        for (uint32_t qi = 0; qi < m->nq; qi++)
            if (m->q[qi].n) {
                char name[64], sl[32];
                ts_tsp_slice_name(m->lay, m->q[qi].slice, sl, sizeof sl);
                snprintf(name, sizeof name, "queue %u (%s)", qi, sl);
                ts_trace_thread(m->trace, 0, (int)qi + 1, name);
            }
    }
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        if (g->kind != TSP_KIND_MEM || g->index >= m->lay->nmem || g->addr + g->len > m->cfg.mem_slice_bytes)
            return ts_err_set(err, TS_EINPUT, "data segment for %s %u at 0x%" PRIx64 " (%u bytes) does not fit a MEM "
                              "slice: %u slices of %" PRIu64 " bytes", g->kind == TSP_KIND_MEM ? "mem" : "kind",
                              g->index, g->addr, g->len, m->lay->nmem, m->cfg.mem_slice_bytes);
        uint8_t *mem = mem_of(m, g->index, err);
        if (!mem)
            return TS_ENOMEM;
        memcpy(mem + g->addr, g->bytes, g->len);
    }
    return TS_OK;
}

/* ---- results ------------------------------------------------------------------------------ */

static ts_status tsp_collect(ts_model *m, ts_results *r, ts_err *err)
{
    const tsp_layout *l = m->lay;
    ts_stats *st = r->stats;
    ts_status rc = TS_OK;
    /* live stream-register slot-cycles: values still on chip after the end stop counting there */
    uint64_t occ = m->occ;
    for (int dir = 0; dir < 2; dir++)
        for (uint32_t s = 0; s < m->NS; s++)
            for (uint32_t slot = 0; slot < m->P; slot++)
                for (uint32_t k = 0; k < m->S; k++) {
                    size_t j = (((size_t)dir * m->NS + s) * m->P + slot) * m->S + k;
                    if (m->sr_birth[j] < 0)
                        continue;
                    uint64_t exit = (uint64_t)m->sr_birth[j] + sr_life(m, dir, m->sr_bpos[j]);
                    /* the value is still the slot's: it lived until exit unless the run ended first */
                    if (exit > m->now)
                        occ -= exit - m->now;
                }
    if (m->lockstep)
        occ = m->occ_scan;
    uint64_t rd = 0, wr = 0, insns = 0;
    for (uint32_t i = 0; i < l->nmem; i++) {
        rd += m->mem_rd[i];
        wr += m->mem_wr[i];
    }
    for (uint32_t i = 0; i < m->nq; i++)
        insns += m->q[i].issued;
    uint64_t macs = m->macs8 + m->macs16;
    r->cycles = m->now;
    r->clock_hz = m->cfg.clock_hz;
    snprintf(r->net_name, sizeof r->net_name, "streams");
    r->bytes[TS_LEVEL_SRAM] = rd + wr;
    r->bytes[TS_LEVEL_NET] = occ * m->L;
    r->bytes[TS_LEVEL_OFFCHIP] = m->offchip;
    r->macs = macs;
    r->flops = 2.0 * (double)m->macs16;
    /* VXM float work: one flop per element */
    for (int cls = 0; cls < 2; cls++)
        r->flops += m->ev[UK_VXM][TSP_F16][cls] + m->ev[UK_VXM][TSP_F32][cls] + m->ev[UK_MXM][TSP_F32][cls];
    uint64_t busy[TSP_S_COUNT] = {0};
    for (uint32_t s = 0; s < l->nslices; s++)
        busy[l->kind[s]] += m->slice_busy[s];
    uint64_t vxm_busy = 0;
    for (uint32_t i = l->q_vxm; i < l->q_mxm; i++)
        vxm_busy += m->q[i].busy;
    if (rc == TS_OK)
        rc = ts_results_util(r, "mxm", l->nmxm, m->mxm_busy, err);
    if (rc == TS_OK)
        rc = ts_results_util(r, "vxm", m->cfg.vxm_alus, vxm_busy, err);
    if (rc == TS_OK)
        rc = ts_results_util(r, "mem", l->nmem, busy[TSP_S_MEM], err);
    if (rc == TS_OK)
        rc = ts_results_util(r, "sxm", l->nsxm, busy[TSP_S_SXM], err);
    /* energy events (names from the shipped tables) */
    static const char *const tn[TSP_NTYPES] = {"int8", "int32", "int32", "fp16", "fp32"};
    if (rc == TS_OK && m->macs8)
        rc = ts_results_event(r, "int8_mac", (double)m->macs8, err);
    if (rc == TS_OK && m->macs16)
        rc = ts_results_event(r, "fp16_mac", (double)m->macs16, err);
    for (int u = 0; u < UK_COUNT && rc == TS_OK; u++)
        for (int t = 0; t < TSP_NTYPES && rc == TS_OK; t++)
            for (int c = 0; c < 2 && rc == TS_OK; c++)
                if (m->ev[u][t][c] > 0) {
                    char name[32];
                    snprintf(name, sizeof name, "%s_%s", tn[t], c ? "mul" : "add");
                    rc = ts_results_event(r, name, m->ev[u][t][c], err);
                }
    double wire = (double)occ * m->L * 8.0 * m->cfg.hop_m * 1e3;
    if (rc == TS_OK && rd)
        rc = ts_results_event(r, "sram_read_64b", (double)rd / 8.0, err);
    if (rc == TS_OK && wr)
        rc = ts_results_event(r, "sram_write_64b", (double)wr / 8.0, err);
    if (rc == TS_OK && m->reg_reads)
        rc = ts_results_event(r, "regfile_32b", (double)m->reg_reads / 4.0, err);
    if (rc == TS_OK && wire > 0)
        rc = ts_results_event(r, "wire_bit_mm", wire, err);
    if (rc == TS_OK && insns)
        rc = ts_results_event(r, "insn_issue", (double)insns, err);
    if (rc == TS_OK && m->offchip)
        rc = ts_results_event(r, "pcie_bit", 8.0 * (double)m->offchip, err);
    if (rc != TS_OK)
        return rc;

    /* family statistics */
    double *v = ts_calloc(l->nslices + m->nq + l->nmem + 1, sizeof *v);
    if (!v)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
#define CK(x) do { if (rc == TS_OK) rc = (x); } while (0)
    for (uint32_t s = 0; s < l->nslices; s++)
        v[s] = (double)m->slice_busy[s];
    CK(ts_stats_array(st, "slice.busy_cycles", "cycles", "cycles each slice (floorplan order, west to east) "
                      "dispatched an instruction into superlane 0", v, l->nslices));
    for (uint32_t s = 0; s < l->nslices; s++)
        v[s] = m->now ? (double)m->slice_busy[s] / (double)m->now : 0;
    CK(ts_stats_array(st, "slice.utilization", "", "busy cycles / cycles, per slice (floorplan order)", v,
                      l->nslices));
    for (uint32_t i = 0; i < l->nmem; i++)
        v[i] = (double)m->mem_rd[i];
    CK(ts_stats_array(st, "mem.bytes_read", "B", "bytes read per MEM slice (MEM numbering: west from the VXM, then east)",
                      v, l->nmem));
    for (uint32_t i = 0; i < l->nmem; i++)
        v[i] = (double)m->mem_wr[i];
    CK(ts_stats_array(st, "mem.bytes_written", "B", "bytes written per MEM slice (MEM numbering)", v, l->nmem));
    CK(ts_stats_u64(st, "mem.peak_bytes_per_cycle", "B", "most SRAM bytes read and written in one cycle", m->peak_bytes));
    for (uint32_t i = 0; i < m->nq; i++)
        v[i] = (double)m->q[i].issued;
    CK(ts_stats_array(st, "queue.instructions", "", "instructions issued per queue (repeats included)", v, m->nq));
    CK(ts_stats_u64(st, "queue.ifetches", "", "ifetch instructions issued", m->ifetches));
    uint64_t fetch_bytes = m->ifetches * m->cfg.icu_ifetch_bytes;
    CK(ts_stats_u64(st, "queue.ifetch_bytes", "B", "instruction text fetched", fetch_bytes));
    CK(ts_stats_f64(st, "queue.ifetch_share", "", "instruction text fetched / SRAM bytes (research §5: MPR puts it "
                    "below 10%)", rd + wr ? (double)fetch_bytes / (double)(rd + wr) : 0));
    CK(ts_stats_u64(st, "icu.barriers", "", "sync barriers released", m->barriers));
    CK(ts_stats_u64(st, "icu.last_release", "cycles", "cycle of the last barrier release", m->last_release));
    CK(ts_stats_u64(st, "icu.sweep_cycles", "cycles", "longest sweep of an instruction over the superlanes",
                    m->sweep_max));
    CK(ts_stats_u64(st, "icu.configs", "", "config instructions issued (low-power modes: counted only)", m->configs));
    CK(ts_stats_u64(st, "icu.powered_superlanes", "", "superlanes powered after the last config", (uint64_t)m->powered));
    CK(ts_stats_u64(st, "streams.live_slot_cycles", "", "stream-register slots holding a live value, summed over cycles",
                    occ));
    double slots = (double)m->nslots;
    CK(ts_stats_f64(st, "streams.occupancy", "", "mean fraction of stream-register slots holding a live value",
                    m->now ? (double)occ / (slots * (double)m->now) : 0));
    CK(ts_stats_u64(st, "streams.values_written", "", "vectors written into stream registers (per superlane)",
                    m->sr_writes));
    CK(ts_stats_u64(st, "streams.values_overwritten", "", "live values overwritten before reaching the chip edge",
                    m->sr_over));
    CK(ts_stats_u64(st, "mxm.macs", "", "multiply-accumulates in the MXM planes", macs));
    CK(ts_stats_u64(st, "mxm.macs_int8", "", "INT8 multiply-accumulates", m->macs8));
    CK(ts_stats_u64(st, "mxm.macs_fp16", "", "FP16 multiply-accumulates", m->macs16));
    CK(ts_stats_u64(st, "mxm.peak_macs_per_cycle", "", "most MACs in one cycle", m->peak_macs));
    CK(ts_stats_f64(st, "mxm.utilization", "", "plane-cycles of abc work / (planes x cycles)",
                    m->now && l->nmxm ? (double)m->mxm_busy / ((double)l->nmxm * (double)m->now) : 0));
    CK(ts_stats_u64(st, "mxm.install_cycles", "cycles",
                    "longest full weight install: first iw step to the last row in the last superlane", m->install_max));
    CK(ts_stats_u64(st, "c2c.bytes", "B", "bytes sent on chip-to-chip links", m->offchip));
    /* events per unit kind: energy per unit kind = count x the table's energy per event */
    for (int u = 0; u < UK_COUNT && rc == TS_OK; u++) {
        double add = 0, mul = 0;
        for (int t = 0; t < TSP_NTYPES; t++) {
            add += m->ev[u][t][0];
            mul += m->ev[u][t][1];
        }
        char name[48];
        if (u == UK_MXM) {
            snprintf(name, sizeof name, "events.mxm.macs");
            CK(ts_stats_f64(st, name, "", "int8_mac + fp16_mac events", (double)macs));
            snprintf(name, sizeof name, "events.mxm.accumulate");
            CK(ts_stats_f64(st, name, "", "accumulator adds (abc mode 1)", add));
        } else if (u == UK_VXM) {
            CK(ts_stats_f64(st, "events.vxm.add", "", "*_add events of the VXM", add));
            CK(ts_stats_f64(st, "events.vxm.mul", "", "*_mul events of the VXM", mul));
        }
    }
    CK(ts_stats_f64(st, "events.mem.sram_64b", "", "sram_read_64b + sram_write_64b events", (double)(rd + wr) / 8.0));
    CK(ts_stats_f64(st, "events.streams.wire_bit_mm", "", "wire_bit_mm events of stream hops", wire));
    CK(ts_stats_f64(st, "events.streams.regfile_32b", "", "regfile_32b events of operand reads",
                    (double)m->reg_reads / 4.0));
    CK(ts_stats_f64(st, "events.icu.insn_issue", "", "insn_issue events", (double)insns));
    CK(ts_stats_f64(st, "events.c2c.pcie_bit", "", "pcie_bit events of c2c sends", 8.0 * (double)m->offchip));
    for (int h = 0; h < HZ_COUNT; h++) {
        char name[48];
        snprintf(name, sizeof name, "hazards.%s", hz_names[h]);
        CK(ts_stats_u64(st, name, "", "schedule violations recorded (--warn)", m->hz[h]));
    }
    if (rc == TS_OK && m->nhz) {
        static const char *const cols[] = {"cycle", "kind", "superlane", "slice", "stream", "queue_a", "pc_a",
                                           "queue_b", "pc_b"};
        static const char *const units[] = {"cycles", "", "", "", "", "", "", "", ""};
        int t = ts_stats_table(st, "hazards", "first recorded schedule violations; kind: 0 collision, 1 no value, "
                               "2 bank conflict, 3 underrun, 4 resource; stream: register number; -1 none", 9, cols, units);
        if (t < 0)
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
        for (size_t i = 0; i < m->nhz && rc == TS_OK; i++)
            rc = ts_stats_row(st, t, m->hzrow[i].v);
    }
#undef CK
    ts_free(v);
    return rc;
}

static void tsp_blocked(ts_model *m, ts_buf *out)
{
    for (uint32_t i = 0; i < m->nq; i++) {
        const tsp_queue *q = &m->q[i];
        if (q->state == Q_PARKED)
            ts_buf_printf(out, "  queue %u: pc %u: parked at sync since cycle %" PRIu64 ", no notify pending\n", i,
                          q->pc, q->park);
    }
}

static ts_status tsp_info(const void *cfgp, ts_info *out, ts_err *err)
{
    const ts_tsp_cfg *c = cfgp;
    tsp_layout *l = ts_malloc(sizeof *l);
    if (!l)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_status rc = ts_tsp_layout(c, l, err);
    if (rc != TS_OK) {
        ts_free(l);
        return rc;
    }
    memset(out, 0, sizeof *out);
    uint64_t vl = c->superlanes * c->lanes;
    out->clock_hz = c->clock_hz;
    out->sram_bytes = l->nmem * c->mem_slice_bytes;
    const char *un[] = {"superlanes", "mem_slices", "mxm_planes", "sxms", "vxm_alus", "queues", "streams"};
    uint64_t uv[] = {c->superlanes, l->nmem, l->nmxm, l->nsxm, c->vxm_alus * vl, l->nqueues, 2 * c->streams};
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
        out->units[i].name = un[i];
        out->units[i].n = uv[i];
    }
    out->nunits = sizeof un / sizeof un[0];
    out->peak[0].dtype = "int8";
    out->peak[0].macs = (double)l->nmxm * (double)c->mxm_dim * (double)c->mxm_dim;
    out->peak[1].dtype = "fp16";
    out->peak[1].macs = out->peak[0].macs / (double)c->mxm_fp16_interval;
    out->npeak = 2;
    out->bw[0].name = "sram";
    out->bw[0].bytes_per_cycle = (double)l->nmem * (double)c->mem_banks * (double)vl; /* ISCA20 §II-B Eq. 1-2 */
    out->bw[1].name = "streams_per_hemisphere";
    out->bw[1].bytes_per_cycle = 2.0 * (double)c->streams * (double)vl; /* ISCA20 §II-B */
    out->bw[2].name = "ifetch";
    out->bw[2].bytes_per_cycle = (double)l->nqueues * 16.0; /* ISCA20 §II-B: 16 B per queue per cycle */
    out->nbw = 3;
    ts_free(l);
    return TS_OK;
}

const ts_family ts_tsp_family = {
    .name = "tsp",
    .schema = &ts_tsp_schema,
    .isa = &ts_tsp_isa,
    .info = tsp_info,
    .create = tsp_create,
    .load = tsp_load,
    .step = tsp_step,
    .collect = tsp_collect,
    .blocked = tsp_blocked,
    .destroy = tsp_destroy,
    .default_config = "tsp_v1",
    .default_workload = "tsp_default",
};

const uint8_t *ts_tsp_mem(const ts_model *m, int mem)
{
    return mem >= 0 && (uint32_t)mem < m->lay->nmem ? m->mem[mem] : NULL;
}

uint64_t ts_tsp_mem_hash(const ts_model *m)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < m->lay->nmem; i++) {
        if (!m->mem[i]) {
            h = (h ^ 0xffu) * 1099511628211ull; /* an untouched slice: all zeros */
            continue;
        }
        for (uint64_t b = 0; b < m->cfg.mem_slice_bytes; b++)
            h = (h ^ m->mem[i][b]) * 1099511628211ull;
    }
    return h;
}
