/* arch/ipu/ipu_config.c — the IPU config schema: one row per key, read once into ts_ipu_cfg.
 *
 * Defaults are the Colossus MK1 (GC2) values of research/graphcore_ipu.md; each description names
 * its section and source tag, or says "(assumed: why)" where the research gives no number.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "arch/ipu/ipu_int.h"

#define K(path, type, unit, lo, hi, def, desc, field) \
    {path, type, unit, lo, hi, def, desc, offsetof(ts_ipu_cfg, field), NULL}

static const ts_cfg_key ipu_keys[] = {
    K("variant", TS_CFG_STRING, TS_UNIT_NONE, 1, 0, "mk1_gc2", "chip variant label", variant),
    K("tiles", TS_CFG_UINT, TS_UNIT_NONE, 1, 65536, "1216",
      "tiles per chip (research §1.1: 1216 on MK1, CIT/hpcn, PL-hist; §1.2: 1472 on MK2, HC33)", tiles),
    K("clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 1e6, 1e10, "1.6 GHz",
      "tile clock (research §1.1: 1.6 GHz on GC2, CIT/apd; §1.2: 1.325 GHz on GC200, HC33)", clock_hz),
    K("tile.sram", TS_CFG_UINT, TS_UNIT_BYTES, 1024, 1 << 24, "256 KiB",
      "SRAM per tile (research §1.1: 256 KiB, CIT/hpcn; §1.2: 624 KiB, ELK)", sram_bytes),
    K("tile.worker_contexts", TS_CFG_UINT, TS_UNIT_NONE, 1, 16, "6",
      "worker contexts = barrel slots (research §2.1: six, GC-asm)", worker_contexts),
    K("tile.load_latency", TS_CFG_UINT, TS_UNIT_CYCLES, 1, 64, "6",
      "cycles from a load's issue to its result (research §3.1 #4: 6 cycles, CIT/apd)", load_latency),
    K("tile.load_bytes_per_cycle", TS_CFG_FLOAT, TS_UNIT_BPC, 4, 16, "16 B/cycle",
      "widest load per cycle (research §1.1: 16 B/cycle/tile, CIT/apd); 8 forbids ld128", load_bpc),
    K("tile.store_bytes_per_cycle", TS_CFG_FLOAT, TS_UNIT_BPC, 4, 8, "8 B/cycle",
      "widest store per cycle (research §1.1: 8 B/cycle/tile, CIT/apd); 4 forbids st64", store_bpc),
    K("tile.interleaved_base", TS_CFG_UINT, TS_UNIT_BYTES, 0, 1 << 24, "0 B",
      "128-bit loads only at or above this address (research §1.2: interleaved memory, IPS) "
      "(assumed: MK1 placement of the interleaved region is not public; 0 = all memory)", interleaved_base),
    K("tile.element_bytes", TS_CFG_UINT, TS_UNIT_BYTES, 64, 1 << 24, "32 KiB",
      "size of one SRAM element: a send reading and a receive writing one element in one cycle "
      "conflict (research §2.4, IPS) (assumed: element size not public)", element_bytes),
    K("tile.insn_bytes", TS_CFG_UINT, TS_UNIT_BYTES, 4, 8, "4 B",
      "code bytes per instruction (research §1.2: 32-bit instructions, HC33)", insn_bytes),
    K("amp.macs_per_cycle_f16", TS_CFG_UINT, TS_UNIT_NONE, 4, 1024, "32",
      "fp16 x fp16 -> fp32 AMP MACs per cycle per tile (research §1.1: 124.5 TFLOPS => 32, CIT/apd; "
      "§1.2: 64 on MK2)", amp_macs_f16),
    K("amp.macs_per_cycle_f32", TS_CFG_UINT, TS_UNIT_NONE, 2, 1024, "8",
      "fp32 AMP MACs per cycle per tile (research §1.1: 31.1 TFLOPS => 8, CIT/apd; §1.2: 16 on MK2)",
      amp_macs_f32),
    K("exchange.bytes_per_cycle", TS_CFG_FLOAT, TS_UNIT_BPC, 4, 64, "4 B/cycle",
      "bytes a tile sends per cycle, whole 32-bit words (research §1.1: 4, PL-hist; §2.4: one word "
      "per cycle, IPS)", xch_bpc),
    K("exchange.latency_base", TS_CFG_UINT, TS_UNIT_CYCLES, 1, 10000, "30",
      "send-to-arrival cycles between the nearest tiles (research §8.2) (assumed: CIT Table 4.2 not "
      "read; chosen so the farthest pair stays under 165 ns, §3.2)", lat_base),
    K("exchange.latency_per_column_group", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 1000, "6",
      "extra cycles per column group of distance (research §2.4: weight 6 in IPS's IPU21 function) "
      "(assumed for this chip)", lat_per_group),
    K("exchange.latency_per_row", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 1000, "2",
      "extra cycles per row of distance (research §2.4: weight 2 in IPS's IPU21 function) "
      "(assumed for this chip)", lat_per_row),
    K("layout.tiles_per_column", TS_CFG_UINT, TS_UNIT_NONE, 1, 65536, "19",
      "tiles in one physical column; tile t sits at column t / this, row t % this (research §1.2: "
      "23 rows x 64 positions on IPU21, IPS) (assumed: 1216 = 64 x 19 on MK1)", tiles_per_column),
    K("layout.columns_per_group", TS_CFG_UINT, TS_UNIT_NONE, 1, 65536, "4",
      "physical columns per column group (research §2.4: 16 groups of 4, IPS)", columns_per_group),
    K("exchange.spine_port_words", TS_CFG_UINT, TS_UNIT_NONE, 1, 65536, "1",
      "words per cycle a column sends straight onto the exchange spine toward other column groups; "
      "when more of its words leave the group in one cycle they go through the column's buffered "
      "spine stage (research §1.2: exchange spine, fishbone layout, HC33; §2.4, §3.3: columns give "
      "the fastest paths, crossing costs more, CIT) (assumed: one direct lane per column, not public)",
      spine_port_words),
    K("exchange.spine_buffer_cycles", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 10000, "19",
      "extra cycles of a word through the buffered spine stage, which keeps its column's words in "
      "order (research §3.1 #14: latency +24 % under full load, CIT Table 4.2) (assumed: chosen so "
      "that a pair half the MK1 chip apart, 78 cycles idle, takes +24 % while every tile sends "
      "across the spine)", spine_buffer_cycles),
    K("exchange.tile_pitch", TS_CFG_FLOAT, TS_UNIT_LENGTH, 1e-6, 1e-1, "0.75 mm",
      "wire length between neighbouring tiles, for wire_bit_mm energy (assumed: sqrt(823 mm^2 / "
      "1472 tiles), research §1.2 die area, HC33)", tile_pitch_m),
    K("sync.internal_cycles", TS_CFG_UINT, TS_UNIT_CYCLES, 1, 100000, "90",
      "cycles from the last tile reaching a chip-wide sync to its release (research §2.5: 90, PL "
      "CTCLossPlan; 118, ELK-art) (assumed for MK1)", sync_cycles),
    K("sync.max_release_skew", TS_CFG_UINT, TS_UNIT_CYCLES, 0, 1000, "0",
      "the farthest tile leaves a sync this many cycles after the nearest (research §2.5, GC-ipum "
      "RelativeSyncDelayType) (assumed: NO_DELAY)", sync_skew),
    K("host.bandwidth", TS_CFG_FLOAT, TS_UNIT_BANDWIDTH, 1e6, 1e13, "16 GB/s",
      "host link bandwidth per chip (assumed: MK1 host link not found, research §2.6; PCIe Gen3 x16)",
      host_bw),
    K("host.latency", TS_CFG_FLOAT, TS_UNIT_TIME, 0, 1e-2, "1 us",
      "host transfer latency added once per sync with host traffic (assumed: not public, a PCIe "
      "round trip)", host_latency_s),
    K("host.buffer", TS_CFG_UINT, TS_UNIT_BYTES, 0, 1ull << 32, "1 MiB",
      "size of the modelled host (streaming) memory (model parameter)", host_bytes),
};

static ts_status ipu_check(void *p, ts_err *err)
{
    ts_ipu_cfg *c = p;
    if (c->amp_macs_f16 % 4)
        return ts_err_set(err, TS_EINPUT, "amp.macs_per_cycle_f16 must be a multiple of 4 (f16v4 inputs), got %llu",
                          (unsigned long long)c->amp_macs_f16);
    if (c->amp_macs_f32 % 2)
        return ts_err_set(err, TS_EINPUT, "amp.macs_per_cycle_f32 must be a multiple of 2 (f32v2 inputs), got %llu",
                          (unsigned long long)c->amp_macs_f32);
    c->amp_units_f16 = (uint32_t)(c->amp_macs_f16 / 4);
    c->amp_units_f32 = (uint32_t)(c->amp_macs_f32 / 2);
    if (c->amp_units_f16 > 64 || c->amp_units_f32 > 64)
        return ts_err_set(err, TS_EINPUT, "amp: at most 64 conv units are modelled");
    if (c->amp_units_f16 * 8 > 256 || c->amp_units_f32 * 8 > 256)
        return ts_err_set(err, TS_EINPUT, "amp: coefficient state larger than 256 bytes is not modelled");
    double w = c->xch_bpc / 4.0;
    if (w != floor(w))
        return ts_err_set(err, TS_EINPUT, "exchange.bytes_per_cycle must be a whole number of 32-bit words, got %g",
                          c->xch_bpc);
    c->words_per_cycle = (uint32_t)w;
    if (c->worker_contexts > 8)
        return ts_err_set(err, TS_EINPUT, "tile.worker_contexts above 8 is not modelled, got %llu",
                          (unsigned long long)c->worker_contexts);
    if (c->interleaved_base >= c->sram_bytes && c->interleaved_base)
        return ts_err_set(err, TS_EINPUT, "tile.interleaved_base %llu is beyond tile.sram %llu",
                          (unsigned long long)c->interleaved_base, (unsigned long long)c->sram_bytes);
    c->host_bpc = c->host_bw / c->clock_hz;
    c->host_latency_cycles = (uint64_t)ceil(c->host_latency_s * c->clock_hz);
    return TS_OK;
}

const ts_schema ts_ipu_schema = {
    .arch = "ipu",
    .title = "Graphcore-style IPU: barrel-scheduled tiles, AMP, BSP with a compiled exchange",
    .keys = ipu_keys,
    .nkeys = sizeof ipu_keys / sizeof ipu_keys[0],
    .size = sizeof(ts_ipu_cfg),
    .check = ipu_check,
};
