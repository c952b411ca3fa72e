# Double-buffered bf16 matmul C[1024,1024] f32 = A[1024,1024] bf16 x B[1024,1024] bf16,
# HBM to HBM, on one TensorCore with both MXUs.
#
# HBM:  A at 0x000000 (row-major bf16), B at 0x200000 (row-major bf16),
#       C at 0x400000 (row-major f32).
# VMEM: A column blocks A[:, kb*128:+128] at kb*0x40000 (1024 rows x 256 B each);
#       B tiles B[kb*128:+128, nb*128:+128] at 0x200000 + (nb*8+kb)*0x8000;
#       output staging ring of 16 slots of 128 rows x 512 B per MXU at
#       0x400000 (MXU0) and 0x500000 (MXU1).
# Work: a job table in SMEM (nb, first row, rows). MXU0 computes column block nb and MXU1
#       block nb+4, accumulating over kb = 0..7 into fresh accumulator rows. Jobs get
#       shorter towards the end so the last results leave the chip sooner. Weight loads
#       hide under the row streams (double buffering); job j-1's results are popped in
#       128-row pieces while job j streams, then copied out by DMA.
# Flags: f0..f7 A block kb in VMEM; f8..f15 B tiles (kb,0),(kb,4) in VMEM (2 each);
#        f17/f18 MXU0/MXU1 popped a piece; f19/f20 free staging slots of MXU0/MXU1
#        (16 each; a copy out returns one); f21/f22/f23 B column blocks nb 1/2/3 and
#        nb+4 in VMEM (2 copies each).

.desc ablk  rows=1024 row_bytes=256 src_stride=2048 dst_stride=256
.desc btile rows=128  row_bytes=256 src_stride=2048 dst_stride=256
.desc bcol  rows=128  row_bytes=256 src_stride=2048 dst_stride=256 planes=8 src_plane_stride=0x40000 dst_plane_stride=0x8000
.desc c128  rows=128  row_bytes=512 src_stride=512  dst_stride=4096
.equ JOBS 10

    sflag f19, 16
    sflag f20, 16
# ---- A blocks and the first column pair of B, in the order they are needed
    li r1, 0
    li r2, 0
    dma.hv r1, r2, ablk, f0                  # A[:, 0:128]
    li r1, 2097152
    li r2, 2097152
    dma.hv r1, r2, btile, f8               # B tile (0,0)
    li r1, 3145728
    li r2, 2098176
    dma.hv r1, r2, btile, f8               # B tile (0,4)
    li r1, 262144
    li r2, 256
    dma.hv r1, r2, ablk, f1                  # A[:, 128:256]
    li r1, 2129920
    li r2, 2359296
    dma.hv r1, r2, btile, f9               # B tile (1,0)
    li r1, 3178496
    li r2, 2360320
    dma.hv r1, r2, btile, f9               # B tile (1,4)
    li r1, 524288
    li r2, 512
    dma.hv r1, r2, ablk, f2                  # A[:, 256:384]
    li r1, 2162688
    li r2, 2621440
    dma.hv r1, r2, btile, f10               # B tile (2,0)
    li r1, 3211264
    li r2, 2622464
    dma.hv r1, r2, btile, f10               # B tile (2,4)
    li r1, 786432
    li r2, 768
    dma.hv r1, r2, ablk, f3                  # A[:, 384:512]
    li r1, 2195456
    li r2, 2883584
    dma.hv r1, r2, btile, f11               # B tile (3,0)
    li r1, 3244032
    li r2, 2884608
    dma.hv r1, r2, btile, f11               # B tile (3,4)
    li r1, 1048576
    li r2, 1024
    dma.hv r1, r2, ablk, f4                  # A[:, 512:640]
    li r1, 2228224
    li r2, 3145728
    dma.hv r1, r2, btile, f12               # B tile (4,0)
    li r1, 3276800
    li r2, 3146752
    dma.hv r1, r2, btile, f12               # B tile (4,4)
    li r1, 1310720
    li r2, 1280
    dma.hv r1, r2, ablk, f5                  # A[:, 640:768]
    li r1, 2260992
    li r2, 3407872
    dma.hv r1, r2, btile, f13               # B tile (5,0)
    li r1, 3309568
    li r2, 3408896
    dma.hv r1, r2, btile, f13               # B tile (5,4)
    li r1, 1572864
    li r2, 1536
    dma.hv r1, r2, ablk, f6                  # A[:, 768:896]
    li r1, 2293760
    li r2, 3670016
    dma.hv r1, r2, btile, f14               # B tile (6,0)
    li r1, 3342336
    li r2, 3671040
    dma.hv r1, r2, btile, f14               # B tile (6,4)
    li r1, 1835008
    li r2, 1792
    dma.hv r1, r2, ablk, f7                  # A[:, 896:1024]
    li r1, 2326528
    li r2, 3932160
    dma.hv r1, r2, btile, f15               # B tile (7,0)
    li r1, 3375104
    li r2, 3933184
    dma.hv r1, r2, btile, f15               # B tile (7,4)
# ---- the other B column blocks nb = 1,2,3,5,6,7: one 8-tile copy each
    li r20, 1                                   # nb
    li r21, 8
    li r22, 4
bcols:
    beq r20, r22, bnext                         # nb 4 is already loaded
    shli r24, r20, 18
    addi r24, r24, 0x200000                     # VMEM: tiles (0..7, nb)
    shli r25, r20, 8
    addi r25, r25, 0x200000                     # HBM: B[0:1024, nb*128:+128]
    li r27, 1
    beq r20, r27, b_f21
    li r27, 2
    beq r20, r27, b_f22
    li r27, 5
    beq r20, r27, b_f21
    li r27, 6
    beq r20, r27, b_f22
    dma.hv r24, r25, bcol, f23                  # nb 3 and 7
    jmp bnext
b_f21:
    dma.hv r24, r25, bcol, f21                  # nb 1 and 5
    jmp bnext
b_f22:
    dma.hv r24, r25, bcol, f22                  # nb 2 and 6
bnext:
    addi r20, r20, 1
    blt r20, r21, bcols

# ---- job table in SMEM: 3 words per job (nb, first row, rows)
    li r1, 0
    li r2, 0
    sst r2, r1, 0
    li r2, 0
    sst r2, r1, 4
    li r2, 1024
    sst r2, r1, 8
    li r2, 1
    sst r2, r1, 12
    li r2, 0
    sst r2, r1, 16
    li r2, 512
    sst r2, r1, 20
    li r2, 1
    sst r2, r1, 24
    li r2, 512
    sst r2, r1, 28
    li r2, 512
    sst r2, r1, 32
    li r2, 2
    sst r2, r1, 36
    li r2, 0
    sst r2, r1, 40
    li r2, 512
    sst r2, r1, 44
    li r2, 2
    sst r2, r1, 48
    li r2, 512
    sst r2, r1, 52
    li r2, 512
    sst r2, r1, 56
    li r2, 3
    sst r2, r1, 60
    li r2, 0
    sst r2, r1, 64
    li r2, 256
    sst r2, r1, 68
    li r2, 3
    sst r2, r1, 72
    li r2, 256
    sst r2, r1, 76
    li r2, 256
    sst r2, r1, 80
    li r2, 3
    sst r2, r1, 84
    li r2, 512
    sst r2, r1, 88
    li r2, 256
    sst r2, r1, 92
    li r2, 3
    sst r2, r1, 96
    li r2, 768
    sst r2, r1, 100
    li r2, 128
    sst r2, r1, 104
    li r2, 3
    sst r2, r1, 108
    li r2, 896
    sst r2, r1, 112
    li r2, 128
    sst r2, r1, 116

# ---- main loop over jobs j = r1
# r3 rows, r5 A row offset, r7 B tiles of nb, r10 accumulator rows, r30 next free
# accumulator row, r31 staging pieces used so far; r11/r13/r14 the previous job's
# accumulator rows, row count and C address; r29 its first staging piece.
    li r1, 0
    li r2, JOBS
    li r4, 1
    li r26, 128
    li r30, 0
    li r31, 0
job:
    muli r20, r1, 12
    sld r21, r20, 0                             # nb
    sld r22, r20, 4                             # first row
    sld r3, r20, 8                              # rows
    muli r5, r22, 256
    shli r7, r21, 18
    addi r7, r7, 0x200000
    mov r10, r30
    add r30, r30, r3
    blt r1, r4, have_b                          # job 0 uses nb 0 and 4
    li r27, 1
    beq r21, r27, need_f21
    li r27, 2
    beq r21, r27, need_f22
    wait seq, f23, 2                            # B blocks nb 3 and 7 present (kept)
    signal seq, f23, 2
    jmp have_b
need_f21:
    wait seq, f21, 2
    signal seq, f21, 2
    jmp have_b
need_f22:
    wait seq, f22, 2
    signal seq, f22, 2
have_b:
    wait seq, f0, 1                            # A block 0 present (checked, kept)
    signal seq, f0, 1
    wait seq, f8, 2
    signal seq, f8, 2
    addi r6, r5, 0
    addi r8, r7, 0
    addi r9, r7, 1048576
    mxu.ldw m0, r8
    mxu.mm  m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mm  m1, r6, r3, r10
    beq r1, r0, no_pop                          # job 0 has no predecessor
    mov r29, r31
    li r23, 0
pop_piece:
    andi r24, r31, 15
    shli r24, r24, 16
    addi r24, r24, 0x400000                     # staging slot (MXU0)
    addi r27, r24, 0x100000                     # (MXU1)
    add r25, r11, r23                           # accumulator row
    wait mxu0, f19, 1
    mxu.pop m0, r24, r25, r26
    wait mxu1, f20, 1
    mxu.pop m1, r27, r25, r26
    addi r31, r31, 1
    addi r23, r23, 128
    blt r23, r13, pop_piece
no_pop:
    wait seq, f1, 1                            # A block 1 present (checked, kept)
    signal seq, f1, 1
    wait seq, f9, 2
    signal seq, f9, 2
    addi r6, r5, 262144
    addi r8, r7, 32768
    addi r9, r7, 1081344
    mxu.ldw m0, r8
    mxu.mma m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mma m1, r6, r3, r10
    wait seq, f2, 1                            # A block 2 present (checked, kept)
    signal seq, f2, 1
    wait seq, f10, 2
    signal seq, f10, 2
    addi r6, r5, 524288
    addi r8, r7, 65536
    addi r9, r7, 1114112
    mxu.ldw m0, r8
    mxu.mma m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mma m1, r6, r3, r10
    wait seq, f3, 1                            # A block 3 present (checked, kept)
    signal seq, f3, 1
    wait seq, f11, 2
    signal seq, f11, 2
    addi r6, r5, 786432
    addi r8, r7, 98304
    addi r9, r7, 1146880
    mxu.ldw m0, r8
    mxu.mma m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mma m1, r6, r3, r10
    beq r1, r0, no_out
    li r23, 0
out_piece:
    signal mxu0, f17, 1
    signal mxu1, f18, 1
    andi r24, r29, 15
    shli r24, r24, 16
    addi r24, r24, 0x400000
    addi r27, r24, 0x100000
    shli r25, r23, 12
    add r25, r25, r14                           # C rows of this piece (MXU0 columns)
    addi r28, r25, 2048                         # (MXU1 columns, nb + 4)
    wait dma, f17, 1
    dma.vh r25, r24, c128, f19
    wait dma, f18, 1
    dma.vh r28, r27, c128, f20
    addi r29, r29, 1
    addi r23, r23, 128
    blt r23, r13, out_piece
no_out:
    wait seq, f4, 1                            # A block 4 present (checked, kept)
    signal seq, f4, 1
    wait seq, f12, 2
    signal seq, f12, 2
    addi r6, r5, 1048576
    addi r8, r7, 131072
    addi r9, r7, 1179648
    mxu.ldw m0, r8
    mxu.mma m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mma m1, r6, r3, r10
    wait seq, f5, 1                            # A block 5 present (checked, kept)
    signal seq, f5, 1
    wait seq, f13, 2
    signal seq, f13, 2
    addi r6, r5, 1310720
    addi r8, r7, 163840
    addi r9, r7, 1212416
    mxu.ldw m0, r8
    mxu.mma m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mma m1, r6, r3, r10
    wait seq, f6, 1                            # A block 6 present (checked, kept)
    signal seq, f6, 1
    wait seq, f14, 2
    signal seq, f14, 2
    addi r6, r5, 1572864
    addi r8, r7, 196608
    addi r9, r7, 1245184
    mxu.ldw m0, r8
    mxu.mma m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mma m1, r6, r3, r10
    wait seq, f7, 1                            # A block 7 present (checked, kept)
    signal seq, f7, 1
    wait seq, f15, 2
    signal seq, f15, 2
    addi r6, r5, 1835008
    addi r8, r7, 229376
    addi r9, r7, 1277952
    mxu.ldw m0, r8
    mxu.mma m0, r6, r3, r10
    mxu.ldw m1, r9
    mxu.mma m1, r6, r3, r10
    mov r11, r10                                # this job becomes the previous one
    mov r13, r3
    shli r14, r22, 12
    shli r25, r21, 9
    add r14, r14, r25
    addi r14, r14, 0x400000
    addi r1, r1, 1
    blt r1, r2, job

# ---- epilogue: pop and copy out the last job, piece by piece
    mov r29, r31
    li r23, 0
last_piece:
    andi r24, r31, 15
    shli r24, r24, 16
    addi r24, r24, 0x400000
    addi r27, r24, 0x100000
    add r25, r11, r23
    wait mxu0, f19, 1
    mxu.pop m0, r24, r25, r26
    signal mxu0, f17, 1
    wait mxu1, f20, 1
    mxu.pop m1, r27, r25, r26
    signal mxu1, f18, 1
    shli r25, r23, 12
    add r25, r25, r14
    addi r28, r25, 2048
    wait dma, f17, 1
    dma.vh r25, r24, c128, f19
    wait dma, f18, 1
    dma.vh r28, r27, c128, f20
    addi r31, r31, 1
    addi r23, r23, 128
    blt r23, r13, last_piece
    halt                                        # waits for every unit and copy to finish
