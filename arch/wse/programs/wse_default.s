# arch/wse/programs/wse_default.s - the built-in wafer-mesh workload (runs on wse_32x32 by default).
#
# A chain reduction along row 0 (research/cerebras_wse.md s3.2, LUC "chain"): PEs (0,0)..(3,0)
# each hold 8 binary32 values at address 0. PE 0 streams its vector east; each next PE adds what
# arrives from the west to its own vector and streams the sum east; PE 3 keeps the result at 0.
# Colours 1 and 2 alternate so that a PE can take one colour from the west and send the other
# east. Expected result at PE (3,0): 10, 20, ..., 80 (sums of 1..8 x (1 + 2 + 3 + 4)).
.arch wse
.workload "chain reduction of 4 x 8 fp32 along a row"
.equ N, 1
.equ S, 2
.equ E, 4
.equ W, 8
.equ R, 16

.stream pe 0
    route 1, R, E
    dsdm 0, 0, 8, 1          # own vector
    dsdout 1, 1, 8, 0        # 8 wavelets east on colour 1
    fmovs 1, 0, -1, -1
.stream pe 1
    route 1, W, R
    route 2, R, E
    dsdm 0, 0, 8, 1
    dsdin 2, 1, 8            # partial sums from the west
    dsdout 1, 2, 8, 0
    fadds 1, 0, 2, -1, -1    # out := own + in
.stream pe 2
    route 2, W, R
    route 1, R, E
    dsdm 0, 0, 8, 1
    dsdin 2, 2, 8
    dsdout 1, 1, 8, 0
    fadds 1, 0, 2, -1, -1
.stream pe 3
    route 1, W, R
    dsdm 0, 0, 8, 1
    dsdin 2, 1, 8
    fadds 0, 0, 2, -1, -1    # result := own + in, in place

.data pe 0 0
    .f32 1, 2, 3, 4, 5, 6, 7, 8
.data pe 1 0
    .f32 2, 4, 6, 8, 10, 12, 14, 16
.data pe 2 0
    .f32 3, 6, 9, 12, 15, 18, 21, 24
.data pe 3 0
    .f32 4, 8, 12, 16, 20, 24, 28, 32
