# A loop that comes back to the same state with nothing done: stopped on its second pass, with
# exit status 1 and the tile, context, pc and cycle.
.arch ipu
.stream tile 2
    setzi $m1, 3
loop:
    addi $m2, $m1, 1
    br loop
