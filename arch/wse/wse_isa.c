/* arch/wse/wse_isa.c — the wafer-mesh ISA table, expanded from arch/wse/wse_isa.def. */
#include "arch/wse/wse_isa.h"

#include <stddef.h>

#define WSE_OPNDS(...) {__VA_ARGS__}

static const ts_opinfo wse_ops[] = {
#define WSE_OP(name, mn, opnds, unit, vop, dt, width, energy, flags, doc) \
    {mn, WSE_OPNDS opnds, unit, NULL, energy, flags, doc},
#include "arch/wse/wse_isa.def"
#undef WSE_OP
};

const wse_opfacts ts_wse_opfacts[WSE_OP_COUNT] = {
#define WSE_OP(name, mn, opnds, unit, vop, dt, width, energy, flags, doc) {unit, vop, dt, width, energy},
#include "arch/wse/wse_isa.def"
#undef WSE_OP
};

static const char *const wse_regs[WSE_NREGS] = {
    "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

static const char *const wse_kinds[] = {"pe"};

const ts_isa ts_wse_isa = {
    .arch = "wse",
    .ops = wse_ops,
    .nops = sizeof wse_ops / sizeof wse_ops[0],
    .regs = wse_regs,
    .nregs = WSE_NREGS,
    .stream_kinds = wse_kinds,
    .nstream_kinds = 1,
};

_Static_assert(sizeof wse_ops / sizeof wse_ops[0] == WSE_OP_COUNT, "wse table and enum disagree");
