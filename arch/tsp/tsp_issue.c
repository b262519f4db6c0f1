/* arch/tsp/tsp_issue.c — the ICU and the cycle loop: instruction fetch (ifetch and its landing),
 * issue from the queues (nop, sync and notify, repeat, MEM read/write pairing), launching an
 * instruction into the superlanes, barrier releases, one cycle (commit, issue, step, abc), and
 * the loop that jumps from one event to the next (or visits every cycle in lockstep). The hot
 * path: the issue and the loop share this file so they inline. */
#include "arch/tsp/tsp_model.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activity.h"
#include "core/alloc.h"

/* ---- fetch -------------------------------------------------------------------------------- */

/* ifetch reads the text from a stream pair like any instruction; the queue's fetch port takes
 * icu.ifetch_bytes at icu.fetch_bytes_per_cycle (one fetch at a time), and the instructions can
 * issue from the cycle after the last byte is in (research §1.1, §1.8). */
static ts_status step_ifetch(ts_model *m, tsp_fl *f, ts_err *err)
{
    uint8_t tmp[64];
    ts_status rc;
    if (f->in.op != TSP_OP_IFETCH) /* the ICU's other instructions act at issue (issue_one) */
        return ts_tsp_no_case(m, f, err);
    for (int b = 0; b < 2; b++)
        if ((rc = ts_tsp_sr_read(m, f, f->in.a[0] + b, f->k, (uint32_t)f->in.a[1], tmp, err)) != TS_OK)
            return rc;
    if (f->k < m->S - 1)
        return TS_OK;
    tsp_queue *q = &m->q[f->q];
    uint64_t start = f->t0 + f->skew > q->fetch_free ? f->t0 + f->skew : q->fetch_free;
    uint64_t len = (m->cfg.icu_ifetch_bytes + m->cfg.icu_fetch_bpc - 1) / m->cfg.icu_fetch_bpc;
    uint64_t land = start + len - 1 > m->now ? start + len - 1 : m->now;
    q->fetch_free = start + len;
    if (q->nland == TSP_MAX_FETCHES) {
        rc = ts_tsp_hazard(m, err, HZ_RESOURCE, f->k, q->slice, f->in.a[0], q->land_prod[0], PROD(f->q, f->pc),
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
                ts_status rc =
                    ts_tsp_hazard(m, err, HZ_RESOURCE, 0, q->slice, -1, q->land_prod[0], PROD(qi, q->pc),
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
    f->pos = m->lay->pos[q->slice];
    f->num = m->lay->num[q->slice];
    f->in = *in;
    f->t0 = m->now;
    f->d = *d;
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
            ts_status rc = ts_tsp_hazard(m, err, HZ_RESOURCE, 0, q->slice, in->a[1], NOPROD, PROD(qi, pc),
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
            ts_status rc = ts_tsp_hazard(m, err, HZ_RESOURCE, 0, q->slice, in->a[0], NOPROD, PROD(qi, pc),
                                         "sxm busy: more than %" PRIu64 " transposes in flight",
                                         m->cfg.sxm_max_transposes);
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
    if (pc + 2 < q->n) { /* the queue's next instructions, read at its next issues */
        __builtin_prefetch(&q->code[pc + 2], 0);
        __builtin_prefetch(&q->dec[pc + 2], 0);
    }
    switch (in->op) {
    case TSP_OP_NOP:
        q->next = m->now + (uint64_t)in->a[0];
        ts_tsp_trace_insn(m, qi, "nop", "icu", m->now, (uint64_t)in->a[0]);
        break;
    case TSP_OP_SYNC:
        q->state = Q_PARKED;
        q->park = m->now;
        q->park_pc = pc;
        if (m->act)
            ts_tsp_act_on_park(m, qi);
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
            rc = ts_tsp_hazard(m, err, HZ_UNDERRUN, 0, q->slice, -1, pf, PROD(qi, q->pc),
                               "queue underrun: queue %u has run dry (its last ifetch is the first instruction "
                               "named)", qi);
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

/* One superlane step of the in-flight instruction f, by its unit. */
static ts_status step_one(ts_model *m, tsp_fl *f, ts_err *err)
{
    uint32_t s = m->q[f->q].slice;
    if (f->k == 0 && m->slice_last[s] != m->now + 1) { /* a dispatch into the slice this cycle */
        m->slice_last[s] = m->now + 1;
        m->slice_busy[s]++;
    }
    switch (f->d.unit) {
    case TSP_U_MEM: return ts_tsp_step_mem(m, f, err);
    case TSP_U_VXM: return ts_tsp_step_vxm(m, f, err);
    case TSP_U_MXM: return ts_tsp_step_mxm(m, f, err);
    case TSP_U_SXM: return ts_tsp_step_sxm(m, f, err);
    case TSP_U_C2C: return ts_tsp_step_c2c(m, f, err);
    case TSP_U_ICU: return step_ifetch(m, f, err);
    default: return ts_tsp_no_case(m, f, err);
    }
}

static void release_syncs(ts_model *m)
{
    for (size_t i = 0; i < m->nrel;) {
        if (m->releases[i] != m->now) {
            i++;
            continue;
        }
        if (m->act)
            ts_tsp_act_on_release(m);
        for (uint32_t qi = 0; qi < m->nq; qi++) {
            tsp_queue *q = &m->q[qi];
            if (q->state == Q_PARKED && q->park < m->now) {
                q->state = Q_RUN;
                q->next = m->now;
                ts_tsp_trace_insn(m, qi, "sync wait", "icu", q->park, m->now - q->park);
            }
        }
        m->barriers++;
        m->last_release = m->now;
        m->work++;
        m->releases[i] = m->releases[--m->nrel];
    }
}

/* Lockstep's count of live stream-register slots (the fast mode keeps it by events): every slot
 * once, in memory order, at the position sr_index maps it to this cycle (row = pos + k - now
 * eastward, pos + now - k westward, mod P), where a scan by position jumped a row per superlane. */
static void scan_occupancy(ts_model *m)
{
    uint64_t live = 0;
    uint32_t P = m->P, cp = m->now_p;
    size_t i = 0;
    for (int dir = 0; dir < 2; dir++)
        for (uint32_t s = 0; s < m->NS; s++)
            for (uint32_t row = 0; row < P; row++)
                for (uint32_t k = 0; k < m->S; k++, i++) {
                    uint32_t kp = k < P ? k : k % P;
                    uint32_t pos = dir == 0 ? row + cp + (P - kp) : row + kp + (P - cp); /* < 3P */
                    pos = pos >= 2 * P ? pos - 2 * P : pos >= P ? pos - P : pos;
                    live += sr_live(m, i, dir, pos, m->now);
                }
    m->occ_scan += live;
}

static ts_status cycle(ts_model *m, ts_err *err)
{
    ts_status rc;
    m->cyc_bytes = 0;
    m->cyc_macs = 0;
    release_syncs(m);
    if ((rc = ts_tsp_commit(m, err)) != TS_OK)
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
    if (m->capdue < m->nfl) {
        size_t *d = ts_realloc(m->due, m->nfl * sizeof *d);
        if (!d)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        m->due = d;
        m->capdue = m->nfl;
    }
    size_t ndue = 0; /* the instructions stepped this cycle, in issue order (no step launches one) */
    for (size_t i = 0; i < m->nfl; i++) {
        tsp_fl *f = &m->fl[i];
        if (!f->done && f->t0 + f->skew + f->k == m->now) {
            m->due[ndue++] = i;
            if ((rc = step_one(m, f, err)) != TS_OK)
                return rc;
        }
    }
    ts_tsp_run_jobs(m);
    for (size_t j = 0; j < m->njobs; j++) {
        tsp_fl *f = &m->fl[m->jobs[j]];
        if (f->k == m->S - 1 && (rc = ts_tsp_abc_finalize(m, f, err)) != TS_OK)
            return rc;
    }
    for (size_t di = 0; di < ndue; di++) {
        tsp_fl *f = &m->fl[m->due[di]];
        m->work++;
        if (m->act)
            ts_tsp_act_step(m, f);
        if (++f->k == m->S) {
            uint64_t sweep = m->now - (f->t0 + f->skew) + 1; /* first to last superlane step */
            if (m->trace) { /* from dispatch to the last superlane's result */
                uint64_t end = f->dfunc ? f->t0 + f->dfunc + m->S : m->now + 1;
                ts_tsp_trace_insn(m, f->q, ts_tsp_isa.ops[f->in.op].mnemonic, ts_tsp_unit_names[f->d.unit],
                                  f->t0, end - f->t0);
            }
            if (sweep > m->sweep_max)
                m->sweep_max = sweep;
            ts_free(f->buf);
            f->buf = NULL;
            f->done = true;
            m->nfl_done++;
        }
    }
    if (m->nfl_done * 2 > m->nfl) { /* compact, keeping the issue order */
        size_t keep = 0;
        for (size_t i = 0; i < m->nfl; i++)
            if (!m->fl[i].done)
                m->fl[keep++] = m->fl[i];
        m->nfl = keep;
        m->nfl_done = 0;
    }
    if (m->act && m->cyc_bytes)
        ts_activity_bytes(m->act, m->now, m->cyc_bytes);
    if (m->act)
        ts_tsp_act_cycle_flows(m);
    if (m->cyc_bytes > m->peak_bytes)
        m->peak_bytes = m->cyc_bytes;
    if (m->cyc_macs > m->peak_macs)
        m->peak_macs = m->cyc_macs;
    tsp_set_now(m, m->now + 1);
    return TS_OK;
}

static bool finished(const ts_model *m)
{
    if (m->nfl > m->nfl_done || m->npending)
        return false;
    for (uint32_t i = 0; i < m->nq; i++) {
        const tsp_queue *q = &m->q[i];
        if (q->state == Q_PARKED || q->rep_left || q->pc < q->n || q->next > m->now)
            return false;
    }
    return true;
}

/* The next cycle at which anything happens; UINT64_MAX if nothing ever will. Anything due by
 * now makes it now, so each scan stops at the first such (in a busy stretch, at once). */
static uint64_t next_event(const ts_model *m)
{
    uint64_t t = UINT64_MAX, now = m->now;
    if (m->npending) {
        const tsp_bucket *b = &m->wheel[now & m->wmask];
        if (b->n && b->cycle <= now)
            return now;
    }
    for (size_t i = 0; i < m->nfl; i++) {
        uint64_t c = m->fl[i].t0 + m->fl[i].skew + m->fl[i].k;
        if (!m->fl[i].done && c < t) {
            if (c <= now)
                return now;
            t = c;
        }
    }
    for (uint32_t i = 0; i < m->nq; i++) {
        const tsp_queue *q = &m->q[i];
        if (q->state == Q_RUN && (q->pc < q->n || q->rep_left) && q->next < t) {
            if (q->next <= now)
                return now;
            t = q->next;
        }
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
    return t < now ? now : t;
}

/* The host's PCIe bandwidth, bytes per second: GroqFlow's end-to-end estimate takes 24 GB/s each way
 * for the chip's PCIe Gen4 x16 (research §3, GroqFlow groqmodel.py; assumed: the TSP's own DMA rate
 * is not published). Its per-transfer 10 us is not counted (docs/tsp.md). */
#define TSP_PCIE_BYTES_PER_S 24e9

/* After a run of a batch: the outputs into their copies for run m->run. */
static void save_outputs(ts_model *m)
{
    for (size_t i = 0; i < m->nxout; i++) {
        const tsp_xfer *x = &m->xout[i];
        const uint8_t *mem = ts_tsp_mem(m, (int)x->slice);
        uint8_t *dst = x->bytes + (size_t)m->run * x->len;
        if (mem)
            memcpy(dst, mem + x->addr, x->len);
        else
            memset(dst, 0, x->len);
    }
}

/* A word of a host transfer: the cycle the host may move it from, and its first access in the next
 * run (from the run's start, plus 1; 0: none). */
typedef struct tsp_hword {
    uint64_t from, first;
} tsp_hword;

static int cmp_hword(const void *a, const void *b)
{
    const tsp_hword *x = a, *y = b;
    if (x->from != y->from)
        return x->from > y->from ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

/* The words of transfers x (run `sample`'s segments, or every one when sample is UINT32_MAX) one
 * after the other over PCIe, each from the cycle after the run's last access to it (the run's start
 * where it had none), of the words free the one the next run needs first: the earliest start of the
 * next run at which each word is moved before its first access in that run (0 where none is
 * accessed). *bytes counts them. */
static uint64_t host_start(ts_model *m, const tsp_xfer *x, size_t n, uint32_t sample, uint64_t *bytes, ts_err *err,
                           bool *oom)
{
    size_t nw = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        if (sample == UINT32_MAX || x[i].sample == sample)
            nw += (x[i].len + m->VL - 1) / m->VL;
    tsp_hword *t = ts_malloc((nw + 1) * sizeof *t);
    if (!t) {
        *oom = true;
        ts_err_set(err, TS_ENOMEM, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (sample != UINT32_MAX && x[i].sample != sample)
            continue;
        *bytes += x[i].len;
        for (uint64_t w = x[i].addr / m->VL; w * m->VL < x[i].addr + x[i].len; w++) {
            size_t j = (size_t)x[i].slice * m->words + w;
            t[k].from = m->mem_last[j] > m->run_start ? m->mem_last[j] : m->run_start;
            t[k++].first = m->mem_first[j];
        }
    }
    qsort(t, k, sizeof *t, cmp_hword);
    /* of the words free by then, the one the next run needs first (a min-heap by deadline, in h) */
    uint64_t *h = ts_malloc((k + 1) * sizeof *h);
    if (!h) {
        ts_free(t);
        *oom = true;
        ts_err_set(err, TS_ENOMEM, "out of memory");
        return 0;
    }
    double per = (double)m->VL * m->cfg.clock_hz / TSP_PCIE_BYTES_PER_S, done = (double)m->run_start, need = 0;
    size_t i = 0, nh = 0;
    while (i < k || nh) {
        if (!nh && done < (double)t[i].from)
            done = (double)t[i].from;
        for (; i < k && (double)t[i].from <= done; i++) { /* push: deadline first - 1, none last */
            uint64_t d = t[i].first ? t[i].first - 1 : UINT64_MAX;
            size_t c = nh++;
            for (; c && h[(c - 1) / 2] > d; c = (c - 1) / 2)
                h[c] = h[(c - 1) / 2];
            h[c] = d;
        }
        uint64_t d = h[0], last = h[--nh];
        size_t c = 0;
        for (size_t j; (j = 2 * c + 1) < nh; c = j) { /* pop */
            if (j + 1 < nh && h[j + 1] < h[j])
                j++;
            if (h[j] >= last)
                break;
            h[c] = h[j];
        }
        h[c] = last;
        done += per;
        if (d != UINT64_MAX && done - (double)d > need)
            need = done - (double)d;
    }
    ts_free(h);
    ts_free(t);
    return (uint64_t)ceil(need);
}

/* The next run of a batch (docs/tsp.md, *A batch run once per sample*). The host reads the outputs
 * back and writes the next sample's inputs and the words the run overwrote over PCIe, each direction
 * one word after the other, a word from the cycle after the run's last access to it, so overlapped
 * with the run where the words are dead; the next run starts when every word is moved before its
 * first access in that run (an output word read back before the run writes it again). Every queue then starts again
 * from its first instruction, its first entries preloaded as at the start; MEM, the planes' weights
 * and the latches keep what they hold. The wait is at least the stream-register positions, so no
 * value of the run before is still on a stream. */
static ts_status next_run(ts_model *m, ts_err *err)
{
    save_outputs(m);
    if (!m->run)
        m->first_run = m->now;
    uint64_t bytes = 0;
    bool oom = false;
    uint64_t rd = host_start(m, m->xout, m->nxout, UINT32_MAX, &bytes, err, &oom);
    uint64_t wr = oom ? 0 : host_start(m, m->xin, m->nxin, m->run + 1, &bytes, err, &oom);
    if (oom)
        return TS_ENOMEM;
    m->run++;
    for (size_t i = 0; i < m->nxin; i++) {
        const tsp_xfer *x = &m->xin[i];
        if (x->sample != m->run)
            continue;
        uint8_t *mem = ts_tsp_mem_of(m, x->slice, err);
        if (!mem)
            return TS_ENOMEM;
        memcpy(mem + x->addr, x->bytes, x->len);
    }
    uint64_t start = m->now + m->P;
    if (rd > start)
        start = rd;
    if (wr > start)
        start = wr;
    m->host_bytes += bytes;
    m->host_cycles += start - m->now;
    m->run_start = start;
    for (uint32_t i = 0; i < m->nq; i++) {
        tsp_queue *q = &m->q[i];
        if (!q->n)
            continue;
        q->pc = 0;
        q->fetched = q->n < m->cfg.icu_capacity ? q->n : (uint32_t)m->cfg.icu_capacity;
        q->state = Q_RUN;
        q->next = start;
        q->rep_left = 0;
        q->last_ifetch = 0;
        q->nland = 0;
        if (q->fetch_free < start)
            q->fetch_free = start;
    }
    return TS_OK; /* the cycles up to start pass as any idle stretch does (every one in lockstep) */
}

/* Cycles until the run finishes or the limit: from event to event, or every cycle in lockstep. */
static ts_status run_until(ts_model *m, uint64_t limit, ts_err *err)
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
                tsp_set_now(m, stop < limit ? stop : limit);
                if (m->act && m->now >= m->act_next) {
                    ts_status rc = ts_tsp_act_flush(m, m->now, false, err);
                    if (rc != TS_OK)
                        return rc;
                }
                continue;
            }
        }
        ts_status rc = cycle(m, err);
        if (rc == TS_OK && m->act && m->now >= m->act_next)
            rc = ts_tsp_act_flush(m, m->now, false, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

ts_status ts_tsp_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err)
{
    ts_status rc = run_until(m, limit, err);
    while (rc == TS_OK && m->now < limit && m->run + 1 < m->runs && finished(m)) {
        rc = next_run(m, err); /* a batch run once per sample: the next sample */
        if (rc == TS_OK)
            rc = run_until(m, limit, err);
    }
    if (rc != TS_OK)
        return rc;
    if (m->now < m->run_start)
        m->work++; /* the host's transfers between a batch's runs are progress (no hang) */
    st->now = m->now;
    st->work = m->work;
    st->done = finished(m) && m->run + 1 >= m->runs;
    if (st->done && m->runs > 1 && !m->outs_saved) {
        save_outputs(m);
        m->outs_saved = true;
    }
    if (st->done && m->trace)
        for (uint32_t qi = 0; qi < m->nq; qi++)
            ts_tsp_trace_flush(m, qi);
    if (st->done && m->act) {
        rc = ts_tsp_act_flush(m, m->now, true, err);
        m->act = NULL; /* recorded to the end */
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}
