/* arch/wse/wse_target.c — the machine facts a compiler needs, from the typed config. */
#include "arch/wse/wse_target.h"

#include <string.h>

#include "arch/wse/wse.h"

ts_status ts_wse_target_from_config(const ts_config *cfg, ts_wse_target *out, ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(ts_config_arch(cfg), "wse"))
        return ts_err_set(err, TS_EINPUT, "config '%s' is for arch '%s', not 'wse'", ts_config_name(cfg),
                          ts_config_arch(cfg));
    const ts_wse_cfg *c = ts_config_data(cfg);
    if (!c || ts_config_schema(cfg) != &ts_wse_schema)
        return ts_err_set(err, TS_EINPUT, "config '%s' lacks a key the WSE lowering reads", ts_config_name(cfg));
    out->width = (uint32_t)c->width;
    out->height = (uint32_t)c->height;
    out->sram_bytes = c->sram_bytes;
    out->colours = (uint32_t)c->colours;
    return TS_OK;
}
