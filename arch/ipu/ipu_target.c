/* arch/ipu/ipu_target.c — the IPU's machine facts for a compiler, from the typed config. */
#include "arch/ipu/ipu_target.h"

#include <string.h>

#include "arch/ipu/ipu_int.h"

/* The numbering in ipu_target.h is the model's (ipu_int.h). */
_Static_assert(TS_IPU_AREG(0) == IPU_AREG0, "$a registers are numbered after the $m registers");
_Static_assert(TS_IPU_CSR_WORKER == IPU_CSR_WORKER, "get's worker-id register");

ts_status ts_ipu_target_from_config(const ts_config *cfg, ts_ipu_target *out, ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(ts_config_arch(cfg), "ipu"))
        return ts_err_set(err, TS_EINPUT, "config '%s' is for arch '%s', not 'ipu'", ts_config_name(cfg),
                          ts_config_arch(cfg));
    const ts_ipu_cfg *c = ts_config_data(cfg);
    if (ts_config_schema(cfg) != &ts_ipu_schema || !c)
        return ts_err_set(err, TS_EINPUT, "config '%s' lacks a key the IPU lowering reads", ts_config_name(cfg));
    out->tiles = (uint32_t)c->tiles;
    out->sram_bytes = c->sram_bytes;
    out->element_bytes = c->element_bytes;
    out->interleaved_base = c->interleaved_base;
    out->amp_macs_f32 = (uint32_t)c->amp_macs_f32;
    out->amp_macs_f16 = (uint32_t)c->amp_macs_f16;
    out->amp_units_f32 = c->amp_units_f32;
    out->amp_units_f16 = c->amp_units_f16;
    out->workers = (uint32_t)c->worker_contexts;
    out->load_latency = (uint32_t)c->load_latency;
    out->load_bytes = (uint32_t)c->load_bpc;
    out->xbytes = (uint32_t)(uint64_t)c->xch_bpc; /* whole words: the config's check */
    out->sync_cycles = (uint32_t)c->sync_cycles;
    return TS_OK;
}
