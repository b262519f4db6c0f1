/* arch/tsp/tsp_isa.c — the TSP ISA table for the assembler, disassembler and loader, expanded
 * from arch/tsp/tsp_isa.def. */
#include "arch/tsp/tsp_int.h"

#include <stdio.h>

#define TSP_OPNDS(...) {__VA_ARGS__}

static const ts_opinfo tsp_ops[] = {
#define TSP_OP(id, mn, ops, cls, unit, ev, fl, doc) {mn, TSP_OPNDS ops, unit, NULL, "insn_issue", fl, doc},
#define TSP_OPL(id, mn, ops, cls, unit, def, src, ev, fl, doc) \
    {mn, TSP_OPNDS ops, unit, "d_func." mn, "insn_issue", fl, doc},
#include "arch/tsp/tsp_isa.def"
#undef TSP_OP
#undef TSP_OPL
};

const tsp_opfacts ts_tsp_opfacts[TSP_OP_COUNT] = {
#define TSP_OP(id, mn, ops, cls, unit, ev, fl, doc) {cls, unit, fl, ev},
#define TSP_OPL(id, mn, ops, cls, unit, def, src, ev, fl, doc) {cls, unit, fl, ev},
#include "arch/tsp/tsp_isa.def"
#undef TSP_OP
#undef TSP_OPL
};

_Static_assert(sizeof tsp_ops / sizeof tsp_ops[0] == TSP_OP_COUNT, "tsp table and enum disagree");

/* Register names: index = register number (tsp_int.h). */
#define S4(d, n) "s" #n "0" d, "s" #n "1" d, "s" #n "2" d, "s" #n "3" d, "s" #n "4" d, \
                 "s" #n "5" d, "s" #n "6" d, "s" #n "7" d, "s" #n "8" d, "s" #n "9" d
#define STREAMS(d) "s0" d, "s1" d, "s2" d, "s3" d, "s4" d, "s5" d, "s6" d, "s7" d, "s8" d, "s9" d, \
    S4(d, 1), S4(d, 2), S4(d, 3), S4(d, 4), S4(d, 5), "s60" d, "s61" d, "s62" d, "s63" d
static const char *const tsp_regs[TSP_NREGS] = {
    STREAMS("e"), STREAMS("w"),
    "alu0", "alu1", "alu2", "alu3", "alu4", "alu5", "alu6", "alu7",
    "alu8", "alu9", "alu10", "alu11", "alu12", "alu13", "alu14", "alu15",
    "nul", "i8", "i16", "i32", "f16", "f32",
};
_Static_assert(sizeof tsp_regs / sizeof tsp_regs[0] == TSP_NREGS, "register names and numbering disagree");

static const char *const tsp_kinds[] = {"queue", "mem", "input", "output"}; /* tsp_int.h, tsp_target.h */

const ts_isa ts_tsp_isa = {
    .arch = "tsp",
    .ops = tsp_ops,
    .nops = TSP_OP_COUNT,
    .regs = tsp_regs,
    .nregs = TSP_NREGS,
    .stream_kinds = tsp_kinds,
    .nstream_kinds = 4,
};

void ts_tsp_reg_name(int reg, char *buf, size_t n)
{
    snprintf(buf, n, "%s", reg >= 0 && reg < TSP_NREGS ? tsp_regs[reg] : "?");
}
