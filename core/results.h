/* core/results.h — what a run produces, family-neutral, before it is written as a report.
 *
 * A family's collect() fills the standard fields and adds its own statistics to `stats`; the
 * kernel then prices `events` with the energy table. Report writers read only this.
 */
#ifndef TS_CORE_RESULTS_H
#define TS_CORE_RESULTS_H

#include <stddef.h>
#include <stdint.h>
#include "core/energy.h"
#include "core/err.h"
#include "core/stats.h"

/* Where bytes move. */
typedef enum ts_level {
    TS_LEVEL_SRAM,    /* on-chip memory reads + writes (tile memory, MEM slices, PE SRAM) */
    TS_LEVEL_NET,     /* on-chip network: IPU exchange, TSP streams, WSE fabric */
    TS_LEVEL_OFFCHIP, /* host / DRAM / chip-to-chip */
    TS_LEVEL_COUNT
} ts_level;

#define TS_MAX_UTIL 16
#define TS_MAX_EVENTS 64
#define TS_MAX_COMPONENTS 16
#define TS_MAX_PEAK 8

typedef struct ts_util {
    char name[32];    /* unit kind, e.g. "tile", "amp", "mxm", "pe", "link" */
    uint64_t units;   /* how many of them */
    uint64_t busy;    /* busy unit-cycles */
} ts_util;

typedef struct ts_event_count {
    char name[40];    /* energy table event */
    double count;     /* events (may be fractional for bit x mm counts) */
} ts_event_count;

typedef struct ts_component_energy {
    char name[24];
    double joules;
} ts_component_energy;

/* A graph output of a lowered model, as the run left it (docs/values.md): its name, shape, a
 * checksum of its values and their largest magnitude. */
#define TS_OUTPUT_MAX_RANK 8
typedef struct ts_result_output {
    char *name;                        /* owned */
    int rank;
    int64_t dims[TS_OUTPUT_MAX_RANK];
    /* FNV-1a (64-bit) over the f32 values' bit patterns in C order, little-endian, with -0 taken
     * as +0 and every NaN as 0x7fc00000: the same values give the same checksum on any host */
    uint64_t checksum;
    double max_abs;                    /* largest |value|; NaN when a value is NaN */
} ts_result_output;

typedef struct ts_results {
    char arch[16];
    char config[128];
    char workload[128];
    uint64_t cycles;
    double clock_hz;
    char net_name[24];                 /* "exchange", "streams", "fabric" */
    uint64_t bytes[TS_LEVEL_COUNT];
    /* Multiply-accumulates: macs the useful ones (a lowered model's: the graph's, from its static
     * shapes, whatever the schedule pads; a program's: those executed), macs_executed those the
     * units ran (padding, partial tiles and recomputation included). A family's collect sets
     * macs; the run copies it to macs_executed and a lowered model's attribution sets macs. */
    uint64_t macs;
    uint64_t macs_executed;
    double flops;                      /* floating-point operations (a MAC is 2) */
    /* All arithmetic operations executed, integer included (a MAC of any type is 2, an element of
     * a vector add or multiply 1, a scalar integer add, multiply, logic, shift or compare 1; moves,
     * constants and address reads are not arithmetic): flops plus the integer work. */
    double ops;
    ts_util util[TS_MAX_UTIL];
    size_t nutil;
    ts_event_count events[TS_MAX_EVENTS];
    size_t nevents;
    double static_w;                   /* static power, W */
    /* Share of the chip's units the program occupies (wafer: PEs with code / PEs of the mesh), in
     * (0, 1); 0 when the family does not say or the program fills the chip. With it the report
     * gives the power of the whole chip were every unit as active as the occupied ones. */
    double occupancy;
    /* The chip's peak MACs per cycle per dtype (the family's info), for the share of peak. */
    struct { char dtype[8]; double macs_per_cycle; } peak[TS_MAX_PEAK];
    size_t npeak;
    /* The chip's SRAM bandwidth, reads and writes, in bytes per cycle (the family's info: its
     * entries named "sram" or "... memory ..."); 0 when unknown. The roofline's slanted roof. */
    double peak_sram_bytes_per_cycle;
    /* Filled by ts_results_price(): */
    char energy_table[64];
    double energy_j;
    ts_component_energy by_component[TS_MAX_COMPONENTS];
    size_t ncomponents;
    ts_stats *stats;                   /* owned: family-specific statistics */
    ts_result_output *outputs;         /* owned: graph outputs read back (lowered models); may be NULL */
    size_t noutputs;
} ts_results;

void ts_results_init(ts_results *r);
void ts_results_free(ts_results *r);   /* frees stats */
/* Add to a counted event (creates it). */
ts_status ts_results_event(ts_results *r, const char *name, double count, ts_err *err);
/* Add a unit kind's utilization. */
ts_status ts_results_util(ts_results *r, const char *name, uint64_t units, uint64_t busy, ts_err *err);
/* Price events: every event must be in the table (else TS_EINPUT naming it). Adds static energy
 * as component "static". */
ts_status ts_results_price(ts_results *r, const ts_energy_table *t, ts_err *err);
double ts_results_time_s(const ts_results *r);
/* The largest peak MACs per cycle over the dtypes (0 when unknown), and the share of it the
 * run's useful MACs took: macs / (peak x cycles), NAN when either is 0. */
double ts_results_peak_macs(const ts_results *r);
double ts_results_mac_share(const ts_results *r);
/* Add a graph output: name, shape (rank <= TS_OUTPUT_MAX_RANK) and its n values, summarised. */
ts_status ts_results_output(ts_results *r, const char *name, int rank, const int64_t *dims, const float *v,
                            uint64_t n, ts_err *err);
/* The checksum of n f32 values (ts_result_output.checksum). */
uint64_t ts_results_checksum(const float *v, uint64_t n);

/* Tables of energy events by part of a run (a family's superstep_events, region_events): a first
 * column (its id) and a column per event, named as the events. Add such a table to s (its index,
 * or -1 when out of memory). */
int ts_results_events_table(ts_stats *s, const char *name, const char *desc, const char *first,
                            const char *const *events, size_t nevents);
/* The joules of rows [row, row + n) of such a table priced with t; -1 if tab is not such a table,
 * has fewer rows, or t lacks one of its events. */
double ts_results_price_rows(const ts_stat *tab, size_t row, size_t n, const ts_energy_table *t);
/* The sum of the column named col over rows [row, row + n) of table tab; NAN when tab is not a
 * table, has fewer rows or no such column. */
double ts_results_sum_rows(const ts_stat *tab, size_t row, size_t n, const char *col);
/* Add to table tab of s the columns every family's "layers" table carries for the levels of
 * memory: sram_bytes, network_bytes and offchip_bytes (B), from v, n rows of each in that order
 * (level-major); NAN is a level the family cannot attribute (null in JSON). */
ts_status ts_results_level_columns(ts_stats *s, int tab, const double *v, size_t n);

#endif
