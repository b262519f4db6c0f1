/* arch/ipu/ipu_results.c — what a run reports: cycles, bytes per level, MACs and FLOPs, unit
 * utilisation and energy events (from the executions each instruction counted), the supersteps
 * and superstep_events tables, the stats, and the blocked-tile lines for a run that hangs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "arch/ipu/ipu_target.h" /* the tables a compiler reads back */
#include "core/alloc.h"
#include "core/sim.h"

/* The table superstep_events, when the run asked for it (opts.phase_events): each superstep's
 * energy events (counted per op as the tiles issue, taken at each sync 1, with the superstep's
 * exchange and host traffic), and a last row, id nss, for what ran after the last sync, if
 * anything did. The rows sum to the run's events. */
static ts_status superstep_events(ts_model *m, ts_stats *s, ts_err *err)
{
    if (!m->phase_events)
        return TS_OK; /* not asked for */
    double tail[EV_COUNT];
    uint64_t xsent_tail = 0; /* sent after the last sync */
    for (uint32_t i = 0; i < m->ntiles; i++)
        xsent_tail += m->t[i].ss_xbytes;
    ts_ipu_events_since_sync(m, xsent_tail, 0, false, tail);
    int tab = ts_results_events_table(s, TS_IPU_TABLE_SUPERSTEP_EVENTS, "one row per BSP superstep (and one for what ran "
                                      "after the last sync, if anything did): the energy events it caused, to price "
                                      "a part of the run", "id", ts_ipu_ev_names, EV_COUNT);
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

ts_status ts_ipu_collect(ts_model *m, ts_results *r, ts_err *err)
{
    const ts_ipu_cfg *c = &m->c;
    uint32_t n = m->ntiles;
    double ev[EV_COUNT] = {0};
    uint64_t issue = 0, amp = 0, macs16 = 0, macs32 = 0, rd = 0, wr = 0, xs = 0, xr = 0, xport = 0, fl = 0, ints = 0;
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
        const uint64_t *opcount = t->opcnt;
        uint64_t tb = 0; /* issue cycles: a bundle is one issue (its `{`), its two members none */
        for (int op = 0; op < IPU_OP_COUNT; op++)
            tb += opcount[op];
        tb -= 2 * opcount[IPU_OP_BUNDLE];
        for (int op = 0; op < IPU_OP_COUNT; op++) {
            uint64_t k = opcount[op];
            if (!k)
                continue;
            uint32_t br, bw;
            ts_ipu_op_mem_bytes(op, &br, &bw);
            rd += k * br;
            wr += k * bw;
            ts_ipu_op_events(m, op, (double)k, ev);
            if (ts_ipu_opfacts[op].unit == IPU_U_FPU && op != IPU_OP_F16V2TOF32 && op != IPU_OP_F32V2TOF16 &&
                op != IPU_OP_F32V4TOF16 &&
                op != IPU_OP_F32TOI32 && op != IPU_OP_F32FROMI32)
                fl += k * (uint64_t)ts_ipu_opfacts[op].ecount * (op == IPU_OP_F32MAC || op == IPU_OP_F32V2MAC ? 2 : 1);
            /* integer arithmetic: the ALU's ops but its moves, constants and register reads */
            if (ts_ipu_opfacts[op].unit == IPU_U_ALU && op != IPU_OP_SETZI && op != IPU_OP_LDCONST &&
                op != IPU_OP_MOV && op != IPU_OP_GET)
                ints += k;
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
    ev[EV_SRAM_RD] += (double)(xs) / 8.0; /* the exchange's reads and writes; the ops' are in ts_ipu_op_events */
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
    r->ops = r->flops + (double)ints;
    ts_status rc = ts_results_util(r, "tile", n, issue, err);
    if (rc == TS_OK)
        rc = ts_results_util(r, "amp", n, amp, err);
    for (int e = 0; e < EV_COUNT && rc == TS_OK; e++)
        rc = ts_results_event(r, ts_ipu_ev_names[e], ev[e], err);

    ts_stats *s = r->stats;
    static const char *const cols[] = {"id", "start", "compute", "exchange", "sync", "critical_tile",
                                       "exchange_bytes", "host_bytes"};
    static const char *const units[] = {"", "cycles", "cycles", "cycles", "cycles", "", "B", "B"};
    uint64_t xcyc = 0, ccyc = 0, scyc = 0;
    if (rc == TS_OK) {
        int tab = ts_stats_table(s, TS_IPU_TABLE_SUPERSTEPS, "one row per BSP superstep: compute, exchange and sync cycles, "
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

void ts_ipu_blocked(ts_model *m, ts_buf *out)
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
