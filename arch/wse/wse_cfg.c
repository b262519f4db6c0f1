/* arch/wse/wse_cfg.c — the wafer-mesh config schema, its defaults, checks and chip summary.
 *
 * Every number's source is in its description: research/cerebras_wse.md section and source tag,
 * or "(assumed: why)" where the research has no public figure (s7).
 */
#include "arch/wse/wse_int.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/units.h"

static const char *const arb_choices[] = {"round_robin", "fixed", NULL};
static const char *const routing_choices[] = {"colour", "xy", "yx", "o1turn", "westfirst", NULL};

#define K(path, type, unit, lo, hi, def, desc, field, ch) \
    {path, type, unit, lo, hi, def, desc, offsetof(ts_wse_cfg, field), ch}

static const ts_cfg_key wse_keys[] = {
    K("mesh.width", TS_CFG_UINT, TS_UNIT_NONE, 1, 4096, "32",
      "PEs per row; WSE-2 programs get at most 750 (s1.1, CSLX single-tile-matvec)", width, NULL),
    K("mesh.height", TS_CFG_UINT, TS_UNIT_NONE, 1, 4096, "32",
      "PE rows; WSE-2 programs get at most 994 (s1.1, CSLX)", height, NULL),
    K("clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 1e6, 1e10, "850 MHz",
      "core clock; 850 MHz in the SDK scripts for CS-2, 1.1 GHz on the HC34 slide (s1.2)", clock_hz, NULL),
    K("fabric.colours", TS_CFG_UINT, TS_UNIT_NONE, 1, 32, "24",
      "routable colours (virtual channels), 5-bit tag (s2.2, s2.3, SDK-CV)", colours, NULL),
    K("fabric.link_bits", TS_CFG_UINT, TS_UNIT_NONE, 32, 32, "32",
      "wavelet and link width per direction per cycle (s2.1, JAC; only 32 is modelled)", link_bits, NULL),
    K("fabric.hop_latency", TS_CFG_UINT, TS_UNIT_CYCLES, 1, 16, "1",
      "cycles from router to neighbouring router (s2.5, SDK-CV, HC34)", hop_latency, NULL),
    K("fabric.routing", TS_CFG_ENUM, TS_UNIT_NONE, 0, -1, "colour",
      "colour: every colour follows its static routes (the hardware, s2.4); xy, yx, o1turn: colours 0 .. "
      "fabric.vcs - 1 are virtual channels whose wavelets go to the PE `sendto` names, dimension order X then Y, "
      "Y then X, (o1turn) X then Y on the lower half of the channels and Y then X on the upper, or (westfirst) "
      "west hops first, then east, north or south by which output has more room (docs/noc.md)",
      routing, routing_choices),
    K("fabric.vcs", TS_CFG_UINT, TS_UNIT_NONE, 1, 32, "2",
      "virtual channels of destination routing (colours 0 .. vcs - 1; each has its own queue per input port)",
      vcs, NULL),
    K("fabric.ramp_latency", TS_CFG_UINT, TS_UNIT_CYCLES, 1, 16, "2",
      "cycles from core to router and from router to core, T_R (s2.5, LUC via summary)", ramp_latency, NULL),
    K("router.queue_depth", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "2",
      "wavelets buffered per input port and colour (assumed: not public, s7; s8.1 says start with 2)",
      queue_depth, NULL),
    K("router.route_cycles", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 16, "0",
      "pipeline stage: cycles of route computation in every router a wavelet passes (assumed: not public; the "
      "WSE hop of fabric.hop_latency includes it; docs/noc.md)", route_cycles, NULL),
    K("router.vc_alloc_cycles", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 16, "0",
      "pipeline stage: cycles of virtual-channel allocation in every router (assumed, as route_cycles)",
      vc_alloc_cycles, NULL),
    K("router.switch_alloc_cycles", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 16, "0",
      "pipeline stage: cycles of switch allocation in every router (assumed, as route_cycles); switch "
      "traversal and the link are fabric.hop_latency", switch_alloc_cycles, NULL),
    K("router.arbitration", TS_CFG_ENUM, TS_UNIT_NONE, 0, -1, "round_robin",
      "how colours share an output port (assumed: not public, s7; s8.1 suggests round robin)", arbitration,
      arb_choices),
    K("pe.input_queue_depth", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "4",
      "wavelets queued per colour between router and core (s1.6: WSE-2 input queues hold 2 to 6)", iq_depth,
      NULL),
    K("pe.output_queue_depth", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "6",
      "wavelets queued per colour between core and router (s1.6: WSE-2 output queues hold 2 to 6)",
      oq_depth, NULL),
    K("pe.sram", TS_CFG_UINT, TS_UNIT_BYTES, 64, 16 << 20, "48 KiB", "SRAM per PE (s1.3, SDK-APX, JAC)",
      sram_bytes, NULL),
    K("pe.sram_banks", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "8", "SRAM banks per PE (s1.3, SDK-APX)",
      sram_banks, NULL),
    K("pe.bank_interleave", TS_CFG_UINT, TS_UNIT_BYTES, 1, 64, "2 B",
      "bytes in one bank before the next: successive 16 bits in successive banks (s1.3, SDK-APX)",
      bank_interleave, NULL),
    K("pe.sram_read_bytes", TS_CFG_UINT, TS_UNIT_BYTES, 4, 1024, "16 B",
      "SRAM read bytes per cycle: two 64-bit reads (s1.3, HC34, JAC, LUC)", read_bytes, NULL),
    K("pe.sram_write_bytes", TS_CFG_UINT, TS_UNIT_BYTES, 4, 1024, "8 B",
      "SRAM write bytes per cycle: one 64-bit write (s1.3, HC34, JAC, LUC)", write_bytes, NULL),
    K("pe.simd.fp16", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "4",
      "FP16 add/mul/FMAC/move elements per cycle (s1.4, SDK-APX: 4 on WSE-2, 8 on WSE-3)", simd_fp16, NULL),
    K("pe.simd.fp32_add", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "2",
      "FP32 add/sub elements per cycle (s1.4, SDK-APX: 2 on WSE-2, 4 on WSE-3)", simd_fp32_add, NULL),
    K("pe.simd.fp32_mul", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "1",
      "FP32 mul elements per cycle (s1.4: not in the SIMD table, so 1, inferred)", simd_fp32_mul, NULL),
    K("pe.simd.fp32_mac", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "1",
      "FP32 FMAC elements per cycle (s1.4: not in the SIMD table, so 1, inferred)", simd_fp32_mac, NULL),
    K("pe.simd.fp32_mov", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "2",
      "32-bit moves per cycle (s1.4, SDK-APX @mov32/@fmovs: 2 on WSE-2, 4 on WSE-3)", simd_fp32_mov, NULL),
    K("pe.microthreads", TS_CFG_UINT, TS_UNIT_NONE, 0, 16, "8",
      "hardware threads for async vector ops (s1.6, SDK-UT: 8 on WSE-3; WSE-2 ties them to queues)",
      microthreads, NULL),
    K("pe.pipeline_latency", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 16, "1",
      "cycles from a core reading an operand to the result entering the ramp (assumed: not public, s7; 1 gives "
      "LUC's 2T_R + 2 cycles per chain-reduce hop and 1D broadcast B + P + 2T_R, s3.2)", pipeline_latency, NULL),
    K("pe.task_start_latency", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 1000, "1",
      "cycles from the task picker's choice to the task's first instruction (assumed: not public, s7)",
      task_start_latency, NULL),
    K("pe.pitch_x", TS_CFG_FLOAT, TS_UNIT_LENGTH, 1e-6, 1e-2, "228 um",
      "PE width, the length of an east-west link (s1.1, HC34 slide: core 228um x 170um)", pitch_x, NULL),
    K("pe.pitch_y", TS_CFG_FLOAT, TS_UNIT_LENGTH, 1e-6, 1e-2, "170 um",
      "PE height, the length of a north-south link (s1.1, HC34 slide)", pitch_y, NULL),
    K("sim.timing_only", TS_CFG_BOOL, TS_UNIT_NONE, 0, -1, "false",
      "skip SRAM contents and arithmetic: same cycles if control flow does not depend on data", timing_only,
      NULL),
    K("report.pe_array_limit", TS_CFG_UINT, TS_UNIT_NONE, 0, 1e8, "65536",
      "write per-PE and per-link arrays only for meshes of at most this many PEs", pe_array_limit, NULL),
};

const ts_schema ts_wse_schema = {
    .arch = "wse",
    .title = "Cerebras-style 2D wafer-scale mesh of PEs with colour-routed wavelets",
    .keys = wse_keys,
    .nkeys = sizeof wse_keys / sizeof wse_keys[0],
    .size = sizeof(ts_wse_cfg),
    .check = ts_wse_cfg_check,
};

ts_status ts_wse_cfg_check(void *cfgp, ts_err *err)
{
    ts_wse_cfg *c = cfgp;
    if (c->sram_bytes % 4)
        return ts_err_set(err, TS_EINPUT, "pe.sram is %llu bytes, not a multiple of 4",
                          (unsigned long long)c->sram_bytes);
    if (c->routing != WSE_ROUTE_COLOUR && c->vcs > c->colours)
        return ts_err_set(err, TS_EINPUT, "fabric.vcs is %llu, more than the %llu fabric.colours",
                          (unsigned long long)c->vcs, (unsigned long long)c->colours);
    if (c->routing == WSE_ROUTE_O1TURN && c->vcs % 2)
        return ts_err_set(err, TS_EINPUT, "fabric.routing o1turn needs an even fabric.vcs (half X first, half Y "
                          "first), not %llu", (unsigned long long)c->vcs);
    if (c->read_bytes % 4 || c->write_bytes % 4)
        return ts_err_set(err, TS_EINPUT, "pe.sram_read_bytes and pe.sram_write_bytes must be multiples of 4");
    if (c->width * c->height > (uint64_t)1 << 24)
        return ts_err_set(err, TS_EINPUT, "mesh of %llu x %llu PEs is larger than the 16M PEs modelled",
                          (unsigned long long)c->width, (unsigned long long)c->height);
    return TS_OK;
}

ts_status ts_wse_cfg_defaults(ts_wse_cfg *c, ts_err *err)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < ts_wse_schema.nkeys; i++) {
        const ts_cfg_key *k = &ts_wse_schema.keys[i];
        char *dst = (char *)c + k->offset;
        char why[160];
        double v = 0;
        switch (k->type) {
        case TS_CFG_UINT:
        case TS_CFG_FLOAT:
            if (ts_unit_parse(k->def, k->unit, &v, why, sizeof why))
                return ts_err_set(err, TS_EINTERNAL, "default of %s: %s", k->path, why);
            if (k->type == TS_CFG_UINT)
                *(uint64_t *)(void *)dst = (uint64_t)v;
            else
                *(double *)(void *)dst = v;
            break;
        case TS_CFG_BOOL:
            *(bool *)(void *)dst = !strcmp(k->def, "true");
            break;
        case TS_CFG_ENUM:
            for (int j = 0; k->choices[j]; j++)
                if (!strcmp(k->choices[j], k->def))
                    *(int *)(void *)dst = j;
            break;
        default:
            return ts_err_set(err, TS_EINTERNAL, "default of %s: type not handled", k->path);
        }
    }
    return ts_wse_cfg_check(c, err);
}

ts_status ts_wse_info(const void *cfgp, ts_info *out, ts_err *err)
{
    const ts_wse_cfg *c = cfgp;
    (void)err;
    memset(out, 0, sizeof *out);
    double pes = (double)(c->width * c->height);
    out->clock_hz = c->clock_hz;
    out->sram_bytes = c->width * c->height * c->sram_bytes;
    out->units[0].name = "pes";
    out->units[0].n = c->width * c->height;
    out->units[1].name = "routers";
    out->units[1].n = c->width * c->height;
    out->units[2].name = "links";
    out->units[2].n = 2 * ((c->width - 1) * c->height + c->width * (c->height - 1));
    out->units[3].name = "colours";
    out->units[3].n = c->colours;
    out->nunits = 4;
    out->peak[0].dtype = "fp16";
    out->peak[0].macs = pes * (double)c->simd_fp16;
    out->peak[1].dtype = "fp32";
    out->peak[1].macs = pes * (double)c->simd_fp32_mac;
    out->npeak = 2;
    out->bw[0].name = "fabric links";
    out->bw[0].bytes_per_cycle = (double)out->units[2].n * (double)c->link_bits / 8;
    out->bw[1].name = "sram";
    out->bw[1].bytes_per_cycle = pes * (double)(c->read_bytes + c->write_bytes);
    out->bw[2].name = "ramps";
    out->bw[2].bytes_per_cycle = 2 * pes * (double)c->link_bits / 8;
    out->nbw = 3;
    return TS_OK;
}
