/* arch/wse/wse_pe.c — a PE in each cycle: its router and its core in phase A, its commit in phase
 * B, and whether it is evaluated again next cycle (research/cerebras_wse.md §1 the core, §2 the
 * router).
 *
 * Every cycle runs in two phases over the active tiles (research/cerebras_wse.md §8.2 item 1):
 *   A  read committed state, decide: routers forward queue heads into their output delay lines,
 *      cores issue one instruction and advance their vector ops; pops are only recorded;
 *   B  commit: pops are applied, wavelets whose delay is over are pushed into the next queue (only
 *      the single upstream producer writes a queue's tail), tiles pushed to are woken.
 * A producer sees a consumer's pops of cycle t at t + 1 (credit return takes one cycle). Nothing in
 * phase A reads what another tile writes in phase A, and nothing in phase B reads what another tile
 * writes in phase B, so the order of tiles and the number of threads cannot change any result.
 * After its commit a tile stays active, sleeps on a timer until a known cycle, sleeps blocked until
 * a push or a pop wakes it, or leaves the active set with nothing left to do. The router, the core
 * and the commit are in this one file so that the compiler inlines them into one loop over the
 * active tiles (measured: each in a file of its own, bench_wse_sinks ran 5% more host
 * instructions); vector ops are in wse_vec.c.
 */
#include "arch/wse/wse_inline.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/alloc.h"
#include "core/half.h"

/* ------------------------------------------------------------------------------------------ */
/* phase A: router */

/* Forward queue heads: input ports in round-robin order, and in each port its colours in
 * round-robin order; a multicast goes only when every output it needs is free this cycle and has
 * room downstream. pm has bit p set when input port p holds wavelets. */
static inline __attribute__((always_inline)) void router_eval(ts_model *m, wse_tile *t, wse_band *b, uint32_t pm)
{
    uint8_t claimed = 0;
    uint32_t moved = 0; /* input ports that forwarded */
    bool fixed = m->c.arbitration == WSE_ARB_FIXED;
    int lastp = -1;
    /* ports with wavelets from rr up, then below rr: the mask rotated right by rr, so bit k is port
     * rr + k (mod 5); bit loops, no division, no idle port visited */
    uint32_t rr = fixed ? 0 : t->rr;
    uint32_t rot = ((pm >> rr) | (pm << (WSE_NPORTS - rr))) & WSE_PORT_MASK_ALL;
    for (; rot; rot &= rot - 1) {
        int p = __builtin_ctz(rot) + (int)rr;
        p -= p >= WSE_NPORTS ? WSE_NPORTS : 0;
        /* colours from start up, then below start: the colour mask rotated right by start within
         * the C colours, so bit k is colour start + k (mod C); a port with one colour (a stream) has
         * one order */
        uint64_t cm = t->cbits[p];
        uint32_t start = 0;
        uint64_t rotc = cm;
        if (cm & (cm - 1)) {
            start = fixed ? 0 : t->rrc[p];
            rotc = (cm >> start | cm << (m->C - start)) & ((1ull << m->C) - 1);
        }
        for (; rotc; rotc &= rotc - 1) {
            uint32_t c = (uint32_t)__builtin_ctzll(rotc) + start;
            c -= c >= m->C ? m->C : 0;
            uint8_t j = t->qmap[(uint32_t)p * m->C + c];
            wse_lq *q = &t->lq[j];
            uint32_t occ = q_occ(q);
            if (!occ) {
                t->cbits[p] &= ~(1u << c);
                continue;
            }
            if (q->taken)
                continue;
            wse_route *r = &t->route[c];
            uint32_t dst = 0;
            uint8_t tx;
            if (c < m->vcs) { /* routed by destination */
                dst = q->dst[q->rd];
                tx = m->c.routing == WSE_ROUTE_WESTFIRST ? dest_tx_adaptive(m, t, dst, c) : dest_tx(m, t, dst, c);
            } else {
                if (!(r->rx[r->pos] >> p & 1))
                    continue;
                tx = r->tx[r->pos];
            }
            if (!tx || (tx & claimed))
                continue;
            bool ok = true;
            for (uint32_t ob = tx; ob && ok; ob &= ob - 1)
                ok = line_room(m, t, __builtin_ctz(ob), c);
            if (!ok)
                continue;
            bool ctrl;
            uint32_t data = q_head(q, &ctrl);
            for (uint32_t ob = tx; ob; ob &= ob - 1) {
                int o = __builtin_ctz(ob);
                line_put(m, t, o, data, c, ctrl, dst, b->now);
                t->s.link[o]++;
            }
            claimed |= tx;
            moved |= 1u << p;
            q_pop(t, j);
            /* room again: the neighbour feeding it may sleep on it. Its room test (line_room)
             * counts the wavelets still on its line too, at most hop - 1 of them when it last
             * looked (hop: fabric.hop_latency plus the router stages), so it may have blocked
             * with as few as cap - hop + 1 here: wake it on any pop from that level up (only on
             * a full queue when a hop takes a cycle) */
            if (p < 4 && occ + m->hop > q->cap)
                t->wup |= (uint8_t)(1u << p);
            if (occ == 1)
                t->cbits[p] &= ~(1u << c); /* a push this cycle sets it again next cycle */
            t->pcolour[c]++;
            if (ctrl && r->npos > 1) {
                if (r->pos + 1 < r->npos)
                    r->pos++;
                else if (r->ring)
                    r->pos = 0;
            }
            b->progress++;
            lastp = p;
            t->rrc[p] = (uint8_t)(c + 1 == m->C ? 0 : c + 1);
        }
    }
    if (lastp >= 0) {
        t->s.router_busy++;
        t->rr = (uint8_t)(lastp + 1 == WSE_NPORTS ? 0 : lastp + 1);
    }
    t->pstall = (uint8_t)(pm & ~moved);
    for (uint32_t st = t->pstall; st; st &= st - 1)
        t->s.port_stall[__builtin_ctz(st)]++;
}

/* ------------------------------------------------------------------------------------------ */
/* phase A: core */

void ts_wse_set_err(wse_band *b, wse_tile *t, uint64_t now, const char *fmt, ...)
{
    if (b->err_st && b->err_tile <= (int64_t)t->id)
        return;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    b->err_st = TS_ESIM;
    b->err_tile = t->id;
    ts_err_sim(&b->err, t->id, (int64_t)now, "PE (%u, %u): %s", t->x, t->y, msg);
}

/* Pick the next task: lowest id among runnable ones (assumed: the priority order is not public). */
static int pick_task(const ts_model *m, wse_tile *t, uint32_t pend5)
{
    wse_ce *ce = t->ce;
    uint64_t ready = ce->active & ~ce->blocked & ce->bound;
    uint64_t data = pend5 ? ce->data_task & ~ce->blocked : 0;
    while (data) {
        int c = __builtin_ctzll(data);
        data &= data - 1;
        uint8_t j = t->qmap[5 * m->C + (uint32_t)c];
        if (j == WSE_NOQ)
            continue;
        wse_lq *q = &t->lq[j];
        bool ctrl = false;
        if (q_occ(q) && !q->taken && (q_head(q, &ctrl), !ctrl))
            ready |= 1ull << c;
    }
    return ready ? __builtin_ctzll(ready) : -1;
}

static void start_task(ts_model *m, wse_tile *t, wse_band *b, int id)
{
    wse_ce *ce = t->ce;
    ce->task = id;
    ce->pc = ce->task_pc[id];
    ce->effects++; /* a task's start is no state its own instructions made (core/loopmark.h) */
    if (ce->data_task >> id & 1) {
        uint8_t j = t->qmap[5 * m->C + (uint32_t)id];
        bool ctrl;
        ce->r[0] = (int32_t)q_head(&t->lq[j], &ctrl);
        q_pop(t, j);
    } else {
        ce->active &= ~(1ull << id);
    }
    t->s.tasks++;
    if (m->c.task_start_latency) {
        ce->state = CE_START;
        ce->until = b->now + m->c.task_start_latency;
    } else {
        ce->state = CE_RUN;
    }
}

/* A taken branch back: the run stops when the core's state comes back with no effect since
 * (core/loopmark.h). A busy vector thread counts as an effect: it moves data as the core loops. */
static bool endless(wse_tile *t, wse_band *b, uint32_t pc)
{
    wse_ce *ce = t->ce;
    if (ce->vbusy)
        ce->effects++;
    int k = ts_loop_step(&ce->loop, pc, (const uint32_t *)ce->r, WSE_NREGS, 0);
    if (k == TS_LOOP_PASS || !ts_loop_settle(&ce->loop, k, pc, (const uint32_t *)ce->r, WSE_NREGS, ce->effects, b->now))
        return false;
    ts_wse_set_err(b, t, b->now, "endless loop at pc %u: this branch comes back to the state it had at cycle %" PRIu64
                   " (every register the same, nothing stored, sent, received or started since), so it repeats "
                   "forever", pc, ce->loop.at);
    return true;
}

/* A wavelet from the core onto the ramp (send, sendc, sendto; dst for destination routing): false,
 * stalled on the ramp (*why 2), when it took a wavelet this cycle or the router's queue has no room. */
static inline bool send_up(ts_model *m, wse_tile *t, const wse_band *b, uint32_t c, uint32_t data, bool ctrl,
                           uint32_t dst, bool *ramp_up, uint8_t *why)
{
    if (*ramp_up || !line_room(m, t, WSE_LINE_UP, c)) {
        *why = 2;
        return false;
    }
    line_put(m, t, WSE_LINE_UP, data, c, ctrl, dst, b->now);
    *ramp_up = true;
    t->s.injected++;
    return true;
}

/* Execute the instruction at pc. Returns 1 if issued, 0 if stalled (reason in *why). */
static inline __attribute__((always_inline)) int exec_insn(ts_model *m, wse_tile *t, wse_band *b, uint32_t *rd, uint32_t *wr, bool *ramp_up, uint8_t *why)
{
    wse_ce *ce = t->ce;
    uint32_t pc = ce->pc;
    if (pc >= ce->code->n) { /* falling off the end ends the task */
        ce->effects++;
        ce->state = CE_IDLE;
        if (ce->task == -1)
            ce->main_done = true;
        ce->task = -2;
        return 1;
    }
    const ts_insn *in = &ce->code->insn[pc];
    const int32_t *a = in->a;
    int32_t *r = ce->r;
    uint32_t next = pc + 1;
    const wse_opfacts *f = &ts_wse_opfacts[in->op];
    switch (in->op) {
    case WSE_OP_NOP: break;
    case WSE_OP_LI:
    case WSE_OP_FLI: r[a[0]] = a[1]; break;
    case WSE_OP_MOV: r[a[0]] = r[a[1]]; break;
    case WSE_OP_ADD: r[a[0]] = (int32_t)((uint32_t)r[a[1]] + (uint32_t)r[a[2]]); break;
    case WSE_OP_ADDI: r[a[0]] = (int32_t)((uint32_t)r[a[1]] + (uint32_t)a[2]); break;
    case WSE_OP_SUB: r[a[0]] = (int32_t)((uint32_t)r[a[1]] - (uint32_t)r[a[2]]); break;
    case WSE_OP_MUL: r[a[0]] = (int32_t)((uint32_t)r[a[1]] * (uint32_t)r[a[2]]); break;
    case WSE_OP_GET: {
        uint32_t v[5] = {t->x, t->y, m->w, m->h, (uint32_t)b->now};
        r[a[0]] = (int32_t)v[a[1]];
        break;
    }
    case WSE_OP_FADD: r[a[0]] = (int32_t)bits_of(f32_of((uint32_t)r[a[1]]) + f32_of((uint32_t)r[a[2]])); break;
    case WSE_OP_FSUB: r[a[0]] = (int32_t)bits_of(f32_of((uint32_t)r[a[1]]) - f32_of((uint32_t)r[a[2]])); break;
    case WSE_OP_FMUL: r[a[0]] = (int32_t)bits_of(f32_of((uint32_t)r[a[1]]) * f32_of((uint32_t)r[a[2]])); break;
    case WSE_OP_FH2S: r[a[0]] = (int32_t)bits_of(ts_f16_to_f32((uint16_t)((uint32_t)r[a[1]] >> (a[2] ? 16 : 0)))); break;
    case WSE_OP_LD:
    case WSE_OP_ST: {
        int64_t addr = (int64_t)r[a[1]] + a[2];
        if (addr < 0 || (uint64_t)addr + 4 > m->c.sram_bytes || addr % 4) {
            ts_wse_set_err(b, t, b->now, "%s at pc %u: address %" PRId64 " is %s", in->op == WSE_OP_LD ? "ld" : "st",
                           pc, addr, addr % 4 ? "not 4-byte aligned" : "outside the SRAM");
            return 1;
        }
        if (in->op == WSE_OP_LD) {
            if (*rd < 4) {
                *why = 3;
                return 0;
            }
            *rd -= 4;
            t->s.sram_rd += 4;
            r[a[0]] = m->c.timing_only ? 0 : (int32_t)ld32(t, (uint64_t)addr);
        } else {
            if (*wr < 4) {
                *why = 3;
                return 0;
            }
            *wr -= 4;
            t->s.sram_wr += 4;
            if (!m->c.timing_only) {
                uint8_t *mem = mem_touch(m, t);
                if (!mem) {
                    b->oom = true;
                    return 1;
                }
                memcpy(mem + addr, &r[a[0]], 4);
            }
        }
        break;
    }
    case WSE_OP_BR: next = (uint32_t)a[0]; break;
    case WSE_OP_BZ: if (!r[a[0]]) next = (uint32_t)a[1]; break;
    case WSE_OP_BNZ: if (r[a[0]]) next = (uint32_t)a[1]; break;
    case WSE_OP_BLT: if (r[a[0]] < r[a[1]]) next = (uint32_t)a[2]; break;
    case WSE_OP_WAIT:
        if (a[0] > 1) {
            ce->state = CE_WAIT;
            ce->until = b->now + (uint64_t)a[0];
        }
        break;
    case WSE_OP_ACTIVATE: ce->active |= 1ull << a[0]; break;
    case WSE_OP_BLOCK: ce->blocked |= 1ull << a[0]; break;
    case WSE_OP_UNBLOCK: ce->blocked &= ~(1ull << a[0]); break;
    case WSE_OP_EXIT:
        if (ce->task == -1)
            ce->main_done = true;
        ce->task = -2;
        ce->state = CE_IDLE;
        break;
    case WSE_OP_SEND:
    case WSE_OP_SENDC:
        if (!send_up(m, t, b, (uint32_t)a[0], (uint32_t)r[a[1]], in->op == WSE_OP_SENDC, 0, ramp_up, why))
            return 0;
        break;
    case WSE_OP_SENDTO: {
        uint32_t d = (uint32_t)r[a[1]];
        if (d >= m->npes) {
            ts_wse_set_err(b, t, b->now, "sendto at pc %u: PE %u is outside the %u x %u mesh", pc, d, m->w, m->h);
            return 1;
        }
        if (!send_up(m, t, b, (uint32_t)a[0], (uint32_t)r[a[2]], false, d % m->w | d / m->w << 12, ramp_up, why))
            return 0;
        break;
    }
    case WSE_OP_RECV: {
        uint8_t j = t->qmap[5 * m->C + (uint32_t)a[1]];
        wse_lq *q = &t->lq[j];
        bool ctrl = false;
        if (!q_occ(q) || q->taken || (q_head(q, &ctrl), ctrl)) {
            *why = 1;
            return 0;
        }
        r[a[0]] = (int32_t)q_head(q, &ctrl);
        q_pop(t, j);
        break;
    }
    case WSE_OP_DSDM:
        ce->dsd[a[0]] = (wse_dsd){.kind = DSD_MEM, .base = a[1], .len = (uint32_t)a[2], .stride = a[3]};
        break;
    case WSE_OP_DSDIN:
        ce->dsd[a[0]] = (wse_dsd){.kind = DSD_IN, .colour = (uint8_t)a[1], .len = (uint32_t)a[2]};
        break;
    case WSE_OP_DSDOUT:
        ce->dsd[a[0]] = (wse_dsd){.kind = DSD_OUT, .colour = (uint8_t)a[1], .len = (uint32_t)a[2], .ctrl = a[3] != 0};
        break;
    case WSE_OP_DSDBASE: ce->dsd[a[0]].base = (int32_t)((uint32_t)r[a[1]] + (uint32_t)a[2]); break;
    case WSE_OP_DSDLEN:
        if (r[a[1]] < 0 || r[a[1]] > 65535) {
            ts_wse_set_err(b, t, b->now, "dsdlen at pc %u: length %d is outside 0..65535", pc, r[a[1]]);
            return 1;
        }
        ce->dsd[a[0]].len = (uint32_t)r[a[1]];
        break;
    default:
        if (f->unit == WSE_U_VEC) {
            int nd = m->op_nopnds[in->op];
            int th = a[nd - 2];
            if (ce->th[th + 1].busy) {
                *why = 4;
                return 0;
            }
            if (!ts_wse_vec_issue(m, t, b, in, pc))
                return 1;
            if (th == -1 && ce->th[0].busy)
                ce->state = CE_WAITVEC;
            break;
        }
        /* any other op is a configuration op, which the loader (check_insn) never lets past a stream's
         * configuration prefix: should one come here, the run fails (TS_ESIM, with the PE and cycle)
         * rather than skip it */
        ts_wse_set_err(b, t, b->now, "op %u has no executor", in->op);
        return 1;
    }
    t->s.ev[f->ev_issue]++; /* its .def energy event; a vector op counts its elements instead */
    ce->effects += f->effect;
    if (next <= pc && f->unit == WSE_U_CTL && endless(t, b, pc))
        return 1;
    t->s.regs += m->op_nregs[in->op];
    if (ce->state != CE_IDLE || in->op == WSE_OP_EXIT)
        ce->pc = next;
    return 1;
}

/* A vector op still running whose operands are all in memory (no operand on the fabric, fab, set
 * at issue): with the ports to itself, it moves the same number of elements every cycle until its
 * last. */
static inline bool vec_in_memory(const wse_vop *v) { return v->busy && !v->fab; }

static inline __attribute__((always_inline)) void ce_eval(ts_model *m, wse_tile *t, wse_band *b, uint32_t pend5)
{
    wse_ce *ce = t->ce;
    uint32_t rd = (uint32_t)m->c.read_bytes, wr = (uint32_t)m->c.write_bytes;
    bool ramp_up = false, busy = false, stalled = false;
    uint8_t why = 0;
    /* control wavelets at the head of core queues activate their task (§1.6 control tasks); cctl
     * first, as most cycles have none */
    for (uint32_t j = t->nrq; t->cctl && j < t->nlq; j++) {
        wse_lq *q = &t->lq[j];
        bool ctrl = false;
        if (q_occ(q) && !q->taken && (q_head(q, &ctrl), ctrl)) {
            ce->active |= 1ull << (q_head(q, &ctrl) & 63);
            q_pop(t, (uint8_t)j);
            t->cctl--;
            b->progress++;
        }
    }
    /* main thread: pick, start, wait, issue; the state read once (each state goes at most to running
     * or, from idle, to a task's start) */
    uint8_t st = ce->state;
    if (st == CE_WAITVEC) {
        if (!ce->th[0].busy)
            st = ce->state = CE_RUN;
    } else if (st == CE_WAIT || st == CE_START) {
        if (b->now >= ce->until)
            st = ce->state = CE_RUN;
    } else if (st == CE_IDLE) {
        int id = pick_task(m, t, pend5);
        if (id >= 0) {
            start_task(m, t, b, id);
            b->progress++;
            st = ce->state;
        }
    }
    bool issued = false;
    if (st == CE_RUN) {
        if (exec_insn(m, t, b, &rd, &wr, &ramp_up, &why)) {
            issued = true;
            busy = true;
            t->s.insns++;
            b->progress++;
        } else {
            stalled = true;
        }
    } else if (st == CE_WAIT || st == CE_START) {
        b->progress++; /* time passes towards a known cycle */
    }
    /* vector ops: main thread's first, then microthreads in id order */
    uint32_t moved = 0, vth = 0, vk = 0;
    for (uint32_t vb = ce->vbusy; vb; vb &= vb - 1) {
        uint32_t i = (uint32_t)__builtin_ctz(vb);
        wse_vop *v = &ce->th[i];
        uint8_t vwhy = 0;
        uint32_t k = vec_step(m, t, b, v, &rd, &wr, &ramp_up, &vwhy);
        if (k) {
            busy = true;
            b->progress += k;
            moved++;
            vth = i;
            vk = k;
            if (v->i == v->n)
                ts_wse_vop_end(ce, i);
        } else {
            stalled = true;
            if (!why)
                why = vwhy;
        }
    }
    if (moved == 1 && vec_in_memory(&ce->th[vth])) {
        t->vth = (uint8_t)vth;
        t->vk = vk;
        /* the instruction issued was that op, and the core waits on it (only its issue does that) */
        t->vx = issued && ce->state == CE_WAITVEC;
    }
    if (busy) {
        t->s.busy++;
        t->blk_why = 0;
    } else if (!stalled) {
        t->blk_why = 0;
    } else {
        t->blk_why = why >= 1 && why <= 3 ? why : 4;
        count_stall(t, t->blk_why, 1);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* phase B */

/* A data wavelet landed in core input queue j of tile t in cycle `when`: its count, and its cycle
 * among the first WSE_ARRIVAL_LOG of the queue (ts_wse_arrival). */
static inline void log_arrival(wse_tile *t, uint32_t j, uint64_t when)
{
    uint32_t k = j - t->nrq;
    if (t->narr[k] < WSE_ARRIVAL_LOG)
        t->log[k * WSE_ARRIVAL_LOG + t->narr[k]] = when;
    t->narr[k]++;
}

/* A wavelet of a stamped colour landed in tile t's core queue in cycle `land` (docs/noc.md): it counts
 * as accepted in the window, and when its packet was created in the measurement window its flit
 * counts, and its packet's latency when it is the last flit. Sums of the band, which owns t now. */
static void traffic_arrival(wse_tile *t, wse_band *b, uint32_t data, uint64_t land)
{
    if (land >= t->st_from && land < t->st_to)
        t->s.tr_accepted++;
    if (!(data & WSE_TR_MEASURED))
        return;
    if (!b->tr && !(b->tr = ts_calloc(1, sizeof *b->tr))) {
        b->oom = true;
        return;
    }
    wse_trstats *s = b->tr;
    s->flits++;
    if (!(data & WSE_TR_LAST))
        return;
    uint64_t lat = (land - (data >> WSE_TR_T_SHIFT)) & WSE_TR_T_MASK;
    uint32_t d = data >> WSE_TR_DIST_SHIFT & WSE_TR_DIST_MASK;
    s->min = s->packets && s->min < lat ? s->min : lat;
    s->max = s->max > lat ? s->max : lat;
    s->packets++;
    s->sum += lat;
    s->hist[lat < WSE_TR_HIST ? lat : WSE_TR_HIST - 1]++;
    s->dn[d]++;
    s->dsum[d] += lat;
    if (!s->dmin1[d] || lat + 1 < s->dmin1[d])
        s->dmin1[d] = lat + 1;
}

/* Tile o was pushed to in phase B: a tile of the band joins the next active list at once (its stamp
 * is the band's own), a tile of another band is left on the cross-band list its band merges after
 * the barrier. Lockstep evaluates every tile anyway. */
static inline void wake(const ts_model *m, wse_band *b, wse_tile *o)
{
    if (m->lockstep)
        return;
    if (o->id >= b->id0 && o->id < b->id1) {
        if (o->stamp == b->now + 1)
            return;
        o->stamp = b->now + 1;
        next_add(b, o->id);
        return;
    }
    uint32_t p = b->par;
    if (b->nxwake[p] == b->cap_xwake[p] &&
        ts_grow((void **)&b->xwake[p], &b->cap_xwake[p], b->nxwake[p] + 1, sizeof *b->xwake[p])) {
        b->oom = true;
        return;
    }
    b->xwake[p][b->nxwake[p]++] = o->id;
}

static inline __attribute__((always_inline)) void tile_commit(ts_model *m, wse_tile *t, wse_band *b)
{
    for (uint32_t i = 0; i < t->npop; i++) {
        wse_lq *q = &t->lq[t->pops[i]];
        q->popped++;
        q->rd = (uint8_t)(q->rd + 1 == q->cap ? 0 : q->rd + 1);
        t->ppop[q->port]++;
        if (q->port < 5)
            t->s.rq_pop_at += b->now;
        q->taken = 0;
    }
    t->npop = 0;
    for (uint32_t wp = t->wup; wp; wp &= wp - 1) {
        wse_tile *o = t->nb[__builtin_ctz(wp)];
        if (o)
            wake(m, b, o);
    }
    t->wup = 0;
    for (uint32_t lm = t->lmask; lm; lm &= lm - 1) {
        int l = __builtin_ctz(lm);
        wse_line *ln = &t->line[l];
        /* at most one wavelet lands in a cycle (one enters a cycle, each after the line's
         * latency), in its entry: where a ring's head was compared in a loop */
        wse_ent *e = line_ent(ln, b->now + 1);
        if (e->land == b->now + 1) {
            uint32_t meta = e->meta, c = WSE_ENT_COLOUR(meta);
            bool ctrl = WSE_ENT_CTRL(meta);
            wse_tile *o;
            wse_lq *q = line_target(m, t, l, c, &o);
            uint32_t slot = q->wr;
            q->wr = (uint8_t)(q->wr + 1 == q->cap ? 0 : q->wr + 1);
            q->slot[slot] = e->data;
            if (q->dst)
                q->dst[slot] = WSE_ENT_DST(meta);
            q->ctrl = (q->ctrl & ~(1ull << slot)) | (uint64_t)ctrl << slot; /* no branch */
            q->pushed++;
            o->ppush[q->port]++;
            o->pbits[q->port] ^= 1u << c;
            if (l != WSE_LINE_DOWN)
                t->s.rq_push_at += b->now;
            if (l == WSE_LINE_DOWN) {
                t->s.delivered++;
                t->cctl += ctrl;
                if (!ctrl)
                    log_arrival(t, (uint32_t)(q - t->lq), e->land);
                if (!ctrl && (t->stampm >> c & 1))
                    traffic_arrival(t, b, e->data, e->land);
            }
            wake(m, b, o); /* also when o is t: its phase-A view (qleft) did not count this push */
            e->land = 0;
            ln->n--;
            b->progress++;
        }
        if (ln->n)
            b->progress++; /* a wavelet in flight lands at a known cycle */
        else
            t->lmask &= (uint8_t)~(1u << l);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* a tile's cycle */

/* A tile whose only business is a core counting down to a known cycle can sleep until then: the
 * cycles between change nothing (a push into its queues wakes it earlier). */
static inline bool tile_sleeps(const ts_model *m, const wse_band *b, const wse_tile *t, uint64_t *at)
{
    const wse_ce *ce = t->ce;
    if (!ce || (ce->state != CE_WAIT && ce->state != CE_START) || ce->until <= b->now + 1 || t->qleft || t->lmask ||
        ce->vbusy)
        return false;
    *at = ce->until;
    return true;
}

static inline __attribute__((always_inline)) void eval_tile(ts_model *m, wse_band *b, wse_tile *t)
{
    uint32_t total = 0, pm = 0;
    uint64_t progress = b->progress;
    t->s.evals++;
    if (__builtin_expect((t->blk | t->vfrom) != 0, 0)) {
        count_router_sleep(t, b->now - (t->blk ? t->blk : t->vfrom));
        if (t->blk) /* the cycles it slept through, each the same stall as its last evaluation */
            count_stall(t, t->blk_why, b->now - t->blk);
        else /* the cycles its vector op ran alone */
            ts_wse_vec_catch_up(m, t, b, b->now);
        t->blk = t->vfrom = 0;
        b->nblk--;
    }
    t->vth = WSE_NOQ;
    /* every port, without a branch: nothing is ever pushed to a port without live queues, so its
     * counters stay 0 and it adds nothing (before, a loop over the live ports: 10 % of
     * bench_wse_stencil's host instructions) */
#if defined(__SSE2__)
    {
        /* ports 0..3 and 2..5 as two vectors of four: the ports with wavelets by one mask of each
         * comparison's signs, the wavelets by one horizontal sum (where extracting the four lanes
         * of each cost about 20 host instructions an evaluation more) */
        __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)t->ppush);
        __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(t->ppush + 2));
        __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)t->ppop);
        __m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(t->ppop + 2));
        __m128i d0 = _mm_sub_epi32(a0, b0), d1 = _mm_sub_epi32(a1, b1), z = _mm_setzero_si128();
        uint32_t e0 = (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(d0, z)));
        uint32_t e1 = (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(d1, z)));
        pm = (~e0 & 15u) | (~e1 & 12u) << 2;
        __m128i sv = _mm_add_epi32(d0, _mm_and_si128(d1, _mm_set_epi32(-1, -1, 0, 0)));
        sv = _mm_add_epi32(sv, _mm_shuffle_epi32(sv, _MM_SHUFFLE(1, 0, 3, 2)));
        sv = _mm_add_epi32(sv, _mm_shuffle_epi32(sv, _MM_SHUFFLE(2, 3, 0, 1)));
        total = (uint32_t)_mm_cvtsi128_si32(sv);
    }
#else
    {
        /* ports 0..3 and 2..5 as two vectors of four (GCC's generic vectors, lowered to scalar code
         * where the host has no vectors) */
        typedef uint32_t v4u __attribute__((vector_size(16)));
        v4u a0, a1, b0, b1;
        memcpy(&a0, t->ppush, sizeof a0);
        memcpy(&a1, t->ppush + 2, sizeof a1);
        memcpy(&b0, t->ppop, sizeof b0);
        memcpy(&b1, t->ppop + 2, sizeof b1);
        v4u d0 = a0 - b0, d1 = a1 - b1;
        const v4u bit0 = {1, 2, 4, 8}, bit1 = {0, 0, 16, 32};
        v4u pv = ((v4u)(d0 != 0) & bit0) | ((v4u)(d1 != 0) & bit1);
        v4u hi = {0, 0, 0xffffffffu, 0xffffffffu};
        v4u sv = d0 + (d1 & hi);
        pm = pv[0] | pv[1] | pv[2] | pv[3];
        total = sv[0] + sv[1] + sv[2] + sv[3];
    }
#endif
    /* the colours that arrived at the router's ports holding wavelets. A port that holds none had
     * no push since its last evaluation (a push wakes the tile, and only the tile pops), so its
     * pbits equal pseen; the colours its cbits still name have empty queues, which the router
     * drops from cbits when it looks at them (router_eval), as it would have found them unset */
    for (uint32_t pp = pm & 31; pp; pp &= pp - 1) {
        int p = __builtin_ctz(pp);
        t->cbits[p] |= t->pbits[p] ^ t->pseen[p];
        t->pseen[p] = t->pbits[p];
    }
    uint32_t pend5 = t->ppush[5] - t->ppop[5];
    t->pstall = 0;
    if (pm & 31)
        router_eval(m, t, b, pm & 31);
    if (t->ce)
        ce_eval(m, t, b, pend5);
    t->qleft = total - t->npop;
    t->still = b->progress == progress;
    if (t->vth != WSE_NOQ && b->progress - progress != t->vk + t->vx)
        t->vth = WSE_NOQ; /* something else moved too (besides the op's own issue) */
}

static inline __attribute__((always_inline)) void commit_tile(ts_model *m, wse_band *b, wse_tile *t)
{
    tile_commit(m, t, b);
    uint64_t at;
    if (m->lockstep)
        return;
    if (tile_sleeps(m, b, t, &at)) {
        if (t->sleep_at != at) { /* woken by a push and asleep again: the timer is already set */
            ts_wse_tm_push(b, at, t->id);
            t->sleep_at = at;
        }
        b->progress += at - b->now; /* the cycles it sleeps through count as progress */
    } else if (!tile_quiet(m, t, false) && t->stamp != b->now + 1) {
        if (t->still && !t->lmask) {
            /* blocked: the same stall every cycle until a wavelet lands in its queues or one of the
             * queues it waits to push into gets room, and both wake it */
            t->blk = b->now + 1;
            b->nblk++;
            return;
        }
        if (t->vth != WSE_NOQ && !t->lmask) {
            /* only a vector op on memory moved (and, in its first cycle, the instruction that issued
             * it): it moves vk elements a cycle, the rest stays blocked, until its last step at
             * cycle `at` (a push or a pop wakes the tile earlier). When the core waits on it (the
             * main thread's op, CE_WAITVEC) and no other thread is busy (one stalled on the SRAM
             * ports may move in that step, which may leave it ports), that step changes nothing
             * else either, so the tile sleeps through it too, to the cycle after, when the core
             * goes on: the catch-up ends the op (ts_wse_vec_catch_up). Before, a synchronous op on
             * memory took two evaluations besides its issue (its second step and its last). */
            const wse_vop *v = &t->ce->th[t->vth];
            at = b->now + (v->n - v->i + t->vk - 1) / t->vk;
            at += t->vth == 0 && t->ce->state == CE_WAITVEC && t->ce->vbusy == 1u;
            if (at > b->now + 1) {
                if (t->sleep_at != at) {
                    ts_wse_tm_push(b, at, t->id);
                    t->sleep_at = at;
                }
                t->vfrom = b->now + 1;
                b->nblk++;
                b->progress += at - b->now;
                return;
            }
        }
        t->stamp = b->now + 1;
        next_add(b, t->id);
    }
}

void ts_wse_eval_list(ts_model *m, wse_band *b, const wse_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        eval_tile(m, b, m->t[l->v[i]]);
}

void ts_wse_commit_list(ts_model *m, wse_band *b, const wse_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        commit_tile(m, b, m->t[l->v[i]]);
}

/* Phases A and B of list l together, one wavefront: a tile's phase B needs phase A of its
 * neighbours before it (its pushes and its pops change what their phase A reads), and its phase A
 * must come before their phase B. A tile's neighbours are at most a mesh row of ids away, so in a
 * list sorted by id, phase B of tile j may run as soon as phase A has passed id j + w (the last
 * neighbour, south), and phase A of tile i still comes before phase B of i - w (the first,
 * north). Phase B then finds the tile's state where phase A left it, a row of tiles ago (in the
 * host's caches), where two passes over the list read it from memory twice when the list does not
 * fit them. Phase B's order does not matter (nothing in phase B reads what another tile writes in
 * it; its wakes only mark tiles active). A list not sorted by id (it always is: wse_band.c) gets
 * the two passes. Only for lists whose tiles' neighbours are all in the band (zone I: no other
 * band reads or writes them). */
void ts_wse_eval_commit_list(ts_model *m, wse_band *b, const wse_list *l)
{
    for (size_t i = 1; i < l->n; i++)
        if (l->v[i] <= l->v[i - 1]) {
            ts_wse_eval_list(m, b, l);
            ts_wse_commit_list(m, b, l);
            return;
        }
    for (size_t i = 0, j = 0; j < l->n; i++) {
        uint64_t id = i < l->n ? l->v[i] : UINT64_MAX; /* past the end: phase B of the rest */
        while (j < i && (uint64_t)l->v[j] + m->w < id)
            commit_tile(m, b, m->t[l->v[j++]]);
        if (i < l->n)
            eval_tile(m, b, m->t[id]);
    }
}
