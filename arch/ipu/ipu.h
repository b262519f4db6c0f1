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

#endif
