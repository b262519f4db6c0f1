/* tests/toy/toy.c — the toy family: N tiles, one instruction per cycle, messages with a fixed
 * latency, a global sync barrier. Small, but it has everything the kernel must handle: idle
 * cycles to skip (wait), units blocked on others (recv, sync), hangs, out-of-range accesses, and a
 * lockstep mode whose results must equal the fast mode's. */
#include "tests/toy/toy.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "tests/toy/toy_isa.h"

typedef struct toy_cfg {
    uint64_t tiles;
    double clock_hz;
    uint64_t mem_bytes;
    uint64_t send_latency;
    uint64_t sync_latency;
    bool work_at; /* report the cycle of the latest work with each step */
} toy_cfg;

static const ts_cfg_key toy_keys[] = {
    {"tiles", TS_CFG_UINT, TS_UNIT_NONE, 1, 4096, "4", "number of tiles", offsetof(toy_cfg, tiles), NULL},
    {"clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 1e6, 1e10, "1 GHz", "clock", offsetof(toy_cfg, clock_hz), NULL},
    {"tile.memory", TS_CFG_UINT, TS_UNIT_BYTES, 4, 1 << 20, "1 KiB", "memory per tile",
     offsetof(toy_cfg, mem_bytes), NULL},
    {"send_latency", TS_CFG_UINT, TS_UNIT_CYCLES, 1, 1000, "3", "cycles from send to arrival",
     offsetof(toy_cfg, send_latency), NULL},
    {"sync_latency", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 1000, "10", "cycles from the last tile's sync to release",
     offsetof(toy_cfg, sync_latency), NULL},
    {"work_at", TS_CFG_BOOL, TS_UNIT_NONE, 0, 0, "false", "tell the kernel the cycle of the latest work",
     offsetof(toy_cfg, work_at), NULL},
};

static const ts_schema toy_schema = {
    .arch = "toy", .title = "test-only toy family", .keys = toy_keys,
    .nkeys = sizeof toy_keys / sizeof toy_keys[0], .size = sizeof(toy_cfg), .check = NULL,
};

const ts_schema *ts_toy_schema_lookup(const char *arch)
{
    return strcmp(arch, "toy") ? NULL : &toy_schema;
}

enum { RUN, WAIT, RECV, SYNC, HALT };

#define INBOX 16

typedef struct toy_tile {
    const ts_insn *code;
    uint32_t n, pc;
    int state;
    uint64_t until;          /* WAIT: cycle to resume */
    int32_t r[8];
    uint8_t *mem;
    uint64_t arrive[INBOX];  /* inbox: arrival cycles and values, FIFO */
    int32_t val[INBOX];
    unsigned head, count;
    uint64_t busy, insns;
} toy_tile;

struct ts_model {
    toy_cfg cfg;
    bool lockstep;
    uint64_t now, work, release; /* release: cycle a pending sync lets tiles go, 0 = none */
    uint64_t work_at;            /* cycle of the latest work */
    uint64_t syncs, messages;
    toy_tile *t;
};

static ts_status toy_info(const void *cfgp, ts_info *out, ts_err *err)
{
    const toy_cfg *c = cfgp;
    (void)err;
    memset(out, 0, sizeof *out);
    out->clock_hz = c->clock_hz;
    out->sram_bytes = c->tiles * c->mem_bytes;
    out->units[0].name = "tiles";
    out->units[0].n = c->tiles;
    out->nunits = 1;
    out->peak[0].dtype = "int32";
    out->peak[0].macs = 0;
    out->npeak = 1;
    out->bw[0].name = "message";
    out->bw[0].bytes_per_cycle = 4.0 * (double)c->tiles;
    out->nbw = 1;
    return TS_OK;
}

static void toy_destroy(ts_model *m)
{
    if (!m)
        return;
    if (m->t)
        for (uint64_t i = 0; i < m->cfg.tiles; i++)
            ts_free(m->t[i].mem);
    ts_free(m->t);
    ts_free(m);
}

static ts_status toy_create(ts_model **out, const ts_config *cfg, const ts_run_opts *opts, ts_err *err)
{
    ts_model *m = ts_calloc(1, sizeof *m);
    if (!m)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    m->cfg = *(const toy_cfg *)ts_config_data(cfg);
    m->lockstep = opts->lockstep;
    m->t = ts_calloc(m->cfg.tiles, sizeof *m->t);
    if (!m->t) {
        toy_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < m->cfg.tiles; i++) {
        m->t[i].mem = ts_calloc(1, m->cfg.mem_bytes);
        m->t[i].state = HALT; /* tiles without a stream do nothing */
        if (!m->t[i].mem) {
            toy_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        }
    }
    *out = m;
    return TS_OK;
}

static ts_status toy_load(ts_model *m, const ts_program *p, ts_err *err)
{
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->index >= m->cfg.tiles)
            return ts_err_set(err, TS_EINPUT, "program has a stream for tile %u, but the config has %" PRIu64 " tiles",
                              s->index, m->cfg.tiles);
        toy_tile *t = &m->t[s->index];
        t->code = s->insn;
        t->n = s->n;
        t->state = s->n ? RUN : HALT;
    }
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        if (g->index >= m->cfg.tiles || g->addr + g->len > m->cfg.mem_bytes)
            return ts_err_set(err, TS_EINPUT, "data segment for tile %u at 0x%" PRIx64 " does not fit its memory",
                              g->index, g->addr);
        memcpy(m->t[g->index].mem + g->addr, g->bytes, g->len);
    }
    return TS_OK;
}

/* Execute one instruction of tile i at cycle m->now. */
static ts_status exec(ts_model *m, uint32_t i, ts_err *err)
{
    toy_tile *t = &m->t[i];
    if (t->pc >= t->n) {
        t->state = HALT;
        return TS_OK;
    }
    const ts_insn *in = &t->code[t->pc];
    const int32_t *a = in->a;
    uint32_t next = t->pc + 1;
    t->busy++;
    t->insns++;
    m->work++, m->work_at = m->now;
    switch (in->op) {
    case TOY_OP_NOP: break;
    case TOY_OP_LI: t->r[a[0]] = a[1]; break;
    case TOY_OP_FLI: t->r[a[0]] = a[1]; break;
    case TOY_OP_ADD: t->r[a[0]] = (int32_t)((uint32_t)t->r[a[1]] + (uint32_t)t->r[a[2]]); break;
    case TOY_OP_ADDI: t->r[a[0]] = (int32_t)((uint32_t)t->r[a[1]] + (uint32_t)a[2]); break;
    case TOY_OP_LD:
    case TOY_OP_ST: {
        int64_t addr = (int64_t)t->r[a[1]] + a[2];
        if (addr < 0 || addr + 4 > (int64_t)m->cfg.mem_bytes || addr % 4)
            return ts_err_sim(err, i, (int64_t)m->now, "%s at pc %u: address %" PRId64 " is %s",
                              in->op == TOY_OP_LD ? "load" : "store", t->pc, addr,
                              addr % 4 ? "misaligned" : "out of range");
        if (in->op == TOY_OP_LD)
            memcpy(&t->r[a[0]], t->mem + addr, 4);
        else
            memcpy(t->mem + addr, &t->r[a[0]], 4);
        break;
    }
    case TOY_OP_BR: next = (uint32_t)a[0]; break;
    case TOY_OP_BNZ: if (t->r[a[0]]) next = (uint32_t)a[1]; break;
    case TOY_OP_SEND: {
        if (a[1] < 0 || (uint64_t)a[1] >= m->cfg.tiles)
            return ts_err_sim(err, i, (int64_t)m->now, "send at pc %u: no tile %d", t->pc, a[1]);
        toy_tile *d = &m->t[a[1]];
        if (d->count == INBOX)
            return ts_err_sim(err, a[1], (int64_t)m->now, "inbox full: tile %u sent one message too many", i);
        unsigned k = (d->head + d->count++) % INBOX;
        d->arrive[k] = m->now + m->cfg.send_latency;
        d->val[k] = t->r[a[0]];
        m->messages++;
        break;
    }
    case TOY_OP_RECV: t->state = RECV; t->until = (uint64_t)a[0]; break; /* until holds rd */
    case TOY_OP_SYNC: t->state = SYNC; break;
    case TOY_OP_WAIT:
        if (a[0] > 1) {
            t->state = WAIT;
            t->until = m->now + (uint64_t)a[0];
        }
        break;
    case TOY_OP_HALT: t->state = HALT; break;
    default:
        return ts_err_set(err, TS_EINTERNAL, "toy: opcode %u has no executor", in->op);
    }
    if (in->op != TOY_OP_HALT)
        t->pc = next;
    return TS_OK;
}

/* Advance every tile by one cycle: read -> evaluate -> write is trivial here because messages
 * carry a latency >= 1, so no tile sees another's write of the same cycle. */
static ts_status cycle(ts_model *m, ts_err *err)
{
    uint64_t ntiles = m->cfg.tiles, live = 0, at_sync = 0;
    for (uint32_t i = 0; i < ntiles; i++) {
        toy_tile *t = &m->t[i];
        if (t->state == WAIT && m->now >= t->until)
            t->state = RUN;
        if (t->state == RECV && t->count && t->arrive[t->head] <= m->now) {
            t->r[t->until] = t->val[t->head];
            t->head = (t->head + 1) % INBOX;
            t->count--;
            t->state = RUN;
            m->work++, m->work_at = m->now;
            continue; /* the receive completes this cycle */
        }
        if (t->state == RUN) {
            ts_status rc = exec(m, i, err);
            if (rc != TS_OK)
                return rc;
        }
    }
    for (uint32_t i = 0; i < ntiles; i++) {
        live += m->t[i].state != HALT;
        at_sync += m->t[i].state == SYNC;
    }
    if (live && at_sync == live) {
        if (!m->release)
            m->release = m->now + 1 + m->cfg.sync_latency;
        if (m->now + 1 >= m->release) {
            for (uint32_t i = 0; i < ntiles; i++)
                if (m->t[i].state == SYNC)
                    m->t[i].state = RUN;
            m->release = 0;
            m->syncs++;
            m->work++, m->work_at = m->now;
        }
    }
    m->now++;
    return TS_OK;
}

/* The next cycle at which anything can change, for the fast mode. */
static uint64_t next_event(const ts_model *m)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < m->cfg.tiles; i++) {
        const toy_tile *t = &m->t[i];
        uint64_t c = UINT64_MAX;
        if (t->state == RUN)
            return m->now;
        if (t->state == WAIT)
            c = t->until;
        else if (t->state == RECV && t->count)
            c = t->arrive[t->head];
        if (c < next)
            next = c;
    }
    if (m->release && m->release - 1 < next)
        next = m->release - 1;
    return next < m->now ? m->now : next;
}

static bool all_halted(const ts_model *m)
{
    for (uint32_t i = 0; i < m->cfg.tiles; i++)
        if (m->t[i].state != HALT)
            return false;
    return true;
}

static ts_status toy_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err)
{
    while (m->now < limit && !all_halted(m)) {
        if (!m->lockstep) {
            uint64_t n = next_event(m);
            if (n > m->now) {
                m->now = n < limit ? n : limit;
                continue;
            }
        }
        ts_status rc = cycle(m, err);
        if (rc != TS_OK)
            return rc;
    }
    st->now = m->now;
    st->work = m->work;
    st->done = all_halted(m);
    st->has_work_at = m->cfg.work_at;
    st->work_at = m->work_at;
    return TS_OK;
}

static ts_status toy_collect(ts_model *m, ts_results *r, ts_err *err)
{
    uint64_t busy = 0, insns = 0;
    for (uint32_t i = 0; i < m->cfg.tiles; i++) {
        busy += m->t[i].busy;
        insns += m->t[i].insns;
    }
    r->cycles = m->now;
    r->clock_hz = m->cfg.clock_hz;
    snprintf(r->net_name, sizeof r->net_name, "messages");
    r->bytes[TS_LEVEL_NET] = 4 * m->messages;
    ts_status rc = ts_results_util(r, "tile", m->cfg.tiles, busy, err);
    if (rc == TS_OK)
        rc = ts_results_event(r, "insn_issue", (double)insns, err);
    if (rc == TS_OK)
        rc = ts_results_event(r, "int32_add", (double)insns, err);
    if (rc == TS_OK)
        rc = ts_stats_u64(r->stats, "syncs", "", "global barriers passed", m->syncs);
    if (rc == TS_OK)
        rc = ts_stats_u64(r->stats, "messages", "", "messages sent", m->messages);
    return rc;
}

static void toy_blocked(ts_model *m, ts_buf *out)
{
    static const char *const why[] = {"running", "waiting", "waiting to receive a message", "waiting at sync",
                                      "halted"};
    for (uint32_t i = 0; i < m->cfg.tiles; i++)
        if (m->t[i].state != HALT && m->t[i].state != RUN)
            ts_buf_printf(out, "  tile %u: pc %u: %s\n", i, m->t[i].pc, why[m->t[i].state]);
}

const ts_family ts_toy_family = {
    .name = "toy",
    .schema = &toy_schema,
    .isa = &ts_toy_isa,
    .info = toy_info,
    .create = toy_create,
    .load = toy_load,
    .step = toy_step,
    .collect = toy_collect,
    .blocked = toy_blocked,
    .destroy = toy_destroy,
    .default_config = NULL,
    .default_workload = NULL,
};
