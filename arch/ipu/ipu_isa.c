/* arch/ipu/ipu_isa.c — the IPU ISA table for the assembler, disassembler and loader, expanded
 * from arch/ipu/ipu_isa.def. */
#include "arch/ipu/ipu_int.h"

#define IPU_OPNDS(...) {__VA_ARGS__}

static const ts_opinfo ipu_ops[] = {
#define IPU_OP(id, mn, ops, cls, unit, ctx, lat, ev, ec, rd, wr, doc) \
    {mn, IPU_OPNDS ops, unit, lat, ev, (uint32_t)IPU_CTX_##ctx, doc},
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
};

/* Whether an op changes state beyond its own context's registers: tile memory (memwr), the AMP's
 * accumulators or coefficients (every AMP op but ampget), the exchange and the host (every
 * exchange op), or the other contexts (run, runall, exit, sync, halt). */
#define IPU_EFFECT(id, unit, wr)                                                                    \
    ((wr) > 0 || ((unit) == IPU_U_AMP && IPU_OP_##id != IPU_OP_AMPGET) || (unit) == IPU_U_XCH ||     \
     IPU_OP_##id == IPU_OP_RUN || IPU_OP_##id == IPU_OP_RUNALL || IPU_OP_##id == IPU_OP_EXIT ||      \
     IPU_OP_##id == IPU_OP_SYNC || IPU_OP_##id == IPU_OP_HALT)

const ipu_opfacts ts_ipu_opfacts[IPU_OP_COUNT] = {
#define IPU_OP(id, mn, ops, cls, unit, ctx, lat, ev, ec, rd, wr, doc) \
    {cls, unit, IPU_CTX_##ctx, ev, ec, rd, wr, IPU_EFFECT(id, unit, wr)},
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
};

static const char *const ipu_regs[IPU_NREGS] = {
    "$m0", "$m1", "$m2", "$m3", "$m4", "$m5", "$m6", "$m7",
    "$m8", "$m9", "$m10", "$m11", "$m12", "$m13", "$m14", "$m15",
    "$a0", "$a1", "$a2", "$a3", "$a4", "$a5", "$a6", "$a7",
    "$a8", "$a9", "$a10", "$a11", "$a12", "$a13", "$a14", "$a15",
};

static const char *const ipu_stream_kinds[] = {"tile"};

const ts_isa ts_ipu_isa = {
    .arch = "ipu",
    .ops = ipu_ops,
    .nops = sizeof ipu_ops / sizeof ipu_ops[0],
    .regs = ipu_regs,
    .nregs = IPU_NREGS,
    .stream_kinds = ipu_stream_kinds,
    .nstream_kinds = 1,
};
