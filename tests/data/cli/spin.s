# A program that never ends: a pass every 500,002 cycles, each with an effect (a delay is exchange
# activity) and a register that changes, so neither the hang detector nor the endless-loop check
# (core/loopmark.h) stops it; only a cycle limit does, with exit status 1. The fast mode starts each
# round at the first cycle a tile runs (docs/ipu.md), so it reaches the default limit of a billion
# cycles in milliseconds.
.arch ipu
.stream tile 0
loop:
    addi $m1, $m1, 1
    delay 500000
    br loop
