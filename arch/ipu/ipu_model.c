/* arch/ipu/ipu_model.c — the IPU cycle model: create and destroy a model, the family's vtable and
 * what it says of a config; the model itself is barrel-scheduled tiles, AMP, BSP sync, a compiled
 * (statically timed) exchange and host transfers at the sync.
 *
 * Time model (research/graphcore_ipu.md §8.1):
 *  - A tile has one supervisor and W worker contexts (W = tile.worker_contexts, 6). Slot s = cycle
 *    mod W belongs to worker s while it runs and to the supervisor otherwise, so a worker issues at
 *    most once every W cycles and the supervisor fills every free slot (§2.1, GC-asm, GC-blog).
 *  - A load's result is ready tile.load_latency cycles after its issue; the context cannot issue
 *    again before that (with 6 contexts and 6 cycles the barrel hides it exactly, §2.1).
 *  - The exchange is statically timed (§2.4): `send` puts exchange.bytes_per_cycle on the fabric
 *    each cycle; a word sent at t by tile s reaches tile d at t + L(s, d), L from the tiles'
 *    positions (§8.1 item 3). The receiver's mux and pointer are set by `recv` at the cycle the
 *    program issues it; words arriving while the mux selects their sender land at the pointer.
 *  - `sync 1` is the chip-wide barrier: released sync.internal_cycles after the last tile
 *    arrives (§2.5), plus the host transfers of the superstep (§2.6).
 *
 * Engine: conservative windows. Every round advances each running tile on its own to H =
 * now + window, window = min(exchange latency, sync latency), so nothing a tile does inside a
 * round can be seen by another tile in the same round: tiles can be split over threads and the
 * result does not depend on their order or number. Words sent in a round are appended to a
 * per-tile pending log and committed between rounds. The fast mode also lets a tile run past
 * the round while it reads no other tile's words (see reads_others), starts the next round at the
 * first running tile's cycle when every one ran ahead past the window, skips cycles in which no
 * context can issue and nothing arrives, does a turn's instruction for all the workers at once
 * while they are at one pc (see in_step_run) and runs store-free repeat loops in closed form (see
 * closed_form_turns); --lockstep uses one-cycle rounds and visits every cycle of every tile. Both
 * follow the same per-cycle rule, so their reports are equal (every test program checks it).
 *
 * Files (their private declarations are in ipu_int.h):
 *   ipu_model.c     create, destroy, the family vtable and info (this file)
 *   ipu_load.c      load: validate a program and predecode it into the tiles
 *   ipu_mem.c       tile memory, paged: bulk copies, ts_ipu_read, ts_ipu_memhash
 *   ipu_exec.c      the executor: one tile's cycles, every instruction, the idle jump and the
 *                   closed form (the hot path, one translation unit)
 *   ipu_exchange.c  the interconnect: latency, the spine's buffered stage, the exchange check
 *   ipu_threads.c   host threads: who takes which column, the phases of a round and the release, the profile
 *   ipu_step.c      the kernel's step: rounds, the verdicts between them, the chip-wide sync
 *   ipu_observe.c   activity sampling and trace slices
 *   ipu_energy.c    energy events per op and per superstep
 *   ipu_results.c   results, stats tables, the blocked-tile report
 */
#include <inttypes.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "arch/ipu/ipu_int.h"
#include "core/activity.h"
#include "core/alloc.h"
#include "core/sim.h"

/* ---- create / destroy ---- */

static void ipu_destroy(ts_model *m)
{
    if (!m)
        return;
    ts_ipu_threads_stop(m);
    if (m->t) {
        uint64_t npages = (m->c.sram_bytes + IPU_PAGE_SIZE - 1) >> IPU_PAGE_SHIFT;
        for (uint32_t i = 0; i < m->ntiles; i++) {
            ipu_tile *t = &m->t[i];
            if (t->page)
                for (uint64_t p = 0; p < npages; p++)
                    ts_free(t->page[p]);
            ts_free(t->page);
            ts_free(t->pend.v);
            ts_free(t->log.v);
            ts_free(t->host);
            ts_free(t->xs);
        }
    }
    if (m->terr)
        for (int i = 0; i < m->nthreads; i++) {
            ts_err_free(&m->terr[i].err);
            ts_err_free(&m->terr[i].scratch);
        }
    ts_free(m->terr);
    ts_free(m->tsum);
    ts_free(m->spine_e);
    ts_free(m->tgroup);
    ts_free(m->t);
    ts_free(m->op_block);
    ts_free(m->tnow);
    ts_free(m->code);
    ts_free(m->zero_page);
    ts_free(m->hostmem);
    ts_free(m->ss);
    ts_free(m);
}

ts_status ts_ipu_create_cfg(ts_model **out, const void *cfgp, const ts_run_opts *opts, ts_err *err)
{
    const ts_ipu_cfg *c = cfgp;
    ts_status erc = ts_ipu_check_events(err);
    if (erc != TS_OK)
        return erc;
    ts_model *m = ts_calloc(1, sizeof *m);
    if (!m)
        return ts_err_set(err, TS_ENOMEM, "out of memory creating the ipu model");
    m->c = *c;
    m->c.variant = NULL; /* not owned */
    m->lockstep = opts && opts->lockstep;
    m->phase_events = opts && opts->phase_events;
    m->trace = opts ? opts->trace : NULL;
    m->act = opts ? opts->activity : NULL;
    m->act_cap = m->act ? ts_activity_window(m->act) : UINT64_MAX;
    m->W = (uint32_t)c->worker_contexts;
    m->all_workers = (1u << m->W) - 1;
    m->closed_form = !m->lockstep && c->load_latency <= c->worker_contexts;
    m->ntiles = (uint32_t)c->tiles;
    m->window = c->lat_base < c->sync_cycles ? c->lat_base : c->sync_cycles;
    if (m->window < 1)
        m->window = 1;
    m->nthreads = opts && opts->threads > 1 ? opts->threads : 1;
    if (m->nthreads > 64)
        m->nthreads = 64;
    if ((uint32_t)m->nthreads > m->ntiles)
        m->nthreads = (int)m->ntiles;
    uint64_t npages = (c->sram_bytes + IPU_PAGE_SIZE - 1) >> IPU_PAGE_SHIFT;
    m->t = ts_calloc(m->ntiles, sizeof *m->t);
    m->tnow = ts_calloc(m->ntiles, sizeof *m->tnow);
    m->zero_page = ts_calloc(1, IPU_PAGE_SIZE);
    m->terr = ts_calloc((size_t)m->nthreads, sizeof *m->terr);
    m->tsum = ts_calloc((size_t)m->nthreads, sizeof *m->tsum);
    m->ncols = (uint32_t)((m->ntiles + c->tiles_per_column - 1) / c->tiles_per_column);
    m->spine_e = ts_calloc(m->ncols, sizeof *m->spine_e);
    m->tgroup = ts_malloc((m->ntiles ? m->ntiles : 1) * sizeof *m->tgroup);
    if (!m->t || !m->tnow || !m->zero_page || !m->terr || !m->tsum || !m->spine_e || !m->tgroup) {
        ipu_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory creating the ipu model");
    }
    for (uint32_t i = 0; i < m->ntiles; i++)
        m->tgroup[i] = (uint32_t)(i / c->tiles_per_column / (c->columns_per_group ? c->columns_per_group : 1));
    for (int i = 0; i < m->nthreads; i++) {
        ts_err_init(&m->terr[i].err);
        ts_err_init(&m->terr[i].scratch);
    }
    for (uint32_t i = 0; i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        t->page = ts_calloc(npages, sizeof *t->page);
        if (!t->page) {
            ipu_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "out of memory creating the ipu model");
        }
        t->sup = SUP_DONE; /* tiles without a stream do nothing */
        t->rx_src = -1;
        t->rx_park_n = SIZE_MAX;
        t->rec = m->act != NULL || m->trace != NULL; /* the exchange spans feed both */
    }
    if (m->act) {
        ts_status rc = ts_ipu_act_layout(m, err);
        if (rc != TS_OK) {
            ipu_destroy(m);
            return rc;
        }
    }
    ts_status rc = ts_ipu_threads_start(m, err);
    if (rc != TS_OK) {
        ipu_destroy(m);
        return rc;
    }
    *out = m;
    return TS_OK;
}

static ts_status ipu_create(ts_model **out, const ts_config *cfg, const ts_run_opts *opts, ts_err *err)
{
    return ts_ipu_create_cfg(out, ts_config_data(cfg), opts, err);
}

/* ---- what a config offers, and the family ---- */

static ts_status ipu_info(const void *cfgp, ts_info *o, ts_err *err)
{
    const ts_ipu_cfg *c = cfgp;
    (void)err;
    memset(o, 0, sizeof *o);
    o->clock_hz = c->clock_hz;
    o->sram_bytes = c->tiles * c->sram_bytes;
    o->units[0].name = "tiles";
    o->units[0].n = c->tiles;
    o->units[1].name = "worker contexts";
    o->units[1].n = c->tiles * c->worker_contexts;
    o->nunits = 2;
    o->peak[0].dtype = "fp16->fp32";
    o->peak[0].macs = (double)c->tiles * (double)c->amp_macs_f16;
    o->peak[1].dtype = "fp32";
    o->peak[1].macs = (double)c->tiles * (double)c->amp_macs_f32;
    o->npeak = 2;
    o->bw[0].name = "tile memory read";
    o->bw[0].bytes_per_cycle = (double)c->tiles * c->load_bpc;
    o->bw[1].name = "tile memory write";
    o->bw[1].bytes_per_cycle = (double)c->tiles * c->store_bpc;
    o->bw[2].name = "exchange";
    o->bw[2].bytes_per_cycle = (double)c->tiles * c->xch_bpc;
    o->bw[3].name = "host";
    o->bw[3].bytes_per_cycle = c->host_bw / c->clock_hz;
    o->nbw = 4;
    return TS_OK;
}

static ts_status ipu_read(ts_model *m, uint64_t unit, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    if (unit > UINT32_MAX)
        return ts_err_set(err, TS_EINPUT, "no tile %" PRIu64, unit);
    return ts_ipu_read(m, (uint32_t)unit, addr, dst, len, err);
}

const ts_family ts_ipu_family = {
    .name = "ipu",
    .schema = &ts_ipu_schema,
    .isa = &ts_ipu_isa,
    .info = ipu_info,
    .create = ipu_create,
    .load = ts_ipu_load,
    .load_owned = ts_ipu_load_owned,
    .step = ts_ipu_step,
    .collect = ts_ipu_collect,
    .blocked = ts_ipu_blocked,
    .read = ipu_read,
    .destroy = ipu_destroy,
    .default_config = "ipu_mk1",
    .default_workload = "ipu_default",
};
