/* arch/wse/wse_family.c — the wafer-mesh family's vtable. */
#include "arch/wse/wse_int.h"

#include <inttypes.h>
#include <string.h>

#include "arch/wse/wse_kernels.h"
#include "arch/wse/wse_traffic.h"
#include "core/spec.h"

static ts_status wse_create(ts_model **out, const ts_config *cfg, const ts_run_opts *opts, ts_err *err)
{
    return ts_wse_create(out, ts_config_data(cfg), opts, err);
}

/* PE (unit mod width, unit / width)'s SRAM. */
static ts_status wse_read(ts_model *m, uint64_t unit, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    uint64_t x = unit % m->w, y = unit / m->w;
    if (y >= m->h || ts_wse_read_sram(m, (uint32_t)x, (uint32_t)y, addr, dst, len))
        return ts_err_set(err, TS_EINPUT, "PE %" PRIu64 " has no SRAM bytes %" PRIu64 "..%" PRIu64, unit, addr,
                          addr + len);
    return TS_OK;
}

/* The wafer's program generators: "stencil" (docs/wse.md), the star stencil of JAC on a w x h
 * rectangle of PEs from the north-west corner, with data (its results can be read back), and
 * "traffic" (docs/noc.md), synthetic network traffic over the whole mesh. */
static ts_status wse_generate(const char *text, const ts_config *cfg, ts_program **out, ts_err *err)
{
    *out = NULL;
    if (!strncmp(text, "traffic:", 8)) {
        if (cfg)
            return ts_wse_traffic_load(out, text + 8, cfg, err);
        /* no config yet (a family look-up, a sweep's check): the program of the default mesh,
         * routed by destination so that every pattern has one */
        ts_wse_cfg c;
        ts_wse_traffic t;
        ts_wse_traffic_defaults(&t);
        if (ts_wse_cfg_defaults(&c, err) != TS_OK || ts_wse_traffic_parse(&t, text + 8, err) != TS_OK)
            return err->status;
        c.routing = WSE_ROUTE_XY;
        return ts_wse_traffic_program(out, &c, &t, err);
    }
    ts_spec s;
    if (ts_spec_parse(&s, text, err) != TS_OK)
        return TS_EINPUT;
    if (!ts_spec_is(&s, "stencil"))
        return TS_OK;
    uint64_t w, h, nz, radius, steps, data;
    /* bounds: a mesh up to the largest config's, and a column that fits a PE's 48 KB (80 nz + 64 B) */
    if (ts_spec_u64(&s, "w", 16, 1, 1024, &w, err) || ts_spec_u64(&s, "h", 16, 1, 1024, &h, err) ||
        ts_spec_u64(&s, "nz", 128, 1, 600, &nz, err) || ts_spec_u64(&s, "radius", 4, 1, 4, &radius, err) ||
        ts_spec_u64(&s, "steps", 1, 1, 1000, &steps, err) || ts_spec_u64(&s, "data", 1, 0, 1, &data, err) ||
        ts_spec_done(&s, err))
        return TS_EINPUT;
    /* with data every PE's column is modelled SRAM the host holds: keep that under 1 GiB */
    uint64_t bytes = w * h * (80 * nz + 64);
    if (data && bytes > (1ull << 30))
        return ts_err_set(err, TS_EINPUT, "stencil: %" PRIu64 " x %" PRIu64 " PEs with nz %" PRIu64 " hold %.1f GiB "
                          "of data; give data=0 (the same cycles without values; with sim.timing_only: true the PEs hold no SRAM)", w, h, nz,
                          (double)bytes / (1u << 30));
    const ts_wse_cfg *c = cfg ? ts_config_data(cfg) : NULL;
    if (c && (w > c->width || h > c->height))
        return ts_err_set(err, TS_EINPUT, "stencil: %" PRIu64 " x %" PRIu64 " PEs do not fit the %" PRIu64 " x %" PRIu64
                          " mesh of the config", w, h, (uint64_t)c->width, (uint64_t)c->height);
    return ts_wse_stencil_program_in(out, c ? (uint32_t)c->width : (uint32_t)w, (uint32_t)w, (uint32_t)h,
                                     (uint32_t)nz, (uint32_t)radius, (uint32_t)steps, data != 0, err);
}

const ts_family ts_wse_family = {
    .name = "wse",
    .schema = &ts_wse_schema,
    .isa = &ts_wse_isa,
    .info = ts_wse_info,
    .create = wse_create,
    .load = ts_wse_load,
    .step = ts_wse_step,
    .collect = ts_wse_collect,
    .blocked = ts_wse_blocked,
    .read = wse_read,
    .destroy = ts_wse_destroy,
    .generate = wse_generate,
    .generators = "stencil:w=16,h=16,nz=128,radius=4,steps=1,data=1   star stencil (radius 4: JAC's 25-point) on w x h PEs\n"
                  "traffic:pattern=uniform,rate=0.05,flits=1,warmup=1000,measure=4000,seed=1,hot=0.2,route=xy   "
                  "synthetic traffic (docs/noc.md)\n",
    .default_config = "wse_32x32",
    .default_workload = "wse_default",
};
