.data tile 0 0x100
    .byte 1, 2, 0xff, -1
    .half 0x1234, -2
    .word 0xdeadbeef
    .f32 1.5, -inf, nan
    .f16 0.1, 65504, 2049
    .zero 9
.data tile 3 0
.stream tile 3
.line 0
    nop
.line 100
    nop
