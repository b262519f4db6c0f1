# A program that never ends and works on every cycle (a register changes on every pass, so the
# endless-loop check does not stop it): it runs until its cycle limit, slowly enough that a test
# can signal it while it writes a trace.
.arch ipu
.stream tile 0
loop:
    addi $m1, $m1, 1
    br loop
