# tests/sweep/slow.s - loop.s 200 times over (about 12 million cycles, 0.7 s of CPU in the
# debugoptimized build): long enough that a signal sent to a sweep 0.3 s after its start finds
# its workers running.
.arch ipu
.workload "sweep test loop"
.stream tile 0-3
    setzi $m2, 200
outer:
    setzi $m1, 60000
inner:
    brnzdec $m1, inner
    brnzdec $m2, outer
    sync 1
    halt
