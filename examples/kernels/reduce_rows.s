# Row sums s[r] = sum_c x[r, c] of an f32[1024,128] matrix, HBM to HBM, on one
# TensorCore's VPU.
#
# HBM:  x at 0x000000 (f32[1024,128] row-major, 512 KiB); s at 0x100000 (f32[1024],
#       compact).
# Work: 8 chunks of 128 rows (64 KiB = 16 vregs; a 512 B row is one sublane, so each
#       contiguous 4 KiB run is 8 whole rows). All 8 loads are queued at once into their
#       own VMEM region (no reuse, so no slot-free flags); the VPU reduces chunk c as soon
#       as it lands: vld, vredlane.sum (every lane of sublane s = sum of row s), vst. The
#       staged sums keep one 512 B row per matrix row; a gathering DMA (lane 0 of each
#       staged row, 4 B at stride 512) writes the sums of chunks 0..3 to HBM while the
#       VPU reduces chunks 4..7, and a second one the rest. (A gather per chunk would queue
#       behind the loads for DMA engines and pay the DMA latency twice at the end.)
# VMEM: chunk c at c*0x10000 (0x000000..0x07ffff); staged sums of row r at
#       0x100000 + r*512.
# Flags: f0..f7 chunk c loaded; f8/f9 VPU done with chunks 0..3/4..7; f16 sums written.

.desc chunk rows=1 row_bytes=65536 src_stride=0 dst_stride=0
.desc lane0 rows=512 row_bytes=4 src_stride=512 dst_stride=4

# ---- all loads, in the order the VPU needs them
    li r1, 0
    dma.hv r1, r1, chunk, f0               # rows 0..127
    li r1, 65536
    dma.hv r1, r1, chunk, f1               # rows 128..255
    li r1, 131072
    dma.hv r1, r1, chunk, f2               # rows 256..383
    li r1, 196608
    dma.hv r1, r1, chunk, f3               # rows 384..511
    li r1, 262144
    dma.hv r1, r1, chunk, f4               # rows 512..639
    li r1, 327680
    dma.hv r1, r1, chunk, f5               # rows 640..767
    li r1, 393216
    dma.hv r1, r1, chunk, f6               # rows 768..895
    li r1, 458752
    dma.hv r1, r1, chunk, f7               # rows 896..1023
    li r22, 0x100000                         # sums in HBM
# ---- chunk 0
    wait vpu, f0, 1
    li r10, 0
    li r12, 1048576
    addi r13, r10, 65536
rows0:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows0
# ---- chunk 1
    wait vpu, f1, 1
    li r10, 65536
    li r12, 1114112
    addi r13, r10, 65536
rows1:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows1
# ---- chunk 2
    wait vpu, f2, 1
    li r10, 131072
    li r12, 1179648
    addi r13, r10, 65536
rows2:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows2
# ---- chunk 3
    wait vpu, f3, 1
    li r10, 196608
    li r12, 1245184
    addi r13, r10, 65536
rows3:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows3
    signal vpu, f8, 1
    wait dma, f8, 1
    li r12, 1048576
    addi r14, r22, 0
    dma.vh r14, r12, lane0, f16              # s[0..511]
# ---- chunk 4
    wait vpu, f4, 1
    li r10, 262144
    li r12, 1310720
    addi r13, r10, 65536
rows4:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows4
# ---- chunk 5
    wait vpu, f5, 1
    li r10, 327680
    li r12, 1376256
    addi r13, r10, 65536
rows5:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows5
# ---- chunk 6
    wait vpu, f6, 1
    li r10, 393216
    li r12, 1441792
    addi r13, r10, 65536
rows6:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows6
# ---- chunk 7
    wait vpu, f7, 1
    li r10, 458752
    li r12, 1507328
    addi r13, r10, 65536
rows7:
    vld v0, r10
    vredlane.sum v1, v0
    vst v1, r12
    addi r10, r10, 4096
    addi r12, r12, 4096
    blt r10, r13, rows7
    signal vpu, f9, 1
    wait dma, f9, 1
    li r12, 1310720
    addi r14, r22, 2048
    dma.vh r14, r12, lane0, f16              # s[512..1023]
    halt
