.arch toy
.config 0x0123456789abcdef
.workload "sum of 10"
.equ N, 10
.stream tile 0
    li r1, N
    li r2, 0
loop:
    add r2, r2, r1
    addi r1, r1, -1
    bnz r1, loop
    st r2, r0, 64
    halt
