/* arch/wse/wse_traffic.h — synthetic network-on-chip traffic on the wafer mesh: a generator of
 * wafer programs whose cores inject packets by a Bernoulli process and take the packets sent to
 * them, with every flit stamped so the model measures latency and throughput (docs/noc.md).
 *
 * The spec is the text after `traffic:` in a workload argument, comma-separated key=value:
 *   pattern   uniform, transpose, bitcomp, bitrev, shuffle, tornado, neighbour, hotspot
 *   rate      flits per node per cycle offered, in (0, 1]                      (default 0.05)
 *   flits     flits per packet, 1..64                                          (default 1)
 *   warmup    cycles before the measurement window                            (default 1000)
 *   measure   cycles of the measurement window                                (default 4000)
 *   seed      the pseudo-random seed, 0..2^63                                  (default 1)
 *   hot       hotspot: the share of packets sent to the hotspot PE, in [0, 1]  (default 0.2)
 *   route     xy (X then Y) or yx (Y then X)                                   (default xy)
 */
#ifndef TS_ARCH_WSE_TRAFFIC_H
#define TS_ARCH_WSE_TRAFFIC_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/wse/wse.h"
#include "core/config.h"
#include "core/err.h"
#include "core/program.h"

enum {
    WSE_TR_UNIFORM = 0, /* every other PE alike */
    WSE_TR_TRANSPOSE,   /* (x, y) to (y, x); square meshes */
    WSE_TR_BITCOMP,     /* (x, y) to (w - 1 - x, h - 1 - y): the bit complement on a power-of-two mesh */
    WSE_TR_BITREV,      /* PE id to its bits reversed; w * h a power of two */
    WSE_TR_SHUFFLE,     /* PE id rotated left by one bit; w * h a power of two */
    WSE_TR_TORNADO,     /* (x + ceil(w / 2) - 1 mod w, y + ceil(h / 2) - 1 mod h) */
    WSE_TR_NEIGHBOUR,   /* (x + 1 mod w, y + 1 mod h) */
    WSE_TR_HOTSPOT,     /* a share `hot` to the PE at the mesh centre, the rest uniform */
    WSE_TR_NPATTERNS
};

/* Largest rate x measure a generated program holds: packets are unrolled into each core's code. */
#define WSE_TR_MAX_PACKETS_PER_PE 65536u
/* Largest expected number of packets of a whole program (about 100 bytes of program each). */
#define WSE_TR_MAX_PACKETS 4000000u

typedef struct ts_wse_traffic {
    int pattern;          /* WSE_TR_* */
    double rate;          /* flits per node per cycle */
    uint32_t flits;       /* per packet */
    uint64_t warmup, measure; /* cycles */
    uint64_t seed;
    double hot;           /* hotspot share */
    bool yx;              /* route Y first */
} ts_wse_traffic;

/* The defaults above. */
void ts_wse_traffic_defaults(ts_wse_traffic *t);
/* Parse spec (the text after `traffic:`) over the defaults; TS_EINPUT naming the bad key or value. */
ts_status ts_wse_traffic_parse(ts_wse_traffic *t, const char *spec, ts_err *err);
/* The pattern's name, for the program's workload line. */
const char *ts_wse_traffic_pattern_name(int pattern);
/* Destination of PE id under a permutation pattern (not uniform or hotspot); id itself for a PE
 * the pattern maps onto itself, which then sends nothing. */
uint32_t ts_wse_traffic_dest(int pattern, uint32_t w, uint32_t h, uint32_t id);

/* Build the program for the mesh of config c. With fabric.routing colour, colours are static
 * routes: each destination gets one colour, its packets follow X-then-Y (or Y-then-X, route=yx)
 * paths merged into one tree, and destinations share a colour where their trees agree; TS_EINPUT
 * when the pattern needs more colours than there are (uniform traffic: one per PE, so 5 x 5 PEs at
 * most with 32). Routed by destination (fabric.routing xy, yx, o1turn), each packet goes on a
 * virtual channel drawn at random when it is created (its flits all on it), with `sendto`; each
 * core takes channel v on microthread v, so pe.microthreads must be at least fabric.vcs. */
ts_status ts_wse_traffic_program(ts_program **out, const ts_wse_cfg *c, const ts_wse_traffic *t, ts_err *err);

/* The program of `traffic:SPEC` on a loaded wafer config (its mesh and colours); TS_EINPUT for
 * another family's config or a bad spec. */
ts_status ts_wse_traffic_load(ts_program **out, const char *spec, const ts_config *cfg, ts_err *err);

#endif
