/* arch/ipu/ipu_target.h — the IPU as a compiler sees it: typed machine facts, derived once from the
 * family's typed config (ts_ipu_cfg, arch/ipu/ipu_config.c), and the numbering the instruction
 * streams use. A lowering knows the chip through this header and the ISA table (ipu_isa.def) only;
 * it never reads a config key by name. docs/ipu.md describes the keys behind each field.
 */
#ifndef TS_ARCH_IPU_TARGET_H
#define TS_ARCH_IPU_TARGET_H

#include <stdint.h>
#include "core/config.h"
#include "core/err.h"

/* Register numbering of the operands: $m0..$m15 are 0..15, $a0..$a15 are 16..31. */
#define TS_IPU_MREG(n) (n)
#define TS_IPU_AREG(n) (16 + (n))

/* Control and status registers `get` reads (ipu_isa.def): this worker's id (-1 on the supervisor). */
#define TS_IPU_CSR_WORKER 2

/* The operand of `sync`: wait for this tile's workers, or the chip-wide barrier that ends a
 * superstep. */
#define TS_IPU_SYNC_WORKERS 0
#define TS_IPU_SYNC_CHIP 1

/* The tables of a run's results the per-layer attribution joins with: one row per BSP superstep
 * (id, start, compute, exchange, sync, critical tile, exchange bytes), and the events of each
 * superstep (ts_results_price_rows). */
#define TS_IPU_TABLE_SUPERSTEPS "supersteps"
#define TS_IPU_TABLE_SUPERSTEP_EVENTS "superstep_events"

/* What a lowering needs to know about one chip. */
typedef struct ts_ipu_target {
    uint32_t tiles;            /* tiles on the chip (`tiles`) */
    uint64_t sram_bytes;       /* memory per tile (`tile.sram`) */
    uint64_t element_bytes;    /* SRAM element (`tile.element_bytes`): a send reading and a receive
                                * writing one element in one cycle conflict */
    uint64_t interleaved_base; /* 128-bit loads (AMP coefficients) only at or above (`tile.interleaved_base`) */
    uint32_t amp_macs_f32;     /* AMP f32 MACs per cycle (`amp.macs_per_cycle_f32`) */
    uint32_t amp_macs_f16;     /* AMP f16 MACs per cycle (`amp.macs_per_cycle_f16`) */
    uint32_t amp_units_f32;    /* AMP f32 units, outputs per pass: 2 MACs each (f32v2amp takes pairs) */
    uint32_t amp_units_f16;    /* AMP f16 units: 4 MACs each (f16v4amp takes quads) */
    uint32_t workers;          /* worker contexts per tile (`tile.worker_contexts`) */
    uint32_t load_latency;     /* cycles from a load's issue to its result (`tile.load_latency`) */
    uint32_t load_bytes;       /* widest load per cycle, bytes (`tile.load_bytes_per_cycle`) */
    uint32_t xbytes;           /* exchange bytes a tile sends per cycle (`exchange.bytes_per_cycle`) */
    uint32_t sync_cycles;      /* one chip-wide sync (`sync.internal_cycles`) */
} ts_ipu_target;

/* The facts of a config whose arch is "ipu" into *out. TS_EINPUT "config 'x' is for arch 'y', not
 * 'ipu'" for another family's config. */
ts_status ts_ipu_target_from_config(const ts_config *cfg, ts_ipu_target *out, ts_err *err);

#endif
