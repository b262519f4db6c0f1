# tests/sweep/loop.s - a small IPU program for sweep tests: tiles 0-3 each count down two nested
# loops (about 120,000 cycles, a few milliseconds of host time), then all meet at a
# chip-wide sync. Any config with at least 4 tiles runs it.
.arch ipu
.workload "sweep test loop"
.stream tile 0-3
    setzi $m2, 1
outer:
    setzi $m1, 60000
inner:
    brnzdec $m1, inner
    brnzdec $m2, outer
    sync 1
    halt
