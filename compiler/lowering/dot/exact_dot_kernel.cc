#include "compiler/lowering/dot/exact_dot_kernel.h"

#include <sstream>
#include <utility>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/dot/exact_dot_plan.h"
#include "compiler/lowering/dot/pack_kernel.h"

namespace tpusim::lowering {
namespace {

// Scalar registers: a cursor (M block, N block, K chunk) for the step being computed and
// one for the next step being fetched; the step counter; result blocks finished; for each
// result buffer, the copies still to wait for before it is popped into again.
constexpr int kStep = 7, kRows = 8, kCm = 9, kCn = 10, kCk = 11, kFm = 12, kFn = 13, kFk = 14;
constexpr int kBlocksDone = 15, kOutCopies = 16;  // kOutCopies + buffer parity
// The block popped but not yet copied out (M block, or -1 for none; N block): its copy is
// issued after the next fetch, so that fetch does not queue behind the pop on the DMAs.
constexpr int kPendingM = 18, kPendingN = 19;

struct Cursor {
  int m, n, k;
};

// The registers holding X's chunk row and column indices.
std::pair<int, int> ChunkRegs(bool is_a, bool transposed, Cursor c) {
  const int rows = is_a ? c.m : c.k, cols = is_a ? c.k : c.n;  // logical [rows, cols] chunk
  return transposed ? std::make_pair(cols, rows) : std::make_pair(rows, cols);
}

class Writer {
 public:
  explicit Writer(const ExactDotPlan& p, const ExactDotShape& d) : p_(p), d_(d) {}

  std::string Program() {
    std::ostringstream head;
    head << "# exact dot C[" << p_.m << "," << p_.n << "] = A[" << p_.m << "," << p_.k << "]"
         << (d_.a.transposed ? "(T)" : "") << " x B[" << p_.k << "," << p_.n << "]"
         << (d_.b.transposed ? "(T)" : "") << " x " << p_.batch.count() << ", streamed in " << p_.mb
         << "x" << p_.nb << " blocks, K chunks of " << p_.kc
         << " (compiler/lowering/dot/exact_dot_kernel.cc)\n"
         << ".tag \"" << d_.tag << "\"\n";
    auto& c = s_.code;
    for (int f = 0; f <= kLoadedFlagB + 1; ++f) c << "    sflag f" << f << ", 0\n";
    for (int x = 0; x < p_.mxus; ++x) c << "    sflag f" << kPackedFreeFlag + x << ", 2\n";
    for (int r : {kStep, kCm, kCn, kCk, kFm, kFn, kFk, kBlocksDone, kOutCopies, kOutCopies + 1})
      c << "    li r" << r << ", 0\n";
    c << "    li r" << kRows << ", " << p_.mb << "\n    li r" << kPendingM << ", -1\n";
    if (Batched())
      for (int w :
           {kBatchWordA, kBatchWordB, kBatchWordInner, kBatchWordComputed, kBatchWordPending})
        c << "    sst r0, r0, " << w << "\n";
    for (const DotOperand* x : {&p_.a, &p_.b})
      if (x->resident) {  // its only chunk, (0, 0), packed once
        ChunkCases(s_, *x, 0, 0, [&](int64_t rows, int64_t cols) {
          FetchChunk(s_, *x, 0, 0, 0, rows, cols, kResidentFlag);
          PackChunk(s_, *x, 0, rows, cols, kResidentFlag);
        });
        for (int m = 0; m < p_.mxus; ++m)
          c << "    signal vpu, f" << kReadyFlag + m << ", 1\n    wait mxu" << m << ", f"
            << kReadyFlag + m << ", 1\n";
      }
    Fetch(0);  // step 0
    c << "steps:\n";
    Step(0);
    Step(1);
    c << "    jmp steps\nfinished:\n";
    CopyPending();
    for (int h = 0; h < 2; ++h) WaitOutCopies(h);
    return s_.Text(head.str());
  }

 private:
  int64_t Steps() const { return p_.batch.count() * p_.m_blocks() * p_.n_blocks() * p_.k_chunks(); }
  bool Batched() const { return p_.batch.count() > 1; }

  // Adds `bytes` to the SMEM word at byte address `word`.
  void AddToWord(int word, int64_t bytes) {
    s_.code << "    sld r1, r0, " << word << "\n    addi r1, r1, " << bytes << "\n    sst r1, r0, "
            << word << "\n";
  }

  // The fetch cursor's next batch instance: A's and B's offsets advance by the inner stride,
  // or at the end of the inner index by the outer one.
  void AdvanceFetchedInstance(const std::string& done) {
    AddToWord(kBatchWordA, p_.a.inner_stride);
    AddToWord(kBatchWordB, p_.b.inner_stride);
    AddToWord(kBatchWordInner, 1);
    s_.code << "    li r2, " << p_.batch.inner << "\n    blt r1, r2, " << done
            << "\n    sst r0, r0, " << kBatchWordInner << "\n";
    AddToWord(kBatchWordA, p_.a.outer_stride - p_.batch.inner * p_.a.inner_stride);
    AddToWord(kBatchWordB, p_.b.outer_stride - p_.batch.inner * p_.b.inner_stride);
  }

  // Advances a cursor: K chunk fastest, then N block, then M block, then batch instance.
  void Advance(Cursor r, bool fetch) {
    const std::string done = s_.Label("advanced_");
    s_.code << "    addi r" << r.k << ", r" << r.k << ", 1\n    li r1, " << p_.k_chunks()
            << "\n    blt r" << r.k << ", r1, " << done << "\n    li r" << r.k << ", 0\n    addi r"
            << r.n << ", r" << r.n << ", 1\n    li r1, " << p_.n_blocks() << "\n    blt r" << r.n
            << ", r1, " << done << "\n    li r" << r.n << ", 0\n    addi r" << r.m << ", r" << r.m
            << ", 1\n";
    if (Batched()) {
      s_.code << "    li r1, " << p_.m_blocks() << "\n    blt r" << r.m << ", r1, " << done
              << "\n    li r" << r.m << ", 0\n";
      if (fetch)
        AdvanceFetchedInstance(done);
      else
        AddToWord(kBatchWordComputed, 1);
    }
    s_.code << done << ":\n";
  }

  // Copies the next step's chunks (the fetch cursor) into staging buffer `parity`.
  void Fetch(int parity) {
    const Cursor f{kFm, kFn, kFk};
    for (bool is_a : {true, false}) {
      const DotOperand& x = is_a ? p_.a : p_.b;
      if (x.resident) continue;
      // Plain variables: C++17 lambdas cannot capture structured bindings (clang rejects it).
      const std::pair<int, int> regs = ChunkRegs(is_a, is_a ? d_.a.transposed : d_.b.transposed, f);
      const int rr = regs.first, cr = regs.second;
      ChunkCases(s_, x, rr, cr, [&](int64_t rows, int64_t cols) {
        FetchChunk(s_, x, parity, rr, cr, rows, cols,
                   (is_a ? kLoadedFlagA : kLoadedFlagB) + parity);
      });
    }
    Advance(f, /*fetch=*/true);
  }

  // One step: fetch the next step's chunks, copy out the block popped last step, pack this
  // step's chunks (staging and packed buffers `parity`), multiply, pop a finished block.
  void Step(int parity) {
    auto& c = s_.code;
    const Cursor cur{kCm, kCn, kCk};
    const std::string no_fetch = s_.Label("no_fetch_"), no_out = s_.Label("no_out_");
    c << "    li r1, " << Steps() << "\n    bge r" << kStep << ", r1, finished\n    addi r1, r"
      << kStep << ", 1\n    li r2, " << Steps() << "\n    bge r1, r2, " << no_fetch << "\n";
    Fetch(1 - parity);  // the next step, into the other buffer
    c << no_fetch << ":\n";
    CopyPending();
    for (int m = 0; m < p_.mxus; ++m) c << "    wait vpu, f" << kPackedFreeFlag + m << ", 1\n";
    for (bool is_a : {true, false}) {
      const DotOperand& x = is_a ? p_.a : p_.b;
      if (x.resident) continue;
      auto [rr, cr] = ChunkRegs(is_a, is_a ? d_.a.transposed : d_.b.transposed, cur);
      ChunkCases(s_, x, rr, cr, [&](int64_t rows, int64_t cols) {
        PackChunk(s_, x, parity, rows, cols, (is_a ? kLoadedFlagA : kLoadedFlagB) + parity);
      });
    }
    for (int m = 0; m < p_.mxus; ++m) c << "    signal vpu, f" << kReadyFlag + m << ", 1\n";
    Multiply(parity);
    c << "    li r1, " << p_.k_chunks() - 1 << "\n    bne r" << kCk << ", r1, " << no_out << "\n";
    const std::string odd = s_.Label("pop_odd_"), popped = s_.Label("popped_");
    c << "    andi r1, r" << kBlocksDone << ", 1\n    bne r1, r0, " << odd << "\n";
    Pop(0);
    c << "    jmp " << popped << "\n" << odd << ":\n";
    Pop(1);
    c << popped << ":\n    addi r" << kBlocksDone << ", r" << kBlocksDone << ", 1\n    mov r"
      << kPendingM << ", r" << kCm << "\n    mov r" << kPendingN << ", r" << kCn << "\n";
    if (Batched())
      c << "    sld r1, r0, " << kBatchWordComputed << "\n    sst r1, r0, " << kBatchWordPending
        << "\n";
    c << no_out << ":\n";
    Advance(cur, /*fetch=*/false);
    c << "    addi r" << kStep << ", r" << kStep << ", 1\n";
  }

  // The MXUs multiply packed buffer `parity`: for each K block t, MXU x's column blocks
  // x * per_mxu + j accumulate into rows j * mb of the result block's accumulator half.
  void Multiply(int parity) {
    auto& c = s_.code;
    const uint64_t pa = p_.a.packed + (p_.a.resident ? 0 : parity * p_.a.packed_bytes());
    const uint64_t pb = p_.b.packed + (p_.b.resident ? 0 : parity * p_.b.packed_bytes());
    const int64_t tile = kPackEdge * kPackedRowBytes;  // one 128x128 bf16 tile
    const int64_t t_stride = p_.b_transposed ? p_.nb * kPackedRowBytes : tile;
    const int64_t j_stride = p_.b_transposed ? tile : p_.kc * kPackedRowBytes;
    const std::string t_loop = s_.Label("kblock_"), j_loop = s_.Label("colblock_");
    const std::string acc = s_.Label("acc_"), next = s_.Label("issued_");
    const std::string ldw = p_.b_transposed ? "mxu.ldwt" : "mxu.ldw";
    for (int m = 0; m < p_.mxus; ++m)
      c << "    wait mxu" << m << ", f" << kReadyFlag + m << ", 1\n";
    const int64_t last_blocks = (p_.k - (p_.k_chunks() - 1) * p_.kc + kPackEdge - 1) / kPackEdge;
    const std::string full = s_.Label("kfull_");
    c << "    li r23, " << p_.kc / kPackEdge << "\n    li r1, " << p_.k_chunks() - 1
      << "\n    bne r" << kCk << ", r1, " << full << "\n    li r23, " << last_blocks << "\n"
      << full << ":\n    li r22, " << pa << "\n    li r20, 0\n"
      << t_loop << ":\n    muli r2, r20, " << t_stride << "\n    addi r2, r2, " << pb
      << "\n    addi r3, r2, " << p_.per_mxu * j_stride << "\n    andi r4, r" << kBlocksDone
      << ", 1\n    muli r4, r4, " << kExactDotAccRows << "\n    or r5, r" << kCk
      << ", r20\n    li r21, 0\n"
      << j_loop << ":\n";
    for (int m = 0; m < p_.mxus; ++m) c << "    " << ldw << " m" << m << ", r" << 2 + m << "\n";
    c << "    bne r5, r0, " << acc << "\n";
    for (int m = 0; m < p_.mxus; ++m) c << "    mxu.mm m" << m << ", r22, r" << kRows << ", r4\n";
    c << "    jmp " << next << "\n" << acc << ":\n";
    for (int m = 0; m < p_.mxus; ++m) c << "    mxu.mma m" << m << ", r22, r" << kRows << ", r4\n";
    c << next << ":\n    addi r2, r2, " << j_stride << "\n    addi r3, r3, " << j_stride
      << "\n    addi r4, r4, " << p_.mb << "\n    addi r21, r21, 1\n    li r1, " << p_.per_mxu
      << "\n    blt r21, r1, " << j_loop << "\n    addi r22, r22, " << p_.mb * kPackedRowBytes
      << "\n    addi r20, r20, 1\n    blt r20, r23, " << t_loop << "\n";
    for (int m = 0; m < p_.mxus; ++m)
      c << "    signal mxu" << m << ", f" << kPackedFreeFlag + m << ", 1\n";
  }

  // Waits until the copies out of result buffer h have landed.
  void WaitOutCopies(int h) {
    const std::string loop = s_.Label("out_wait_"), done = s_.Label("out_waited_");
    const int count = kOutCopies + h;
    s_.code << loop << ":\n    beq r" << count << ", r0, " << done << "\n    wait seq, f"
            << kOutFlag + h << ", 1\n    addi r" << count << ", r" << count << ", -1\n    jmp "
            << loop << "\n"
            << done << ":\n";
  }

  // Pops the finished result block into result buffer h once its last copies have landed.
  void Pop(int h) {
    auto& c = s_.code;
    WaitOutCopies(h);
    const uint64_t out = p_.out + static_cast<uint64_t>(h * p_.out_bytes());
    c << "    li r1, " << out << "\n    li r2, " << h * kExactDotAccRows << "\n    li r3, "
      << p_.per_mxu * p_.mb << "\n";
    for (int m = 0; m < p_.mxus; ++m)
      c << (m ? "    addi r1, r1, " + std::to_string(p_.per_mxu * OutBlockBytes()) + "\n" : "")
        << "    mxu.pop m" << m << ", r1, r2, r3\n    signal mxu" << m << ", f" << kPoppedFlag
        << ", 1\n";
  }

  int64_t OutBlockBytes() const { return kPackEdge * 4 * p_.mb; }  // one 128-column block

  // Copies the pending block's valid part from its result buffer to C.
  void CopyPending() {
    auto& c = s_.code;
    const std::string none = s_.Label("no_copy_"), odd = s_.Label("copy_odd_");
    c << "    blt r" << kPendingM << ", r0, " << none << "\n    wait dma, f" << kPoppedFlag << ", "
      << p_.mxus << "\n    andi r1, r" << kBlocksDone << ", 1\n    beq r1, r0, " << odd
      << "\n";  // the pending block is block kBlocksDone - 1
    CopyOut(0);
    c << "    jmp " << none << "\n" << odd << ":\n";
    CopyOut(1);
    c << none << ":\n    li r" << kPendingM << ", -1\n";
  }

  void CopyOut(int h) {
    auto& c = s_.code;
    const uint64_t out = p_.out + static_cast<uint64_t>(h * p_.out_bytes());
    const int64_t block = OutBlockBytes();
    const DotOperand result{d_.c, p_.m, p_.n, 4, p_.mb, p_.nb};
    ChunkCases(s_, result, kPendingM, kPendingN, [&](int64_t rows_v, int64_t cols) {
      c << assembly::LoadAddress(5, d_.c, 2);
      if (Batched()) {
        c << "    sld r2, r0, " << kBatchWordPending << "\n";
        s_.MulAdd(5, 2, p_.m * p_.n * 4);
      }
      s_.MulAdd(5, kPendingM, p_.mb * p_.n * 4);
      s_.MulAdd(5, kPendingN, p_.nb * 4);
      c << "    li r6, " << out << "\n";
      const int64_t full = cols / kPackEdge, edge = cols % kPackEdge;
      if (full > 0)
        c << "    dma.vh r5, r6, "
          << s_.Desc(rows_v, kPackEdge * 4, kPackEdge * 4, p_.n * 4, full, block, kPackEdge * 4)
          << ", f" << kOutFlag + h << "\n";
      if (edge > 0)
        c << "    addi r5, r5, " << full * kPackEdge * 4 << "\n    addi r6, r6, " << full * block
          << "\n    dma.vh r5, r6, " << s_.Desc(rows_v, edge * 4, kPackEdge * 4, p_.n * 4) << ", f"
          << kOutFlag + h << "\n";
      c << "    li r" << kOutCopies + h << ", " << ChunkCopies(cols) << "\n";
    });
  }

  const ExactDotPlan& p_;
  const ExactDotShape& d_;
  StreamAsm s_;
};

}  // namespace

std::string ExactDotKernel(const ExactDotShape& shape) {
  const ExactDotPlan plan = PlanExactDot(shape);
  return Writer(plan, shape).Program();
}

}  // namespace tpusim::lowering
