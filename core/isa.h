/* core/isa.h — what a family's ISA table gives the generic assembler, disassembler and checker.
 *
 * Each family keeps one X-macro file, arch/<f>/<f>_isa.def, and expands it into an array of
 * ts_opinfo (plus its own enum and executor cases). Core never names an opcode.
 */
#ifndef TS_CORE_ISA_H
#define TS_CORE_ISA_H

#include <stddef.h>
#include <stdint.h>

#define TS_MAX_OPNDS 7

/* Operand codes: a kind in the low nibble, roles in the high bits. */
enum {
    TS_OK_NONE = 0,
    TS_OK_REG = 1,    /* a register: one of the family's register names */
    TS_OK_IMM = 2,    /* an integer immediate, or a .equ symbol */
    TS_OK_FIMM = 3,   /* a float immediate, stored as IEEE binary32 bits */
    TS_OK_LABEL = 4,  /* a code label in the same stream, stored as an absolute pc */
    TS_OK_KIND_MASK = 0x0f,
    TS_OR_READ = 0x10,  /* the instruction reads this register */
    TS_OR_WRITE = 0x20, /* the instruction writes this register */
};
#define TS_O_RR (TS_OK_REG | TS_OR_READ)
#define TS_O_RW (TS_OK_REG | TS_OR_WRITE)
#define TS_O_RRW (TS_OK_REG | TS_OR_READ | TS_OR_WRITE)
#define TS_O_IMM TS_OK_IMM
#define TS_O_FIMM TS_OK_FIMM
#define TS_O_LBL TS_OK_LABEL

/* One instruction's static description. */
typedef struct ts_opinfo {
    const char *mnemonic;          /* lower case, e.g. "f32v2add" */
    uint8_t opnd[TS_MAX_OPNDS];    /* operand codes, 0-terminated */
    uint16_t unit;                 /* family-defined unit kind that executes it */
    const char *latency;           /* config key giving its latency, or NULL for 1 cycle */
    const char *energy;            /* energy table event it costs, or NULL */
    uint32_t flags;                /* family-defined (branch, sync, send, ...) */
    const char *doc;               /* one line: semantics, e.g. "$a0 := $a1 + $a2" */
} ts_opinfo;

typedef struct ts_isa {
    const char *arch;
    const ts_opinfo *ops;
    size_t nops;
    const char *const *regs;         /* register names as written, index = register number */
    size_t nregs;
    const char *const *stream_kinds; /* names for .stream/.data targets, e.g. "tile", "queue", "pe" */
    size_t nstream_kinds;
} ts_isa;

/* Number of operands of op. */
int ts_isa_nopnds(const ts_opinfo *op);
/* Look up a mnemonic; -1 if none. */
int ts_isa_find(const ts_isa *isa, const char *mnemonic, size_t len);
/* Look up a register name; -1 if none. */
int ts_isa_reg(const ts_isa *isa, const char *name, size_t len);

#endif
