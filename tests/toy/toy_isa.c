/* tests/toy/toy_isa.c — expands toy_isa.def into the toy ISA table. */
#include "tests/toy/toy_isa.h"

#include <stddef.h>

/* OPERANDS is a parenthesised list; this turns it into an initializer for ts_opinfo.opnd. */
#define TOY_OPNDS_(...) { __VA_ARGS__ }

static const ts_opinfo toy_ops[] = {
#define TOY_OP(name, mn, opnds, unit, lat, energy, flags, doc) \
    { mn, TOY_OPNDS_ opnds, unit, lat, energy, flags, doc },
#include "tests/toy/toy_isa.def"
#undef TOY_OP
};

static const char *const toy_regs[TOY_NREGS] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
static const char *const toy_kinds[] = {"tile"};

const ts_isa ts_toy_isa = {
    .arch = "toy",
    .ops = toy_ops,
    .nops = sizeof toy_ops / sizeof toy_ops[0],
    .regs = toy_regs,
    .nregs = TOY_NREGS,
    .stream_kinds = toy_kinds,
    .nstream_kinds = sizeof toy_kinds / sizeof toy_kinds[0],
};

_Static_assert(sizeof toy_ops / sizeof toy_ops[0] == TOY_OP_COUNT, "toy table and enum disagree");
