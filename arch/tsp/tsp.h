/* arch/tsp/tsp.h — the TSP family (Groq-style Tensor Streaming Processor) and the helpers tests,
 * benchmarks and lowerings use to address its queues and slices. Model: docs/tsp.md. */
#ifndef TS_ARCH_TSP_H
#define TS_ARCH_TSP_H

#include <stdint.h>
#include "core/sim.h"

extern const ts_family ts_tsp_family;

/* The TSP schema when arch is "tsp", else NULL (a ts_config_opts.schema look-up). */
const ts_schema *ts_tsp_schema_lookup(const char *arch);

/* Queue numbers of a loaded config (the family's typed config, ts_config_data). -1 if there is
 * no such unit. Hemisphere 0 is west, 1 east; MEM n counts from the VXM outward (ISCA20 Fig. 4);
 * planes are numbered within their hemisphere from the VXM outward. */
int ts_tsp_queue_mem(const void *cfg, int hemi, int n);
int ts_tsp_queue_vxm(const void *cfg, int alu);
int ts_tsp_queue_mxm(const void *cfg, int hemi, int plane, int j);
int ts_tsp_queue_sxm(const void *cfg, int hemi, int j);
/* The data-segment index of MEM slice n of a hemisphere, -1 if none. */
int ts_tsp_mem_index(const void *cfg, int hemi, int n);
/* Stream-register position of the slice a queue issues to, -1 if no such queue. */
int ts_tsp_queue_position(const void *cfg, int queue);

/* The bytes of MEM slice `mem` (data-segment numbering) of a model after a run, NULL if the
 * slice was never touched. Byte address = word x vector length + superlane x lanes + lane. */
const uint8_t *ts_tsp_mem(const ts_model *m, int mem);
/* A hash (FNV-1a over 8-byte words) of every MEM slice's bytes, untouched slices as zeros: for
 * comparing runs, not stable across versions. */
uint64_t ts_tsp_mem_hash(const ts_model *m);

/* Register numbers as the assembler writes them: stream s flowing east (s0e..) or west (s0w..),
 * and the type selectors i8, i16, i32, f16, f32 (0..4). */
int ts_tsp_reg_east(int s);
int ts_tsp_reg_west(int s);
int ts_tsp_reg_alu(int alu);
int ts_tsp_reg_nul(void);
int ts_tsp_reg_type(int t);
/* The opcode of a mnemonic, -1 if none. */
int ts_tsp_op(const char *mnemonic);

#endif
