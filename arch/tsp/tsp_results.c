/* arch/tsp/tsp_results.c — after a run: cycles, bytes, utilization, energy events and the
 * family's statistics (with the hazards table under --warn), the description of queues blocked
 * at a sync, the config's machine facts for `tessera info`, and the MEM accessors tests read. */
#include "arch/tsp/tsp_model.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"

static const char *const hz_names[HZ_COUNT] = {"stream_collision", "no_value", "bank_conflict",
                                               "queue_underrun", "resource"};

ts_status ts_tsp_collect(ts_model *m, ts_results *r, ts_err *err)
{
    const tsp_layout *l = m->lay;
    ts_stats *st = r->stats;
    ts_status rc = TS_OK;
    /* live stream-register slot-cycles: values still on chip after the end stop counting there */
    uint64_t occ = m->occ;
    for (int dir = 0; dir < 2; dir++)
        for (uint32_t s = 0; s < m->NS; s++)
            for (uint32_t row = 0; row < m->P; row++)
                for (uint32_t k = 0; k < m->S; k++) {
                    size_t j = (((size_t)dir * m->NS + s) * m->P + row) * m->S + k; /* every slot once */
                    const tsp_slot *sl = sr_slot(m, j);
                    if (sl->birth < 0)
                        continue;
                    uint64_t exit = (uint64_t)sl->birth + sr_life(m, dir, sl->bpos);
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
    r->bytes[TS_LEVEL_OFFCHIP] = m->offchip + m->host_bytes; /* C2C, and a batch's host transfers (PCIe) */
    r->macs = macs;
    r->flops = 2.0 * (double)m->macs16;
    /* VXM float work: one flop per element */
    for (int cls = 0; cls < 2; cls++)
        r->flops += m->ev[UK_VXM][TSP_F16][cls] + m->ev[UK_VXM][TSP_F32][cls] + m->ev[UK_MXM][TSP_F32][cls];
    /* every type's VXM element ops and MXM accumulations, and the int8 MACs */
    r->ops = 2.0 * (double)macs;
    for (int t = 0; t < TSP_NTYPES; t++)
        for (int cls = 0; cls < 2; cls++)
            r->ops += m->ev[UK_VXM][t][cls] + m->ev[UK_MXM][t][cls];
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
    if (rc == TS_OK && m->offchip + m->host_bytes)
        rc = ts_results_event(r, "pcie_bit", 8.0 * (double)(m->offchip + m->host_bytes), err);
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
    if (m->runs > 1) { /* a batch run once per sample (docs/tsp.md) */
        CK(ts_stats_u64(st, "batch.runs", "", "runs of the program, one per sample of the batch", m->runs));
        CK(ts_stats_u64(st, "batch.first_run_cycles", "cycles", "cycles of the first run", m->first_run));
        CK(ts_stats_f64(st, "batch.cycles_per_sample", "cycles", "cycles / runs, host transfers included",
                        (double)m->now / m->runs));
        CK(ts_stats_u64(st, "batch.host_bytes", "B", "bytes the host moved over PCIe for the runs after the first: "
                        "the outputs read back, the next inputs and the words the run overwrote written", m->host_bytes));
        CK(ts_stats_u64(st, "batch.host_cycles", "cycles", "cycles the chip waited for them between the runs (24 GB/s each "
                        "way, assumed, a word from the run's last access to it, due before its first in the next; at "
                        "least the stream-register positions)", m->host_cycles));
        CK(ts_stats_f64(st, "batch.samples_per_second", "/s", "samples / (cycles / clock)",
                        m->now ? (double)m->runs * m->cfg.clock_hz / (double)m->now : 0));
    }
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

void ts_tsp_blocked(ts_model *m, ts_buf *out)
{
    for (uint32_t i = 0; i < m->nq; i++) {
        const tsp_queue *q = &m->q[i];
        if (q->state == Q_PARKED)
            ts_buf_printf(out, "  queue %u: pc %u: parked at sync since cycle %" PRIu64 ", no notify pending\n", i,
                          q->park_pc, q->park);
    }
}

ts_status ts_tsp_info(const void *cfgp, ts_info *out, ts_err *err)
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
        /* 8 bytes a step (a byte a step cost a third of the TSP lowering tests' CPU); each step is
         * a bijection of h for a given word, so two slices that differ in one word differ in h */
        uint64_t b = 0, n = m->cfg.mem_slice_bytes;
        for (; b + 8 <= n; b += 8) {
            uint64_t w;
            memcpy(&w, m->mem[i] + b, 8);
            h = (h ^ w) * 1099511628211ull;
        }
        for (; b < n; b++)
            h = (h ^ m->mem[i][b]) * 1099511628211ull;
    }
    return h;
}
