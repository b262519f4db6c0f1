/* arch/ipu/ipu_int.h — private declarations of the IPU family (not for other modules).
 *
 * The family itself is ts_ipu_family (declared in arch/registry.c); ipu.h exposes the few helpers
 * tests and benchmarks use. Everything here is shared between ipu_isa.c, ipu_config.c and
 * ipu_sim.c only.
 */
#ifndef TS_ARCH_IPU_INT_H
#define TS_ARCH_IPU_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "core/half.h"
#include "core/config.h"
#include "core/isa.h"

/* Opcodes, from the one table. */
enum ipu_op {
#define IPU_OP(id, mn, ops, cls, unit, ctx, lat, ev, ec, doc) IPU_OP_##id,
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
    IPU_OP_COUNT
};

/* Which contexts may issue an op (the .def's ctx column). */
#define IPU_CTX_S 'S'
#define IPU_CTX_W 'W'
#define IPU_CTX_B 'B'

enum ipu_unit { IPU_U_ALU, IPU_U_MEM, IPU_U_FPU, IPU_U_AMP, IPU_U_CTL, IPU_U_XCH, IPU_U_COUNT };

/* Register numbering: $m0..$m15 are 0..15, $a0..$a15 are 16..31. */
#define IPU_NREGS 32
#define IPU_AREG0 16

/* Control and status registers read by `get`. */
enum { IPU_CSR_TILE = 0, IPU_CSR_NTILES = 1, IPU_CSR_WORKER = 2, IPU_CSR_NWORKERS = 3 };

/* Per-op static facts used by the loader and executor (expanded from the .def). */
typedef struct ipu_opfacts {
    const char *classes;  /* operand classes, see ipu_isa.def */
    uint8_t unit;
    char ctx;             /* 'S', 'W' or 'B' */
    const char *energy;
    double ecount;
} ipu_opfacts;

extern const ipu_opfacts ts_ipu_opfacts[IPU_OP_COUNT];
extern const ts_isa ts_ipu_isa;
extern const ts_schema ts_ipu_schema;

/* The typed config (filled from the schema in ipu_config.c; derived fields set by its check). */
typedef struct ts_ipu_cfg {
    char *variant;                  /* owned by the ts_config */
    uint64_t tiles;
    double clock_hz;
    /* tile */
    uint64_t sram_bytes;
    uint64_t worker_contexts;
    uint64_t load_latency;          /* cycles from a load's issue to its result */
    double load_bpc;                /* widest load per cycle, bytes */
    double store_bpc;               /* widest store per cycle, bytes */
    uint64_t interleaved_base;      /* 128-bit loads only at or above this address */
    uint64_t element_bytes;         /* size of one SRAM element (conflict checks) */
    uint64_t insn_bytes;            /* code size of one instruction */
    /* AMP */
    uint64_t amp_macs_f16;          /* fp16 x fp16 -> fp32 MACs per cycle per tile */
    uint64_t amp_macs_f32;          /* fp32 MACs per cycle per tile */
    /* exchange */
    double xch_bpc;                 /* bytes a tile sends (and receives) per cycle */
    uint64_t lat_base;              /* cycles, nearest pair */
    uint64_t lat_per_group;         /* cycles per column group of distance */
    uint64_t lat_per_row;           /* cycles per row of distance */
    uint64_t tiles_per_column;
    uint64_t columns_per_group;
    uint64_t spine_port_words;      /* words per cycle a column puts straight onto the spine */
    uint64_t spine_buffer_cycles;   /* extra cycles through the column's buffered spine stage */
    double tile_pitch_m;            /* metres between neighbouring tiles (wire energy) */
    /* sync */
    uint64_t sync_cycles;
    uint64_t sync_skew;             /* max release skew across the chip */
    /* host */
    double host_bw;                 /* bytes/s */
    double host_latency_s;
    uint64_t host_bytes;            /* size of the modelled host buffer */
    /* derived in check() */
    uint32_t amp_units_f16, amp_units_f32, words_per_cycle;
    uint64_t host_latency_cycles;
    double host_bpc;
} ts_ipu_cfg;


#endif
