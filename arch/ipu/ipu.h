/* arch/ipu/ipu.h — the IPU family (Graphcore-style): what tests, benchmarks and the registry use.
 *
 * The family vtable is ts_ipu_family; its schema, ISA and model are described in docs/ipu.md.
 */
#ifndef TS_ARCH_IPU_IPU_H
#define TS_ARCH_IPU_IPU_H

#include <stdint.h>
#include "core/sim.h"

extern const ts_family ts_ipu_family;

/* Send-to-arrival cycles from tile s to tile d under the config's latency formula
 * (cfg is the family's typed config, ts_config_data()). */
uint64_t ts_ipu_latency(const void *cfg, uint32_t s, uint32_t d);

/* Create a model from a typed config without a ts_config (tests); same as the family's create. */
ts_status ts_ipu_create_cfg(ts_model **out, const void *cfg, const ts_run_opts *opts, ts_err *err);

/* Copy len bytes of tile memory at addr into dst (tests and tools, after or between steps). */
ts_status ts_ipu_read(ts_model *m, uint32_t tile, uint64_t addr, void *dst, size_t len, ts_err *err);

/* A hash of every tile's memory contents (FNV-1a over the bytes each tile wrote): equal runs
 * give equal hashes. */
uint64_t ts_ipu_memhash(ts_model *m);

/* ---- the host threads (arch/ipu/ipu_threads.c; bench/bench_ipu_balance.c) ---- */

/* Split ncols columns over k threads by their measured cost: bounds[0 .. k] (bounds[0] = 0,
 * bounds[k] = ncols, non-decreasing), thread i taking columns [bounds[i], bounds[i + 1]), each
 * range's cost as near the mean (the total over k) as whole columns allow. A zero total splits
 * the columns evenly. */
void ts_ipu_split(const uint64_t *cost, uint32_t ncols, uint32_t k, uint32_t *bounds);

/* Record the host threads' profile of the run to come (call after create, before load): the
 * rounds, the barrier meetings and every round's work per column. TS_ENOMEM when it cannot be
 * allocated. */
ts_status ts_ipu_profile_on(ts_model *m, ts_err *err);

/* The profile recorded so far (borrowed: valid until the model steps again or is destroyed). */
typedef struct ts_ipu_profile {
    uint64_t rounds;          /* rounds run */
    uint64_t meetings;        /* barrier meetings of the host threads (with more than one) */
    uint64_t supersteps;      /* chip-wide syncs passed */
    uint64_t visits;          /* tiles the main thread visited alone (its serial passes) */
    uint32_t ncols;           /* columns (the unit of the split) */
    uint32_t tiles_per_column;
    uint32_t parts;           /* parts per column: the run phase's grain */
    const uint64_t *colw;     /* rounds x ncols x parts: each round's host work per part of a
                               * column, in the model's units: instructions issued and words
                               * received, plus one per tile running (the cost of visiting it) */
    bool complete;            /* false when recording ran out of memory (colw then stops short) */
} ts_ipu_profile;

/* Fill *out with m's profile; all zero when ts_ipu_profile_on was not called. */
void ts_ipu_profile_get(const ts_model *m, ts_ipu_profile *out);

#endif
