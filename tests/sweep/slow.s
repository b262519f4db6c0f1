# tests/sweep/slow.s - loop.s 400 times over (about 25 million cycles, about half a second
# of host time): long enough that a signal sent to a sweep finds its workers running.
.arch ipu
.workload "sweep test loop"
.stream tile 0-3
    setzi $m2, 400
outer:
    setzi $m1, 60000
inner:
    brnzdec $m1, inner
    brnzdec $m2, outer
    sync 1
    halt
