/* arch/wse/wse_isa.c — the wafer-mesh ISA table, expanded from arch/wse/wse_isa.def. */
#include "arch/wse/wse_isa.h"

#include <stddef.h>
#include <string.h>

#define WSE_OPNDS(...) {__VA_ARGS__}

static const ts_opinfo wse_ops[] = {
#define WSE_OP(name, mn, opnds, unit, vop, dt, width, energy, flags, doc) \
    {mn, WSE_OPNDS opnds, unit, NULL, energy, flags, doc},
#include "arch/wse/wse_isa.def"
#undef WSE_OP
};

/* A row's counter slot (wse_isa.h), and the one its issue adds to: none for a vector op, which
 * counts its elements instead. */
#define WSE_EV_SLOT(name, energy) (WSE_HAS_EVENT(energy) ? WSE_EVROW_##name : WSE_EV_ROWS)
#define WSE_EV_ISSUE(name, unit, energy) ((unit) == WSE_U_VEC ? WSE_EV_ROWS : WSE_EV_SLOT(name, energy))

#define WSE_EFFECT(name, unit)                                                                      \
    ((unit) == WSE_U_NET || (unit) == WSE_U_DSD || (unit) == WSE_U_VEC || (unit) == WSE_U_CFG ||         \
     WSE_OP_##name == WSE_OP_ST || WSE_OP_##name == WSE_OP_ACTIVATE || WSE_OP_##name == WSE_OP_BLOCK ||  \
     WSE_OP_##name == WSE_OP_UNBLOCK || WSE_OP_##name == WSE_OP_EXIT)

const wse_opfacts ts_wse_opfacts[WSE_OP_COUNT] = {
#define WSE_OP(name, mn, opnds, unit, vop, dt, width, energy, flags, doc) \
    {unit, vop, dt, WSE_EV_SLOT(name, energy), WSE_EV_ISSUE(name, unit, energy), width, energy, WSE_EFFECT(name, unit)},
#include "arch/wse/wse_isa.def"
#undef WSE_OP
};

/* The slots fit the uint8_t fields and the dummy slot's index. */
_Static_assert(WSE_EV_ROWS < 255, "too many rows name an energy event for the uint8_t counter slots");

size_t ts_wse_events(const char *names[WSE_EV_ROWS], uint8_t ev_of[WSE_EV_ROWS])
{
    size_t n = 0;
    for (int op = 0; op < WSE_OP_COUNT; op++) {
        const wse_opfacts *f = &ts_wse_opfacts[op];
        if (f->ev == WSE_EV_ROWS)
            continue;
        size_t e = 0;
        while (e < n && strcmp(names[e], f->energy))
            e++;
        if (e == n)
            names[n++] = f->energy;
        ev_of[f->ev] = (uint8_t)e;
    }
    return n;
}

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

/* Every vector op has an element operation and 16- or 32-bit elements, the only ones the executor
 * handles: the switches of wse_vec.c (ts_wse_vec_elem) take any VOP but ADD, SUB, MUL and MAC for
 * MOV, and any element width but 32 bits for 16, so this is checked here, once, at compile time.
 * Every floating-point op but a move names an energy event: the results count flops and MACs from
 * its counter slot (wse_report.c). */
#define WSE_OP(name, mn, opnds, unit, vop, dt, width, energy, flags, doc)                      \
    _Static_assert((unit) != WSE_U_VEC || ((vop) >= WSE_V_ADD && (vop) <= WSE_V_MOV),          \
                   "vector op '" mn "' has no element operation");                            \
    _Static_assert((unit) != WSE_U_VEC || (dt) == 16 || (dt) == 32,                            \
                   "vector op '" mn "' has elements of neither 16 nor 32 bits");                  \
    _Static_assert(!((unit) == WSE_U_FPU || ((unit) == WSE_U_VEC && (vop) != WSE_V_MOV)) ||    \
                   WSE_HAS_EVENT(energy), "arithmetic op '" mn "' names no energy event");
#include "arch/wse/wse_isa.def"
#undef WSE_OP
