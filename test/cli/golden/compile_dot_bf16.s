# examples/hlo/dot_bf16.hlo: core 0 of 8
    wait seq, f31, 1   # infeed
# matmul C[128,1024] = A[128,1024] x B[1024,1024] on 2 MXU(s) (compiler/lowering/dot/matmul_kernel.cc)
.desc k0_p0_ablk rows=128 row_bytes=256 src_stride=2048 dst_stride=256
.desc k0_p0_btile rows=512 row_bytes=256 src_stride=2048 dst_stride=256
.desc k0_p0_cblk rows=128 row_bytes=512 src_stride=512 dst_stride=4096
.equ k0_p0_MC 128
.tag "dot.3"
    li r24, 2621440
    li r25, 0
    li r26, 2097152
    sflag f2, 2
    sflag f3, 2
    sflag f6, 1
    sflag f7, 1
    li r28, 0
k0_p0_batch:
    li r18, 0
    li r19, 0
    li r20, 0
    li r21, 0
    li r22, 0
    andi r23, r22, 1
    muli r29, r23, 131072
    muli r30, r23, 262144
    addi r30, r30, 262144
    addi r27, r30, 131072
    muli r8, r19, 2048
    muli r9, r21, 1024
    add r8, r8, r9
    add r8, r8, r24
    muli r9, r21, 1048576
    shli r10, r20, 8
    add r9, r9, r10
    add r9, r9, r25
    addi r10, r9, 1024
    bne r23, r0, k0_p0_odd_load_first
    wait dma, f2, 2
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r30, r9, k0_p0_btile, f0
    dma.hv r27, r10, k0_p0_btile, f0
    jmp k0_p0_loaded_first
k0_p0_odd_load_first:
    wait dma, f3, 2
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r30, r9, k0_p0_btile, f1
    dma.hv r27, r10, k0_p0_btile, f1
k0_p0_loaded_first:
    addi r22, r22, 1
    addi r21, r21, 1
    li r23, 2
    blt r21, r23, k0_p0_moved_first
    li r21, 0
    addi r20, r20, 1
    li r23, 4
    blt r20, r23, k0_p0_moved_first
    li r20, 0
    addi r19, r19, k0_p0_MC
k0_p0_moved_first:
    li r1, 0
k0_p0_rows:
    li r2, 0
k0_p0_cols:
    li r3, 0
k0_p0_kblk:
    li r13, 128
    bge r19, r13, k0_p0_nolookahead
    andi r23, r22, 1
    muli r29, r23, 131072
    muli r30, r23, 262144
    addi r30, r30, 262144
    addi r27, r30, 131072
    muli r8, r19, 2048
    muli r9, r21, 1024
    add r8, r8, r9
    add r8, r8, r24
    muli r9, r21, 1048576
    shli r10, r20, 8
    add r9, r9, r10
    add r9, r9, r25
    addi r10, r9, 1024
    bne r23, r0, k0_p0_odd_load_next
    wait dma, f2, 2
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f0
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r30, r9, k0_p0_btile, f0
    dma.hv r27, r10, k0_p0_btile, f0
    jmp k0_p0_loaded_next
k0_p0_odd_load_next:
    wait dma, f3, 2
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r29, r8, k0_p0_ablk, f1
    addi r29, r29, 32768
    addi r8, r8, 256
    dma.hv r30, r9, k0_p0_btile, f1
    dma.hv r27, r10, k0_p0_btile, f1
k0_p0_loaded_next:
    addi r22, r22, 1
    addi r21, r21, 1
    li r23, 2
    blt r21, r23, k0_p0_moved_next
    li r21, 0
    addi r20, r20, 1
    li r23, 4
    blt r20, r23, k0_p0_moved_next
    li r20, 0
    addi r19, r19, k0_p0_MC
k0_p0_moved_next:
k0_p0_nolookahead:
    andi r4, r18, 1
    muli r5, r4, 131072
    muli r6, r4, 262144
    addi r6, r6, 262144
    addi r7, r6, 131072
    bne r4, r0, k0_p0_odd_wait
    wait seq, f0, 6
    jmp k0_p0_waited
k0_p0_odd_wait:
    wait seq, f1, 6
k0_p0_waited:
    li r11, k0_p0_MC
    li r12, 0
    mxu.ldw m0, r6
    mxu.ldw m1, r7
    bne r3, r0, k0_p0_acc
    mxu.mm m0, r5, r11, r12
    mxu.mm m1, r5, r11, r12
    jmp k0_p0_issued
k0_p0_acc:
    mxu.mma m0, r5, r11, r12
    mxu.mma m1, r5, r11, r12
k0_p0_issued:
    addi r5, r5, 32768
    addi r6, r6, 0x8000
    addi r7, r7, 0x8000
    mxu.ldw m0, r6
    mxu.ldw m1, r7
    mxu.mma m0, r5, r11, r12
    mxu.mma m1, r5, r11, r12
    addi r5, r5, 32768
    addi r6, r6, 0x8000
    addi r7, r7, 0x8000
    mxu.ldw m0, r6
    mxu.ldw m1, r7
    mxu.mma m0, r5, r11, r12
    mxu.mma m1, r5, r11, r12
    addi r5, r5, 32768
    addi r6, r6, 0x8000
    addi r7, r7, 0x8000
    mxu.ldw m0, r6
    mxu.ldw m1, r7
    mxu.mma m0, r5, r11, r12
    mxu.mma m1, r5, r11, r12
    bne r4, r0, k0_p0_odd_free
    signal mxu0, f2, 1
    signal mxu1, f2, 1
    jmp k0_p0_freed
k0_p0_odd_free:
    signal mxu0, f3, 1
    signal mxu1, f3, 1
k0_p0_freed:
    addi r18, r18, 1
    addi r3, r3, 1
    li r13, 2
    blt r3, r13, k0_p0_kblk
    li r14, 786432
    li r15, 851968
    wait mxu0, f6, 1
    wait mxu1, f7, 1
    mxu.pop m0, r14, r12, r11
    mxu.pop m1, r15, r12, r11
    signal mxu0, f4, 1
    signal mxu1, f5, 1
    muli r16, r1, 4096
    shli r17, r2, 9
    add r16, r16, r17
    add r16, r16, r26
    addi r17, r16, 2048
    wait dma, f4, 1
    wait dma, f5, 1
    dma.vh r16, r14, k0_p0_cblk, f6
    dma.vh r17, r15, k0_p0_cblk, f7
    addi r2, r2, 1
    li r13, 4
    blt r2, r13, k0_p0_cols
    addi r1, r1, k0_p0_MC
    li r13, 128
    blt r1, r13, k0_p0_rows
    sflag f15, 0
    signal mxu0, f15, 1
    signal mxu1, f15, 1
    wait seq, f15, 2
    wait seq, f6, 1
    wait seq, f7, 1
    signal mxu0, f30, 1
    signal mxu1, f30, 1
    signal vpu, f30, 1
    signal dma, f30, 1
    wait seq, f30, 4
    sflag f0, 0
    sflag f1, 0
    sflag f2, 0
    sflag f3, 0
    sflag f4, 0
    sflag f5, 0
    sflag f6, 0
    sflag f7, 0
    sflag f8, 0
    sflag f9, 0
    sflag f10, 0
    sflag f11, 0
    sflag f12, 0
    sflag f13, 0
    sflag f14, 0
    sflag f15, 0
    halt
