/* arch/ipu/ipu_energy.c — the energy events a run causes: what an op charges per issue (its
 * table event, tile-memory bytes, register words and AMP MACs), and, when the run asked for
 * superstep_events, the events of each superstep from the per-op counters taken at each sync.
 * The results (ipu_results.c) price the whole run with the same per-op charges.
 */
#include <assert.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"

const char *const ts_ipu_ev_names[EV_COUNT] = {
    "fp32_mac", "fp16_mac", "fp32_add", "fp32_mul", "fp16_add", "fp16_mul", "int32_add", "int32_mul",
    "sram_read_64b", "sram_write_64b", "regfile_32b", "wire_bit_mm", "pcie_bit", "insn_issue",
};

/* Bytes an op reads from / writes to tile memory: the .def's memrd and memwr columns. op is always
 * an opcode: the loader (decode_one) lets no other in and the callers count by opcode, so the
 * check is an assertion. */
void ts_ipu_op_mem_bytes(int op, uint32_t *rd, uint32_t *wr)
{
    assert(op >= 0 && op < IPU_OP_COUNT);
    *rd = ts_ipu_opfacts[op].memrd;
    *wr = ts_ipu_opfacts[op].memwr;
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

int ts_ipu_ev_index(const char *name)
{
    for (int i = 0; i < EV_COUNT; i++)
        if (name && !strcmp(name, ts_ipu_ev_names[i]))
            return i;
    return -1;
}

ts_status ts_ipu_check_events(ts_err *err)
{
    for (int op = 0; op < IPU_OP_COUNT; op++)
        if (ts_ipu_opfacts[op].energy && ts_ipu_ev_index(ts_ipu_opfacts[op].energy) < 0)
            return ts_err_set(err, TS_EINTERNAL, "ipu_isa.def: '%s' charges energy event '%s', which the IPU model "
                              "does not count (add it to ts_ipu_ev_names)", ts_ipu_isa.ops[op].mnemonic,
                              ts_ipu_opfacts[op].energy);
    return TS_OK;
}

/* The events of op issued k times (what its facts, memory bytes, register words and AMP MACs
 * charge); issue events are counted by the caller. */
void ts_ipu_op_events(const ts_model *m, int op, double k, double *ev)
{
    uint32_t br, bw;
    ts_ipu_op_mem_bytes(op, &br, &bw);
    ev[EV_SRAM_RD] += k * br / 8.0;
    ev[EV_SRAM_WR] += k * bw / 8.0;
    ev[EV_REGFILE] += k * op_reg_words(op);
    int e = ts_ipu_ev_index(ts_ipu_opfacts[op].energy); /* every named event has one (ts_ipu_check_events) */
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
        ts_ipu_op_events(m, op, (double)acc[op], ev);
    }
    ev[EV_ISSUE] += (double)(execs - acc[IPU_OP_BUNDLE]); /* a bundle's two members are one issue */
}

/* The energy events since the last sync 1, into ev: the ops the tiles executed, the exchange's
 * reads (xsent bytes) and writes (bytes received), its wire events and hbytes to or from the
 * host; with mark, the next sync counts from here. Only when the run asked for superstep_events
 * (m->phase_events). */
void ts_ipu_events_since_sync(ts_model *m, uint64_t xsent, uint64_t hbytes, bool mark, double *ev)
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

