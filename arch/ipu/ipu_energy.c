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

/* Bytes an op reads from / writes to tile memory. Every opcode has its case, so that a new load or
 * store cannot go uncharged (no default: -Wswitch names an opcode of the table without a case). op
 * is always one of them: the loader (decode_one) lets no other in and the callers count by opcode,
 * so the check is an assertion. */
void ts_ipu_op_mem_bytes(int op, uint32_t *rd, uint32_t *wr)
{
    assert(op >= 0 && op < IPU_OP_COUNT);
    *rd = *wr = 0;
    switch ((enum ipu_op)op) {
    case IPU_OP_LD32: case IPU_OP_LD32STEP: *rd = 4; break;
    case IPU_OP_LD64: case IPU_OP_LD64STEP: *rd = 8; break;
    case IPU_OP_LD128: case IPU_OP_LD128STEP: case IPU_OP_LD128PUTCS: *rd = 16; break;
    case IPU_OP_LDZ16: case IPU_OP_LDB16: *rd = 2; break;
    case IPU_OP_LDZ8: *rd = 1; break;
    case IPU_OP_ST32: case IPU_OP_ST32STEP: *wr = 4; break;
    case IPU_OP_ST64: case IPU_OP_ST64STEP: *wr = 8; break;
    case IPU_OP_LDST64PACE: *rd = 8; *wr = 8; break;
    case IPU_OP_LD2XST64PACE: *rd = 16; *wr = 8; break;
    /* none of their own (a send's reads, a receive's writes and the host's bytes are counted
     * where the words move) */
    case IPU_OP_SETZI: case IPU_OP_LDCONST: case IPU_OP_MOV: case IPU_OP_ADD: case IPU_OP_ADDI:
    case IPU_OP_SUB: case IPU_OP_MUL: case IPU_OP_MULI: case IPU_OP_AND: case IPU_OP_ANDI: case IPU_OP_OR:
    case IPU_OP_XOR: case IPU_OP_SHL: case IPU_OP_SHLI: case IPU_OP_SHR: case IPU_OP_SHRI: case IPU_OP_CMPEQ:
    case IPU_OP_CMPULT: case IPU_OP_CMPSLT: case IPU_OP_GET:
    case IPU_OP_NOP: case IPU_OP_BR: case IPU_OP_BRZ: case IPU_OP_BRNZ: case IPU_OP_BRNEG: case IPU_OP_BRNZDEC:
    case IPU_OP_RPT: case IPU_OP_RPTI:
    case IPU_OP_F32ADD: case IPU_OP_F32SUB: case IPU_OP_F32MUL: case IPU_OP_F32MAX: case IPU_OP_F32MIN:
    case IPU_OP_F32MAC: case IPU_OP_F32V2ADD: case IPU_OP_F32V2SUB: case IPU_OP_F32V2MUL: case IPU_OP_F32V2MAC:
    case IPU_OP_F16V2ADD: case IPU_OP_F16V2MUL: case IPU_OP_F16V4ADD: case IPU_OP_F16V4SUB: case IPU_OP_F16V4MUL:
    case IPU_OP_F16V2TOF32: case IPU_OP_F32V2TOF16: case IPU_OP_F32TOI32: case IPU_OP_F32FROMI32:
    case IPU_OP_F32V2AMP: case IPU_OP_F16V4AMP: case IPU_OP_AMPZERO: case IPU_OP_AMPGET:
    case IPU_OP_RUN: case IPU_OP_RUNALL: case IPU_OP_EXIT: case IPU_OP_SYNC: case IPU_OP_HALT:
    case IPU_OP_SEND: case IPU_OP_RECV: case IPU_OP_RXSEL: case IPU_OP_RXPTR: case IPU_OP_RXWAIT: case IPU_OP_DELAY:
    case IPU_OP_HOSTRD: case IPU_OP_HOSTWR:
    case IPU_OP_BUNDLE: case IPU_OP_BUNDLE_END:
        break;
    case IPU_OP_COUNT: /* not an opcode (the assertion above) */
        break;
    }
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
 * (m->op_block). */
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

