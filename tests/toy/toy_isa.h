/* tests/toy/toy_isa.h — the toy ISA (see toy_isa.def), for core tests and the test-only toy family. */
#ifndef TS_TESTS_TOY_ISA_H
#define TS_TESTS_TOY_ISA_H

#include "core/isa.h"

/* Opcodes, in .def order: TOY_OP_NOP, TOY_OP_LI, ... TOY_OP_COUNT is the number of ops. */
typedef enum toy_op {
#define TOY_OP(name, mn, opnds, unit, lat, energy, flags, doc) TOY_OP_##name,
#include "tests/toy/toy_isa.def"
#undef TOY_OP
    TOY_OP_COUNT
} toy_op;

/* Units (the UNIT column). */
enum { TOY_UNIT_CTL = 0, TOY_UNIT_ALU, TOY_UNIT_FPU, TOY_UNIT_MEM, TOY_UNIT_NET, TOY_UNIT_COUNT };

/* Flags (the FLAGS column). */
enum {
    TOY_F_BRANCH = 1u << 0, /* may change pc to its label operand */
    TOY_F_COND = 1u << 1,   /* the branch depends on a register */
    TOY_F_LOAD = 1u << 2,   /* reads tile memory */
    TOY_F_STORE = 1u << 3,  /* writes tile memory */
    TOY_F_SEND = 1u << 4,   /* sends a word to another tile */
    TOY_F_RECV = 1u << 5,   /* receives a word, blocking */
    TOY_F_SYNC = 1u << 6,   /* barrier across all tiles */
    TOY_F_WAIT = 1u << 7,   /* stalls for an immediate number of cycles */
    TOY_F_HALT = 1u << 8,   /* stops the tile */
};

/* Registers r0..r7 and the one stream kind, "tile". */
#define TOY_NREGS 8
enum { TOY_KIND_TILE = 0 };

/* The table: arch "toy", TOY_OP_COUNT ops, registers "r0".."r7", stream kinds {"tile"}. */
extern const ts_isa ts_toy_isa;

#endif
