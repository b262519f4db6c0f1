/* workloads/lower/registry.c — the only place that knows every family's lowering: one line each. */
#include "workloads/lower/lower.h"

#include <string.h>

#include "workloads/ipu/lower_ipu.h"
#include "workloads/tsp/lower_tsp.h"
#include "workloads/wse/lower_wse.h"

static const ts_lowering *const lowerings[] = {
    &ts_ipu_lowering,
    &ts_tsp_lowering,
    &ts_wse_lowering,
};

const ts_lowering *ts_lowering_at(size_t i)
{
    return i < sizeof lowerings / sizeof lowerings[0] ? lowerings[i] : NULL;
}

const ts_lowering *ts_lowering_find(const char *arch)
{
    for (size_t i = 0; ts_lowering_at(i); i++)
        if (!strcmp(lowerings[i]->arch, arch))
            return lowerings[i];
    return NULL;
}
