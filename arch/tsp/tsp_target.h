/* arch/tsp/tsp_target.h — the TSP as a compiler sees it: typed machine facts derived once from a
 * loaded config.
 *
 * A lowering reads the chip only through this struct and the ISA table (tsp_isa.def): geometry,
 * capacities, latencies, the floorplan's stream-register positions and the queue and register
 * numbering. Every floorplan fact comes from the family's own parse (ts_tsp_layout over the typed
 * config), so the compiler and the simulator cannot disagree on a floorplan, and the register
 * numbers are the family's own (tsp_int.h), not copies. docs/tsp.md describes the machine.
 */
#ifndef TS_ARCH_TSP_TARGET_H
#define TS_ARCH_TSP_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include "core/config.h"
#include "core/err.h"

/* Slices of one kind per hemisphere the target describes (the floorplan's limit on all slices). */
#define TS_TSP_TARGET_MAX_SLICES 512
/* Stream registers per direction and VXM ALUs the ISA can name (their register ranges). */
#define TS_TSP_TARGET_MAX_STREAMS 64
#define TS_TSP_TARGET_MAX_ALUS 16

/* Register numbers as instructions write them (the ISA's register names). */
typedef struct ts_tsp_regs {
    int32_t east, west;       /* stream s flowing east is east + s (s0e..), flowing west west + s (s0w..) */
    int32_t alu;              /* the latch of VXM ALU a is alu + a (alu0..) */
    int32_t nul;              /* nul: no stream (a VXM result kept in its latch only) */
    int32_t i8, i16, i32, f16, f32; /* type selectors */
} ts_tsp_regs;

/* Functional delays d_func (cycles from issue to the result in superlane 0), per instruction. */
typedef struct ts_tsp_dfunc {
    uint32_t read, write, iw, abc, acc, add, mul, relu, cvt, mask, exp, rsqrt;
} ts_tsp_dfunc;

/* Dispatch skews d_skew (cycles from dispatch to operand read), per unit. */
typedef struct ts_tsp_dskew {
    uint32_t mem, vxm, mxm, sxm;
} ts_tsp_dskew;

/* The machine. Hemisphere counts and numbers go from the VXM outward (ISCA20 Fig. 4): MEM W0 is the
 * west MEM slice next to the VXM, plane W0 the west MXM plane next to it. */
typedef struct ts_tsp_target {
    /* geometry */
    uint32_t superlanes, lanes;     /* vector = superlanes x lanes bytes */
    uint32_t streams;               /* stream registers per direction */
    uint32_t mem_west, mem_east;    /* MEM slices per hemisphere */
    uint32_t mxm_west, mxm_east;    /* MXM planes per hemisphere */
    uint32_t sxm_west, sxm_east;    /* SXM slices per hemisphere */
    uint32_t mxm_dim;               /* plane size (= vector length) */
    uint32_t mxm_queues, vxm_alus, sxm_queues; /* queues per plane, ALUs (one queue each), queues per SXM */
    uint32_t fp16_interval;         /* cycles an f16 abc occupies its plane */
    /* memory */
    uint64_t words;                 /* vectors per MEM slice */
    uint32_t banks;                 /* banks per MEM slice */
    /* instruction queues and fetch */
    uint64_t queue_capacity;        /* entries a queue holds (preloaded before the run) */
    uint32_t ifetch_bytes;          /* text one ifetch brings */
    uint32_t fetch_bpc;             /* fetch bandwidth per queue, bytes per cycle */
    uint32_t insn_bytes;            /* bytes of one queue entry */
    double clock_hz;
    /* latencies */
    ts_tsp_dskew d_skew;
    ts_tsp_dfunc d_func;
    /* the floorplan: stream-register positions (0 = west edge) */
    uint32_t npos;                  /* positions */
    uint32_t pos_vxm;
    bool sr_map;                    /* streams.sr_map is given: positions are not one per slice */
    uint16_t pos_mem_w[TS_TSP_TARGET_MAX_SLICES], pos_mem_e[TS_TSP_TARGET_MAX_SLICES]; /* by hemisphere number */
    uint16_t pos_mxm_w[TS_TSP_TARGET_MAX_SLICES], pos_mxm_e[TS_TSP_TARGET_MAX_SLICES];
    /* queue numbering: MEM W0.., MEM E0.. (also the MEM data-segment indexes), VXM ALUs, MXM planes
     * (west from the VXM outward, then east; mxm_queues each), SXMs (sxm_queues each) */
    uint32_t q_vxm, q_mxm, q_sxm;   /* first queue of each kind (MEM from 0) */
    uint32_t nqueues;
    ts_tsp_regs reg;
} ts_tsp_target;

/* A program run once per sample of a batch (docs/tsp.md, *A batch run once per sample*): the
 * symbol TS_TSP_SYM_RUNS (a constant) gives the runs; data segments of kind TS_TSP_SEG_INPUT (index:
 * the MEM slice, address: sample x mem.slice_bytes + the byte address) are what the host writes
 * into MEM before each run after the first (that sample's inputs, and what the run before overwrote
 * of the words it read first); segments of kind TS_TSP_SEG_OUTPUT (index: the slice, address: the
 * byte address; their bytes unused) are what the host reads back after each run. */
enum { TS_TSP_SEG_INPUT = 2, TS_TSP_SEG_OUTPUT = 3 };
#define TS_TSP_SYM_RUNS "tsp.runs"

/* Config keys a compiler names in its messages (which setting to change); it never reads them. */
#define TS_TSP_KEY_QUEUE_CAPACITY "icu.queue_capacity"
#define TS_TSP_KEY_ABC "d_func.abc"
#define TS_TSP_KEY_SR_MAP "streams.sr_map"

/* Fill *out from a loaded config whose arch is "tsp". Errors (TS_EINPUT): "config 'x' is for arch
 * 'y', not 'tsp'", a value the target holds in 32 bits that is larger, and the floorplan parse's own
 * messages (which a loaded config has already passed). */
ts_status ts_tsp_target_from_config(const ts_config *cfg, ts_tsp_target *out, ts_err *err);

#endif
