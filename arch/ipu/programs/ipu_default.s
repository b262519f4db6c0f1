# arch/ipu/programs/ipu_default.s - the IPU's default workload, for configs/ipu_mk1.yaml.
#
# A ring of matrix-vector blocks on every tile (SPMD over tiles 0-1215), three BSP supersteps:
#   compute: each of the 6 workers streams 8 input pairs (16 floats) through the AMP
#            (f32v2amp: 4 conv units x 2 inputs = 8 MACs per cycle on MK1) and stores its 4 outputs;
#   sync:    chip-wide barrier;
#   exchange: every tile sends its 24 outputs to the next tile of the ring and receives the
#            previous tile's 24 into the first inputs of its next compute step.
# Memory map: AMP coefficients at 0x1000, outputs at 0x3000, inputs at 0x8000 (another SRAM
# element than the outputs, so the send and the receive never touch one element in one cycle).
.arch ipu
.workload "ipu default: ring of AMP matrix-vector blocks, 1216 tiles, 3 supersteps"
.stream tile 0-1215
    get $m10, 0                 # this tile
    setzi $m11, 1216            # tiles in the ring (all of MK1; MK2 leaves the rest idle)
    addi $m12, $m10, 1          # next tile in the ring
    cmpult $m13, $m12, $m11
    brnz $m13, have_next
    setzi $m12, 0
have_next:
    addi $m14, $m10, -1         # previous tile in the ring
    brneg $m14, wrap_prev
    br have_prev
wrap_prev:
    addi $m14, $m11, -1
have_prev:
    mov $m1, $m10
    runall init, $m1            # inputs from the tile id
    sync 0
    run coef, $m1               # coefficients into the AMP
    sync 0
    setzi $m15, 2               # three supersteps
step:
    setzi $m1, 0x8000
    runall mv, $m1
    sync 0
    sync 1
    setzi $m2, 0x8000
    recv $m2, $m14, 24          # the input mux selects the previous tile
    setzi $m3, 0x3000
    send $m3, $m12, 24          # one word per cycle to the next tile
    rxwait
    brnzdec $m15, step
    sync 1
    halt
init:                           # x[16 w + i] = (8 t + 16 w + i) / 64
    get $m1, 2
    shli $m2, $m1, 6
    setzi $m4, 0x8000
    add $m2, $m2, $m4
    shli $m3, $m0, 3
    shli $m5, $m1, 4
    add $m3, $m3, $m5
    ldconst $a2, 0.015625
    rpti 16, 5
    mov $a0, $m3
    f32fromi32 $a1, $a0
    f32mul $a1, $a1, $a2
    st32step $a1, $m2, 4
    addi $m3, $m3, 1
    exit
coef:                           # w[i] = (i - 3) / 4, i < 8: w[u][j] for 4 units x 2 inputs
    setzi $m2, 0x1000
    setzi $m3, -3
    ldconst $a2, 0.25
    rpti 8, 5
    mov $a0, $m3
    f32fromi32 $a1, $a0
    f32mul $a1, $a1, $a2
    st32step $a1, $m2, 4
    addi $m3, $m3, 1
    setzi $m2, 0x1000
    ld128putcs $m2, 0
    addi $m2, $m2, 16
    ld128putcs $m2, 1
    exit
mv:                             # y[4 w + u] = sum_p w[u] . x[16 w + 2p .. +1]
    get $m1, 2
    shli $m2, $m1, 6
    add $m2, $m2, $m0
    ampzero
    rpti 8, 2
    ld64step $a0, $m2, 8
    f32v2amp $a0
    ampget $a0, 0
    ampget $a2, 1
    shli $m3, $m1, 4
    setzi $m4, 0x3000
    add $m3, $m3, $m4
    st64 $a0, $m3, 0
    st64 $a2, $m3, 8
    exit
