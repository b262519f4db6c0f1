/* arch/wse/wse.h — the wafer-mesh family (Cerebras-style WSE): its config struct, the family
 * vtable, and entry points that let tests and benchmarks drive a model without a YAML file.
 *
 * Everything the model does is documented in docs/wse.md; where each number comes from is in the
 * schema (wse_cfg.c) and in research/cerebras_wse.md.
 */
#ifndef TS_ARCH_WSE_H
#define TS_ARCH_WSE_H

#include <stdbool.h>
#include <stdint.h>
#include "core/sim.h"

enum { WSE_ARB_ROUND_ROBIN = 0, WSE_ARB_FIXED = 1 };
enum { WSE_ROUTE_COLOUR = 0, WSE_ROUTE_XY, WSE_ROUTE_YX, WSE_ROUTE_O1TURN, WSE_ROUTE_WESTFIRST };

/* The typed config, filled from the schema (wse_cfg.c). Units: cycles, bytes, Hz, metres. */
typedef struct ts_wse_cfg {
    uint64_t width, height;      /* mesh.width, mesh.height: PEs */
    double clock_hz;             /* clock */
    uint64_t colours;            /* fabric.colours */
    uint64_t link_bits;          /* fabric.link_bits (32 only) */
    uint64_t hop_latency;        /* fabric.hop_latency: cycles router to router */
    int routing;                 /* fabric.routing: WSE_ROUTE_* */
    uint64_t vcs;                /* fabric.vcs: colours routed by destination unless routing is colour */
    uint64_t ramp_latency;       /* fabric.ramp_latency: cycles core to router and router to core */
    uint64_t queue_depth;        /* router.queue_depth: wavelets per (input port, colour) */
    int arbitration;             /* router.arbitration: WSE_ARB_* */
    uint64_t route_cycles;       /* router.route_cycles: pipeline stages of every router a wavelet */
    uint64_t vc_alloc_cycles;    /* router.vc_alloc_cycles: passes, before its switch traversal */
    uint64_t switch_alloc_cycles; /* router.switch_alloc_cycles */
    uint64_t iq_depth;           /* pe.input_queue_depth: wavelets per colour, router to core */
    uint64_t oq_depth;           /* pe.output_queue_depth: wavelets per colour, core to router */
    uint64_t sram_bytes;         /* pe.sram */
    uint64_t sram_banks;         /* pe.sram_banks */
    uint64_t bank_interleave;    /* pe.bank_interleave: bytes per bank before the next */
    uint64_t read_bytes;         /* pe.sram_read_bytes per cycle */
    uint64_t write_bytes;        /* pe.sram_write_bytes per cycle */
    uint64_t simd_fp16;          /* pe.simd.fp16 */
    uint64_t simd_fp32_add;      /* pe.simd.fp32_add */
    uint64_t simd_fp32_mul;      /* pe.simd.fp32_mul */
    uint64_t simd_fp32_mac;      /* pe.simd.fp32_mac */
    uint64_t simd_fp32_mov;      /* pe.simd.fp32_mov */
    uint64_t microthreads;       /* pe.microthreads */
    uint64_t pipeline_latency;   /* pe.pipeline_latency: cycles from operand read to the ramp */
    uint64_t task_start_latency; /* pe.task_start_latency: cycles from pick to first issue */
    double pitch_x, pitch_y;     /* pe.pitch_x, pe.pitch_y: metres (link length E-W, N-S) */
    bool timing_only;            /* sim.timing_only: no SRAM data, no arithmetic */
    uint64_t pe_array_limit;     /* report.pe_array_limit: per-PE arrays only up to this many PEs */
} ts_wse_cfg;

extern const ts_family ts_wse_family;
extern const ts_schema ts_wse_schema;

/* Fill c with the schema defaults (then the family check). For tests that need no YAML. */
ts_status ts_wse_cfg_defaults(ts_wse_cfg *c, ts_err *err);
/* Cross-key checks (the schema's check hook). */
ts_status ts_wse_cfg_check(void *cfg, ts_err *err);

/* Create a model from a typed config (what the vtable's create does after ts_config_data). */
ts_status ts_wse_create(ts_model **out, const ts_wse_cfg *c, const ts_run_opts *opts, ts_err *err);

/* Counters tests read after a run. */
typedef struct ts_wse_counts {
    uint64_t cycles;
    uint64_t tile_cycles;        /* PE-cycles evaluated: active-set sizes summed over cycles */
    /* PE-cycles of PEs with code that were busy or stalled (the report's pe.busy and pe.stall): the
     * simulated work, the same whichever cycles the engine evaluates */
    uint64_t pe_working;
    uint64_t wavelets_injected;  /* sent by cores into the fabric */
    uint64_t wavelets_delivered; /* handed by routers to cores */
    uint64_t hops;               /* router-to-router link traversals */
    uint64_t insns;
    uint64_t sram_read, sram_written; /* bytes */
} ts_wse_counts;
void ts_wse_counts_get(const ts_model *m, ts_wse_counts *out);

/* Read n bytes of PE (x, y)'s SRAM at addr into dst (zeros where never written). 0 on success. */
int ts_wse_read_sram(const ts_model *m, uint32_t x, uint32_t y, uint64_t addr, void *dst, size_t n);
/* Cycle at which the k-th data wavelet (k from 0) of colour c was handed to PE (x, y)'s core queue;
 * UINT64_MAX if fewer arrived. Only the first WSE_ARRIVAL_LOG per PE and colour are kept. */
#define WSE_ARRIVAL_LOG 8
uint64_t ts_wse_arrival(const ts_model *m, uint32_t x, uint32_t y, uint32_t c, uint32_t k);
/* Number of data wavelets of colour c handed to PE (x, y)'s core. */
uint64_t ts_wse_arrivals(const ts_model *m, uint32_t x, uint32_t y, uint32_t c);

#endif
