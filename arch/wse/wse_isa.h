/* arch/wse/wse_isa.h — the wafer-mesh PE ISA (see wse_isa.def): opcodes, units, flags, table. */
#ifndef TS_ARCH_WSE_ISA_H
#define TS_ARCH_WSE_ISA_H

#include <stdint.h>
#include "core/isa.h"

/* Units (the UNIT column). */
enum { WSE_U_CFG = 0, WSE_U_ALU, WSE_U_FPU, WSE_U_MEM, WSE_U_CTL, WSE_U_NET, WSE_U_DSD, WSE_U_VEC, WSE_U_COUNT };

/* Element operations of vector ops (the VOP column). */
enum { WSE_V_NONE = 0, WSE_V_ADD, WSE_V_SUB, WSE_V_MUL, WSE_V_MAC, WSE_V_MOV };

/* Flags (the FLAGS column). */
enum {
    WSE_F_CFG = 1u << 0,    /* applied at load; must precede executable instructions */
    WSE_F_LOAD = 1u << 1,   /* reads SRAM */
    WSE_F_STORE = 1u << 2,  /* writes SRAM */
    WSE_F_BRANCH = 1u << 3, /* may change pc to its label operand */
    WSE_F_EXIT = 1u << 4,   /* ends the task */
};

/* Opcodes in .def order; WSE_OP_COUNT is the number of ops. */
typedef enum wse_op {
#define WSE_OP(name, mn, opnds, unit, vop, dt, width, energy, flags, doc) WSE_OP_##name,
#include "arch/wse/wse_isa.def"
#undef WSE_OP
    WSE_OP_COUNT
} wse_op;

/* Energy-event counters (the ENERGY column). Every row that names an event has a counter slot of
 * its own, numbered in .def order at compile time: WSE_EVROW_<NAME> for such a row, WSE_EV_ROWS of
 * them. Rows that name none share slot WSE_EV_ROWS, counted and never charged, so the executor adds
 * to a slot without testing for one. The report charges each slot under its row's event name, rows
 * of the same event summed (ts_wse_events), so no list of event names is kept beside the .def.
 * WSE_HAS_EVENT(e) is 1 for a string literal and 0 for NULL, as an integer constant expression. */
#define WSE_HAS_EVENT(e) _Generic((e), char *: 1, default: 0)
enum {
#define WSE_OP(name, mn, opnds, unit, vop, dt, width, energy, flags, doc) \
    WSE_EVROW_##name, WSE_EVROW_LAST_##name = WSE_EVROW_##name + WSE_HAS_EVENT(energy) - 1,
#include "arch/wse/wse_isa.def"
#undef WSE_OP
    WSE_EV_ROWS
};

/* What the executor needs about each op beyond ts_opinfo. */
typedef struct wse_opfacts {
    uint8_t unit, vop, dtype;
    uint8_t ev;         /* counter slot of its energy event, WSE_EV_ROWS if none: vector ops add their
                         * elements to it (wse_vec.c) */
    uint8_t ev_issue;   /* counter slot an issue adds one to: ev for a scalar op, WSE_EV_ROWS for a
                         * vector op (wse_pe.c) */
    const char *width;  /* config key of the SIMD width, or NULL */
    const char *energy; /* energy event (per issue or per element), or NULL */
    uint8_t effect;     /* 1: it changes more than the core's registers and pc: a store, a wavelet
                         * sent or taken, a descriptor, a vector op, the task state
                         * (core/loopmark.h) */
} wse_opfacts;

/* Registers r0..r15 (a data task starts with its wavelet's payload in r0). */
#define WSE_NREGS 16
/* DSD registers per PE (assumed: research §1.5 says the count per DSR file is not public). */
#define WSE_NDSD 16
/* The one stream kind: "pe", index y * width + x. */
enum { WSE_KIND_PE = 0 };

/* Port numbers and the mask bits written in routes. */
enum { WSE_N = 0, WSE_S, WSE_E, WSE_W, WSE_R, WSE_NPORTS };
#define WSE_PORT_MASK_ALL 0x1f

extern const ts_isa ts_wse_isa;
extern const wse_opfacts ts_wse_opfacts[WSE_OP_COUNT];

/* The energy events the .def names, each once, in the order of the first row naming it: their
 * names into names (at most WSE_EV_ROWS) and, for each counter slot, the index in names of the
 * event it is charged as into ev_of. Returns their number. O(WSE_EV_ROWS^2) string compares: for
 * collecting results, not for the cycle loop. */
size_t ts_wse_events(const char *names[WSE_EV_ROWS], uint8_t ev_of[WSE_EV_ROWS]);

#endif
