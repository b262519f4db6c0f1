# A loop that never ends and changes a register on every pass (so it is no endless loop by
# core/loopmark.h's test, which needs a state to come back): only a cycle limit stops it,
# with exit status 1.
.arch ipu
.stream tile 0
loop:
    addi $m1, $m1, 1
    br loop
