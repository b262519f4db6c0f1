/* arch/tsp/tsp_int.h — private declarations of the TSP family (not for other modules).
 *
 * Shared by tsp_isa.c (the ISA table), tsp_config.c (schema, floorplan and queue layout) and
 * the cycle model's files (tsp_model.h lists them). Tests and the benchmark use the public
 * helpers in tsp.h.
 */
#ifndef TS_ARCH_TSP_INT_H
#define TS_ARCH_TSP_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "core/half.h"
#include "core/config.h"
#include "core/isa.h"
#include "core/sim.h"

/* Units (the .def UNIT column): which queues may issue an instruction. */
enum tsp_unit { TSP_U_ICU, TSP_U_MEM, TSP_U_VXM, TSP_U_MXM, TSP_U_SXM, TSP_U_C2C, TSP_U_COUNT };

/* Flags (the .def FLAGS column). */
enum {
    TSP_F_READS = 1u << 0, /* reads at least one stream register or latch (tag checked) */
    TSP_F_MEMR = 1u << 1,  /* a bank read: pairs with a TSP_F_MEMW in the same cycle */
    TSP_F_MEMW = 1u << 2,  /* a bank write */
    TSP_F_XSL = 1u << 3,   /* output needs every superlane's input: d_func >= d_skew + superlanes */
    TSP_F_INT = 1u << 4,   /* integer types only */
    TSP_F_FLOAT = 1u << 5, /* floating-point types only */
};

enum tsp_op {
#define TSP_OP(id, mn, ops, cls, unit, ev, fl, doc) TSP_OP_##id,
#define TSP_OPL(id, mn, ops, cls, unit, def, src, ev, fl, doc) TSP_OP_##id,
#include "arch/tsp/tsp_isa.def"
#undef TSP_OP
#undef TSP_OPL
    TSP_OP_COUNT
};

/* Register numbering (the ISA's register names). */
#define TSP_MAX_STREAMS 64                       /* per direction */
#define TSP_REG_EAST 0                           /* s0e..s63e: 0..63 */
#define TSP_REG_WEST TSP_MAX_STREAMS             /* s0w..s63w: 64..127 */
#define TSP_REG_ALU (2 * TSP_MAX_STREAMS)        /* alu0..alu15: 128..143 */
#define TSP_MAX_ALUS 16
#define TSP_REG_NUL (TSP_REG_ALU + TSP_MAX_ALUS) /* nul: 144 */
#define TSP_REG_TYPE (TSP_REG_NUL + 1)           /* i8, i16, i32, f16, f32: 145..149 */
#define TSP_NREGS (TSP_REG_TYPE + 5)

enum tsp_type { TSP_I8, TSP_I16, TSP_I32, TSP_F16, TSP_F32, TSP_NTYPES };

/* Stream kinds of programs: instruction queues, and MEM slices for data segments. */
enum { TSP_KIND_QUEUE = 0, TSP_KIND_MEM = 1, TSP_KIND_INPUT = 2, TSP_KIND_OUTPUT = 3 }; /* tsp_target.h */

/* Slice kinds of the floorplan. */
enum tsp_slice { TSP_S_MEM, TSP_S_VXM, TSP_S_MXM, TSP_S_SXM, TSP_S_COUNT };

/* Per-op static facts (expanded from the .def). */
typedef struct tsp_opfacts {
    const char *classes;
    uint8_t unit;
    uint32_t flags;
    const char *energy; /* "add", "mul" or NULL */
} tsp_opfacts;

extern const tsp_opfacts ts_tsp_opfacts[TSP_OP_COUNT];
extern const ts_isa ts_tsp_isa;
extern const ts_schema ts_tsp_schema;

/* The typed config, filled from the schema (tsp_config.c). */
typedef struct ts_tsp_cfg {
    uint64_t superlanes, lanes;
    double clock_hz;
    ts_strlist floorplan;           /* owned by the ts_config */
    uint64_t streams;               /* per direction */
    ts_intlist sr_map;              /* owned by the ts_config; empty = one position per slice */
    double hop_m;                   /* distance between stream-register positions (wire energy) */
    uint64_t mem_slice_bytes, mem_banks;
    uint64_t mxm_dim, mxm_queues, mxm_fp16_interval;
    uint64_t vxm_alus;
    uint64_t sxm_queues, sxm_max_transposes;
    uint64_t icu_capacity, icu_ifetch_bytes, icu_sync_cycles, icu_insn_bytes, icu_fetch_bpc;
    uint64_t c2c_links, c2c_latency, c2c_hac_period;
    uint64_t d_skew[TSP_U_COUNT];
    uint64_t d_func[TSP_OP_COUNT];
} ts_tsp_cfg;

/* The floorplan and queue layout derived from a config (tsp_config.c). Queues are numbered by
 * kind: MEM slices first (west hemisphere MEM0..MEMn-1 counted from the VXM outward, then east),
 * then the VXM ALUs, then the MXM planes' queues (planes numbered west from the VXM outward, then
 * east), then the SXMs' queues (west, then east). MEM data segments use the MEM numbering. */
#define TSP_MAX_SLICES 512
#define TSP_MAX_QUEUES 1024
typedef struct tsp_layout {
    uint32_t nslices, npos;
    uint8_t kind[TSP_MAX_SLICES];   /* tsp_slice */
    uint16_t pos[TSP_MAX_SLICES];   /* stream-register position (0 = west edge) */
    int8_t hemi[TSP_MAX_SLICES];    /* 0 west, 1 east, -1 the VXM */
    uint16_t num[TSP_MAX_SLICES];   /* MEM, MXM plane or SXM number as above; 0 for the VXM */
    uint32_t vxm;                   /* slice of the VXM */
    uint32_t nmem, nmxm, nsxm, mem_per_hemi[2];
    uint16_t mem_slice[TSP_MAX_SLICES], mxm_slice[TSP_MAX_SLICES], sxm_slice[TSP_MAX_SLICES];
    uint32_t nqueues, q_vxm, q_mxm, q_sxm; /* first queue of each kind (MEM start at 0) */
    uint16_t qslice[TSP_MAX_QUEUES];
    uint8_t qsub[TSP_MAX_QUEUES];   /* ALU number, or queue number within its MXM plane or SXM */
} tsp_layout;

/* Parse the floorplan and stream-register map; TS_EINPUT naming what is wrong. */
ts_status ts_tsp_layout(const ts_tsp_cfg *c, tsp_layout *out, ts_err *err);
/* Name of a slice for messages, e.g. "MEM W12", "VXM", "MXM E1", "SXM W". */
void ts_tsp_slice_name(const tsp_layout *l, uint32_t slice, char *buf, size_t n);
/* Name of a stream register for messages, e.g. "s3e". */
void ts_tsp_reg_name(int reg, char *buf, size_t n);
/* Byte width of a type. */
static inline uint32_t tsp_type_width(int t)
{
    static const uint8_t w[TSP_NTYPES] = {1, 2, 4, 2, 4};
    return w[t];
}


#endif
