/* arch/registry.h — the only place that knows every family (arch/registry.c, one line each). */
#ifndef TS_ARCH_REGISTRY_H
#define TS_ARCH_REGISTRY_H

#include <stddef.h>
#include "core/sim.h"

const ts_family *ts_family_find(const char *name);
size_t ts_family_count(void);
const ts_family *ts_family_at(size_t i);
/* For ts_config_opts.schema. */
const ts_schema *ts_registry_schema(const char *arch);

#endif
