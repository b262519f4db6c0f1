.stream tile 2
    fli r0, 0.1
    fli r1, -0.0
    fli r2, 1e-40
    fli r3, inf
    fli r4, -nan(0x1234)
    fli r5, 0x1.8p3
    fadd r6, r0, r1
    mul r7, r6, r6
    ld r3, r7, -4
.Lend: br .Lend
