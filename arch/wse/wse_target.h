/* arch/wse/wse_target.h — the wafer mesh as a compiler sees it: typed machine facts derived once
 * from the family's typed config (ts_wse_cfg, arch/wse/wse.h), the fixed numbering and limits of
 * the PE ISA a compiler writes against, and the names of the run's statistics a lowering reads
 * back for its per-layer attribution.
 *
 * A lowering (workloads/wse/) sees the chip only through this header and the ISA table
 * (wse_isa.def, wse_isa.h): it never reads a config key by string.
 */
#ifndef TS_ARCH_WSE_TARGET_H
#define TS_ARCH_WSE_TARGET_H

#include <stdint.h>
#include "arch/wse/wse_isa.h"
#include "core/config.h"
#include "core/err.h"

/* What a compiler needs to know of one chip config. */
typedef struct ts_wse_target {
    uint32_t width, height; /* mesh.width, mesh.height: PEs; PE (x, y) is stream y * width + x */
    uint64_t sram_bytes;    /* pe.sram: bytes per PE */
    uint32_t colours;       /* fabric.colours: routable colours (virtual channels) */
} ts_wse_target;

/* Fill out from a chip config whose arch is "wse", from its typed struct. Errors (TS_EINPUT):
 * "config 'x' is for arch 'y', not 'wse'"; "config 'x' lacks a key the WSE lowering reads" when
 * the config was not read with the family's schema. */
ts_status ts_wse_target_from_config(const ts_config *cfg, ts_wse_target *out, ts_err *err);

/* Port mask bits of `route` and `swpos` (wse_isa.def: N = 1, S = 2, E = 4, W = 8, R = 16, the
 * ramp to the PE's own core), from the port numbers of wse_isa.h. */
enum {
    WSE_MASK_N = 1 << WSE_N,
    WSE_MASK_S = 1 << WSE_S,
    WSE_MASK_E = 1 << WSE_E,
    WSE_MASK_W = 1 << WSE_W,
    WSE_MASK_R = 1 << WSE_R,
};

/* The most elements one DSD covers (dsdm, dsdin, dsdout, dsdlen: the loader and the executor
 * refuse a length outside 0..65535, wse_sim.c). Longer vectors are moved in pieces. */
#define WSE_DSD_MAX_LEN 65535

/* Names of the run's statistics (wse_report.c) a lowering reads after a run. */
#define WSE_STAT_BUSY_PER_PE "pe.busy_per_pe"   /* array: busy cycles of PE y * width + x */
#define WSE_STAT_STALL_PER_PE "pe.stall_per_pe" /* array: stall cycles of each PE */
/* arrays: wavelets each PE's router sent to its neighbour to the north, south, east, west */
#define WSE_STAT_LINK_NORTH "fabric.link_north"
#define WSE_STAT_LINK_SOUTH "fabric.link_south"
#define WSE_STAT_LINK_EAST "fabric.link_east"
#define WSE_STAT_LINK_WEST "fabric.link_west"
/* events table: energy events per region of PEs the run options asked for (ts_run_opts.regions) */
#define WSE_STAT_REGION_EVENTS "region_events"
/* table: per region, busy and stall cycles of its PEs, its busiest PE's busy cycles and the
 * wavelets its routers sent over the four links (on any mesh: the per-PE arrays stop at
 * report.pe_array_limit) */
#define WSE_STAT_REGION_STATS "region_stats"

#endif
