/* tests/test_units.c — parsing and formatting of quantities (core/units.h). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"

/* Parse text as kind and check it gives want, relative to 1e-12. */
static void ok(const char *text, ts_unit_kind kind, double want)
{
    double v = -12345;
    char why[256] = "";
    int rc = ts_unit_parse(text, kind, &v, why, sizeof why);
    ck_assert_msg(rc == 0, "'%s' should parse: %s", text, why);
    double tol = fabs(want) * 1e-12;
    ck_assert_msg(fabs(v - want) <= tol, "'%s' gave %.17g, want %.17g", text, v, want);
}

/* Parse text as kind and check it fails with exactly the reason want. */
static void bad(const char *text, ts_unit_kind kind, const char *want)
{
    double v = 7;
    char why[256] = "";
    int rc = ts_unit_parse(text, kind, &v, why, sizeof why);
    ck_assert_msg(rc == -1, "'%s' should fail", text);
    ck_assert_str_eq(why, want);
    ck_assert(v == 7); /* untouched on failure */
}

static void fmt(double v, ts_unit_kind kind, const char *want)
{
    char buf[64];
    ts_unit_format(v, kind, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
}

START_TEST(plain_numbers)
{
    ok("1e9", TS_UNIT_NONE, 1e9);
    ok("0.5", TS_UNIT_NONE, 0.5);
    ok("42", TS_UNIT_NONE, 42);
    ok("  42  ", TS_UNIT_NONE, 42);
    ok("-3", TS_UNIT_NONE, -3);
    ok("+3.25", TS_UNIT_NONE, 3.25);
    ok(".5", TS_UNIT_NONE, 0.5);
    ok("2.5E-3", TS_UNIT_NONE, 2.5e-3);
    /* A plain number is in the base unit of every kind. */
    ok("1600000000", TS_UNIT_FREQ, 1.6e9);
    ok("256", TS_UNIT_BYTES, 256);
    ok("100", TS_UNIT_BANDWIDTH, 100);
    ok("16", TS_UNIT_BPC, 16);
    ok("1e-12", TS_UNIT_ENERGY, 1e-12);
    ok("0.001", TS_UNIT_TIME, 1e-3);
    ok("3", TS_UNIT_POWER, 3);
    ok("7", TS_UNIT_CYCLES, 7);
    ok("2", TS_UNIT_LENGTH, 2);
}
END_TEST

START_TEST(frequency)
{
    ok("1.6 GHz", TS_UNIT_FREQ, 1.6e9);
    ok("1.6GHz", TS_UNIT_FREQ, 1.6e9);
    ok("800 MHz", TS_UNIT_FREQ, 8e8);
    ok("100 kHz", TS_UNIT_FREQ, 1e5);
    ok("100 KHz", TS_UNIT_FREQ, 1e5);
    ok("50 Hz", TS_UNIT_FREQ, 50);
    ok("1 THz", TS_UNIT_FREQ, 1e12);
    ok("1 khz", TS_UNIT_FREQ, 1e3);
    ok("2 mhz", TS_UNIT_FREQ, 2e6); /* nobody means millihertz */
    ok("1.25 ghz", TS_UNIT_FREQ, 1.25e9);
}
END_TEST

START_TEST(bytes)
{
    ok("256 KiB", TS_UNIT_BYTES, 262144);
    ok("2.5 MiB", TS_UNIT_BYTES, 2.5 * 1048576);
    ok("1 GiB", TS_UNIT_BYTES, 1073741824.0);
    ok("1 TiB", TS_UNIT_BYTES, 1099511627776.0);
    ok("1 KB", TS_UNIT_BYTES, 1000);
    ok("1 kB", TS_UNIT_BYTES, 1000);
    ok("3 MB", TS_UNIT_BYTES, 3e6);
    ok("40 GB", TS_UNIT_BYTES, 40e9);
    ok("2 TB", TS_UNIT_BYTES, 2e12);
    ok("12 B", TS_UNIT_BYTES, 12);
    ok("12 bytes", TS_UNIT_BYTES, 12);
    ok("64 bit", TS_UNIT_BYTES, 8);
    ok("64 b", TS_UNIT_BYTES, 8);
    ok("8 Kibit", TS_UNIT_BYTES, 1024);
    ok("8 Mbit", TS_UNIT_BYTES, 1e6);
    ok("8 Gbit", TS_UNIT_BYTES, 1e9);
    ok("8 Tbit", TS_UNIT_BYTES, 1e12);
    ok("8 kbit", TS_UNIT_BYTES, 1e3);
    ok("8 Mibit", TS_UNIT_BYTES, 1048576);
    ok("8 Gibit", TS_UNIT_BYTES, 1073741824.0);
    ok("1 PB", TS_UNIT_BYTES, 1e15);
    ok("1 PiB", TS_UNIT_BYTES, 1125899906842624.0);
}
END_TEST

START_TEST(bandwidth)
{
    ok("6.3 GB/s", TS_UNIT_BANDWIDTH, 6.3e9);
    ok("6.3GB/s", TS_UNIT_BANDWIDTH, 6.3e9);
    ok("100 Gbit/s", TS_UNIT_BANDWIDTH, 12.5e9);
    ok("100 Gbps", TS_UNIT_BANDWIDTH, 12.5e9);
    ok("2 GBps", TS_UNIT_BANDWIDTH, 2e9);
    ok("1 KiB/s", TS_UNIT_BANDWIDTH, 1024);
    ok("1 MiB/s", TS_UNIT_BANDWIDTH, 1048576);
    ok("1 GiB/s", TS_UNIT_BANDWIDTH, 1073741824.0);
    ok("1 TiB/s", TS_UNIT_BANDWIDTH, 1099511627776.0);
    ok("1 KB/s", TS_UNIT_BANDWIDTH, 1e3);
    ok("1 MB/s", TS_UNIT_BANDWIDTH, 1e6);
    ok("1 TB/s", TS_UNIT_BANDWIDTH, 1e12);
    ok("9 B/s", TS_UNIT_BANDWIDTH, 9);
}
END_TEST

START_TEST(bytes_per_cycle)
{
    ok("16 B/cycle", TS_UNIT_BPC, 16);
    ok("16B/cycle", TS_UNIT_BPC, 16);
    ok("64 bit/cycle", TS_UNIT_BPC, 8);
    ok("1 KiB/cycle", TS_UNIT_BPC, 1024);
    ok("32 B/clk", TS_UNIT_BPC, 32);
}
END_TEST

START_TEST(energy_time_power_cycles_length)
{
    ok("0.9 pJ", TS_UNIT_ENERGY, 0.9e-12);
    ok("3 fJ", TS_UNIT_ENERGY, 3e-15);
    ok("1 nJ", TS_UNIT_ENERGY, 1e-9);
    ok("2 uJ", TS_UNIT_ENERGY, 2e-6);
    ok("2 \xC2\xB5J", TS_UNIT_ENERGY, 2e-6);  /* µ, MICRO SIGN */
    ok("2 \xCE\xBCJ", TS_UNIT_ENERGY, 2e-6);  /* μ, GREEK SMALL LETTER MU */
    ok("5 mJ", TS_UNIT_ENERGY, 5e-3);
    ok("1 J", TS_UNIT_ENERGY, 1);
    ok("2 kJ", TS_UNIT_ENERGY, 2e3);
    ok("7 aJ", TS_UNIT_ENERGY, 7e-18);

    ok("165 ns", TS_UNIT_TIME, 165e-9);
    ok("165ns", TS_UNIT_TIME, 165e-9);
    ok("10 ps", TS_UNIT_TIME, 10e-12);
    ok("3 us", TS_UNIT_TIME, 3e-6);
    ok("3 \xC2\xB5s", TS_UNIT_TIME, 3e-6);
    ok("4 ms", TS_UNIT_TIME, 4e-3);
    ok("1.5 s", TS_UNIT_TIME, 1.5);
    ok("20 fs", TS_UNIT_TIME, 20e-15);

    ok("10 uW", TS_UNIT_POWER, 1e-5);
    ok("10 \xC2\xB5W", TS_UNIT_POWER, 1e-5);
    ok("250 mW", TS_UNIT_POWER, 0.25);
    ok("120 W", TS_UNIT_POWER, 120);
    ok("15 kW", TS_UNIT_POWER, 15e3);
    ok("5 nW", TS_UNIT_POWER, 5e-9);
    ok("2 MW", TS_UNIT_POWER, 2e6);

    ok("12 cycles", TS_UNIT_CYCLES, 12);
    ok("1 cycle", TS_UNIT_CYCLES, 1);
    ok("12", TS_UNIT_CYCLES, 12);

    ok("5 um", TS_UNIT_LENGTH, 5e-6);
    ok("5 \xC2\xB5m", TS_UNIT_LENGTH, 5e-6);
    ok("25 mm", TS_UNIT_LENGTH, 25e-3);
    ok("21.5 cm", TS_UNIT_LENGTH, 0.215);
    ok("1 m", TS_UNIT_LENGTH, 1);
    ok("7 nm", TS_UNIT_LENGTH, 7e-9);
    ok("3 km", TS_UNIT_LENGTH, 3e3);
}
END_TEST

START_TEST(errors)
{
    bad("fast", TS_UNIT_FREQ, "expected a frequency like '1.6 GHz', got 'fast'");
    bad("", TS_UNIT_BYTES, "expected a size like '256 KiB', got ''");
    bad("3 ns", TS_UNIT_FREQ,
        "expected a frequency like '1.6 GHz', got '3 ns' ('ns' is a unit of time; use Hz, kHz, MHz, GHz or THz)");
    bad("1.6 GHz", TS_UNIT_BYTES,
        "expected a size like '256 KiB', got '1.6 GHz' ('GHz' is a unit of frequency; use B, KB, MB, GB, TB, "
        "KiB, MiB, GiB, TiB or bit)");
    bad("6 GB", TS_UNIT_BANDWIDTH,
        "expected a bandwidth like '6.3 GB/s', got '6 GB' ('GB' is a unit of size; use B/s, KB/s, MB/s, GB/s, "
        "TB/s, KiB/s, MiB/s, GiB/s, TiB/s or Gbit/s)");
    bad("3 parsecs", TS_UNIT_LENGTH,
        "expected a length like '25 mm', got '3 parsecs' (unknown unit 'parsecs'; use um, mm, cm or m)");
    bad("3 W", TS_UNIT_NONE, "expected a number like '4', got '3 W' ('W' is a unit of power; use no unit)");
    bad("3 apples", TS_UNIT_NONE, "expected a number like '4', got '3 apples' (a plain number, without a unit)");
    bad("inf", TS_UNIT_NONE, "expected a number like '4', got 'inf'");
    bad("nan", TS_UNIT_TIME, "expected a time like '165 ns', got 'nan'");
    bad("0x10", TS_UNIT_NONE, "expected a number like '4', got '0x10' (a plain number, without a unit)");
    bad("1e999", TS_UNIT_NONE, "expected a number like '4', got '1e999' (too large)");
    bad("1e300 TB", TS_UNIT_BYTES, "expected a size like '256 KiB', got '1e300 TB' (too large)");
    bad("GHz", TS_UNIT_FREQ, "expected a frequency like '1.6 GHz', got 'GHz'");
    bad("3 pJ", TS_UNIT_POWER,
        "expected a power like '2.5 W', got '3 pJ' ('pJ' is a unit of energy; use uW, mW, W or kW)");
    bad("3 Hz", TS_UNIT_CYCLES,
        "expected a cycle count like '12 cycles', got '3 Hz' ('Hz' is a unit of frequency; use cycles)");
    bad("4 B", TS_UNIT_BPC,
        "expected a bytes-per-cycle rate like '16 B/cycle', got '4 B' ('B' is a unit of size; use B/cycle)");
    bad("1 s", TS_UNIT_ENERGY,
        "expected an energy like '0.9 pJ', got '1 s' ('s' is a unit of time; use fJ, pJ, nJ, uJ, mJ or J)");
    /* The reason is cut to the buffer, never overrun. */
    char small[8];
    double v;
    ck_assert_int_eq(ts_unit_parse("fast", TS_UNIT_FREQ, &v, small, sizeof small), -1);
    ck_assert_str_eq(small, "expecte");
    ck_assert_int_eq(ts_unit_parse("fast", TS_UNIT_FREQ, &v, NULL, 0), -1);
    ck_assert_int_eq(ts_unit_parse(NULL, TS_UNIT_FREQ, &v, NULL, 0), -1);
}
END_TEST

START_TEST(symbols_and_nouns)
{
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_NONE), "");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_FREQ), "Hz");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_BYTES), "B");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_BANDWIDTH), "B/s");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_BPC), "B/cycle");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_ENERGY), "J");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_TIME), "s");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_POWER), "W");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_CYCLES), "cycles");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_LENGTH), "m");
    ck_assert_str_eq(ts_unit_noun(TS_UNIT_FREQ), "frequency");
    ck_assert_str_eq(ts_unit_noun(TS_UNIT_BYTES), "size");
    ck_assert_str_eq(ts_unit_noun(TS_UNIT_BANDWIDTH), "bandwidth");
    ck_assert_str_eq(ts_unit_noun(TS_UNIT_TIME), "time");
    ck_assert_str_eq(ts_unit_symbol(TS_UNIT_KIND_COUNT), "");
}
END_TEST

START_TEST(format)
{
    fmt(1.6e9, TS_UNIT_FREQ, "1.6 GHz");
    fmt(8e8, TS_UNIT_FREQ, "800 MHz");
    fmt(999.96e6, TS_UNIT_FREQ, "1 GHz");
    fmt(50, TS_UNIT_FREQ, "50 Hz");
    fmt(0, TS_UNIT_FREQ, "0 Hz");
    fmt(262144, TS_UNIT_BYTES, "256 KiB");
    fmt(2.5 * 1048576, TS_UNIT_BYTES, "2.5 MiB");
    fmt(624 * 1024, TS_UNIT_BYTES, "624 KiB");
    fmt(1e9, TS_UNIT_BYTES, "1 GB");
    fmt(1000, TS_UNIT_BYTES, "1 KB");
    fmt(12, TS_UNIT_BYTES, "12 B");
    fmt(6.3e9, TS_UNIT_BANDWIDTH, "6.3 GB/s");
    fmt(1073741824.0, TS_UNIT_BANDWIDTH, "1.074 GB/s");
    fmt(16.0 * 1216 * 1.6e9, TS_UNIT_BANDWIDTH, "31.13 TB/s"); /* IPU MK1 local read bandwidth */
    fmt(16, TS_UNIT_BPC, "16 B/cycle");
    fmt(0.9e-12, TS_UNIT_ENERGY, "900 fJ");
    fmt(1.25e-12, TS_UNIT_ENERGY, "1.25 pJ");
    fmt(165e-9, TS_UNIT_TIME, "165 ns");
    fmt(1.23456e-6, TS_UNIT_TIME, "1.235 us");
    fmt(2.5, TS_UNIT_POWER, "2.5 W");
    fmt(-2.5e-3, TS_UNIT_POWER, "-2.5 mW");
    fmt(12, TS_UNIT_CYCLES, "12 cycles");
    fmt(1, TS_UNIT_CYCLES, "1 cycle");
    fmt(25e-3, TS_UNIT_LENGTH, "25 mm");
    fmt(1216, TS_UNIT_NONE, "1216");
    fmt(0.125, TS_UNIT_NONE, "0.125");
    fmt(INFINITY, TS_UNIT_TIME, "inf s");
    /* Formatting and parsing agree. */
    const struct { double v; ts_unit_kind k; } rt[] = {
        {1.6e9, TS_UNIT_FREQ}, {262144, TS_UNIT_BYTES}, {6.3e9, TS_UNIT_BANDWIDTH},
        {0.9e-12, TS_UNIT_ENERGY}, {165e-9, TS_UNIT_TIME}, {3e-6, TS_UNIT_POWER},
        {12, TS_UNIT_CYCLES}, {25e-3, TS_UNIT_LENGTH}, {16, TS_UNIT_BPC},
    };
    for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
        char buf[64];
        double back;
        ts_unit_format(rt[i].v, rt[i].k, buf, sizeof buf);
        ck_assert_msg(ts_unit_parse(buf, rt[i].k, &back, NULL, 0) == 0, "'%s' does not parse back", buf);
        ck_assert_msg(fabs(back - rt[i].v) <= fabs(rt[i].v) * 1e-12, "'%s' parses to %g", buf, back);
    }
}
END_TEST

static Suite *units_suite(void)
{
    Suite *s = suite_create("units");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, plain_numbers);
    tcase_add_test(tc, frequency);
    tcase_add_test(tc, bytes);
    tcase_add_test(tc, bandwidth);
    tcase_add_test(tc, bytes_per_cycle);
    tcase_add_test(tc, energy_time_power_cycles_length);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, symbols_and_nouns);
    tcase_add_test(tc, format);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(units_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
